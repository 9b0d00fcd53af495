"""Coscheduling (kss.plugins.coscheduling), enabled by name as scheduler-plugins' README does, on the real engine.

The table cases are upstream's (pkg/coscheduling/coscheduling_test.go, core/core_test.go) where they apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from kss.plugins.coscheduling import (
    POD_GROUP_LABEL,
    Coscheduling,
    Quantity,
    check_cluster_resource,
    go_resource_list,
)
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import Code, CycleState, Handle, NodeToStatus
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import out_of_tree, plugin_class
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.queue import SchedulingQueue
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.snapshot import Snapshot
from tests.scheduler.factories import make_node, make_pod

BASE = datetime(2025, 1, 12, 13, 46, 40, tzinfo=UTC).timestamp()
OPTS = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=False)


class Clock:
    def __init__(self, now: float = BASE) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_group(
    name: str,
    *,
    namespace: str = "default",
    min_member: int | None = None,
    min_resources: dict[str, Any] | None = None,
    timeout: int | None = None,
    created: float | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if min_member is not None:
        spec["minMember"] = min_member
    if min_resources is not None:
        spec["minResources"] = min_resources
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if created is not None:
        meta["creationTimestamp"] = rfc3339(created)
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def member(
    name: str,
    group: str | None = "gang",
    *,
    namespace: str = "default",
    cpu: str = "1",
    node: str | None = None,
    priority: int | None = None,
    gated: bool = False,
) -> dict[str, Any]:
    labels = {POD_GROUP_LABEL: group} if group else {}
    spec: dict[str, Any] = {"schedulingGates": [{"name": "example-gate"}]} if gated else {}
    return make_pod(
        name=name,
        namespace=namespace,
        labels=labels,
        requests={"cpu": cpu},
        node_name=node,
        priority=priority,
        spec=spec,
    )


def readme_config(args: dict[str, Any] | None = None) -> dict[str, Any]:
    """scheduler-plugins' README: Coscheduling in multiPoint, and the only queueSort plugin."""
    profile: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        },
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": "Coscheduling", "args": args}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]}


@dataclass
class Cluster:
    scheduler: Scheduler
    cluster: ClusterObjects
    handle: Handle
    clock: Clock
    plugin: Coscheduling
    activated: list[list[str]]

    def add(self, *pods: dict[str, Any]) -> list[PodInfo]:
        for pod in pods:
            self.cluster.put_pod(pod)
        return [PodInfo(pod) for pod in pods]

    def schedule(self, pod: PodInfo) -> Attempt:
        return self.scheduler.schedule_one(pod, 1, OPTS)

    def resolve(self) -> list[tuple[str, str, str | None, str]]:
        return [
            (s.attempt.pod, s.attempt.result, s.attempt.bound_to, s.attempt.message)
            for s in self.scheduler.resolve_waiting()
        ]

    def pods_on_nodes(self) -> dict[str, list[str]]:
        return {ni.name: sorted(p.name for p in ni.pods) for ni in self.scheduler.snapshot.node_info_list}


def make_cluster(
    *,
    nodes: int = 2,
    cpu: str = "4",
    groups: Sequence[dict[str, Any]] = (),
    args: dict[str, Any] | None = None,
    bound: Sequence[dict[str, Any]] = (),
) -> Cluster:
    config = parse_config(readme_config(args))
    cluster = ClusterObjects()
    for group in groups:
        cluster.put_object("PodGroup", group)
    for pod in bound:
        cluster.put_pod(pod)
    handle = Handle(cluster)
    activated: list[list[str]] = []
    handle.activator = lambda pods: activated.append(sorted(p.key for p in pods))
    fwk = build_framework(config.profiles[0], handle)
    snapshot = Snapshot.build([make_node(name=f"n{i}", allocatable={"cpu": cpu}) for i in range(nodes)], bound)
    clock = Clock()
    scheduler = Scheduler({"default-scheduler": fwk}, snapshot, clock=clock)
    plugin = fwk.queue_sort[0]
    assert isinstance(plugin, Coscheduling)
    plugin.wall_clock = clock  # wall time = the scheduler's clock, so RFC 3339 times and queue times compare
    return Cluster(scheduler, cluster, handle, clock, plugin, activated)


# --- the README configuration ---------------------------------------------------------------------------------------
def test_the_plugin_is_found_by_name_through_its_entry_point() -> None:
    assert plugin_class("Coscheduling") is Coscheduling
    assert out_of_tree.is_out_of_tree("Coscheduling")


