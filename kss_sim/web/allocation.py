"""Each node's requested and allocatable resources and its pods, for the cluster and node pages.

From the scheduler's cache when the scheduler runs in this process (``SchedulerView.node_allocations``); else
summed from the pods in the store, with each node's allocatable parsed once per version of the node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kss_sim.kube.objects import Obj
from kss_sim.web.pod_index import PodSnapshot
from kss_sim.web.ports import NodeAllocation, ResourceAmounts, SchedulerView, StoredEntry


class NodeAllocatables:
    """Nodes' allocatable resources, parsed once per version of each node (kept between requests)."""

    def __init__(self, parse: Callable[[Obj], ResourceAmounts]) -> None:
        self._parse = parse
        self._cache: dict[str, tuple[Obj, ResourceAmounts]] = {}

    def get(self, entry: StoredEntry) -> ResourceAmounts:
        """A node's allocatable resources, parsed once per version of the node."""
        cached = self._cache.get(entry.name)
        if cached is not None and cached[0] is entry.obj:
            return cached[1]
        value = self._parse(entry.obj)
        self._cache[entry.name] = (entry.obj, value)
        return value


class Allocations:
    """Each node's requested and allocatable resources and its pods, read once per request: from the scheduler's
    cache when it has the node, else summed from the pods in the store."""

    def __init__(
        self,
        scheduler: SchedulerView,
        cached: Mapping[str, NodeAllocation],
        pods: Callable[[], PodSnapshot],
        allocatables: NodeAllocatables,
    ) -> None:
        """``pods``: the pod snapshot, taken only when asked for (at 50,000 pods, after any change, it costs tens of
        milliseconds; the first one lists every pod), which the scheduler's cache usually spares."""
        self._scheduler = scheduler
        self.cached = cached
        self._pods = pods
        self._snapshot: PodSnapshot | None = None
        self._allocatables = allocatables

    @property
    def pods(self) -> PodSnapshot:
        """Every pod as of this request, for the nodes the scheduler's cache does not answer for."""
        if self._snapshot is None:
            self._snapshot = self._pods()
        return self._snapshot

    @property
    def from_cache(self) -> bool:
        """The scheduler's cache answered (it runs and holds nodes)."""
        return bool(self.cached)

    def totals(self, entry: StoredEntry) -> tuple[ResourceAmounts, ResourceAmounts, int]:
        """(requested, allocatable, pod count) of one node without listing its pods."""
        found = self.cached.get(entry.name)
        if found is not None:
            return found.requested, found.allocatable, found.pod_count
        pods = self.pods
        return pods.requested(entry.name), self._allocatables.get(entry), len(pods.by_node.get(entry.name, ()))

    def pod_keys(self, entry: StoredEntry) -> list[str]:
        """``namespace/name`` of the pods on one node."""
        if entry.name in self.cached:
            return self._scheduler.node_pods(entry.name)
        return [r.key for r in self.pods.by_node.get(entry.name, [])]
