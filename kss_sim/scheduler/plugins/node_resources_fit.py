"""NodeResourcesFit: the node must have room for the pod's requests; scoring by resource allocation.

Port of kube-scheduler v1.35 ``noderesources`` (fit.go, resource_allocation.go, least_allocated.go,
most_allocated.go, requested_to_capacity_ratio.go) and ``helper/shape_score.go``, with the v1.35
feature defaults: SidecarContainers and InPlacePodVerticalScaling GA; PodLevelResources follows the run's gate (on
from v1.34, off at v1.33), and so does DRAExtendedResource (on from v1.36): Filter leaves a resource a DeviceClass
serves to DynamicResources on nodes with none of it allocatable (scoring such resources from their devices, when the
scoring strategy names them, is not ported). ``ResourceAllocationScorer`` is shared with
NodeResourcesBalancedAllocation.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import INT64_MAX, INT64_MIN, wrap_int64
from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.cluster_events import NODE_ADD, NODE_UPDATE_ALLOCATABLE, POD_DELETE, POD_UPDATE
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch, NodeColumns
from kss_sim.scheduler.dra.dra_manager import dra_manager_for
from kss_sim.scheduler.dra.extended_capacity import ExtendedResourceTotals, extended_resource_totals
from kss_sim.scheduler.dra.extended_resources import is_dra_extended_resource_name
from kss_sim.scheduler.dra.selectors import DeviceMatchCache
from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    QUEUE,
    QUEUE_SKIP,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
    error,
    events_with_hints,
    success,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, NodeWithout, PodInfo, shared_by_resources
from kss_sim.scheduler.plugins.helper import assigned_or_nominated
from kss_sim.scheduler.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    Resource,
    is_extended_resource_name,
    is_scalar_resource_name,
    milli_of,
    pod_requests,
    qualified_name_errors,
    units_of,
)

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# config.MaxCustomPriorityScore: shape scores are 0..10, scaled to MaxNodeScore.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

DEFAULT_RESOURCES: list[dict[str, Any]] = [{"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1}]


# --- helpers shared with NodeResourcesBalancedAllocation ------------------------------------------


def go_quote(value: Any) -> str:
    """A value as ``field.Error`` prints it: strings quoted, numbers bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def invalid(value: Any, detail: str) -> str:
    """``field.Invalid``'s message."""
    return f"Invalid value: {go_quote(value)}: {detail}"