def test_the_readme_configuration_runs_coscheduling_at_every_point_it_implements() -> None:
    sim = make_cluster()
    fwk = sim.scheduler.frameworks["default-scheduler"]
    assert [p.name for p in fwk.queue_sort] == ["Coscheduling"]
    assert "Coscheduling" in [p.name for p in fwk.pre_filter]
    # multiPoint's own plugins first (the defaults), then Coscheduling.
    assert [p.name for p in fwk.post_filter][-1] == "Coscheduling"
    assert [p.name for p in fwk.reserve][-1] == "Coscheduling"
    assert [p.name for p in fwk.permit] == ["Coscheduling"]
    assert sim.plugin.args == {
        "permitWaitingTimeSeconds": 60,
        "podGroupBackoffSeconds": 0,
        "podGroupRejectPercentage": 10,
    }
    assert sim.plugin.events_to_register() == ["Pod/Add", "PodGroup/Add", "PodGroup/Update"]


def test_without_disabling_prioritysort_the_profile_has_two_queue_sort_plugins() -> None:
    config = parse_config({"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}}}]})
    with pytest.raises(ConfigError) as err:
        build_framework(config.profiles[0], Handle(ClusterObjects()))
    assert err.value.field == "plugins.queueSort"
    assert "only one queue sort plugin required" in err.value.detail and "but got 2" in err.value.detail


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        ({"permitWaitingTimeSeconds": -1}, "permitWaitingTimeSeconds", "Invalid value: -1: must be greater than 0"),
        ({"podGroupBackoffSeconds": -5}, "podGroupBackoffSeconds", "Invalid value: -5: must be greater than 0"),
        (
            {"podGroupRejectPercentage": 101},
            "podGroupRejectPercentage",
            "Invalid value: 101: must be between 0 and 100",
        ),
        ({"podGroupRejectPercentage": -1}, "podGroupRejectPercentage", "Invalid value: -1: must be between 0 and 100"),
        ({"permitWaitingTimeSeconds": "10"}, "permitWaitingTimeSeconds", "Invalid value: '10': must be an integer"),
        ({"scheduleTimeout": 3}, "scheduleTimeout", 'unknown field "scheduleTimeout"'),
    ],
)
def test_invalid_args_are_refused_naming_the_field(args: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(readme_config(args))
    assert err.value.field == f"profiles[0].pluginConfig[0].args.{field}"
    assert err.value.detail == message


def test_args_are_defaulted_and_may_be_typed() -> None:
    config = parse_config(
        readme_config(
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "CoschedulingArgs", "podGroupBackoffSeconds": 5}
        )
    )
    assert config.profiles[0].plugin_config["Coscheduling"] == {
        "permitWaitingTimeSeconds": 60,
        "podGroupBackoffSeconds": 5,
        "podGroupRejectPercentage": 10,
    }
    for edge in ({"permitWaitingTimeSeconds": 0}, {"podGroupRejectPercentage": 0}, {"podGroupRejectPercentage": 100}):
        parse_config(readme_config(edge))


# --- a gang on the engine ---------------------------------------------------------------------------------------------
def test_a_gang_of_eight_that_fits_waits_and_is_bound_all_together() -> None:
    sim = make_cluster(nodes=4, groups=[pod_group("gang", min_member=8)])
    pods = sim.add(*(member(f"p{i}") for i in range(8)))
    for pod in pods[:7]:
        att = sim.schedule(pod)
        assert att.result == "waiting", att.message
        assert att.permit == {"Coscheduling": "wait"} and att.permit_timeout == {"Coscheduling": 60.0}
        assert sim.resolve() == []
    # The first pod to wait woke its siblings (only the first does).
    assert sim.activated == [[f"default/p{i}" for i in range(1, 8)]]
    assert len(sim.scheduler.waiting()) == 7
    last = sim.schedule(pods[7])
    assert last.result == "scheduled" and last.permit == {"Coscheduling": "success"}
    settled = sim.resolve()
    assert sorted((pod, result) for pod, result, _, _ in settled) == [(f"default/p{i}", "scheduled") for i in range(7)]
    assert sim.scheduler.waiting() == []
    assert sum(len(names) for names in sim.pods_on_nodes().values()) == 8
    assert sim.plugin.assigned_pod_count("default", "gang") == 8


def test_the_groups_schedule_timeout_is_the_wait_in_permit() -> None:
    sim = make_cluster(groups=[pod_group("gang", min_member=2, timeout=10)], args={"permitWaitingTimeSeconds": 30})
    (p0, _) = sim.add(member("p0"), member("p1"))
    assert sim.schedule(p0).permit_timeout == {"Coscheduling": 10.0}
    sim2 = make_cluster(groups=[pod_group("gang", min_member=2)], args={"permitWaitingTimeSeconds": 30})
    (q0, _) = sim2.add(member("p0"), member("p1"))
    assert sim2.schedule(q0).permit_timeout == {"Coscheduling": 30.0}
    # permitWaitingTimeSeconds 0 and no group timeout: util.DefaultWaitTime.
    sim3 = make_cluster(groups=[pod_group("gang", min_member=2)], args={"permitWaitingTimeSeconds": 0})
    (r0, _) = sim3.add(member("p0"), member("p1"))
    assert sim3.schedule(r0).permit_timeout == {"Coscheduling": 60.0}


