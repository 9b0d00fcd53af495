"""View models of the web UI, built from the cluster store, the results service and the scheduler service.

Nothing here renders HTML or touches the database: the router turns these plain objects into templates,
and every read goes through the services on ``app.state`` (typed by ``app.web.ports``). The lists stay fast
at 5,000 nodes / 50,000 pods because per-pod rows are cached by resourceVersion (a rebuild after one change
re-reads one pod), and node allocation comes from the scheduler cache when the scheduler runs.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import yaml

from app.cluster.errors import ApiError, Invalid
from app.cluster.kinds import BY_KIND, KINDS, KindInfo
from app.scheduler.config import ConfigError
from app.scheduler.nodeinfo import NodeInfo
from app.scheduler.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resource, calculate_pod_resource
from app.web.ports import Operations, Results, Scheduler, Store, StoredEntry

Obj = dict[str, Any]
T = TypeVar("T")

PAGE_SIZE = 100
MATRIX_PAGE_SIZE = 50
NODE_POD_PREVIEW = 6
# Annotation values longer than this are elided on the pod page (the per-node result annotations of a
# 5,000-node attempt are megabytes); the editor and the API always show them in full.
ANNOTATION_PREVIEW_CHARS = 300
POD_SORTS = ("name", "namespace", "node", "phase", "priority", "attempts", "age")
POD_STATES = ("all", "pending", "bound")
NODE_SORTS = ("name", "cpu", "memory", "pods")
MATRIX_SORTS = ("total", "name", "failing")  # what ResultsService.get_attempt sorts by

_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def to_yaml(obj: Any) -> str:
    """YAML as kubectl prints it: keys in stored order, block style."""
    return str(yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120))


# ---------------------------------------------------------------------------------------------- small values


@dataclass(frozen=True, slots=True)
class Bar:
    """One resource bar: requested against allocatable."""

    resource: str
    used: int
    total: int
    used_text: str
    total_text: str

    @property
    def percent(self) -> float:
        """Share of allocatable in use, 0-100 (capped for drawing)."""
        if self.total <= 0:
            return 100.0 if self.used > 0 else 0.0
        return min(100.0, self.used * 100.0 / self.total)

    @property
    def ratio(self) -> float:
        """Requested / allocatable, uncapped (0 when nothing is allocatable)."""
        return self.used / self.total if self.total > 0 else 0.0

    @property
    def over(self) -> bool:
        """More requested than allocatable (a node that shrank, or pods bound by hand)."""
        return self.used > self.total

    @property
    def level(self) -> str:
        """A CSS class for the fill colour."""
        p = self.percent
        return "full" if self.over or p >= 90 else ("high" if p >= 70 else "ok")


def cores(milli: int) -> str:
    """Millicores as cores, the way people read them (``3.5``, ``0.25``, ``4``)."""
    return f"{milli / 1000:.3f}".rstrip("0").rstrip(".")


def _format(resource: str, amount: int) -> str:
    if resource == CPU:
        return cores(amount)
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        return human_bytes(amount)
    return str(amount)


def human_bytes(n: int) -> str:
    """Bytes in the largest binary unit they reach (``32Gi``, ``31.5Gi``), so used and total compare at a glance."""
    for suffix, size in (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if abs(n) >= size:
            return f"{n // size}{suffix}" if n % size == 0 else f"{n / size:.1f}{suffix}"
    return str(n)


def make_bar(resource: str, used: int, total: int) -> Bar:
    """A bar with amounts formatted for the resource."""
    return Bar(resource, used, total, _format(resource, used), _format(resource, total))


def resource_bars(requested: Resource, allocatable: Resource, pod_count: int) -> list[Bar]:
    """cpu, memory, pods, then ephemeral storage and extended resources when the node has or uses them."""
    bars = [
        make_bar(CPU, requested.milli_cpu, allocatable.milli_cpu),
        make_bar(MEMORY, requested.memory, allocatable.memory),
        make_bar(PODS, pod_count, allocatable.allowed_pod_number),
    ]
    if allocatable.ephemeral_storage or requested.ephemeral_storage:
        bars.append(make_bar(EPHEMERAL_STORAGE, requested.ephemeral_storage, allocatable.ephemeral_storage))
    for name in sorted(set(allocatable.scalar_resources) | set(requested.scalar_resources)):
        bars.append(make_bar(name, requested.scalar_resources.get(name, 0), allocatable.scalar_resources.get(name, 0)))
    return bars


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """``kubectl``-style age of an RFC 3339 timestamp (``45s``, ``12m``, ``3h``, ``2d``)."""
    if not timestamp:
        return ""
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return ""
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 120:
        return f"{max(seconds, 0)}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


@dataclass(slots=True)
class Page(Generic[T]):
    """One page of a longer list."""

    items: list[T]
    page: int
    page_size: int
    total: int

    @property
    def pages(self) -> int:
        """How many pages the whole list has (at least one)."""
        return max(1, -(-self.total // self.page_size))

    @property
    def first(self) -> int:
        """1-based index of the first item shown (0 when empty)."""
        return 0 if not self.items else (self.page - 1) * self.page_size + 1

    @property
    def last(self) -> int:
        """1-based index of the last item shown."""
        return (self.page - 1) * self.page_size + len(self.items)


def paginate(items: Sequence[T], page: int, page_size: int = PAGE_SIZE) -> Page[T]:
    """Slice ``items`` to ``page`` (clamped to the last page)."""
    pages = max(1, -(-len(items) // page_size))
    page = min(max(page, 1), pages)
    return Page(list(items[(page - 1) * page_size : page * page_size]), page, page_size, len(items))


# ---------------------------------------------------------------------------------------------- pod rows


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
    labels: dict[str, str]
    resource_version: str
    obj: Obj  # the store's own dict: read-only
    _requests: Resource | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def bound(self) -> bool:
        """Assigned to a node."""
        return bool(self.node)

    @property
    def requests(self) -> Resource:
        """What the pod adds to its node's requested resources (``PodInfo.CalculateResource``)."""
        if self._requests is None:
            self._requests = calculate_pod_resource(self.obj)[0]
        return self._requests


