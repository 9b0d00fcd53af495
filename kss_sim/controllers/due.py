"""Many keys each due at some clock time, kept in a heap.

``ReconcileLoop.requeue_at`` scans every timer on each pass of the worker, which is right for a handful of
timers; the simulated kubelet has one per running pod with a run duration and the node leases one per node,
thousands on a large cluster. Those controllers keep their own ``DueQueue`` and ask the loop for a single timer,
at the earliest due time.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from datetime import datetime
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class DueQueue(Generic[K]):
    """Keys and the clock time each is due; one due time per key (the last ``schedule`` wins)."""

    def __init__(self) -> None:
        """An empty queue."""
        self._due: dict[K, datetime] = {}
        self._heap: list[tuple[datetime, int, K]] = []
        self._seq = 0  # ties in time pop in scheduling order, and keys never need to compare

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, key: object) -> bool:
        return key in self._due

    def schedule(self, key: K, when: datetime) -> None:
        """``key`` is due at ``when`` (replacing an earlier or later due time)."""
        self._due[key] = when
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, key))
        if len(self._heap) > 2 * len(self._due) + 64:
            self._compact()

    def discard(self, key: K) -> None:
        """``key`` is no longer due."""
        self._due.pop(key, None)

    def due_at(self, key: K) -> datetime | None:
        """When ``key`` is due, or None."""
        return self._due.get(key)

    def earliest(self) -> datetime | None:
        """The earliest due time, or None when empty."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: datetime, limit: int) -> list[K]:
        """Up to ``limit`` keys due at or before ``now``, earliest first; they leave the queue."""
        keys: list[K] = []
        while len(keys) < limit:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                break
            _, _, key = heapq.heappop(self._heap)
            del self._due[key]
            keys.append(key)
        return keys

    def clear(self) -> None:
        """Forget every key."""
        self._due.clear()
        self._heap.clear()

    def _drop_stale(self) -> None:
        # An entry is stale when its key was discarded or scheduled again since it was pushed.
        while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)

    def _compact(self) -> None:
        self._heap = [entry for entry in self._heap if self._due.get(entry[2]) == entry[0]]
        heapq.heapify(self._heap)
