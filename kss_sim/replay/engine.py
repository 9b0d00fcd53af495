"""The replay engine: a timed workload through kube-scheduler's queue and cycle on a virtual clock.

Virtual time 0 is the workload's epoch. At each time the engine applies what is due (timers first: pods ending,
terminating victims leaving, deletions, controllers' timers; then the workload's events in file order), runs the
queue's periodic flushes when the time is one of their ticks (backoff every whole second, the unschedulable leftover
every 30 s), then pops pods until the queue has none to give (a cycle takes no virtual time, a binding is immediate),
then finishes the waits in Permit that ended. It then jumps to the next time anything can happen; ticks at which
nothing would move are never visited. Deterministic: the only randomness is the scheduler's seeded tie-break.
"""

from __future__ import annotations

import functools
import gc
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kss_sim.cluster.errors import Forbidden
from kss_sim.kube.pod_conditions import DISRUPTION_TARGET, POD_GC_MESSAGE, POD_GC_REASON, with_disruption_target
from kss_sim.kube.versions import KubeVersion
from kss_sim.replay import intake
from kss_sim.replay.model import (
    DELETED,
    PENDING,
    POD_GC,
    PREEMPTED,
    RUNNING,
    SUCCEEDED,
    Observer,
    PodRecord,
    ReplayResult,
)
from kss_sim.replay.objects import ObjectIntake
from kss_sim.replay.terminating import Terminations
from kss_sim.replay.workload import Event, TimedWorkload, WorkloadError
from kss_sim.replay.writer import ReplayWriter
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler import queue as q
from kss_sim.scheduler.cycle import ScheduleOptions
from kss_sim.scheduler.kube_scheduler_configuration import SchedulerConfig, parse_config
from kss_sim.scheduler.loop import (
    BACKOFF_FLUSH_SECONDS,
    UNSCHEDULABLE_FLUSH_SECONDS,
    LoopHost,
    SchedulingLoop,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins import dynamic_resources as dra_plugin
from kss_sim.scheduler.record import Attempt

if TYPE_CHECKING:
    from kss_sim.replay.world import LiveControllers

log = logging.getLogger("kss.replay")

WORKLOAD_KINDS = frozenset(
    ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "HorizontalPodAutoscaler")
)  # world.KINDS
DEFAULT_GRACE_SECONDS = 30.0
# kube-controller-manager's pod GC quarantine: how long a pod's node may be missing before the pod is force-deleted
# (kss serve's KSS_POD_GC_QUARANTINE default, kss_sim/controllers/pod_gc.py).
POD_GC_QUARANTINE_SECONDS = 40.0
_START_RANK = {"Deployment": 1, "CronJob": 1, "StatefulSet": 1, "DaemonSet": 1, "ReplicaSet": 2, "Job": 2, "Pod": 3}


