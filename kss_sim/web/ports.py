"""What the web layer needs from the other rooms, as structural types.

``kss_sim.web`` types the services it is given with these protocols instead of importing ``cluster.storage.store``,
``results.attempts`` or ``operations.import_export``: those modules pull in SQLAlchemy, and the import contract
keeps the web layer free of it even indirectly. The scheduler is read through ``SchedulerView``, which answers
plain data (``kss_sim.engine_host.view.EngineView`` implements it over the scheduler service), so the pages never
see the engine's cache, ``NodeInfo`` or ``Resource``. Recorded attempts are read through ``Results`` and ``Runs``
with an ``AttemptQuery`` and come back as ``AttemptDetail``: the results room, above this one, builds these types.
The real classes satisfy these protocols (tests/web checks it against the running app).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from kss_sim.kube.objects import Obj

# One profile (scheduler name) with, per extension point, its plugins in run order and their score weights.
ProfilePlugins = tuple[str, list[tuple[str, list[tuple[str, int | None]]]]]


class StoredEntry(Protocol):
    """``kss_sim.cluster.storage.store.StoredObject``: a stored object, read-only."""

    @property
    def obj(self) -> Obj: ...

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def resource_version(self) -> int: ...


class Listing(Protocol):
    """``kss_sim.cluster.storage.listing.ListResult``."""

    @property
    def items(self) -> Sequence[StoredEntry]: ...

    @property
    def resource_version(self) -> int: ...


class Change(Protocol):
    """``kss_sim.cluster.storage.store.WatchEvent``: one committed change."""

    @property
    def type(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def resource_version(self) -> int: ...

    @property
    def obj(self) -> Obj: ...

    @property
    def old(self) -> Obj | None: ...


class Store(Protocol):
    """``kss_sim.cluster.storage.store.ClusterStore``: reads, writes with the API's validation, and the change log."""

    @property
    def resource_version(self) -> int: ...

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None: ...

    def read(self, kind: str, namespace: str | None, name: str) -> StoredEntry: ...

    def select(self, kind: str, namespace: str | None = None) -> Listing: ...

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[Obj], int]: ...

    def create(self, kind: str, obj: Obj, namespace: str | None = None) -> Obj: ...

    def update(self, kind: str, obj: Obj) -> Obj: ...

    def delete(self, kind: str, namespace: str | None, name: str) -> Obj: ...

    def patch(
        self, kind: str, namespace: str | None, name: str, patch: Any, patch_type: str = ..., *, subresource: str | None
    ) -> Obj: ...

    def events_since(self, resource_version: int) -> Sequence[Change]: ...

    def add_waker(self, wake: Callable[[], None]) -> None: ...

    def remove_waker(self, wake: Callable[[], None]) -> None: ...


ATTEMPT_SORTS = ("total", "name", "failing")  # the orders an attempt's node rows can be read in


@dataclass(frozen=True, slots=True)
class AttemptQuery:
    """Which of an attempt's node rows to read (one page of the filter/score matrix, sorted and filtered) and how
    many of the best-scoring nodes to list."""

    page: int = 1
    page_size: int = 100
    sort: str = "total"  # one of ATTEMPT_SORTS
    node: str | None = None  # only the nodes whose name contains this
    plugin: str | None = None  # only the nodes this filter plugin rejected (or stopped at)
    top: int = 10  # best-scoring nodes listed in ``topNodes``


class AttemptSummary(TypedDict):
    """One recorded scheduling attempt of a pod, as ``Results.list_attempts`` lists it."""

    attempt: int
    cycle: int
    profile: str
    startedAt: float  # unix time the cycle started
    durationSeconds: float
    queuedSeconds: float
    result: str  # scheduled, unschedulable or error
    boundTo: str | None
    boundBy: str | None  # score, single-feasible, nominated-node or external (another scheduler bound it)
    nominatedNode: str | None
    message: str
    nodes: int
    feasibleNodes: int
    rejections: dict[str, dict[str, int]]  # plugin -> reason -> nodes, at the plugin where the filters stopped
    kubeVersion: str | None  # the Kubernetes version it was scheduled at (None: recorded before kss had one)
    scheduledBy: str | None  # who bound the pod when another scheduler did (None: kss's own attempt)
    shadowAgrees: bool | None  # with --shadow: whether kss's own choice agreed with that binding (None: not judged)
    victims: list[str]  # the pods its preemption (PostFilter) deleted
    # A v1.36 PodGroup cycle's attempt: the group, its pods in the order tried, the outcome, message and placement,
    # the nominations and workload-aware preemption's victims (``podgroup_cycle.py``).
    podGroup: Obj | None