def _trunc_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round(x: float) -> int:
    """``math.Round``: half away from zero."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return int(t)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """``config.ResourceSpec``: a resource name and its weight in the score."""

    name: str
    weight: int


def parse_resource_specs(raw: Sequence[Mapping[str, Any]]) -> tuple[ResourceSpec, ...]:
    """Defaulted, validated ``resources`` args as ResourceSpecs."""
    return tuple(ResourceSpec(str(r.get("name") or ""), int(r.get("weight") or 0)) for r in raw)


def defaulted_resource_specs(raw: Any) -> list[dict[str, Any]]:
    """v1 defaulting: no resources means cpu and memory; a missing or zero weight means 1."""
    if not raw:
        return copy.deepcopy(DEFAULT_RESOURCES)
    out: list[dict[str, Any]] = []
    for r in raw:
        r = dict(r) if isinstance(r, Mapping) else r
        if isinstance(r, dict) and not r.get("weight"):
            r["weight"] = 1
        out.append(r)
    return out


def resource_specs_type_errors(resources: Any, path: str) -> list[tuple[str, str]]:
    """Malformed lists (what Go's strict decoding would reject) as validation errors."""
    if not isinstance(resources, list):
        return [(path, invalid(resources, "must be a list"))]
    errs: list[tuple[str, str]] = []
    for i, r in enumerate(resources):
        if not isinstance(r, Mapping):
            errs.append((f"{path}[{i}]", invalid(r, "must be an object")))
            continue
        if not isinstance(r.get("name", ""), str):
            errs.append((f"{path}[{i}].name", invalid(r.get("name"), "must be a string")))
        w = r.get("weight", 0)
        if isinstance(w, bool) or not isinstance(w, int):
            errs.append((f"{path}[{i}].weight", invalid(w, "must be an integer")))
    return errs


_D = TypeVar("_D", bound=np.generic)
# Past this many journal entries per node that may be replayed, a whole pass is cheaper than finding the nodes.
_REPLAY_CHANGES_PER_NODE = 4
_K = TypeVar("_K", bound=Hashable)
# Up to this many changed nodes, each is recomputed by itself (``one``: a few µs each); past it, ``whole`` on just
# those nodes (a fixed ~30 µs of array calls).
_REPLAY_ONE_BY_ONE = 12


class NodeColumnCache(Generic[_K, _D]):
    """Per-node values of a plugin that depend only on the node (fixed for a ``NodeColumns``' lifetime: a node
    change gives new columns) and on its pods, kept per key (a pod shape) as a column of every node.

    A column is computed once by ``whole`` on every node, then brought up to date from ``NodeColumns.journal``
    by recomputing only the nodes whose pods changed since, each once: with ``one`` node by node, or with ``whole`` on
    just those (past ``_REPLAY_ONE_BY_ONE``; past ``max_replay``, ``whole`` on every node again).
    So a pod of a shape seen before costs one look-up instead of a pass over its nodes. A node is counted once
    however many of its pod changes the journal holds: in ``kss serve`` each binding is three (assumed, bound,
    started by the kubelet), so counting changes made a shape unused for a dozen cycles recompute every node.
    """

    __slots__ = ("_cols", "_entries", "max_entries", "max_replay")

    def __init__(self, max_entries: int = 32, max_replay: int = 32) -> None:
        self._cols: NodeColumns | None = None
        self._entries: dict[_K, tuple[int, npt.NDArray[_D]]] = {}
        self.max_entries = max_entries
        self.max_replay = max_replay

    def take(
        self,
        batch: NodeBatch,
        key: _K,
        whole: Callable[[NodeBatch], npt.NDArray[_D]],
        one: Callable[[NodeInfo], Any],
    ) -> npt.NDArray[_D]:
        """The values of ``batch``'s nodes (a new array: callers may keep or change it)."""
        cols = batch.cols
        if self._cols is not cols:
            self._cols = cols
            self._entries = {}
        entries = self._entries
        entry = entries.get(key)
        full: npt.NDArray[_D] | None = None
        if entry is not None:
            seq, full = entry
            # How many changes there are, before they are sliced out of the journal (often hundreds in kss serve
            # for a shape last used a while ago).
            pending = cols.journal_base + len(cols.journal) - seq
            changed = None if pending > _REPLAY_CHANGES_PER_NODE * self.max_replay else cols.changed_since(seq)
            if changed is None or len(changed) > self.max_replay:
                full = None
            elif len(changed) <= _REPLAY_ONE_BY_ONE:
                infos, n = cols.infos, cols.n
                for ni in changed.values():
                    i = ni.column_index
                    if 0 <= i < n and infos[i] is ni:
                        full[i] = one(ni)
            else:
                # Many nodes: ``whole`` on just those (from the synced columns) costs less than ``one`` on each.
                infos, n = cols.infos, cols.n
                at = [i for ni in changed.values() if 0 <= (i := ni.column_index) < n and infos[i] is ni]
                cols.sync()
                idx = np.array(at, dtype=np.int64)
                full[idx] = whole(NodeBatch(cols, idx))
        if full is None:
            cols.sync()
            full = whole(NodeBatch.all(cols))
            if len(entries) >= self.max_entries and key not in entries:
                entries.pop(next(iter(entries)))
        entries.pop(key, None)  # most recently used last: the first entry is the one to evict
        entries[key] = (cols.journal_end(), full)
        return full.copy() if batch.full else full[batch.idx]


class ResourceAllocationScorer:
    """``resourceAllocationScorer``: per resource (allocatable, requested) on a node, folded by ``scorer``.

    ``use_requested`` (BalancedAllocation) reads the actual requests; otherwise cpu and memory use the
    non-zero requests (100m / 200Mi for each container without a request), as NodeInfo.NonZeroRequested does.

    ``use_status`` (InPlacePodVerticalScaling) and ``pod_level_resources`` (PodLevelResources): whether the pod's
    requests honour those gates. Upstream sets those flags on BalancedAllocation's scorer only; NodeResourcesFit's
    scorer keeps them off, so Fit scoring ignores pod-level requests (the golden corpus confirms it).
    """

    def __init__(
        self,
        plugin: str,
        resources: Sequence[ResourceSpec],
        scorer: Callable[[list[int], list[int]], int],
        use_requested: bool,
        use_status: bool,
        pod_level_resources: bool,
    ) -> None:
        self.plugin = plugin
        self.use_status = use_status
        self.pod_level_resources = pod_level_resources
        self.resources = tuple(resources)
        self.scorer = scorer
        self.use_requested = use_requested
        self._memo_key = (
            f"{plugin}:requests:{use_status}:{pod_level_resources}:{','.join(r.name for r in self.resources)}"
        )
        self.score_columns: NodeColumnCache[tuple[int, ...], np.int64] = NodeColumnCache()
        # Device verdicts of the DRA-backed extended resources' classes, kept across cycles (upstream's CEL cache).
        self._match_cache: DeviceMatchCache | None = None
        self._dra_named = any(is_dra_extended_resource_name(r.name) for r in self.resources)

    def pod_request_list(self, pod: PodInfo) -> list[int]:
        """``calculatePodResourceRequestList``: the pod's request per configured resource (overhead included)."""

        def compute() -> list[int]:
            reqs = pod_requests(
                pod.pod,
                non_missing=not self.use_requested,
                use_status=self.use_status,
                skip_pod_level=not self.pod_level_resources,
            )
            out: list[int] = []
            for r in self.resources:
                q = reqs.get(r.name, Fraction(0))
                out.append(milli_of(q) if r.name == CPU else units_of(q))
            return out

        return list(pod.memo(self._memo_key, lambda: shared_by_resources(pod, self._memo_key, compute)))

    def allocatable_and_requested(
        self, node_info: NodeInfo, resource: str, pod_request: int, extended: ExtendedResourceTotals | None = None
    ) -> tuple[int, int]:
        """``calculateResourceAllocatableRequest``; (0, 0) leaves the resource out of the score. With ``extended``
        (DRAExtendedResource), a resource the node does not list is counted in the devices of the class serving
        it."""
        if pod_request == 0 and is_scalar_resource_name(resource):
            return 0, 0
        requested = node_info.requested if self.use_requested else node_info.non_zero_requested
        alloc = node_info.allocatable
        if resource == CPU:
            return alloc.milli_cpu, requested.milli_cpu + pod_request
        if resource == MEMORY:
            return alloc.memory, requested.memory + pod_request
        if resource == EPHEMERAL_STORAGE:
            return alloc.ephemeral_storage, node_info.requested.ephemeral_storage + pod_request
        if extended is not None and alloc.scalar_resources.get(resource, 0) == 0:
            devices, allocated = extended.totals(node_info.node, resource)
            if devices > 0:
                return devices, allocated + pod_request
        if resource in alloc.scalar_resources:
            return alloc.scalar_resources[resource], node_info.requested.scalar_resources.get(resource, 0) + pod_request
        return 0, 0

    def columns(self, batch: NodeBatch, pod_requests_list: Sequence[int]) -> list[tuple[IntArray, IntArray] | None]:
        """``allocatable_and_requested`` for every node of ``batch``: per resource (allocatable, requested)
        arrays, None for a resource left out everywhere. A 0 allocatable leaves the resource out on that node."""
        cols = batch.cols
        out: list[tuple[IntArray, IntArray] | None] = []
        for spec, pod_request in zip(self.resources, pod_requests_list, strict=True):
            name = spec.name
            if pod_request == 0 and is_scalar_resource_name(name):
                out.append(None)
            elif name == CPU:
                req = cols.req_cpu if self.use_requested else cols.nz_cpu
                out.append((batch.take(cols.alloc_cpu), batch.take(req) + pod_request))
            elif name == MEMORY:
                req = cols.req_mem if self.use_requested else cols.nz_mem
                out.append((batch.take(cols.alloc_mem), batch.take(req) + pod_request))
            elif name == EPHEMERAL_STORAGE:
                out.append((batch.take(cols.alloc_eph), batch.take(cols.req_eph) + pod_request))
            elif is_scalar_resource_name(name):
                out.append((batch.take(cols.scalar_alloc(name)), batch.take(cols.scalar_req(name)) + pod_request))
            else:
                out.append(None)
        return out

    def requested_and_allocatable(
        self, node_info: NodeInfo, pod_requests_list: Sequence[int], extended: ExtendedResourceTotals | None = None
    ) -> tuple[list[int], list[int]]:
        """Per configured resource, what the node would have requested with the pod and its allocatable (both 0
        for a resource left out)."""
        n = len(self.resources)
        requested = [0] * n
        allocatable = [0] * n
        for i, spec in enumerate(self.resources):
            alloc, req = self.allocatable_and_requested(node_info, spec.name, pod_requests_list[i], extended)
            if alloc == 0:
                continue
            allocatable[i] = alloc
            requested[i] = req
        return requested, allocatable

    def score(
        self, node_info: NodeInfo, pod_requests_list: Sequence[int], extended: ExtendedResourceTotals | None = None
    ) -> tuple[int, Status]:
        if not self.resources:
            return 0, error("resources not found")
        requested, allocatable = self.requested_and_allocatable(node_info, pod_requests_list, extended)
        return self.scorer(requested, allocatable), success()

    def extended_totals(self, handle: Any) -> ExtendedResourceTotals | None:
        """``getDRAPreScoredParams`` for the configured resources (None: none is backed by DRA, or the gate is
        off); ``handle`` None: no cluster to read."""
        if not self._dra_named or handle is None or not handle.gate_enabled("DRAExtendedResource"):
            return None
        if self._match_cache is None:
            consumable = handle.gate_enabled("DRAConsumableCapacity")
            self._match_cache = DeviceMatchCache(consumable_capacity=consumable)
        names = [r.name for r in self.resources]
        return extended_resource_totals(dra_manager_for(handle.cluster), names, self._match_cache)


# --- scoring strategies ---------------------------------------------------------------------------


def least_requested_score(requested: int, capacity: int) -> int:
    """Unused share of the capacity on 0..100; over-committed counts 0."""
    if capacity == 0 or requested > capacity:
        return 0
    return ((capacity - requested) * MAX_NODE_SCORE) // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    """Used share of the capacity on 0..100, capped at 100 (non-zero defaults can exceed capacity)."""
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return (requested * MAX_NODE_SCORE) // capacity


def _weighted_mean_scorer(
    resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int]
) -> Callable[[list[int], list[int]], int]:
    weights = [r.weight for r in resources]

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, cap in enumerate(allocatable):
            if cap == 0:
                continue
            node_score += per_resource(requested[i], cap) * weights[i]
            weight_sum += weights[i]
        return node_score // weight_sum if weight_sum else 0

    return scorer