def test_a_gang_short_of_min_member_binds_none_and_every_member_says_why() -> None:
    sim = make_cluster(groups=[pod_group("gang", min_member=4)])
    pods = sim.add(*(member(f"p{i}") for i in range(3)))
    for pod in pods:
        att = sim.schedule(pod)
        assert att.result == "unschedulable"
        reason = (
            f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: 3, minMember of group: 4"
        )
        assert att.prefilter["Coscheduling"] == reason
        assert att.message.startswith(f"0/2 nodes are available: {reason}.")
        assert att.message.endswith(
            f"PodGroup default/gang gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        )
    assert sim.pods_on_nodes() == {"n0": [], "n1": []}


def test_a_gang_whose_min_resources_the_cluster_lacks_is_refused_with_the_gap() -> None:
    sim = make_cluster(groups=[pod_group("gang", min_member=2, min_resources={"cpu": "10"})])
    (p0, _) = sim.add(member("p0"), member("p1"))
    att = sim.schedule(p0)
    assert att.result == "unschedulable"
    assert att.prefilter["Coscheduling"] == "resource gap: map[cpu:{{2000 -3} {<nil>}  DecimalSI}]"


def test_min_resources_the_cluster_has_let_the_gang_through_and_the_check_is_cached() -> None:
    group = pod_group("gang", min_member=2, min_resources={"cpu": "6"})
    sim = make_cluster(groups=[group])
    p0, p1 = sim.add(member("p0"), member("p1"))
    assert sim.schedule(p0).result == "waiting"
    # permittedPG now holds the group for permitWaitingTimeSeconds: the second pod skips the check.
    group["spec"]["minResources"] = {"cpu": "100"}
    assert sim.schedule(p1).result == "scheduled"
    assert [r for _, r, _, _ in sim.resolve()] == ["scheduled"]


def test_a_timeout_releases_every_reservation_and_rejects_the_siblings() -> None:
    sim = make_cluster(groups=[pod_group("gang", min_member=3, timeout=10)])
    p0, p1, _ = sim.add(member("p0"), member("p1"), member("p2"))
    first = sim.schedule(p0)
    sim.clock.now += 1
    second = sim.schedule(p1)
    assert first.result == second.result == "waiting"
    assert sim.scheduler.next_permit_deadline() == BASE + 10
    sim.clock.now = BASE + 10.5
    assert sim.resolve() == [
        ("default/p0", "unschedulable", None, "0/1 nodes are available: 1 rejected due to timeout after waiting 10s at "
         "plugin Coscheduling."),
        ("default/p1", "unschedulable", None, "0/1 nodes are available: 1 rejection in Unreserve."),
    ]  # fmt: skip
    assert second.rejected_by == "Coscheduling" and second.permit["Coscheduling"] == "rejection in Unreserve"
    assert sim.pods_on_nodes() == {"n0": [], "n1": []}
    assert sim.plugin.assigned_pod_count("default", "gang") == 0


def test_a_member_that_fits_nowhere_rejects_its_waiting_siblings_in_post_filter() -> None:
    sim = make_cluster(nodes=1, groups=[pod_group("gang", min_member=3)])
    p0, p1, p2 = sim.add(member("p0"), member("p1"), member("p2", cpu="3"))
    assert sim.schedule(p0).result == sim.schedule(p1).result == "waiting"
    att = sim.schedule(p2)
    assert att.result == "unschedulable"
    assert att.message.endswith(
        "PodGroup default/gang gets rejected due to Pod p2 is unschedulable even after PostFilter"
    )
    assert sorted((pod, msg) for pod, _, _, msg in sim.resolve()) == [
        ("default/p0", "0/1 nodes are available: 1 optimistic rejection in PostFilter."),
        ("default/p1", "0/1 nodes are available: 1 optimistic rejection in PostFilter."),
    ]
    assert sim.pods_on_nodes() == {"n0": []}


def test_a_gap_within_the_reject_percentage_keeps_the_siblings_waiting() -> None:
    sim = make_cluster(nodes=1, cpu="9", groups=[pod_group("gang", min_member=10)])
    pods = sim.add(*(member(f"p{i}") for i in range(10)))
    for pod in pods[:9]:
        assert sim.schedule(pod).result == "waiting"
    att = sim.schedule(pods[9])  # no room: 9 of 10 assigned is a 10 % gap, within podGroupRejectPercentage
    assert att.result == "unschedulable"
    assert "gets rejected" not in att.message
    assert sim.resolve() == [] and len(sim.scheduler.waiting()) == 9


def test_a_rejected_group_backs_off_and_sorts_after_its_failure() -> None:
    sim = make_cluster(
        nodes=1, groups=[pod_group("gang", min_member=3, created=BASE - 100)], args={"podGroupBackoffSeconds": 5}
    )
    p0, p1, p2 = sim.add(member("p0"), member("p1", cpu="5"), member("p2"))
    assert sim.schedule(p0).result == "waiting"
    assert sim.schedule(p1).result == "unschedulable"
    sim.resolve()
    att = sim.schedule(p2)
    assert att.prefilter["Coscheduling"] == "podGroup default/gang failed recently"
    assert sim.plugin.creation_timestamp(p2, 0.0) == BASE  # the failure's time, not the group's creation
    sim.clock.now += 5  # the backoff ends once the clock is past it
    assert sim.schedule(p2).prefilter["Coscheduling"] == "podGroup default/gang failed recently"
    sim.clock.now += 0.001
    assert sim.schedule(p2).result == "waiting"


# --- upstream's tables ------------------------------------------------------------------------------------------------
def plugin_with(
    pods: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    *,
    nodes: list[dict[str, Any]] | None = None,
    args: dict[str, Any] | None = None,
) -> tuple[Coscheduling, Handle, Clock]:
    cluster = ClusterObjects()
    for pod in pods:
        cluster.put_pod(pod)
    for group in groups:
        cluster.put_object("PodGroup", group)
    handle = Handle(cluster)
    handle.snapshot = Snapshot.build(nodes or [make_node(name="node", allocatable={"cpu": "4"})], pods)
    clock = Clock()
    handle.clock = clock
    plugin = Coscheduling(handle, args)
    plugin.wall_clock = clock
    return plugin, handle, clock


TWO_NODES = [make_node(name="node-a", allocatable={"cpu": "4"}), make_node(name="node-b", allocatable={"cpu": "4"})]


@pytest.mark.parametrize(
    ("pod", "pending", "groups", "reason"),
    [
        pytest.param(
            member("p", None, namespace="ns"),
            [member("p1", "pg1", namespace="ns"), member("p2", "pg2", namespace="ns")],
            [pod_group("pg1", namespace="ns", min_member=1), pod_group("pg2", namespace="ns", min_member=1)],
            "",
            id="pod does not belong to any pg",
        ),
        pytest.param(
            member("p", "pg-non-existent", namespace="ns"),
            [],
            [pod_group("pg1", namespace="ns", min_member=1)],
            "",
            id="pod belongs to a non-existent pg",
        ),
        pytest.param(
            member("p", "pg1", namespace="ns"),
            [member("pg2-1", "pg2", namespace="ns")],
            [pod_group("pg1", namespace="ns", min_member=2), pod_group("pg2", namespace="ns", min_member=2)],
            "pre-filter pod p cannot find enough sibling pods, current pods number: 1, minMember of group: 2",
            id="pod count less than minMember",
        ),
        pytest.param(
            member("p1a", "pg1", namespace="ns"),
            [member("p1b", "pg1", namespace="ns")],
            [pod_group("pg1", namespace="ns", min_member=2)],
            "",
            id="pod count equal minMember",
        ),
        pytest.param(
            member("p1a", "pg1", namespace="ns"),
            [member("p1b", "pg1", namespace="ns"), member("p1c", "pg1", namespace="ns")],
            [pod_group("pg1", namespace="ns", min_member=2)],
            "",
            id="pod count more than minMember",
        ),
        pytest.param(
            member("p1a", "pg1", namespace="ns"),
            [member("p1b", "pg1", namespace="ns"), member("p1c", "pg1", namespace="ns", gated=True)],
            [pod_group("pg1", namespace="ns", min_member=2)],
            "",
            id="gated pods but still meeting quorum (minMember < replicas)",
        ),
        pytest.param(
            member("p1a", "pg1", namespace="ns"),
            [member("p1b", "pg1", namespace="ns", gated=True), member("p1c", "pg1", namespace="ns")],
            [pod_group("pg1", namespace="ns", min_member=3)],
            "pre-filter pod p1a cannot proceed due to gated pods in the same PodGroup",
            id="gated pods push group below quorum",
        ),
        pytest.param(
            member("p1a", "pg1", namespace="ns"),
            [member("p1b", "pg1", namespace="ns", gated=True), member("p1c", "pg1", namespace="ns", gated=True)],
            [pod_group("pg1", namespace="ns", min_member=2)],
            "pre-filter pod p1a cannot proceed due to gated pods in the same PodGroup",
            id="all sibling pods are gated",
        ),
        pytest.param(
            member("p1a", "pg1", namespace="ns"),
            [member("p1b", "pg1", namespace="ns"), member("p1c", "pg1", namespace="ns")],
            [pod_group("pg1", namespace="ns", min_member=2, min_resources={"cpu": "6"})],
            "",
            id="cluster's resource satisfies minResource",
        ),
        pytest.param(
            member("p1a", "pg1", namespace="ns"),
            [member("p1b", "pg1", namespace="ns"), member("p1c", "pg1", namespace="ns")],
            [pod_group("pg1", namespace="ns", min_member=2, min_resources={"cpu": "10"})],
            "resource gap: map[cpu:{{2000 -3} {<nil>}  DecimalSI}]",
            id="cluster's resource cannot satisfy minResource",
        ),
    ],
)
def test_pre_filter(
    pod: dict[str, Any], pending: list[dict[str, Any]], groups: list[dict[str, Any]], reason: str
) -> None:
    plugin, _, _ = plugin_with([*pending, pod], groups, nodes=TWO_NODES)
    _, st = plugin.pre_filter(CycleState(), PodInfo(pod), [])
    if reason:
        assert (st.code, st.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [reason])
    else:
        assert st.is_success()


@pytest.mark.parametrize(
    ("existing", "satisfied"),
    [
        pytest.param([member("p1", None, namespace="ns", node="node-a", cpu="2")], True, id="Cluster resource enough"),
        pytest.param(
            [
                member("p1", None, namespace="ns", node="node-a", cpu="2"),
                member("p2", None, namespace="ns", node="node-b"),
            ],
            False,
            id="Cluster resource not enough",
        ),
        pytest.param(
            [
                member("p1", "pg1", namespace="ns", node="node-a", cpu="2"),
                member("p2", None, namespace="ns", node="node-b"),
            ],
            True,
            id="Cluster resource enough as p1's resource needs to be excluded from minResources",
        ),
    ],
)
def test_check_cluster_resource(existing: list[dict[str, Any]], satisfied: bool) -> None:
    nodes = [make_node(name="node-a", allocatable={"cpu": "3"}), make_node(name="node-b", allocatable={"cpu": "3"})]
    snapshot = Snapshot.build(nodes, existing)
    gap = check_cluster_resource(snapshot.node_info_list, {"cpu": Quantity(4, 0, "DecimalSI")}, "ns/pg1")
    assert (gap == "") is satisfied
    if not satisfied:
        assert gap == "resource gap: map[cpu:{{1000 -3} {<nil>}  DecimalSI}]"


def test_the_gap_lists_every_missing_resource_as_go_prints_it() -> None:
    nodes = [make_node(name="node-a", allocatable={"cpu": "4", "memory": "1Gi", "pods": "2"})]
    snapshot = Snapshot.build(nodes, [member("other", None, node="node-a")])
    request = {"cpu": Quantity.parse("5"), "memory": Quantity.parse("1536Mi"), "pods": Quantity(3, 0, "DecimalSI")}
    assert check_cluster_resource(snapshot.node_info_list, request, "default/gang") == (
        "resource gap: map[cpu:{{2000 -3} {<nil>}  DecimalSI} memory:{{536870912 0} {<nil>}  BinarySI} "
        "pods:{{2 0} {<nil>}  DecimalSI}]"
    )
    # Nothing subtracted yet: a canonical text is still cached; "1.5Gi" needs an exact decimal in Go.
    assert go_resource_list({"cpu": Quantity.parse("10"), "memory": Quantity.parse("1.5Gi")}) == (
        "map[cpu:{{10 0} {<nil>} 10 DecimalSI} memory:{{0 0} {1610612736}  BinarySI}]"
    )


@pytest.mark.parametrize(
    ("pod", "existing", "groups", "code", "reasons"),
    [
        pytest.param(
            member("p", None, namespace="ns"), [], [pod_group("pg1", namespace="ns", min_member=2)],
            Code.SUCCESS, [], id="pod does not belong to any pg",
        ),
        pytest.param(
            member("p", "pg-non-existent", namespace="ns"), [], [pod_group("pg1", namespace="ns", min_member=2)],
            Code.UNSCHEDULABLE, ["PodGroup not found"], id="pod specifies a non-existent pg",
        ),
        pytest.param(
            member("p", "pg1", namespace="ns"), [], [pod_group("pg1", namespace="ns", min_member=2)],
            Code.WAIT, [], id="pod belongs to a pg that doesn't have quorum",
        ),
        pytest.param(
            member("p1a", "pg1", namespace="ns"), [member("p1b", "pg1", namespace="ns", node="node")],
            [pod_group("pg1", namespace="ns", min_member=2)],
            Code.SUCCESS, [], id="pod belongs to a pg that have quorum satisfied",
        ),
        pytest.param(
            member("p", "pg1", namespace="ns"), [], [pod_group("pg1", namespace="ns", min_member=1)],
            Code.SUCCESS, [], id="quorum satisfied by the pod itself",
        ),
    ],
)  # fmt: skip
def test_permit(
    pod: dict[str, Any], existing: list[dict[str, Any]], groups: list[dict[str, Any]], code: Code, reasons: list[str]
) -> None:
    plugin, _, _ = plugin_with([*existing, pod], groups)
    st, timeout = plugin.permit(CycleState(), PodInfo(pod), "node")
    assert (st.code, st.reasons) == (code, reasons)
    assert timeout == (60.0 if code == Code.WAIT else 0)


@pytest.mark.parametrize(
    ("pod", "existing", "groups", "reasons"),
    [
        pytest.param(
            member("p", None, namespace="ns"), [], [pod_group("pg1", namespace="ns", min_member=2)],
            ["can not find pod group"], id="pod does not belong to any pod group",
        ),
        pytest.param(
            member("p", "pg1", namespace="ns"), [member("p1", "pg1", namespace="ns", node="node")],
            [pod_group("pg1", namespace="ns", min_member=1)], [], id="enough pods assigned, do not reject all",
        ),
        pytest.param(
            member("p", "pg1", namespace="ns"), [member("p1", "pg1", namespace="ns", node="node")],
            [pod_group("pg1", namespace="ns", min_member=2)],
            ["PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after PostFilter"],
            id="pod failed at filter phase, reject all pods",
        ),
    ],
)  # fmt: skip
def test_post_filter(
    pod: dict[str, Any], existing: list[dict[str, Any]], groups: list[dict[str, Any]], reasons: list[str]
) -> None:
    plugin, _, _ = plugin_with([*existing, pod], groups)
    result, st = plugin.post_filter(CycleState(), PodInfo(pod), NodeToStatus())
    assert result is not None and result.nominated_node_name == ""
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE, reasons)