def pending_reason(pod: Obj) -> str:
    """The message of a ``PodScheduled=False`` condition (what kube-scheduler said), or ""."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return str(cond.get("message") or cond.get("reason") or "")
    return ""


def pod_row(obj: Obj) -> PodRow:
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
        labels=dict(meta.get("labels") or {}),
        resource_version=str(meta.get("resourceVersion") or ""),
        obj=obj,
    )


@dataclass(slots=True)
class PodSnapshot:
    """Every pod at one resourceVersion: rows in (namespace, name) order and the non-terminal ones per node."""

    resource_version: int
    rows: list[PodRow]
    by_node: dict[str, list[PodRow]]
    _requested: dict[str, Resource] | None = None

    def requested(self, node: str) -> Resource:
        """What the pods bound to ``node`` request (summed once per snapshot; the scheduler-off fallback)."""
        sums = self._requested
        if sums is None:
            sums = {}
            for name, rows in self.by_node.items():
                total = Resource()
                for row in rows:
                    total.add(row.requests)
                sums[name] = total
            self._requested = sums
        return sums.get(node) or Resource()


class PodIndex:
    """Every pod as a ``PodRow``, kept up to date from the store's change log.

    The first use lists every pod; afterwards only the pods changed since the last resourceVersion are
    re-read (``events_since``), so a live refresh at 50,000 pods costs milliseconds. A log that no longer
    reaches back (410 Expired) or another store means a full relist.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._store_id = 0
        self._rv = -1
        self._rows: dict[tuple[str, str], PodRow] = {}
        self._keys: list[tuple[str, str]] = []
        self._snapshot: PodSnapshot | None = None

    def get(self, store: Store) -> PodSnapshot:
        """The pods as of the store's current resourceVersion."""
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
            row = pod_row(entry.obj)
            self._rows[(row.namespace, row.name)] = row
        self._keys = sorted(self._rows)
        self._rv = listing.resource_version

    def _catch_up(self, store: Store) -> bool:
        try:
            changes = store.events_since(self._rv)
        except ApiError:  # Expired: the log was trimmed past our version
            return False
        for change in changes:
            self._rv = change.resource_version
            if change.kind != "Pod":
                continue
            meta = change.obj.get("metadata") or {}
            key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
            present = key in self._rows
            if change.type == "DELETED":
                if present:
                    del self._rows[key]
                    del self._keys[bisect_left(self._keys, key)]
                continue
            self._rows[key] = pod_row(change.obj)
            if not present:
                insort(self._keys, key)
        return True