class MatrixRow(TypedDict):
    """One node of an attempt: each filter plugin's verdict, where the filters stopped, and its scores."""

    node: str
    filter: dict[str, str]
    stoppedAt: str | None
    unresolvable: list[str]
    score: dict[str, int] | None
    normalizedScore: dict[str, int] | None
    finalScore: dict[str, int] | None
    total: int | None
    selected: bool
    tied: bool


class AttemptMatrix(TypedDict):
    """The page of node rows an ``AttemptQuery`` asked for."""

    page: int
    pageSize: int
    totalRows: int
    sort: str
    rows: list[MatrixRow]


class TopNode(TypedDict):
    node: str
    total: int
    finalScore: dict[str, int]


class AttemptDetail(AttemptSummary):
    """One attempt in full, as ``Results.get_attempt`` hands it over: the statuses of every extension point and the
    matrix page asked for (the results API answers the same dict, validated by ``kss_sim.results.schemas``)."""

    pod: str  # namespace/name
    prefilter: dict[str, str] | None
    prefilterStatus: str | None
    prefilterNodes: list[str] | None
    prescore: dict[str, str] | None
    postfilter: Obj | None
    reserve: dict[str, str] | None
    permit: dict[str, str] | None
    permitTimeout: dict[str, float] | None
    permitWait: Obj | None
    prebind: dict[str, str] | None
    bind: dict[str, str] | None
    extenders: dict[str, dict[str, str]]
    selected: list[str] | None  # the node selectHost picked, alone
    tiedNodes: list[str] | None
    tiedCount: int
    tieBreak: str | None
    bestTotal: int | None
    filterPlugins: list[str]
    scorePlugins: list[str]
    weights: dict[str, int]
    topNodes: list[TopNode]
    matrix: AttemptMatrix
    # Another scheduler's binding: binder, node, seconds from creation to binding, Events, conditions, warnings on
    # its result annotations; and the shadow judgement (kss's choice, its best nodes, the rows that explain it).
    external: Obj | None
    shadow: Obj | None


class ShadowRow(TypedDict):
    """One pod another scheduler bound, judged by kss's own scheduler (the Shadow page's row)."""

    pod: str  # namespace/name
    attempt: int
    startedAt: float
    scheduledBy: str | None
    boundTo: str | None
    shadow: Obj


class Results(Protocol):
    """``kss_sim.results.attempts.ResultsService``: recorded attempts."""

    def flush(self) -> None: ...

    def list_attempts(self, namespace: str, pod_name: str) -> list[AttemptSummary]: ...

    def attempt_counts(self) -> dict[tuple[str, str], int]: ...

    def get_attempt(
        self, namespace: str, pod_name: str, attempt: int, query: AttemptQuery = AttemptQuery()
    ) -> AttemptDetail | None: ...


class ShadowJudgements(Protocol):
    """``kss_sim.results.attempts.ResultsService``: the shadow's judgements of other schedulers' bindings."""

    def shadow_judgements(self, *, differing_only: bool = True, limit: int = 200) -> list[ShadowRow]: ...

    def shadow_counts(self) -> dict[str, int]: ...


class Runs(Protocol):
    """``kss_sim.results.runs.RunsService``: replay runs recorded into the results database, with their attempts."""

    def list_runs(self, *, ids: Sequence[int] | None = None) -> list[Obj]: ...

    def compare_group(self, group: str) -> list[Obj]: ...

    def get_run(self, run_id: int) -> Obj | None: ...

    def attempt_counts(self, run_id: int) -> dict[tuple[str, str], int]: ...

    def list_attempts(self, run_id: int, namespace: str, pod_name: str) -> list[AttemptSummary]: ...

    def get_attempt(
        self, run_id: int, namespace: str, pod_name: str, attempt: int, query: AttemptQuery = AttemptQuery()
    ) -> AttemptDetail | None: ...


@dataclass(slots=True)
class ResourceAmounts:
    """Amounts of resources as the scheduler counts them: milli-CPU, bytes, pod slots, extended resources by name."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0
    scalar_resources: dict[str, int] = field(default_factory=dict)

    def add(self, other: ResourceAmounts) -> None:
        """Add ``other`` into these amounts."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.pods += other.pods
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = self.scalar_resources.get(name, 0) + amount


@dataclass(slots=True)  # not frozen: built for every node on every cluster page, and frozen __init__ is slower
class NodeAllocation:
    """One node in the scheduler's cache: what its pods request, what it can hold, and how many pods it holds."""

    requested: ResourceAmounts
    allocatable: ResourceAmounts
    pod_count: int


@dataclass(frozen=True, slots=True)
class ConfigRejection:
    """Why a KubeSchedulerConfiguration was refused: the offending field path and the message."""

    field: str
    message: str


