"""``WebService``: what the pages read, typed (``kss_sim.web.ports``); each page's model is built in
``kss_sim.web.views``.

Nothing here or in the views renders HTML or touches the database: the router turns the views' plain objects
into templates, and every read goes through the services given here. The lists stay fast at 5,000 nodes /
50,000 pods because per-pod rows are cached by resourceVersion (``kss_sim.web.pod_index``; a rebuild after one
change re-reads one pod), and node allocation comes from the scheduler cache when the scheduler runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from kss_sim.web.allocation import Allocations, NodeAllocatables
from kss_sim.web.pod_index import PodIndex
from kss_sim.web.ports import Operations, Results, SchedulerView, Store


@dataclass(slots=True)
class WebCaches:
    """What the pages keep between requests, one per application: the pod rows and the nodes' allocatable."""

    pod_index: PodIndex
    allocatables: NodeAllocatables

    @classmethod
    def over(cls, scheduler: SchedulerView) -> WebCaches:
        """Empty caches that compute with the scheduler's resource arithmetic (pure functions of an object)."""
        return cls(PodIndex(scheduler.pod_requests), NodeAllocatables(scheduler.node_allocatable))


class WebService:
    """The services and caches the page views read: the store, the results, the scheduler port, operations."""

    def __init__(
        self,
        *,
        store: Store,
        results: Results,
        scheduler: SchedulerView,
        operations: Operations | None,
        scheduler_running: bool,
        caches: WebCaches | None = None,
    ) -> None:
        self.store = store
        self.results = results
        self.scheduler = scheduler
        self.operations = operations  # reset / export / import, when this build has them
        self.scheduler_running = scheduler_running  # the loop runs in this process: its cache mirrors the cluster
        self.caches = caches if caches is not None else WebCaches.over(scheduler)

    @property
    def pod_index(self) -> PodIndex:
        """Every pod as a list row, cached by resourceVersion."""
        return self.caches.pod_index

    def allocations(self) -> Allocations:
        """Each node's allocation as of now: from the scheduler's cache when it runs, else from the pods."""
        cached = self.scheduler.node_allocations() if self.scheduler_running else {}
        return Allocations(self.scheduler, cached, lambda: self.pod_index.get(self.store), self.caches.allocatables)
