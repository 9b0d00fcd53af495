"""The scheduling loop driven directly: events in, popped pods scheduled, outcomes through a fake writer (the same
loop kss serve and kss replay run)."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.scheduler.cycle import ScheduleOptions
from kss_sim.scheduler.framework import Code, CycleState, PermitPlugin, Status
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.loop import LoopWriter, SchedulingLoop, unschedulable_plugins
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import register
from kss_sim.scheduler.record import Attempt
from tests.scheduler.factories import make_node, make_pod


@register
class KssTestLoopHold(PermitPlugin):
    """Holds every pod labelled ``hold`` in Permit for 10 s."""

    name = "KssTestLoopHold"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if "hold" in pod.labels:
            return Status(Code.WAIT), 10.0
        return Status(), 0


class FakeWriter(LoopWriter):
    """Records what the loop asks of its host; refuses bindings while ``refuse`` is set."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.refuse: str | None = None
        self.gone: set[str] = set()

    def write_binding(self, pod: PodInfo, att: Attempt, current: dict[str, Any]) -> str | None:
        self.calls.append(("write_binding", pod.key))
        return self.refuse

    def scheduled(self, pod: PodInfo, att: Attempt) -> None:
        self.calls.append(("scheduled", pod.key))

    def unschedulable(self, pod: PodInfo, att: Attempt) -> None:
        self.calls.append(("unschedulable", pod.key))

    def concluded(self, pod: PodInfo, att: Attempt) -> None:
        self.calls.append(("concluded", pod.key))

    def pod_after_wait(self, pod: PodInfo) -> dict[str, Any] | None:
        return None if pod.key in self.gone else pod.pod

    def forget_waiting(self, pod: PodInfo, att: Attempt) -> None:
        self.calls.append(("forget_waiting", pod.key))

    def record_nomination(self, pod: PodInfo, node_name: str) -> None:
        self.calls.append(("record_nomination", pod.key))

    def bind(self, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def delete_victim(self, victim: PodInfo, preemptor: PodInfo, preempting_group: Any = None) -> Status:
        return Status()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _loop(config: dict[str, Any] | None = None) -> tuple[SchedulingLoop, FakeWriter, Clock]:
    writer, clock = FakeWriter(), Clock()
    loop = SchedulingLoop(parse_config(config), writer, clock=clock, options=ScheduleOptions(tie_break="name"), seed=1)
    return loop, writer, clock


def _hold_config() -> dict[str, Any]:
    return {"profiles": [{"schedulerName": "default-scheduler",
                          "plugins": {"permit": {"enabled": [{"name": "KssTestLoopHold"}]}}}]}  # fmt: skip


def _schedule_next(loop: SchedulingLoop) -> tuple[Any, Attempt]:
    qpi = loop.pop()
    assert qpi is not None
    return qpi, loop.schedule(qpi, qpi.pod_info, qpi.attempts)


def test_a_pod_that_fits_is_bound_through_the_writer_and_leaves_the_queue() -> None:
    loop, writer, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1"))
    assert loop.add_unscheduled_pod(PodInfo(make_pod(name="p", requests={"cpu": "1"})))

    _, att = _schedule_next(loop)

    assert att.result == "scheduled" and att.bound_to == "n1"
    assert writer.calls == [("write_binding", "default/p"), ("scheduled", "default/p"), ("concluded", "default/p")]
    assert loop.queue.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert loop.cache.get_pod("uid-default-p") is not None  # assumed until the host's event confirms it


def test_another_schedulers_pod_is_left_alone() -> None:
    loop, _, _ = _loop()
    assert not loop.add_unscheduled_pod(PodInfo(make_pod(name="p", scheduler_name="other")))
    assert loop.pop() is None


def test_an_unschedulable_pod_waits_for_the_plugins_that_rejected_it_and_a_node_add_wakes_it() -> None:
    loop, writer, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="small", allocatable={"cpu": "1"}))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="big", requests={"cpu": "2"})))

    qpi, att = _schedule_next(loop)

    assert att.result == "unschedulable"
    assert qpi.unschedulable_plugins == {"NodeResourcesFit"}
    assert writer.calls == [("unschedulable", "default/big"), ("concluded", "default/big")]
    assert loop.queue.pending_counts()["unschedulable"] == 1
    loop.handle("ADDED", "Node", make_node(name="large", allocatable={"cpu": "8"}))
    assert loop.queue.pending_counts()["unschedulable"] == 0, "NodeResourcesFit registers Node/Add"


