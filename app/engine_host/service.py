"""The scheduler running inside ``kss serve``: the engine over the virtual cluster.

A background thread pops pods from the scheduling queue and runs the engine's cycle on the
scheduler cache. Store changes reach it through a listener that only appends to an inbox; the
thread applies the inbox between cycles, so API requests never wait for a scheduling cycle.
Outcomes go back through the store like kube-scheduler's go through kube-apiserver: the binding
subresource, pod status (PodScheduled condition, nominatedNodeName), Events, victim deletions,
and the kube-scheduler-simulator result annotations. Every attempt is recorded by the results service.

Writes per attempt are few and not waited for in the loop: the binding (or the PodScheduled=False status)
carries the result annotations in the same change, the Event goes into the same group commit, and the loop
starts the next cycle while they are made durable (``ClusterStore.deferred``), as kube-scheduler's binding
cycle runs apart from its scheduling cycle. The bind is done after the cycle, so a bind the store refuses
(the pod was deleted or bound meanwhile) is handled as kube-scheduler handles a failed binding cycle.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.cluster.errors import Invalid
from app.config import gate_enabled
from app.engine_host.store_actions import ClusterStoreLike, Pending, StoreActions
from app.extender_http import extenders_for
from app.results import annotations as result_annotations
from app.results.service import ResultsService
from app.scheduler import queue as q
from app.scheduler.cache import SchedulerCache
from app.scheduler.config import (
    SchedulerConfig,
    build_framework,
    build_profiles,
    defaulted_document,
    parse_config,
    plugins_in_effect,
)
from app.scheduler.cycle import ScheduleOptions, Scheduler
from app.scheduler.filter_timing import PluginObserver
from app.scheduler.framework import ClusterObjects, Handle
from app.scheduler.nodeinfo import PodInfo
from app.scheduler.record import Attempt
from app.scheduler.resources import Resource
from app.scheduler.runtime import PLUGIN_METRICS_SAMPLE_PERCENT, Framework
from app.scheduler.waiting import WaitingPods

log = logging.getLogger("kss.scheduler")

# Kinds whose objects plugins read through ClusterObjects, with the queue event their change raises.
_OBJECT_EVENTS = {
    "PersistentVolume": q.PV_CHANGE,
    "PersistentVolumeClaim": q.PVC_CHANGE,
    "StorageClass": q.STORAGE_CLASS_CHANGE,
    "CSINode": q.CSI_NODE_CHANGE,
    "Namespace": q.NAMESPACE_CHANGE,
    "PriorityClass": None,
    "PodDisruptionBudget": None,
}
# Kinds plugins read by name through ClusterObjects.get_object (the gang plugins): (add event, update event).
_GANG_KINDS = {"PodGroup": ("PodGroup/Add", "PodGroup/Update"), "Workload": ("Workload/Add", "Workload/Update")}
# DRA kinds DynamicResources reads through ClusterObjects, with the event an add or update raises (upstream registers
# no deletions: a claim is deallocated, an update, before it goes).
_DRA_KINDS = {
    "DeviceClass": "DeviceClass/AddOrUpdate",
    "ResourceSlice": "ResourceSlice/AddOrUpdate",
    "ResourceClaim": "ResourceClaim/AddOrUpdate",
}
WATCHED_KINDS = ("Node", "Pod", *_OBJECT_EVENTS, *_GANG_KINDS, *_DRA_KINDS)


# After scheduling, the loop calls ``on_idle`` once it has had nothing to do for this long (``kss serve`` then
# reclaims the garbage its GC policy froze, app.server.gc_policy).
IDLE_HOOK_SECONDS = 60.0
# While the API is answering requests the loop pauses this long after each scheduling cycle. The server is one core
# of Python (GIL): without the pause a busy scheduler takes the GIL back at every system call of the event loop,
# and 50 clients creating pods got ~25 % less throughput and a ~45 % higher p99 (issue #9; 1 ms paid about half
# of that). The scheduler still binds faster than before under that load; with the API idle (watches aside) it
# never pauses.
API_YIELD_SECONDS = 0.002
# ... and no shorter than the cycle's own CPU time, up to this cap: while requests wait, the API gets at least half of
# the GIL. At 5,000 nodes a cycle holds the GIL 3-6 ms, so a fixed 2 ms pause left the API a third of it during a
# burst of creates, and by Little's law (32 in flight) every create waited longer (issue #20, the bursts' p99).
API_YIELD_MAX_SECONDS = 0.02
# The writes of this many attempts may be on their way to the database while the loop goes on (kube-scheduler runs
# every binding cycle in a goroutine of its own, any number at once; a failed write is a failed binding cycle either
# way). One attempt at a time made each pod wait for a commit round trip of its own (issue #20: ~5 ms of the
# ~11 ms per pod of bench/serve_trace.py, the scheduler parked in PendingWrites.wait); with more in flight one
# commit carries many attempts' writes. 4 / 16 / 64 took that trace from 78 s to 58 / 42 / 39 s.
ATTEMPTS_IN_FLIGHT = 32


def api_yield_seconds(cycle_cpu_seconds: float) -> float:
    """The loop's pause after a cycle that took ``cycle_cpu_seconds`` of its thread's CPU, while the API is busy."""
    return min(API_YIELD_MAX_SECONDS, max(API_YIELD_SECONDS, cycle_cpu_seconds))


def load_scheduler_config(settings: Any) -> SchedulerConfig:
    """The starting configuration: ``KSS_SCHEDULER_CONFIG`` / ``--scheduler-config`` file, or the defaults."""
    path = getattr(settings, "scheduler_config", None)
    gates = getattr(settings, "feature_gates", None)
    if path is None:
        return parse_config(None, gates)
    return parse_config(Path(path).read_text(), gates)


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _is_terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _assigned_pod_update(old: PodInfo, new: PodInfo) -> str:
    """The cluster event of a bound pod's update, as ``PodSchedulingPropertiesChange`` tells them apart: a label
    change or requests scaled down wake the plugins that registered those; anything else (the kubelet's status
    writes) only plugins registering every pod update."""
    if old.labels != new.labels:
        return q.POD_UPDATE
    if old.resource_key != new.resource_key and _scaled_down(old.requests, new.requests):
        return q.POD_UPDATE
    return q.POD_UPDATE_OTHER


def _scaled_down(old: Resource, new: Resource) -> bool:
    """``extractPodScaleDown``: some request of the old pod is gone or smaller."""
    if new.milli_cpu < old.milli_cpu or new.memory < old.memory or new.ephemeral_storage < old.ephemeral_storage:
        return True
    return any(new.scalar_resources.get(name, 0) < amount for name, amount in old.scalar_resources.items())


def _scheduling_relevant(pod: dict[str, Any]) -> Any:
    """What of a pending pod matters to scheduling (annotation or status changes do not requeue it, but the claims
    the resourceclaim controller generated for it do: ``UpdatePodGeneratedResourceClaim``)."""
    meta = pod.get("metadata") or {}
    return (meta.get("labels"), pod.get("spec"), (pod.get("status") or {}).get("resourceClaimStatuses"))


@dataclass
class _InFlight:
    """One attempt's writes not yet acknowledged by the store."""

    pending: Pending
    key: str
    uid: str
    scheduled: bool


