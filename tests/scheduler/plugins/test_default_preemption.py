"""DefaultPreemption (defaultpreemption + framework/preemption, v1.35): eligibility, victims, PDBs, node choice.

The framework here has one test filter (CPU fit, Unschedulable) and one that rejects nodes labelled
``broken=true`` as UnschedulableAndUnresolvable, so the numbers below follow from CPU arithmetic alone.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from kss_sim.scheduler.framework import (
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    NodeToStatus,
    PodActions,
    Status,
    success,
    unresolvable,
    unschedulable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.default_preemption import DefaultPreemption, filter_pods_with_pdb_violation
from kss_sim.scheduler.preemption import Candidate, pick_one_node_for_preemption
from kss_sim.scheduler.runtime import Framework
from tests.scheduler.factories import make_handle, make_node, make_pdb, make_pod


class CpuFit(FilterPlugin):
    """Unschedulable when the node's requested CPU plus the pod's exceeds its allocatable CPU."""

    name: ClassVar[str] = "CpuFit"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if node_info.requested.milli_cpu + pod.requests.milli_cpu > node_info.allocatable.milli_cpu:
            return unschedulable("Insufficient cpu")
        return success()


class Broken(FilterPlugin):
    """UnschedulableAndUnresolvable on nodes labelled broken=true."""

    name: ClassVar[str] = "Broken"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if node_info.labels.get("broken") == "true":
            return unresolvable("node(s) are broken")
        return success()


class RecordingActions(PodActions):
    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.nominated: list[tuple[str, str]] = []

    def bind(self, pod: PodInfo, node_name: str) -> Status:
        return success()

    def delete_victim(self, victim: PodInfo, preemptor: PodInfo, preempting_group: Any = None) -> Status:
        self.deleted.append(victim.key)
        return success()

    def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominated.append((pod.key, node_name))


def pod(
    name: str,
    *,
    priority: int,
    cpu: str,
    node: str | None = None,
    start: str | None = None,
    labels: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    p = make_pod(name=name, priority=priority, requests={"cpu": cpu}, node_name=node, labels=labels, spec=spec)
    if start is not None:
        p["status"] = {"startTime": start}
    return p


def setup(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    pdbs: list[dict[str, Any]] | None = None,
    args: dict[str, Any] | None = None,
    actions: PodActions | None = None,
) -> tuple[Handle, DefaultPreemption, Framework]:
    handle = make_handle(nodes=nodes, pods=pods)
    handle.actions = actions
    handle.cluster.pdbs = list(pdbs or [])
    plugin = DefaultPreemption(handle, DefaultPreemption.defaulted_args(args or {}))
    fwk = Framework(
        "default-scheduler", handle, {"filter": [Broken(handle), CpuFit(handle)], "postFilter": [plugin]}, {}
    )
    return handle, plugin, fwk


def filter_statuses(fwk: Framework, preemptor: PodInfo) -> NodeToStatus:
    """The NodeToStatus of a failed filter pass, as the scheduling cycle hands it to PostFilter."""
    statuses = NodeToStatus()
    for ni in fwk.handle.snapshot.node_info_list:
        st = fwk.run_filter_plugins_with_nominated_pods(CycleState(), preemptor, ni)
        assert not st.is_success(), ni.name
        statuses.set(ni.name, st)
    return statuses


def preempt(fwk: Framework, preemptor: PodInfo) -> tuple[str, list[str], Status]:
    plugin = fwk.post_filter[0]
    result, st = plugin.post_filter(CycleState(), preemptor, filter_statuses(fwk, preemptor))
    if result is None:
        return "", [], st
    return result.nominated_node_name, list(result.victims), st


T0 = "2024-06-01T00:00:00Z"
T1 = "2024-06-01T00:00:10Z"
T2 = "2024-06-01T00:00:20Z"


def test_victims_are_the_fewest_lower_priority_pods_reprieving_most_important_first() -> None:
    # 4 CPUs full: a (prio 10, 2), b (prio 5, 1), c (prio 1, 1). The preemptor needs 1 CPU.
    # All three removed -> fits. Reprieve a (2+1 <= 4), then b (3+1 <= 4), then c (4+1 > 4): c is the victim.
    nodes = [make_node(name="n1", allocatable={"cpu": "4"})]
    pods = [
        pod("a", priority=10, cpu="2", node="n1", start=T0),
        pod("b", priority=5, cpu="1", node="n1", start=T0),
        pod("c", priority=1, cpu="1", node="n1", start=T0),
    ]
    _, _, fwk = setup(nodes, pods)
    node, victims, st = preempt(fwk, PodInfo(pod("p", priority=100, cpu="1")))
    assert st.is_success()
    assert (node, victims) == ("n1", ["default/c"])


def test_equal_priority_victims_reprieve_the_earlier_started_pod_first() -> None:
    # Same priority: the older pod (T0) is more important and is kept; the newer one (T2) goes.
    nodes = [make_node(name="n1", allocatable={"cpu": "2"})]
    pods = [
        pod("new", priority=1, cpu="1", node="n1", start=T2),
        pod("old", priority=1, cpu="1", node="n1", start=T0),
    ]
    _, _, fwk = setup(nodes, pods)
    _, victims, _ = preempt(fwk, PodInfo(pod("p", priority=100, cpu="1")))
    assert victims == ["default/new"]


def test_pods_of_equal_or_higher_priority_are_never_victims() -> None:
    nodes = [make_node(name="n1", allocatable={"cpu": "2"})]
    pods = [pod("same", priority=100, cpu="1", node="n1", start=T0), pod("low", priority=1, cpu="1", node="n1")]
    _, _, fwk = setup(nodes, pods)
    _, victims, _ = preempt(fwk, PodInfo(pod("p", priority=100, cpu="1")))
    assert victims == ["default/low"]


def test_pdb_violating_victims_are_reprieved_before_others() -> None:
    # 4 CPUs: db (prio 5, 2, PDB with 0 disruptions allowed) and web (prio 10, 2). The preemptor needs 2.
    # Without the PDB web (more important) is reprieved and db goes; with it db is tried first and stays.
    nodes = [make_node(name="n1", allocatable={"cpu": "4"})]
    pods = [
        pod("db", priority=5, cpu="2", node="n1", start=T0, labels={"app": "db"}),
        pod("web", priority=10, cpu="2", node="n1", start=T0, labels={"app": "web"}),
    ]
    preemptor = PodInfo(pod("p", priority=100, cpu="2"))
    _, _, fwk = setup(nodes, pods)
    assert preempt(fwk, preemptor)[1] == ["default/db"]
    _, _, fwk = setup(nodes, pods, pdbs=[make_pdb(match_labels={"app": "db"}, disruptions_allowed=0)])
    assert preempt(fwk, preemptor)[1] == ["default/web"]


def test_pdb_disruptions_allowed_are_spent_pod_by_pod_in_the_given_order() -> None:
    pods = [PodInfo(make_pod(name=n, labels={"app": "db"})) for n in ("a", "b", "c")]
    pdb = make_pdb(match_labels={"app": "db"}, disruptions_allowed=1)
    violating, non_violating = filter_pods_with_pdb_violation(pods, [pdb])
    assert [p.name for p in non_violating] == ["a"]
    assert [p.name for p in violating] == ["b", "c"]


def test_pdb_already_disrupted_pods_do_not_spend_the_budget() -> None:
    pods = [PodInfo(make_pod(name=n, labels={"app": "db"})) for n in ("a", "b")]
    pdb = make_pdb(match_labels={"app": "db"}, disruptions_allowed=0, disrupted_pods={"a": T0})
    violating, non_violating = filter_pods_with_pdb_violation(pods, [pdb])
    assert ([p.name for p in violating], [p.name for p in non_violating]) == (["b"], ["a"])


def test_pdb_in_another_namespace_or_with_empty_selector_matches_nothing() -> None:
    pods = [PodInfo(make_pod(name="a", labels={"app": "db"}))]
    other_ns = make_pdb(namespace="other", match_labels={"app": "db"})
    empty = make_pdb(selector={})
    violating, non_violating = filter_pods_with_pdb_violation(pods, [other_ns, empty])
    assert (violating, [p.name for p in non_violating]) == ([], ["a"])


def test_pdb_match_expressions_select_victims() -> None:
    pods = [PodInfo(make_pod(name="a", labels={"tier": "db"})), PodInfo(make_pod(name="b", labels={"tier": "web"}))]
    pdb = make_pdb(selector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]})
    violating, non_violating = filter_pods_with_pdb_violation(pods, [pdb])
    assert ([p.name for p in violating], [p.name for p in non_violating]) == (["a"], ["b"])


def _cand(name: str, *victims: tuple[int, str | None], pdb: int = 0) -> Candidate:
    pods = []
    for i, (prio, start) in enumerate(victims):
        p = make_pod(name=f"{name}-{i}", priority=prio)
        if start:
            p["status"] = {"startTime": start}
        pods.append(PodInfo(p))
    return Candidate(name, pods, pdb)


def test_pick_prefers_fewest_pdb_violations() -> None:
    m = {"a": _cand("a", (1, T0), pdb=1), "b": _cand("b", (50, T0), (50, T0), pdb=0)}
    assert pick_one_node_for_preemption(m) == "b"


def test_pick_prefers_lowest_highest_victim_priority() -> None:
    m = {"a": _cand("a", (10, T0)), "b": _cand("b", (5, T0), (5, T0), (5, T0))}
    assert pick_one_node_for_preemption(m) == "b"


def test_pick_sums_priorities_offset_by_2_pow_31() -> None:
    # Both have highest victim priority -5; raw sums would favour a (-10 < -5), the offset sums favour b.
    m = {"a": _cand("a", (-5, T0), (-5, T0)), "b": _cand("b", (-5, T0))}
    assert pick_one_node_for_preemption(m) == "b"


def test_pick_prefers_fewer_victims_when_offset_sums_tie() -> None:
    # a: [0] sums to 2^31; b: [0, -2^31] sums to 2^31 + 0 as well; a has fewer victims.
    m = {"a": _cand("a", (0, T0)), "b": _cand("b", (0, T0), (-(2**31), T0))}
    assert pick_one_node_for_preemption(m) == "a"


def test_pick_prefers_latest_start_of_highest_priority_victims() -> None:
    # Same priorities and counts: a's highest-priority victim started later (T2 > T1); lower ones do not count.
    m = {"a": _cand("a", (3, T2), (1, T0)), "b": _cand("b", (3, T1), (1, T2))}
    assert pick_one_node_for_preemption(m) == "a"


def test_pick_missing_start_time_counts_as_now() -> None:
    m = {"a": _cand("a", (3, T2)), "b": _cand("b", (3, None))}
    assert pick_one_node_for_preemption(m) == "b"


def test_pick_last_tie_goes_to_the_smallest_node_name() -> None:
    m = {"n3": _cand("n3", (3, T0)), "n1": _cand("n1", (3, T0)), "n2": _cand("n2", (3, T0))}
    assert pick_one_node_for_preemption(m) == "n1"


def test_preemption_policy_never_is_not_eligible() -> None:
    nodes = [make_node(name="n1", allocatable={"cpu": "1"})]
    _, _, fwk = setup(nodes, [pod("low", priority=1, cpu="1", node="n1")])
    preemptor = PodInfo(pod("p", priority=100, cpu="1", spec={"preemptionPolicy": "Never"}))
    node, victims, st = preempt(fwk, preemptor)
    assert (node, victims, st.code) == ("", [], Code.UNSCHEDULABLE)
    assert st.message() == "preemption: not eligible due to preemptionPolicy=Never."


def test_terminating_victim_on_nominated_node_blocks_further_preemption() -> None:
    nodes = [make_node(name="n1", allocatable={"cpu": "1"})]
    terminating = pod("low", priority=1, cpu="1", node="n1")
    terminating["metadata"]["deletionTimestamp"] = T1
    terminating["status"] = {
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    }
    _, _, fwk = setup(nodes, [terminating])
    raw = pod("p", priority=100, cpu="1")
    raw["status"] = {"nominatedNodeName": "n1"}
    _, _, st = preempt(fwk, PodInfo(raw))
    assert st.message() == "preemption: not eligible due to a terminating pod on the nominated node."


def test_unresolvable_nodes_are_not_candidates_and_the_message_counts_reasons() -> None:
    # n1: broken (unresolvable) -> "Preemption is not helpful"; n2: only an equal-priority pod -> no victims;
    # n3: removing the low pod still leaves too little CPU -> the filter's own reason.
    nodes = [
        make_node(name="n1", allocatable={"cpu": "1"}, labels={"broken": "true"}),
        make_node(name="n2", allocatable={"cpu": "1"}),
        make_node(name="n3", allocatable={"cpu": "1"}),
    ]
    pods = [pod("eq", priority=100, cpu="1", node="n2"), pod("low", priority=1, cpu="500m", node="n3")]
    _, _, fwk = setup(nodes, pods)
    node, victims, st = preempt(fwk, PodInfo(pod("p", priority=100, cpu="2")))
    assert (node, victims, st.code) == ("", [], Code.UNSCHEDULABLE)
    assert st.message() == (
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


def test_success_deletes_victims_nominates_and_drops_lower_priority_nominations() -> None:
    nodes = [make_node(name="n1", allocatable={"cpu": "2"}), make_node(name="n2", allocatable={"cpu": "2"})]
    pods = [pod("v1", priority=1, cpu="2", node="n1", start=T0), pod("v2", priority=5, cpu="2", node="n2", start=T0)]
    actions = RecordingActions()
    handle, _, fwk = setup(nodes, pods, actions=actions)
    lower = PodInfo(pod("lower", priority=50, cpu="1"))
    higher = PodInfo(pod("higher", priority=500, cpu="1"))
    handle.add_nominated_pod(lower, "n1")
    handle.add_nominated_pod(higher, "n2")
    preemptor = PodInfo(pod("p", priority=100, cpu="2"))
    # n1's victim has the lower priority (1 < 5), so n1 wins.
    node, victims, st = preempt(fwk, preemptor)
    assert (node, victims, st.is_success(), st.message()) == ("n1", ["default/v1"], True, "")
    assert actions.deleted == ["default/v1"]
    assert actions.nominated == [("default/p", "n1")]
    assert handle.nominated_pods_for_node("n1") == []
    assert [p.key for p in handle.nominated_pods_for_node("n2")] == ["default/higher"]


def test_dry_run_stops_once_enough_candidates_are_found_in_name_order() -> None:
    # minCandidateNodesAbsolute 1 and 0 %: one candidate is enough, so only n1 (first by name) is tried,
    # although n2's victim has a lower priority.
    nodes = [make_node(name="n2", allocatable={"cpu": "1"}), make_node(name="n1", allocatable={"cpu": "1"})]
    pods = [pod("a", priority=50, cpu="1", node="n1", start=T0), pod("b", priority=1, cpu="1", node="n2", start=T0)]
    _, _, fwk = setup(nodes, pods, args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1})
    assert preempt(fwk, PodInfo(pod("p", priority=100, cpu="1")))[:2] == ("n1", ["default/a"])
    _, _, fwk = setup(nodes, pods)
    assert preempt(fwk, PodInfo(pod("p", priority=100, cpu="1")))[:2] == ("n2", ["default/b"])


@pytest.mark.parametrize(
    ("pct", "absolute", "num_nodes", "expected"),
    [(10, 100, 1000, 100), (10, 100, 50, 50), (50, 10, 30, 15), (10, 5, 3000, 300), (0, 1, 7, 1)],
)
def test_num_candidates_is_max_of_percentage_and_absolute_capped_by_nodes(
    pct: int, absolute: int, num_nodes: int, expected: int
) -> None:
    handle = make_handle()
    plugin = DefaultPreemption(handle, {"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute})
    assert plugin.get_offset_and_num_candidates(num_nodes) == (0, expected)


def test_args_default_to_10_percent_and_100_nodes() -> None:
    assert DefaultPreemption.defaulted_args({}) == {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}
    assert DefaultPreemption.defaulted_args({"minCandidateNodesAbsolute": 3})["minCandidateNodesAbsolute"] == 3


def test_args_validation_messages() -> None:
    assert DefaultPreemption.validate_args({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}) == []
    assert DefaultPreemption.validate_args({"minCandidateNodesPercentage": 101, "minCandidateNodesAbsolute": 1}) == [
        ("minCandidateNodesPercentage", "Invalid value: 101: not in valid range [0, 100]")
    ]
    assert DefaultPreemption.validate_args({"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": -1}) == [
        ("minCandidateNodesAbsolute", "Invalid value: -1: not in valid range [0, inf)")
    ]
    assert DefaultPreemption.validate_args({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}) == [
        (
            "minCandidateNodesPercentage",
            "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
        (
            "minCandidateNodesAbsolute",
            "Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
        ),
    ]


def test_pre_enqueue_always_admits() -> None:
    _, plugin, _ = setup([make_node(name="n1")], [])
    assert plugin.pre_enqueue(PodInfo(make_pod(name="p"))).is_success()
