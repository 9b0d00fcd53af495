"""The store's change log: every committed change in resourceVersion order, for watches and listeners.

Watches replay it from a resourceVersion (``since``); it keeps at least ``window`` events, and a version older
than what it still holds answers ``Expired`` (410), as after an etcd compaction. Publishing a batch wakes the
wakers (a bare call each: the watch hub's bridge to its event loops) and hands each listener every change it asked
for: a copy of its own, or (``copy=False``) the store's read-only dict, for listeners that only read.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Protocol

from kss_sim.cluster.errors import Expired
from kss_sim.cluster.kinds.stored import Change
from kss_sim.kube import raw_numbers
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

Listener = Callable[[str, str, Obj], None]

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


# The most recent events keep the decoded dicts they were published with; older ones keep only their JSON and
# decode on demand. Watchers that keep up read the recent ones; without this the log held a dict and the JSON of
# every superseded version (a dict is ~2.5x its JSON: most of the log's memory).
KEEP_DECODED = 1000


class WatchEvent:
    """One committed change, as replayed to watchers.

    ``obj``/``old`` are read-only dicts: the store's own while the event is recent, else decoded from the JSON
    on each access (so hold on to what you read). ``object`` always gives a copy of one's own.
    """

    __slots__ = ("_obj", "_old", "kind", "namespace", "old_raw", "raw", "resource_version", "type")

    def __init__(
        self,
        type: str,
        kind: str,
        resource_version: int,
        namespace: str,
        raw: bytes,
        old_raw: bytes | None,
        obj: Obj | None = None,
        old: Obj | None = None,
    ) -> None:
        """An event of ``raw`` (after the change) and ``old_raw`` (before it; None for ADDED), with their dicts
        when at hand (the store's own, read-only)."""
        self.type = type
        self.kind = kind
        self.resource_version = resource_version
        self.namespace = namespace  # "" for cluster-scoped objects
        self.raw = raw
        self.old_raw = old_raw
        self._obj = obj
        self._old = old

    @property
    def obj(self) -> Obj:
        """The object after the change (for DELETED: its last state); read-only."""
        obj = self._obj
        if obj is None:
            obj = raw_numbers.loads(self.raw)
        return obj

    @property
    def old(self) -> Obj | None:
        """The object before the change (None for ADDED); read-only."""
        old = self._old
        if old is None and self.old_raw is not None:
            old = raw_numbers.loads(self.old_raw)
        return old

    @property
    def object(self) -> Obj:
        """A deep copy of the object after the change (for DELETED: its last state)."""
        result: Obj = raw_numbers.loads(self.raw)
        return result

    def forget_decoded(self) -> None:
        """Keep only the JSON (lock held): ``obj`` and ``old`` decode it from now on."""
        self._obj = None
        self._old = None


class ChangeLog:
    """The committed changes of one store, its listeners and its wakers; guarded by the store's lock."""

    def __init__(self, lock: threading.RLock, window: int) -> None:
        """An empty log keeping at least ``window`` events."""
        self._lock = lock
        self.window = max(1, window)
        self._log: list[WatchEvent] = []
        self._compacted = 0  # events with resourceVersion <= this may no longer be in the log
        self._decoded_from = 0  # events of the log before this index keep only their JSON
        # (callback, kinds or None for all, whether it gets a copy of its own)
        self._listeners: list[tuple[Listener, frozenset[str] | None, bool]] = []
        self._wakers: list[Callable[[], None]] = []

    def counts(self) -> dict[str, int]:
        """The log's length, how many of its events still hold their decoded objects, the listeners and wakers (a
        memory census's figures)."""
        with self._lock:
            return {
                "watch_log": len(self._log),
                "watch_log_decoded": len(self._log) - self._decoded_from,
                "listeners": len(self._listeners),
                "wakers": len(self._wakers),
            }

    def reset(self, resource_version: int) -> None:
        """Drop every event (lock held): the log starts again at ``resource_version``; older ones get 410."""
        self._log = []
        self._compacted = resource_version
        self._decoded_from = 0

    def since(self, resource_version: int) -> list[WatchEvent]:
        """Every change after ``resource_version``, oldest first; ``Expired`` if some were already dropped."""
        with self._lock:
            if resource_version < self._compacted:
                raise Expired(resource_version, self._compacted + 1)
            idx = bisect_right(self._log, resource_version, key=lambda e: e.resource_version)
            return self._log[idx:]

    def publish(self, changes: list[Change]) -> None:
        """Append committed ``changes`` to the watch log and tell wakers and listeners (lock held)."""
        for c in changes:
            new = c.event_obj
            old = c.old
            self._log.append(
                WatchEvent(
                    c.type,
                    c.kind,
                    new.resource_version,
                    c.key[0],
                    new.raw,
                    old.raw if old is not None else None,
                    new.decoded,
                    old.decoded if old is not None else None,
                )
            )
        self._trim_log()
        self._forget_decoded()
        self._notify(changes)

    def _trim_log(self) -> None:
        # Trim in chunks so appends stay O(1) amortised; at least ``window`` events are always kept.
        excess = len(self._log) - self.window
        if excess > max(1, self.window // 10):
            self._compacted = self._log[excess - 1].resource_version
            del self._log[:excess]
            self._decoded_from = max(0, self._decoded_from - excess)

    def _forget_decoded(self) -> None:
        log = self._log
        end = len(log) - KEEP_DECODED
        for i in range(self._decoded_from, end):
            log[i].forget_decoded()
        self._decoded_from = max(self._decoded_from, end)

    def _notify(self, changes: Iterable[Change]) -> None:
        for wake in list(self._wakers):
            try:
                wake()
            except Exception:
                log.exception("watch waker failed")
        if not self._listeners:
            return
        listeners = list(self._listeners)
        for c in changes:
            for listener, kinds, copy in listeners:
                if kinds is not None and c.kind not in kinds:
                    continue
                try:
                    # The store's own dict is never mutated (each version is a new one), so sharing it with a
                    # listener that only reads is safe; a copy is a full decode of the JSON per listener.
                    listener(c.type, c.kind, c.event_obj.copy() if copy else c.event_obj.obj)
                except Exception:
                    log.exception("cluster listener %r failed", listener)

    def add_listener(self, callback: Listener, kinds: Iterable[str] | None = None, *, copy: bool = True) -> None:
        """Call ``callback(event_type, kind, obj)`` after each committed change (of ``kinds`` only, when
        given), in resourceVersion order, with the store lock held, from the thread that made the change
        visible (the committer): keep it quick, never wait there on a thread that uses the store, never
        write to the store from it. ``obj`` is a copy the callback owns; with ``copy=False`` it is the store's
        own read-only dict (as ``read`` returns): never mutate it, nor anything in it."""
        with self._lock:
            self._listeners.append((callback, frozenset(kinds) if kinds is not None else None, copy))

    def remove_listener(self, callback: Listener) -> None:
        """Stop calling ``callback``."""
        with self._lock:
            self._listeners = [entry for entry in self._listeners if entry[0] != callback]

    def add_waker(self, wake: Callable[[], None]) -> None:
        """Call ``wake()`` (no arguments, no copies) after each commit; the watch hub uses this."""
        with self._lock:
            self._wakers.append(wake)

    def remove_waker(self, wake: Callable[[], None]) -> None:
        """Stop calling ``wake``."""
        with self._lock:
            if wake in self._wakers:
                self._wakers.remove(wake)


class Wakeable(Protocol):
    """A store that calls its wakers after each commit (``ClusterStore``, or the web layer's port of it)."""

    def add_waker(self, wake: Callable[[], None]) -> None: ...

    def remove_waker(self, wake: Callable[[], None]) -> None: ...


def wake_on_commit(store: Wakeable) -> tuple[asyncio.Event, Callable[[], None]]:
    """An ``asyncio.Event`` of the running loop that is set after each commit of ``store``, from whichever thread
    made it visible, and the function that stops this (call it when done, in a ``finally``)."""
    loop = asyncio.get_running_loop()
    wakeup = asyncio.Event()
    # A hand-off to the loop is a system call (its self-pipe): none while one is on its way or the event is still
    # set (its waiter reads the store after clearing it, so it sees this commit anyway).
    setting = False

    def set_event() -> None:
        nonlocal setting
        setting = False
        wakeup.set()

    def wake() -> None:
        nonlocal setting
        if setting or wakeup.is_set():
            return
        setting = True
        loop.call_soon_threadsafe(set_event)

    store.add_waker(wake)
    return wakeup, lambda: store.remove_waker(wake)
