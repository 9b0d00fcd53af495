"""NodeResourcesBalancedAllocation: favour nodes whose resource fractions stay close to each other.

Port of kube-scheduler v1.35 ``noderesources/balanced_allocation.go``: the actual requests (no
non-zero defaults), each fraction capped at 1, score ``int64((1 - std) * 100)``; best-effort pods
(requesting none of the resources) are skipped at PreScore. From v1.36 the score is the change in balance the pod
brings, ``50 + (50 + balance with the pod - balance without it) / 2`` (``balanced_improvement``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch
from kss_sim.scheduler.dra.extended_capacity import ExtendedResourceTotals
from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    SKIP,
    CycleState,
    PreScorePlugin,
    ScorePlugin,
    Status,
    error,
    success,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.node_resources_fit import (
    DEFAULT_RESOURCES,
    ResourceAllocationScorer,
    defaulted_resource_specs,
    go_quote,
    invalid,
    parse_resource_specs,
    resource_specs_type_errors,
)
from kss_sim.scheduler.resources import CPU, MEMORY

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def balanced_resource_scorer(requested: list[int], allocatable: list[int]) -> int:
    """``balancedResourceScorer``: 100 × (1 − standard deviation of the requested/allocatable fractions).

    Two resources use ``|f1 − f2| / 2``; one resource has no deviation.
    """
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = min(float(req) / float(alloc), 1.0)
        total += fraction
        fractions.append(fraction)
    if len(fractions) == 2:  # the usual cpu and memory, without _std_score's call (scored per node, per pod)
        return int((1 - abs((fractions[0] - fractions[1]) / 2)) * float(MAX_NODE_SCORE))
    return _std_score(fractions, total)


def _std_score(fractions: list[float], total: float) -> int:
    """``balancedResourceScorer``'s last step on the fractions it kept (and their sum)."""
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_with_and_without(requested: list[int], pod: list[int], allocatable: list[int]) -> tuple[int, int]:
    """``balanced_resource_scorer`` of the node with the pod (``requested``) and without it (``requested - pod``),
    in one pass over the resources (v1.36 scores both on every node) with the same arithmetic."""
    if len(allocatable) == 2 and allocatable[0] and allocatable[1]:
        # The usual two resources (cpu and memory) both counted: the deviation is half the fractions' gap.
        cap0, cap1 = float(allocatable[0]), float(allocatable[1])
        (req0, req1), (pod0, pod1) = requested, pod
        with_std = abs((min(float(req0) / cap0, 1.0) - min(float(req1) / cap1, 1.0)) / 2)
        without_std = abs((min(float(req0 - pod0) / cap0, 1.0) - min(float(req1 - pod1) / cap1, 1.0)) / 2)
        return int((1 - with_std) * float(MAX_NODE_SCORE)), int((1 - without_std) * float(MAX_NODE_SCORE))
    with_fractions: list[float] = []
    without_fractions: list[float] = []
    with_total = without_total = 0.0
    for req, pod_req, alloc in zip(requested, pod, allocatable, strict=True):
        if alloc == 0:
            continue
        cap = float(alloc)
        fraction = min(float(req) / cap, 1.0)
        with_total += fraction
        with_fractions.append(fraction)
        fraction = min(float(req - pod_req) / cap, 1.0)
        without_total += fraction
        without_fractions.append(fraction)
    return _std_score(with_fractions, with_total), _std_score(without_fractions, without_total)


def balanced_improvement(with_pod: int, without_pod: int) -> int:
    """v1.36's ``balancedResourceScorer``: both balances are in [50, 100], so their difference in [-50, 50]; brought
    back to [50, 100] (about 75 when the pod changes little, towards 100 when it improves the balance)."""
    return MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_pod - without_pod) // 2