@dataclass(frozen=True, slots=True)
class PluginTimeoutRow:
    """A user's plugin call that ran past KSS_PLUGIN_TIMEOUT (shown as a banner on every page)."""

    plugin: str
    extension_point: str
    pod: str  # namespace/name, "" when the call had no pod
    timeout: float
    seconds_ago: float


@dataclass(frozen=True, slots=True)
class WaitingPodRow:
    """A pod held in Permit now: where it is reserved, which plugins still hold it, for how long."""

    pod: str  # namespace/name
    node: str
    pending_plugins: tuple[str, ...]
    waiting_seconds: float
    remaining_seconds: float  # until the earliest pending plugin's timeout


@dataclass(frozen=True, slots=True)
class DraRequestExplanation:
    """The simulator's account of one claim request on one node (not kube-scheduler's words): the devices the node
    can use, how many the class's and the request's selectors take, how many of those are free."""

    claim: str  # namespace/name
    request: str  # the request's name (``request/subrequest`` for a firstAvailable alternative)
    device_class: str
    wanted: str  # "1", "2", "all", or "-" for an allocated claim
    on_node: int  # devices the node can use (its slices and network-attached ones)
    of_class: int  # of those, matching the device class's selectors
    matching: int  # of those, matching the request's selectors too
    free: int  # of those, not allocated to any claim (nor in flight)
    sentence: str  # the verdict in words ("only 1 of 2 matching devices free, 2 wanted")
    fits: bool  # this request alone could be satisfied here


@dataclass(frozen=True, slots=True)
class DraRequestSummary:
    """The simulator's account of one claim request against the whole cluster, the answer a pending pod's page leads
    with: the devices of the request's class, how many its selectors take, how many are free, on how many nodes."""

    claim: str  # namespace/name
    request: str  # the request's name (``request/subrequest`` for a firstAvailable alternative), "-" for a claim
    device_class: str
    selector: str  # the request's CEL selectors joined with &&, "" for none
    wanted: str  # "1", "2", "all", "-"
    of_class: int  # distinct devices of the class the cluster's nodes can use
    matching: int  # of those, matching the request's selectors too
    free: int  # of those, not allocated to any claim (nor in flight)
    nodes_of_class: int  # nodes that can use a device of the class
    nodes_matching: int  # nodes that can use a matching device
    nodes_fitting: int  # nodes where this request alone could be satisfied now
    sentence: str  # the verdict in words ("no device of class gpu.example.com matches ...")
    fits: bool  # some node could satisfy this request alone


class SchedulerView(Protocol):
    """The scheduler as the pages read it (``kss_sim.engine_host.view.EngineView``): plain data, never its internals."""

    def node_allocations(self) -> dict[str, NodeAllocation]: ...

    def node_pods(self, name: str) -> list[str]: ...

    def pod_requests(self, pod: Obj) -> ResourceAmounts: ...

    def node_allocatable(self, node: Obj) -> ResourceAmounts: ...

    def queue_counts(self) -> dict[str, int]: ...

    def config_document(self) -> Obj: ...

    def defaulted_config_document(self) -> Obj: ...

    def plugins_in_effect(self) -> list[ProfilePlugins]: ...

    def apply_config(self, text: str) -> ConfigRejection | None: ...

    def out_of_tree_plugins(self) -> frozenset[str]:
        """Names of the plugins that are users' own, not kube-scheduler's in-tree ones (marked on the pages)."""
        ...

    def waiting_pods(self) -> list[WaitingPodRow]:
        """Pods waiting in Permit (a gang short of its quorum), oldest first."""
        ...

    def plugin_timeouts(self) -> list[PluginTimeoutRow]:
        """The recent plugin calls that ran past their timeout, latest first."""
        ...

    def explain_dra(self, pod: Obj, nodes: Sequence[str]) -> dict[str, list[DraRequestExplanation]]:
        """Per node, each request of each of the pod's claims against the devices there, as the scheduler's listers
        have them now (the simulator's explanation of a DynamicResources rejection)."""
        ...

    def summarize_dra(self, pod: Obj) -> list[DraRequestSummary]:
        """Each request of each of the pod's claims against every node's devices at once, as the scheduler's listers
        have them now (what a pod DynamicResources keeps pending is short of)."""
        ...


class Operations(Protocol):
    """``kss_sim.operations.import_export.OperationsService``: export, import and reset."""

    def export(self, fmt: str = "json") -> str: ...

    def import_text(self, text: str, *, replace: bool = False, unbind: bool = False) -> Obj: ...

    def reset(self) -> Obj: ...
