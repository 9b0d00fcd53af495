"""A watchdog over users' plugin calls: a call that runs past its timeout is reported and, where Python can,
interrupted, so one runaway plugin cannot stop all scheduling.

kube-scheduler has no such guard (its plugins are reviewed Go, and a stuck one is a bug to fix there). A user's
Python plugin that loops would hold the scheduling thread for good: the API stays up, but no other pod is scheduled
and nothing says which plugin is to blame. ``guard`` runs every call of an out-of-tree plugin's extension methods
through :meth:`PluginWatchdog.call`, which notes (thread, plugin, extension point, pod, deadline) for the watchdog's
thread. Once a call is past its deadline, that thread reports it (a log line, then the listeners: kss serve's
metric and UI banner) and raises :class:`PluginInterrupt` in the calling thread with
``PyThreadState_SetAsyncExc``: it is delivered at the plugin's next bytecode, so a pure-Python loop ends there. A
call blocked in C (a long ``time.sleep``, a socket read) is reported all the same and ends when the C call returns.

Why not ``sys.settrace`` or a thread per call: a trace function slows every line of every plugin, and running the
plugin in another thread would hand it the scheduler's objects from two threads at once. The watchdog costs a lock
and a dict write per call, and its thread sleeps while no call is running.

The interrupt is a ``BaseException`` so that a plugin's own ``except Exception`` cannot swallow it; ``call`` turns it
into :class:`PluginTimeout`, an ordinary exception that the runtime makes the Error status of that extension point.
A plugin that timed out is not run again in the same cycle (``begin_cycle`` forgets it): its later calls fail at
once, so a Filter that loops on every node costs one timeout, not one per node.
"""

from __future__ import annotations

import ctypes
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kss_sim.scheduler.nodeinfo import PodInfo

log = logging.getLogger("kss.scheduler")

DEFAULT_PLUGIN_TIMEOUT = 10.0
# The extension point each guarded method belongs to (kube-scheduler's names, as the metrics and messages use).
EXTENSION_POINTS = {
    "less": "QueueSort",
    "pre_enqueue": "PreEnqueue",
    "pre_filter": "PreFilter",
    "add_pod": "PreFilterExtensions",
    "remove_pod": "PreFilterExtensions",
    "filter": "Filter",
    "filter_nodes": "Filter",
    "post_filter": "PostFilter",
    "pre_score": "PreScore",
    "score": "Score",
    "score_nodes": "Score",
    "score_batch": "Score",
    "normalize_score": "NormalizeScore",
    "normalize_batch": "NormalizeScore",
    "reserve": "Reserve",
    "unreserve": "Reserve",
    "permit": "Permit",
    "pre_bind_pre_flight": "PreBind",
    "pre_bind": "PreBind",
    "bind": "Bind",
    "post_bind": "PostBind",
}


class PluginInterrupt(BaseException):  # a BaseException: plugins' ``except Exception`` does not catch it
    """Raised asynchronously in a thread whose plugin call ran past its deadline (only ``PluginWatchdog.call``
    catches it)."""


class PluginTimeout(Exception):
    """A plugin call ran past the timeout and was interrupted (or had timed out earlier in this cycle)."""


@dataclass(frozen=True, slots=True)
class PluginTimeoutReport:
    """One plugin call past its deadline, as the watchdog reports it."""

    plugin: str
    extension_point: str
    pod: str  # namespace/name, or "" when the call had no pod (none of its arguments is one)
    timeout: float
    thread_id: int
    at: float  # wall-clock time of the report

    def message(self) -> str:
        on = f" on pod {self.pod}" if self.pod else ""
        return (
            f"plugin {self.plugin!r} ran past its {self.timeout:g}s timeout at {self.extension_point}{on} "
            "(KSS_PLUGIN_TIMEOUT)"
        )


class _Call:
    __slots__ = ("deadline", "interrupted", "plugin", "pod", "point", "thread_id")

    def __init__(self, thread_id: int, plugin: str, point: str, pod: str, deadline: float) -> None:
        self.thread_id = thread_id
        self.plugin = plugin
        self.point = point
        self.pod = pod
        self.deadline = deadline
        self.interrupted = False

    def message(self, timeout: float) -> str:
        """The error of the extension point (the same for the calls that follow in the cycle)."""
        return (
            f"plugin {self.plugin!r} ran past its {timeout:g}s timeout at {self.point} and was interrupted "
            "(KSS_PLUGIN_TIMEOUT)"
        )


