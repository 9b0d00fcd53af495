"""PrioritySort: the queue order, higher priority first, then earlier queued first."""

from __future__ import annotations

from typing import ClassVar

from kss_sim.scheduler.framework import QueuedPodInfoLike, QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    """``queuesort.PrioritySort``."""

    name: ClassVar[str] = "PrioritySort"

    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        """Whether ``a`` should be popped before ``b``."""
        p1 = a.pod_info.priority
        p2 = b.pod_info.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)