def test_a_refused_binding_is_a_failed_binding_cycle() -> None:
    loop, writer, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1"))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="p")))
    writer.refuse = "pod default/p is gone"

    qpi, att = _schedule_next(loop)

    assert att.result == "error" and att.bound_to is None
    assert att.message == "binding rejected: pod default/p is gone"
    assert att.bind == {"DefaultBinder": "binding rejected: pod default/p is gone"}
    assert loop.cache.get_pod("uid-default-p") is None, "the assumed pod is forgotten"
    assert writer.calls[-2:] == [("unschedulable", "default/p"), ("concluded", "default/p")]
    assert qpi.unschedulable_plugins == set()
    assert sum(loop.queue.pending_counts().values()) == 1, "back in the queue"


@pytest.mark.parametrize("other_node", ["n2", "n1"])
def test_a_refused_binding_leaves_the_pod_where_another_binders_event_put_it(other_node: str) -> None:
    """kube-scheduler's ForgetPod forgets only a pod still assumed: once the event of another binder's placement
    has confirmed the pod (on another node, or on the one chosen), the failed binding cycle keeps it there."""
    loop, writer, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1"))
    loop.handle("ADDED", "Node", make_node(name="n2"))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="p")))
    qpi = loop.pop()
    assert qpi is not None
    bound_elsewhere = PodInfo(make_pod(name="p", node_name=other_node))

    def refuse_after_the_event(pod: PodInfo, att: Attempt, current: dict[str, Any]) -> str | None:
        loop.add_assigned_pod(bound_elsewhere)  # the other binder's event, seen before the refusal
        return "pod default/p is already assigned"

    writer.write_binding = refuse_after_the_event  # type: ignore[method-assign]
    att = loop.schedule(qpi, qpi.pod_info, qpi.attempts)

    assert att.result == "error" and att.suggested_host == "n1"
    assert loop.cache.get_pod("uid-default-p") is bound_elsewhere
    node_info = loop.cache.snapshot.get(other_node)
    assert node_info is not None and [pi.uid for pi in node_info.pods] == ["uid-default-p"]


def test_a_pod_held_in_permit_is_concluded_when_its_wait_times_out() -> None:
    loop, writer, clock = _loop(_hold_config())
    loop.handle("ADDED", "Node", make_node(name="n1"))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="p", labels={"hold": "yes"})))

    qpi, att = _schedule_next(loop)

    assert att.result == "waiting" and writer.calls == []
    assert loop.resolve_waiting() == [], "nothing ends before the deadline"
    clock.now = loop.next_permit_deadline() or 0.0
    concluded = loop.resolve_waiting()

    assert [done.attempt.result for done in concluded] == ["unschedulable"]
    assert writer.calls == [("unschedulable", "default/p"), ("concluded", "default/p")]
    assert qpi.unschedulable_plugins == {"KssTestLoopHold"}
    assert loop.cache.get_pod("uid-default-p") is None, "the reservation is released"
    assert sum(loop.queue.pending_counts().values()) == 1


def test_a_pod_gone_while_it_waited_is_forgotten_not_concluded() -> None:
    loop, writer, clock = _loop(_hold_config())
    loop.handle("ADDED", "Node", make_node(name="n1"))
    pod = PodInfo(make_pod(name="p", labels={"hold": "yes"}))
    loop.add_unscheduled_pod(pod)
    _schedule_next(loop)

    writer.gone.add(pod.key)
    clock.now = 60.0
    assert loop.resolve_waiting() == []
    assert writer.calls == [("forget_waiting", "default/p")]


def test_a_deleted_waiting_pod_is_rejected_and_leaves_the_queue() -> None:
    loop, writer, _ = _loop(_hold_config())
    loop.handle("ADDED", "Node", make_node(name="n1"))
    pod = PodInfo(make_pod(name="p", labels={"hold": "yes"}))
    loop.add_unscheduled_pod(pod)
    _schedule_next(loop)

    writer.gone.add(pod.key)
    assert loop.reject_waiting(pod)
    loop.resolve_waiting()
    loop.delete_unscheduled_pod(pod)

    assert len(loop.waiting_pods) == 0
    assert sum(loop.queue.pending_counts().values()) == 0
    assert loop.cache.get_pod(pod.uid) is None


def test_an_assumed_pod_being_deleted_during_its_binding_frees_its_node_at_once() -> None:
    """kube-scheduler's handleAssumedPodDeletion: a pod deleted while in PreBind or Bind is forgotten at once (its
    binding goes on and fails) and its node is an AssignedPodDelete to the others; the failed binding that follows
    forgets nothing more and raises no second event."""
    loop, _, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    first = PodInfo(make_pod(name="first", requests={"cpu": "2"}))
    loop.add_unscheduled_pod(first)
    _, att = _schedule_next(loop)
    assert att.result == "scheduled" and loop.cache.is_assumed(first.uid)  # its binding's event not seen yet
    loop.add_unscheduled_pod(PodInfo(make_pod(name="second", requests={"cpu": "2"})))
    _, att = _schedule_next(loop)
    assert att.result == "unschedulable"

    assert loop.assumed_pod_deleted(first) is False, "it was not waiting in Permit"

    assert loop.cache.get_pod(first.uid) is None
    assert list(loop.queue.unschedulable) == []
    assert not loop.cache.forget_pod(first.uid, "n1"), "gone already: the binding's failure raises no event"
    qpi, att = _schedule_next(loop)
    assert qpi.key == "default/second" and att.result == "scheduled"
    assert loop.assumed_pod_deleted(PodInfo(make_pod(name="pending"))) is False


