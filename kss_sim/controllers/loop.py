"""What every controller in ``app/controllers/`` shares: controller-runtime's shape over the store.

A controller watches some kinds. The store calls its listener in the committer thread with the store lock held, so
the listener only notes the change; the controller's own thread turns notes into keys to reconcile
(``observe``), keeps a queue in which a key waits once however many changes name it, and reconciles one key at a
time (``reconcile``). ``resync`` queues every key at start, so a restart picks up where the cluster is (a
reconcile is idempotent: it compares the world with what it wants and writes only the difference). A reconcile
that raises is retried with exponential backoff (controller-runtime's rate-limited queue; a conflict or an object
gone before the write is a normal race, logged without a traceback); one that asks to be looked at again later
(``requeue_at``: a CronJob's next schedule, a pod's end of run) is, on the controller's clock.

Controllers write through the store's verbs (create, patch with a resourceVersion, delete) as any client does;
they never write from the listener. They see the store through ``ClusterPort`` (``cluster_port.py``) only.

Two ways to run a loop: ``start`` gives it a worker thread (``kss serve``, on the wall clock); ``attach`` subscribes
it without one, for a host that owns the clock (a replay on its virtual clock) and calls ``drain`` at each instant
and again at ``next_due``. The reconcile, its retries and its timers are the same code either way; in the attached
mode a retry's backoff is counted on the loop's clock, as a timer, since no wall time passes between two drains.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Generic, TypeVar

from kss_sim.cluster.errors import Conflict, NamespaceTerminating, NotFound
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """Wall time, UTC: the clock of ``kss serve``'s controllers."""
    return datetime.now(UTC)


# The most changes a controller's inbox holds. Its worker drains the inbox before each reconcile, so it grows only
# while the worker gets no time (a loaded machine); each change keeps the store's dict of that version alive, and the
# inbox lives in the API process. Past the limit the inbox is dropped and the worker lists again (``resync``), as
# kube-apiserver ends a watcher that falls behind and its informer lists again: what it missed is in the listing.
INBOX_LIMIT = 10_000


