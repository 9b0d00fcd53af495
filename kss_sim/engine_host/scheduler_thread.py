"""The scheduling loop's host inside ``kss serve``: the loop (app/scheduler/loop.py) over the virtual cluster.

A background thread pops pods from the loop's scheduling queue and has the loop run and conclude each attempt.
Store changes reach it through a listener that only appends to an inbox; the thread hands the inbox to the loop's
event handlers between cycles, so API requests never wait for a scheduling cycle. Outcomes go back through the
store (``StoreActions``, the loop's writer) like kube-scheduler's go through kube-apiserver: the binding
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
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kss_sim.cluster.errors import NotFound
from kss_sim.config import Settings
from kss_sim.engine_host.external_bindings import ExternalBindings
from kss_sim.engine_host.recorder import AttemptRecorder
from kss_sim.engine_host.store_actions import ClusterStoreLike, Pending, StoreActions
from kss_sim.extender_http import extenders_for
from kss_sim.kube.versions import KubeVersion
from kss_sim.kube.versions import kube_version as default_kube_version
from kss_sim.scheduler import queue as q
from kss_sim.scheduler.cycle import ScheduleOptions
from kss_sim.scheduler.filter_timing import PluginObserver
from kss_sim.scheduler.kube_scheduler_configuration import (
    SchedulerConfig,
    defaulted_document,
    given_document,
    parse_config,
)
from kss_sim.scheduler.loop import (
    BACKOFF_FLUSH_SECONDS,
    UNSCHEDULABLE_FLUSH_SECONDS,
    LoopHost,
    SchedulingLoop,
)
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import reload_plugin_modules
from kss_sim.scheduler.profiles import checked_config, plugins_by_profile
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.runtime import PLUGIN_METRICS_SAMPLE_PERCENT
from kss_sim.scheduler.watchdog import WATCHDOG, PluginTimeoutReport

log = logging.getLogger("kss.scheduler")
# Plugin timeouts kept for the UI's banner (the latest; the metric counts them all).
PLUGIN_TIMEOUTS_KEPT = 5

# The kinds the loop reads (its informers): nodes, pods, and the objects plugins read through ClusterObjects.
WATCHED_KINDS = (
    "Node",
    "Pod",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "Namespace",
    "PriorityClass",
    "PodDisruptionBudget",
    "PodGroup",
    "Workload",
    "PodGroup.v1alpha2",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
)


# After scheduling, the loop calls ``on_idle`` once it has had nothing to do for this long (``kss serve`` then
# reclaims the garbage its GC policy froze, kss_sim.server.gc_policy).
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


def load_scheduler_config(settings: Settings) -> SchedulerConfig:
    """The starting configuration: ``KSS_SCHEDULER_CONFIG`` / ``--scheduler-config`` file, or the defaults."""
    path = getattr(settings, "scheduler_config", None)
    gates = settings.effective_feature_gates
    if path is None:
        return parse_config(None, gates, settings.version)
    return parse_config(Path(path).read_text(), gates, settings.version)


def _is_terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _deletion_started(before: dict[str, Any] | None, pod: dict[str, Any]) -> bool:
    """The update that set the pod's deletionTimestamp (a finalizer holds the pod)."""
    was = (before or {}).get("metadata") or {}
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and not was.get("deletionTimestamp")


def _scheduling_relevant(pod: dict[str, Any]) -> Any:
    """What of a pending pod matters to scheduling (annotation or status changes do not requeue it, but the claims
    the resourceclaim controller generated for it do: ``UpdatePodGeneratedResourceClaim``)."""
    meta = pod.get("metadata") or {}
    return (meta.get("labels"), pod.get("spec"), (pod.get("status") or {}).get("resourceClaimStatuses"))


class BindingRefused(Exception):
    """A batch's bindings the store refused when it made them, by pod key (namespace/name): raised by ``wait()`` of a
    store that answers bindings only with the batch (``refuses_bindings_late``: the scheduler process's mirror)."""

    def __init__(self, refusals: dict[str, str]) -> None:
        super().__init__("; ".join(refusals.values()))
        self.refusals = refusals


