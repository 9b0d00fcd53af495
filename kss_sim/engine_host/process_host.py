"""``kss serve``'s scheduler in a process of its own (``KSS_SCHEDULER_PROCESS``): the API process's side.

``SchedulerProcess`` starts the child (``scheduler_process.child_main``, spawned: ``START_METHOD``) and gives
``kss serve`` what it gives the thread host (``SchedulerService``): hold, wait_idle, the configuration, queue
counts, the pages' view.
Per child (``_Link``): a feeder sends the store's committed changes of the watched kinds (their JSON) in
resourceVersion order, after a list of each kind; an applier makes the child's writes on the store, an attempt's
batch staged in one ``deferred()`` block and acknowledged once committed (with the resourceVersion then visible);
attempt rows are inserted through the results service. The store commits everything, as before.

A child that dies (kill -9) is started again and lists the cluster afresh: writes it sent are made and committed
(nothing acknowledged is lost); an attempt whose binding it never sent is simply scheduled again. When the API
process dies, the child reads the end of its pipe and exits.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kss_sim.cluster.errors import Expired, Invalid
from kss_sim.cluster.storage.committer import PendingWrites
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.engine_host.channel import STORE_WRITES, Channel, decode_error, encode_error
from kss_sim.engine_host.scheduler_process import child_main
from kss_sim.engine_host.scheduler_thread import WATCHED_KINDS, load_scheduler_config
from kss_sim.engine_host.view import HostView
from kss_sim.kube.objects import Obj
from kss_sim.results.attempts import ResultsService
from kss_sim.scheduler.kube_scheduler_configuration import (
    ConfigError,
    SchedulerConfig,
    defaulted_document,
    given_document,
)
from kss_sim.scheduler.plugins import reload_plugin_modules
from kss_sim.scheduler.profiles import checked_config, plugins_by_profile
from kss_sim.scheduler.watchdog import PluginTimeoutReport
from kss_sim.web.ports import (
    ConfigRejection,
    DraRequestExplanation,
    DraRequestSummary,
    NodeAllocation,
    PluginTimeoutRow,
    WaitingPodRow,
)

log = logging.getLogger("kss.scheduler")

# Listed objects sent per message when a child starts.
LIST_CHUNK = 1000
# How long the child may take to start (spawn, imports, the cluster's list) before ``start`` gives up waiting.
START_TIMEOUT_SECONDS = 120.0
# An operation across (hold, the pages' view) not answered in this time fails (a child being restarted answers none).
CALL_TIMEOUT_SECONDS = 60.0
VIEW_RETRIES = 2  # a page's read-only question asked again of a restarted child
# How the child starts: "spawn", a fresh interpreter that inherits none of the API process's threads. A process that
# starts many servers (the test suite: an app per test) sets "forkserver": each child is then forked from one
# interpreter that imported the scheduler once, instead of importing it again (~2 s of CPU) for every start.
START_METHOD: Literal["spawn", "forkserver"] = "spawn"


def _child_context() -> multiprocessing.context.SpawnContext | multiprocessing.context.ForkServerContext:
    if START_METHOD == "forkserver":
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([child_main.__module__])
        return context
    return multiprocessing.get_context("spawn")


# What ``_insert_rows`` found behind a message of rows when the queue held nothing more.
_NOTHING = object()


class SchedulerProcessGone(RuntimeError):
    """The child ended while a call was on its way (killed, or restarted to list afresh)."""

    def __init__(self) -> None:
        super().__init__("the scheduler process is gone")


@dataclass
class _Call:
    done: threading.Event = field(default_factory=threading.Event)
    ok: bool = False
    value: Any = None


class _Link:
    """One child process and the threads that serve its pipe."""

    def __init__(self, host: SchedulerProcess) -> None:
        self.host = host
        store = host.store
        ctx = _child_context()
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        self.channel = Channel(parent_conn)
        self.process = ctx.Process(
            target=child_main,
            args=(child_conn, host.settings, host.config_document(), host.holds),
            name="kss-scheduler",
            daemon=True,
        )
        self.process.start()
        child_conn.close()  # the child's end lives in the child only: its death is the pipe's end here
        self.ready = threading.Event()
        self.closed = threading.Event()
        self.said_bye = threading.Event()
        self._calls: dict[int, _Call] = {}
        self._ids = itertools.count(1)
        self._wake = threading.Event()
        self._work: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._acks: queue.SimpleQueue[tuple[int, PendingWrites, dict[str, str]] | None] = queue.SimpleQueue()
        # Acknowledgements of committed batches the feeder sends with the change stream's next message (each group
        # with the resourceVersion visible when it was made): appended by the acker, taken by the feeder.
        self._acked: list[tuple[list[tuple[int, str | None, dict[str, str]]], int]] = []
        self._acked_lock = threading.Lock()
        # Rows to insert; an Event marks a flush (set once what came before it is inserted).
        self._rows: queue.SimpleQueue[list[dict[str, Any]] | threading.Event | None] = queue.SimpleQueue()
        store.add_waker(self._wake.set)
        self._threads = [
            threading.Thread(target=target, name=f"scheduler-link-{name}", daemon=True)
            for name, target in (
                ("receiver", self._receive),
                ("feeder", self._feed),
                ("applier", self._apply),
                ("acker", self._acknowledge),
                ("rows", self._insert_rows),
            )
        ]
        for thread in self._threads:
            thread.start()

    def counts(self) -> dict[str, int]:
        """What waits in this side's queues (a memory census's figures: a child falling behind shows here)."""
        return {
            "link_calls": len(self._calls),
            "link_work": self._work.qsize(),
            "link_acks": self._acks.qsize(),
            "link_rows": self._rows.qsize(),
        }

    # --- in: the change stream ------------------------------------------------------------------
    def _feed(self) -> None:
        store = self.host.store
        kinds = frozenset(WATCHED_KINDS)
        since = store.resource_version
        for kind in WATCHED_KINDS:
            items = store.select(kind).items
            for start in range(0, len(items), LIST_CHUNK):
                chunk = [(e.resource_version, "ADDED", kind, e.raw) for e in items[start : start + LIST_CHUNK]]
                if not self.channel.send(("changes", chunk, 0, [])):
                    return
        self.channel.send(("changes", [], since, []))
        self.channel.send(("synced",))
        while not self.closed.is_set():
            self._wake.wait(timeout=0.5)
            self._wake.clear()
            # Taken before the events: the commit each acknowledges is then among them (or the child parks it until
            # a later message shows its resourceVersion).
            with self._acked_lock:
                acked, self._acked = self._acked, []
            try:
                events = store.events_since(since)
            except Expired:
                # The child fell behind the watch window: it lists afresh, as an informer does after a 410.
                log.warning("the scheduler process fell behind the change log; restarting it")
                self.process.kill()
                return
            if not events and not acked:
                continue
            if events:
                since = events[-1].resource_version
            changes = [(e.resource_version, e.type, e.kind, e.raw) for e in events if e.kind in kinds]
            if not self.channel.send(("changes", changes, since, acked)):
                return

    # --- out: the writes ------------------------------------------------------------------------
    def _receive(self) -> None:
        while True:
            try:
                message = self.channel.recv()
            except (EOFError, OSError):
                break
            kind = message[0]
            if kind in ("writes", "request"):
                self._work.put(message)
            elif kind == "rows":
                if message[1]:
                    self._rows.put(message[1])
                for parts, runs in message[2]:  # the metrics of the attempts concluded since the last message
                    self.host.observed(*parts)
                    if self.host.on_plugin is not None:
                        for run in runs:
                            self.host.on_plugin(*run)
            elif kind == "answer":
                call = self._calls.pop(message[1], None)
                if call is not None:
                    call.ok, call.value = message[2], message[3]
                    call.done.set()
            elif kind == "plugin_timeout" and self.host.on_plugin_timeout is not None:
                self.host.on_plugin_timeout(message[1])
            elif kind == "shadow" and self.host.on_shadow is not None:
                self.host.on_shadow(message[1])
            elif kind == "ready":
                self.ready.set()
            elif kind == "bye":
                self.said_bye.set()
        self.closed.set()
        self.host.store.remove_waker(self._wake.set)
        self._wake.set()
        for call in list(self._calls.values()):
            call.done.set()  # not ok: the child is gone
        self._work.put(None)
        self._rows.put(None)
        self.channel.close()
        self.host.link_closed(self)

    def _apply(self) -> None:
        store = self.host.store
        while (message := self._work.get()) is not None:
            if message[0] == "writes":
                for batch_id, ops in message[1]:  # each attempt's batch staged, and acknowledged, as its own
                    refusals: dict[str, str] = {}
                    with store.deferred() as pending:
                        for method, args, kwargs in ops:
                            if method == "create_event" and _scheduled_event_of(args, refusals):
                                continue  # the binding it reports was refused: the child concludes a failed cycle
                            refused = _write(store, method, args, kwargs)
                            if refused is not None:
                                refusals[f"{args[0]}/{args[1]}"] = refused
                    self._acks.put((batch_id, pending, refusals))
                continue
            _, request_id, method, args, kwargs = message
            try:
                if method not in STORE_WRITES:
                    raise ValueError(f"not a scheduler write: {method}")
                value = getattr(store, method)(*args, **kwargs)
                if method == "select":
                    value = [entry.raw for entry in value.items]
                answer: tuple[Any, ...] = ("answer", request_id, True, value, store.resource_version)
            except Exception as exc:
                # The refusal may come of another writer's change staged but not yet committed (the PV controller's
                # PV: AlreadyExists): once committed, the resourceVersion answered covers it, so the child's read
                # after the refusal finds what caused it, as a read of the store would.
                store.flush()
                answer = ("answer", request_id, False, encode_error(exc), store.resource_version)
            self.channel.send(answer)
        self._acks.put(None)

    def _acknowledge(self) -> None:
        store = self.host.store
        item = self._acks.get()
        while item is not None:
            # The first batch's commit is waited for; the batches behind it already committed (the committer
            # commits them together) go in the same message: one message, one wake-up of the child, not one each.
            acks = [_outcome(*item)]
            behind: tuple[int, PendingWrites, dict[str, str]] | None = None
            ended = False
            while True:
                try:
                    behind = self._acks.get_nowait()
                except queue.Empty:
                    behind = None
                    break
                if behind is None:
                    ended = True
                    break
                if not behind[1].done():
                    break
                acks.append(_outcome(*behind))
                behind = None
            # Sent by the feeder with the changes of the commit that made them durable (woken by it anyway): one
            # message, one wake-up of the child, where the acknowledgement and the changes went apart.
            with self._acked_lock:
                self._acked.append((acks, store.resource_version))
            self._wake.set()
            item = None if ended else behind if behind is not None else self._acks.get()

    def _insert_rows(self) -> None:
        results = self.host.results
        while (item := self._rows.get()) is not None:
            if isinstance(item, threading.Event):
                item.set()
                continue
            # Every message of rows already here goes in one insert: the child sends its rows as soon as they are
            # encoded, often one attempt a message, and each insert is a session and a savepoint in the store's
            # commit (a third of the committer's time when each went alone).
            rows = list(item)
            behind: object = _NOTHING
            while True:
                try:
                    behind = self._rows.get_nowait()
                except queue.Empty:
                    behind = _NOTHING
                    break
                if not isinstance(behind, list):
                    break  # a flush or the end: after these rows are inserted
                rows += behind
            if results is not None:
                try:
                    results.number_rows(rows)
                    results.commit_rows(rows)
                except Exception:
                    log.exception("recording %d attempts failed", len(rows))
            if behind is None:
                return
            if isinstance(behind, threading.Event):
                behind.set()

    # --- across: the operations -----------------------------------------------------------------
    def call(self, op: str, *args: Any, timeout: float = CALL_TIMEOUT_SECONDS) -> Any:
        call_id = next(self._ids)
        call = self._calls[call_id] = _Call()
        if not self.channel.send(("call", call_id, op, args)):
            raise SchedulerProcessGone()
        if not call.done.wait(timeout):
            self._calls.pop(call_id, None)
            raise TimeoutError(f"the scheduler process did not answer {op}")
        if not call.ok:
            raise decode_error(call.value) if call.value is not None else SchedulerProcessGone()
        return call.value

    def rows_inserted(self, timeout: float = 30.0) -> None:
        """Block until the rows received so far are inserted."""
        inserted = threading.Event()
        self._rows.put(inserted)
        inserted.wait(timeout)

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until every write the child sent is made and committed (its pipe has ended)."""
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the child to stop (its last rows and writes are made), wait for it, then for the threads."""
        self.channel.send(("stop",))
        self.said_bye.wait(timeout)
        self.closed.wait(timeout)
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.closed.wait(5)
        for thread in self._threads:
            thread.join(timeout)


def _outcome(batch_id: int, pending: PendingWrites, refusals: dict[str, str]) -> tuple[int, str | None, dict[str, str]]:
    """A batch's acknowledgement once committed: its id, the commit's error, the bindings the store refused."""
    error = None
    try:
        pending.wait()
    except Exception as exc:
        error = f"the commit failed: {exc}"
    return batch_id, error, refusals


def _scheduled_event_of(args: tuple[Any, ...], refusals: dict[str, str]) -> bool:
    """Whether a staged ``create_event`` is the Scheduled event of a pod whose binding was refused."""
    if not refusals or len(args) < 2 or args[1] != "Scheduled" or not isinstance(args[0], dict):
        return False
    meta = args[0].get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" in refusals


def _write(store: ClusterStore, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """One staged write of an attempt's batch; the refusal of a binding (the attempt's outcome, as the thread host's
    ``StoreActions.write_binding`` gives it) as text, other writes' errors logged as the thread host logs them."""
    if method not in STORE_WRITES:
        log.error("not a scheduler write: %s", method)
        return None
    write: Callable[..., Any] = getattr(store, method)
    try:
        try:
            write(*args, **kwargs)
        except Invalid:
            if method not in ("bind_pod", "update_pod_status") or kwargs.get("annotations") is None:
                raise
            # As the thread host: the result annotations refused, the binding or status is written without them.
            log.exception("annotating %s/%s failed; writing without the result annotations", args[0], args[1])
            write(*args, **{k: v for k, v in kwargs.items() if k != "annotations"})
    except Exception as exc:
        if method == "bind_pod":
            return str(exc)
        log.exception("the scheduler's %s failed", method)
    return None