def weighted_mean_batch(
    resources: Sequence[ResourceSpec], columns: Sequence[tuple[IntArray, IntArray] | None], most: bool, n: int
) -> IntArray:
    """LeastAllocated / MostAllocated over arrays: the weighted mean of the per-resource scores of each node."""
    node_score = np.zeros(n, np.int64)
    weight_sum = np.zeros(n, np.int64)
    for spec, col in zip(resources, columns, strict=True):
        if col is None:
            continue
        cap, req = col
        valid = cap != 0
        safe_cap = np.where(valid, cap, 1)
        if most:
            per = np.minimum(req, safe_cap) * MAX_NODE_SCORE // safe_cap
        else:
            per = np.where(req > cap, 0, (safe_cap - req) * MAX_NODE_SCORE // safe_cap)
        node_score += np.where(valid, per * spec.weight, 0)
        weight_sum += np.where(valid, spec.weight, 0)
    return np.where(weight_sum > 0, node_score // np.maximum(weight_sum, 1), 0)


def least_resource_scorer(resources: Sequence[ResourceSpec]) -> Callable[[list[int], list[int]], int]:
    """LeastAllocated: weighted mean of ``(capacity - requested) * 100 / capacity``."""
    return _weighted_mean_scorer(resources, least_requested_score)


def most_resource_scorer(resources: Sequence[ResourceSpec]) -> Callable[[list[int], list[int]], int]:
    """MostAllocated: weighted mean of ``requested * 100 / capacity``."""
    return _weighted_mean_scorer(resources, most_requested_score)


def broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """``helper.BuildBrokenLinearFunction`` over (utilization, score) points sorted by utilization."""

    def f(p: int) -> int:
        for i, (util, score) in enumerate(shape):
            if p <= util:
                if i == 0:
                    return score
                prev_util, prev_score = shape[i - 1]
                return prev_score + _trunc_div((score - prev_score) * (p - prev_util), util - prev_util)
        return shape[-1][1]

    return f


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[Mapping[str, Any]]
) -> Callable[[list[int], list[int]], int]:
    """RequestedToCapacityRatio: the shape (scores scaled 10 -> 100) at each resource's utilization,
    weighted over the resources scoring above zero, rounded half away from zero."""
    points = [
        (int(p.get("utilization") or 0), int(p.get("score") or 0) * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE))
        for p in shape
    ]
    raw = broken_linear_function(points)
    weights = [r.weight for r in resources]

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, cap in enumerate(allocatable):
            if cap == 0:
                continue
            s = resource_score(requested[i], cap)
            if s > 0:
                node_score += s * weights[i]
                weight_sum += weights[i]
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    return scorer