def _pod_of(args: tuple[Any, ...]) -> str:
    """The pod a plugin call is about: the first PodInfo among its arguments (QueueSort's hold theirs)."""
    for arg in args:
        if isinstance(arg, PodInfo):
            return arg.key
        info = getattr(arg, "pod_info", None)
        if isinstance(info, PodInfo):
            return info.key
    return ""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in the thread at its next bytecode; None clears one raised and not yet delivered."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class PluginWatchdog:
    """Deadlines of the plugin calls running now, one per thread, and the thread that enforces them."""

    def __init__(self, timeout: float = DEFAULT_PLUGIN_TIMEOUT, clock: Callable[[], float] = time.monotonic) -> None:
        # Seconds a call may run; 0 or less turns the watchdog off (calls run unwatched).
        self.timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._calls: dict[int, _Call] = {}  # thread id -> the (outermost) plugin call it runs now
        # thread id -> plugin -> the PluginTimeout message of its timeout in the thread's current cycle
        self._timed_out: dict[int, dict[str, str]] = {}
        self._listeners: list[Callable[[PluginTimeoutReport], None]] = []
        self._thread: threading.Thread | None = None
        # When the watchdog's thread wakes next (inf: when told): a call is told only if its deadline comes sooner,
        # so a run of short calls costs no thread switch each.
        self._wake_at = math.inf

    def add_listener(self, listener: Callable[[PluginTimeoutReport], None]) -> None:
        """Call ``listener(report)`` (from the watchdog's thread) for every call past its deadline."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[PluginTimeoutReport], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def begin_cycle(self) -> None:
        """A new scheduling cycle in this thread: plugins that timed out in the last one run again."""
        if self._timed_out:
            with self._lock:
                self._timed_out.pop(threading.get_ident(), None)

    def call(self, plugin: str, method: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """``fn(*args)``, plugin ``plugin``'s ``method``, interrupted with :class:`PluginTimeout` once past the
        timeout."""
        timeout = self.timeout
        if timeout <= 0:
            return fn(*args)
        thread_id = threading.get_ident()
        point = EXTENSION_POINTS.get(method, method)
        pod = _pod_of(args)
        with self._lock:
            earlier = self._timed_out.get(thread_id, {}).get(plugin)
            if earlier is not None:
                raise PluginTimeout(earlier)
            if thread_id in self._calls:  # a plugin calling a plugin: the outer call's deadline covers both
                call = None
            else:
                call = self._calls[thread_id] = _Call(thread_id, plugin, point, pod, self._clock() + timeout)
                self._start()
                if call.deadline < self._wake_at:
                    self._changed.notify()
        if call is None:
            return fn(*args)
        # The interrupt can arrive anywhere until ``_end`` cleared it: inside the plugin, or in ``_end`` itself.
        try:
            try:
                return fn(*args)
            finally:
                self._end(call)
        except PluginInterrupt:
            self._end(call)
            raise PluginTimeout(call.message(timeout)) from None

    def _end(self, call: _Call) -> None:
        with self._lock:
            if self._calls.get(call.thread_id) is call:
                del self._calls[call.thread_id]
            if call.interrupted:
                # Past the deadline but returned before the interrupt was delivered: take it back, so it does not
                # land in whatever the thread runs next.
                _raise_in(call.thread_id, None)

    def _start(self) -> None:
        """Start the watchdog's thread (with the lock held) unless it runs."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._watch, name="kss-plugin-watchdog", daemon=True)
            self._thread.start()

    def _watch(self) -> None:
        while True:
            with self._lock:
                due = self._wait_for_due()
                for call in due:
                    call.interrupted = True
                    self._timed_out.setdefault(call.thread_id, {})[call.plugin] = call.message(self.timeout)
                    _raise_in(call.thread_id, PluginInterrupt)
                listeners = list(self._listeners)
            for call in due:
                report = PluginTimeoutReport(
                    call.plugin, call.point, call.pod, self.timeout, call.thread_id, time.time()
                )
                log.error("%s: interrupting it", report.message())
                for listener in listeners:
                    try:
                        listener(report)
                    except Exception:  # a listener must not stop the watchdog
                        log.exception("plugin timeout listener failed")

    def _wait_for_due(self) -> list[_Call]:
        """Wait (with the lock held) until some running call is past its deadline; those calls."""
        while True:
            running = [c for c in self._calls.values() if not c.interrupted]
            now = self._clock()
            due = [c for c in running if c.deadline <= now]
            if due:
                return due
            self._wake_at = min(c.deadline for c in running) if running else math.inf
            self._changed.wait(self._wake_at - now if running else None)
            self._wake_at = math.inf


# The process's watchdog: kss serve sets its timeout from KSS_PLUGIN_TIMEOUT and listens for its reports.
WATCHDOG = PluginWatchdog()