# ---------------------------------------------------------------------------------------------- nodes


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


def pod_matches(row: PodRow, terms: list[str]) -> bool:
    """Every term matches: ``key=value`` a label exactly, else a substring of namespace/name or a label."""
    for term in terms:
        if "=" in term:
            key, _, value = term.partition("=")
            if row.labels.get(key.strip()) != value.strip():
                return False
            continue
        t = term.lower()
        if t in row.name.lower() or t in row.namespace.lower():
            continue
        if any(t in k.lower() or t in str(v).lower() for k, v in row.labels.items()):
            continue
        return False
    return True


# ---------------------------------------------------------------------------------------------- pods


@dataclass(slots=True)
class PodsView:
    """The pods page."""

    pods: Page[PodRow]
    attempts: dict[tuple[str, str], int]
    q: str
    state: str
    node: str
    namespace: str
    sort: str
    desc: bool
    namespaces: list[str]
    counts: dict[str, int]
    resource_version: int

    def attempts_of(self, row: PodRow) -> int:
        """Recorded attempts of one pod."""
        return self.attempts.get((row.namespace, row.name), 0)


# ---------------------------------------------------------------------------------------------- pod detail


@dataclass(slots=True)
class Stage:
    """One extension point's outcome for the attempt panel."""

    name: str
    statuses: dict[str, str]
    note: str = ""

    @property
    def failed(self) -> bool:
        """Some plugin did not succeed (and did not skip)."""
        return any(not status_ok(v) for v in self.statuses.values())


def status_ok(status: Any) -> bool:
    """A plugin status that is not a failure (success, skip, passed)."""
    text = str(status).lower()
    return text in ("success", "skip", "passed", "") or text.startswith("success")


@dataclass(slots=True)
class HeatCell:
    """One cell of the final-score heat map."""

    plugin: str
    final: int
    normalized: int
    alpha: float  # 0..1, the colour's strength


@dataclass(slots=True)
class PluginBars:
    """One plugin's final scores for the top nodes."""

    plugin: str
    weight: int
    bars: list[tuple[str, int, float, bool]]  # node, final score, width percent, selected


@dataclass(slots=True)
class AttemptView:
    """The chosen attempt: statuses per extension point, the filter matrix and the scores."""

    number: int
    summary: Obj
    filter_page: Obj  # results' detail with the filter matrix page
    score_page: Obj  # the same attempt, scored nodes sorted by total
    stages: list[Stage]
    postfilter: Obj | None
    victims: list[str]
    heat: list[tuple[str, bool, list[HeatCell], int]]  # node, selected, cells, total
    plugin_bars: list[PluginBars]
    fsort: str
    fnode: str
    fplugin: str

    @property
    def filter_plugins(self) -> list[str]:
        """Filter plugins in the order they ran."""
        plugins: list[str] = self.filter_page.get("filterPlugins") or []
        return plugins

    @property
    def score_plugins(self) -> list[str]:
        """Score plugins in profile order."""
        plugins: list[str] = self.score_page.get("scorePlugins") or []
        return plugins

    @property
    def weights(self) -> dict[str, int]:
        """Plugin weights of the profile."""
        weights: dict[str, int] = self.score_page.get("weights") or {}
        return weights


@dataclass(slots=True)
class PodDetail:
    """The pod page."""

    row: PodRow
    yaml: str
    elided: int
    attempts: list[Obj]
    attempt: AttemptView | None
    events: list[Obj]
    waiting: bool  # the scheduler runs and nothing is recorded yet: poll
    resource_version: int


def _elide_annotations(pod: Obj) -> tuple[Obj, int]:
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    elided = 0
    short: dict[str, Any] = {}
    for key, value in annotations.items():
        if isinstance(value, str) and len(value) > ANNOTATION_PREVIEW_CHARS:
            short[key] = f"{value[:ANNOTATION_PREVIEW_CHARS]}… ({len(value):,} characters, elided)"
            elided += 1
        else:
            short[key] = value
    if not elided:
        return pod, 0
    copy = dict(pod)
    copy["metadata"] = {**meta, "annotations": short}
    return copy, elided


