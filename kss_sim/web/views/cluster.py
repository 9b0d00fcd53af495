"""The cluster page: the summary strip and the nodes with their allocation (also what a node's page shows of it)."""

from __future__ import annotations

from dataclasses import dataclass

from kss_sim.kube.objects import Obj, metadata_of
from kss_sim.web.allocation import Allocations
from kss_sim.web.formatting import CPU, MEMORY, PODS, Bar, Page, make_bar, paginate, resource_bars
from kss_sim.web.page_sources import WebService
from kss_sim.web.ports import ResourceAmounts, StoredEntry
from kss_sim.web.views.node_map import (
    BAND_LEVELS,
    NodeCell,
    NodeMap,
    amounts,
    node_cell,
    node_map,
    resource_names,
    share,
)

NODE_POD_PREVIEW = 6
NODE_PAGE_SIZE = 25  # node rows are tall; the overview above shows every node
# "allocated": most requested first of the chosen resource; "free": least first.
NODE_SORTS = ("name", "allocated", "free")
NODE_STATES = ("", "schedulable", "cordoned", "notready", "tainted")


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
    overview: NodeMap
    nodes: Page[NodeRow]
    q: str
    sort: str
    resource: str
    resources: list[str]  # what the overview can be coloured by: cpu, memory, pods and what the nodes offer
    state: str
    resource_version: int


def node_ready(node: Obj) -> bool:
    """The Ready condition is True."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def node_matches(entry: StoredEntry, terms: list[str]) -> bool:
    """Every search term matches: ``key=value`` a label exactly, else a substring of the name or a label."""
    meta = metadata_of(entry.obj)
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


def node_state_matches(entry: StoredEntry, state: str) -> bool:
    """The node is in ``state``: schedulable (Ready, not cordoned, no NoSchedule/NoExecute taint), cordoned,
    notready, tainted (any taint), or any when empty."""
    if not state:
        return True
    spec = entry.obj.get("spec") or {}
    if state == "cordoned":
        return bool(spec.get("unschedulable"))
    if state == "notready":
        return not node_ready(entry.obj)
    taints = spec.get("taints") or []
    if state == "tainted":
        return bool(taints)
    hard = any(t.get("effect") in ("NoSchedule", "NoExecute") for t in taints)
    return not hard and not spec.get("unschedulable") and node_ready(entry.obj)


def cluster_view(
    web: WebService,
    *,
    q: str = "",
    page: int = 1,
    sort: str = "name",
    resource: str = CPU,
    state: str = "",
    band: str = "",
) -> ClusterView:
    """Summary strip, the overview of every matching node coloured by ``resource``, and one page of them.

    Nodes match ``q`` (name or label) and ``state``; ``band`` narrows overview and list to one colour of the
    legend. The list is sorted by name or by the share of ``resource`` requested."""
    store = web.store
    rv = store.resource_version
    if sort in (CPU, MEMORY, PODS):  # the sorts of earlier links: by that resource, busiest first
        resource, sort = sort, "allocated"
    sort = sort if sort in NODE_SORTS else "name"
    state = state if state in NODE_STATES else ""
    band = band if band in BAND_LEVELS else ""
    nodes = store.select("Node").items
    allocations = web.allocations()
    index = allocations.pods
    totals = {e.name: allocations.totals(e) for e in nodes}
    resources = resource_names(alloc for _, alloc, _ in totals.values())
    resource = resource if resource in resources else CPU
    terms = q.split()

    summary_req = ResourceAmounts()
    summary_alloc = ResourceAmounts()
    pods_on_nodes = 0
    unschedulable = 0
    cells: list[NodeCell] = []
    shares: dict[str, float] = {}
    matching: list[StoredEntry] = []
    for entry in nodes:
        requested, allocatable, count = totals[entry.name]
        summary_req.add(requested)
        summary_alloc.add(allocatable)
        pods_on_nodes += count
        cordoned = bool((entry.obj.get("spec") or {}).get("unschedulable"))
        unschedulable += cordoned
        if (terms and not node_matches(entry, terms)) or not node_state_matches(entry, state):
            continue
        used, total = amounts(resource, requested, allocatable, count)
        cells.append(node_cell(entry.name, resource, used, total, cordoned=cordoned, ready=node_ready(entry.obj)))
        shares[entry.name] = share(used, total)
        matching.append(entry)
    overview = node_map(resource, cells, band)
    if band:
        shown = {c.name for c in overview.cells}
        matching = [e for e in matching if e.name in shown]
    if sort != "name":
        sign = -1 if sort == "allocated" else 1
        matching.sort(key=lambda e: (sign * shares[e.name], e.name))
    window = paginate(matching, page, NODE_PAGE_SIZE)
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
    return ClusterView(summary, overview, rows, q, sort, resource, resources, state, rv)