def test_an_assumed_pod_being_deleted_while_it_waits_in_permit_is_rejected() -> None:
    loop, writer, _ = _loop(_hold_config())
    loop.handle("ADDED", "Node", make_node(name="n1"))
    pod = PodInfo(make_pod(name="p", labels={"hold": "yes"}))
    loop.add_unscheduled_pod(pod)
    _schedule_next(loop)

    assert loop.assumed_pod_deleted(pod) is True
    assert [done.pod.key for done in loop.resolve_waiting()] == ["default/p"]
    assert loop.cache.get_pod(pod.uid) is None
    assert writer.calls[-1] == ("concluded", "default/p")


def test_a_configuration_swap_keeps_the_pods_waiting_in_permit() -> None:
    loop, writer, clock = _loop(_hold_config())
    loop.handle("ADDED", "Node", make_node(name="n1"))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="p", labels={"hold": "yes"})))
    _schedule_next(loop)

    loop.swap_config(parse_config({"profiles": [{"schedulerName": "default-scheduler"}]}))
    clock.now = 60.0

    assert [done.pod.key for done in loop.resolve_waiting()] == ["default/p"]
    assert writer.calls[-1] == ("concluded", "default/p")


def test_a_nomination_takes_the_node_from_lower_priority_nominees() -> None:
    loop, writer, _ = _loop()
    low = PodInfo(make_pod(name="low", priority=1))
    high = PodInfo(make_pod(name="high", priority=10))
    loop.nominate(low, "n1")
    low.pod.setdefault("status", {})["nominatedNodeName"] = "n1"

    loop.nominate(high, "n1")

    assert [p.key for p in loop.handles[0].nominated_pods_for_node("n1")] == ["default/high"]
    assert "nominatedNodeName" not in low.pod["status"]
    assert writer.calls == [("record_nomination", "default/low"), ("record_nomination", "default/high")]


def test_a_deleted_nominated_pod_frees_its_node_for_the_pods_it_kept_out() -> None:
    """kube-scheduler's deletePodFromSchedulingQueue: lower or equal priority pods counted the nominated pod on its
    node as if it were bound, so its deletion moves them (an AssignedPodDelete limited to them) at once, not at the
    unschedulable pool's flush; a higher-priority pod it did not hold back stays where it waits."""
    loop, _, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    nominee = PodInfo(make_pod(name="nominee", priority=10, requests={"cpu": "2"}))
    nominee.pod.setdefault("status", {})["nominatedNodeName"] = "n1"
    loop.nominate(nominee, "n1")
    loop.add_unscheduled_pod(PodInfo(make_pod(name="low", priority=1, requests={"cpu": "1"})))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="higher", priority=20, requests={"cpu": "3"})))
    for _ in range(2):
        qpi, att = _schedule_next(loop)
        assert att.result == "unschedulable" and qpi.unschedulable_plugins == {"NodeResourcesFit"}
    assert loop.queue.pending_counts()["unschedulable"] == 2

    loop.delete_unscheduled_pod(nominee)

    assert list(loop.queue.unschedulable) == ["default/higher"], "the pre-check keeps the higher-priority pod"
    qpi, att = _schedule_next(loop)
    assert qpi.key == "default/low"
    assert att.result == "scheduled" and att.bound_to == "n1"


def test_a_nomination_cleared_by_preemption_moves_the_pods_it_kept_out() -> None:
    """Upstream's prepareCandidate clears the nominations of the lower-priority pods nominated to the preemptor's
    node (ClearNominatedNodeName); each pod's update (hasNominatedNodeNameChanged, since v1.33) is an assigned pod's
    deletion to the pods of its priority or lower: they counted it on that node. A pod of higher priority than the
    one that lost its nomination stays where it waits."""
    loop, _, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    loop.add_assigned_pod(PodInfo(make_pod(name="victim", node_name="n1", priority=0, requests={"cpu": "2"})))
    nominee = PodInfo(make_pod(name="nominee", priority=5, requests={"cpu": "2"}))
    nominee.pod.setdefault("status", {})["nominatedNodeName"] = "n1"
    loop.nominate(nominee, "n1")
    loop.add_unscheduled_pod(PodInfo(make_pod(name="low", priority=1, requests={"cpu": "1"})))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="higher", priority=7, requests={"cpu": "3"})))
    for _ in range(2):
        _, att = _schedule_next(loop)
        assert att.result == "unschedulable"
    assert sorted(loop.queue.unschedulable) == ["default/higher", "default/low"]

    loop.add_unscheduled_pod(PodInfo(make_pod(name="high", priority=10, requests={"cpu": "2"})))
    qpi, att = _schedule_next(loop)

    assert qpi.key == "default/high" and att.nominated_node == "n1"
    assert "nominatedNodeName" not in nominee.pod["status"]
    assert [p.key for p in loop.handles[0].nominated_pods_for_node("n1")] == ["default/high"]
    assert sorted(loop.queue.unschedulable) == ["default/high", "default/higher"], "low moved, higher stays"


