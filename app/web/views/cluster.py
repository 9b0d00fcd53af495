"""The cluster page: the summary strip and the nodes with their allocation (also what a node's page shows of it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.web.allocation import Allocations
from app.web.formatting import CPU, MEMORY, PODS, Bar, Page, make_bar, paginate, resource_bars
from app.web.ports import ResourceAmounts, StoredEntry
from app.web.service import WebService

Obj = dict[str, Any]

NODE_POD_PREVIEW = 6
NODE_SORTS = ("name", "cpu", "memory", "pods")


@dataclass(slots=True)
class NodeRow:
    """A node on the cluster page or its own page."""

    name: str
    labels: dict[str, str]
    taints: list[Obj]
    unschedulable: bool
    ready: bool
    bars: list[Bar]
    pod_count: int
    pod_keys: list[str]
    obj: Obj

    @property
    def more_pods(self) -> int:
        """Pods not previewed."""
        return max(0, self.pod_count - len(self.pod_keys))


@dataclass(slots=True)
class Summary:
    """The strip above the cluster page."""

    nodes: int
    unschedulable_nodes: int
    pods: int
    bound: int
    pending: int
    cpu: Bar
    memory: Bar
    pod_slots: Bar
    source: str  # "scheduler cache" or "pods in the store"


@dataclass(slots=True)
class ClusterView:
    """The cluster page: summary and one page of nodes."""

    summary: Summary
    nodes: Page[NodeRow]
    q: str
    sort: str
    resource_version: int


def node_ready(node: Obj) -> bool:
    """The Ready condition is True."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def node_matches(entry: StoredEntry, terms: list[str]) -> bool:
    """Every search term matches: ``key=value`` a label exactly, else a substring of the name or a label."""
    meta = entry.obj.get("metadata") or {}
    name = str(meta.get("name") or "").lower()
    labels: dict[str, str] = meta.get("labels") or {}
    for term in terms:
        if "=" in term:
            key, _, value = term.partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
            continue
        t = term.lower()
        if t in name:
            continue
        if any(t in k.lower() or t in str(v).lower() for k, v in labels.items()):
            continue
        return False
    return True


def node_row(allocations: Allocations, entry: StoredEntry) -> NodeRow:
    """A node with its allocation bars and a preview of its pods."""
    requested, allocatable, count = allocations.totals(entry)
    keys = allocations.pod_keys(entry)
    obj = entry.obj
    spec = obj.get("spec") or {}
    return NodeRow(
        name=entry.name,
        labels=dict((obj.get("metadata") or {}).get("labels") or {}),
        taints=list(spec.get("taints") or []),
        unschedulable=bool(spec.get("unschedulable")),
        ready=node_ready(obj),
        bars=resource_bars(requested, allocatable, count),
        pod_count=count,
        pod_keys=sorted(keys)[:NODE_POD_PREVIEW],
        obj=obj,
    )


def cluster_view(web: WebService, *, q: str = "", page: int = 1, sort: str = "name") -> ClusterView:
    """Summary strip and one page of nodes matching ``q`` (name or label), sorted by name or usage."""
    store = web.store
    rv = store.resource_version
    sort = sort if sort in NODE_SORTS else "name"
    nodes = store.select("Node").items
    allocations = web.allocations()
    index = allocations.pods
    terms = q.split()
    matching = [e for e in nodes if node_matches(e, terms)] if terms else nodes

    summary_req = ResourceAmounts()
    summary_alloc = ResourceAmounts()
    pods_on_nodes = 0
    unschedulable = 0
    usage: dict[str, tuple[float, float, float]] = {}
    for entry in nodes:
        requested, allocatable, count = allocations.totals(entry)
        summary_req.add(requested)
        summary_alloc.add(allocatable)
        pods_on_nodes += count
        if (entry.obj.get("spec") or {}).get("unschedulable"):
            unschedulable += 1
        if sort != "name":
            usage[entry.name] = (
                requested.milli_cpu / allocatable.milli_cpu if allocatable.milli_cpu else 0.0,
                requested.memory / allocatable.memory if allocatable.memory else 0.0,
                count / allocatable.pods if allocatable.pods else 0.0,
            )
    if sort != "name":
        slot = NODE_SORTS.index(sort) - 1
        matching = sorted(matching, key=lambda e: (-usage[e.name][slot], e.name))
    window = paginate(matching, page)
    rows = Page([node_row(allocations, e) for e in window.items], window.page, window.page_size, window.total)
    bound = sum(1 for r in index.rows if r.bound and not r.terminal)
    pending = sum(1 for r in index.rows if not r.bound and not r.terminal)
    summary = Summary(
        nodes=len(nodes),
        unschedulable_nodes=unschedulable,
        pods=len(index.rows),
        bound=bound,
        pending=pending,
        cpu=make_bar(CPU, summary_req.milli_cpu, summary_alloc.milli_cpu),
        memory=make_bar(MEMORY, summary_req.memory, summary_alloc.memory),
        pod_slots=make_bar(PODS, pods_on_nodes, summary_alloc.pods),
        source="scheduler cache" if allocations.from_cache else "pods in the store",
    )
    return ClusterView(summary, rows, q, sort, rv)