# --- Filter ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class InsufficientResource:
    """What does not fit: the resource, the reason shown to users, and whether preemption cannot help."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def max_resource(rl: Mapping[str, Fraction]) -> Resource:
    """``Resource.SetMaxResource`` on an empty Resource: cpu, memory, ephemeral storage and scalars (never pods)."""
    r = Resource()
    for name, q in rl.items():
        if name == MEMORY:
            r.memory = max(r.memory, units_of(q))
        elif name == CPU:
            r.milli_cpu = max(r.milli_cpu, milli_of(q))
        elif name == EPHEMERAL_STORAGE:
            r.ephemeral_storage = max(r.ephemeral_storage, units_of(q))
        elif is_scalar_resource_name(name):
            r.scalar_resources[name] = max(r.scalar_resources.get(name, 0), units_of(q))
    return r


def compute_pod_resource_request(pod: PodInfo, *, pod_level_resources: bool = True) -> Resource:
    """``computePodResourceRequest``: the pod's requests as the Fit filter compares them (pod-level requests
    ignored with the PodLevelResources gate off)."""
    key = f"{NAME}:request" if pod_level_resources else f"{NAME}:request:no-pod-level"
    return pod.memo(
        key,
        lambda: shared_by_resources(
            pod, key, lambda: max_resource(pod_requests(pod.pod, skip_pod_level=not pod_level_resources))
        ),
    )


def fits_request(
    pod_request: Resource,
    node_info: NodeInfo,
    ignored_extended_resources: frozenset[str] = frozenset(),
    ignored_resource_groups: frozenset[str] = frozenset(),
    dra_backed: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """``fitsRequest``: every resource the node lacks, in upstream's order (pods, cpu, memory,
    ephemeral-storage, scalar resources). A request above the node's whole allocatable is unresolvable. A resource
    in ``dra_backed`` (a DeviceClass serves it) is left to DynamicResources on a node with none of it allocatable."""
    return fits_request_on(
        pod_request,
        node_info.allocatable,
        node_info.requested,
        len(node_info.pods),
        ignored_extended_resources,
        ignored_resource_groups,
        dra_backed,
    )


def fits_request_on(
    pod_request: Resource,
    alloc: Resource,
    used: Resource,
    num_pods: int,
    ignored_extended_resources: frozenset[str] = frozenset(),
    ignored_resource_groups: frozenset[str] = frozenset(),
    dra_backed: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """``fits_request`` on a node of allocatable ``alloc`` holding ``num_pods`` pods that request ``used``."""
    out: list[InsufficientResource] = []
    allowed_pods = alloc.allowed_pod_number
    if num_pods + 1 > allowed_pods:
        out.append(InsufficientResource("pods", "Too many pods", 1, num_pods, allowed_pods))
    if (
        pod_request.milli_cpu == 0
        and pod_request.memory == 0
        and pod_request.ephemeral_storage == 0
        and not pod_request.scalar_resources
    ):
        return out
    cpu = pod_request.milli_cpu
    if cpu > 0 and cpu > alloc.milli_cpu - used.milli_cpu:
        out.append(
            InsufficientResource(CPU, "Insufficient cpu", cpu, used.milli_cpu, alloc.milli_cpu, cpu > alloc.milli_cpu)
        )
    mem = pod_request.memory
    if mem > 0 and mem > alloc.memory - used.memory:
        out.append(
            InsufficientResource(MEMORY, "Insufficient memory", mem, used.memory, alloc.memory, mem > alloc.memory)
        )
    eph = pod_request.ephemeral_storage
    if eph > 0 and eph > alloc.ephemeral_storage - used.ephemeral_storage:
        out.append(
            InsufficientResource(
                EPHEMERAL_STORAGE,
                "Insufficient ephemeral-storage",
                eph,
                used.ephemeral_storage,
                alloc.ephemeral_storage,
                eph > alloc.ephemeral_storage,
            )
        )
    # Upstream walks a Go map here (random order); the pod's own order keeps ours deterministic.
    for name, quant in pod_request.scalar_resources.items():
        if quant == 0:
            continue
        if is_extended_resource_name(name):
            group = name.split("/")[0] if ignored_resource_groups else ""
            if name in ignored_extended_resources or group in ignored_resource_groups:
                continue
        cap = alloc.scalar_resources.get(name, 0)
        if cap <= 0 and name in dra_backed:
            continue
        in_use = used.scalar_resources.get(name, 0)
        if quant > cap - in_use:
            out.append(InsufficientResource(name, f"Insufficient {name}", quant, in_use, cap, quant > cap))
    return out


def fits(pod: PodInfo, node_info: NodeInfo) -> list[InsufficientResource]:
    """``Fits``: the pod against the node with nothing ignored (pod-level requests counted as the node counts
    them)."""
    return fits_request(compute_pod_resource_request(pod, pod_level_resources=node_info.pod_level_resources), node_info)


# --- the plugin -----------------------------------------------------------------------------------


def _scaled_down_for(pod: PodInfo, old: PodInfo, new: PodInfo) -> bool:
    """``isSchedulableAfterPodScaleDown``: ``pod`` itself changed, or a bound pod's request of something ``pod``
    requests went down."""
    if new.uid == pod.uid:
        return True
    if not new.node_name:
        return False
    before = max_resource(pod_requests(old.pod, use_status=True))
    after = max_resource(pod_requests(new.pod, use_status=True))
    for name, amount in pod_requests(pod.pod, use_status=True).items():
        if not amount:
            continue
        if name == CPU:
            shrunk = before.milli_cpu > after.milli_cpu
        elif name == MEMORY:
            shrunk = before.memory > after.memory
        elif name == EPHEMERAL_STORAGE:
            shrunk = before.ephemeral_storage > after.ephemeral_storage
        else:
            shrunk = is_scalar_resource_name(name) and before.scalar_resources.get(
                name, 0
            ) > after.scalar_resources.get(name, 0)
        if shrunk:
            return True
    return False


def _request_key(r: Resource) -> tuple[Any, ...]:
    """What NodeResourcesFit's verdicts and status keys depend on in a pod: its requests."""
    return (r.milli_cpu, r.memory, r.ephemeral_storage, tuple(r.scalar_resources.items()))