@pytest.mark.parametrize(
    ("threshold", "min_member", "assigned", "rejected"),
    [
        pytest.param(10, 10, 9, False, id="default 10%: 9/10 assigned (10% gap) -> no rejection"),
        pytest.param(10, 10, 8, True, id="default 10%: 8/10 assigned (20% gap) -> rejection"),
        pytest.param(0, 10, 9, True, id="0%: 9/10 assigned (10% gap) -> rejection (always reject)"),
        pytest.param(100, 10, 0, False, id="100%: 0/10 assigned (100% gap) -> no rejection (never reject)"),
        pytest.param(50, 10, 6, False, id="50%: 6/10 assigned (40% gap) -> no rejection"),
        pytest.param(50, 10, 4, True, id="50%: 4/10 assigned (60% gap) -> rejection"),
    ],
)
def test_post_filter_reject_threshold(threshold: int, min_member: int, assigned: int, rejected: bool) -> None:
    bound = [member(f"assigned-{i}", "pg1", namespace="ns", node="node") for i in range(assigned)]
    pod = member("p", "pg1", namespace="ns")
    plugin, _, _ = plugin_with(
        [*bound, pod], [pod_group("pg1", namespace="ns", min_member=min_member)],
        args={"podGroupRejectPercentage": threshold},
    )  # fmt: skip
    _, st = plugin.post_filter(CycleState(), PodInfo(pod), NodeToStatus())
    expected = ["PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after PostFilter"] if rejected else []
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE, expected)