def test_a_nomination_moved_to_another_node_frees_the_old_one() -> None:
    """The nominated pod's update is the same event when its nomination changes rather than goes."""
    loop, _, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "1"}))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="low", priority=1, requests={"cpu": "2"})))
    _schedule_next(loop)
    before = PodInfo(make_pod(name="nominee", priority=5))
    before.pod["status"] = {"nominatedNodeName": "n1"}
    after = PodInfo(make_pod(name="nominee", priority=5))
    after.pod["status"] = {"nominatedNodeName": "n2"}

    loop.nomination_changed(before, before)
    assert list(loop.queue.unschedulable) == ["default/low"], "no change, no event"
    loop.nomination_changed(before, after)
    assert list(loop.queue.unschedulable) == []


def test_an_unnominated_pending_pod_deleted_moves_nobody() -> None:
    loop, _, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "1"}))
    loop.add_unscheduled_pod(PodInfo(make_pod(name="big", requests={"cpu": "2"})))
    _schedule_next(loop)
    other = PodInfo(make_pod(name="other"))
    loop.add_unscheduled_pod(other)

    loop.delete_unscheduled_pod(other)

    assert list(loop.queue.unschedulable) == ["default/big"]


def test_an_assigned_pod_enters_the_cache_and_leaves_it() -> None:
    loop, _, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1"))
    bound = PodInfo(make_pod(name="b", node_name="n1", requests={"cpu": "1"}))

    loop.add_assigned_pod(bound)
    assert loop.cache.snapshot.get("n1").requested.milli_cpu == 1000

    assert loop.delete_assigned_pod(bound.uid)
    assert not loop.delete_assigned_pod(bound.uid), "already gone"
    assert loop.cache.snapshot.get("n1").requested.milli_cpu == 0


def test_listed_objects_are_kept_for_the_plugins_and_unknown_kinds_refused() -> None:
    loop, _, _ = _loop()
    claim = {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns"}}
    pdb = {"kind": "PodDisruptionBudget", "metadata": {"name": "pdb"}}

    assert loop.handle("ADDED", "PersistentVolumeClaim", claim)
    assert loop.handle("ADDED", "PodDisruptionBudget", pdb)
    assert loop.find("PersistentVolumeClaim", "ns", "data") is claim
    assert loop.find("PodDisruptionBudget", "", "pdb") is pdb

    loop.handle("DELETED", "PersistentVolumeClaim", claim)
    loop.handle("DELETED", "PodDisruptionBudget", pdb)
    assert loop.find("PersistentVolumeClaim", "ns", "data") is None
    assert loop.cluster.pdbs == []
    assert not loop.handle("ADDED", "ConfigMap", {"metadata": {"name": "cm"}})


def test_unschedulable_plugins_name_what_the_pod_waits_for() -> None:
    rejected = Attempt(
        pod="p", attempt=1, priority=0, profile="default-scheduler", result="unschedulable", rejected_by="Coscheduling"
    )
    filtered = Attempt(pod="p", attempt=1, priority=0, profile="default-scheduler", result="unschedulable")
    filtered.filter_fail = {"n1": "NodeResourcesFit: Insufficient cpu", "n2": "TaintToleration: untolerated"}
    prefiltered = Attempt(pod="p", attempt=1, priority=0, profile="default-scheduler", result="unschedulable")
    prefiltered.prefilter_status = "unschedulable"
    prefiltered.prefilter = {"NodeAffinity": "no nodes", "PodTopologySpread": "skip", "NodeResourcesFit": "success"}
    error = Attempt(pod="p", attempt=1, priority=0, profile="default-scheduler", result="error")

    assert unschedulable_plugins(rejected) == {"Coscheduling"}
    assert unschedulable_plugins(filtered) == {"NodeResourcesFit", "TaintToleration"}
    assert unschedulable_plugins(prefiltered) == {"NodeAffinity"}
    assert unschedulable_plugins(error) == set()
