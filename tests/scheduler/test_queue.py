"""The scheduling queue on a virtual clock."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.cluster_events import NODE_ADD, POD_DELETE
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import Code, Handle, Status
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.queue import SchedulingQueue


class VirtualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def new_queue(**kwargs: Any) -> SchedulingQueue:
    """A queue that knows the default profile's plugins' events and queueing hints, as the loop registers them."""
    queue = SchedulingQueue(**kwargs)
    fwk = build_framework(parse_config(None).profiles[0], Handle(ClusterObjects()))
    queue.register_plugin_events(fwk.events_by_plugin())
    return queue


def make_pod(name: str, *, priority: int = 0, gates: list[str] | None = None) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "priority": priority}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return PodInfo({"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec})


def gate_check(pod: PodInfo) -> Status:
    gates = pod.spec.get("schedulingGates") or []
    if gates:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates")
    return Status()


def fail(queue: SchedulingQueue, plugins: set[str]) -> None:
    q = queue.pop(timeout=0)
    assert q is not None
    q.unschedulable_plugins = plugins
    queue.add_unschedulable_if_not_present(q, queue.scheduling_cycle)


def test_active_queue_orders_by_priority_then_arrival() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock)
    queue.add(make_pod("low", priority=1))
    clock.advance(1)
    queue.add(make_pod("high-late", priority=10))
    clock.advance(1)
    queue.add(make_pod("low-late", priority=1))
    queue.add(make_pod("high-later", priority=10))
    order = [queue.pop(timeout=0) for _ in range(4)]
    assert [q.key for q in order if q] == ["default/high-late", "default/high-later", "default/low", "default/low-late"]


def test_backoff_doubles_from_initial_and_caps_at_max() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock, initial_backoff=1, max_backoff=10)
    queue.add(make_pod("p"))
    durations = []
    for _ in range(6):
        q = queue.pop(timeout=0)
        assert q is not None
        durations.append(queue.backoff_duration(q))
        q.unschedulable_plugins = set()  # an error: straight to backoffQ
        queue.add_unschedulable_if_not_present(q, queue.scheduling_cycle)
        assert queue.flush_backoff_completed() == 0  # still backing off
        clock.advance(durations[-1] - 0.001)
        assert queue.flush_backoff_completed() == 0
        clock.advance(0.002)
        assert queue.flush_backoff_completed() == 1
    assert durations == [1, 2, 4, 8, 10, 10]


def test_unschedulable_pod_moves_on_node_add() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock)
    queue.add(make_pod("p"))
    fail(queue, {"NodeResourcesFit"})
    assert queue.pending_counts()["unschedulable"] == 1
    clock.advance(5)  # past the 1 s backoff
    assert queue.move_all_to_active_or_backoff(NODE_ADD) == 1
    assert queue.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_unschedulable_pod_ignores_events_its_plugins_do_not_register() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock)
    queue.add(make_pod("p"))
    fail(queue, {"TaintToleration"})
    assert queue.move_all_to_active_or_backoff(POD_DELETE) == 0
    assert queue.pending_counts()["unschedulable"] == 1


def test_a_pre_check_limits_a_move_to_the_pods_it_accepts() -> None:
    """Upstream's PreEnqueueCheck (a deleted nominated pod moves only the pods of lower or equal priority)."""
    clock = VirtualClock()
    queue = new_queue(clock=clock)
    queue.add(make_pod("low", priority=1))
    queue.add(make_pod("high", priority=10))
    fail(queue, {"NodeResourcesFit"})
    fail(queue, {"NodeResourcesFit"})
    clock.advance(5)

    assert queue.move_all_to_active_or_backoff(POD_DELETE, pre_check=lambda pod: pod.priority <= 5) == 1
    assert list(queue.unschedulable) == ["default/high"]
    popped = queue.pop(timeout=0)
    assert popped is not None and popped.key == "default/low"


def test_moved_pod_still_backing_off_goes_to_backoff_queue() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock)
    queue.add(make_pod("p"))
    fail(queue, {"NodeResourcesFit"})
    clock.advance(0.5)
    queue.move_all_to_active_or_backoff(NODE_ADD)
    assert queue.pending_counts()["backoff"] == 1


def test_failure_during_a_move_request_goes_to_backoff_not_unschedulable() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock)
    queue.add(make_pod("p"))
    q = queue.pop(timeout=0)
    assert q is not None
    cycle = queue.scheduling_cycle
    queue.move_all_to_active_or_backoff(NODE_ADD)  # the cluster changed while p was being scheduled
    q.unschedulable_plugins = {"NodeResourcesFit"}
    queue.add_unschedulable_if_not_present(q, cycle)
    assert queue.pending_counts()["backoff"] == 1
    assert queue.pending_counts()["unschedulable"] == 0


