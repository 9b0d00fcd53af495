"""Group commit: the store's writes share transactions, and each is acknowledged once durable and visible.

``Committer`` holds the store's objects (the working state), its versions and the open batch. A write is validated and
given its resourceVersion under the lock against the *working* state (every staged change included, so later writes
build on it), then staged into the open batch; a committer thread writes every staged change in one transaction (one
fsync for all concurrent writers) and only then makes the batch *visible*: reads, lists, the watch log, listeners and
wakers, in resourceVersion order. The writer is acknowledged (its call returns) after that. Reads see committed state
only (``view`` and ``committed_entry``: ``_shadow`` keeps the committed version of every key a staged change touched).
If a batch's transaction fails, that batch and every change staged after it (they were computed on top of it) are
dropped: the working state is restored from ``_shadow``, the resourceVersion counter goes back to the last committed
one, and every writer concerned gets ``InternalError``; nothing of them was ever visible. Without a database
(``engine=None``) a write is applied at once.

Another room's rows (the recorded attempts) can ride along: ``write_alongside`` runs a callable in the next batch's
transaction, after the batch's own rows and inside a SAVEPOINT, so the database file has one writer (two writers
on one SQLite file race for its lock, and its busy handler sleeps up to 100 ms without waking when it frees). A
side write that raises is rolled back alone and reported to its owner; the batch's API writes go on.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from sqlalchemy import Connection, Engine

from kss_sim.cluster.errors import InternalError
from kss_sim.cluster.kinds.registry import KINDS
from kss_sim.cluster.kinds.stored import Change, StoredObject
from kss_sim.cluster.storage import repository
from kss_sim.cluster.storage.change_log import ADDED, MODIFIED, ChangeLog

log = logging.getLogger(__name__)


class SideWrite:
    """A write of rows that are not cluster objects, run by the committer in a batch's transaction
    (``Committer.write_alongside``); ``wait()`` for its outcome."""

    __slots__ = ("done", "error", "write")

    def __init__(self, write: Callable[[Connection], None]) -> None:
        self.write = write
        self.done = threading.Event()
        self.error: BaseException | None = None

    def wait(self) -> None:
        """Block until the write is committed; raise what it raised (its own rows rolled back), or the batch's
        error if the whole transaction failed."""
        self.done.wait()
        if self.error is not None:
            raise self.error


class Batch:
    """Changes staged for one transaction; ``done`` is set once they are durable and visible (or failed).

    ``callbacks`` run right after ``done`` is set, in the committer thread with the store lock held; they are
    added and run under that lock, so none is missed or run twice. ``side`` are other rooms' writes that share the
    transaction (``write_alongside``); a batch may hold only those.
    """

    __slots__ = ("callbacks", "changes", "done", "error", "last_rv", "rows", "side")

    def __init__(self, last_rv: int = 0) -> None:
        self.changes: list[Change] = []
        self.rows: list[repository.Change] = []
        self.last_rv = last_rv
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.callbacks: list[Callable[[], None]] = []
        self.side: list[SideWrite] = []

    def finish(self, error: BaseException | None) -> None:
        """Mark the batch durable (``error`` None) or dropped, then run its callbacks (store lock held)."""
        self.error = error
        self.done.set()
        for side in self.side:
            if error is not None and side.error is None:
                side.error = error
            side.done.set()
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("write acknowledgement callback failed")


class PendingWrites:
    """The writes a thread staged inside ``ClusterStore.deferred()``: ``wait()`` for their acknowledgement."""

    def __init__(self, lock: threading.RLock | None = None) -> None:
        self._batches: list[Batch] = []
        self._lock = lock if lock is not None else threading.RLock()

    def _add(self, batch: Batch) -> None:
        if not self._batches or self._batches[-1] is not batch:
            self._batches.append(batch)

    def done(self) -> bool:
        """True when every staged write is durable (or failed): ``wait()`` would not block."""
        return all(b.done.is_set() for b in self._batches)

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once every staged write is durable or dropped: at once if they already are, else
        from the store's committer thread with the store lock held (so it must only hand off, e.g.
        ``loop.call_soon_threadsafe``). Then ``wait()`` returns at once, or raises ``InternalError``.

        This lets an event loop await durability without blocking a thread on ``wait()``.
        """
        with self._lock:
            # Batches finish in order: the last one done means every earlier one is done too.
            if not self._batches or self._batches[-1].done.is_set():
                run_now = True
            else:
                self._batches[-1].callbacks.append(callback)
                run_now = False
        if run_now:
            callback()

    def wait(self) -> None:
        """Block until every staged write is durable; ``InternalError`` if any of them was dropped."""
        for batch in self._batches:
            batch.done.wait()
        for batch in self._batches:
            if batch.error is not None:
                exc = batch.error
                raise InternalError(f"storage error: {exc.__class__.__name__}: {exc}") from exc


