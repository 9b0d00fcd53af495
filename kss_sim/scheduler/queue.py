"""kube-scheduler's ``PriorityQueue``: activeQ, backoffQ and the unschedulable pool.

- activeQ is ordered by the profile's QueueSort plugin (PrioritySort: priority, then queue time);
- a pod that failed waits in backoffQ for ``initial * 2^(attempts-1)`` seconds (capped at the max);
- a pod rejected waits in the unschedulable pool until a cluster event its rejecting plugins registered arrives
  and the plugin's QueueingHintFn says Queue (SchedulerQueueingHints, on by default in every version kss runs),
  or 5 minutes pass;
- a pod that failed goes to backoffQ if such an event arrived while it was in flight (upstream's in-flight events,
  ``determineSchedulingHintForInFlightPod``), else to the unschedulable pool;
- gated pods (PreEnqueue rejects them) wait until an update lets them through.
With ``pop_from_backoff`` (the SchedulerPopFromBackoffQ gate, beta and on by default since v1.33) backoff expiries
are truncated to whole seconds (the 1 s ordering window), backoffQ orders a window by the QueueSort plugin, a pod
is backing off while its window is not over, and an empty activeQ pops the head of backoffQ at once; pods that
failed with an error (no rejecting plugin) wait in a backoffQ of their own that is never popped early.
Time comes from an injectable clock so simulations can run on virtual time.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kss_sim.scheduler.cluster_events import FORCE_ACTIVATE, UNSCHEDULABLE_TIMEOUT, expand_events
from kss_sim.scheduler.framework import ClusterEventWithHint, QueueingHint, QueueingHintFn, Status
from kss_sim.scheduler.nodeinfo import PodInfo

if TYPE_CHECKING:
    from kss_sim.scheduler.kube_scheduler_configuration import SchedulerConfig
    from kss_sim.scheduler.runtime import Framework

log = logging.getLogger("kss.scheduler")

Clock = Callable[[], float]

# A plugin's registrations as the queue matches them: the events and the hint judging them (None: Queue).
Registrations = list[tuple[frozenset[str], QueueingHintFn | None]]
# The events raised while pods were in flight: (event, old object, new object).
InFlightEvent = tuple[str, Any, Any]


@dataclass
class QueuedPodInfo:
    """A pod in the queue with its bookkeeping (``framework.QueuedPodInfo``)."""

    pod_info: PodInfo
    timestamp: float  # when it was (re)queued; PrioritySort and backoff read it
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_status: Status | None = None
    # BackoffExpiration: computed when the pod enters backoffQ, forgotten when it is popped (attempts change then).
    backoff_expiration: float | None = None

    @property
    def key(self) -> str:
        return self.pod_info.key


class SchedulingQueue:
    """The three queues with their moves; thread-safe, with a blocking ``pop``."""

    def __init__(
        self,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None = None,
        pre_enqueue: Callable[[PodInfo], Status] | None = None,
        *,
        clock: Clock = time.monotonic,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = 300.0,
        pop_from_backoff: bool = False,
    ) -> None:
        self._less = less or _priority_less
        self._pre_enqueue = pre_enqueue
        self.clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.pop_from_backoff = pop_from_backoff
        # Held through the mutex itself (a C-level context manager, cheaper than the Condition's Python-level
        # ``__enter__``/``__exit__``); the Condition on the same lock waits and notifies.
        self._mutex = threading.RLock()
        self._lock = threading.Condition(self._mutex)
        self._seq = itertools.count()
        # Heap entries carry the QueuedPodInfo they were pushed for: an entry left behind by a deleted pod must
        # not pop a re-created pod of the same name at the old pod's place (deletion is lazy).
        self._active: list[tuple[_SortKey, int, str]] = []
        self._active_items: dict[str, QueuedPodInfo] = {}
        # podBackoffQ and podErrorBackoffQ: (expiry, order within a window, seq, key, pushed entry).
        self._backoff: list[tuple[float, Any, int, str, QueuedPodInfo]] = []
        self._backoff_items: dict[str, QueuedPodInfo] = {}
        self._error_backoff: list[tuple[float, Any, int, str, QueuedPodInfo]] = []
        self._error_backoff_items: dict[str, QueuedPodInfo] = {}
        self.unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        # The events raised while pods are in flight (inFlightEvents): each in-flight pod's index into them from its
        # pop; ``_events_base`` is the absolute index of the list's first entry (trimmed as pods leave).
        self._in_flight_since: dict[str, int] = {}
        self._in_flight_events: list[InFlightEvent] = []
        self._events_base = 0
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        self._closed = False
        # Each profile's plugins' registrations (queueingHintMap); "" holds what is registered for every profile. A
        # plugin registered nowhere (or declaring no events) is woken by every event.
        self._hints: dict[str, dict[str, Registrations]] = {"": {}}

    def register_plugin_events(
        self,
        events_by_plugin: dict[str, list[str | ClusterEventWithHint]],
        profile: str = "",
    ) -> None:
        """The plugins' ``events_to_register()`` for the pods of ``profile`` ("" for every profile): the events that
        may make a pod a plugin rejected schedulable, each judged by its QueueingHintFn. A profile's registrations
        replace its earlier ones (a new configuration's plugins); those for every profile are added to."""
        with self._mutex:
            table: dict[str, Registrations] = self._hints.setdefault("", {}) if not profile else {}
            if profile:
                self._hints[profile] = table
            for name, events in events_by_plugin.items():
                regs: Registrations = []
                for e in events:
                    if isinstance(e, ClusterEventWithHint):
                        regs.append((frozenset(expand_events([e.event])), e.hint))
                    else:
                        regs.append((frozenset(expand_events([str(e)])), None))
                table[name] = regs

    # --- sizes ----------------------------------------------------------------------------------
    def pending_counts(self) -> dict[str, int]:
        """Pods per queue (what ``scheduler_pending_pods{queue}`` reports)."""
        with self._mutex:
            gated = sum(1 for q in self.unschedulable.values() if q.gated)
            return {
                "active": len(self._active_items),
                "backoff": len(self._backoff_items) + len(self._error_backoff_items),
                "unschedulable": len(self.unschedulable) - gated,
                "gated": gated,
            }

    def __contains__(self, key: str) -> bool:
        with self._mutex:
            return (
                key in self._active_items
                or key in self._backoff_items
                or key in self._error_backoff_items
                or key in self.unschedulable
            )

    # --- adding ---------------------------------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        """A new pending pod: to activeQ unless PreEnqueue gates it."""
        with self._mutex:
            q = QueuedPodInfo(pod, self.clock())
            self._move_to_active_or_gate(q)

    def _move_to_active_or_gate(self, q: QueuedPodInfo) -> None:
        if self._pre_enqueue is not None:
            st = self._pre_enqueue(q.pod_info)
            if not st.is_success():
                q.gated = True
                q.gating_status = st
                self.unschedulable[q.key] = q
                return
        q.gated = False
        q.gating_status = None
        self.unschedulable.pop(q.key, None)
        self._push_active(q)

    def _push_active(self, q: QueuedPodInfo) -> None:
        if q.initial_attempt_timestamp is None:  # upstream sets it when the pod first enters activeQ
            q.initial_attempt_timestamp = self.clock()
        self._active_items[q.key] = q
        heapq.heappush(self._active, (_SortKey(q, self._less), next(self._seq), q.key))
        self._lock.notify_all()

    def _push_backoff(self, q: QueuedPodInfo) -> None:
        expiry = self.backoff_expiry(q)
        if not q.unschedulable_plugins:  # an error: podErrorBackoffQ, ordered by expiry alone
            self._error_backoff_items[q.key] = q
            heapq.heappush(self._error_backoff, (expiry, 0, next(self._seq), q.key, q))
            return
        self._backoff_items[q.key] = q
        # With the gate a window's pods are ordered as activeQ orders them (lessBackoffCompletedWithPriority).
        order: Any = _SortKey(q, self._less) if self.pop_from_backoff else 0
        heapq.heappush(self._backoff, (expiry, order, next(self._seq), q.key, q))

    def _pop_backoff_head(self) -> QueuedPodInfo | None:
        """``popBackoff``: the head of podBackoffQ (never podErrorBackoffQ), whether its backoff is over or not."""
        while self._backoff:
            *_, key, pushed = heapq.heappop(self._backoff)
            q = self._backoff_items.get(key)
            if q is not None and q is pushed:
                del self._backoff_items[key]
                return q
        return None

    # --- popping --------------------------------------------------------------------------------
    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        """Block until a pod is in activeQ (or ``timeout`` / close); the pod is then in flight."""
        with self._mutex:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._active_items and not self._backoff_poppable() and not self._closed:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._lock.wait(remaining)
            if self._closed and not self._active_items:
                return None
            popped: QueuedPodInfo | None = None
            while self._active_items:
                entry, _, key = heapq.heappop(self._active)
                candidate = self._active_items.get(key)
                if candidate is not None and candidate is entry.q:
                    del self._active_items[key]
                    popped = candidate
                    break
            if popped is None:
                popped = self._pop_backoff_head()
                if popped is None:
                    return None
            q = popped
            key = q.key
            q.backoff_expiration = None
            q.attempts += 1
            if q.initial_attempt_timestamp is None:
                q.initial_attempt_timestamp = self.clock()
            self.scheduling_cycle += 1
            self._enter_flight(q)
            return q

    def _enter_flight(self, q: QueuedPodInfo) -> None:
        self._in_flight[q.key] = q
        self._in_flight_since[q.key] = self._events_base + len(self._in_flight_events)

    def _leave_flight(self, key: str) -> None:
        self._in_flight.pop(key, None)
        if self._in_flight_since.pop(key, None) is None:
            return
        # Drop the events no pod still in flight saw begin.
        first = min(self._in_flight_since.values(), default=self._events_base + len(self._in_flight_events))
        if first > self._events_base:
            del self._in_flight_events[: first - self._events_base]
            self._events_base = first

    def _note_in_flight(self, event: str, old: Any, new: Any) -> None:
        """``addEventIfAnyInFlight``: an event kept for the pods in flight to be judged by when they fail."""
        if self._in_flight:
            self._in_flight_events.append((event, old, new))

    def _worth_requeuing_after_flight(self, q: QueuedPodInfo, pod_scheduling_cycle: int) -> bool:
        """``determineSchedulingHintForInFlightPod``: an event since ``q`` was popped that may make it schedulable.
        A pod the queue did not see popped falls back to the move request cycle."""
        since = self._in_flight_since.get(q.key)
        if since is None:
            return self.move_request_cycle >= pod_scheduling_cycle
        for event, old, new in self._in_flight_events[since - self._events_base :]:
            if self._worth_requeuing(q, q.unschedulable_plugins, event, old, new):
                return True
        return False

    def _worth_requeuing(self, q: QueuedPodInfo, plugins: set[str], event: str, old: Any, new: Any) -> bool:
        """``isPodWorthRequeuing``: a rejecting plugin registered the event and its hint says Queue (no rejecting
        plugin, a wildcard event, or a plugin registered nowhere: Queue). A hint that raises counts as Queue, as
        upstream counts an error."""
        if not plugins or event in (UNSCHEDULABLE_TIMEOUT, FORCE_ACTIVATE):
            return True
        profile = q.pod_info.spec.get("schedulerName") or "default-scheduler"
        table = self._hints.get(profile)
        common = self._hints[""]
        for plugin in plugins:
            regs = table.get(plugin) if table is not None else None
            if regs is None:
                regs = common.get(plugin)
                if regs is None:
                    return True
            for events, hint in regs:
                if event not in events:
                    continue
                if hint is None or (old is None and new is None):
                    return True  # no hint, or an event raised without its objects: upstream's error path queues
                try:
                    if hint(q.pod_info, old, new) == QueueingHint.QUEUE:
                        return True
                except Exception:
                    log.exception("QueueingHintFn of plugin %r failed for %s; queueing the pod", plugin, event)
                    return True
        return False

    def _backoff_poppable(self) -> bool:
        return self.pop_from_backoff and bool(self._backoff_items)

    def done(self, key: str) -> None:
        """The pod left the scheduling cycle (bound or re-queued)."""
        with self._mutex:
            self._leave_flight(key)

    def close(self) -> None:
        with self._mutex:
            self._closed = True
            self._lock.notify_all()

    # --- failures -------------------------------------------------------------------------------
    def backoff_duration(self, q: QueuedPodInfo) -> float:
        """``calculateBackoffDuration``: initial, doubled per further attempt, capped at the max."""
        if q.attempts == 0:
            return 0.0
        duration = self.initial_backoff
        for _ in range(1, q.attempts):
            if duration > self.max_backoff - duration:
                return self.max_backoff
            duration += duration
        return min(duration, self.max_backoff)

    def backoff_expiry(self, q: QueuedPodInfo) -> float:
        """``getBackoffTime``: queue time plus the backoff, truncated to its 1 s window with the gate (cached)."""
        if q.attempts == 0:
            return 0.0
        if q.backoff_expiration is None:
            expiry = q.timestamp + self.backoff_duration(q)
            q.backoff_expiration = float(math.floor(expiry)) if self.pop_from_backoff else expiry
        return q.backoff_expiration

    def is_backing_off(self, q: QueuedPodInfo) -> bool:
        return self._backing_off(self.backoff_expiry(q), self.clock())

    def _backing_off(self, expiry: float, now: float) -> bool:
        if self.pop_from_backoff:
            # A pod whose window is the current one is still backing off (isPodBackingoff: !expiry.Before(window)).
            return expiry >= math.floor(now)
        return expiry > now

    def add_unschedulable_if_not_present(self, q: QueuedPodInfo, pod_scheduling_cycle: int) -> None:
        """A failed pod goes back: backoffQ if an event that may help it came while it was in flight (or it errored),
        else unschedulable."""
        with self._mutex:
            moved = self._worth_requeuing_after_flight(q, pod_scheduling_cycle)
            self._leave_flight(q.key)
            if (
                q.key in self._active_items
                or q.key in self._backoff_items
                or q.key in self._error_backoff_items
                or q.key in self.unschedulable
            ):
                return
            q.timestamp = self.clock()
            q.backoff_expiration = None
            if moved or not q.unschedulable_plugins:
                self._push_backoff(q)
            else:
                self.unschedulable[q.key] = q

    # --- moves ----------------------------------------------------------------------------------
    def flush_backoff_completed(self) -> int:
        """Move pods whose backoff ended to activeQ (kube-scheduler does this every second)."""
        moved = 0
        with self._mutex:
            now = self.clock()
            for heap, items in ((self._backoff, self._backoff_items), (self._error_backoff, self._error_backoff_items)):
                while heap and not self._backing_off(heap[0][0], now):
                    *_, key, pushed = heapq.heappop(heap)
                    q = items.get(key)
                    if q is None or q is not pushed:
                        continue
                    del items[key]
                    self._push_active(q)
                    moved += 1
        return moved

    def next_backoff_flush(self, now: float) -> float | None:
        """The first tick of the 1 s flush (ticks on whole seconds) after ``now`` that moves a pod, or None."""
        with self._mutex:
            expiry = None
            for heap, items in ((self._backoff, self._backoff_items), (self._error_backoff, self._error_backoff_items)):
                while heap and items.get(heap[0][3]) is not heap[0][4]:
                    heapq.heappop(heap)  # left behind by a pod that moved on
                if heap and (expiry is None or heap[0][0] < expiry):
                    expiry = heap[0][0]
            if expiry is None:
                return None
            # Gate on: done once the tick's window is past the expiry's; off: at the first tick at or after it.
            tick = math.floor(expiry) + 1.0 if self.pop_from_backoff else float(math.ceil(expiry))
            return max(tick, math.floor(now) + 1.0)

    def next_unschedulable_flush(self, now: float, interval: float = 30.0) -> float | None:
        """The first tick of the unschedulable flush (every ``interval`` s from 0) after ``now`` that moves a pod
        (one unschedulable for longer than podMaxInUnschedulablePodsDuration), or None."""
        with self._mutex:
            oldest = min((q.timestamp for q in self.unschedulable.values() if not q.gated), default=None)
            if oldest is None:
                return None
            tick = (math.floor((oldest + self.max_in_unschedulable) / interval) + 1) * interval
            return max(tick, (math.floor(now / interval) + 1) * interval)

    def flush_unschedulable_left_over(self) -> int:
        """Pods stuck longer than podMaxInUnschedulablePodsDuration (5 min) get another chance."""
        with self._mutex:
            now = self.clock()
            stale = [
                q for q in self.unschedulable.values() if not q.gated and now - q.timestamp > self.max_in_unschedulable
            ]
            for q in stale:
                self._requeue_unschedulable(q)
            if stale:
                self.move_request_cycle = self.scheduling_cycle
                self._note_in_flight(UNSCHEDULABLE_TIMEOUT, None, None)
            return len(stale)

    def _requeue_unschedulable(self, q: QueuedPodInfo) -> None:
        del self.unschedulable[q.key]
        if self.is_backing_off(q):
            self._push_backoff(q)
        else:
            self._push_active(q)

    def move_all_to_active_or_backoff(
        self,
        event: str,
        skip: frozenset[str] = frozenset(),
        pre_check: Callable[[PodInfo], bool] | None = None,
        *,
        old: Any = None,
        new: Any = None,
    ) -> int:
        """A cluster event (``old`` and ``new``: the object before and after, for the hints to judge): unschedulable
        pods a rejecting plugin's hint queues move on (but the pods in ``skip``, and those ``pre_check``, upstream's
        PreEnqueueCheck, turns down); kept for the pods in flight."""
        with self._mutex:
            moved = 0
            for q in list(self.unschedulable.values()):
                if skip and q.key in skip:
                    continue
                if pre_check is not None and not pre_check(q.pod_info):
                    continue
                if q.gated:
                    # A gated pod is checked again when its gating plugin registered the event (GangScheduling
                    # waits for its gang's pods and Workload); SchedulingGates only on the pod's own update.
                    gate = q.gating_status.plugin if q.gating_status is not None else ""
                    if gate and self._worth_requeuing(q, {gate}, event, old, new):
                        self._move_to_active_or_gate(q)
                    continue
                if self._worth_requeuing(q, q.unschedulable_plugins, event, old, new):
                    self._requeue_unschedulable(q)
                    moved += 1
            self.move_request_cycle = self.scheduling_cycle
            self._note_in_flight(event, old, new)
            return moved

    def activate(self, keys: list[str]) -> int:
        """``Activate``: these pods leave the unschedulable pool or backoffQ for activeQ now (a gang plugin wakes a
        group's siblings); pods in flight or gated stay where they are."""
        with self._mutex:
            moved = 0
            for key in keys:
                q = self.unschedulable.get(key)
                if q is not None and not q.gated:
                    del self.unschedulable[key]
                    self._push_active(q)
                    moved += 1
                    continue
                q = self._backoff_items.pop(key, None) or self._error_backoff_items.pop(key, None)
                if q is not None:
                    self._push_active(q)
                    moved += 1
            return moved

    def pop_specific(self, key: str) -> QueuedPodInfo | None:
        """``PopSpecificPod``: the pod activated (out of the unschedulable pool or backoffQ) and taken from activeQ,
        in flight as a popped pod is (a PodGroup cycle takes its group's pods together); None when it is not
        there to take (gated, in flight, not queued)."""
        with self._mutex:
            self.activate([key])
            q = self._active_items.pop(key, None)
            if q is None:
                return None  # its heap entry is left behind, skipped by pop
            q.backoff_expiration = None
            q.attempts += 1
            self.scheduling_cycle += 1
            self._enter_flight(q)
            return q

    def add_in_flight(self, pod: PodInfo) -> QueuedPodInfo | None:
        """:meth:`add` then :meth:`pop_specific` of the pod, as an offline run takes each pending pod at its turn:
        gated by PreEnqueue (None, it stays gated), else in flight. A pod the queue does not hold yet never enters
        activeQ's heap: its entry would only be left behind (an offline run never pops), one per pod."""
        with self._mutex:
            key = pod.key
            if (
                key in self._active_items
                or key in self._backoff_items
                or key in self._error_backoff_items
                or key in self._in_flight
            ):
                self.add(pod)
                return self.pop_specific(key)
            now = self.clock()
            q = QueuedPodInfo(pod, now)
            if self._pre_enqueue is not None:
                st = self._pre_enqueue(pod)
                if not st.is_success():
                    q.gated = True
                    q.gating_status = st
                    self.unschedulable[key] = q
                    return None
            self.unschedulable.pop(key, None)
            q.initial_attempt_timestamp = now  # it enters activeQ as it is added
            q.attempts = 1
            self.scheduling_cycle += 1
            self._enter_flight(q)
            return q

    def update(self, pod: PodInfo) -> None:
        """The pending pod changed: refresh it, and re-check gates of a gated pod."""
        with self._mutex:
            key = pod.key
            if key in self._active_items:
                self._active_items[key].pod_info = pod
                return
            for items in (self._backoff_items, self._error_backoff_items):
                if key in items:
                    items[key].pod_info = pod
                    return
            q = self.unschedulable.get(key)
            if q is not None:
                q.pod_info = pod
                if q.gated:
                    self._move_to_active_or_gate(q)
                else:
                    self._requeue_unschedulable(q)
                return
            if key in self._in_flight:
                self._in_flight[key].pod_info = pod
                return
            self._move_to_active_or_gate(QueuedPodInfo(pod, self.clock()))

    def delete(self, key: str) -> None:
        with self._mutex:
            self._active_items.pop(key, None)
            self._backoff_items.pop(key, None)
            self._error_backoff_items.pop(key, None)
            self.unschedulable.pop(key, None)
            self._leave_flight(key)

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        """What is where, for the UI and tests."""
        with self._mutex:

            def row(q: QueuedPodInfo) -> dict[str, Any]:
                return {"pod": q.key, "attempts": q.attempts, "plugins": sorted(q.unschedulable_plugins)}

            return {
                "active": [row(q) for q in self._active_items.values()],
                "backoff": [row(q) for q in (*self._backoff_items.values(), *self._error_backoff_items.values())],
                "unschedulable": [row(q) for q in self.unschedulable.values() if not q.gated],
                "gated": [row(q) for q in self.unschedulable.values() if q.gated],
            }


_less_failed = False


def _log_less_failure() -> None:
    """The QueueSort plugin's first failure is logged with its traceback; the queue then orders by PrioritySort's
    rule wherever ``less`` fails."""
    global _less_failed
    if not _less_failed:
        _less_failed = True
        log.exception("QueueSort plugin's less failed; ordering those pods by priority, then queue time")


def _priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher priority first, then earlier queue time."""
    if a.pod_info.priority != b.pod_info.priority:
        return a.pod_info.priority > b.pod_info.priority
    return a.timestamp < b.timestamp


class _SortKey:
    """Adapts a QueueSort ``less`` function to heapq ordering."""

    __slots__ = ("less", "q")

    def __init__(self, q: QueuedPodInfo, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]) -> None:
        self.q = q
        self.less = less

    def __lt__(self, other: _SortKey) -> bool:
        try:
            return self.less(self.q, other.q)
        except Exception:  # a QueueSort plugin that raises (or returns no bool) must not break the heap
            _log_less_failure()
            return _priority_less(self.q, other.q)


def queue_for_profiles(
    frameworks: Callable[[], dict[str, Framework]],
    config: SchedulerConfig,
    *,
    clock: Clock,
    pop_from_backoff: bool = False,
) -> SchedulingQueue:
    """The queue of a scheduler running these profiles: a pod is ordered by its profile's QueueSort plugin and let in
    by its PreEnqueue plugins; ``frameworks`` is asked at each call, since a new configuration swaps them."""

    def profile_of(pod: PodInfo) -> Framework | None:
        return frameworks().get(pod.spec.get("schedulerName") or "default-scheduler")

    def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        fwk = profile_of(a.pod_info)
        if fwk is not None and fwk.queue_sort:
            return fwk.queue_sort[0].less(a, b)
        return _priority_less(a, b)

    def pre_enqueue(pod: PodInfo) -> Status:
        fwk = profile_of(pod)
        return fwk.run_pre_enqueue_plugins(pod) if fwk is not None else Status()

    return SchedulingQueue(
        less,
        pre_enqueue,
        clock=clock,
        initial_backoff=config.pod_initial_backoff_seconds,
        max_backoff=config.pod_max_backoff_seconds,
        max_in_unschedulable=config.pod_max_in_unschedulable_pods_duration,
        pop_from_backoff=pop_from_backoff,
    )