def test_unschedulable_pods_flush_after_five_minutes() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock)
    queue.add(make_pod("p"))
    fail(queue, {"TaintToleration"})
    clock.advance(299)
    assert queue.flush_unschedulable_left_over() == 0
    clock.advance(2)
    assert queue.flush_unschedulable_left_over() == 1
    assert queue.pending_counts()["active"] == 1


def test_gated_pod_waits_until_its_gates_are_removed() -> None:
    clock = VirtualClock()
    queue = new_queue(pre_enqueue=gate_check, clock=clock)
    queue.add(make_pod("gated", gates=["example.com/wait"]))
    assert queue.pop(timeout=0) is None
    assert queue.pending_counts()["gated"] == 1
    assert queue.move_all_to_active_or_backoff(NODE_ADD) == 0  # events do not release gated pods
    queue.update(make_pod("gated"))
    q = queue.pop(timeout=0)
    assert q is not None and q.key == "default/gated"


def test_pop_blocks_until_a_pod_arrives() -> None:
    import threading

    queue = new_queue()
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(getattr(queue.pop(timeout=5), "key", "")))
    t.start()
    queue.add(make_pod("late"))
    t.join(timeout=5)
    assert got == ["default/late"]


def test_pod_deleted_in_active_queue_and_recreated_waits_its_new_turn() -> None:
    # A reset or replace-import deletes and re-creates pods of the same names: the deleted pod's heap
    # entry must not pop the new pod at the old pod's place.
    clock = VirtualClock()
    queue = new_queue(clock=clock)
    queue.add(make_pod("z"))
    clock.advance(1)
    queue.delete("default/z")
    for name in ("a", "b", "z"):
        clock.advance(1)
        queue.add(make_pod(name))
    order = [queue.pop(timeout=0) for _ in range(3)]
    assert [q.key for q in order if q] == ["default/a", "default/b", "default/z"]
    assert queue.pop(timeout=0) is None


def test_pod_deleted_in_backoff_and_recreated_keeps_its_own_backoff() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock, initial_backoff=1, max_backoff=10)
    queue.add(make_pod("p"))
    fail(queue, set())  # an error: backoffQ until 1001
    queue.delete("default/p")
    queue.add(make_pod("p"))
    clock.advance(0.5)
    fail(queue, set())  # the new pod: backoffQ until 1001.5
    clock.advance(0.6)  # past the deleted pod's expiry only
    assert queue.flush_backoff_completed() == 0
    assert queue.pending_counts()["backoff"] == 1
    clock.advance(0.5)
    assert queue.flush_backoff_completed() == 1


def _in_flight_view(queue: SchedulingQueue, q: Any) -> tuple[Any, ...]:
    """What a popped pod and its queue show: the pod's bookkeeping, the queues' sizes, the cycle."""
    fields = (q.key, q.attempts, q.timestamp, q.initial_attempt_timestamp, q.gated) if q is not None else None
    return fields, queue.pending_counts(), queue.scheduling_cycle, "default/p" in queue


def test_add_in_flight_is_add_then_pop_specific() -> None:
    """The offline run's step: what add and pop_specific leave, without activeQ's heap entry; a gated pod stays gated;
    a pod the queue holds already (here in backoffQ) goes through add and pop_specific themselves."""
    for gates, held in ((None, False), (["g"], False), (None, True)):
        views = []
        for combined in (False, True):
            clock = VirtualClock()
            queue = new_queue(pre_enqueue=gate_check, clock=clock)
            if held:
                queue.add(make_pod("p"))
                fail(queue, {"NodeResourcesFit"})
                queue.move_all_to_active_or_backoff(NODE_ADD)  # to backoffQ: its backoff has not passed
                assert queue.pending_counts()["backoff"] == 1
            queue.add(make_pod("other"))
            clock.advance(1)
            pod = make_pod("p", gates=gates)
            if combined:
                q = queue.add_in_flight(pod)
            else:
                queue.add(pod)
                q = queue.pop_specific(pod.key)
            views.append(_in_flight_view(queue, q))
            if q is not None:
                assert q.pod_info is pod or held
                queue.done(q.key)
            # The other pod pops next either way: nothing of "p" is left in activeQ.
            nxt = queue.pop(timeout=0)
            assert nxt is not None and nxt.key == "default/other"
            assert queue.pop(timeout=0) is None
        assert views[0] == views[1], (gates, held)
    assert views[0][0] is not None and views[0][0][1] == 2  # the held pod's second attempt