class _PreScoreState:
    __slots__ = ("extended", "pod_requests")

    def __init__(self, pod_requests_list: list[int], extended: ExtendedResourceTotals | None = None) -> None:
        self.pod_requests = pod_requests_list
        self.extended = extended

    def clone(self) -> _PreScoreState:
        return self


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    """Score: how evenly the pod would leave the node's resources used."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Any, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        a = self.args if self.args else self.defaulted_args({})
        resources = parse_resource_specs(a.get("resources") or DEFAULT_RESOURCES)
        self.scorer = ResourceAllocationScorer(
            NAME,
            resources,
            balanced_resource_scorer,
            use_requested=True,
            use_status=True,
            pod_level_resources=handle is None or handle.gate_enabled("PodLevelResources"),
        )
        # v1.36 scores the improvement in balance rather than the balance with the pod.
        self.score_improvement = handle is not None and handle.kube_version.minor >= 36
        # The default resources, in this order: a changed node's v1.36 score reads them off its NodeInfo.
        self._cpu_and_memory = tuple(r.name for r in resources) == (CPU, MEMORY)

    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """``SetDefaults_NodeResourcesBalancedAllocationArgs``: cpu and memory; a missing or zero weight is 1."""
        out = copy.deepcopy(dict(args))
        res = out.get("resources")
        if not res or isinstance(res, list):
            out["resources"] = defaulted_resource_specs(res)
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidateNodeResourcesBalancedAllocationArgs``: no duplicate names, every weight 1."""
        resources = args.get("resources") or []
        errs = resource_specs_type_errors(resources, "resources")
        if errs:
            return errs
        seen: set[str] = set()
        for i, r in enumerate(resources):
            name = str(r.get("name") or "")
            if name in seen:
                errs.append((f"resources[{i}].name", f"Duplicate value: {go_quote(name)}"))
            else:
                seen.add(name)
            weight = int(r.get("weight") or 0)
            if weight != 1:
                errs.append((f"resources[{i}].weight", invalid(weight, "must be 1")))
        return errs

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        reqs = self.scorer.pod_request_list(pod)
        if not any(reqs):
            # Best-effort pods would all pile onto the same node (kubernetes#129138).
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(reqs, self._extended_totals()))
        return success()

    def _extended_totals(self) -> ExtendedResourceTotals | None:
        # v1.36.2 gives this scorer no CEL cache, so a DRA-backed resource whose class has a CEL selector makes its
        # Score panic there; the devices are counted here as NodeResourcesFit's scorer counts them.
        return self.scorer.extended_totals(self.handle)

    def _pre_score_state(self, state: CycleState, pod: PodInfo) -> _PreScoreState | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s
        reqs = self.scorer.pod_request_list(pod)
        return _PreScoreState(reqs, self._extended_totals()) if any(reqs) else None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        s = self._pre_score_state(state, pod)
        if s is None:
            return 0, success()
        return self._score_node(node_info, s.pod_requests, s.extended)

    def _score_node(
        self, node_info: NodeInfo, reqs: list[int], extended: ExtendedResourceTotals | None = None
    ) -> tuple[int, Status]:
        if not self.score_improvement:
            return self.scorer.score(node_info, reqs, extended)
        if not self.scorer.resources:
            return 0, error("resources not found")
        requested, allocatable = self.scorer.requested_and_allocatable(node_info, reqs, extended)
        return balanced_improvement(*balanced_with_and_without(requested, reqs, allocatable)), success()

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """``balancedResourceScorer`` on columns (one or two resources; more go through ``score``)."""
        s = self._pre_score_state(state, pod)
        n = len(batch)
        if s is None:
            return np.zeros(n, np.int64)
        if not self.scorer.resources or len(self.scorer.resources) > 2 or s.extended is not None:
            return None  # more resources, or devices counted per node: score_nodes
        reqs = s.pod_requests
        scorer = self.scorer
        # A changed node is scored as _score_node scores it, without its Status (resources known, no devices).
        one: Callable[[NodeInfo], int]
        if self.score_improvement:
            one = self._improvement_of_node(reqs)
        else:

            def one(ni: NodeInfo) -> int:
                return scorer.scorer(*scorer.requested_and_allocatable(ni, reqs))

        columns = self._improvement_columns if self.score_improvement else self._score_columns
        return scorer.score_columns.take(batch, tuple(reqs), lambda nodes: columns(nodes, reqs), one)

    def _improvement_of_node(self, reqs: list[int]) -> Callable[[NodeInfo], int]:
        """A changed node's v1.36 score as ``_score_node`` gives it (resources known, no devices). With cpu and
        memory as the resources and both allocatable, ``balanced_with_and_without``'s two-resource arithmetic on the
        NodeInfo's own values, without the per-resource lists (the balance without the pod is the node's requests)."""
        scorer = self.scorer
        half = MAX_NODE_SCORE // 2
        max_score = float(MAX_NODE_SCORE)

        def listed(ni: NodeInfo) -> int:
            requested, allocatable = scorer.requested_and_allocatable(ni, reqs)
            return balanced_improvement(*balanced_with_and_without(requested, reqs, allocatable))

        if not self._cpu_and_memory:
            return listed
        pod_cpu, pod_memory = reqs

        def cpu_and_memory(ni: NodeInfo) -> int:
            alloc = ni.allocatable
            cap_cpu, cap_memory = alloc.milli_cpu, alloc.memory
            if not (cap_cpu and cap_memory):
                return listed(ni)
            used = ni.requested  # BalancedAllocation's scorer reads the actual requests
            used_cpu, used_memory = used.milli_cpu, used.memory
            cap0, cap1 = float(cap_cpu), float(cap_memory)
            with_std = abs(
                (min(float(used_cpu + pod_cpu) / cap0, 1.0) - min(float(used_memory + pod_memory) / cap1, 1.0)) / 2
            )
            without_std = abs((min(float(used_cpu) / cap0, 1.0) - min(float(used_memory) / cap1, 1.0)) / 2)
            return half + (half + int((1 - with_std) * max_score) - int((1 - without_std) * max_score)) // 2

        return cpu_and_memory

    def _score_columns(self, batch: NodeBatch, reqs: list[int]) -> IntArray:
        """``balancedResourceScorer`` on columns (one or two resources): the balance with the pod."""
        n = len(batch)
        fractions = []
        valid = []
        with np.errstate(divide="ignore", invalid="ignore"):
            for col in self.scorer.columns(batch, reqs):
                if col is None:
                    continue
                cap, req = col
                ok = cap != 0
                denominator = np.where(ok, cap, 1).astype(np.float64)
                fractions.append(np.minimum(req.astype(np.float64) / denominator, 1.0))
                valid.append(ok)
        std = np.zeros(n, np.float64)
        if len(fractions) == 2:
            both = valid[0] & valid[1]
            std = np.where(both, np.abs((fractions[0] - fractions[1]) / 2), 0.0)
        scores: IntArray = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
        return scores

    def _improvement_columns(self, batch: NodeBatch, reqs: list[int]) -> IntArray:
        """v1.36's ``balancedResourceScorer`` on columns (one or two resources): the balance with the pod against the
        balance without it, in ``_score_columns``' arithmetic. Each resource's requests with and without the pod are
        two rows of one array, so every operation serves both balances, done in place; a node lacking a resource
        (its fractions divided by zero, never read) gets no deviation afterwards."""
        n = len(batch)
        fractions: list[npt.NDArray[np.float64]] = []
        valid: list[BoolArray] = []
        with np.errstate(divide="ignore", invalid="ignore"):
            for col, pod_request in zip(self.scorer.columns(batch, reqs), reqs, strict=True):
                if col is None:
                    continue
                cap, req = col
                rows = np.empty((2, n), np.int64)
                rows[0] = req
                np.subtract(req, pod_request, out=rows[1])
                fraction = rows.astype(np.float64)
                fraction /= cap.astype(np.float64)
                np.minimum(fraction, 1.0, out=fraction)
                fractions.append(fraction)
                valid.append(cap != 0)
            if len(fractions) == 2:
                std = fractions[0]
                std -= fractions[1]
                std /= 2
                np.abs(std, out=std)
                both = valid[0] & valid[1]
                if not both.all():
                    std[:, ~both] = 0.0
            else:
                std = np.zeros((2, n), np.float64)
            np.subtract(1, std, out=std)
            std *= float(MAX_NODE_SCORE)
        balance = std.astype(np.int64)
        half = MAX_NODE_SCORE // 2
        scores: IntArray = balance[0]
        scores -= balance[1]
        scores += half
        scores //= 2
        scores += half
        return scores

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        pre = self._pre_score_state(state, pod)
        if pre is None:
            return [0] * len(nodes), success()
        scores: list[int] = []
        for ni in nodes:
            s, st = self._score_node(ni, pre.pod_requests, pre.extended)
            if not st.is_success():
                return scores, st
            scores.append(s)
        return scores, success()
