"""Events go after ``--event-ttl``, as kube-apiserver's do.

kube-apiserver stores each Event with an etcd lease of ``--event-ttl`` (default one hour): its Event storage's
``TTLFunc`` answers that TTL on create and on every update, so an Event lives an hour after its last write. When the
lease runs out etcd deletes the key, and a watch on Events reports it as any deletion: DELETED with the Event's
last state, at a new resourceVersion. Without it, the simulator kept every Event (one per binding) forever.

``EventExpiry`` queues each Event write in order of its due time (the write's time on the store's clock plus the
TTL; for Events loaded from the database, the newest time the Event itself records), and deletes the due ones
through the store, so the deletion is published, watched and written through like any other. The queue holds only
the Event's namespace and name (the strings its stored entry holds) grouped in buckets of one second, each with the
newest resourceVersion noted in it: an Event found at a newer version when its turn comes was written again, and
waits for its later turn. A record per Event (due time, version, key) cost ~0.35 kB an Event; this ~16 bytes a
write. A TTL of 0 keeps Events forever (the etcd store attaches no lease then).

kss holds Events in memory where kube-apiserver leaves them to etcd, so it also bounds how many it keeps
(``limit``, ``KSS_EVENT_LIMIT``): past it the Events due first go first, as if their TTL had run out.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.kube.times import parse_time

if TYPE_CHECKING:
    from kss_sim.cluster.storage.store import ClusterStore

log = logging.getLogger("kss.cluster")

_SECOND = timedelta(seconds=1)
_LONG_AGO = datetime.min.replace(tzinfo=UTC)  # put back after a failed deletion: due at once
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


class _Bucket:
    """Events noted in one second of due times: how many (their keys are the next ``size`` in the key queues), when
    they are due (the second's end), and the newest resourceVersion noted in it (an Event now at a newer version was
    written again since, and is noted in a later bucket)."""

    __slots__ = ("due", "newest", "size")

    def __init__(self, due: datetime, newest: int, size: int = 1) -> None:
        self.due = due
        self.newest = newest
        self.size = size


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
        # Every write of an Event, in order of due time: its namespace and name (the strings the store's entry
        # holds, so ~16 bytes a write) in two queues, grouped in buckets of one second. A write superseded by a
        # later one stays queued and is skipped when its turn comes (the Event's version is newer than its bucket's).
        self._namespaces: deque[str] = deque()
        self._names: deque[str] = deque()
        self._buckets: deque[_Bucket] = deque()
        self._live = 0  # Events in the store
        # While start() lists the stored Events: the listener's counts (+1 added, -1 deleted) and their versions.
        self._early: list[tuple[int, int]] | None = None
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
        self._early = []
        self.store.add_listener(self._on_change, ("Event",), copy=False)
        now = self.clock()
        listed = self.store.select("Event")
        loaded: list[tuple[datetime, int, str, str]] = []
        for entry in listed.items:
            written = last_written(entry.obj) or now
            loaded.append((self._due_after(min(written, now)), entry.resource_version, entry.namespace, entry.name))
        loaded.sort()
        for due, version, namespace, name in loaded:
            self._note(namespace, name, version, due, added=True)
        with self._lock:
            # What the listener counted before the list (its versions are the list's) is in the list already.
            self._live -= sum(change for change, version in self._early if version <= listed.resource_version)
            self._early = None
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
            return self._live

    def _on_change(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        # In the store's committer with its lock held: note the time, nothing more.
        meta = obj["metadata"]
        version = int(meta["resourceVersion"])
        if self._early is not None:
            with self._lock:
                if self._early is not None:
                    self._early.append((-1 if event_type == "DELETED" else int(event_type == "ADDED"), version))
        if event_type == "DELETED":
            with self._lock:
                self._live -= 1
            return
        due = self._due_after(self.clock())
        self._note(meta.get("namespace") or "", meta["name"], version, due, event_type == "ADDED")

    def _note(self, namespace: str, name: str, version: int, due: datetime, added: bool) -> None:
        # Due at the end of its second: an Event goes at most a second late, and a second's Events share a bucket.
        if due.microsecond:
            due = due.replace(microsecond=0) + _SECOND
        with self._lock:
            self._live += added
            self._namespaces.append(namespace)
            self._names.append(name)
            buckets = self._buckets
            # A due time before the last bucket's (the clock set back) joins that bucket: due a little late.
            if buckets and due <= buckets[-1].due:
                last = buckets[-1]
                last.size += 1
                last.newest = max(last.newest, version)
            else:
                buckets.append(_Bucket(due, version))

    def _take_due(self, now: datetime) -> list[tuple[str, str, int]]:
        """Up to ``DELETE_BATCH`` noted writes now due, by TTL or past the limit: (namespace, name, the newest
        version of their bucket)."""
        due: list[tuple[str, str, int]] = []
        expires = self.ttl > timedelta(0)
        with self._lock:
            buckets = self._buckets
            while buckets and len(due) < DELETE_BATCH:
                first = buckets[0]
                # Superseded writes taken count as deletions here: the next round takes more if they were.
                over_limit = self.limit and self._live - len(due) > self.limit
                if not over_limit and not (expires and first.due <= now):
                    break
                due.append((self._namespaces.popleft(), self._names.popleft(), first.newest))
                first.size -= 1
                if not first.size:
                    buckets.popleft()
        return due

    def _put_back(self, taken: list[tuple[str, str, int]]) -> None:
        """Queue ``taken`` again, first and due now (their deletion failed)."""
        with self._lock:
            for namespace, name, newest in reversed(taken):
                self._namespaces.appendleft(namespace)
                self._names.appendleft(name)
                first = self._buckets[0] if self._buckets else None
                if first is not None and first.due == _LONG_AGO and first.newest == newest:
                    first.size += 1
                else:
                    self._buckets.appendleft(_Bucket(_LONG_AGO, newest))

    def expire_due(self) -> int:
        """Delete every Event whose time is up (an Event written since its noted write is left to its later
        note; the deletion is guarded by the version read, so a write racing it wins); how many were deleted."""
        deleted = 0
        while True:
            taken = self._take_due(self.clock())
            if not taken:
                return deleted
            try:
                with self.store.deferred() as pending:
                    for namespace, name, newest in taken:
                        try:
                            version = self.store.read("Event", namespace, name).resource_version
                            if version > newest:
                                continue  # written again after this note
                            self.store.delete("Event", namespace, name, resource_version=str(version))
                            deleted += 1
                        except (NotFound, Conflict):
                            pass  # gone already, or written again (its new time was noted by the listener)
                pending.wait()
            except Exception:
                self._put_back(taken)  # retried: its Events are still due
                raise

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.expire_due()
            except Exception:  # a failed batch is retried
                log.exception("expiring Events failed")
