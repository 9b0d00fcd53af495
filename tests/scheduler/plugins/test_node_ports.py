"""NodePorts: host port conflicts per (IP, protocol, port), 0.0.0.0 meaning every IP."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.framework import Code, CycleState, Handle
from kss_sim.scheduler.plugins.node_ports import NodePorts
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info, pod_info


def _port(host_port: int, *, ip: str = "", protocol: str = "", container_port: int = 80) -> dict[str, Any]:
    p: dict[str, Any] = {"containerPort": container_port}
    if host_port:
        p["hostPort"] = host_port
    if ip:
        p["hostIP"] = ip
    if protocol:
        p["protocol"] = protocol
    return p


def _ports_pod(name: str, ports: list[dict[str, Any]], *, node: str | None = None, **spec: Any) -> dict[str, Any]:
    return make_pod(
        name=name, node_name=node, spec={"containers": [{"name": "c", "image": "x", "ports": ports}], **spec}
    )


def _run(existing: list[dict[str, Any]], wanted: list[dict[str, Any]]) -> tuple[Code, str]:
    handle = make_handle(nodes=[make_node(name="n1")], pods=[_ports_pod("old", existing, node="n1")])
    return _run_on(handle, _ports_pod("new", wanted))


def _run_on(handle: Handle, pod: dict[str, Any]) -> tuple[Code, str]:
    plugin = NodePorts(handle, {})
    pi = pod_info(pod)
    state = CycleState()
    _, st = plugin.pre_filter(state, pi, handle.snapshot.node_info_list)
    if st.is_skip():
        return st.code, ""
    st = plugin.filter(state, pi, node_info(handle, "n1"))
    return st.code, st.message()


def test_prefilter_skips_pods_without_host_ports() -> None:
    assert _run([_port(8080)], [_port(0, container_port=8080)]) == (Code.SKIP, "")


def test_same_host_port_is_unschedulable_with_upstream_message() -> None:
    assert _run([_port(8080)], [_port(8080)]) == (
        Code.UNSCHEDULABLE,
        "node(s) didn't have free ports for the requested pod ports",
    )


def test_protocol_defaults_to_tcp_and_other_protocols_do_not_clash() -> None:
    assert _run([_port(53, protocol="TCP")], [_port(53)])[0] == Code.UNSCHEDULABLE
    assert _run([_port(53, protocol="TCP")], [_port(53, protocol="UDP")])[0] == Code.SUCCESS


def test_wildcard_ip_clashes_with_any_ip_and_distinct_ips_do_not() -> None:
    assert _run([_port(80, ip="10.0.0.1")], [_port(80)])[0] == Code.UNSCHEDULABLE
    assert _run([_port(80, ip="0.0.0.0")], [_port(80, ip="10.0.0.1")])[0] == Code.UNSCHEDULABLE
    assert _run([_port(80, ip="10.0.0.1")], [_port(80, ip="10.0.0.2")])[0] == Code.SUCCESS
    assert _run([_port(80, ip="10.0.0.1")], [_port(80, ip="10.0.0.1")])[0] == Code.UNSCHEDULABLE


def test_only_sidecar_init_container_ports_are_host_ports() -> None:
    plain_init = {"initContainers": [{"name": "i", "image": "x", "ports": [_port(9000)]}]}
    sidecar = {"initContainers": [{"name": "i", "image": "x", "restartPolicy": "Always", "ports": [_port(9000)]}]}
    handle = make_handle(nodes=[make_node(name="n1")], pods=[_ports_pod("old", [_port(9000)], node="n1")])
    assert _run_on(handle, _ports_pod("a", [], **plain_init)) == (Code.SKIP, "")
    assert _run_on(handle, _ports_pod("b", [], **sidecar))[0] == Code.UNSCHEDULABLE
    # A bound pod's plain init container does not hold its port either.
    handle = make_handle(nodes=[make_node(name="n1")], pods=[_ports_pod("old", [], node="n1", **plain_init)])
    assert _run_on(handle, _ports_pod("c", [_port(9000)]))[0] == Code.SUCCESS


def test_filter_without_prefilter_state_is_an_error() -> None:
    handle = make_handle(nodes=[make_node(name="n1")])
    st = NodePorts(handle, {}).filter(CycleState(), pod_info(_ports_pod("p", [_port(1)])), node_info(handle, "n1"))
    assert st.code == Code.ERROR
    assert st.message() == 'reading "PreFilterNodePorts" from cycleState: not found'


def test_no_prefilter_extensions_as_upstream() -> None:
    assert NodePorts(make_handle(), {}).pre_filter_extensions() is None