def test_pod_group_backoff_time() -> None:
    """Upstream's "prevent pod falling into infinite scheduling loop"."""
    pods = [member(f"pod{i}", "pg1", namespace="ns") for i in (1, 2, 3)]
    plugin, handle, clock = plugin_with(
        pods, [pod_group("pg1", namespace="ns", min_member=3)], args={"podGroupBackoffSeconds": 1}
    )
    activated: list[str] = []
    handle.activator = lambda infos: activated.extend(p.key for p in infos)
    st, _ = plugin.permit(CycleState(), PodInfo(pods[0]), "test")
    assert st.code == Code.WAIT
    assert sorted(activated) == ["ns/pod2", "ns/pod3"]
    plugin.post_filter(CycleState(), PodInfo(pods[1]), NodeToStatus())
    _, st = plugin.pre_filter(CycleState(), PodInfo(pods[2]), [])
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["podGroup ns/pg1 failed recently"])
    clock.now += 1.5
    assert plugin.pre_filter(CycleState(), PodInfo(pods[2]), [])[1].is_success()


def test_a_second_pod_to_wait_does_not_wake_the_siblings_again() -> None:
    pods = [member(f"pod{i}", "pg1", namespace="ns") for i in (1, 2, 3)]
    plugin, handle, _ = plugin_with(pods, [pod_group("pg1", namespace="ns", min_member=3)])
    activated: list[list[str]] = []
    handle.activator = lambda infos: activated.append(sorted(p.key for p in infos))
    plugin.permit(CycleState(), PodInfo(pods[0]), "node")
    plugin.permit(CycleState(), PodInfo(pods[1]), "node")
    assert activated == [["ns/pod2", "ns/pod3"]]


