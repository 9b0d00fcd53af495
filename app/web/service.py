"""``WebService``: the one object the routes ask for view models; each page's model is built in ``app.web.views``.

Nothing here renders HTML or touches the database: the router turns these plain objects into templates, and
every read goes through the services it is given (typed by ``app.web.ports``). The lists stay fast at 5,000
nodes / 50,000 pods because per-pod rows are cached by resourceVersion (``app.web.pod_index``; a rebuild after
one change re-reads one pod), and node allocation comes from the scheduler cache when the scheduler runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.web.formatting import Page
from app.web.pod_index import PodIndex, PodRow
from app.web.ports import Operations, Results, SchedulerView, Store, StoredEntry
from app.web.views import editor, scheduler
from app.web.views.cluster import Allocations, ClusterView, NodeAllocatables, NodeRow, cluster_view
from app.web.views.editor import EditOutcome, Target
from app.web.views.events import events_for
from app.web.views.node import node_view
from app.web.views.objects import objects_view
from app.web.views.pod import AttemptView, PodDetail, attempt_view, pod_view
from app.web.views.pods import PodsView, pods_view
from app.web.views.scheduler import ConfigInEffect, ConfigOutcome

Obj = dict[str, Any]


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
    """Builds every page's view model from the application's services."""

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
        return Allocations(self.scheduler, cached, self.pod_index.get(self.store), self.caches.allocatables)

    # --- pages ------------------------------------------------------------------------------------
    def cluster(self, *, q: str = "", page: int = 1, sort: str = "name") -> ClusterView:
        """Summary strip and one page of nodes matching ``q`` (name or label), sorted by name or usage."""
        return cluster_view(self.store, self.allocations, q=q, page=page, sort=sort)

    def node(self, name: str) -> tuple[NodeRow, list[PodRow]] | None:
        """A node with its allocation and the pods bound to it; None when there is no such node."""
        return node_view(self.store, self.allocations, name)

    def pods(
        self,
        *,
        q: str = "",
        state: str = "all",
        node: str = "",
        namespace: str = "",
        sort: str = "name",
        desc: bool = False,
        page: int = 1,
    ) -> PodsView:
        """One page of pods: searched, filtered, sorted, with attempt counts and pending reasons."""
        return pods_view(
            self.store,
            self.results,
            self.pod_index,
            q=q,
            state=state,
            node=node,
            namespace=namespace,
            sort=sort,
            desc=desc,
            page=page,
        )

    def pod(
        self,
        namespace: str,
        name: str,
        *,
        attempt: int | None = None,
        fpage: int = 1,
        fsort: str = "failing",
        fnode: str = "",
        fplugin: str = "",
        spage: int = 1,
    ) -> PodDetail | None:
        """A pod: its YAML, attempts timeline and the chosen (default: latest) attempt in full."""
        return pod_view(
            self.store,
            self.results,
            self.scheduler.pod_requests,
            namespace,
            name,
            scheduler_running=self.scheduler_running,
            attempt=attempt,
            fpage=fpage,
            fsort=fsort,
            fnode=fnode,
            fplugin=fplugin,
            spage=spage,
        )

    def attempt(
        self,
        namespace: str,
        name: str,
        number: int,
        *,
        fpage: int = 1,
        fsort: str = "failing",
        fnode: str = "",
        fplugin: str = "",
        spage: int = 1,
    ) -> AttemptView | None:
        """One attempt: the filter matrix page (sorted/filtered) and the scores page (sorted by total)."""
        return attempt_view(
            self.results, namespace, name, number, fpage=fpage, fsort=fsort, fnode=fnode, fplugin=fplugin, spage=spage
        )

    def events_for(self, kind: str, namespace: str | None, name: str, limit: int = 20) -> list[Obj]:
        """The newest Events about one object (what ``kubectl describe`` lists)."""
        return events_for(self.store, kind, namespace, name, limit)

    def objects(self, kind: str, *, q: str = "", page: int = 1) -> Page[StoredEntry]:
        """One page of objects of one kind, matching ``q`` in namespace/name."""
        return objects_view(self.store, kind, q=q, page=page)

    # --- the editor -------------------------------------------------------------------------------
    def object_yaml(self, kind: str, namespace: str, name: str) -> str | None:
        """An object's full YAML for the editor, or None."""
        return editor.object_yaml(self.store, kind, namespace, name)

    def save_yaml(self, text: str, *, target: Target | None = None) -> EditOutcome:
        """Create the object in ``text`` (or replace ``target`` with it) through the store, as the API would."""
        return editor.save_yaml(self.store, text, target=target)

    def delete(self, kind: str, namespace: str, name: str) -> EditOutcome:
        """Delete one object (a node takes its pods with it, as in the store)."""
        return editor.delete(self.store, kind, namespace, name)

    # --- scheduler configuration ------------------------------------------------------------------
    def config_yaml(self) -> str:
        """The running KubeSchedulerConfiguration as YAML."""
        return scheduler.config_yaml(self.scheduler)

    def config_in_effect(self) -> ConfigInEffect:
        """Each profile's plugins per extension point, and the document after kube-scheduler's defaulting."""
        return scheduler.config_in_effect(self.scheduler)

    def queue_counts(self) -> dict[str, int]:
        """Pods per scheduling queue."""
        return self.scheduler.queue_counts()

    def apply_config(self, text: str) -> ConfigOutcome:
        """Validate and apply a configuration; on error the running one stays and the field is named."""
        return scheduler.apply_config(self.scheduler, text)