class SchedulerService:
    """Runs the scheduling loop in a thread; configuration can be swapped while it runs."""

    def __init__(
        self,
        store: ClusterStoreLike,
        *,
        results: ResultsService | None = None,
        config: SchedulerConfig | None = None,
        seed: int | None = None,
        per_node_annotations: bool = True,
        per_node_annotations_max_nodes: int = 0,
        write_annotations: bool = True,
        clock: Callable[[], float] = time.monotonic,
        on_attempt: Callable[[Attempt], None] | None = None,
        on_plugin: PluginObserver | None = None,
        plugin_metrics_sample_percent: int = PLUGIN_METRICS_SAMPLE_PERCENT,
        api_busy: Callable[[], bool] | None = None,
        on_idle: Callable[[], None] | None = None,
        feature_gates: dict[str, bool] | None = None,
    ) -> None:
        self.store = store
        self.results = results
        self.seed = seed
        self.per_node_annotations = per_node_annotations
        self.per_node_annotations_max_nodes = per_node_annotations_max_nodes
        self.write_annotations = write_annotations
        self.clock = clock
        self.on_attempt = on_attempt
        self.on_config_change: Callable[[dict[str, Any]], None] | None = None
        self.on_plugin = on_plugin
        self.plugin_metrics_sample_percent = plugin_metrics_sample_percent
        self.cluster = ClusterObjects()
        self.cache = SchedulerCache()
        self.actions = StoreActions(self)
        self.handles: list[Handle] = []
        self.nominated: dict[str, list[PodInfo]] = {}
        self.frameworks: dict[str, Framework] = {}
        self.preemption_victims: list[str] = []
        self._inbox: deque[tuple[str, str, dict[str, Any]]] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending: dict[str, Any] = {}  # queued pod key -> scheduling-relevant fingerprint
        self._idle = threading.Event()
        # True while API requests (watches aside) are being answered: the loop then yields after each cycle.
        self.api_busy = api_busy
        self.on_idle = on_idle
        self._holds = 0  # while > 0 the loop keeps its cache current but starts no cycle
        self._holds_lock = threading.Lock()
        self._in_flight: deque[_InFlight] = deque()  # writes of recent attempts, oldest first
        self.feature_gates = dict(feature_gates or {})
        # Pods held in Permit survive a configuration swap (the new scheduler takes the same map over); the host
        # keeps what it needs to finish each one's attempt: uid -> (queued pod, its cycle).
        self.waiting_pods = WaitingPods()
        self._waiting: dict[str, tuple[q.QueuedPodInfo, int]] = {}
        self.config = config or parse_config(None, self.feature_gates)
        self.queue = self._new_queue()
        self.scheduler = self._build(self.config)

    # --- configuration --------------------------------------------------------------------------
    def _new_queue(self) -> q.SchedulingQueue:
        return q.queue_for_profiles(
            lambda: self.frameworks,
            self.config,
            clock=self.clock,
            pop_from_backoff=gate_enabled(self.feature_gates, "SchedulerPopFromBackoffQ"),
        )

    def _build(self, config: SchedulerConfig) -> Scheduler:
        self.handles, frameworks = build_profiles(
            config,
            self.cluster,
            self.actions,
            nominated=self.nominated,
            activator=self._activate,
            feature_gates=self.feature_gates,
            plugin_observer=self.on_plugin,
        )
        self.frameworks = frameworks
        for fwk in frameworks.values():
            fwk.plugin_metrics_sample_percent = self.plugin_metrics_sample_percent
            self.queue.register_plugin_events(fwk.events_by_plugin())
        return Scheduler(
            frameworks,
            self.cache.snapshot,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            seed=self.seed,
            cache=self.cache,
            extenders=extenders_for(config.extenders),
            clock=self.clock,
            waiting_pods=self.waiting_pods,
        )

    def apply_config(self, config: SchedulerConfig) -> None:
        """Use ``config`` from the next scheduling cycle on."""
        self._inbox.append(("CONFIG", "", {"config": config}))
        self._wake.set()

    def update_config(self, source: str | dict[str, Any]) -> SchedulerConfig:
        """Validate a KubeSchedulerConfiguration (YAML text or dict) and apply it to the next cycle.

        Raises ``ConfigError`` naming the field, leaving the running configuration unchanged.
        """
        config = self.check_config(source)
        self.apply_config(config)
        self.config = config
        if self.on_config_change is not None:
            # Saved before the caller is answered: an acknowledged configuration survives a restart.
            self.on_config_change(self.config_document())
        return config

    def check_config(self, source: str | dict[str, Any]) -> SchedulerConfig:
        """Parse and validate a KubeSchedulerConfiguration without applying it; ``ConfigError`` names the field."""
        config = parse_config(source, self.feature_gates)
        # Instantiating every profile catches what only the framework can see (e.g. two queue sorts).
        for profile in config.profiles:
            build_framework(profile, Handle(ClusterObjects()))
        return config

    def config_document(self) -> dict[str, Any]:
        """The running configuration as the user gave it (defaults not expanded)."""
        raw = copy.deepcopy(self.config.raw)
        raw.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
        raw.setdefault("kind", "KubeSchedulerConfiguration")
        raw.setdefault("profiles", [{"schedulerName": "default-scheduler"}])
        return raw

    def defaulted_config_document(self) -> dict[str, Any]:
        """The running configuration after kube-scheduler's v1 defaulting (plugins merged, args filled in)."""
        return defaulted_document(self.config)

    def plugins_in_effect(self) -> list[tuple[str, list[tuple[str, list[tuple[str, int | None]]]]]]:
        """Per profile (scheduler name): each extension point's plugins in the order they run, with weights."""
        return [(profile.scheduler_name, plugins_in_effect(profile)) for profile in self.config.profiles]

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Load the current cluster, subscribe to changes, start the loop."""
        # The store's read-only dicts, kept as they are (no copy): the cache, the listers and the queue hold the
        # store's own versions, as kube-scheduler's informers hand it the objects of their shared cache. Nothing on
        # this side may change them; what the engine changes it copies first (tests/engine_host/
        # test_shared_store_objects.py checks every version it was handed after binding, preemption, volumes, DRA
        # and gangs). Copies here were ~29 kB per bound pod (issue #20).
        self.store.add_listener(self._on_change, WATCHED_KINDS, copy=False)
        for kind in WATCHED_KINDS:
            for entry in self.store.select(kind).items:
                self._apply_change("ADDED", kind, entry.obj)
        self._thread = threading.Thread(target=self._run, name="scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.store.remove_listener(self._on_change)
        self._stop.set()
        self._wake.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Start no scheduling cycle inside the block (changes are still taken in, pods still queued).

        A bulk load (import, reset) holds the scheduler so pods are then scheduled in queue order
        (priority, then arrival), not in whatever order the loop happened to catch them: reproducible.
        """
        with self._holds_lock:
            self._holds += 1
        try:
            yield
        finally:
            with self._holds_lock:
                self._holds -= 1
            self._wake.set()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until the inbox is drained and activeQ is empty (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            counts = self.queue.pending_counts()
            if not self._inbox and counts["active"] == 0 and self._idle.is_set():
                return True
            time.sleep(0.01)
        return False

    # --- events ---------------------------------------------------------------------------------
    def _on_change(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        # Runs in the store's committer with its lock held: only append (``obj`` is the store's read-only dict, kept).
        if kind in WATCHED_KINDS:
            self._inbox.append((event_type, kind, obj))
            self._wake.set()

    def _drain_inbox(self) -> None:
        while self._inbox:
            event_type, kind, obj = self._inbox.popleft()
            if event_type == "CONFIG":
                self._swap_config(obj["config"])
                continue
            try:
                self._apply_change(event_type, kind, obj)
            except Exception:  # one bad object must not stop the scheduler
                log.exception("applying %s %s failed", event_type, kind)

    def _swap_config(self, config: SchedulerConfig) -> None:
        self.config = config
        self.scheduler = self._build(config)
        # Nodes already in the cache stay; the new frameworks read the same snapshot.
        for fwk in self.frameworks.values():
            fwk.handle.snapshot = self.cache.snapshot
        self.queue.initial_backoff = config.pod_initial_backoff_seconds
        self.queue.max_backoff = config.pod_max_backoff_seconds

    def _apply_change(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        if kind == "Node":
            if event_type == "DELETED":
                self.cache.remove_node(name)
                self.queue.move_all_to_active_or_backoff(q.NODE_DELETE)
            elif event_type == "ADDED":
                self.cache.add_node(obj)
                self.queue.move_all_to_active_or_backoff(q.NODE_ADD)
            else:
                self.cache.update_node(obj)
                self.queue.move_all_to_active_or_backoff(q.NODE_UPDATE)
            return
        if kind == "Pod":
            self._apply_pod(event_type, obj)
            return
        if kind in _GANG_KINDS:
            self._apply_gang_object(event_type, kind, obj)
            return
        if kind in _DRA_KINDS:
            self._apply_dra_object(event_type, kind, obj)
            return
        self._apply_object(event_type, kind, obj)

    def _apply_dra_object(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        """A DeviceClass, ResourceSlice or ResourceClaim: kept for DynamicResources; an add or update wakes the pods
        it rejected."""
        if event_type == "DELETED":
            self.cluster.delete_object(kind, obj)
            return
        self.cluster.put_object(kind, obj)
        self.queue.move_all_to_active_or_backoff(_DRA_KINDS[kind])

    def _apply_gang_object(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        """A PodGroup or Workload: kept for the gang plugins, and its change wakes the pods they rejected."""
        if event_type == "DELETED":
            self.cluster.delete_object(kind, obj)
            return
        self.cluster.put_object(kind, obj)
        add, update = _GANG_KINDS[kind]
        self.queue.move_all_to_active_or_backoff(add if event_type == "ADDED" else update)

    def _apply_object(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        key = f"{meta.get('namespace') or 'default'}/{name}"
        deleted = event_type == "DELETED"
        co = self.cluster
        if kind == "PersistentVolume":
            _put(co.pvs, name, obj, deleted)
        elif kind == "PersistentVolumeClaim":
            _put(co.pvcs, key, obj, deleted)
        elif kind == "StorageClass":
            _put(co.storage_classes, name, obj, deleted)
        elif kind == "CSINode":
            _put(co.csi_nodes, name, obj, deleted)
        elif kind == "Namespace":
            _put(co.namespaces, name, obj, deleted)
        elif kind == "PriorityClass":
            _put(co.priority_classes, name, obj, deleted)
        elif kind == "PodDisruptionBudget":
            co.pdbs = [p for p in co.pdbs if _obj_key(p) != key]
            if not deleted:
                co.pdbs.append(obj)
        event = _OBJECT_EVENTS.get(kind)
        if event is not None and not deleted:
            self.queue.move_all_to_active_or_backoff(event)

    def _apply_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        pi = PodInfo(pod)
        key = pi.key
        if event_type == "DELETED" or _is_terminal(pod):
            self.cluster.delete_pod(pod)
        else:
            self.cluster.put_pod(pod)
        if event_type == "DELETED":
            if self.scheduler.reject_waiting_pod(pi.uid):
                self._resolve_waiting()
            self.queue.delete(key)
            self._pending.pop(key, None)
            if self.cache.remove_pod(pi.uid) is not None:
                self.queue.move_all_to_active_or_backoff(q.POD_DELETE)
            for h in self.handles:
                h.delete_nominated_pod(pi)
            return
        if pi.node_name:
            if key in self._pending:
                self.queue.delete(key)
                self._pending.pop(key, None)
            if _is_terminal(pod):
                if self.cache.remove_pod(pi.uid) is not None:
                    self.queue.move_all_to_active_or_backoff(q.POD_DELETE)
                return
            known = self.cache.get_pod(pi.uid)
            self.cache.add_pod(pi)
            for h in self.handles:
                h.delete_nominated_pod(pi)
            self.queue.move_all_to_active_or_backoff(q.POD_ADD if known is None else _assigned_pod_update(known, pi))
            return
        if _is_terminal(pod) or (pi.spec.get("schedulerName") or "default-scheduler") not in self.frameworks:
            return
        fingerprint = _scheduling_relevant(pod)
        if key not in self._pending:
            self._pending[key] = fingerprint
            self.queue.add(pi)
            if gate_enabled(self.feature_gates, "GangScheduling"):
                # As kube-scheduler with the gate: a new pending pod may complete a gang others wait for.
                self.queue.move_all_to_active_or_backoff(q.UNSCHEDULED_POD_ADD)
        elif self._pending[key] != fingerprint:
            self._pending[key] = fingerprint
            self.queue.update(pi)

    # --- the loop -------------------------------------------------------------------------------
    def _run(self) -> None:
        last_backoff_flush = 0.0
        last_unschedulable_flush = 0.0
        busy_since_idle_hook = False
        idle_since = time.monotonic()
        while not self._stop.is_set():
            self._drain_inbox()
            if self._holds:
                self._settle(keep=0)
                self._idle.set()
                self._wake.wait(timeout=0.05)
                self._wake.clear()
                continue
            now = time.monotonic()
            if now - last_backoff_flush >= 1.0:
                self.queue.flush_backoff_completed()
                last_backoff_flush = now
            if now - last_unschedulable_flush >= 30.0:
                self.queue.flush_unschedulable_left_over()
                last_unschedulable_flush = now
            deadline = self.scheduler.next_permit_deadline()
            if deadline is not None and self.clock() >= deadline:
                self._idle.clear()  # not idle while the outcome is written (wait_idle callers expect to see it)
                self._resolve_waiting()
                self._settle(keep=0)
            qpi = self.queue.pop(timeout=0) if not self._inbox else None
            if qpi is None:
                self._settle(keep=0)
                if self._inbox:
                    continue
                if not self._idle.is_set():
                    idle_since = time.monotonic()
                elif busy_since_idle_hook and time.monotonic() - idle_since >= IDLE_HOOK_SECONDS:
                    if self.on_idle is not None:
                        self.on_idle()
                    busy_since_idle_hook = False
                self._idle.set()
                self._wake.wait(timeout=0.05)
                self._wake.clear()
                continue
            self._idle.clear()
            busy_since_idle_hook = True
            cycle_started = time.thread_time()
            try:
                self._schedule(qpi)
            except Exception:
                log.exception("scheduling %s failed", qpi.key)
                qpi.unschedulable_plugins = set()
                self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle)
            if self.api_busy is not None and self.api_busy():
                time.sleep(api_yield_seconds(time.thread_time() - cycle_started))

    def _schedule(self, qpi: q.QueuedPodInfo) -> None:
        pod = qpi.pod_info
        if any(f.key == qpi.key for f in self._in_flight):
            self._settle(keep=0)  # this pod's last outcome must be visible before it is tried again
        current = self.store.get("Pod", pod.namespace, pod.name)
        if current is None or (current.get("spec") or {}).get("nodeName"):
            self.queue.done(qpi.key)
            self._pending.pop(qpi.key, None)
            return
        pod = PodInfo(current)
        qpi.pod_info = pod
        cycle = self.queue.scheduling_cycle
        attempt_no = (
            self.results.next_attempt_number(pod.namespace, pod.name) if self.results is not None else qpi.attempts
        )
        queued_for = max(0.0, self.clock() - qpi.timestamp)
        with self.store.deferred() as pending:
            att = self.scheduler.schedule_one(pod, attempt_no, ScheduleOptions(record=True, tie_break="random"))
            att.queued_for = queued_for
            for kind, namespace, name, problem in att.malformed_objects:  # issue #35: a Warning on the object itself
                if (obj := self.store.get(kind, namespace, name)) is not None:
                    self.record_event(obj, "MalformedObject", problem, event_type="Warning")
            if att.result == "waiting":
                # Held in Permit: still in flight in the queue, its attempt finished when the wait ends.
                self._waiting[pod.uid] = (qpi, cycle)
            else:
                self._conclude(qpi, pod, att, current, cycle)
        self._in_flight.append(_InFlight(pending, qpi.key, pod.uid, att.result == "scheduled"))
        # Earlier attempts' writes were made durable while this cycle ran; wait only when too many are on their way.
        self._settle(keep=ATTEMPTS_IN_FLIGHT)
        if att.result != "waiting":
            self._submit(pod, att)
        if len(self.waiting_pods):
            self._resolve_waiting()

    def _conclude(self, qpi: q.QueuedPodInfo, pod: PodInfo, att: Attempt, current: dict[str, Any], cycle: int) -> None:
        """Write an attempt's outcome: the binding and Scheduled event, or PodScheduled=False and back to the queue."""
        binding = self.actions.bindings.pop(pod.uid, None)
        if att.result == "scheduled" and binding is not None:
            self._bind(pod, att, binding, current)
        if att.result == "scheduled":
            self.queue.done(qpi.key)
            self._pending.pop(qpi.key, None)
            self.record_event(
                pod.pod, "Scheduled", f"Successfully assigned {pod.key} to {att.bound_to}", event_type="Normal"
            )
            return
        if att.rejected_by:
            qpi.unschedulable_plugins = {att.rejected_by}
        elif att.result == "unschedulable":
            qpi.unschedulable_plugins = {text.split(":", 1)[0] for text in att.filter_fail.values()}
            if not qpi.unschedulable_plugins and att.prefilter_status != "success":
                qpi.unschedulable_plugins = {p for p, v in att.prefilter.items() if v not in ("success", "skip")}
        else:
            qpi.unschedulable_plugins = set()
        self._mark_unschedulable(pod, att)
        self.queue.add_unschedulable_if_not_present(qpi, cycle)

    def _submit(self, pod: PodInfo, att: Attempt) -> None:
        if self.results is not None:
            self.results.submit(
                att, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid, queued_seconds=att.queued_for
            )
        if self.on_attempt is not None:
            self.on_attempt(att)

    def _resolve_waiting(self) -> None:
        """Finish the attempts of pods whose wait in Permit ended (allowed: bind; rejected or timed out: back to the
        queue, the reservation released as a deleted assigned pod's)."""
        settled = self.scheduler.resolve_waiting()
        if not settled:
            return
        with self.store.deferred() as pending:
            for done in settled:
                att, pod = done.attempt, done.pod
                entry = self._waiting.pop(pod.uid, None)
                current = self.store.get("Pod", pod.namespace, pod.name)
                if entry is None or current is None:
                    self.actions.bindings.pop(pod.uid, None)
                    continue  # the pod was deleted while it waited
                qpi, cycle = entry
                self._conclude(qpi, pod, att, current, cycle)
                if att.result != "scheduled":
                    # The released reservation is an assigned pod's deletion to the others; after the pod is back
                    # in the queue, so the event does not send it to backoffQ itself (handleBindingCycleError).
                    self.queue.move_all_to_active_or_backoff(q.POD_DELETE, skip=frozenset({pod.key}))
        self._in_flight.append(_InFlight(pending, "", "", False))
        for done in settled:
            self._submit(done.pod, done.attempt)

    def _activate(self, pods: list[PodInfo]) -> None:
        """``handle.Activate``: pending pods to activeQ (called from a plugin, on the scheduler thread)."""
        self.queue.activate([p.key for p in pods])

    def waiting(self) -> list[dict[str, Any]]:
        """Pods held in Permit now (pod, node, pending plugins, waited and remaining seconds)."""
        return self.scheduler.waiting()

    def _bind(self, pod: PodInfo, att: Attempt, binding: tuple[str, str, str], current: dict[str, Any]) -> None:
        """Write the binding with the result annotations; a refusal turns the attempt into a binding error."""
        namespace, name, node_name = binding
        values = self._annotations(att, current)
        try:
            try:
                self.store.bind_pod(namespace, name, node_name, annotations=values, copy=False)
            except Invalid:
                if values is None:
                    raise
                log.exception("annotating %s failed; binding without the result annotations", pod.key)
                self.store.bind_pod(namespace, name, node_name, copy=False)
        except Exception as exc:  # the pod was deleted or bound meanwhile: kube-scheduler's failed binding cycle
            message = f"binding rejected: {exc}"
            self.cache.remove_pod(pod.uid)  # forget the assumed pod
            self.queue.move_all_to_active_or_backoff(q.POD_DELETE)
            att.bind = {plugin: message for plugin in att.bind} or {"DefaultBinder": message}
            att.result = "error"
            att.message = message
            att.bound_to = None

    def _settle(self, *, keep: int) -> None:
        """Wait for the writes of all but the newest ``keep`` attempts; undo what a failed commit dropped."""
        while len(self._in_flight) > keep:
            flight = self._in_flight.popleft()
            try:
                flight.pending.wait()
            except Exception:
                log.exception("the outcome of %s was not stored", flight.key)
                if flight.scheduled:
                    # The binding was dropped with its batch: forget the assumed pod and try the pod again.
                    self.cache.remove_pod(flight.uid)
                    self._pending.pop(flight.key, None)
                    namespace, _, name = flight.key.partition("/")
                    current = self.store.get("Pod", namespace, name)
                    if current is not None:
                        self._apply_pod("ADDED", current)

    def _annotations(self, att: Attempt, current: dict[str, Any]) -> dict[str, str] | None:
        """The result annotations of ``att`` for the pod as it was read (``current``), or None when off."""
        if not self.write_annotations:
            return None
        existing = (current.get("metadata") or {}).get("annotations") or {}
        per_node = self.per_node_annotations and (
            self.per_node_annotations_max_nodes <= 0 or att.num_nodes <= self.per_node_annotations_max_nodes
        )
        return result_annotations.with_history(result_annotations.attempt_annotations(att, per_node=per_node), existing)

    def _mark_unschedulable(self, pod: PodInfo, att: Attempt) -> None:
        """PodScheduled=False with kube-scheduler's message, the nomination, the result annotations, and a
        FailedScheduling event."""
        reason = "Unschedulable" if att.result == "unschedulable" else "SchedulerError"
        current = self.store.get("Pod", pod.namespace, pod.name)
        if current is None or (current.get("spec") or {}).get("nodeName"):
            return
        status: dict[str, Any] = dict(current.get("status") or {})
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": att.message,
            "lastProbeTime": None,
            "lastTransitionTime": _now_rfc3339(),
        }
        others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [*others, condition]
        if att.nominated_node:
            status["nominatedNodeName"] = att.nominated_node
        values = self._annotations(att, current)
        try:
            try:
                self.store.update_pod_status(pod.namespace, pod.name, status, annotations=values)
            except Invalid:
                if values is None:
                    raise
                log.exception("annotating %s failed; updating its status without the result annotations", pod.key)
                self.store.update_pod_status(pod.namespace, pod.name, status)
        except Exception:
            log.exception("updating status of %s failed", pod.key)
        self.record_event(pod.pod, "FailedScheduling", att.message, event_type="Warning")

    def record_event(self, obj: dict[str, Any], reason: str, message: str, *, event_type: str) -> None:
        involved = obj if obj.get("kind") else {**obj, "kind": "Pod", "apiVersion": "v1"}
        try:
            self.store.create_event(involved, reason, message, type=event_type, component="default-scheduler",
                                    action="Scheduling" if reason != "Preempted" else "Preempting")  # fmt: skip
        except Exception:
            log.exception("recording event %s failed", reason)


def _put(table: dict[str, dict[str, Any]], key: str, obj: dict[str, Any], deleted: bool) -> None:
    if deleted:
        table.pop(key, None)
    else:
        table[key] = obj


def _obj_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