def test_a_permitted_pod_that_is_deleted_no_longer_counts() -> None:
    pods = [member(f"pod{i}", "pg1", namespace="ns") for i in (1, 2, 3)]
    plugin, handle, _ = plugin_with(pods, [pod_group("pg1", namespace="ns", min_member=3)])
    plugin.permit(CycleState(), PodInfo(pods[0]), "node")
    plugin.permit(CycleState(), PodInfo(pods[1]), "node")
    assert plugin.assigned_pod_count("ns", "pg1") == 2
    handle.cluster.delete_pod(pods[0])
    assert plugin.assigned_pod_count("ns", "pg1") == 1
    # Unreserve takes a pod out as well.
    plugin.unreserve(CycleState(), PodInfo(pods[1]), "node")
    assert plugin.assigned_pod_count("ns", "pg1") == 0


# --- QueueSort ------------------------------------------------------------------------------------------------------
@dataclass
class Queued:
    pod_info: PodInfo
    timestamp: float
    initial_attempt_timestamp: float | None = None


def queued(name: str, namespace: str, priority: int, group: str | None = None, at: float | None = None) -> Queued:
    pod = PodInfo(member(name, group, namespace=namespace, priority=priority))
    return Queued(pod, BASE + 50 if at is None else at, at)


LOW, HIGH = 10, 100
NOW = BASE


