"""The running syncer: one watcher per kind (and namespace), one ordered queue, one sink.

Start-up first asks both ends which optional kinds they serve (``discovery``), then lists the kinds one after
the other in apply order (namespaces first, pods last), so the simulator receives the existing cluster in an
order it can take (the pods the source has not scheduled after every pod it has: ``syncer.ordering``); then every
watcher follows its kind on its own thread, all feeding the same FIFO queue that the sink drains.
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
from syncer.kinds import CRD, DEFAULT, NAMESPACE, POD, Kind, with_custom_kinds
from syncer.kube import ApiProblem, Gone, SourceApi, TargetApi, Unavailable
from syncer.metrics import Metrics
from syncer.objects import Obj
from syncer.recording import Recorder
from syncer.sink import Event, Sink, Stopped
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

    def _emit(self, event: Event) -> None:
        if self.recorder is not None:
            self.recorder.record(event)
        self.queue.put(event)

    def _wait(self, seconds: float) -> None:
        """Sleep that ends early on shutdown."""
        self.stop.wait(seconds)

    def _watchers(self, kinds: tuple[Kind, ...]) -> list[Watcher]:
        opts = self.options
        watchers: list[Watcher] = []
        for kind in kinds:
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
                        stop=self.stop,
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
        for watcher in self.watchers:
            if not self.stop.is_set():
                self._threads.append(start_thread(watcher))
        log.info("syncing %d kinds; watching", len(self.kinds))

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop every loop and wait (briefly) for the threads."""
        self.stop.set()
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
