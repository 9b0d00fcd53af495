"""Events go after ``--event-ttl``, as kube-apiserver's do.

kube-apiserver stores each Event with an etcd lease of ``--event-ttl`` (default one hour): its Event storage's
``TTLFunc`` answers that TTL on create and on every update, so an Event lives an hour after its last write. When the
lease runs out etcd deletes the key, and a watch on Events reports it as any deletion: DELETED with the Event's
last state, at a new resourceVersion. Without it, the simulator kept every Event (one per binding) forever.

``EventExpiry`` keeps the time each Event is due (its last write, on the store's clock, plus the TTL; for Events
loaded from the database, the newest time the Event itself records) and deletes the due ones through the store, so
the deletion is published, watched and written through like any other. A TTL of 0 keeps Events forever (the etcd
store attaches no lease then).

kss holds Events in memory where kube-apiserver leaves them to etcd, so it also bounds how many it keeps
(``limit``, ``KSS_EVENT_LIMIT``): past it the Events due first go first, as if their TTL had run out.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.kube.times import parse_time

if TYPE_CHECKING:
    from kss_sim.cluster.storage.store import ClusterStore

log = logging.getLogger("kss.cluster")

Key = tuple[str, str]  # (namespace, name)
# Deletions made in one group commit: a burst of Events an hour ago expires together, and one commit per Event
# would wait for a round trip each.
DELETE_BATCH = 500


def last_written(event: dict[str, Any]) -> datetime | None:
    """The newest time an Event records about itself (managedFields entries, lastTimestamp, eventTime, series,
    creationTimestamp): when it was last written, as far as the object tells."""
    meta = event.get("metadata") or {}
    texts: list[Any] = [meta.get("creationTimestamp"), event.get("lastTimestamp"), event.get("eventTime")]
    texts += [(event.get("series") or {}).get("lastObservedTime")]
    texts += [entry.get("time") for entry in meta.get("managedFields") or [] if isinstance(entry, dict)]
    times = [t for t in map(parse_time, texts) if t is not None]
    return max(times) if times else None


class EventExpiry:
    """Deletes each Event ``ttl_seconds`` after its last write (kube-apiserver's ``--event-ttl``)."""

    def __init__(
        self,
        store: ClusterStore,
        ttl_seconds: float,
        *,
        limit: int = 0,
        clock: Callable[[], datetime] | None = None,
        interval: float = 1.0,
    ) -> None:
        """Expiry of ``store``'s Events ``ttl_seconds`` after their last write (0: never), keeping at most
        ``limit`` (0: no limit); the thread looks every ``interval`` seconds."""
        self.store = store
        self.ttl = timedelta(seconds=ttl_seconds)
        self.limit = max(0, limit)
        self.clock = clock or store.clock
        self.interval = interval
        self._lock = threading.Lock()
        self._due: dict[Key, tuple[datetime, str]] = {}  # the latest version of each Event: (due, resourceVersion)
        self._heap: list[tuple[datetime, Key, str]] = []  # may hold superseded entries, skipped when popped
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.ttl > timedelta(0) or self.limit > 0

    def _due_after(self, written: datetime) -> datetime:
        # Without a TTL, Events are only ever due by the limit: oldest write first.
        return written + self.ttl if self.ttl > timedelta(0) else written

    def start(self) -> None:
        """Take the stored Events, follow every Event write, and delete the due ones once a second."""
        if not self.enabled:
            return
        self.store.add_listener(self._on_change, ("Event",), copy=False)
        now = self.clock()
        for entry in self.store.select("Event").items:
            written = last_written(entry.obj) or now
            self._note(entry.obj, self._due_after(min(written, now)))
        self._thread = threading.Thread(target=self._run, name="event-expiry", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self.store.remove_listener(self._on_change)
        self._stop.set()
        self._thread.join(timeout=10)
        self._thread = None

    def pending(self) -> int:
        """Events followed (not yet expired)."""
        with self._lock:
            return len(self._due)

    def _on_change(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        # In the store's committer with its lock held: note the time, nothing more.
        if event_type == "DELETED":
            with self._lock:
                self._due.pop(_key(obj), None)
            return
        self._note(obj, self._due_after(self.clock()))

    def _note(self, obj: dict[str, Any], due: datetime) -> None:
        key = _key(obj)
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            self._due[key] = (due, version)
            heapq.heappush(self._heap, (due, key, version))

    def _take_due(self, now: datetime) -> list[tuple[Key, str]]:
        due: list[tuple[Key, str]] = []
        expires = self.ttl > timedelta(0)
        with self._lock:
            while self._heap and len(due) < DELETE_BATCH:
                over_limit = self.limit and len(self._due) - len(due) > self.limit
                if not over_limit and not (expires and self._heap[0][0] <= now):
                    break
                when, key, version = heapq.heappop(self._heap)
                if self._due.get(key) == (when, version):
                    due.append((key, version))
        return due

    def expire_due(self) -> int:
        """Delete every Event whose time is up (guarded by the resourceVersion noted: an Event written since is
        left to its new time); how many were deleted."""
        deleted = 0
        while True:
            due = self._take_due(self.clock())
            if not due:
                return deleted
            with self.store.deferred() as pending:
                for (namespace, name), version in due:
                    try:
                        self.store.delete("Event", namespace, name, resource_version=version)
                        deleted += 1
                    except (NotFound, Conflict):
                        pass  # gone already, or written again (its new time was noted by the listener)
            pending.wait()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.expire_due()
            except Exception:  # a failed batch is retried: its Events are still due
                log.exception("expiring Events failed")
                self._requeue_failed()

    def _requeue_failed(self) -> None:
        with self._lock:
            self._heap = [(due, key, version) for key, (due, version) in self._due.items()]
            heapq.heapify(self._heap)


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
