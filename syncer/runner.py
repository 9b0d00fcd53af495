"""The running syncer: one watcher per kind (and namespace), one ordered queue, one sink.

Start-up first asks both ends which optional kinds they serve (``discovery``), then lists the kinds one after
the other in apply order (namespaces first, pods last), so the simulator receives the existing cluster in an
order it can take (the pods the source has not scheduled after every pod it has: ``syncer.ordering``); then every
watcher follows its kind on its own thread, all feeding the same FIFO queue that the sink drains.

With the CRDs mirrored, a CRD the source establishes after the start brings its kind along: a watcher for its objects
starts when the CRD's event is queued, so the sink creates the CRD before any of them. A CRD deleted in the source
stops its kind's watcher (the simulator deletes the objects with the CRD); created again, it is followed again.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import groupby

from syncer.backoff import Backoff
from syncer.discovery import available_kinds, source_custom_kinds
from syncer.kinds import CRD, DEFAULT, NAMESPACE, POD, Kind, custom_kinds, with_custom_kinds
from syncer.kube import ApiProblem, Gone, SourceApi, TargetApi, Unavailable
from syncer.metrics import Metrics
from syncer.objects import Obj
from syncer.recording import Recorder
from syncer.sink import ADDED, DELETED, MODIFIED, Event, Sink, Stopped
from syncer.state import MirrorState
from syncer.watch import Watcher, start_thread

log = logging.getLogger("kss.syncer")


@dataclass(frozen=True, slots=True)
class SyncOptions:
    """What to mirror and how to watch."""

    kinds: tuple[Kind, ...] = DEFAULT
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    label_selector: str | None = None  # applies to pods: which pods to mirror
    page_size: int = 500
    watch_timeout: int = 300
    inactivity_timeout: float = 75.0
    backoff: Backoff = field(default_factory=Backoff)


def _namespace_filter(names: tuple[str, ...]) -> Callable[[Obj], bool]:
    wanted = set(names)
    return lambda obj: str((obj.get("metadata") or {}).get("name") or "") in wanted


class Syncer:
    """Keeps the simulator in step with the source until ``stop`` is set."""

    def __init__(
        self,
        source: SourceApi,
        target: TargetApi,
        options: SyncOptions | None = None,
        *,
        metrics: Metrics | None = None,
        stop: threading.Event | None = None,
        state: MirrorState | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.source = source
        self.recorder = recorder  # ``--record``: sees every source event before the sink applies it
        self.target = target
        self.options = options or SyncOptions()
        self.metrics = metrics or Metrics()
        self.stop = stop or threading.Event()
        self.queue: queue.Queue[Event] = queue.Queue()
        self.sink = Sink(
            target, metrics=self.metrics, backoff=self.options.backoff, sleep=self._wait, stop=self.stop, state=state
        )
        # What is mirrored: the kinds asked for that both ends serve (known once ``start`` asked discovery).
        self.kinds: tuple[Kind, ...] = ()
        self.watchers: list[Watcher] = []
        self._threads: list[threading.Thread] = []
        # A custom kind's watchers stop on their own event (its CRD deleted in the source) as well as on shutdown.
        self._custom_stops: dict[tuple[str, str], threading.Event] = {}
        self._custom_lock = threading.Lock()
        self._watching = False  # the start-up lists are done: new custom kinds get their own threads
        self._pending_crds: list[Obj] = []  # CRDs seen while the start-up lists ran

    def _emit(self, event: Event) -> None:
        if self.recorder is not None:
            self.recorder.record(event)
        self.queue.put(event)
        if event.kind is CRD and event.type in (ADDED, MODIFIED, DELETED):
            self._follow_crd(event)

    def _follow_crd(self, event: Event) -> None:
        """Start watching the kind of a CRD the source established since the start (after its event is queued, so
        the CRD reaches the simulator first); stop watching the kind of one it deleted."""
        with self._custom_lock:
            if event.type == DELETED:
                for kind in custom_kinds([_established(event.obj)]):
                    stop = self._custom_stops.pop((kind.api_version, kind.name), None)
                    if stop is not None:
                        stop.set()
                        log.info("the source deleted the CRD of %s: no longer watching them", kind.plural)
                return
            if self.stop.is_set():
                return
            if not self._watching:
                # Listed during start-up: its kind may be one found at the start (then it is known by the time
                # ``start`` is done), or one created since, followed once the start-up lists are done.
                self._pending_crds.append(event.obj)
                return
            self._follow_custom_kinds(custom_kinds([event.obj]))

    def _follow_custom_kinds(self, kinds: tuple[Kind, ...]) -> None:
        """Start a watcher per scope of each of ``kinds`` not followed yet (the custom lock is held)."""
        for kind in kinds:
            key = (kind.api_version, kind.name)
            if key in self._custom_stops:
                continue
            stop = threading.Event()
            self._custom_stops[key] = stop
            known = {(k.api_version, k.name) for k in self.kinds}
            if key not in known:
                self.kinds = with_custom_kinds(self.kinds, (kind,))
            self.sink.mirrored_kinds = frozenset(k.name for k in self.kinds)
            if self.recorder is not None:
                self.recorder.kinds = self.sink.mirrored_kinds
            log.info("the source established the CRD of %s (%s): watching them", kind.plural, kind.api_version)
            for watcher in self._watchers((kind,), stop=stop):
                self.watchers.append(watcher)
                self._threads.append(start_thread(watcher))

    def _wait(self, seconds: float) -> None:
        """Sleep that ends early on shutdown."""
        self.stop.wait(seconds)

    def _watchers(self, kinds: tuple[Kind, ...], *, stop: threading.Event | None = None) -> list[Watcher]:
        opts = self.options
        watchers: list[Watcher] = []
        for kind in kinds:
            kind_stop = stop or self.stop
            if kind.custom and stop is None:
                kind_stop = self._custom_stops.setdefault((kind.api_version, kind.name), threading.Event())
            scopes: tuple[str | None, ...] = opts.namespaces if (kind.namespaced and opts.namespaces) else (None,)
            for namespace in scopes:
                watchers.append(
                    Watcher(
                        self.source,
                        kind,
                        self._emit,
                        namespace=namespace,
                        label_selector=opts.label_selector if kind is POD else None,
                        accept=_namespace_filter(opts.namespaces) if (kind is NAMESPACE and opts.namespaces) else None,
                        page_size=opts.page_size,
                        watch_timeout=opts.watch_timeout,
                        inactivity_timeout=opts.inactivity_timeout,
                        backoff=opts.backoff,
                        sleep=self._wait,
                        stop=kind_stop,
                        metrics=self.metrics,
                    )
                )
        return watchers

    def _initial_list(self, watcher: Watcher, held: list[Event]) -> None:
        failures = 0
        while not self.stop.is_set():
            try:
                watcher.relist(held)
                return
            except Gone:
                continue
            except ApiProblem as exc:
                failures += 1
                delay = self.options.backoff.delay(failures)
                self.metrics.count(watcher.kind.name, "reconnected")
                log.warning("cannot list %s in the source (%s); trying again in %.1fs", watcher.scope, exc, delay)
                self.stop.wait(delay)

    def _retry_discovery(self, exc: Unavailable, failures: int) -> bool:
        delay = self.options.backoff.delay(failures)
        log.warning("cannot ask which kinds are served (%s); trying again in %.1fs", exc, delay)
        self.stop.wait(delay)
        return not self.stop.is_set()

    def start(self) -> None:
        """Ask which kinds both ends serve, adopt earlier mirrors, list the source in apply order, then start the
        sink and watcher threads."""
        try:
            kinds = available_kinds(self.source, self.target, self.options.kinds, retry=self._retry_discovery)
            if CRD in kinds:
                found = source_custom_kinds(self.source, page_size=self.options.page_size, retry=self._retry_discovery)
                kinds = with_custom_kinds(kinds, found)
            self.kinds = kinds
        except Unavailable:
            return  # stopped while an end was unreachable
        self.sink.mirrored_kinds = frozenset(k.name for k in self.kinds)
        if self.recorder is not None:
            self.recorder.kinds = self.sink.mirrored_kinds
        self.watchers = self._watchers(self.kinds)
        try:
            adopted = self.sink.seed(self.kinds)
        except Stopped:
            return
        if adopted:
            log.info("found %d objects mirrored by an earlier run", adopted)
        sink = threading.Thread(target=self.sink.run, args=(self.queue,), name="sink", daemon=True)
        sink.start()
        self._threads.append(sink)
        for _kind, scopes in groupby(self.watchers, key=lambda w: w.kind):
            # The pods the source has not scheduled, of every scope, after its scheduled ones (``syncer.ordering``),
            # and before the next kind (a controller after the pods it adopts).
            held: list[Event] = []
            for watcher in scopes:
                self._initial_list(watcher, held)
            for event in held:
                self._emit(event)
        with self._custom_lock:
            for watcher in self.watchers:
                if not self.stop.is_set():
                    self._threads.append(start_thread(watcher))
            self._watching = True
            self._follow_custom_kinds(custom_kinds(self._pending_crds))
            self._pending_crds.clear()
        log.info("syncing %d kinds; watching", len(self.kinds))

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop every loop and wait (briefly) for the threads."""
        self.stop.set()
        with self._custom_lock:
            for stop in self._custom_stops.values():
                stop.set()
        close = getattr(self.source, "close_watches", None)
        if close is not None:
            close()
        for thread in self._threads:
            thread.join(timeout)
        if self.recorder is not None:
            self.recorder.close()

    def run(self) -> None:
        """Start, then block until ``stop`` is set, then shut down."""
        self.start()
        self.stop.wait()
        self.shutdown()


def _established(crd: Obj) -> Obj:
    """A deleted CRD as ``custom_kinds`` takes it: its last state may no longer say Established."""
    status = {**(crd.get("status") or {}), "conditions": [{"type": "Established", "status": "True"}]}
    return {**crd, "status": status}
