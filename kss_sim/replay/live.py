"""The live driver: a timed workload played against a running ``kss serve`` through its API at a chosen speed
(``kss replay WORKLOAD --target-url URL --speed 60``), so the UI shows the run as it goes.

Virtual time ``t`` happens at wall time ``start + t / speed``. The server does the rest as it does for any
client: its scheduler places the pods, its controllers run Deployments and Jobs, its kubelet starts pods. The
driver only does what the workload says at each moment:

- the starting objects at once, through the simulator's import (owners and uids remapped, kinds in order, the
  snapshot's bound pods bound), then each event at its time: ``create`` POSTs the manifest (namespaces made when
  missing), ``update`` PUTs it with the current resourceVersion, ``delete`` deletes (dependents in the
  background), ``cordon``/``uncordon``/``taint``/``untaint`` patch the node, ``failNode``/``healNode`` its
  status (the Ready condition, as ``kss node fail|heal``; a stopped node's ``Unknown`` is patched
  ``--node-monitor-grace-period`` after its ``failNode``, the server's kubelet going on renewing its Lease),
  ``drain`` cordons and evicts through the eviction API as ``kubectl drain`` (a 429 asked again 5 s on; the
  evicted pod's grace period scaled by ``speed``), ``applyConfig`` PUTs the scheduler configuration;
- a pod's ``runFor``: the driver watches pods and deletes each ``runFor / speed`` wall seconds after it saw it
  bound (it carries the ``replay.kss.sigs.k8s.io/run-for`` annotation; a Deployment's, ReplicaSet's,
  StatefulSet's or DaemonSet's pod template gets it too, so its controller replaces the pods that end); a Job's or
  CronJob's pods get the kubelet's ``kss.sigs.k8s.io/run-duration`` of ``runFor / speed`` instead, so they
  succeed and the Job completes; ``endAt``: the object is deleted at that time, whatever its state. A pod that
  ran its time is deleted with a grace period of 0 (gone at once, as one that Succeeds offline); one a ``delete`` or
  its ``endAt`` deletes gets its own grace period scaled by ``speed``, as an evicted one;
- every pod it sends (bare pods, workloads' templates, the starting objects) with its grace period and
  tolerationSeconds divided by the speed (``live_timings.py``), so the server's kubelet and taint eviction count
  them on the replay's clock;
- a workload's ``usage`` curve: at each step its pods' ``kss.sigs.k8s.io/<resource>-usage`` annotations are patched
  on the server, and each pod it makes later gets them when the watch sees it (``live_usage.py``): what the
  server's horizontal pod autoscaler reads.

A request the server refuses (409, 422, ...) is reported with the object named and the run goes on; the end
summary counts them. Ctrl-C stops the run (the objects stay on the server).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import heapq
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from kss_sim.kube.node_ready import NODE_MONITOR_GRACE_PERIOD, ready_status_patch
from kss_sim.kube.objects import Obj
from kss_sim.replay.live_api import SERVER_MANAGED, ApiError, Target, list_pods, watch_pods
from kss_sim.replay.live_summary import LivePod, LiveSummary, Progress, clock_text
from kss_sim.replay.live_timings import scale_pod_timings, scaled_for, wall_seconds
from kss_sim.replay.live_usage import UsageFeed
from kss_sim.replay.workload import DRAIN_RETRY_SECONDS, RUN_FOR_ANNOTATION, Event, TimedWorkload, parse_duration

KUBELET_RUN_DURATION = "kss.sigs.k8s.io/run-duration"
JOB_KINDS = frozenset({"Job", "CronJob"})
_CONFLICT_RETRIES = 3


def go_duration(seconds: float) -> str:
    """Seconds as a Go duration the kubelet parses (``1.5s``; Go reads no exponent)."""
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return f"{text or '0'}s"


class LiveReplay:
    """Plays ``workload`` against the server behind ``target`` at ``speed`` virtual seconds per wall second."""

    def __init__(
        self,
        workload: TimedWorkload,
        target: Target,
        *,
        speed: float,
        until: float | None = None,
        scheduler_config: Obj | None = None,
        progress: Progress | None = None,
        errors: TextIO | None = None,
        settle: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be more than 0 (got {speed:g})")
        self.workload = workload
        self.target = target
        self.speed = speed
        self.until = until
        self.scheduler_config = scheduler_config if scheduler_config is not None else workload.scheduler_config
        self.progress = progress
        self.error_stream = errors
        self.settle = settle  # wall seconds to wait for pending runFor pods once nothing else is left to do
        self.clock = clock
        self.summary = LiveSummary(speed=speed)
        self._events = [e for e in workload.events if until is None or e.at <= until]
        self.summary.events_total = len(self._events)
        self._next_event = 0
        self._timers: list[tuple[float, int, bool, Callable[[], None]]] = []  # (virtual, seq, holds the run, do)
        self._timer_seq = 0
        self._inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stop = threading.Event()
        self._t0 = 0.0
        self._preexisting: set[str] = set()
        self._namespaces: set[str] = set()
        self._run_for_of: dict[tuple[str, str, str], float] = {}  # (kind, namespace, name) created with runFor
        self._last_activity = 0.0
        self._lapses: dict[str, int] = {}  # stopped node -> the token of its coming lease lapse
        self._lapse_seq = 0
        self._usage = UsageFeed(target)

    # --- time -----------------------------------------------------------------------------------
    def _now(self) -> float:
        return (self.clock() - self._t0) * self.speed

    def _at(self, virtual: float, callback: Callable[[], None], *, holds: bool = True) -> None:
        """Call ``callback`` at virtual time ``virtual``; the run waits for it unless not ``holds``."""
        self._timer_seq += 1
        heapq.heappush(self._timers, (virtual, self._timer_seq, holds, callback))

    # --- the run --------------------------------------------------------------------------------
    def run(self) -> LiveSummary:
        """Play the workload; returns at ``until`` if given, else once every event is applied and every runFor
        and endAt deletion of the workload's own pods done (or on Ctrl-C)."""
        watcher: threading.Thread | None = None
        try:
            self.target.discover()
            self._namespaces = self.target.namespaces()
            pods, resource_version = list_pods(self.target.connection)
            self._preexisting = {str(p["metadata"].get("uid")) for p in pods}
            self._start()
            self._t0 = self.clock()
            self._last_activity = self._t0
            self.summary.started_at = time.time()
            watcher = threading.Thread(target=self._watch, args=(resource_version,), name="live-pod-watch", daemon=True)
            watcher.start()
            self._loop()
        except KeyboardInterrupt:
            self.summary.interrupted = True
        finally:
            self._stop.set()
            if self._t0:
                self.summary.virtual_reached = max(0.0, self._now())
                if self.until is not None:
                    self.summary.virtual_reached = min(self.summary.virtual_reached, self.until)
            if self.progress is not None:
                self._show_progress(force=True)
                self.progress.done()
        return self.summary

    def _start(self) -> None:
        if self.scheduler_config is not None:
            try:
                self.target.put_scheduler_config(self.scheduler_config)
            except ApiError as exc:
                self._error(f"scheduler configuration: {exc}")
        if self.workload.start:
            try:
                start = copy.deepcopy(self.workload.start)
                for obj in start:
                    scale_pod_timings(obj, self.speed)
                self.target.import_objects(start)
                self.summary.start_objects = len(self.workload.start)
            except ApiError as exc:
                self._error(f"starting objects ({len(self.workload.start)}): {exc}")

    def _loop(self) -> None:
        while True:
            now = self._now()
            while self._next_event < len(self._events) and self._events[self._next_event].at <= now:
                self._apply(self._events[self._next_event])
                self._next_event += 1
            while self._timers and self._timers[0][0] <= now:
                heapq.heappop(self._timers)[3]()
            self._drain()
            self._show_progress()
            if self._finished(now):
                return
            with contextlib.suppress(queue.Empty):
                self._handle(*self._inbox.get(timeout=self._wait(now)))

    def _wait(self, now: float) -> float:
        """Wall seconds until something is due (at most half a second: progress and the end check)."""
        due = [0.5 * self.speed]
        if self._next_event < len(self._events):
            due.append(self._events[self._next_event].at - now)
        if self._timers:
            due.append(self._timers[0][0] - now)
        if self.until is not None:
            due.append(self.until - now)
        return max(0.0, min(due) / self.speed)

    def _finished(self, now: float) -> bool:
        if self.until is not None:  # the run lasts until then, whatever is left
            return now >= self.until
        if self._next_event < len(self._events) or any(holds for _, _, holds, _ in self._timers):
            return False
        waiting = any(
            p.created_by_event and p.run_for is not None and p.bound is None and p.gone is None
            for p in self.summary.pods.values()
        )
        return not waiting or self.clock() - self._last_activity >= self.settle

    def _show_progress(self, *, force: bool = False) -> None:
        if self.progress is None:
            return
        s = self.summary
        now = min(self._now(), self.until) if self.until is not None else self._now()
        self.progress.update(
            f"{clock_text(max(0.0, now))}  events {self._next_event}/{len(self._events)}  "
            f"pods {s.pods_bound}/{len(s.pods)} bound  {s.pods_finished} finished  {len(s.errors)} errors",
            force=force,
        )

    def _error(self, message: str) -> None:
        self.summary.errors.append(message)
        if self.error_stream is not None:
            if self.progress is not None and self.progress.stream is self.error_stream:
                self.progress.clear()
            self.error_stream.write(f"kss replay: {message}\n")
            self.error_stream.flush()

    # --- events ---------------------------------------------------------------------------------
    def _apply(self, event: Event) -> None:
        try:
            if event.action in ("failNode", "healNode"):
                self._report_node(event)
            elif event.action == "drain":
                self._drain_node(event)
            else:
                getattr(self, "_" + event.action)(event)
        except ApiError as exc:
            self._error(f"at {clock_text(event.at)}: {event.action} {self._named(event)}: {exc}")
            return
        self.summary.events_applied += 1
        self._last_activity = self.clock()

    def _create(self, event: Event) -> None:
        assert event.obj is not None
        obj = _cleaned(event.obj)
        kind = str(obj["kind"])
        resource = self.target.resource(kind, obj.get("apiVersion"))
        meta = obj["metadata"]
        if resource.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
            self._ensure_namespace(str(meta["namespace"]))
        if event.run_for is not None:
            self._run_for_of[(kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = event.run_for
            self._with_run_for(obj, event.run_for)
        scale_pod_timings(obj, self.speed)
        created = self.target.create(obj)
        if kind == "Namespace":
            self._namespaces.add(str(meta["name"]))
        if kind == "Pod":  # known now, before the watch tells: the run waits for its runFor
            self._on_pod("ADDED", created)
            self.summary.pods[str(created["metadata"]["uid"])].created_by_event = True
        self._usage_curve(event, obj)
        if event.end_at is not None:
            made = created.get("metadata") or {}
            namespace, name, uid = str(made.get("namespace") or ""), str(made.get("name")), str(made.get("uid"))
            grace = self._wall_grace(created) if kind == "Pod" else 0  # a deletion: the pod's own grace period
            self._at(event.end_at, lambda: self._end(kind, namespace, name, uid, at=event.end_at or 0.0, grace=grace))

    def _update(self, event: Event) -> None:
        assert event.obj is not None
        obj = _cleaned(event.obj)
        kind = str(obj["kind"])
        meta = obj["metadata"]
        if self.target.resource(kind, obj.get("apiVersion")).namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        run_for = self._run_for_of.get((kind, str(meta.get("namespace") or ""), str(meta["name"])))
        if run_for is not None:
            self._with_run_for(obj, run_for)
        scale_pod_timings(obj, self.speed)  # as created: a pod's grace period and tolerations are not to change
        for attempt in range(_CONFLICT_RETRIES):
            current = self.target.get(kind, str(meta.get("namespace") or ""), str(meta["name"]), obj.get("apiVersion"))
            meta["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                self.target.replace(obj)
                self._usage_curve(event, obj)
                return
            except ApiError as exc:  # someone (a controller) wrote it meanwhile: again on the new version
                if exc.code != 409 or attempt == _CONFLICT_RETRIES - 1:
                    raise

    def _usage_curve(self, event: Event, obj: Obj) -> None:
        """The workload's usage curve, its steps timed: its pods' usage annotations on the server (``UsageFeed``)."""
        if event.usage is None:
            return
        meta = obj.get("metadata") or {}
        key = (str(obj.get("kind")), str(meta.get("namespace") or "default"), str(meta.get("name")))
        curve = event.usage
        for at in self._usage.set_curve(key, curve):
            self._at(max(at, event.at), functools.partial(self._usage_step, key, curve, at))

    def _usage_step(self, key: tuple[str, str, str], curve: Any, at: float) -> None:
        try:
            self._usage.step(key, curve, max(at, self._now()))
        except ApiError as exc:
            self._error(f"at {clock_text(at)}: usage of {key[0]} {key[1]}/{key[2]}: {exc}")

    def _delete(self, event: Event) -> None:
        namespace = event.namespace or self._default_namespace(event.kind)
        grace = 0
        if event.kind == "Pod" and event.grace is not None:  # the event's own (on the replay's clock: / speed)
            grace = wall_seconds(event.grace, self.speed) if event.grace else 0
        elif event.kind == "Pod":  # as kubectl delete: the pod's own grace period (on the replay's clock: / speed)
            with contextlib.suppress(ApiError):  # gone: the delete says so
                grace = self._wall_grace(self.target.get("Pod", namespace, event.name))
        self.target.delete(event.kind, namespace, event.name, grace_period_seconds=grace)

    def _cordon(self, event: Event) -> None:
        self.target.merge_patch("Node", "", event.name, {"spec": {"unschedulable": True}})

    def _drain_node(self, event: Event) -> None:
        # kubectl drain: cordon, then the eviction API for every pod on the node but a DaemonSet's.
        self._cordon(event)
        self._evict_from(event)

    def _evict_from(self, event: Event) -> None:
        """One round of a drain's evictions; those a PodDisruptionBudget refused (429) are asked again 5 s (virtual)
        later, as the offline replay's drain (and kubectl, on its clock) retries, until none is left."""
        refused = 0
        try:
            pods = self.target.pods_on_node(event.name)
        except ApiError as exc:
            self._error(f"at {clock_text(event.at)}: drain {event.name}: {exc}")
            return
        for pod in pods:
            meta = pod.get("metadata") or {}
            owners = meta.get("ownerReferences") or []
            if meta.get("deletionTimestamp") or any(
                o.get("controller") and o.get("kind") == "DaemonSet" for o in owners
            ):
                continue
            namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
            try:
                self.target.evict(namespace, name, grace_period_seconds=self._wall_grace(pod))
            except ApiError as exc:
                if exc.code == 429:
                    refused += 1
                elif exc.code != 404:  # gone meanwhile: nothing to evict
                    self._error(f"at {clock_text(event.at)}: drain {event.name}: pod {namespace}/{name}: {exc}")
        if refused:
            self._at(max(event.at, self._now()) + DRAIN_RETRY_SECONDS, functools.partial(self._evict_from, event))

    def _wall_grace(self, pod: Obj) -> int:
        """The evicted or deleted pod's grace period on the server's wall clock: its own (30 s by default), already
        scaled when the driver sent it (``live_timings``), else scaled now: ``/ speed``, in whole seconds and at
        least 1 (0 would delete it at once)."""
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        seconds = 30.0 if grace is None else float(grace)
        if scaled_for(pod, self.speed):
            return max(0, int(seconds))
        return 0 if seconds <= 0 else wall_seconds(seconds, self.speed)

    def _report_node(self, event: Event) -> None:
        # As ``kss node fail|heal``: the server's node lifecycle controller then taints the node.
        self._lapses.pop(event.name, None)  # a heal (or another failure) before a lapse was played
        if event.report == "unreachable":
            # The node stops. kss serve's simulated kubelet goes on renewing every node's Lease, so the driver plays
            # the lapse: the node lifecycle controller's Unknown, --node-monitor-grace-period later (its default, 50 s
            # at every release kss serves).
            self._lapse_seq += 1
            self._lapses[event.name] = self._lapse_seq
            lapsed = functools.partial(self._lease_lapsed, event, self._lapse_seq)
            self._at(event.at + NODE_MONITOR_GRACE_PERIOD, lapsed)
            return
        self.target.patch_status("Node", "", event.name, ready_status_patch(event.report))

    def _lease_lapsed(self, event: Event, token: int) -> None:
        if self._lapses.get(event.name) != token:
            return
        del self._lapses[event.name]
        try:
            self.target.patch_status("Node", "", event.name, ready_status_patch("unreachable"))
        except ApiError as exc:
            self._error(f"at {clock_text(event.at)}: {event.action} {self._named(event)}: {exc}")

    def _uncordon(self, event: Event) -> None:
        self.target.merge_patch("Node", "", event.name, {"spec": {"unschedulable": None}})

    def _taint(self, event: Event) -> None:
        assert event.taint is not None
        new = dict(event.taint)

        def change(taints: list[Obj]) -> list[Obj]:
            # as kubectl taint --overwrite: one taint per key and effect
            kept = [t for t in taints if (t.get("key"), t.get("effect")) != (new["key"], new["effect"])]
            return [*kept, new]

        self._change_taints(event.name, change)

    def _untaint(self, event: Event) -> None:
        assert event.taint is not None
        key, effect = event.taint["key"], event.taint.get("effect")

        def change(taints: list[Obj]) -> list[Obj]:
            kept = [t for t in taints if not (t.get("key") == key and effect in (None, t.get("effect")))]
            if len(kept) == len(taints):
                raise ApiError(404, "NotFound", f"taint {key}{':' + effect if effect else ''} not found")
            return kept

        self._change_taints(event.name, change)

    def _change_taints(self, node: str, change: Callable[[list[Obj]], list[Obj]]) -> None:
        for attempt in range(_CONFLICT_RETRIES):
            current = self.target.get("Node", "", node)
            taints = change(list((current.get("spec") or {}).get("taints") or []))
            patch = {
                "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                "spec": {"taints": taints},
            }
            try:
                self.target.merge_patch("Node", "", node, patch)
                return
            except ApiError as exc:
                if exc.code != 409 or attempt == _CONFLICT_RETRIES - 1:
                    raise

    def _applyConfig(self, event: Event) -> None:  # named after the action
        assert event.obj is not None
        self.target.put_scheduler_config(event.obj)

    def _named(self, event: Event) -> str:
        """The event's object as an error names it: ``Pod default/web``, ``Node n1``."""
        if event.action == "applyConfig":
            return "scheduler configuration"
        namespace = event.namespace
        if not namespace:
            try:
                namespace = self._default_namespace(event.kind)
            except ApiError:  # a kind the server does not serve: named as written
                namespace = ""
        return f"{event.kind} {namespace + '/' if namespace else ''}{event.name or '(generateName)'}"

    def _default_namespace(self, kind: str) -> str:
        return "default" if self.target.resource(kind).namespaced else ""

    def _ensure_namespace(self, namespace: str) -> None:
        if namespace in self._namespaces:
            return
        try:
            self.target.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        except ApiError as exc:
            if exc.code != 409:
                raise
        self._namespaces.add(namespace)

    def _with_run_for(self, obj: Obj, run_for: float) -> None:
        """Mark the pod, or the pods a workload makes, with how long they run."""
        kind = obj["kind"]
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else None
        if kind == "Pod":
            _annotate(obj, RUN_FOR_ANNOTATION, f"{run_for:g}")
        elif kind in JOB_KINDS and spec is not None:
            job_spec = spec if kind == "Job" else (spec.get("jobTemplate") or {}).get("spec")
            template = (job_spec or {}).get("template")
            if isinstance(template, dict):
                _annotate(template, KUBELET_RUN_DURATION, go_duration(run_for / self.speed))
        elif spec is not None and isinstance(spec.get("template"), dict):
            _annotate(spec["template"], RUN_FOR_ANNOTATION, f"{run_for:g}")

    # --- timers -----------------------------------------------------------------------------------
    def _end(self, kind: str, namespace: str, name: str, uid: str, *, at: float, grace: int) -> None:
        try:
            self.target.delete(kind, namespace, name, uid=uid, grace_period_seconds=grace)
        except ApiError as exc:
            if exc.code not in (404, 409):  # gone already, or a new object of that name: not ours to end
                self._error(f"at {clock_text(at)}: endAt {kind} {namespace + '/' if namespace else ''}{name}: {exc}")
            return
        self.summary.objects_ended += 1
        self._last_activity = self.clock()

    def _finish(self, pod: LivePod) -> None:
        if pod.gone is not None:
            return
        namespace, _, name = pod.key.partition("/")
        try:
            self.target.delete("Pod", namespace, name, uid=pod.uid)
        except ApiError as exc:
            if exc.code not in (404, 409):
                self._error(f"at {clock_text(self._now())}: runFor end of Pod {pod.key}: {exc}")
            return
        pod.finished = self._now()
        self.summary.pods_finished += 1
        self._last_activity = self.clock()

    # --- the pod watch ----------------------------------------------------------------------------
    def _watch(self, resource_version: str) -> None:
        """Runs in a thread: pod events into the inbox; a 410 lists again; other failures retry after a second."""
        connection = self.target.connection
        while not self._stop.is_set():
            try:
                for event_type, pod in watch_pods(connection, resource_version, timeout_seconds=30):
                    resource_version = str((pod.get("metadata") or {}).get("resourceVersion") or resource_version)
                    if self._stop.is_set():
                        return
                    if event_type != "BOOKMARK":
                        self._inbox.put((event_type, pod))
            except ApiError as exc:
                if self._stop.is_set():
                    return
                if exc.code == 410:
                    try:
                        pods, resource_version = list_pods(connection)
                    except ApiError as again:
                        self._inbox.put(("WATCH_ERROR", str(again)))
                        self._stop.wait(1.0)
                        continue
                    self._inbox.put(("RELIST", pods))
                else:
                    self._inbox.put(("WATCH_ERROR", str(exc)))
                    self._stop.wait(1.0)

    def _drain(self) -> None:
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._handle(*item)

    def _handle(self, event_type: str, payload: Any) -> None:
        if event_type == "WATCH_ERROR":
            self._error(f"pod watch: {payload}")
        elif event_type == "RELIST":
            present = {str(p["metadata"].get("uid")) for p in payload}
            for pod in self.summary.pods.values():
                if pod.gone is None and pod.uid not in present:
                    pod.gone = self._now()
            for pod_obj in payload:
                self._on_pod("MODIFIED", pod_obj)
        else:
            self._on_pod(event_type, payload)

    def _on_pod(self, event_type: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid"))
        if uid in self._preexisting:
            return
        now = self._now()
        pod = self.summary.pods.get(uid)
        if event_type == "DELETED":
            if pod is not None and pod.gone is None:
                pod.gone = now
            return
        if pod is None:
            pod = LivePod(f"{meta.get('namespace')}/{meta.get('name')}", uid, now, _run_for(obj))
            self.summary.pods[uid] = pod
            try:
                self._usage.pod_seen(obj, now)  # its workload's usage now, before the autoscaler reads it
            except ApiError as exc:
                self._error(f"at {clock_text(now)}: usage of Pod {pod.key}: {exc}")
        node = (obj.get("spec") or {}).get("nodeName")
        if node and pod.bound is None:
            pod.bound, pod.node = now, str(node)
            self._last_activity = self.clock()
            if pod.run_for is not None:
                self._at(now + pod.run_for, lambda: self._finish(pod), holds=pod.created_by_event)


def _cleaned(manifest: Obj) -> Obj:
    obj = copy.deepcopy(manifest)
    meta = obj.setdefault("metadata", {})
    for key in SERVER_MANAGED:
        meta.pop(key, None)
    return obj


def _annotate(obj: Obj, key: str, value: str) -> None:
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    meta["annotations"][key] = value


def _run_for(pod: Obj) -> float | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(RUN_FOR_ANNOTATION)
    if value is None:
        return None
    try:
        return parse_duration(value, RUN_FOR_ANNOTATION)
    except ValueError:
        return None