@pytest.mark.parametrize(
    ("p1", "p2", "groups", "want"),
    [
        pytest.param(queued("p1", "ns1", LOW), queued("p2", "ns2", HIGH), [], False, id="p1.priority less than p2"),
        pytest.param(queued("p1", "ns1", HIGH), queued("p2", "ns2", LOW), [], True, id="p1.priority greater than p2"),
        pytest.param(
            queued("p1", "ns1", HIGH, at=NOW + 1), queued("p2", "ns2", HIGH, at=NOW + 2), [], True,
            id="equal priority. p1 is added to schedulingQ earlier than p2",
        ),
        pytest.param(
            queued("p1", "ns1", HIGH, at=NOW + 2), queued("p2", "ns2", HIGH, at=NOW + 1), [], False,
            id="equal priority. p2 is added to schedulingQ earlier than p1",
        ),
        pytest.param(
            queued("p1", "ns1", LOW, "pg1"), queued("p2", "ns2", HIGH), [pod_group("pg1", namespace="ns1")], False,
            id="p1.priority less than p2.priority, p1 belongs to pg1",
        ),
        pytest.param(
            queued("p1", "ns1", HIGH, "pg1"), queued("p2", "ns2", LOW), [pod_group("pg1", namespace="ns1")], True,
            id="p1.priority greater than p2.priority, p1 belongs to pg1",
        ),
        pytest.param(
            queued("p1", "ns1", HIGH, "pg1", at=NOW + 1), queued("p2", "ns2", HIGH, at=NOW + 2),
            [pod_group("pg1", namespace="ns1", created=NOW + 1)], True,
            id="equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1",
        ),
        pytest.param(
            queued("p1", "ns1", HIGH, "pg1", at=NOW + 2), queued("p2", "ns2", HIGH, at=NOW + 1),
            [pod_group("pg1", namespace="ns1", created=NOW + 2)], False,
            id="equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg1",
        ),
        pytest.param(
            queued("p1", "ns1", LOW, "pg1"), queued("p2", "ns2", HIGH, "pg2"),
            [pod_group("pg1", namespace="ns1", created=NOW + 1), pod_group("pg2", namespace="ns2", created=NOW + 2)],
            False, id="p1.priority less than p2.priority, p1 belongs to pg1 and p2 belongs to pg2",
        ),
        pytest.param(
            queued("p1", "ns1", HIGH, "pg1"), queued("p2", "ns2", LOW, "pg1"),
            [pod_group("pg1", namespace="ns1", created=NOW + 1), pod_group("pg2", namespace="ns2", created=NOW + 2)],
            True, id="p1.priority greater than p2.priority, p1 belongs to pg1 and and p2 belongs to pg2",
        ),
        pytest.param(
            queued("p1", "ns1", HIGH, "pg1", at=NOW + 1), queued("p2", "ns2", HIGH, "pg2", at=NOW + 2),
            [pod_group("pg1", namespace="ns1", created=NOW + 1), pod_group("pg2", namespace="ns2", created=NOW + 2)],
            True, id="equal priority. p1 is added to schedulingQ earlier than p2, p1 in pg1 and p2 in pg2",
        ),
        pytest.param(
            queued("p1", "ns", LOW, "pg2", at=NOW + 1), queued("p2", "ns", HIGH, "pg1", at=NOW + 2),
            [pod_group("pg1", namespace="ns", created=NOW + 1), pod_group("pg2", namespace="ns", created=NOW + 2)],
            False, id="equal priority. p2 is added to schedulingQ earlier than p1, p1 in pg2 and p2 in pg1",
        ),
        pytest.param(
            queued("p1", "ns1", HIGH, "pg2", at=NOW + 1), queued("p2", "ns2", HIGH, "pg2", at=NOW + 1),
            [pod_group("pg1", namespace="ns1", created=NOW + 1), pod_group("pg2", namespace="ns2", created=NOW + 2)],
            True, id="equal priority and creation time, p1 belongs pg1 and p2 belong to pg2",
        ),
        pytest.param(
            queued("p1", "ns1", HIGH, at=NOW + 1), queued("p2", "ns2", HIGH, "pg2", at=NOW + 1),
            [pod_group("pg2", namespace="ns2", created=NOW + 2)],
            True, id="equal priority and creation time, and p2 belong to pg2",
        ),
    ],
)  # fmt: skip
def test_less(p1: Queued, p2: Queued, groups: list[dict[str, Any]], want: bool) -> None:
    plugin, _, _ = plugin_with([], groups)
    assert plugin.less(p1, p2) is want