_MISSING: Any = object()
# The committer thread ends after this long without work and is started again by the next write.
_COMMITTER_IDLE_SECONDS = 2.0


Objects = dict[str, dict[tuple[str, str], StoredObject]]


class Committer:
    """The store's write path: stage changes, commit them in the background, make them visible.

    ``objects`` is the working state (every staged change applied: what writes build on), ``rv`` the last
    resourceVersion handed out and ``committed_rv`` the last visible one; all three are read and changed with
    ``lock`` held, the lock the store and ``changes`` share.
    """

    def __init__(self, lock: threading.RLock, engine: Engine | None, changes: ChangeLog) -> None:
        self._lock = lock
        self._engine = engine
        self._changes = changes
        self.objects: Objects = {k.kind: {} for k in KINDS}
        self.rv = 0
        self.committed_rv = 0
        # ``_shadow[kind][key]`` is the committed entry (None: absent) of a key with ``_staged[(kind, key)]``
        # changes still staged.
        self._shadow: dict[str, dict[tuple[str, str], StoredObject | None]] = {k.kind: {} for k in KINDS}
        self._staged: dict[tuple[str, tuple[str, str]], int] = {}
        self._open: Batch | None = None
        self._work = threading.Condition(lock)
        self._thread: threading.Thread | None = None
        self._last: Batch | None = None  # the latest batch staged
        self._local = threading.local()

    def reset(self, objects: Objects, resource_version: int) -> None:
        """Hold ``objects`` as committed at ``resource_version`` (lock held, nothing staged): a load."""
        self.objects = objects
        for kind in objects:
            self._shadow.setdefault(kind, {})
        self.rv = self.committed_rv = resource_version

    def counts(self) -> dict[str, int]:
        """The writes staged and not yet committed, and the committed entries kept for them (lock held; a memory
        census's figures)."""
        return {"staged": len(self._staged), "shadowed": sum(len(shadow) for shadow in self._shadow.values())}

    def ensure_bucket(self, kind: str) -> None:
        """Make room for a kind not in the registry (a CRD's, once established; lock held)."""
        if kind not in self.objects:
            self.objects[kind] = {}
            self._shadow[kind] = {}

    def committed_entry(self, kind: str, key: tuple[str, str]) -> StoredObject | None:
        """The committed entry of one key, or None (lock held): what readers may see."""
        shadow = self._shadow[kind]
        if shadow:
            entry = shadow.get(key, _MISSING)
            if entry is not _MISSING:
                result: StoredObject | None = entry
                return result
        return self.objects[kind].get(key)

    def view(self, kind: str) -> Mapping[tuple[str, str], StoredObject]:
        """The committed entries of ``kind`` (lock held): what readers may see."""
        shadow = self._shadow[kind]
        if not shadow:
            return self.objects[kind]
        merged = dict(self.objects[kind])
        for key, entry in shadow.items():
            if entry is None:
                merged.pop(key, None)
            else:
                merged[key] = entry
        return merged

    def stage(self, changes: list[Change]) -> Batch | None:
        """Apply ``changes`` to the working state and stage them for the committer (lock held).

        Returns the batch to ``acknowledge`` outside the lock; without a database the changes are visible at once.
        """
        last_rv = max(c.event_obj.resource_version for c in changes)
        if self._engine is None:
            self.rv = self.committed_rv = last_rv
            for c in changes:
                bucket = self.objects[c.kind]
                if c.new is None:
                    bucket.pop(c.key, None)
                else:
                    bucket[c.key] = c.new
            self._changes.publish(changes)
            return None
        batch = self._open_batch()
        for c in changes:
            bucket = self.objects[c.kind]
            shadow = self._shadow[c.kind]
            if c.key not in shadow:
                shadow[c.key] = bucket.get(c.key)
            staged_key = (c.kind, c.key)
            self._staged[staged_key] = self._staged.get(staged_key, 0) + 1
            if c.new is None:
                bucket.pop(c.key, None)
            else:
                bucket[c.key] = c.new
            source = c.new if c.new is not None else c.old
            assert source is not None
            row = repository.Row(
                uid=source.uid,
                kind=c.kind,
                namespace=c.key[0],
                name=c.key[1],
                resource_version=c.event_obj.resource_version,
                body=source.raw.decode(),
            )
            op = "insert" if c.type == ADDED else ("update" if c.type == MODIFIED else "delete")
            batch.rows.append(repository.Change(op, row))
        batch.changes += changes
        batch.last_rv = last_rv
        self.rv = last_rv
        self._wake_committer()
        return batch

    def _open_batch(self) -> Batch:
        """The batch that staged writes join, opened if there is none (lock held)."""
        batch = self._open
        if batch is None:
            # Until a change joins it, the batch records the version staged so far as the latest.
            batch = self._open = self._last = Batch(self.rv)
        return batch

    def _wake_committer(self) -> None:
        """Start the committer thread, or tell it a batch is open (lock held)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._commit_loop, name="kss-store-committer", daemon=True)
            self._thread.start()
        else:
            self._work.notify()

    def write_alongside(self, write: Callable[[Connection], None]) -> SideWrite | None:
        """Run ``write(conn)`` in the committer's next transaction, after that batch's own rows, inside a SAVEPOINT;
        a batch is started at once if none is open. None without a database: the caller writes on its own.

        For rows that are not cluster objects (they are neither versioned nor published to watches or listeners),
        written to this store's database so that it has one writer. If ``write`` raises, its rows are rolled back
        and the error goes to the returned handle only: the batch's API writes still commit. ``write`` runs in the
        committer thread and must not wait for the store.
        """
        if self._engine is None:
            return None
        side = SideWrite(write)
        with self._lock:
            self._open_batch().side.append(side)
            self._wake_committer()
        return side

    def acknowledge(self, batch: Batch | None) -> None:
        """Return once ``batch`` is durable and visible; ``InternalError`` if it was dropped (lock not held)."""
        if batch is None:
            return
        pending: PendingWrites | None = getattr(self._local, "pending", None)
        if pending is not None:
            pending._add(batch)
            return
        if threading.current_thread() is self._thread:
            # A listener wrote to the store: it cannot wait for its own thread. The change goes out with
            # the next batch; a listener must not write (see add_listener), this only avoids a deadlock.
            log.warning("a cluster listener wrote to the store; its write is not awaited")
            return
        batch.done.wait()
        if batch.error is not None:
            exc = batch.error
            raise InternalError(f"storage error: {exc.__class__.__name__}: {exc}") from exc

    @contextlib.contextmanager
    def deferred(self) -> Iterator[PendingWrites]:
        """Writes of this thread inside the block return once staged (validated, versioned, seen by later
        writes) instead of once durable; ``wait()`` on the yielded object for their acknowledgement.

        What they return is provisional until then: a failed commit drops them (``wait()`` raises
        ``InternalError``). The scheduler uses this to overlap its writes with the next cycle.
        """
        pending = PendingWrites(self._lock)
        outer = getattr(self._local, "pending", None)
        self._local.pending = pending
        try:
            yield pending
        finally:
            self._local.pending = outer
            if outer is not None:
                for batch in pending._batches:
                    outer._add(batch)

    def flush(self) -> None:
        """Block until every write staged so far is durable and visible (or dropped)."""
        with self._lock:
            batch = self._last
        if batch is not None:
            batch.done.wait()  # batches finish in order, so every earlier one has finished too

    def _commit_loop(self) -> None:
        """The committer: one transaction per batch of staged changes, then make them visible."""
        engine = self._engine
        assert engine is not None
        # On SQLite the thread keeps one connection while it runs: checking one out of the pool and back for every
        # batch (events, reset on return) was a fifth of the committer's time at one commit per created pod.
        # PostgreSQL's checkout keeps its pre-ping (a dropped server connection replaced unseen).
        held = _HeldConnection(engine) if engine.dialect.name == "sqlite" else None
        try:
            while True:
                with self._lock:
                    while self._open is None:
                        if not self._work.wait(_COMMITTER_IDLE_SECONDS) and self._open is None:
                            self._thread = None
                            return
                    batch = self._open
                    self._open = None
                error: BaseException | None = None
                try:
                    with held.begin() if held is not None else engine.begin() as conn:
                        # Also when the batch holds side writes only: the statement opens the transaction (pysqlite
                        # begins one before DML only; a SAVEPOINT opened outside one would commit on RELEASE).
                        repository.write_changes(conn, batch.rows, batch.last_rv)
                        for side in batch.side:
                            _run_side_write(conn, side)
                except Exception as exc:  # the database said no: drop the batch and what was built on it
                    log.exception("write-through failed")
                    error = exc
                    if held is not None:
                        held.close()  # the next batch starts on a fresh connection
                with self._lock:
                    if error is None:
                        self._committed(batch)
                        batch.finish(None)
                    else:
                        self._drop(batch, error)
        finally:
            if held is not None:
                held.close()

    def _committed(self, batch: Batch) -> None:
        """``batch`` is durable: make it visible (lock held)."""
        for c in batch.changes:
            staged_key = (c.kind, c.key)
            left = self._staged[staged_key] - 1
            if left:
                self._staged[staged_key] = left
                self._shadow[c.kind][c.key] = c.new  # committed now; later staged changes remain
            else:
                del self._staged[staged_key]
                del self._shadow[c.kind][c.key]
        self.committed_rv = batch.last_rv
        if batch.changes:
            self._changes.publish(batch.changes)

    def _drop(self, failed: Batch, error: BaseException) -> None:
        """``failed`` could not be written: undo it and everything staged after it (lock held)."""
        dropped = [failed]
        if self._open is not None:
            dropped.append(self._open)
            self._open = None
        for kind, shadow in self._shadow.items():
            bucket = self.objects[kind]
            for key, entry in shadow.items():
                if entry is None:
                    bucket.pop(key, None)
                else:
                    bucket[key] = entry
            shadow.clear()
        self._staged.clear()
        # The versions of dropped changes were never visible, so handing them out again keeps the sequence.
        self.rv = self.committed_rv
        for batch in dropped:
            batch.finish(error)


class _HeldConnection:
    """One connection of ``engine`` kept across transactions (opened at the first, again after ``close``)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None

    @contextlib.contextmanager
    def begin(self) -> Iterator[Connection]:
        """A transaction on the held connection: committed when the block ends, rolled back if it raises."""
        if self._conn is None:
            self._conn = self._engine.connect()
        with self._conn.begin():
            yield self._conn

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()
            except Exception:
                log.exception("closing the committer's connection failed")


def _run_side_write(conn: Connection, side: SideWrite) -> None:
    """Run ``side`` in its own SAVEPOINT: what it raises rolls back its rows alone and is kept for its owner."""
    try:
        with conn.begin_nested():
            side.write(conn)
    except Exception as exc:
        log.warning("a write alongside the cluster's failed and was rolled back alone: %s", exc)
        side.error = exc