def _heat_and_bars(score_page: Obj) -> tuple[list[tuple[str, bool, list[HeatCell], int]], list[PluginBars]]:
    plugins: list[str] = score_page.get("scorePlugins") or []
    weights: dict[str, int] = score_page.get("weights") or {}
    selected = score_page.get("boundTo") or ""
    heat: list[tuple[str, bool, list[HeatCell], int]] = []
    for row in score_page["matrix"]["rows"]:
        final = row.get("finalScore")
        if final is None:
            continue
        norm = row.get("normalizedScore") or {}
        cells = []
        for p in plugins:
            top = 100 * max(weights.get(p, 1), 1)
            value = int(final.get(p, 0))
            cells.append(HeatCell(p, value, int(norm.get(p, 0)), max(0.0, min(1.0, value / top)) if top else 0.0))
        heat.append((row["node"], bool(row.get("selected")), cells, int(row.get("total") or 0)))
    bars: list[PluginBars] = []
    top_nodes = score_page.get("topNodes") or []
    for p in plugins:
        scale = 100 * max(weights.get(p, 1), 1)
        entries = []
        for t in top_nodes:
            value = int((t.get("finalScore") or {}).get(p, 0))
            entries.append((str(t["node"]), value, max(0.0, min(100.0, value * 100.0 / scale)), t["node"] == selected))
        bars.append(PluginBars(p, weights.get(p, 1), entries))
    return heat, bars


def _stages(detail: Obj) -> list[Stage]:
    stages: list[Stage] = []
    prefilter = detail.get("prefilter") or {}
    note = ""
    nodes = detail.get("prefilterNodes")
    if nodes is not None:
        shown = ", ".join(nodes[:10]) + (f" … (+{len(nodes) - 10})" if len(nodes) > 10 else "")
        note = f"PreFilterResult narrowed the nodes to: {shown or 'none'}"
    status = detail.get("prefilterStatus")
    if status and status != "success":
        note = f"{note}; status: {status}" if note else f"status: {status}"
    stages.append(Stage("PreFilter", dict(prefilter), note))
    for name, key in (("PreScore", "prescore"), ("Reserve", "reserve"), ("Permit", "permit")):
        statuses = detail.get(key) or {}
        extra = ""
        if key == "permit" and detail.get("permitTimeout"):
            extra = "waiting: " + ", ".join(f"{p} {t:g}s" for p, t in (detail.get("permitTimeout") or {}).items())
        stages.append(Stage(name, dict(statuses), extra))
    stages.append(Stage("PreBind", dict(detail.get("prebind") or {})))
    stages.append(Stage("Bind", dict(detail.get("bind") or {})))
    return stages


# ---------------------------------------------------------------------------------------------- editor


@dataclass(slots=True)
class FieldProblem:
    """One field error shown under the editor."""

    field: str
    message: str


@dataclass(slots=True)
class EditOutcome:
    """The result of submitting YAML: the saved object, or why nothing was saved."""

    ok: bool
    kind: str = ""
    namespace: str = ""
    name: str = ""
    message: str = ""
    reason: str = ""
    code: int = 200
    problems: list[FieldProblem] = field(default_factory=list)
    obj: Obj | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """Which object an edit form replaces."""

    kind: str
    namespace: str
    name: str


TEMPLATES: dict[str, str] = {
    "Node": """apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels:
    kubernetes.io/hostname: node-1
    topology.kubernetes.io/zone: zone-a
spec: {}
status:
  capacity:
    cpu: "4"
    memory: 32Gi
    pods: "110"
  allocatable:
    cpu: "4"
    memory: 32Gi
    pods: "110"
""",
    "Pod": """apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: default
  labels:
    app: web
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests:
        cpu: 500m
        memory: 1Gi
""",
    "Namespace": """apiVersion: v1
kind: Namespace
metadata:
  name: team-a
""",
    "PriorityClass": """apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high-priority
value: 1000
globalDefault: false
description: Pods that may preempt others.
""",
    "PersistentVolume": """apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-1
spec:
  capacity:
    storage: 10Gi
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  hostPath:
    path: /data/pv-1
""",
    "PersistentVolumeClaim": """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-1
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  resources:
    requests:
      storage: 5Gi
""",
    "StorageClass": """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
""",
    "PodDisruptionBudget": """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web-pdb
  namespace: default
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app: web
""",
    "CSINode": """apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: node-1
spec:
  drivers:
  - name: ebs.csi.aws.com
    nodeID: node-1
    allocatable:
      count: 25
""",
    "Event": """apiVersion: v1
kind: Event
metadata:
  name: note-1
  namespace: default
involvedObject:
  kind: Pod
  name: web-1
  namespace: default
reason: Note
message: Written from the web UI.
type: Normal
""",
}