def test_less_after_schedule_failure() -> None:
    pg1 = pod_group("pg1", namespace="ns", min_member=3, created=NOW - 10)
    pg2 = pod_group("pg2", namespace="ns", min_member=3, created=NOW - 5)
    p1 = queued("p1", "ns", HIGH, "pg1", at=NOW)
    p2 = queued("p2", "ns", HIGH, "pg2", at=NOW)
    members = [member(name, "pg1", namespace="ns") for name in ("p1", "p3", "p4")]
    plugin, _, clock = plugin_with(members, [pg1, pg2])
    assert plugin.less(p1, p2)
    # A failure (here Unreserve) dates pg1 at the failure, after pg2's creation.
    plugin.unreserve(CycleState(), p1.pod_info, "node")
    assert not plugin.less(p1, p2) and plugin.less(p2, p1)
    # The group's pod that completes it clears the failure: pg1 sorts by its creation again.
    plugin.permit(CycleState(), PodInfo(members[0]), "node")
    plugin.permit(CycleState(), PodInfo(members[1]), "node")
    clock.now += 1
    assert not plugin.less(p1, p2)  # still 2 of 3: pg1 keeps its failure time
    plugin.permit(CycleState(), PodInfo(members[2]), "node")
    assert plugin.less(p1, p2)


def test_queue_times_are_compared_with_group_times_as_wall_time() -> None:
    """The queue's clock is not wall time: one offset, taken at the first comparison, turns it into wall time."""
    plugin, _, clock = plugin_with([], [pod_group("pg1", namespace="ns", created=BASE - 30)])
    clock.now = 1000.0  # a monotonic clock's reading while the wall clock says BASE
    plugin.wall_clock = lambda: BASE
    grouped = queued("a", "ns", HIGH, "pg1", at=990.0)  # queued 10 s ago; its group was created 30 s ago
    loner_early = queued("b", "ns", HIGH, at=960.0)  # queued 40 s ago
    loner_late = queued("c", "ns", HIGH, at=995.0)
    assert plugin.less(loner_early, grouped) and plugin.less(grouped, loner_late)


def test_the_scheduling_queue_pops_an_older_group_before_pods_queued_earlier() -> None:
    sim = make_cluster(groups=[pod_group("old", created=BASE - 3600), pod_group("new", created=BASE + 3600)])
    queue = SchedulingQueue(less=sim.plugin.less, clock=sim.clock)
    for name, group in [("loner", None), ("new-0", "new"), ("old-0", "old"), ("old-1", "old")]:
        queue.add(PodInfo(member(name, group)))
        sim.clock.now += 1
    queue.add(PodInfo(member("urgent", None, priority=HIGH)))
    order = []
    while (q := queue.pop(timeout=0)) is not None:
        order.append(q.pod_info.name)
    assert order == ["urgent", "old-0", "old-1", "loner", "new-0"]


# --- PodGroups as the client decodes them -----------------------------------------------------------------------------
def test_a_pod_group_that_would_not_decode_is_not_found() -> None:
    bad = pod_group("pg1", namespace="ns", min_member=2, min_resources={"cpu": "lots"})
    pod = member("p", "pg1", namespace="ns")
    plugin, _, _ = plugin_with([pod], [bad])
    assert plugin.pod_group(PodInfo(pod)) == ("ns/pg1", None)
    st, _ = plugin.permit(CycleState(), PodInfo(pod), "node")
    assert st.reasons == ["PodGroup not found"]
