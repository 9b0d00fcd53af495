"""The scheduler's own process (``KSS_SCHEDULER_PROCESS``): the host's loop over a mirror of the API process's store.

As kube-scheduler runs beside kube-apiserver: the API process sends the committed JSON of every change of the kinds
the loop reads, in resourceVersion order; this process decodes each once (managedFields dropped, as kube-scheduler's
informer transform does) into ``MirrorStore``, which the unchanged ``SchedulerService`` reads and writes as it would
the store. Writes go back through the pipe: an attempt's staged writes (binding with the result annotations,
statuses, Events, victim deletes) as one batch acknowledged once committed, the writes whose result a plugin needs
(PV/PVC and ResourceClaim writes) as request/answer. The API process stays the one place that commits. Attempts are
encoded into result rows here (``RowsForwarder``: the costly part), numbered and inserted by the API process.

A read after an acknowledgement or an answer waits until the mirror holds the resourceVersion the API process
committed, so the loop reads its own writes as it does over the store.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import os
import queue
import signal
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kss_sim.cluster.errors import NotFound
from kss_sim.config import Settings
from kss_sim.engine_host.channel import DEFERRABLE_WRITES, Channel, decode_error, encode_error
from kss_sim.engine_host.memory_census import take_census_periodically
from kss_sim.engine_host.scheduler_thread import (
    WATCHED_KINDS,
    BindingRefused,
    SchedulerService,
    load_scheduler_config,
)
from kss_sim.engine_host.view import EngineView
from kss_sim.kube import raw_numbers
from kss_sim.kube.objects import Obj
from kss_sim.results.annotations import PREFIX as RESULT_PREFIX
from kss_sim.results.rows import attempt_row
from kss_sim.scheduler.plugins import load_plugin_modules, reload_plugin_modules
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.watchdog import PluginTimeoutReport
from kss_sim.server.gc_policy import SERVE_GC_THRESHOLDS, install_heap_policy
from kss_sim.server.metrics import attempt_parts

log = logging.getLogger("kss.scheduler")

Listener = Callable[[str, str, Obj], None]
MIRRORED_KINDS = frozenset(WATCHED_KINDS)
# Attempts encoded into one message of rows at most (the thread writer's batch).
ROWS_PER_MESSAGE = 256
# Attempts' batches of writes sent in one message at most while the loop is busy (it sends what it holds when it
# waits for one or goes idle): fewer messages and wake-ups in both processes, a binding later by a cycle or three.
WRITES_PER_MESSAGE = 4
# How long a flush of the rows waits for the attempts in flight to be acknowledged and recorded (a commit's latency,
# or the cycle the loop is in, at most: well under the API process's call timeout).
FLUSH_WAIT_SECONDS = 20.0
# A directory: the child traces its allocations and writes a snapshot there every ``TRACE_EVERY_SECONDS`` (for
# finding what grows in it, issue #35; tracing slows it down severalfold).
TRACE_ENV = "KSS_SCHEDULER_TRACEMALLOC"
TRACE_EVERY_SECONDS = 60.0
# The attempt number of a row sent to the API process, which numbers it (``RowsForwarder``).
UNNUMBERED = 0


@dataclass(frozen=True, slots=True)
class MirrorEntry:
    """An object as the mirror holds it: the decoded dict (read-only, managedFields dropped) and its JSON."""

    obj: Obj
    raw: bytes


@dataclass(frozen=True, slots=True)
class MirrorList:
    """What ``select`` returns: the kind's entries (as ``ListResult.items``)."""

    items: list[MirrorEntry]


def decoded(raw: bytes) -> Obj:
    """An object of the change stream, decoded, without managedFields (which the scheduler never reads)."""
    obj: Obj = raw_numbers.loads(raw)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def decoded_for_scheduler(kind: str, raw: bytes) -> Obj:
    """An object of the change stream as the scheduler holds it: decoded, and a bound pod without the result
    annotations (``kube-scheduler-simulator.sigs.k8s.io/...``). The scheduler reads a pod's result annotations only
    to carry their history into its next attempt's, which a bound pod never has; at 20 nodes they were ~18 of
    the ~20 kB each decoded pod version cost in the node-column journal (4,096 and more versions), strings of kB
    the C heap churned through at each halving and did not give back (issue #35's soak). ``get`` and ``list``
    decode the JSON kept beside it: whole."""
    obj = decoded(raw)
    meta = obj.get("metadata")
    if kind == "Pod" and isinstance(meta, dict) and (obj.get("spec") or {}).get("nodeName"):
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and any(str(key).startswith(RESULT_PREFIX) for key in annotations):
            kept = {key: value for key, value in annotations.items() if not str(key).startswith(RESULT_PREFIX)}
            if kept:
                meta["annotations"] = kept
            else:
                del meta["annotations"]
    return obj


