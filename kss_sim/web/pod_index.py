"""Every pod as a list row, cached by resourceVersion and kept up to date from the store's change log.

The pod list, the cluster page and the node pages stay fast at 50,000 pods because a rebuild after one change
re-reads one pod.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass, field

from kss_sim.cluster.errors import ApiError
from kss_sim.kube.objects import Obj
from kss_sim.web.ports import ResourceAmounts, Store

# What a pod adds to its node's requested resources (``SchedulerView.pod_requests``).
RequestsOf = Callable[[Obj], ResourceAmounts]


@dataclass(slots=True)
class PodRow:
    """What the pod list shows of one pod (derived once per resourceVersion)."""

    namespace: str
    name: str
    phase: str
    node: str
    priority: int
    reason: str
    nominated: str
    created: str
    scheduler: str
    terminal: bool
    terminating: bool  # deleted gracefully: it keeps its node until its grace period is over
    labels: dict[str, str]
    resource_version: str
    obj: Obj  # the store's own dict: read-only
    requests_of: RequestsOf = field(repr=False, compare=False)
    _requests: ResourceAmounts | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def bound(self) -> bool:
        """Assigned to a node."""
        return bool(self.node)

    @property
    def requests(self) -> ResourceAmounts:
        """What the pod adds to its node's requested resources (``PodInfo.CalculateResource``), computed once."""
        if self._requests is None:
            self._requests = self.requests_of(self.obj)
        return self._requests


def pending_reason(pod: Obj) -> str:
    """The message of a ``PodScheduled=False`` condition (what kube-scheduler said), or ""."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return str(cond.get("message") or cond.get("reason") or "")
    return ""


def pod_row(obj: Obj, requests_of: RequestsOf) -> PodRow:
    """A list row for a stored pod (``obj`` is the store's read-only dict)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    return PodRow(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        phase=phase,
        node=str(spec.get("nodeName") or ""),
        priority=int(spec.get("priority") or 0),
        reason=pending_reason(obj),
        nominated=str(status.get("nominatedNodeName") or ""),
        created=str(meta.get("creationTimestamp") or ""),
        scheduler=str(spec.get("schedulerName") or "default-scheduler"),
        terminal=phase in ("Succeeded", "Failed"),
        terminating=bool(meta.get("deletionTimestamp")),
        labels=dict(meta.get("labels") or {}),
        resource_version=str(meta.get("resourceVersion") or ""),
        obj=obj,
        requests_of=requests_of,
    )


@dataclass(slots=True)
class PodSnapshot:
    """Every pod at one resourceVersion: rows in (namespace, name) order and the non-terminal ones per node."""

    resource_version: int
    rows: list[PodRow]
    by_node: dict[str, list[PodRow]]
    _requested: dict[str, ResourceAmounts] | None = None

    def requested(self, node: str) -> ResourceAmounts:
        """What the pods bound to ``node`` request (summed once per snapshot; the scheduler-off fallback)."""
        sums = self._requested
        if sums is None:
            sums = {}
            for name, rows in self.by_node.items():
                total = ResourceAmounts()
                for row in rows:
                    total.add(row.requests)
                sums[name] = total
            self._requested = sums
        return sums.get(node) or ResourceAmounts()


class PodIndex:
    """Every pod as a ``PodRow``, kept up to date from the store's change log.

    The first use lists every pod; afterwards only the pods changed since the last resourceVersion are
    re-read (``events_since``), so a live refresh at 50,000 pods costs milliseconds. A log that no longer
    reaches back (410 Expired) or another store means a full relist.
    """

    def __init__(self, requests_of: RequestsOf) -> None:
        self._requests_of = requests_of
        self._lock = threading.Lock()
        self._last_read = float("-inf")  # monotonic time a page last read the index (``get``)
        self._store_id = 0
        self._rv = -1
        self._rows: dict[tuple[str, str], PodRow] = {}
        self._keys: list[tuple[str, str]] = []
        self._snapshot: PodSnapshot | None = None

    def get(self, store: Store) -> PodSnapshot:
        """The pods as of the store's current resourceVersion."""
        self._last_read = time.monotonic()
        return self._current(store)

    def keep_warm(
        self,
        store_of: Callable[[], Store],
        stop: threading.Event,
        *,
        interval: float = 2.0,
        viewed_within: float = 600.0,
    ) -> None:
        """Build the index of ``store_of()`` now, then catch it up every ``interval`` seconds while a page has read
        it in the last ``viewed_within`` seconds; until ``stop`` is set (a thread of its own runs this).

        At 50,000 pods a full list takes about a second, and the change log keeps only the newest
        ``watch_window`` changes: without this, the first page after start, and the first after a burst of
        changes nobody looked at, each paid for one. Nobody viewing, nothing is spent.
        """
        self._current(store_of())
        while not stop.wait(interval):
            if time.monotonic() - self._last_read <= viewed_within:
                self._current(store_of())

    def _current(self, store: Store) -> PodSnapshot:
        snap = self._snapshot
        if snap is not None and self._store_id == id(store) and snap.resource_version == store.resource_version:
            return snap
        with self._lock:
            rv = store.resource_version
            snap = self._snapshot
            if snap is not None and self._store_id == id(store) and snap.resource_version == rv:
                return snap
            if self._store_id != id(store) or rv < self._rv or not self._catch_up(store):
                self._relist(store)
            self._store_id = id(store)
            rows = [self._rows[k] for k in self._keys]
            by_node: dict[str, list[PodRow]] = {}
            for row in rows:
                if row.node and not row.terminal:
                    by_node.setdefault(row.node, []).append(row)
            self._snapshot = PodSnapshot(self._rv, rows, by_node)
            return self._snapshot

    def _relist(self, store: Store) -> None:
        listing = store.select("Pod")
        self._rows = {}
        for entry in listing.items:
            row = pod_row(entry.obj, self._requests_of)
            self._rows[(row.namespace, row.name)] = row
        self._keys = sorted(self._rows)
        self._rv = listing.resource_version

    def _catch_up(self, store: Store) -> bool:
        try:
            changes = store.events_since(self._rv)
        except ApiError:  # Expired: the log was trimmed past our version
            return False
        # A pod changed several times since the last catch-up gets one row, from its last change.
        latest: dict[tuple[str, str], tuple[str, Obj]] = {}
        for change in changes:
            self._rv = change.resource_version
            if change.kind != "Pod":
                continue
            obj = change.obj
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
            latest[key] = (change.type, obj)
        for key, (change_type, obj) in latest.items():
            present = key in self._rows
            if change_type == "DELETED":
                if present:
                    del self._rows[key]
                    del self._keys[bisect_left(self._keys, key)]
                continue
            self._rows[key] = pod_row(obj, self._requests_of)
            if not present:
                insort(self._keys, key)
        return True