def editable_kinds() -> list[KindInfo]:
    """Every kind the virtual cluster serves, in registry order."""
    return list(KINDS)


def _problems_of(exc: ApiError) -> list[FieldProblem]:
    if isinstance(exc, Invalid):
        return [FieldProblem(c.field, c.message) for c in exc.causes]
    causes = (exc.details or {}).get("causes") or []
    return [FieldProblem(str(c.get("field") or ""), str(c.get("message") or "")) for c in causes]


def _failure(exc: ApiError, kind: str = "", namespace: str = "", name: str = "") -> EditOutcome:
    return EditOutcome(False, kind, namespace, name, exc.message, exc.reason, exc.code, _problems_of(exc))


def _bad(message: str, field_path: str = "", reason: str = "BadRequest") -> EditOutcome:
    problems = [FieldProblem(field_path, message)] if field_path else []
    return EditOutcome(False, message=message, reason=reason, code=400, problems=problems)


# ---------------------------------------------------------------------------------------------- config


@dataclass(slots=True)
class ConfigOutcome:
    """Submitting a KubeSchedulerConfiguration: applied, or the field that is wrong."""

    ok: bool
    text: str
    field: str = ""
    message: str = ""


@dataclass(slots=True)
class ConfigInEffect:
    """Per profile (scheduler name), each extension point's plugins in run order with score weights; and the
    defaulted document as YAML."""

    profiles: list[tuple[str, list[tuple[str, list[tuple[str, int | None]]]]]]
    defaulted_yaml: str


# ---------------------------------------------------------------------------------------------- service


