"""NodeName: spec.nodeName pins the pod to one node."""

from __future__ import annotations

from kss_sim.scheduler.framework import Code, CycleState
from kss_sim.scheduler.plugins.node_name import NodeName
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info, pod_info


def test_pod_without_node_name_fits_every_node() -> None:
    handle = make_handle(nodes=[make_node(name="a")])
    st = NodeName(handle, {}).filter(CycleState(), pod_info(make_pod()), node_info(handle, "a"))
    assert st.code == Code.SUCCESS


def test_other_nodes_are_unresolvable_with_upstream_message() -> None:
    handle = make_handle(nodes=[make_node(name="a"), make_node(name="b")])
    plugin = NodeName(handle, {})
    pod = pod_info(make_pod(spec={"nodeName": "b"}))
    assert plugin.filter(CycleState(), pod, node_info(handle, "b")).code == Code.SUCCESS
    st = plugin.filter(CycleState(), pod, node_info(handle, "a"))
    assert (st.code, st.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) didn't match the requested node name",
    )