@dataclass
class _Concluded:
    """A concluded attempt kept until its batch is acknowledged (a store that refuses bindings late): recorded then,
    as a failed binding cycle if its binding was refused."""

    qpi: q.QueuedPodInfo
    pod: PodInfo
    att: Attempt
    cycle: int


@dataclass
class _InFlight:
    """One attempt's writes not yet acknowledged by the store."""

    pending: Pending
    key: str
    uid: str
    scheduled: bool
    concluded: _Concluded | None = None


class SchedulerService(LoopHost):
    """Runs the scheduling loop in a thread; configuration can be swapped while it runs."""

    def __init__(
        self,
        store: ClusterStoreLike,
        *,
        results: AttemptRecorder | None = None,
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
        plugin_timeout: float | None = None,
        on_plugin_timeout: Callable[[PluginTimeoutReport], None] | None = None,
        kube_version: KubeVersion | None = None,
        shadow: bool = False,
        on_shadow: Callable[[bool], None] | None = None,
    ) -> None:
        """``shadow``: judge every binding another scheduler makes with this loop's own scheduler (placing nothing);
        ``on_shadow`` is told whether each judgement agreed."""
        self.store = store
        self.results = results
        self.clock = clock
        self.on_attempt = on_attempt
        self.on_config_change: Callable[[dict[str, Any]], None] | None = None
        self.feature_gates = dict(feature_gates or {})
        self.kube_version = kube_version or (config.kube_version if config is not None else default_kube_version())
        self._inbox: deque[tuple[str, str, dict[str, Any]]] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending: dict[str, Any] = {}  # queued pod key -> scheduling-relevant fingerprint
        self._idle = threading.Event()
        # True while API requests (watches aside) are being answered: the loop then yields after each cycle.
        self.api_busy = api_busy
        self.on_idle = on_idle
        # The process's plugin watchdog (KSS_PLUGIN_TIMEOUT): its timeout, when given, and its reports of this
        # loop's plugins, kept for the UI's banner and passed to ``on_plugin_timeout`` (the metric).
        self.plugin_timeout = plugin_timeout
        self.on_plugin_timeout = on_plugin_timeout
        self.plugin_timeouts: deque[PluginTimeoutReport] = deque(maxlen=PLUGIN_TIMEOUTS_KEPT)
        self._holds = 0  # while > 0 the loop keeps its cache current but starts no cycle
        self._holds_lock = threading.Lock()
        self._in_flight: deque[_InFlight] = deque()  # writes of recent attempts, oldest first
        # Callers of :meth:`record_in_flight` waiting for the loop to record the attempts on their way.
        self._record_requests: deque[threading.Event] = deque()
        # A store that answers a batch's bindings only when it is acknowledged (the scheduler process's mirror): the
        # attempts are recorded once it is, a refused binding concluded as a failed binding cycle then.
        self._refuses_late = bool(getattr(store, "refuses_bindings_late", False))
        # The configuration acknowledged to the API (the loop takes it up between cycles).
        self.config = config or parse_config(None, self.feature_gates, self.kube_version)
        self.actions = StoreActions(
            store,
            write_annotations=write_annotations,
            per_node_annotations=per_node_annotations,
            per_node_annotations_max_nodes=per_node_annotations_max_nodes,
        )
        self.loop = SchedulingLoop(
            self.config,
            self.actions,
            clock=clock,
            options=ScheduleOptions(record=True, tie_break="random"),
            extenders=lambda config: extenders_for(config.extenders),
            feature_gates=self.feature_gates,
            seed=seed,
            # The nomination goes to the pod's status with PodScheduled=False (StoreActions.unschedulable); the
            # nominator has it from DefaultPreemption's PostFilter.
            nominate_on_failure=False,
            plugin_observer=on_plugin,
            plugin_metrics_sample_percent=plugin_metrics_sample_percent,
        )
        self.external = ExternalBindings(
            store, results, judge=self.loop.judge if shadow else None, on_judged=on_shadow, clock=clock
        )
        self._observing = False  # started only to record other schedulers' bindings: no cycle of its own
        # Observing without the shadow needs no cache: only the pending pods, to see which become bound.
        self._pods_only = False
        self._unbound: dict[tuple[str, str], dict[str, Any]] = {}

    # --- configuration --------------------------------------------------------------------------
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
        return checked_config(source, self.feature_gates, self.kube_version)

    def reload_plugin_modules(self) -> None:
        """The plugin modules again, in this process (the loop's and the check's registry)."""
        reload_plugin_modules()

    def results_cleared(self) -> None:
        """Nothing to do: the results service this thread shares numbers the attempts."""

    def config_document(self) -> dict[str, Any]:
        """The running configuration as the user gave it (defaults not expanded)."""
        return given_document(self.config)

    def defaulted_config_document(self) -> dict[str, Any]:
        """The running configuration after kube-scheduler's v1 defaulting (plugins merged, args filled in)."""
        return defaulted_document(self.config)

    def plugins_in_effect(self) -> list[tuple[str, list[tuple[str, list[tuple[str, int | None]]]]]]:
        """Per profile (scheduler name): each extension point's plugins in the order they run, with weights."""
        return plugins_by_profile(self.config)

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Load the current cluster, subscribe to changes, start the loop."""
        # The store's read-only dicts, kept as they are (no copy): the cache, the listers and the queue hold the
        # store's own versions, as kube-scheduler's informers hand it the objects of their shared cache. Nothing on
        # this side may change them; what the engine changes it copies first (tests/engine_host/
        # test_shared_store_objects.py checks every version it was handed after binding, preemption, volumes, DRA
        # and gangs). Copies here were ~29 kB per bound pod (issue #20).
        kinds = ("Pod",) if self._pods_only else WATCHED_KINDS
        self.store.add_listener(self._on_change, kinds, copy=False)
        for kind in kinds:
            for entry in self.store.select(kind).items:
                self._apply_change("ADDED", kind, entry.obj)
        if self.plugin_timeout is not None:
            WATCHDOG.timeout = self.plugin_timeout
        WATCHDOG.add_listener(self._plugin_timed_out)
        self._thread = threading.Thread(target=self._run, name="scheduler", daemon=True)
        self._thread.start()

    def observe(self) -> None:
        """Start without scheduling (``KSS_SCHEDULER_ENABLED=false``): the loop's cache kept current only to record
        the bindings other schedulers make, and to judge them (``shadow``)."""
        self._observing = True
        # Without the shadow nothing reads the cache: the kubelet's status writes of 5,000 pods would otherwise keep
        # this thread (and the GIL) busy updating it while the API answers.
        self._pods_only = self.external.judge is None
        self.start()

    def _plugin_timed_out(self, report: PluginTimeoutReport) -> None:
        """The watchdog's report of a plugin call past its timeout (from its thread): kept if it is this loop's."""
        thread = self._thread
        if thread is None or report.thread_id != thread.ident:
            return
        self.plugin_timeouts.appendleft(report)
        if self.on_plugin_timeout is not None:
            self.on_plugin_timeout(report)

    def stop(self) -> None:
        WATCHDOG.remove_listener(self._plugin_timed_out)
        self.store.remove_listener(self._on_change)
        self._stop.set()
        self._wake.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.external.record_due(everything=True)

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

    def record_in_flight(self, timeout: float = 10.0) -> bool:
        """Block until every attempt whose writes were on their way when called is recorded (a store that answers
        bindings late, the scheduler process's mirror, has the loop record them only once acknowledged): a read of
        the results after a binding the API shows finds its attempt. False when the loop did not get to it."""
        if self._thread is None or not self._thread.is_alive():
            return True
        done = threading.Event()
        self._record_requests.append(done)
        self._wake.set()
        return done.wait(timeout)

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
                self.config = obj["config"]
                self.loop.swap_config(obj["config"])
                continue
            try:
                self._apply_change(event_type, kind, obj)
            except Exception:  # one bad object must not stop the scheduler
                log.exception("applying %s %s failed", event_type, kind)

    def _apply_change(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        if self._pods_only:
            self._note_binding(event_type, obj)
        elif kind == "Pod":
            self._apply_pod(event_type, obj)
        else:
            self.loop.handle(event_type, kind, obj)

    def _apply_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        """A pod's change as kube-scheduler's informers see it: a pending pod of ours into (or out of) the queue
        when what matters to scheduling changed; a bound one into the cache; a deleted or finished one out."""
        loop = self.loop
        pi = PodInfo(pod)
        key = pi.key
        before = loop.cluster.pods.get(key)
        if (
            event_type == "MODIFIED"
            and pi.node_name
            and before is not None
            and not (before.get("spec") or {}).get("nodeName")
            and loop.cache.get_pod(pi.uid) is None
        ):
            # Bound, and not by this loop (it assumes what it binds): another scheduler's binding, judged on the
            # cache as it was just before it.
            self.external.bound(before, pod)
        elif self.external.awaiting:
            self.external.updated(pod, deleted=event_type == "DELETED")
        if event_type == "DELETED" or _is_terminal(pod):
            loop.cluster.delete_pod(pod)
        else:
            loop.cluster.put_pod(pod)
        if event_type == "DELETED":
            if loop.reject_waiting(pi):
                self._resolve_waiting()
            self._pending.pop(key, None)
            loop.delete_unscheduled_pod(pi)
            loop.delete_assigned_pod(pi.uid)
            return
        if pi.node_name:
            if key in self._pending:
                loop.queue.delete(key)
                self._pending.pop(key, None)
            if _is_terminal(pod):
                loop.delete_assigned_pod(pi.uid)
                return
            loop.add_assigned_pod(pi)
            return
        if _is_terminal(pod) or self._observing:
            return
        if _deletion_started(before, pod) and loop.cache.is_assumed(pi.uid):
            # updatePodInSchedulingQueue: an assumed pod (in Permit, PreBind or Bind) whose deletion a finalizer
            # holds: its node is freed now, not when its binding fails.
            if loop.assumed_pod_deleted(pi):
                self._resolve_waiting()
            return
        fingerprint = _scheduling_relevant(pod)
        if key not in self._pending:
            if loop.add_unscheduled_pod(pi):
                self._pending[key] = fingerprint
        elif self._pending[key] != fingerprint:
            self._pending[key] = fingerprint
            loop.update_unscheduled_pod(pi)
        if before is not None:
            loop.nomination_changed(PodInfo(before), pi)

    def _note_binding(self, event_type: str, pod: dict[str, Any]) -> None:
        """Observing without the shadow: a pending pod that becomes bound is another scheduler's binding."""
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        bound = (pod.get("spec") or {}).get("nodeName")
        before = self._unbound.pop(key, None) if bound or event_type == "DELETED" else None
        if event_type != "DELETED" and not bound:
            self._unbound[key] = pod
        if event_type == "MODIFIED" and before is not None:
            self.external.bound(before, pod)
        elif self.external.awaiting:
            self.external.updated(pod, deleted=event_type == "DELETED")

    # --- the loop -------------------------------------------------------------------------------
    def _run(self) -> None:
        last_backoff_flush = 0.0
        last_unschedulable_flush = 0.0
        busy_since_idle_hook = False
        idle_since = time.monotonic()
        while not self._stop.is_set():
            if self._record_requests:
                self._settle(keep=0)
                while self._record_requests:
                    self._record_requests.popleft().set()
            self._drain_inbox()
            if self.external.awaiting:
                self.external.record_due()
            if self._holds or self._observing:
                self._settle(keep=0)
                self._idle.set()
                self._wake.wait(timeout=0.05)
                self._wake.clear()
                continue
            now = time.monotonic()
            if now - last_backoff_flush >= BACKOFF_FLUSH_SECONDS:
                self.loop.flush_backoff()
                last_backoff_flush = now
            if now - last_unschedulable_flush >= UNSCHEDULABLE_FLUSH_SECONDS:
                self.loop.flush_unschedulable()
                last_unschedulable_flush = now
            deadline = self.loop.next_permit_deadline()
            if deadline is not None and self.clock() >= deadline:
                self._idle.clear()  # not idle while the outcome is written (wait_idle callers expect to see it)
                self._resolve_waiting()
                self._settle(keep=0)
            qpi = self.loop.pop() if not self._inbox else None
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
                self.loop.attempt_failed(qpi)
            if self.api_busy is not None and self.api_busy():
                time.sleep(api_yield_seconds(time.thread_time() - cycle_started))

    def _schedule(self, qpi: q.QueuedPodInfo) -> None:
        """One popped pod through the loop, its writes staged in one deferred batch not waited for here."""
        if self.loop.pod_group_of(qpi.pod_info):
            self._schedule_pod_group(qpi)
            return
        current = self._to_schedule(qpi)
        if current is None:
            return
        pod, attempt_no = current
        cycle = self.loop.queue.scheduling_cycle
        with self.store.deferred() as pending:
            att = self.loop.schedule(qpi, pod, attempt_no)
        if att.result == "scheduled":
            self._pending.pop(qpi.key, None)
        late = self._refuses_late and att.result != "waiting"
        concluded = _Concluded(qpi, pod, att, cycle) if late else None
        self._in_flight.append(_InFlight(pending, qpi.key, pod.uid, att.result == "scheduled", concluded))
        # Earlier attempts' writes were made durable while this cycle ran; wait only when too many are on their way.
        self._settle(keep=ATTEMPTS_IN_FLIGHT)
        if att.result != "waiting" and not late:
            self._submit(pod, att)
        if len(self.loop.waiting_pods):
            self._resolve_waiting()

    def _to_schedule(self, qpi: q.QueuedPodInfo) -> tuple[PodInfo, int] | None:
        """The popped pod as the store has it now and its attempt number; None (and done with it) when it is gone,
        bound or being deleted (``skipPodSchedule``)."""
        pod = qpi.pod_info
        if any(f.key == qpi.key for f in self._in_flight):
            self._settle(keep=0)  # this pod's last outcome must be visible before it is tried again
        try:
            # The store's read-only version, as the listener hands it (nothing on this side changes it): no copy.
            current: dict[str, Any] | None = self.store.read("Pod", pod.namespace, pod.name).obj
        except NotFound:
            current = None
        if current is None or (current.get("spec") or {}).get("nodeName"):
            self.loop.skip(qpi)
            self._pending.pop(qpi.key, None)
            return None
        if (current.get("metadata") or {}).get("deletionTimestamp"):
            # skipPodSchedule: a pod being deleted (finalizers hold it) is not scheduled; it is not tried again.
            self.actions.record_event(
                current, "FailedScheduling", f"skip schedule deleting pod: {pod.key}", event_type="Warning"
            )
            self.loop.skip(qpi)
            self._pending.pop(qpi.key, None)
            return None
        if current is not pod.pod:
            pod = PodInfo(current)
        # else unchanged since it was queued: its PodInfo, with what PreEnqueue and earlier attempts derived, is kept
        attempt_no = (
            self.results.next_attempt_number(pod.namespace, pod.name) if self.results is not None else qpi.attempts
        )
        return pod, attempt_no

    def _schedule_pod_group(self, qpi: q.QueuedPodInfo) -> None:
        """A popped pod of a v1.36 PodGroup: its group's queued pods in one PodGroup cycle, their writes (and the
        group's condition) in one deferred batch."""
        members: list[tuple[q.QueuedPodInfo, PodInfo, int]] = []
        for member in self.loop.pop_pod_group(qpi):
            current = self._to_schedule(member)
            if current is not None:
                members.append((member, *current))
        if not members:
            return
        cycle = self.loop.queue.scheduling_cycle
        with self.store.deferred() as pending:
            attempts = self.loop.schedule_pod_group(members)
        late = self._refuses_late
        for (member, pod, _), att in zip(members, attempts, strict=True):
            if att.result == "scheduled":
                self._pending.pop(member.key, None)
            concluded = _Concluded(member, pod, att, cycle) if late and att.result != "waiting" else None
            self._in_flight.append(_InFlight(pending, member.key, pod.uid, att.result == "scheduled", concluded))
        self._settle(keep=ATTEMPTS_IN_FLIGHT)
        for (_, pod, _), att in zip(members, attempts, strict=True):
            if att.result != "waiting" and not late:
                self._submit(pod, att)
        if len(self.loop.waiting_pods):
            self._resolve_waiting()

    def _submit(self, pod: PodInfo, att: Attempt) -> None:
        if self.results is not None:
            self.results.submit(
                att, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid, queued_seconds=att.queued_for
            )
        if self.on_attempt is not None:
            self.on_attempt(att)

    def _resolve_waiting(self) -> None:
        """Finish the attempts of pods whose wait in Permit ended, their writes in one deferred batch."""
        settled = self.loop.settle_waiting()
        if not settled:
            return
        # A store that refuses bindings late: each concluded attempt kept until its batch is acknowledged, as an
        # attempt concluded in its own cycle is (``_schedule``), so a refused binding is a failed binding cycle.
        held = {done.pod.uid: self.loop.held(done.pod.uid) for done in settled} if self._refuses_late else {}
        with self.store.deferred() as pending:
            concluded = self.loop.conclude_waiting(settled)
        kept: set[str] = set()
        for done in concluded:
            if done.attempt.result == "scheduled":
                self._pending.pop(done.pod.key, None)
            entry = held.get(done.pod.uid)
            if entry is not None:
                qpi, cycle = entry
                kept.add(done.pod.uid)
                self._in_flight.append(
                    _InFlight(pending, qpi.key, done.pod.uid, False, _Concluded(qpi, done.pod, done.attempt, cycle))
                )
        if not kept:
            self._in_flight.append(_InFlight(pending, "", "", False))
        for done in settled:
            if done.pod.uid not in kept:
                self._submit(done.pod, done.attempt)

    def waiting(self) -> list[dict[str, Any]]:
        """Pods held in Permit now (pod, node, pending plugins, waited and remaining seconds)."""
        return self.loop.waiting()

    def _settle(self, *, keep: int) -> None:
        """Wait for the writes of all but the newest ``keep`` attempts; undo what a failed commit dropped."""
        in_flight = self._in_flight
        # Attempts kept until acknowledged are recorded as soon as they are (a read of the results after the
        # binding shows finds its attempt, as with the thread host), not only once ``keep`` are on their way.
        while len(in_flight) > keep or (self._refuses_late and in_flight and in_flight[0].pending.done()):
            flight = in_flight.popleft()
            try:
                flight.pending.wait()
            except BindingRefused as refused:
                reason = refused.refusals.get(flight.key)
                if flight.concluded is not None and reason is not None:
                    self._binding_refused(flight.concluded, reason)
                    continue
                log.error("the writes of %s were refused: %s", flight.key or "a batch", refused)
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
            if flight.concluded is not None:
                self._submit(flight.concluded.pod, flight.concluded.att)

    def _binding_refused(self, concluded: _Concluded, reason: str) -> None:
        """The failed binding cycle of an attempt whose binding the store refused with its batch, concluded (and then
        recorded) as the loop concludes a binding refused at once; its writes in a batch of their own."""
        qpi, pod = concluded.qpi, concluded.pod
        with self.store.deferred() as pending:
            self.loop.binding_refused(qpi, pod, concluded.att, concluded.cycle, reason)
        self._in_flight.append(_InFlight(pending, "", "", False))
        # Pending again, as it stayed when the binding was refused at once (a later change of it requeues it).
        current = self.loop.cluster.pods.get(qpi.key)
        if current is not None and not (current.get("spec") or {}).get("nodeName"):
            self._pending[qpi.key] = _scheduling_relevant(current)
        self._submit(pod, concluded.att)