class SchedulerProcess:
    """The scheduler in a child process, driven from ``kss serve``'s lifespan (what ``SchedulerService`` offers the
    API process: the configuration, hold, wait_idle, queue counts)."""

    def __init__(
        self,
        store: ClusterStore,
        settings: Settings,
        *,
        results: ResultsService | None = None,
        on_attempt: Callable[[str, str, float, tuple[str, float] | None, bool, int], None] | None = None,
        on_shadow: Callable[[bool], None] | None = None,
        on_plugin: Callable[[str, str, str, float], None] | None = None,
        on_plugin_timeout: Callable[[PluginTimeoutReport], None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.results = results
        self.on_attempt = on_attempt
        self.on_shadow = on_shadow
        self.on_plugin = on_plugin
        self.on_plugin_timeout = on_plugin_timeout
        self.on_config_change: Callable[[dict[str, Any]], None] | None = None
        self.feature_gates = settings.effective_feature_gates
        self.kube_version = settings.version
        self.config = load_scheduler_config(settings)
        self.holds = 0
        self._link: _Link | None = None
        self._lock = threading.Lock()
        self._stopping = False
        self.restarts = 0
        self.queue = _RemoteQueue(self)

    def memory_counts(self) -> dict[str, int]:
        """What waits in the link to the child (``_Link.counts``; empty without one): for a memory census."""
        link = self._link
        return link.counts() if link is not None else {}

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the child and wait until it schedules."""
        with self._lock:
            link = self._link = _Link(self)
        if not link.ready.wait(START_TIMEOUT_SECONDS):
            log.error("the scheduler process did not start within %.0f s", START_TIMEOUT_SECONDS)

    def observe(self) -> None:
        """``KSS_SCHEDULER_ENABLED=false``: the child records other schedulers' bindings (the settings say so)."""
        self.start()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            link = self._link
        if link is not None:
            link.stop()

    def link_closed(self, link: _Link) -> None:
        """A child's pipe ended: unless stopping, start another (it lists the cluster afresh)."""
        with self._lock:
            if self._stopping or link is not self._link:
                return
            link.process.join(5)
            log.error("the scheduler process ended (exit code %s); starting it again", link.process.exitcode)
            # The writes it sent are made first, so the next child lists them and does not bind a pod twice.
            link.drain()
            self.restarts += 1
            self._link = _Link(self)

    def observed(self, *attempt: Any) -> None:
        if self.on_attempt is not None:
            self.on_attempt(*attempt)

    def _current(self) -> _Link:
        link = self._link
        deadline = time.monotonic() + CALL_TIMEOUT_SECONDS
        while link is None or not link.ready.is_set() or link.closed.is_set():
            if time.monotonic() > deadline:
                raise TimeoutError("the scheduler process is not running")
            time.sleep(0.01)
            link = self._link
        return link

    def call(self, op: str, *args: Any, timeout: float = CALL_TIMEOUT_SECONDS) -> Any:
        return self._current().call(op, *args, timeout=timeout)

    # --- operations -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Start no scheduling cycle inside the block; on leaving, the child first takes in what was written."""
        with self._lock:
            self.holds += 1
        self.call("hold")
        try:
            yield
        finally:
            with self._lock:
                self.holds -= 1
            try:
                self.call("release", self.store.resource_version)
            except (RuntimeError, TimeoutError):
                # The child died meanwhile: the one started in its place takes the remaining holds at start.
                log.warning("the scheduler process could not be released; it is being restarted")

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until the child has taken in every committed change and has nothing to schedule."""
        try:
            return bool(self.call("wait_idle", self.store.resource_version, timeout, timeout=timeout + 5))
        except TimeoutError:
            return False

    def flush_rows(self) -> None:
        """Block until the attempts the child made so far are recorded (``ResultsService.flush``: a read of the
        results sees every attempt made before it, as with the thread host)."""
        link = self._link
        if link is None or not link.ready.is_set() or link.closed.is_set():
            return
        try:
            link.call("flush_rows")
        except (RuntimeError, TimeoutError):
            return
        link.rows_inserted()

    def results_cleared(self) -> None:
        """Nothing to do: the results service here numbers the child's attempts, its counters cleared with them."""

    # --- configuration (validated here, as the thread host does; the child takes it up between cycles) ----------
    def update_config(self, source: str | dict[str, Any]) -> SchedulerConfig:
        config = self.check_config(source)
        if self._link is not None:  # else the child is given it when it starts
            self.call("config", config.raw)
        self.config = config
        if self.on_config_change is not None:
            self.on_config_change(self.config_document())
        return config

    def reload_plugin_modules(self) -> None:
        """The plugin modules again here (the configuration check's registry) and in the child (the loop's), so both
        run the edited files."""
        reload_plugin_modules()
        if self._link is not None:  # else the child imports them when it starts
            self.call("reload_plugins")

    def check_config(self, source: str | dict[str, Any]) -> SchedulerConfig:
        """Parse and validate a KubeSchedulerConfiguration without applying it; ``ConfigError`` names the field."""
        return checked_config(source, self.feature_gates, self.kube_version)

    def config_document(self) -> dict[str, Any]:
        """The running configuration as the user gave it (defaults not expanded)."""
        return given_document(self.config)

    def defaulted_config_document(self) -> dict[str, Any]:
        return defaulted_document(self.config)

    def plugins_in_effect(self) -> list[tuple[str, list[tuple[str, list[tuple[str, int | None]]]]]]:
        """Per profile (scheduler name): each extension point's plugins in the order they run, with weights."""
        return plugins_by_profile(self.config)

    @property
    def waiting_pods(self) -> Sequence[None]:
        """As many entries as pods waiting in Permit (the metrics' gauge counts them)."""
        return [None] * int(self.call("waiting_count"))


class _RemoteQueue:
    """``scheduler.queue.pending_counts()`` for the metrics and the pages."""

    def __init__(self, host: SchedulerProcess) -> None:
        self._host = host

    def pending_counts(self) -> dict[str, int]:
        counts: dict[str, int] = self._host.call("pending_counts")
        return counts


class ProcessView(HostView):
    """The pages' ``SchedulerView`` of a scheduler process: what needs its cache or queue asked across, the rest
    computed here as ``EngineView`` does."""

    def __init__(self, host: SchedulerProcess) -> None:
        super().__init__(host)
        self._process = host

    def _ask(self, name: str, *args: Any) -> Any:
        # A page's question only reads, so it is asked again of the next child when the one asked ended
        # meanwhile (restarted after falling behind the change log, or killed): a page never fails for that.
        for _ in range(VIEW_RETRIES):
            try:
                return self._process.call("view", name, args)
            except SchedulerProcessGone:
                continue
        return self._process.call("view", name, args)

    def node_allocations(self) -> dict[str, NodeAllocation]:
        allocations: dict[str, NodeAllocation] = self._ask("node_allocations")
        return allocations

    def node_pods(self, name: str) -> list[str]:
        pods: list[str] = self._ask("node_pods", name)
        return pods

    def waiting_pods(self) -> list[WaitingPodRow]:
        rows: list[WaitingPodRow] = self._ask("waiting_pods")
        return rows

    def plugin_timeouts(self) -> list[PluginTimeoutRow]:
        rows: list[PluginTimeoutRow] = self._ask("plugin_timeouts")
        return rows

    def explain_dra(self, pod: Obj, nodes: Sequence[str]) -> dict[str, list[DraRequestExplanation]]:
        explained: dict[str, list[DraRequestExplanation]] = self._ask("explain_dra", pod, list(nodes))
        return explained

    def summarize_dra(self, pod: Obj) -> list[DraRequestSummary]:
        summary: list[DraRequestSummary] = self._ask("summarize_dra", pod)
        return summary

    def apply_config(self, text: str) -> ConfigRejection | None:
        try:
            self._process.update_config(text)
        except ConfigError as exc:
            return ConfigRejection(exc.field, exc.detail)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            return ConfigRejection("<document>", f"{type(exc).__name__}: {exc}")
        return None
