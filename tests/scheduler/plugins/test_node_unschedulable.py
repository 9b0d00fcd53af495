"""NodeUnschedulable: cordoned nodes, tolerated only through the unschedulable:NoSchedule taint."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.framework import Code, CycleState
from kss_sim.scheduler.plugins.node_unschedulable import NodeUnschedulable
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info, pod_info


def _run(unschedulable: bool, tolerations: list[dict[str, Any]] | None = None) -> tuple[Code, str]:
    handle = make_handle(nodes=[make_node(name="n1", unschedulable=unschedulable)])
    st = NodeUnschedulable(handle, {}).filter(
        CycleState(), pod_info(make_pod(spec={"tolerations": tolerations or []})), node_info(handle, "n1")
    )
    return st.code, st.message()


def test_schedulable_node_passes() -> None:
    assert _run(False)[0] == Code.SUCCESS


def test_cordoned_node_is_unresolvable_with_upstream_message() -> None:
    assert _run(True) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) were unschedulable")


def test_unschedulable_taint_toleration_lets_the_pod_in() -> None:
    tol = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    assert _run(True, [tol])[0] == Code.SUCCESS
    assert _run(True, [{"operator": "Exists"}])[0] == Code.SUCCESS


def test_toleration_for_another_effect_does_not_help() -> None:
    tol = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}
    assert _run(True, [tol])[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
