"""NodeDeclaredFeatures: which pods need a node feature, how a node's ``status.declaredFeatures`` are read, and the
statuses per release. The cases were run through kube-scheduler v1.35.4 and v1.36.2 (the reference program of
issue #32), which decided as asserted here."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.framework import Code, CycleState, Handle
from kss_sim.scheduler.plugins.node_declared_features import (
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    NodeDeclaredFeatures,
    declared_features,
    required_features,
)
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info, pod_info

RULES = [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]
MISSING_V1_36 = "node(s) didn't match Pod's required features"
MISSING_V1_35 = f"node declared features check failed - unsatisfied requirements: {RESTART_ALL_CONTAINERS}"


def _node(name: str, declared: list[str] | None) -> dict[str, Any]:
    node = make_node(name=name)
    if declared is not None:
        node["status"]["declaredFeatures"] = declared
    return node


def _restarting_pod(*, init: bool = False) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "restartPolicy": "Never", "restartPolicyRules": RULES}
    return make_pod(name="p", spec={"initContainers" if init else "containers": [container]})


def _user_namespace_pod(*, host_users: bool | None = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"hostNetwork": True}
    if host_users is not None:
        spec["hostUsers"] = host_users
    return make_pod(name="p", spec=spec)


NODES = [
    _node("both", [RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK]),
    _node("userns", [USER_NAMESPACES_HOST_NETWORK]),
    _node("unsorted", [USER_NAMESPACES_HOST_NETWORK, RESTART_ALL_CONTAINERS]),
    _node("none", None),
]


def _handle(version: str, gates: dict[str, bool] | None = None) -> Handle:
    handle = make_handle(nodes=NODES)
    handle.kube_version = kube_version(version)
    handle.feature_gates = dict(gates or {})
    return handle


def _run(handle: Handle, pod: dict[str, Any]) -> tuple[Code, dict[str, str]]:
    """PreFilter's code, and per node Filter's message ("" when it passes) unless PreFilter skipped."""
    plugin = NodeDeclaredFeatures(handle, {})
    pi = pod_info(pod)
    state = CycleState()
    _, st = plugin.pre_filter(state, pi, handle.snapshot.node_info_list)
    if st.is_skip():
        return st.code, {}
    out = {}
    for node in NODES:
        status = plugin.filter(state, pi, node_info(handle, node["metadata"]["name"]))
        assert status.code in (Code.SUCCESS, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        out[node["metadata"]["name"]] = status.message()
    return st.code, out


def test_pods_requiring_no_feature_are_skipped() -> None:
    assert _run(_handle("1.36"), make_pod(name="p")) == (Code.SKIP, {})
    # Host users unset is not a user namespace.
    assert _run(_handle("1.36"), _user_namespace_pod(host_users=None)) == (Code.SKIP, {})
    assert _run(_handle("1.36"), _user_namespace_pod(host_users=True)) == (Code.SKIP, {})


def test_a_restart_all_containers_rule_needs_the_feature_declared_in_a_sorted_list() -> None:
    # The unsorted list hides the feature after a greater name, as upstream's merge walk over the registry does.
    expected = {"both": "", "userns": MISSING_V1_36, "unsorted": MISSING_V1_36, "none": MISSING_V1_36}
    assert _run(_handle("1.36"), _restarting_pod()) == (Code.SUCCESS, expected)
    assert _run(_handle("1.36"), _restarting_pod(init=True)) == (Code.SUCCESS, expected)


def test_a_host_network_pod_in_a_user_namespace_needs_its_feature_from_v1_36() -> None:
    expected = {"both": "", "userns": "", "unsorted": "", "none": MISSING_V1_36}
    assert _run(_handle("1.36"), _user_namespace_pod()) == (Code.SUCCESS, expected)
    assert _run(_handle("1.35", {"NodeDeclaredFeatures": True}), _user_namespace_pod()) == (Code.SKIP, {})


def test_v1_35_runs_only_with_its_alpha_gate_and_names_the_missing_features() -> None:
    assert _run(_handle("1.35"), _restarting_pod()) == (Code.SKIP, {})
    expected = {"both": "", "userns": MISSING_V1_35, "unsorted": "", "none": MISSING_V1_35}
    assert _run(_handle("1.35", {"NodeDeclaredFeatures": True}), _restarting_pod()) == (Code.SUCCESS, expected)


def test_v1_36_with_the_gate_off_skips_every_pod() -> None:
    assert _run(_handle("1.36", {"NodeDeclaredFeatures": False}), _restarting_pod()) == (Code.SKIP, {})
    assert NodeDeclaredFeatures(_handle("1.36", {"NodeDeclaredFeatures": False}), {}).events_to_register() == []
    assert NodeDeclaredFeatures(_handle("1.36"), {}).events_to_register() == [
        "Node/Add",
        "Node/UpdateNodeDeclaredFeature",
    ]


@pytest.mark.parametrize(
    ("listed", "v1_36", "v1_35"),
    [
        (["Zeta", RESTART_ALL_CONTAINERS], set(), {"Zeta", RESTART_ALL_CONTAINERS}),
        (["Alpha", RESTART_ALL_CONTAINERS], {RESTART_ALL_CONTAINERS}, {"Alpha", RESTART_ALL_CONTAINERS}),
        ([RESTART_ALL_CONTAINERS, 7], {RESTART_ALL_CONTAINERS}, {RESTART_ALL_CONTAINERS}),
    ],
)
def test_declared_features_as_each_release_reads_them(listed: list[Any], v1_36: set[str], v1_35: set[str]) -> None:
    node = _node("n", listed)
    assert declared_features(node, 36) == v1_36
    assert declared_features(node, 35) == v1_35


def test_required_features_are_sorted_by_name() -> None:
    both = _user_namespace_pod()
    both["spec"]["containers"][0]["restartPolicyRules"] = RULES
    assert required_features(both["spec"], 36) == (RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK)
    assert required_features(both["spec"], 35) == (RESTART_ALL_CONTAINERS,)
    assert required_features(both["spec"], 34) == ()


def test_filter_without_its_prefilter_state_is_an_error() -> None:
    handle = _handle("1.36")
    status = NodeDeclaredFeatures(handle, {}).filter(
        CycleState(), pod_info(_restarting_pod()), node_info(handle, "none")
    )
    assert status.code == Code.ERROR
    assert status.message() == 'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found'