def _resource_columns(batch: NodeBatch, name: str) -> tuple[IntArray, IntArray]:
    """Allocatable and requested amounts of resource ``name`` on the batch's nodes."""
    cols = batch.cols
    if name == CPU:
        return batch.take(cols.alloc_cpu), batch.take(cols.req_cpu)
    if name == MEMORY:
        return batch.take(cols.alloc_mem), batch.take(cols.req_mem)
    if name == EPHEMERAL_STORAGE:
        return batch.take(cols.alloc_eph), batch.take(cols.req_eph)
    return batch.take(cols.scalar_alloc(name)), batch.take(cols.scalar_req(name))


class _PreFilterState:
    """The pod's requests, what ``fitsRequest`` compares and the key of the cached columns; never mutated, so
    clones share it."""

    __slots__ = ("check_names", "checks", "dra_backed", "key", "request")

    def __init__(
        self, request: Resource, checks: list[tuple[str, int]], dra_backed: frozenset[str] = frozenset()
    ) -> None:
        self.request = request
        self.checks = checks
        self.check_names = tuple(name for name, _ in checks)
        # The requested resources a DeviceClass serves (DRAExtendedResource): DynamicResources' on nodes lacking them.
        self.dra_backed = dra_backed
        self.key = (*_request_key(request), tuple(sorted(dra_backed)) if dra_backed else ())

    def clone(self) -> _PreFilterState:
        return self


class _PreScoreState:
    __slots__ = ("extended", "pod_requests")

    def __init__(self, pod_requests_list: list[int], extended: ExtendedResourceTotals | None = None) -> None:
        self.pod_requests = pod_requests_list
        self.extended = extended

    def clone(self) -> _PreScoreState:
        return self