def _resource_version(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class PendingBatch:
    """An attempt's writes sent to the API process, until it acknowledges them (``Pending`` of the store).
    ``send_held``: sends the batches the mirror holds back (this one among them), before a wait for it."""

    def __init__(self, batch_id: int, send_held: Callable[[], None]) -> None:
        self.batch_id = batch_id
        self.send_held = send_held
        self.ops: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._done = threading.Event()
        self._error: str | None = None
        self._refusals: dict[str, str] = {}

    def resolve(self, error: str | None, refusals: dict[str, str] | None = None) -> None:
        self._error = error
        self._refusals = refusals or {}
        self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> None:
        """Block until committed; raise when the commit failed (the host then forgets the assumed pod and tries it
        again, as after a failed commit of the thread host's), ``BindingRefused`` when the store refused bindings in
        it (the host concludes those attempts as failed binding cycles; the batch's other writes were committed)."""
        if not self._done.is_set():
            self.send_held()
        self._done.wait()
        if self._error is not None:
            raise RuntimeError(self._error)
        if self._refusals:
            raise BindingRefused(self._refusals)


@dataclass
class _Answer:
    done: threading.Event = field(default_factory=threading.Event)
    ok: bool = False
    value: Any = None
    resource_version: int = 0


class MirrorStore:
    """The store as the scheduler's process sees it: a local mirror fed by the change stream, writes sent back.

    Implements ``ClusterStoreLike`` (and what VolumeBinding's and DynamicResources' writes use)."""

    # A binding staged in a batch is answered with the batch's acknowledgement (``SchedulerService`` then concludes
    # a refused one), not when it is written as over the store.
    refuses_bindings_late = True

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self._objects: dict[str, dict[tuple[str, str], MirrorEntry]] = {}
        self._listeners: list[tuple[Listener, frozenset[str] | None]] = []
        self._seen = threading.Condition()
        self.seen_rv = 0  # every change up to this resourceVersion is in the mirror
        self._answers: dict[int, _Answer] = {}
        self._batches: dict[int, PendingBatch] = {}
        self._parked_acks: list[tuple[int, str | None, int, dict[str, str]]] = []  # acks ahead of the change stream
        self._ids = itertools.count(1)
        self._local = threading.local()
        # Batches of writes not sent yet: held until ``WRITES_PER_MESSAGE`` are, a wait for one of them, a request
        # (which the writes before it must precede) or ``send_held``: one message for the attempts of a busy loop.
        self._held: list[PendingBatch] = []
        self._held_lock = threading.Lock()

    # --- the change stream (the receiver thread) ------------------------------------------------
    def apply_changes(self, changes: Iterable[tuple[int, str, str, bytes]], resource_version: int) -> None:
        """Take in committed changes (resourceVersion, type, kind, JSON) and tell the listeners. A change the mirror
        already holds a newer version of (the list and the watch overlap at the start) is skipped."""
        listeners = self._listeners
        for _rv, event_type, kind, raw in changes:
            obj = decoded_for_scheduler(kind, raw)
            key = _key(obj)
            table = self._objects.setdefault(kind, {})
            held = table.get(key)
            if held is not None and _resource_version(held.obj) >= _resource_version(obj):
                continue
            if event_type == "DELETED":
                if held is None:
                    continue
                del table[key]
            else:
                table[key] = MirrorEntry(obj, raw)
            for listener, kinds in listeners:
                if kinds is None or kind in kinds:
                    try:
                        listener(event_type, kind, obj)
                    except Exception:
                        log.exception("mirror listener %r failed", listener)
        with self._seen:
            self.seen_rv = max(self.seen_rv, resource_version)
            self._seen.notify_all()
        if self._parked_acks:
            self._release_acks()

    def wait_for(self, resource_version: int, timeout: float | None = None) -> bool:
        """Block until the mirror holds every change up to ``resource_version``."""
        with self._seen:
            return self._seen.wait_for(lambda: self.seen_rv >= resource_version, timeout=timeout)

    def acknowledged(self, acks: Iterable[tuple[int, str | None, dict[str, str]]], resource_version: int) -> None:
        """The API process committed (or failed to commit) batches, each with the bindings in it the store refused
        (by pod key); resolved once the mirror shows ``resource_version``, what it had committed then."""
        self._parked_acks.extend((batch_id, error, resource_version, refusals) for batch_id, error, refusals in acks)
        self._release_acks()

    def _release_acks(self) -> None:
        kept = []
        for batch_id, error, rv, refusals in self._parked_acks:
            if rv > self.seen_rv:
                kept.append((batch_id, error, rv, refusals))
                continue
            batch = self._batches.pop(batch_id, None)
            if batch is not None:
                batch.resolve(error, refusals)
        self._parked_acks = kept

    def answered(self, request_id: int, ok: bool, value: Any, resource_version: int) -> None:
        answer = self._answers.pop(request_id, None)
        if answer is not None:
            answer.ok, answer.value, answer.resource_version = ok, value, resource_version
            answer.done.set()

    # --- reads ----------------------------------------------------------------------------------
    def select(self, kind: str, namespace: str | None = None) -> MirrorList:
        """The kind's objects; a kind the stream does not carry (Events, read when another scheduler's binding is
        recorded) is listed by the API process."""
        if kind not in MIRRORED_KINDS:
            raws: list[bytes] = self.request("select", kind, namespace)
            return MirrorList([MirrorEntry(decoded(raw), raw) for raw in raws])
        entries = list(self._objects.get(kind, {}).values())
        if namespace is not None:
            entries = [e for e in entries if (e.obj.get("metadata") or {}).get("namespace") == namespace]
        return MirrorList(entries)

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[Obj], int]:
        return [decoded(e.raw) for e in self.select(kind, namespace).items], self.seen_rv

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        """A copy of one object (the store's ``get`` gives a copy too), or None."""
        entry = self._objects.get(kind, {}).get((namespace or "", name))
        return decoded(entry.raw) if entry is not None else None

    def read(self, kind: str, namespace: str | None, name: str) -> MirrorEntry:
        """The mirror's entry of one object (``obj``: the read-only dict the listeners were handed; a bound pod's
        without its result annotations), or ``NotFound``, as the store's ``read``."""
        entry = self._objects.get(kind, {}).get((namespace or "", name))
        if entry is None:
            raise NotFound(kind, name)
        return entry

    def add_listener(self, callback: Listener, kinds: Iterable[str] | None = None, *, copy: bool = True) -> None:
        """Call ``callback`` with every change taken in (the mirror's read-only dict: ``copy`` is ignored)."""
        self._listeners = [*self._listeners, (callback, frozenset(kinds) if kinds is not None else None)]

    def remove_listener(self, callback: Listener) -> None:
        self._listeners = [entry for entry in self._listeners if entry[0] != callback]

    # --- writes ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def deferred(self) -> Iterator[PendingBatch]:
        """The writes of this thread inside the block are sent as one batch; ``wait()`` for its acknowledgement."""
        batch = PendingBatch(next(self._ids), self.send_held)
        outer = getattr(self._local, "batch", None)
        self._local.batch = batch
        try:
            yield batch
        finally:
            self._local.batch = outer
            if not batch.ops:
                batch.resolve(None)
            else:
                self._batches[batch.batch_id] = batch
                with self._held_lock:
                    self._held.append(batch)
                    full = len(self._held) >= WRITES_PER_MESSAGE
                if full:
                    self.send_held()

    def send_held(self) -> None:
        """Send the batches of writes held back, in one message."""
        with self._held_lock:
            batches, self._held = self._held, []
            # Sent under the lock: two threads sending held batches keep their order.
            if not batches or self.channel.send(("writes", [(b.batch_id, b.ops) for b in batches])):
                return
        for batch in batches:
            batch.resolve("the API process is gone")

    def _write(self, method: str, *args: Any, **kwargs: Any) -> Any:
        batch: PendingBatch | None = getattr(self._local, "batch", None)
        if batch is not None and method in DEFERRABLE_WRITES:
            batch.ops.append((method, args, kwargs))
            return None
        return self.request(method, *args, **kwargs)

    def request(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """A write the API process makes at once, its result (or its error) answered; the mirror then shows it."""
        self.send_held()  # the writes staged before it are made first, as over the store
        request_id = next(self._ids)
        answer = self._answers[request_id] = _Answer()
        if not self.channel.send(("request", request_id, method, args, kwargs)):
            raise RuntimeError("the API process is gone")
        answer.done.wait()
        self.wait_for(answer.resource_version)
        if not answer.ok:
            raise decode_error(answer.value)
        return answer.value

    def bind_pod(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: dict[str, str] | None = None,
        copy: bool = True,
    ) -> Obj:
        """The binding, staged in the attempt's batch (what it returns is not read there: an empty dict), or made at
        once outside one."""
        result: Obj | None = self._write("bind_pod", namespace, name, node_name, annotations=annotations, copy=False)
        return result or {}

    def update_pod_status(self, namespace: str, name: str, status: Obj, **kwargs: Any) -> Any:
        return self._write("update_pod_status", namespace, name, status, **kwargs)

    def create_event(self, involved: Obj, reason: str, message: str, **kwargs: Any) -> Any:
        return self._write("create_event", _event_subject(involved), reason, message, **kwargs)

    def delete(self, kind: str, namespace: str | None, name: str, **kwargs: Any) -> Any:
        return self._write("delete", kind, namespace, name, **kwargs)

    def patch(self, kind: str, namespace: str | None, name: str, patch: Any, *args: Any, **kwargs: Any) -> Any:
        return self._write("patch", kind, namespace, name, patch, *args, **kwargs)

    def update(self, kind: str, obj: Obj, **kwargs: Any) -> Obj:
        result: Obj = self.request("update", kind, obj, **kwargs)
        return result

    def create(self, kind: str, obj: Obj, **kwargs: Any) -> Obj:
        result: Obj = self.request("create", kind, obj, **kwargs)
        return result

    def take_binder(self, uid: str) -> str | None:
        result: str | None = self.request("take_binder", uid)
        return result


def _event_subject(obj: Obj) -> Obj:
    """What the store's ``create_event`` reads of the object an Event is about (its reference): the whole pod was
    pickled across, and unpickled by the API process, for every Event."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    subject: Obj = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    subject["metadata"] = {key: meta[key] for key in ("namespace", "name", "uid", "resourceVersion") if key in meta}
    return subject


@dataclass(frozen=True, slots=True)
class _Observed:
    """What the API process's metrics count of one attempt (``attempt_parts``) and the plugin runs sampled with it."""

    parts: tuple[Any, ...]
    runs: list[tuple[str, str, str, float]]


class RowsForwarder:
    """The results service as the scheduler's process has it: attempts encoded into rows on a thread of their own,
    sent in batches for the API process to number and insert in its store's commits. What the metrics count of each
    attempt rides in the same messages (``observe``): one message a pod less each way than sent apart.

    The attempts are numbered where the database is (``ResultsService.number_rows``): its counters are bounded and
    read a pod's count back from the database on a miss, which rows still on their way here would make wrong; a
    counter per pod ever scheduled kept here grew without bound under churn (issue #35)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        # Attempts to encode and attempts' metrics; an Event marks a flush (set once what came before it is sent);
        # None ends the thread.
        self._queue: queue.SimpleQueue[
            tuple[Attempt, str, str, str, float, int | None] | _Observed | threading.Event | None
        ] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._encode, name="results-rows", daemon=True)
        self._thread.start()

    def next_attempt_number(self, namespace: str, pod_name: str) -> int:
        """A placeholder: the API process numbers the attempt's row as it inserts it."""
        return UNNUMBERED

    def submit(
        self,
        att: Attempt,
        *,
        namespace: str,
        pod_name: str,
        pod_uid: str,
        queued_seconds: float = 0.0,
        run_id: int | None = None,
    ) -> None:
        self._queue.put((att, namespace, pod_name, pod_uid, queued_seconds, run_id))

    def observe(self, parts: tuple[Any, ...], runs: list[tuple[str, str, str, float]]) -> None:
        """An attempt's metrics (``attempt_parts``) and sampled plugin runs, sent with the rows."""
        self._queue.put(_Observed(parts, runs))

    def flush(self, timeout: float = 30.0) -> None:
        """Block until every attempt submitted so far is encoded and its rows sent."""
        sent = threading.Event()
        self._queue.put(sent)
        sent.wait(timeout)

    def stop(self) -> None:
        """Encode and send what was submitted, then end the thread."""
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _encode(self) -> None:
        while True:
            item = self._queue.get()
            batch = []
            observed: list[tuple[tuple[Any, ...], list[tuple[str, str, str, float]]]] = []
            flushed = None
            while item is not None:
                if isinstance(item, threading.Event):
                    flushed = item
                    break
                if isinstance(item, _Observed):
                    observed.append((item.parts, item.runs))
                else:
                    batch.append(item)
                if len(batch) >= ROWS_PER_MESSAGE:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch or observed:
                rows = []
                for att, ns, name, uid, queued, run_id in batch:
                    try:
                        rows.append(
                            attempt_row(
                                att, namespace=ns, pod_name=name, pod_uid=uid, queued_seconds=queued, run_id=run_id
                            )
                        )
                    except Exception:
                        log.exception("encoding the attempt of %s/%s failed", ns, name)
                self.channel.send(("rows", rows, observed))
            if flushed is not None:
                flushed.set()
            if item is None:
                return


class SchedulerChild:
    """The scheduler process's side of the pipe: the receiver thread feeding the mirror, the operations answered."""

    def __init__(self, channel: Channel, settings: Settings, config_document: Obj | None, holds: int) -> None:
        self.channel = channel
        self.settings = settings
        self.mirror = MirrorStore(channel)
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._config_document = config_document
        self._holds = holds
        self.service: SchedulerService | None = None
        self.rows: RowsForwarder | None = None
        self._hold_exits: list[contextlib.ExitStack] = []
        # The sampled plugin runs of the attempt under way (plugin, extension point, status, seconds), sent with it.
        self._plugin_runs: list[tuple[str, str, str, float]] = []

    def run(self) -> None:
        receiver = threading.Thread(target=self._receive, name="scheduler-receiver", daemon=True)
        receiver.start()
        self._synced.wait()
        self.rows = RowsForwarder(self.channel)
        settings = self.settings
        service = self.service = SchedulerService(
            self.mirror,
            results=self.rows,
            config=load_scheduler_config(settings),
            seed=settings.seed,
            per_node_annotations=settings.results_node_annotations,
            per_node_annotations_max_nodes=settings.results_node_annotations_max_nodes,
            write_annotations=settings.results_annotations,
            on_attempt=self._observed,
            on_plugin=self._plugin_ran,
            on_shadow=self._judged,
            plugin_timeout=settings.plugin_timeout,
            on_plugin_timeout=self._timed_out,
            plugin_metrics_sample_percent=settings.plugin_metrics_sample_percent,
            feature_gates=settings.effective_feature_gates,
            kube_version=settings.version,
            shadow=settings.shadow,
        )
        if self._config_document is not None:
            service.update_config(self._config_document)
        for _ in range(self._holds):
            hold = contextlib.ExitStack()
            hold.enter_context(service.held())
            self._hold_exits.append(hold)
        if settings.scheduler_enabled:
            service.start()
        else:
            service.observe()
        self.channel.send(("ready",))
        self._stop.wait()
        service.stop()
        self.mirror.send_held()
        self.rows.stop()
        self.channel.send(("bye",))

    def _judged(self, agrees: bool) -> None:
        """A shadow judgement, for the API process's metrics."""
        self.channel.send(("shadow", agrees))

    def _timed_out(self, report: PluginTimeoutReport) -> None:
        """A plugin call past its timeout, for the API process's metrics (the pages' rows are asked of this one)."""
        self.channel.send(("plugin_timeout", report))

    def _plugin_ran(self, plugin: str, point: str, status: str, seconds: float) -> None:
        self._plugin_runs.append((plugin, point, status, seconds))

    def _observed(self, att: Attempt) -> None:
        """What the API process's metrics count of an attempt (Prometheus lives there), with its plugin runs: sent
        with the rows (``submit`` handed the attempt to them just before)."""
        runs, self._plugin_runs = self._plugin_runs, []
        assert self.rows is not None
        self.rows.observe(attempt_parts(att), runs)

    def _receive(self) -> None:
        mirror = self.mirror
        while True:
            try:
                message = self.channel.recv()
            except (EOFError, OSError):
                # The API process is gone (kill -9 included): no orphan scheduler.
                os._exit(0)
            try:
                self._dispatch(mirror, message)
            except Exception:
                # A mirror that missed a message is wrong from then on, and a dead receiver leaves the scheduler
                # waiting forever (and the API process's shutdown with it): end, so the API process starts a
                # child that lists afresh.
                log.exception("the scheduler process could not apply %r; ending, to be started again", message[0])
                os._exit(1)

    def _dispatch(self, mirror: MirrorStore, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "changes":
            mirror.apply_changes(message[1], message[2])
            for acks, resource_version in message[3]:  # batches committed, resolved once the mirror shows them
                mirror.acknowledged(acks, resource_version)
        elif kind == "answer":
            mirror.answered(message[1], message[2], message[3], message[4])
        elif kind == "synced":
            self._synced.set()
        elif kind == "call":
            threading.Thread(target=self._call, args=message[1:], name="scheduler-call", daemon=True).start()
        elif kind == "stop":
            self._stop.set()

    def _call(self, call_id: int, op: str, args: tuple[Any, ...]) -> None:
        try:
            value = self._operation(op, args)
        except Exception as exc:
            self.channel.send(("answer", call_id, False, encode_error(exc), 0))
            return
        self.channel.send(("answer", call_id, True, value, 0))

    def _operation(self, op: str, args: tuple[Any, ...]) -> Any:
        service = self.service
        if service is None:
            raise RuntimeError("the scheduler is starting")
        if op == "hold":
            hold = contextlib.ExitStack()
            hold.enter_context(service.held())
            self._hold_exits.append(hold)
            return None
        if op == "release":
            # What the API wrote while held is in the mirror before a cycle starts: pods in queue order.
            self.mirror.wait_for(args[0], timeout=30.0)
            self._hold_exits.pop().close()
            return None
        if op == "wait_idle":
            resource_version, timeout = args
            if not self.mirror.wait_for(resource_version, timeout=timeout):
                return False
            idle = service.wait_idle(timeout=timeout)
            if idle and self.rows is not None:
                # The attempts' metrics ride with the rows: sent before the answer, as they were sent apart.
                self.rows.flush()
            return idle
        if op == "reload_plugins":
            reload_plugin_modules()
            return None
        if op == "config":
            service.update_config(args[0])
            return None
        if op == "flush_rows":
            assert self.rows is not None
            # The attempts whose bindings the API process may already show are recorded first (read-your-writes).
            service.record_in_flight(timeout=FLUSH_WAIT_SECONDS)
            self.rows.flush()
            return None
        if op == "view":
            name, view_args = args
            return getattr(EngineView(service), name)(*view_args)
        if op == "pending_counts":
            return service.queue.pending_counts()
        if op == "waiting_count":
            return len(service.waiting_pods)
        raise ValueError(f"unknown operation {op}")


def child_main(
    conn: Any,
    settings: Settings,
    config_document: Obj | None,
    holds: int,
) -> None:
    """The scheduler process's entry point (spawned by ``process_host.SchedulerProcess``)."""
    # Ctrl-C reaches the whole process group: the API process stops this one in order (its lifespan's end).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [scheduler process] %(message)s")
    load_plugin_modules(settings.plugin_modules)
    trace_directory = os.environ.get(TRACE_ENV)
    if trace_directory:
        _trace_memory(trace_directory)
    if settings.scheduler_memory_census is not None:
        take_census_periodically(str(settings.scheduler_memory_census))
    install_heap_policy()
    # The API process's thresholds (a spawned interpreter starts at 700); not its freeze of survivors: this process
    # is never idle long under churn to reclaim what a freeze would keep.
    gc.set_threshold(*SERVE_GC_THRESHOLDS)
    SchedulerChild(Channel(conn), settings, config_document, holds).run()


def _trace_memory(directory: str) -> threading.Thread:
    """Trace this process's allocations (6 frames) and dump a snapshot into ``directory`` every
    ``TRACE_EVERY_SECONDS``, until tracing stops."""
    tracemalloc.start(6)

    def dump() -> None:
        for n in itertools.count(1):
            time.sleep(TRACE_EVERY_SECONDS)
            try:
                snapshot = tracemalloc.take_snapshot()
            except RuntimeError:  # tracing stopped
                return
            snapshot.dump(os.path.join(directory, f"scheduler-{n:03d}.tracemalloc"))

    thread = threading.Thread(target=dump, name="tracemalloc-dump", daemon=True)
    thread.start()
    return thread