class Replay(LoopHost):
    """One replay of a timed workload (``ReplayState`` for observers, ``world.Engine`` for the workload controllers)."""

    def __init__(
        self,
        workload: TimedWorkload,
        scheduler_config: dict[str, Any] | None = None,
        feature_gates: dict[str, bool] | None = None,
        seed: int = 0,
        until: float | None = None,
        sample_interval: float = 3600.0,
        observers: Sequence[Observer] = (),
        record: bool = False,
        kube_version: KubeVersion | None = None,
    ) -> None:
        if sample_interval <= 0:
            raise ValueError("sample_interval must be more than 0 s")
        self.workload = workload
        self.feature_gates = dict(feature_gates or {})
        self.config_document: dict[str, Any] = dict(
            scheduler_config if scheduler_config is not None else workload.scheduler_config or {}
        )
        self.config = parse_config(self.config_document or None, self.feature_gates, kube_version)
        self.kube_version = self.config.kube_version
        self.seed = seed
        self.until = until
        self.sample_interval = float(sample_interval)
        self.observers = list(observers)
        self.record = record
        self._now = 0.0
        self.actions = ReplayWriter(self)
        self.loop = SchedulingLoop(
            self.config,
            self.actions,
            clock=lambda: self._now,
            options=ScheduleOptions(record=record, tie_break="random", run_binding_cycle=True),
            extenders=_extenders,
            feature_gates=self.feature_gates,
            seed=seed,
        )
        self.records: dict[str, PodRecord] = {}  # uid -> record, in arrival order
        self.pending: dict[str, PodInfo] = {}  # key -> pod arrived and not bound (queued, gated or waiting)
        self.bound: dict[str, PodInfo] = {}  # key -> bound pod (running or terminating)
        self.terminations = Terminations(self)  # bound pods deleted gracefully, until their kubelets end them
        self._run_for: dict[str, float | None] = {}  # uid -> seconds it runs once bound
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        # Timers that end by themselves; a CronJob's next schedule is not one (it would keep a run going forever).
        self._holding: set[int] = set()
        self._seq = itertools.count()
        self._arrivals = itertools.count()
        self._events: list[Event] = list(workload.events)
        self._next_event = 0
        self.attempts = 0
        self.objects = ObjectIntake(self)
        self.controllers: LiveControllers | None = None
        self._check_workload_kinds()

    # --- ReplayState ----------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self._now

    @property
    def nodes(self) -> Iterable[NodeInfo]:
        return self.cache.snapshot.node_info_list

    @property
    def pods(self) -> Mapping[str, PodRecord]:
        return self.records

    def queue_counts(self) -> dict[str, int]:
        return self.queue.pending_counts()

    def pending_pods(self) -> int:
        return len(self.pending)

    def running_pods(self) -> int:
        return len(self.bound)

    # --- world.Engine (the workload controllers' side) ----------------------------------------------
    def create_pod(self, pod: dict[str, Any], *, run_for: float | None, owner: str) -> None:
        self._create_pod(pod, run_for=run_for, end_at=None, owner=owner)

    def delete_pod(self, namespace: str, name: str) -> None:
        """The controllers' store removed the pod (no grace period, or none left): it is gone now."""
        self._remove_pod(f"{namespace or 'default'}/{name}", DELETED)

    def terminate_pod(self, pod: dict[str, Any], outcome: str, reason: str = "") -> bool:
        """The bound pod ``pod`` (as the controllers' store has it: deleted gracefully, deletionTimestamp and
        deletionGracePeriodSeconds set, a DisruptionTarget condition when evicted) starts terminating: it keeps its
        node until its kubelet ends it (``outcome`` then; ``reason``: an evicted pod's cause). True when it
        terminates (or did already), False when the engine has no such pod bound."""
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        bound = self.bound.get(key)
        if bound is None:
            return False
        target = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == DISRUPTION_TARGET]
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        self.terminations.begin(
            bound, outcome, grace, condition=target[0] if target else None, reason=reason,
            deletion_timestamp=meta.get("deletionTimestamp"),
        )  # fmt: skip
        return True

    def call_at(self, at: float, callback: Callable[[], None], *, holds_run: bool = True) -> None:
        """``callback`` at virtual time ``at``; without ``holds_run`` the timer alone does not keep the run going
        (without ``until`` the run ends when only such timers are left)."""
        seq = next(self._seq)
        if holds_run:
            self._holding.add(seq)
        heapq.heappush(self._timers, (max(at, self._now), seq, callback))

    def node_objects(self) -> list[dict[str, Any]]:
        return [ni.node for ni in self.cache.snapshot.node_info_list]

    def create_object(self, obj: dict[str, Any]) -> bool:
        """An object a controller makes (a StatefulSet's claim), entering as a create event's would (its queue
        event raised); False, and nothing done, when one of that kind and name exists (AlreadyExists)."""
        return self.objects.create_if_absent(intake.copy_object(obj))

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """An object a controller's owner takes with it (a StatefulSet's claim under its retention policy), deleted
        as a delete event would delete it."""
        self.objects.delete(kind, namespace, name)

    # --- set-up ---------------------------------------------------------------------------------
    def apply_config(self, document: dict[str, Any]) -> None:
        """``applyConfig``: new frameworks from the next cycle on, the queue's backoff parameters updated; the
        tie-break RNG goes on (a run stays one seeded sequence)."""
        config = parse_config(document, self.feature_gates, self.kube_version)
        rng = self.scheduler.rng
        start_index = self.scheduler.next_start_node_index
        self.config = config
        self.loop.swap_config(config)
        self.scheduler.rng = rng
        self.scheduler.next_start_node_index = start_index
        self.queue.max_in_unschedulable = config.pod_max_in_unschedulable_pods_duration

    def _check_workload_kinds(self) -> None:
        """With workload objects or NoExecute taints, ``kss serve``'s controllers on this run's clock
        (``replay/world.py``); objects the API would refuse are named before the run, each with its path in the
        workload."""
        objects = [(f"spec.events[{e.seq}].{e.action}", e.obj) for e in self._events if e.kind in WORKLOAD_KINDS]
        start = enumerate(self.workload.start)
        objects += [(f"spec.start[{i}]", o) for i, o in start if o.get("kind") in WORKLOAD_KINDS]
        if not objects and not _has_no_execute_taints(self.workload):
            return
        # Imported here: a replay of pods alone does not load the controllers and the in-memory API.
        from kss_sim.replay.world import LiveControllers
        from kss_sim.replay.world_objects import check_workload_object

        version, gates = self.kube_version.name, self.kube_version.effective_gates(self.feature_gates)
        problems = [
            f"{path}: {p}"
            for path, obj in objects
            if obj is not None
            for p in check_workload_object(obj, kube_version=version, feature_gates=gates)
        ]
        if problems:
            raise WorkloadError(problems)
        self.controllers = LiveControllers(
            self, self.workload.epoch, seed=self.seed, kube_version=version, feature_gates=gates
        )

    # --- the run --------------------------------------------------------------------------------
    def run(self) -> ReplayResult:
        """Replay the whole workload (or up to ``until``) and return the records."""
        started = time.perf_counter()
        before = gc.get_threshold()
        gc.set_threshold(max(before[0], 10_000), max(before[1], 50), max(before[2], 100))
        try:
            self._run()
        finally:
            gc.set_threshold(*before)
        still_terminating = self.terminations.outcomes_by_uid()
        for record in self.records.values():
            if record.uid in still_terminating:
                record.outcome = still_terminating[record.uid]  # Terminating still: its grace runs, or no kubelet
            elif record.outcome == PENDING and record.bound_at is not None:
                record.outcome = RUNNING
        return ReplayResult(
            workload=self.workload.name,
            pods=list(self.records.values()),
            virtual_seconds=self._now,
            attempts=self.attempts,
            wall_seconds=time.perf_counter() - started,
            config=self.config_document,
            seed=self.seed,
            kube_version=self.kube_version.name,
        )

    def _run(self) -> None:
        # The starting cluster: the objects pods depend on (classes, namespaces, nodes, claims) before the pods.
        # Owners before what they own (a Deployment before its ReplicaSets, those before their pods), so the
        # workload controllers' store knows each owner when what names it arrives.
        for obj in sorted(self.workload.start, key=lambda o: _START_RANK.get(str(o.get("kind")), 0)):
            self.objects.create(intake.copy_object(obj), run_for=None, end_at=None, seq=next(self._arrivals))
        for observer in self.observers:
            observer.on_start(self)
        next_sample = 0.0
        last_sample: float | None = None
        while True:
            self._step()
            if next_sample <= self._now:
                if next_sample == self._now:
                    self._sample()
                    last_sample = self._now
                next_sample = (self._now // self.sample_interval + 1) * self.sample_interval
            upcoming = self._next_time(next_sample)
            if upcoming is None:
                break
            if self.until is not None and upcoming > self.until:
                self._now = max(self._now, self.until)
                break
            self._now = upcoming
        if last_sample != self._now:
            self._sample()
        for observer in self.observers:
            observer.on_end(self)

    def _sample(self) -> None:
        for observer in self.observers:
            observer.on_sample(self)

    def _next_time(self, next_sample: float) -> float | None:
        """When anything can happen next; None once only futile retries are left (without ``until``)."""
        now = self._now
        candidates: list[float] = []
        if self._next_event < len(self._events):
            candidates.append(self._events[self._next_event].at)
        if self._holding:
            candidates.append(self._timers[0][0])
        deadline = self.scheduler.next_permit_deadline()
        if deadline is not None:
            candidates.append(deadline)
        if not candidates and self.until is None:
            return None  # the workload is over: only the queue's own retries (and CronJob schedules) could follow
        if self._timers:
            candidates.append(self._timers[0][0])
        backoff = self.queue.next_backoff_flush(now)
        if backoff is not None:
            candidates.append(backoff)
        leftover = self.queue.next_unschedulable_flush(now, UNSCHEDULABLE_FLUSH_SECONDS)
        if leftover is not None:
            candidates.append(leftover)
        candidates.append(next_sample)
        return max(now, min(candidates))

    def _step(self) -> None:
        """Everything that happens at ``now`` (repeated while what happened set more for now: a zero grace period)."""
        now = self._now
        while True:
            while self._timers and self._timers[0][0] <= now:
                _, seq, callback = heapq.heappop(self._timers)
                self._holding.discard(seq)
                callback()
            while self._next_event < len(self._events) and self._events[self._next_event].at <= now:
                event = self._events[self._next_event]
                self._next_event += 1
                self.objects.apply(event)
            if now % BACKOFF_FLUSH_SECONDS == 0:
                self.loop.flush_backoff()
            if now % UNSCHEDULABLE_FLUSH_SECONDS == 0:
                self.loop.flush_unschedulable()
            self.loop.resolve_waiting()
            while (qpi := self.loop.pop()) is not None:
                self._schedule(qpi)
            self.loop.resolve_waiting()
            if not (self._timers and self._timers[0][0] <= now):
                break

    # --- scheduling -----------------------------------------------------------------------------
    def _schedule(self, qpi: q.QueuedPodInfo) -> None:
        if self.loop.pod_group_of(qpi.pod_info):
            # A v1.36 PodGroup's pod: its group's queued pods in one PodGroup cycle.
            members = [(m, pod, m.attempts) for m in self.loop.pop_pod_group(qpi) if (pod := self._current(m))]
            if members:
                self.loop.schedule_pod_group(members)
            return
        pod = self._current(qpi)
        if pod is not None:
            self.loop.schedule(qpi, pod, qpi.attempts)

    def _current(self, qpi: q.QueuedPodInfo) -> PodInfo | None:
        """The popped pod as the replay has it now; None (and done with it) when it is gone or was re-created."""
        pod = self.pending.get(qpi.key)
        if pod is None or pod.uid != qpi.pod_info.uid:
            self.loop.skip(qpi)
            return None
        return pod

    def attempt_concluded(self, pod: PodInfo, att: Attempt) -> None:
        """An attempt is final: counted, and shown to the observers."""
        self.attempts += 1
        record = self.records.get(pod.uid)
        if record is not None:
            record.attempts += 1
            if record.first_attempt is None:
                record.first_attempt = self._now
        for observer in self.observers:
            observer.on_attempt(self, att, pod)

    def bound_now(self, pod: PodInfo, att: Attempt) -> None:
        node = att.bound_to or ""
        assumed = self.cache.get_pod(pod.uid)
        bound = assumed if assumed is not None else PodInfo(pod.pod)
        status = dict(bound.pod.get("status") or {})
        status.pop("nominatedNodeName", None)
        status["phase"] = "Running"
        status["startTime"] = intake.rfc3339(self.workload.epoch, self._now)
        bound.pod["status"] = status
        self.pending.pop(pod.key, None)
        self.bound[pod.key] = bound
        for h in self.handles:
            h.delete_nominated_pod(pod)
        self.cluster.put_pod(bound.pod)
        self.queue.move_all_to_active_or_backoff(ev.POD_ADD, new=bound)
        record = self.records.get(pod.uid)
        if record is not None:
            record.bound_at = self._now
            record.node = node
        run_for = self._run_for.get(pod.uid)
        if run_for is not None:
            uid = pod.uid
            self.call_at(self._now + run_for, lambda: self._finish_bound(pod.key, uid, SUCCEEDED))
        if self.controllers is not None:
            self.controllers.pod_bound(bound.pod, node)

    # --- pods coming and going ------------------------------------------------------------------
    def _create_pod(
        self,
        pod: dict[str, Any],
        *,
        run_for: float | None,
        end_at: float | None,
        owner: str,
        seq: int | None = None,
    ) -> None:
        seq = next(self._arrivals) if seq is None else seq
        intake.ensure_name(pod, "Pod", seq)
        meta = pod.setdefault("metadata", {})
        meta["namespace"] = meta.get("namespace") or "default"
        key = f"{meta['namespace']}/{meta.get('name')}"
        if key in self.pending or key in self.bound:
            log.warning("pod %s already exists; the create at %gs is ignored", key, self._now)
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            # A finished pod (a snapshot's completed Job pod) holds nothing: kube-scheduler's informer filters it out.
            log.info("pod %s has finished (%s); left out", key, pod["status"]["phase"])
            return
        bound_already = bool((pod.get("spec") or {}).get("nodeName"))
        try:
            intake.admit_pod(pod, self.cluster, bound=bound_already)
        except Forbidden as exc:
            log.warning("pod %s refused at %gs: %s", key, self._now, exc)
            return
        intake.stamp(pod, kind="Pod", seq=seq, epoch=self.workload.epoch, now=self._now)
        claims, _ = intake.claims_from_templates(pod, self.cluster)
        for claim in claims:
            self.objects.put("ResourceClaim", claim)
        pi = PodInfo(pod)
        self.records[pi.uid] = PodRecord(
            key=key,
            uid=pi.uid,
            arrival=self._now,
            owner=owner or intake.owner_of(pod),
            priority=pi.priority,
            requests=intake.requests_of(pi),
        )
        self._run_for[pi.uid] = run_for
        self.cluster.put_pod(pod)
        if not owner and self.controllers is not None:
            self.controllers.pod_arrived(pod)  # a snapshot's or an event's pod: its controller adopts it
        if end_at is not None:
            uid = pi.uid
            self.call_at(end_at, lambda: self._delete_pod(key, uid=uid))
        if bound_already:
            pod.setdefault("status", {}).setdefault("startTime", intake.rfc3339(self.workload.epoch, self._now))
            self.bound[key] = pi
            record = self.records[pi.uid]
            record.bound_at, record.node = self._now, pi.node_name
            self.loop.add_assigned_pod(pi)
            if run_for is not None:
                uid = pi.uid
                self.call_at(self._now + run_for, lambda: self._finish_bound(key, uid, SUCCEEDED))
            if pi.node_name not in self.objects.nodes:
                self._collect_orphan_later(key, pi.uid)
            return
        self.pending[key] = pi
        self.loop.add_unscheduled_pod(pi)  # another scheduler's pod stays pending

    def node_deleted(self, name: str) -> None:
        """The Node ``name`` was deleted: its pods stay bound to it, as on a cluster (nothing deletes a pod with its
        Node), until the pod GC collects them once the node has been missing for its quarantine."""
        for key, pod in self.bound.items():
            if pod.node_name == name:
                self._collect_orphan_later(key, pod.uid)

    def _collect_orphan_later(self, key: str, uid: str) -> None:
        self.call_at(self._now + POD_GC_QUARANTINE_SECONDS, functools.partial(self._gc_orphan, key, uid))

    def _gc_orphan(self, key: str, uid: str) -> None:
        """kube-controller-manager's pod GC: a pod bound to a node that is still missing after the quarantine is
        force-deleted (no kubelet to end it), as ``kss serve``'s pod GC does."""
        pod = self.bound.get(key)
        if pod is None or pod.uid != uid or pod.node_name in self.objects.nodes:
            return
        # markFailedAndDeletePodWithCondition: Failed (unless it finished) and the DisruptionTarget condition, then
        # the delete (the controllers' store writes the same, LiveControllers.pod_finished).
        status = pod.pod.setdefault("status", {})
        now = intake.rfc3339(self.workload.epoch, self._now)
        status["conditions"] = with_disruption_target(
            list(status.get("conditions") or []), POD_GC_REASON, POD_GC_MESSAGE, now
        )
        if status.get("phase") not in ("Succeeded", "Failed"):
            status["phase"] = "Failed"
        self._finish_bound(key, uid, DELETED)
        record = self.records.get(uid)
        if record is not None and record.outcome == DELETED and not record.reason:
            record.reason = POD_GC  # an evicted or preempted pod keeps its own outcome and reason

    def _update_pod(self, pod: dict[str, Any]) -> None:
        """An update of a pod: a pending pod is requeued as kube-scheduler does for a spec or label change; a bound
        pod's labels (what a running pod can change) are taken over."""
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        if key in self.pending:
            old = self.pending[key]
            new = dict(old.pod)
            new["metadata"] = {**old.pod["metadata"], "labels": dict(meta.get("labels") or {}),
                               "annotations": dict(meta.get("annotations") or {})}  # fmt: skip
            spec = pod.get("spec")
            if isinstance(spec, dict):
                # Only what a pending pod may change: scheduling gates (removal), tolerations (additions), affinity.
                merged = dict(old.pod.get("spec") or {})
                for field in ("schedulingGates", "tolerations", "affinity", "nodeSelector"):
                    if field in spec:
                        merged[field] = spec[field]
                    elif field == "schedulingGates":
                        merged.pop(field, None)
                new["spec"] = merged
            pi = PodInfo(new)
            self.pending[key] = pi
            self.cluster.put_pod(new)
            self.loop.update_unscheduled_pod(pi)
            return
        old_bound = self.bound.get(key)
        if old_bound is None:
            log.warning("update of pod %s at %gs: no such pod", key, self._now)
            return
        new = dict(old_bound.pod)
        new["metadata"] = {**old_bound.pod["metadata"], "labels": dict(meta.get("labels") or {})}
        pi = PodInfo(new)
        self.bound[key] = pi
        self.cluster.put_pod(new)
        self.loop.add_assigned_pod(pi)

    def _delete_pod(self, key: str, *, uid: str | None = None, grace: float | None = None) -> None:
        """A client deletes the pod (a delete event, its ``endAt``), as ``kubectl delete`` does: a pending pod goes
        now, a bound one terminates for ``grace`` seconds, by default its ``terminationGracePeriodSeconds`` (a
        ``uid`` given: only if it is still that pod)."""
        bound = self.bound.get(key)
        if bound is None or (uid is not None and bound.uid != uid):
            self._remove_pod(key, DELETED, uid=uid)
            return
        if key in self.terminations:
            return  # a later delete may only shorten the grace period; the pod's own never does
        if grace == 0:
            self._remove_pod(key, DELETED, uid=uid)  # --grace-period=0: gone at once, as a recorded departure
            return
        own = bound.spec.get("terminationGracePeriodSeconds")
        seconds = grace if grace is not None else DEFAULT_GRACE_SECONDS if own is None else max(0.0, float(own))
        self.terminations.begin(bound, DELETED, seconds)
        if self.controllers is not None:
            self.controllers.pod_deleting(bound.pod)

    def _remove_pod(self, key: str, outcome: str, *, uid: str | None = None) -> None:
        """The pod is gone now, bound or pending (a ``uid`` given: only if it is still that pod)."""
        pod = self.pending.get(key)
        if pod is not None and (uid is None or pod.uid == uid):
            del self.pending[key]
            if self.loop.reject_waiting(pod):
                self.loop.resolve_waiting()
            self.loop.delete_unscheduled_pod(pod)
            self.cluster.delete_pod(pod.pod)
            self._release_claims(pod)
            self._finished(pod, outcome)
            return
        if key in self.bound and (uid is None or self.bound[key].uid == uid):
            self._finish_bound(key, self.bound[key].uid, outcome)

    def _finish_bound(self, key: str, uid: str, outcome: str) -> None:
        """A bound pod leaves: it succeeded (ran its runFor), was deleted, preempted or evicted."""
        pod = self.bound.get(key)
        if pod is None or pod.uid != uid:
            return
        terminating = self.terminations.ended(key, pod.node_name)
        if terminating is not None and outcome != SUCCEEDED:
            outcome = terminating  # gone before or at its kubelet's end (a removed node): as its deletion said
        del self.bound[key]
        self.cache.remove_pod(uid)
        self.cluster.delete_pod(pod.pod)
        for h in self.handles:
            h.delete_nominated_pod(pod)
        self._release_claims(pod)
        self.queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=pod)
        self._finished(pod, outcome)

    def _finished(self, pod: PodInfo, outcome: str) -> None:
        record = self.records.get(pod.uid)
        if record is not None and record.finished_at is None:
            record.finished_at = self._now
            record.outcome = outcome
        if self.controllers is not None:
            self.controllers.pod_finished(pod.pod, succeeded=outcome == SUCCEEDED)

    def _release_claims(self, pod: PodInfo) -> None:
        """The resourceclaim controller's part: the pod leaves its claims' reservedFor (a claim nobody reserves is
        deallocated), and the claims made for it from templates are garbage-collected."""
        if not pod.spec.get("resourceClaims") or not self.handles:
            return
        for released in dra_plugin.release_claims_of_deleted_pod(self.handles[0], pod):
            # The update's event, as the informer brings it: a pod waiting for the freed devices is retried now
            # (DynamicResources registers claim updates, not pod deletions).
            self.objects.put("ResourceClaim", released, added=False)
        for namespace, name in intake.owned_claims(pod.pod):
            owned = self.cluster.get_object("ResourceClaim", namespace, name)
            if owned is not None:
                self.cluster.delete_object("ResourceClaim", owned)

    def terminate_victim(self, victim: PodInfo, preemptor: PodInfo) -> None:
        """A preemption victim: deleted as the scheduler deletes it (the DisruptionTarget condition, then a delete
        with its grace period), it terminates holding its node (the preemptor stays nominated meanwhile)."""
        bound = self.bound.get(victim.key)
        if bound is None or bound.uid != victim.uid or victim.key in self.terminations:
            return
        scheduler = preemptor.pod.get("spec", {}).get("schedulerName") or "default-scheduler"
        condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": "PreemptionByScheduler",
                     "message": f"{scheduler}: preempting to accommodate a higher priority pod",
                     "lastTransitionTime": intake.rfc3339(self.workload.epoch, self._now)}  # fmt: skip
        record = self.records.get(victim.uid)
        if record is not None:
            record.preemptions += 1
        grace = bound.spec.get("terminationGracePeriodSeconds")
        seconds = DEFAULT_GRACE_SECONDS if grace is None else max(0.0, float(grace))
        self.terminations.begin(bound, PREEMPTED, seconds, condition=condition)
        if self.controllers is not None:
            self.controllers.pod_deleting(bound.pod)


def _has_no_execute_taints(workload: TimedWorkload) -> bool:
    """Whether a node of the workload has, or is given, a NoExecute taint (the taint eviction controller's work),
    or fails (its Ready condition then brings the node lifecycle controller's)."""
    nodes = [o for o in workload.start if o.get("kind") == "Node"]
    nodes += [e.obj for e in workload.events if e.kind == "Node" and e.obj is not None]
    if any(e.action in ("failNode", "drain") for e in workload.events):
        return True  # the node lifecycle controller's taints; the eviction API and the disruption controller
    if any(e.action == "taint" and (e.taint or {}).get("effect") == "NoExecute" for e in workload.events):
        return True
    return any(
        isinstance(t, dict) and t.get("effect") == "NoExecute"
        for node in nodes
        for t in (node.get("spec") or {}).get("taints") or []
    )


def _extenders(config: SchedulerConfig) -> Any:
    """The configuration's scheduler extenders (their HTTP client loaded only when a replay has any)."""
    from kss_sim.extender_http import extenders_for

    return extenders_for(config.extenders)