def validate_function_shape(shape: Any, path: str) -> list[tuple[str, str]]:
    """``validateFunctionShape``: at least one point, utilization increasing in [0, 100], score in [0, 10]."""
    if not shape:
        return [(path, "Required value: at least one point must be specified")]
    if not isinstance(shape, list) or not all(isinstance(p, Mapping) for p in shape):
        return [(path, invalid(shape, "must be a list of points"))]
    errs: list[tuple[str, str]] = []
    for i, p in enumerate(shape):
        for key in ("utilization", "score"):
            v = p.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, int):
                errs.append((f"{path}[{i}].{key}", invalid(v, "must be an integer")))
    if errs:
        return errs
    for i in range(1, len(shape)):
        if int(shape[i - 1].get("utilization") or 0) >= int(shape[i].get("utilization") or 0):
            errs.append(
                (
                    f"{path}[{i}].utilization",
                    invalid(shape[i].get("utilization") or 0, "values must be sorted in increasing order"),
                )
            )
            break
    for i, p in enumerate(shape):
        util = int(p.get("utilization") or 0)
        score = int(p.get("score") or 0)
        if util < 0 or util > MAX_UTILIZATION:
            errs.append((f"{path}[{i}].utilization", invalid(util, f"not in valid range [0, {MAX_UTILIZATION}]")))
        if score < 0 or score > MAX_CUSTOM_PRIORITY_SCORE:
            errs.append((f"{path}[{i}].score", invalid(score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")))
    return errs


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """Filter: the node has room for the pod's requests. Score: the configured scoring strategy."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Any, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        a = self.args if self.args else self.defaulted_args({})
        self.ignored_resources = frozenset(str(r) for r in a.get("ignoredResources") or [])
        self.ignored_resource_groups = frozenset(str(g) for g in a.get("ignoredResourceGroups") or [])
        strategy = a.get("scoringStrategy") or {}
        self.strategy: str = str(strategy.get("type") or LEAST_ALLOCATED)
        resources = parse_resource_specs(strategy.get("resources") or DEFAULT_RESOURCES)
        scorer: Callable[[list[int], list[int]], int]
        if self.strategy == MOST_ALLOCATED:
            scorer = most_resource_scorer(resources)
        elif self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            shape = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or []
            scorer = requested_to_capacity_ratio_scorer(resources, shape)
        else:
            scorer = least_resource_scorer(resources)
        self.scorer = ResourceAllocationScorer(
            NAME, resources, scorer, use_requested=False, use_status=False, pod_level_resources=False
        )
        self.pod_level_resources = handle is None or handle.gate_enabled("PodLevelResources")
        self.dra_extended_resource = handle is not None and handle.gate_enabled("DRAExtendedResource")
        # Filter verdicts per pod request, for every node; and which checks fail (recording: the status keys).
        self.fit_columns: NodeColumnCache[tuple[Any, ...], np.bool_] = NodeColumnCache()
        self.key_columns: NodeColumnCache[tuple[Any, ...], np.int64] = NodeColumnCache()
        # (checked resource names, key) -> (code, reasons) of the status: the same for every pod and node.
        self._key_statuses: dict[tuple[tuple[str, ...], int], tuple[Code, tuple[str, ...]]] = {}
        # From v1.34 a request above the node's whole allocatable is unresolvable (no preemption candidate there);
        # v1.33 says Unschedulable for every shortage.
        version = handle.kube_version if handle is not None else kube_version()  # no handle: args checks alone
        self.over_allocatable_unresolvable = version.minor >= 34
        self._hint_nodes: dict[int, tuple[Obj, NodeInfo]] = {}

    # --- args ---
    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """``SetDefaults_NodeResourcesFitArgs``: LeastAllocated on cpu and memory (weight 1 each)."""
        out = copy.deepcopy(dict(args))
        strategy = out.get("scoringStrategy")
        if strategy is None:
            out["scoringStrategy"] = {"type": LEAST_ALLOCATED, "resources": copy.deepcopy(DEFAULT_RESOURCES)}
        elif isinstance(strategy, dict):
            res = strategy.get("resources")
            if not res or isinstance(res, list):
                strategy["resources"] = defaulted_resource_specs(res)
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidateNodeResourcesFitArgs``."""
        errs: list[tuple[str, str]] = []
        for key in ("ignoredResources", "ignoredResourceGroups"):
            values = args.get(key) or []
            if not isinstance(values, list):
                errs.append((key, invalid(values, "must be a list")))
                continue
            for i, value in enumerate(values):
                if not isinstance(value, str):
                    errs.append((f"{key}[{i}]", invalid(value, "must be a string")))
                    continue
                if key == "ignoredResourceGroups" and "/" in value:
                    errs.append((f"{key}[{i}]", invalid(value, "resource group name can't contain '/'")))
                errs.extend((f"{key}[{i}]", invalid(value, msg)) for msg in qualified_name_errors(value))
        strategy = args.get("scoringStrategy")
        if strategy is None:
            return errs
        if not isinstance(strategy, Mapping):
            return [*errs, ("scoringStrategy", invalid(strategy, "must be an object"))]
        stype = strategy.get("type") or ""
        if stype not in SUPPORTED_STRATEGIES:
            supported = ", ".join(json.dumps(s) for s in SUPPORTED_STRATEGIES)
            errs.append(
                ("scoringStrategy.type", f"Unsupported value: {go_quote(stype)}: supported values: {supported}")
            )
        resources = strategy.get("resources") or []
        shape_errs = resource_specs_type_errors(resources, "scoringStrategy.resources")
        errs.extend(shape_errs)
        if not shape_errs:
            for i, r in enumerate(resources):
                w = int(r.get("weight") or 0)
                if w <= 0 or w > 100:
                    msg = f"resource weight of {r.get('name') or ''} not in valid range (0, 100]"
                    errs.append((f"scoringStrategy.resources[{i}].weight", invalid(w, msg)))
        rtc = strategy.get("requestedToCapacityRatio")
        if rtc is not None:
            errs.extend(validate_function_shape((rtc or {}).get("shape"), "scoringStrategy.shape"))
        elif stype == REQUESTED_TO_CAPACITY_RATIO:
            # kube-scheduler would dereference the missing struct and crash; refuse it instead.
            errs.append(("scoringStrategy.requestedToCapacityRatio", "Required value"))
        return errs

    # --- EnqueueExtensions ---
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod deleted or scaled down (InPlacePodVerticalScaling, on in every version kss runs) may free room; a
        node added or its allocatable changed may fit the pod (with queueing hints no other node update)."""
        return [
            *events_with_hints((POD_DELETE, POD_UPDATE), self.is_schedulable_after_pod_event),
            *events_with_hints((NODE_ADD, NODE_UPDATE_ALLOCATABLE), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_event(self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """A deleted pod that was bound or nominated somewhere, or a pod whose requests of what ``pod`` asks for
        went down (or ``pod`` itself resized)."""
        if new is None:
            return QUEUE if old is not None and assigned_or_nominated(old) else QUEUE_SKIP
        if old is None:
            return QUEUE_SKIP
        return QUEUE if _scaled_down_for(pod, old, new) else QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Obj | None, new: Obj | None) -> QueueingHint:
        """The pod fits the (empty) changed node, and it is new or some allocatable the pod requests grew."""
        if new is None:
            return QUEUE_SKIP
        modified = self._hint_node_info(new)
        if fits(pod, modified):  # something insufficient even on the empty node
            return QUEUE_SKIP
        return QUEUE if old is None else self._grew(pod, old, modified)

    def _hint_node_info(self, node: Obj) -> NodeInfo:
        """An event's node as an empty NodeInfo, built once for every pod the event is judged for (the last
        event's two nodes are kept)."""
        hit = self._hint_nodes.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        if len(self._hint_nodes) >= 2:
            self._hint_nodes.clear()
        ni = NodeInfo(node, pod_level_resources=self.pod_level_resources)
        self._hint_nodes[id(node)] = (node, ni)
        return ni

    def _grew(self, pod: PodInfo, old: Obj, modified: NodeInfo) -> QueueingHint:
        """``haveAnyRequestedResourcesIncreased``."""
        before = self._hint_node_info(old).allocatable
        after = modified.allocatable
        if after.allowed_pod_number > before.allowed_pod_number:
            return QUEUE
        r = compute_pod_resource_request(pod, pod_level_resources=self.pod_level_resources)
        if (
            (r.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
            or (r.memory > 0 and after.memory > before.memory)
            or (r.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
        ):
            return QUEUE
        for name, amount in r.scalar_resources.items():
            if amount and after.scalar_resources.get(name, 0) > before.scalar_resources.get(name, 0):
                return QUEUE
        return QUEUE_SKIP

    # --- PreFilter / Filter ---
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        request = compute_pod_resource_request(pod, pod_level_resources=self.pod_level_resources)
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(request, self._checks(request), self._dra_backed(request)))
        return None, success()

    def _dra_backed(self, request: Resource) -> frozenset[str]:
        """``shouldDelegateResourceToDRA`` without the node: the requested resources some DeviceClass serves."""
        if not self.dra_extended_resource or not request.scalar_resources:
            return frozenset()
        classes = dra_manager_for(self.handle.cluster).extended_resource_classes()
        return frozenset(
            name
            for name, quant in request.scalar_resources.items()
            if quant != 0 and is_dra_extended_resource_name(name) and name in classes
        )

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        return self._filter_on(state, node_info.allocatable, node_info.requested, len(node_info.pods))

    def filter_without(self, state: CycleState, pod: PodInfo, node: NodeWithout) -> Status:
        """``filter`` reads only the node's allocatable, requested and pod count: ``node`` has the last two."""
        return self._filter_on(state, node.node_info.allocatable, node.requested, node.num_pods)

    def reprieve_without(self, state: CycleState, pod: PodInfo, node: NodeWithout) -> Callable[[PodInfo], bool] | None:
        """``filter_without`` after each pod put back, as plain sums: the pod count and each resource the pod
        requests (what ``fits_request_on`` compares), wrapped as ``Resource.add`` wraps them. None for a pod
        requesting scalar resources (their rules stay in ``fits_request_on``)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState) or s.request.scalar_resources:
            return None
        request, alloc, used = s.request, node.node_info.allocatable, node.requested
        # Per resource compared: (the attribute, what the node can hold for the pod, in use now).
        compared = [
            (attr, getattr(alloc, attr) - getattr(request, attr), getattr(used, attr))
            for attr in ("milli_cpu", "memory", "ephemeral_storage")
            if getattr(request, attr) > 0
        ]
        counted = node.node_info.counted_requests
        pods_room = [alloc.allowed_pod_number - node.num_pods - 1]  # fits while >= 0

        def put_back_fits(pi: PodInfo) -> bool:
            added = counted(pi)
            after = []
            for attr, limit, in_use in compared:
                total = in_use + getattr(added, attr)
                if not INT64_MIN <= total <= INT64_MAX:
                    total = wrap_int64(total)
                if total > limit:
                    return False
                after.append(total)
            if pods_room[0] < 1:
                return False
            pods_room[0] -= 1
            for k, total in enumerate(after):
                attr, limit, _ = compared[k]
                compared[k] = (attr, limit, total)
            return True

        return put_back_fits

    def _filter_on(self, state: CycleState, alloc: Resource, used: Resource, num_pods: int) -> Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        insufficient = fits_request_on(
            s.request, alloc, used, num_pods, self.ignored_resources, self.ignored_resource_groups, s.dra_backed
        )
        if not insufficient:
            return success()
        code = Code.UNSCHEDULABLE
        if self.over_allocatable_unresolvable and any(r.unresolvable for r in insufficient):
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return Status(code, *(r.reason for r in insufficient))

    # --- PreScore / Score ---
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        extended = self.scorer.extended_totals(self.handle) if self.dra_extended_resource else None
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(self.scorer.pod_request_list(pod), extended))
        return success()

    def _pre_score_state(self, state: CycleState, pod: PodInfo) -> _PreScoreState:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s
        extended = self.scorer.extended_totals(self.handle) if self.dra_extended_resource else None
        return _PreScoreState(self.scorer.pod_request_list(pod), extended)

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        s = self._pre_score_state(state, pod)
        return self.scorer.score(node_info, s.pod_requests, s.extended)

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        """``fitsRequest`` on columns: room for the pod count and every requested resource (kept per request for
        every node, see ``NodeColumnCache``)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        r, checks, backed = s.request, s.checks, s.dra_backed
        ignored, groups = self.ignored_resources, self.ignored_resource_groups
        return self.fit_columns.take(
            batch,
            s.key,
            lambda nodes: self._fits_columns(checks, backed, nodes),
            lambda ni: not fits_request_on(r, ni.allocatable, ni.requested, len(ni.pods), ignored, groups, backed),
        )

    @staticmethod
    def _fits_columns(checks: list[tuple[str, int]], dra_backed: frozenset[str], batch: NodeBatch) -> BoolArray:
        cols = batch.cols
        ok: BoolArray = batch.take(cols.num_pods) + 1 <= batch.take(cols.alloc_pods)
        for name, quant in checks:
            alloc, req = _resource_columns(batch, name)
            if name in dra_backed:
                ok &= (quant <= alloc - req) | (alloc <= 0)
            else:
                ok &= quant <= alloc - req
        return ok

    def _checks(self, r: Resource) -> list[tuple[str, int]]:
        """The resources ``fitsRequest`` compares, in its order, with the pod's amounts (ignored ones left out)."""
        checks: list[tuple[str, int]] = []
        if r.milli_cpu > 0:
            checks.append((CPU, r.milli_cpu))
        if r.memory > 0:
            checks.append((MEMORY, r.memory))
        if r.ephemeral_storage > 0:
            checks.append((EPHEMERAL_STORAGE, r.ephemeral_storage))
        for name, quant in r.scalar_resources.items():
            if quant != 0:
                # Ignored resources never fail: left out of the checks whatever the columns say, as in filter.
                if is_extended_resource_name(name):
                    group = name.split("/")[0] if self.ignored_resource_groups else ""
                    if name in self.ignored_resources or group in self.ignored_resource_groups:
                        continue
                checks.append((name, quant))
        return checks

    def filter_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """Which checks of ``fitsRequest`` fail, as bits (bit 0: too many pods; then two per checked resource:
        short of room, over allocatable), 0 where the pod fits: the status's reasons and code follow from them.
        Kept per request for every node, as the verdicts are (``NodeColumnCache``)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        checks, backed = s.checks, s.dra_backed
        if len(checks) > 30:
            return None
        return self.key_columns.take(
            batch,
            s.key,
            lambda nodes: self._key_columns(checks, backed, nodes),
            lambda ni: self._node_key(checks, backed, ni),
        )

    @staticmethod
    def _key_columns(checks: list[tuple[str, int]], dra_backed: frozenset[str], batch: NodeBatch) -> IntArray:
        cols = batch.cols
        keys: IntArray = (batch.take(cols.num_pods) + 1 > batch.take(cols.alloc_pods)).astype(np.int64)
        for i, (name, quant) in enumerate(checks):
            alloc, req = _resource_columns(batch, name)
            short, over = quant > alloc - req, quant > alloc
            if name in dra_backed:
                # Left to DynamicResources where the node has none of it: never short there.
                checked = alloc > 0
                short, over = short & checked, over & checked
            # A comparison's booleans shifted are int64 already (the bits are distinct: adding sets them).
            keys += short << (1 + 2 * i)
            keys += over << (2 + 2 * i)
        return keys

    @staticmethod
    def _node_key(checks: list[tuple[str, int]], dra_backed: frozenset[str], ni: NodeInfo) -> int:
        """``_key_columns`` of one node, from its NodeInfo (the columns may not be synced yet)."""
        alloc, used = ni.allocatable, ni.requested
        key = int(len(ni.pods) + 1 > alloc.allowed_pod_number)
        for i, (name, quant) in enumerate(checks):
            if name == CPU:
                cap, in_use = alloc.milli_cpu, used.milli_cpu
            elif name == MEMORY:
                cap, in_use = alloc.memory, used.memory
            elif name == EPHEMERAL_STORAGE:
                cap, in_use = alloc.ephemeral_storage, used.ephemeral_storage
            else:
                cap, in_use = alloc.scalar_resources.get(name, 0), used.scalar_resources.get(name, 0)
            if cap <= 0 and name in dra_backed:
                continue
            key |= int(quant > cap - in_use) << (1 + 2 * i) | int(quant > cap) << (2 + 2 * i)
        return key

    def filter_status_of_key(self, state: CycleState, pod: PodInfo, key: int) -> Status | None:
        """The status of ``fitsRequest``'s failures as ``filter_keys`` encodes them."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        names = s.check_names
        hit = self._key_statuses.get((names, key))
        if hit is None:
            reasons = ["Too many pods"] if key & 1 else []
            unresolvable = False
            for i, name in enumerate(names):
                if key >> (1 + 2 * i) & 1:
                    reasons.append(f"Insufficient {name}")
                    unresolvable = unresolvable or bool(key >> (2 + 2 * i) & 1)
            unresolvable = unresolvable and self.over_allocatable_unresolvable
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
            hit = self._key_statuses[(names, key)] = (code, tuple(reasons))
        return Status(hit[0], *hit[1])

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        if self.strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED) or not self.scorer.resources:
            return None
        s = self._pre_score_state(state, pod)
        if s.extended is not None:
            return None  # devices counted per node (score_nodes)
        reqs = s.pod_requests
        scorer = self.scorer
        most = self.strategy == MOST_ALLOCATED

        def whole(nodes: NodeBatch) -> IntArray:
            return weighted_mean_batch(scorer.resources, scorer.columns(nodes, reqs), most, len(nodes))

        def one(ni: NodeInfo) -> int:
            return scorer.scorer(*scorer.requested_and_allocatable(ni, reqs))  # score's, resources known

        return scorer.score_columns.take(batch, tuple(reqs), whole, one)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        pre = self._pre_score_state(state, pod)
        scores: list[int] = []
        for ni in nodes:
            s, st = self.scorer.score(ni, pre.pod_requests, pre.extended)
            if not st.is_success():
                return scores, st
            scores.append(s)
        return scores, success()