class WebService:
    """Builds every page's view model from the application's services (held on ``app.state``)."""

    def __init__(self, state: Any) -> None:
        self._state = state
        self.pod_index = PodIndex()
        self._allocatable_cache: dict[str, tuple[Obj, Resource]] = {}

    # --- the services ----------------------------------------------------------------------------
    @property
    def store(self) -> Store:
        """The cluster store."""
        store: Store = self._state.store
        return store

    @property
    def results(self) -> Results:
        """The results service."""
        results: Results = self._state.results
        return results

    @property
    def scheduler(self) -> Scheduler | None:
        """The in-process scheduler service (None in bare test apps)."""
        scheduler: Scheduler | None = getattr(self._state, "scheduler", None)
        return scheduler

    @property
    def scheduler_running(self) -> bool:
        """The scheduler loop runs in this process (its cache then mirrors the cluster)."""
        settings = getattr(self._state, "settings", None)
        return bool(getattr(settings, "scheduler_enabled", False)) and self.scheduler is not None

    @property
    def operations(self) -> Operations | None:
        """The operations service (reset / export / import), when this build has one."""
        operations: Operations | None = getattr(self._state, "operations", None)
        return operations

    # --- allocation ------------------------------------------------------------------------------
    def _cache_infos(self) -> dict[str, NodeInfo]:
        if not self.scheduler_running:
            return {}
        scheduler = self.scheduler
        assert scheduler is not None
        # node_info_list is replaced wholesale by the scheduler thread, so this list is a stable view.
        return {ni.name: ni for ni in list(scheduler.cache.snapshot.node_info_list)}

    def _allocation(
        self, entry: StoredEntry, infos: dict[str, NodeInfo], pods: PodSnapshot
    ) -> tuple[Resource, Resource, int, list[str]]:
        """(requested, allocatable, pod count, pod keys) of one node, from the scheduler cache when it has it."""
        ni = infos.get(entry.name)
        if ni is not None:
            listed = list(ni.pods)
            return ni.requested, ni.allocatable, len(listed), [p.key for p in listed]
        rows = pods.by_node.get(entry.name, [])
        return pods.requested(entry.name), self._allocatable(entry), len(rows), [r.key for r in rows]

    def _allocatable(self, entry: StoredEntry) -> Resource:
        """A node's allocatable resources, parsed once per version of the node."""
        cached = self._allocatable_cache.get(entry.name)
        if cached is not None and cached[0] is entry.obj:
            return cached[1]
        status = entry.obj.get("status") or {}
        value = Resource.from_raw(status.get("allocatable") or status.get("capacity") or {})
        self._allocatable_cache[entry.name] = (entry.obj, value)
        return value

    def _totals(
        self, entry: StoredEntry, infos: dict[str, NodeInfo], pods: PodSnapshot
    ) -> tuple[Resource, Resource, int]:
        """(requested, allocatable, pod count) of one node without listing its pods."""
        ni = infos.get(entry.name)
        if ni is not None:
            return ni.requested, ni.allocatable, len(ni.pods)
        return pods.requested(entry.name), self._allocatable(entry), len(pods.by_node.get(entry.name, ()))

    def _node_row(self, entry: StoredEntry, infos: dict[str, NodeInfo], pods: PodSnapshot) -> NodeRow:
        requested, allocatable, count, keys = self._allocation(entry, infos, pods)
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

    # --- cluster ---------------------------------------------------------------------------------
    def cluster(self, *, q: str = "", page: int = 1, sort: str = "name") -> ClusterView:
        """Summary strip and one page of nodes matching ``q`` (name or label), sorted by name or usage."""
        store = self.store
        rv = store.resource_version
        sort = sort if sort in NODE_SORTS else "name"
        nodes = store.select("Node").items
        infos = self._cache_infos()
        index = self.pod_index.get(store)
        terms = q.split()
        matching = [e for e in nodes if node_matches(e, terms)] if terms else nodes

        summary_req = Resource()
        summary_alloc = Resource()
        pods_on_nodes = 0
        unschedulable = 0
        usage: dict[str, tuple[float, float, float]] = {}
        for entry in nodes:
            requested, allocatable, count = self._totals(entry, infos, index)
            summary_req.add(requested)
            summary_alloc.add(allocatable)
            pods_on_nodes += count
            if (entry.obj.get("spec") or {}).get("unschedulable"):
                unschedulable += 1
            if sort != "name":
                usage[entry.name] = (
                    requested.milli_cpu / allocatable.milli_cpu if allocatable.milli_cpu else 0.0,
                    requested.memory / allocatable.memory if allocatable.memory else 0.0,
                    count / allocatable.allowed_pod_number if allocatable.allowed_pod_number else 0.0,
                )
        if sort != "name":
            slot = NODE_SORTS.index(sort) - 1
            matching = sorted(matching, key=lambda e: (-usage[e.name][slot], e.name))
        window = paginate(matching, page)
        rows = Page(
            [self._node_row(e, infos, index) for e in window.items], window.page, window.page_size, window.total
        )
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
            pod_slots=make_bar(PODS, pods_on_nodes, summary_alloc.allowed_pod_number),
            source="scheduler cache" if infos else "pods in the store",
        )
        return ClusterView(summary, rows, q, sort, rv)

    # --- node ------------------------------------------------------------------------------------
    def node(self, name: str) -> tuple[NodeRow, list[PodRow]] | None:
        """A node with its allocation and the pods bound to it; None when there is no such node."""
        store = self.store
        try:
            entry = store.read("Node", None, name)
        except ApiError:
            return None
        infos = self._cache_infos()
        index = self.pod_index.get(store)
        row = self._node_row(entry, infos, index)
        pods = sorted(index.by_node.get(name, []), key=lambda r: (r.namespace, r.name))
        return row, pods

    # --- pods ------------------------------------------------------------------------------------
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
        store = self.store
        index = self.pod_index.get(store)
        state = state if state in POD_STATES else "all"
        sort = sort if sort in POD_SORTS else "name"
        attempts = self.results.attempt_counts()  # one query per request
        rows: Iterable[PodRow] = index.rows
        if namespace:
            rows = (r for r in rows if r.namespace == namespace)
        if node:
            rows = (r for r in rows if r.node == node or r.nominated == node)
        if state == "pending":
            rows = (r for r in rows if not r.bound and not r.terminal)
        elif state == "bound":
            rows = (r for r in rows if r.bound)
        terms = q.split()
        if terms:
            rows = (r for r in rows if pod_matches(r, terms))
        selected = list(rows)
        keys: dict[str, Callable[[PodRow], Any]] = {
            "namespace": lambda r: (r.namespace, r.name),
            "node": lambda r: (r.node == "", r.node, r.namespace, r.name),
            "phase": lambda r: (r.phase, r.namespace, r.name),
            "priority": lambda r: (r.priority, r.namespace, r.name),
            "attempts": lambda r: (attempts.get((r.namespace, r.name), 0), r.namespace, r.name),
            "age": lambda r: (r.created, r.namespace, r.name),
        }
        if sort == "name":
            selected.sort(key=lambda r: (r.name, r.namespace), reverse=desc)
        else:
            selected.sort(key=keys[sort], reverse=desc)
        counts = {
            "all": len(index.rows),
            "pending": sum(1 for r in index.rows if not r.bound and not r.terminal),
            "bound": sum(1 for r in index.rows if r.bound),
        }
        namespaces = [e.name for e in store.select("Namespace").items]
        return PodsView(
            paginate(selected, page),
            attempts,
            q,
            state,
            node,
            namespace,
            sort,
            desc,
            namespaces,
            counts,
            index.resource_version,
        )

    # --- pod detail ------------------------------------------------------------------------------
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
        store = self.store
        rv = store.resource_version
        try:
            entry = store.read("Pod", namespace, name)
        except ApiError:
            return None
        row = pod_row(entry.obj)
        shown, elided = _elide_annotations(entry.obj)
        self.results.flush()  # attempts are written off-thread: show what was submitted before this request
        attempts = self.results.list_attempts(namespace, name)
        chosen = attempt if attempt is not None else (attempts[0]["attempt"] if attempts else None)
        view = (
            self.attempt(namespace, name, chosen, fpage=fpage, fsort=fsort, fnode=fnode, fplugin=fplugin, spage=spage)
            if chosen is not None
            else None
        )
        events = self.events_for("Pod", namespace, name)
        waiting = self.scheduler_running and not attempts and not row.bound and not row.terminal
        return PodDetail(row, to_yaml(shown), elided, attempts, view, events, waiting, rv)

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
        fsort = fsort if fsort in MATRIX_SORTS else "failing"
        filter_page = self.results.get_attempt(
            namespace,
            name,
            number,
            page=fpage,
            page_size=MATRIX_PAGE_SIZE,
            sort=fsort,
            node=fnode or None,
            plugin=fplugin or None,
            top=0,
        )
        if filter_page is None:
            return None
        score_page = self.results.get_attempt(
            namespace, name, number, page=spage, page_size=MATRIX_PAGE_SIZE, sort="total", node=fnode or None, top=8
        )
        assert score_page is not None
        # Nodes that were never scored (filtered out) sort last by total; the score table skips them.
        score_page["matrix"]["rows"] = [r for r in score_page["matrix"]["rows"] if r.get("total") is not None]
        heat, bars = _heat_and_bars(score_page)
        postfilter = filter_page.get("postfilter")
        return AttemptView(
            number=number,
            summary=filter_page,
            filter_page=filter_page,
            score_page=score_page,
            stages=_stages(filter_page),
            postfilter=postfilter,
            victims=list(filter_page.get("victims") or []),
            heat=heat,
            plugin_bars=bars,
            fsort=fsort,
            fnode=fnode,
            fplugin=fplugin,
        )

    def events_for(self, kind: str, namespace: str | None, name: str, limit: int = 20) -> list[Obj]:
        """The newest Events about one object (what ``kubectl describe`` lists)."""
        ns = namespace or "default"
        found = [
            e.obj
            for e in self.store.select("Event", ns if kind != "Node" else None).items
            if (e.obj.get("involvedObject") or {}).get("name") == name
            and (e.obj.get("involvedObject") or {}).get("kind") == kind
        ]
        found.sort(key=lambda o: (str(o.get("lastTimestamp") or ""), int(o["metadata"]["resourceVersion"])))
        return found[-limit:][::-1]

    # --- objects of any kind ---------------------------------------------------------------------
    def objects(self, kind: str, *, q: str = "", page: int = 1) -> Page[StoredEntry]:
        """One page of objects of one kind, matching ``q`` in namespace/name."""
        items = self.store.select(kind).items
        t = q.strip().lower()
        if t:
            items = [e for e in items if t in e.name.lower() or t in e.namespace.lower()]
        return paginate(items, page)

    def object_yaml(self, kind: str, namespace: str, name: str) -> str | None:
        """An object's full YAML for the editor, or None."""
        obj = self.store.get(kind, namespace or None, name)
        if obj is None:
            return None
        obj.get("metadata", {}).pop("managedFields", None)
        return to_yaml(obj)

    def save_yaml(self, text: str, *, target: Target | None = None) -> EditOutcome:
        """Create the object in ``text`` (or replace ``target`` with it) through the store, as the API would.

        On any error nothing is saved and the outcome carries the Status message and the field causes.
        """
        try:
            docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            return _bad(f"the YAML could not be parsed{where}: {problem}", "<document>")
        if not docs:
            return _bad("the document is empty: write one Kubernetes object", "<document>")
        if len(docs) > 1:
            return _bad(f"found {len(docs)} documents: submit one object at a time", "<document>")
        obj = docs[0]
        if not isinstance(obj, dict):
            return _bad("the document must be a Kubernetes object (a mapping)", "<document>")
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            return _bad("Required value: every object needs a kind", "kind")
        info = BY_KIND.get(kind)
        if info is None:
            supported = ", ".join(k.kind for k in KINDS)
            return _bad(f'Unsupported value: "{kind}": supported values: {supported}', "kind")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        namespace = str(meta.get("namespace") or ("default" if info.namespaced else ""))
        name = str(meta.get("name") or "")
        try:
            if target is None:
                saved = self.store.create(kind, obj)
            else:
                if (kind, name) != (target.kind, target.name) or (info.namespaced and namespace != target.namespace):
                    shown = f"{namespace}/{name}" if info.namespaced else name
                    return _bad(
                        f"the object in the editor ({kind} {shown}) is not the one being edited "
                        f"({target.kind} {target.namespace + '/' if target.namespace else ''}{target.name})",
                        "metadata.name",
                    )
                saved = self.store.update(kind, obj)
        except ApiError as exc:
            return _failure(exc, kind, namespace, name)
        smeta = saved.get("metadata") or {}
        return EditOutcome(True, kind, str(smeta.get("namespace") or ""), str(smeta.get("name") or ""), obj=saved)

    def delete(self, kind: str, namespace: str, name: str) -> EditOutcome:
        """Delete one object (a node takes its pods with it, as in the store)."""
        if kind not in BY_KIND:
            return _bad(f'Unsupported value: "{kind}"', "kind")
        try:
            self.store.delete(kind, namespace or None, name)
        except ApiError as exc:
            return _failure(exc, kind, namespace, name)
        return EditOutcome(True, kind, namespace, name)

    # --- scheduler configuration -----------------------------------------------------------------
    def config_yaml(self) -> str:
        """The running KubeSchedulerConfiguration as YAML."""
        scheduler = self.scheduler
        if scheduler is None:
            return ""
        return to_yaml(scheduler.config_document())

    def config_in_effect(self) -> ConfigInEffect | None:
        """What the running configuration amounts to: each profile's plugins per extension point, and the
        document after kube-scheduler's defaulting."""
        scheduler = self.scheduler
        if scheduler is None:
            return None
        return ConfigInEffect(scheduler.plugins_in_effect(), to_yaml(scheduler.defaulted_config_document()))

    def queue_counts(self) -> dict[str, int]:
        """Pods per scheduling queue."""
        scheduler = self.scheduler
        return scheduler.queue.pending_counts() if scheduler is not None else {}

    def apply_config(self, text: str) -> ConfigOutcome:
        """Validate and apply a configuration; on error the running one stays and the field is named."""
        scheduler = self.scheduler
        if scheduler is None:
            return ConfigOutcome(False, text, "<document>", "no scheduler runs in this process")
        try:
            scheduler.update_config(text)
        except ConfigError as exc:
            return ConfigOutcome(False, text, exc.field, exc.detail)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # A document of the wrong shape can fail before validation names a field.
            return ConfigOutcome(False, text, "<document>", f"{type(exc).__name__}: {exc}")
        return ConfigOutcome(True, self.config_yaml())
