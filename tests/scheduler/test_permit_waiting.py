"""Waiting in Permit: the pod stays assumed, is allowed or rejected by name, and times out on the scheduler's clock."""

from __future__ import annotations

from typing import ClassVar

from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import Code, CycleState, Handle, PermitPlugin, ReservePlugin, Status
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import register
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.snapshot import Snapshot
from kss_sim.scheduler.waiting import WaitingPod, go_duration
from tests.scheduler.factories import make_node, make_pod


@register
class KssTestPair(PermitPlugin, ReservePlugin):
    """Holds each pod until a second pod of its ``pair`` label reaches Permit, then lets both go."""

    name = "KssTestPair"
    unreserved: ClassVar[list[str]] = []

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        KssTestPair.unreserved.append(pod.name)

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        pair = pod.labels.get("pair")
        if pair is None:
            return Status(), 0
        partners: list[WaitingPod] = []
        self.handle.iterate_over_waiting_pods(
            lambda wp: partners.append(wp) if wp.get_pod().labels.get("pair") == pair else None
        )
        if partners:
            for wp in partners:
                wp.allow(self.name)
            return Status(), 0
        return Status(Code.WAIT), float(self.args.get("timeout", 10))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _scheduler(clock: Clock, nodes: int = 2, timeout: int = 10) -> Scheduler:
    config = parse_config(
        {
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"multiPoint": {"enabled": [{"name": "KssTestPair"}]}},
                    "pluginConfig": [{"name": "KssTestPair", "args": {"timeout": timeout}}],
                }
            ]
        }
    )
    handle = Handle(ClusterObjects())
    fwk = build_framework(config.profiles[0], handle)
    snapshot = Snapshot.build([make_node(name=f"n{i}", allocatable={"cpu": "1"}) for i in range(nodes)], [])
    return Scheduler({"default-scheduler": fwk}, snapshot, clock=clock)


OPTS = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=False)


def _pod(name: str, pair: str | None = "a", cpu: str = "600m") -> PodInfo:
    return PodInfo(make_pod(name=name, labels={"pair": pair} if pair else {}, requests={"cpu": cpu}))


def test_a_waiting_pod_holds_its_reservation_until_its_partner_allows_it() -> None:
    clock = Clock()
    sched = _scheduler(clock)
    first = sched.schedule_one(_pod("p1"), 1, OPTS)
    assert first.result == "waiting"
    # v1.36's wording (the default version): without the pod's name, which v1.35 appends ("... rejected pod "p1"").
    assert first.message == "one or more plugins asked to wait and no plugin rejected pod"
    assert first.permit == {"KssTestPair": "wait"} and first.permit_timeout == {"KssTestPair": 10.0}
    assert first.waiting_on == "n0"
    # Held: n0 has 600m of 1 CPU taken, so the partner (600m) must go to n1.
    assert [row["pod"] for row in sched.waiting()] == ["default/p1"]
    second = sched.schedule_one(_pod("p2"), 1, OPTS)
    assert second.result == "scheduled" and second.bound_to == "n1"
    clock.now += 3
    settled = sched.resolve_waiting()
    assert [(s.attempt.pod, s.attempt.result, s.attempt.bound_to) for s in settled] == [
        ("default/p1", "scheduled", "n0")
    ]
    assert settled[0].waited == 3.0
    assert first.permit_wait is not None and first.permit_wait["outcome"] == "allowed"
    assert sched.waiting() == [] and sched.next_permit_deadline() is None
    assert {ni.name: len(ni.pods) for ni in sched.snapshot.node_info_list} == {"n0": 1, "n1": 1}


def test_a_wait_times_out_on_the_scheduler_clock_and_releases_the_node() -> None:
    clock = Clock()
    sched = _scheduler(clock, timeout=30)
    KssTestPair.unreserved.clear()
    att = sched.schedule_one(_pod("lonely"), 1, OPTS)
    assert att.result == "waiting"
    assert sched.next_permit_deadline() == 130.0
    clock.now = 129.9
    assert sched.resolve_waiting() == []
    clock.now = 130.0
    settled = sched.resolve_waiting()
    assert [s.attempt.result for s in settled] == ["unschedulable"]
    assert att.message == "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin KssTestPair."
    assert att.permit["KssTestPair"] == "rejected due to timeout after waiting 30s at plugin KssTestPair"
    assert att.rejected_by == "KssTestPair" and att.bound_to is None
    assert KssTestPair.unreserved == ["lonely"]
    assert all(not ni.pods for ni in sched.snapshot.node_info_list)


def test_a_rejected_waiting_pod_is_unreserved_and_a_deleted_one_is_removed() -> None:
    clock = Clock()
    sched = _scheduler(clock)
    KssTestPair.unreserved.clear()
    a = sched.schedule_one(_pod("a1", pair="x"), 1, OPTS)
    b = sched.schedule_one(_pod("b1", pair="y"), 1, OPTS)
    assert a.result == b.result == "waiting"
    wp = sched.waiting_pods.get("uid-default-a1")
    assert wp is not None
    wp.reject("KssTestPair", "not today")
    wp.allow("KssTestPair")  # the first answer wins
    assert sched.reject_waiting_pod("uid-default-b1")
    assert not sched.reject_waiting_pod("uid-default-nobody")
    settled = sched.resolve_waiting()
    assert [(s.attempt.pod, s.attempt.message) for s in settled] == [
        ("default/a1", "0/1 nodes are available: 1 not today."),
        ("default/b1", "0/1 nodes are available: 1 removed."),
    ]
    assert KssTestPair.unreserved == ["a1", "b1"]


def test_a_pod_without_a_reason_to_wait_binds_in_its_cycle() -> None:
    sched = _scheduler(Clock())
    att = sched.schedule_one(_pod("solo", pair=None), 1, OPTS)
    assert att.result == "scheduled" and att.permit == {"KssTestPair": "success"}


def test_go_duration_text() -> None:
    assert [go_duration(s) for s in (10, 60, 90, 1.5, 3600, 0.25)] == [
        "10s",
        "1m0s",
        "1m30s",
        "1.5s",
        "1h0m0s",
        "250ms",
    ]