class ReconcileLoop(Generic[K]):
    """One controller's queue and worker thread; subclasses say what they watch and how they reconcile."""

    name = "controller"
    watched_kinds: tuple[str, ...] | None = ()  # None: every kind
    inbox_limit = INBOX_LIMIT

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        retry_base_seconds: float = 0.005,
        retry_max_seconds: float = 60.0,
    ) -> None:
        """A stopped controller over ``store``; ``clock`` tells the time of timestamps and timers (``requeue_at``),
        ``retry_*`` the backoff of a failed reconcile (doubling from base to max)."""
        self.store = store
        self.clock = clock
        self._retry_base = retry_base_seconds
        self._retry_max = retry_max_seconds
        self._inbox: deque[tuple[str, str, Obj]] = deque()
        self._relist = False  # the inbox overflowed: list again before taking in what follows
        self.relists = 0  # how many times it did
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread: threading.Thread | None = None
        self._attached = False  # subscribed without a thread: the host drains (``attach``)
        # The worker's own state (its thread only).
        self._ready: dict[K, None] = {}  # keys to reconcile, in order, each once
        self._retry_at: dict[K, float] = {}  # monotonic time of a failed key's retry
        self._timers: dict[K, datetime] = {}  # clock time a key asked to be reconciled again
        self._failures: dict[K, int] = {}

    # --- what subclasses define ----------------------------------------------------------------------------
    def observe(self, event_type: str, kind: str, obj: Obj) -> Iterable[K]:
        """The keys one committed change concerns (worker thread; may update the subclass's indexes)."""
        raise NotImplementedError

    def resync(self) -> Iterable[K]:
        """Every key to reconcile at start (worker thread; rebuilds the subclass's indexes from the store)."""
        raise NotImplementedError

    def reconcile(self, key: K) -> None:
        """Make the world match what ``key``'s object asks for (idempotent); raise to be retried with backoff."""
        raise NotImplementedError

    def reset(self) -> None:
        """Forget the subclass's indexes before a (re)start; ``resync`` rebuilds them."""

    # --- what subclasses call -----------------------------------------------------------------------------
    def requeue_at(self, key: K, when: datetime) -> None:
        """Reconcile ``key`` again once the clock reaches ``when`` (the earliest request wins). Worker thread."""
        current = self._timers.get(key)
        if current is None or when < current:
            self._timers[key] = when

    def now(self) -> datetime:
        """The controller's clock."""
        return self.clock()

    def timestamp(self) -> str:
        """The clock as an RFC 3339 timestamp, as the API writes them."""
        return self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # --- lifecycle ----------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether the worker runs."""
        return self._thread is not None

    def start(self) -> None:
        """Subscribe to the watched kinds and start the worker, which first reconciles every key."""
        if self._thread is not None or self._attached:
            return
        self._stop.clear()
        self._subscribe()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Unsubscribe and stop the worker (a reconcile under way finishes first); an attached loop is detached."""
        self.store.remove_listener(self._on_change)
        self._attached = False
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def attach(self) -> None:
        """Subscribe to the watched kinds without a worker thread and queue every key (``resync``): the caller
        drives the loop from then on (``drain``, ``next_due``), on the loop's clock."""
        if self._thread is not None or self._attached:
            return
        self._subscribe()
        self._attached = True
        self._resync()

    def detach(self) -> None:
        """Unsubscribe an attached loop (what it has queued is forgotten)."""
        if self._attached:
            self.store.remove_listener(self._on_change)
            self._attached = False

    def drain(self) -> int:
        """Reconcile, in the calling thread, every key the changes noted so far concern and every key due by the
        clock, until none is left (a reconcile's own writes may queue more); returns how many reconciles ran. A
        reconcile that raises is retried after its backoff on the clock (see ``next_due``)."""
        reconciled = 0
        while True:
            self._drain()
            key = self._next_ready()
            if key is None:
                return reconciled
            reconciled += 1
            delay = self._reconcile_once(key)
            if delay is not None:
                self.requeue_at(key, self.clock() + timedelta(seconds=delay))

    def has_work(self) -> bool:
        """Whether a change is noted, a key queued or a timer due by the clock, not yet reconciled."""
        if self._inbox or self._ready or self._relist:
            return True
        return bool(self._timers) and min(self._timers.values()) <= self.clock()

    def next_due(self, *, retries: bool = True) -> datetime | None:
        """The clock time of the earliest timer (``requeue_at``, or an attached loop's retry), or None;
        ``retries=False`` leaves out the keys whose last reconcile failed (a host may let a run end on those)."""
        due = [at for key, at in self._timers.items() if retries or key not in self._failures]
        return min(due) if due else None

    def backlog(self) -> dict[str, int]:
        """What waits: changes not yet observed, keys ready, failed keys waiting for their retry, timers (read
        from any thread without the worker's lock: sizes only, for a memory census)."""
        return {
            "inbox": len(self._inbox),
            "ready": len(self._ready),
            "retrying": len(self._retry_at),
            "timers": len(self._timers),
        }

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every change seen so far is reconciled (timers aside); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_idle():
                return True
            time.sleep(0.005)
        return False

    def is_idle(self) -> bool:
        """Whether everything seen so far is reconciled (timers aside), now."""
        return self._idle.is_set() and not self._inbox

    def poke(self) -> None:
        """Wake the worker to look at its timers again (after the clock moved)."""
        self._idle.clear()
        self._wake.set()

    # --- internals ----------------------------------------------------------------------------------------
    def _subscribe(self) -> None:
        self._idle.clear()
        self._inbox.clear()  # a restart begins from the store as it is now
        self._relist = False
        self._ready.clear()
        self._retry_at.clear()
        self._timers.clear()
        self._failures.clear()
        self.reset()
        # Controllers only read what they are told (``observe`` indexes keys and owners; ``reconcile`` reads the
        # store again), so they share the store's read-only dicts instead of decoding a copy each.
        self.store.add_listener(self._on_change, self.watched_kinds, copy=False)

    def _resync(self) -> None:
        try:
            for initial in self.resync():
                self._enqueue(initial)
        except Exception:  # the queue still fills from changes
            log.exception("%s: initial listing failed", self.name)

    def _on_change(self, event_type: str, kind: str, obj: Obj) -> None:
        # The committer thread, store lock held: note the change (``obj`` is the store's read-only dict) and wake
        # the worker. ``Event.set``/``clear`` take the event's lock even when nothing changes; with a dozen
        # controllers and every change, checking first saves most of them (the worker clears ``_wake`` before it
        # drains the inbox, so a change appended before this check is seen whichever way the check goes).
        if len(self._inbox) >= self.inbox_limit:
            self._inbox.clear()
            self._relist = True
        self._inbox.append((event_type, kind, obj))
        if self._idle.is_set():
            self._idle.clear()
        if not self._wake.is_set():
            self._wake.set()

    def _enqueue(self, key: K) -> None:
        self._retry_at.pop(key, None)
        self._ready[key] = None

    def _drain(self) -> None:
        while True:
            if self._relist:
                self._list_again()
            try:
                event_type, kind, obj = self._inbox.popleft()
            except IndexError:  # empty (the committer may have just dropped it)
                return
            try:
                keys = list(self.observe(event_type, kind, obj))
            except Exception:
                log.exception("%s: could not take in a %s change", self.name, kind)
                continue
            for key in keys:
                self._enqueue(key)

    def _list_again(self) -> None:
        # As at start: the listing may already hold some of the changes noted after the overflow, which are then
        # taken in again, in order (``observe``'s indexes end at the latest; a reconcile is idempotent).
        self._relist = False
        self.relists += 1
        log.warning("%s: more than %d changes behind, listing again", self.name, self.inbox_limit)
        self.reset()
        self._resync()

    def _next_ready(self) -> K | None:
        mono = time.monotonic()
        for key in [k for k, at in self._retry_at.items() if at <= mono]:
            del self._retry_at[key]
            self._ready[key] = None
        if self._timers:
            now = self.clock()
            for key in [k for k, at in self._timers.items() if at <= now]:
                del self._timers[key]
                self._ready[key] = None
        if not self._ready:
            return None
        key = next(iter(self._ready))
        del self._ready[key]
        return key

    def _sleep_for(self) -> float | None:
        waits: list[float] = []
        if self._retry_at:
            waits.append(min(self._retry_at.values()) - time.monotonic())
        if self._timers:
            waits.append((min(self._timers.values()) - self.clock()).total_seconds())
        # Timers follow a clock that may be moved: look again at least every second.
        return max(0.0, min(min(waits), 1.0 if self._timers else min(waits))) if waits else None

    def _reconcile_once(self, key: K) -> float | None:
        """Reconcile ``key``; the backoff in seconds before its retry when the reconcile raised, else None."""
        try:
            self.reconcile(key)
        except Exception as exc:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
            delay: float = min(self._retry_base * 2 ** min(failures - 1, 32), self._retry_max)
            if isinstance(exc, Conflict):
                log.info("%s %s: conflict, retried in %.3fs", self.name, key, delay)
            elif isinstance(exc, (NotFound, NamespaceTerminating)):
                # An object gone between the read and the write (a delete with --cascade=orphan, a pod
                # evicted), or a create refused in a namespace being deleted: a normal race, which the retry's
                # fresh read settles.
                log.debug("%s %s: %s, retried in %.3fs", self.name, key, exc, delay)
            else:
                log.exception("%s %s: reconcile failed, retried in %.3fs", self.name, key, delay)
            return delay
        self._failures.pop(key, None)
        return None

    def _run(self) -> None:
        self._resync()
        while not self._stop.is_set():
            self._wake.clear()
            self._idle.clear()
            self._drain()
            key: K | None = self._next_ready()
            if key is None:
                if not self._retry_at:
                    self._idle.set()
                self._wake.wait(self._sleep_for())
                continue
            delay = self._reconcile_once(key)
            if delay is not None:
                self._retry_at[key] = time.monotonic() + delay
