"""The scheduling cycle: sampling, nominated pods, host selection, failure messages."""

from __future__ import annotations

import pytest

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import Diagnosis, ScheduleOptions, Scheduler, fit_error_message, num_feasible_nodes_to_find
from kss_sim.scheduler.framework import Code, Handle, NodeToStatus, Status
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.loop import unschedulable_plugins
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.snapshot import node_tree_order
from tests.scheduler.factories import make_node, make_pod


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (0, 50, 50),  # fewer than 100 nodes: all of them
        (0, 200, 100),  # 49% of 200 = 98, raised to the 100-node floor
        (0, 1000, 420),  # 50 - 1000/125 = 42%
        (0, 5000, 500),  # 50 - 40 = 10%
        (0, 10000, 500),  # floor of 5%
        (100, 5000, 5000),
        (30, 1000, 300),
    ],
)
def test_num_feasible_nodes_to_find_follows_the_adaptive_rule(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def scheduler_with(nodes: int, *, config: str | None = None, seed: int = 0) -> tuple[Scheduler, SchedulerCache]:
    cache = SchedulerCache()
    for i in range(nodes):
        cache.add_node(make_node(name=f"n{i:03d}"))
    cfg = parse_config(config)
    handle = Handle(ClusterObjects())
    fwks = {p.scheduler_name: build_framework(p, handle) for p in cfg.profiles}
    return Scheduler(fwks, cache.snapshot, percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score, seed=seed,
                     cache=cache), cache  # fmt: skip


def test_sampling_walk_starts_where_the_previous_cycle_stopped() -> None:
    scheduler, _ = scheduler_with(200)
    opts = ScheduleOptions(record=False, run_binding_cycle=False)
    first = scheduler.schedule_one(PodInfo(make_pod(name="a", requests={"cpu": "10m"})), 1, opts)
    assert len(first.feasible) == 100  # every node fits; stops at numFeasibleNodesToFind
    assert scheduler.next_start_node_index == 100
    second = scheduler.schedule_one(PodInfo(make_pod(name="b", requests={"cpu": "10m"})), 1, opts)
    assert second.feasible[0] == scheduler.snapshot.node_info_list[100].name


def test_equal_scores_tie_break_by_name_or_seeded_reservoir() -> None:
    opts_name = ScheduleOptions(record=False, tie_break="name", run_binding_cycle=False)
    scheduler, _ = scheduler_with(5)
    assert scheduler.schedule_one(PodInfo(make_pod(name="p")), 1, opts_name).bound_to == "n000"

    picks = []
    for _ in range(2):
        seeded, _ = scheduler_with(5, seed=42)
        opts = ScheduleOptions(record=False, tie_break="random", run_binding_cycle=False)
        picks.append([seeded.schedule_one(PodInfo(make_pod(name=f"p{i}")), 1, opts).bound_to for i in range(3)])
    assert picks[0] == picks[1]  # the same seed gives the same placements


def test_nominated_higher_priority_pod_reserves_room_in_the_first_filter_pass() -> None:
    scheduler, _ = scheduler_with(1)
    handle = next(iter(scheduler.frameworks.values())).handle
    vip = PodInfo(make_pod(name="vip", priority=100, requests={"cpu": "3"}))
    handle.add_nominated_pod(vip, "n000")
    low = PodInfo(make_pod(name="low", priority=1, requests={"cpu": "2"}))
    att = scheduler.schedule_one(low, 1, ScheduleOptions(run_binding_cycle=False))
    assert att.result == "unschedulable"
    assert att.filter["n000"]["NodeResourcesFit"] == "Insufficient cpu"
    # A lower-priority nominated pod does not hold room against a higher-priority one.
    handle.delete_nominated_pod(vip)
    handle.add_nominated_pod(PodInfo(make_pod(name="small", priority=0, requests={"cpu": "3"})), "n000")
    higher = PodInfo(make_pod(name="higher", priority=50, requests={"cpu": "2"}))
    assert scheduler.schedule_one(higher, 1, ScheduleOptions(run_binding_cycle=False)).bound_to == "n000"


def test_one_feasible_node_is_taken_without_scoring_when_not_recording() -> None:
    scheduler, cache = scheduler_with(2)
    cache.update_node(make_node(name="n001", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))
    att = scheduler.schedule_one(PodInfo(make_pod(name="p")), 1, ScheduleOptions(record=False, run_binding_cycle=False))
    assert att.bound_to == "n000" and att.bound_by == "single-feasible" and att.total is None


def test_fit_error_sorts_the_reason_histogram_as_strings() -> None:
    nts = NodeToStatus()
    for i in range(3):
        nts.set(f"a{i}", Status(Code.UNSCHEDULABLE, "Insufficient cpu"))
    for i in range(12):
        nts.set(f"b{i}", Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)"))
    diag = Diagnosis(node_to_status=nts, post_filter_msg="preemption: not eligible due to preemptionPolicy=Never.")
    assert fit_error_message(15, diag) == (
        "0/15 nodes are available: 12 node(s) had untolerated taint(s), 3 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_node_tree_order_interleaves_zones_by_first_appearance() -> None:
    def node(name: str, zone: str) -> dict[str, object]:
        return make_node(name=name, labels={"topology.kubernetes.io/zone": zone})

    nodes = [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("a3", "a"), node("c1", "c"), node("b2", "b")]
    assert node_tree_order(nodes) == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_no_nodes_is_unschedulable_with_no_plugin_and_no_postfilter() -> None:
    # schedulingCycle turns ErrNoNodesAvailable into UnschedulableAndUnresolvable (reason Unschedulable), clearing
    # the nomination, without a FitError: no PostFilter, no rejector plugin.
    scheduler, _ = scheduler_with(0)
    att = scheduler.schedule_one(PodInfo(make_pod(name="p")), 1, ScheduleOptions())
    assert att.result == "unschedulable" and att.message == "no nodes available to schedule pods"
    assert att.clears_nomination and att.postfilter is None and unschedulable_plugins(att) == set()
