"""InterPodAffinity: required and preferred pod affinity / anti-affinity (``plugins/interpodaffinity``).

PreFilter counts, per topology pair (label key, value), the existing pods whose required anti-affinity
rejects the incoming pod (the symmetric rule) and the existing pods matching the incoming pod's own
required affinity and anti-affinity terms; Filter reads those counts. PreScore sums term weights per
topology pair (the incoming pod's preferred terms, and existing pods' required (× hardPodAffinityWeight)
and preferred terms toward the incoming pod); Score adds up the pairs of a node; NormalizeScore is a
float min-max scaling.

The incoming pod's ``namespaceSelector`` is unrolled into its namespace set, as v1.35 does. v1.35 passes
the term by value there, so the selector itself stays in place and is still matched against an empty
label set afterwards; that only matters for selectors an empty set satisfies (NotIn, DoesNotExist) and
is reproduced here on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import orjson

from kss_sim.kube.objects import Obj
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch, NodeColumns
from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    QUEUE,
    QUEUE_SKIP,
    SKIP,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    NodeScore,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
    error,
    events_with_hints,
    success,
    unresolvable,
    unschedulable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.helper import assigned_or_nominated, node_labels

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

_NO_LABELS: Mapping[str, str] = {}

TopologyPair = tuple[str, str]


# --- label selectors (metav1.LabelSelectorAsSelector) ----------------------------------------------


class LabelSelector:
    """A compiled ``metav1.LabelSelector``: ``None`` selects nothing, ``{}`` selects everything."""

    __slots__ = ("_nothing", "requirements")

    def __init__(self, requirements: list[tuple[str, str, frozenset[str]]], nothing: bool = False) -> None:
        self.requirements = requirements
        self._nothing = nothing

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> LabelSelector:
        """Compile a selector; ValueError for what ``LabelSelectorAsSelector`` rejects."""
        if raw is None:
            return cls([], nothing=True)
        reqs: list[tuple[str, str, frozenset[str]]] = []
        for key, value in (raw.get("matchLabels") or {}).items():
            reqs.append((str(key), "In", frozenset((str(value),))))
        for expr in raw.get("matchExpressions") or []:
            op = expr.get("operator")
            key = str(expr.get("key") or "")
            values = [str(v) for v in expr.get("values") or []]
            if op in ("In", "NotIn"):
                if not values:
                    raise ValueError(
                        "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
                    )
            elif op in ("Exists", "DoesNotExist"):
                if values:
                    raise ValueError(
                        f"values: Invalid value: {values}: values set must be empty for exists and does not exist"
                    )
            else:
                raise ValueError(f'"{op}" is not a valid label selector operator')
            reqs.append((key, str(op), frozenset(values)))
        return cls(reqs)

    def empty(self) -> bool:
        """``Selector.Empty()``: true for the select-everything selector only (Nothing is not empty)."""
        return not self._nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self._nothing:
            return False
        for key, op, values in self.requirements:
            if op == "In":
                if labels.get(key) not in values:  # a missing key (None) is never among the values
                    return False
            elif op == "NotIn":
                if key in labels and labels[key] in values:
                    return False
            elif op == "Exists":
                if key not in labels:
                    return False
            elif key in labels:  # DoesNotExist
                return False
        return True


# --- affinity terms (framework.AffinityTerm) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed ``PodAffinityTerm``: namespaces, label selector, topology key and namespace selector."""

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str] | None) -> bool:
        """The pod is in one of the term's namespaces (or its namespace's labels match) and its labels match."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(ns_labels or _NO_LABELS):
            return self.selector.matches(pod.labels)
        return False

    def with_namespaces(self, extra: Iterable[str]) -> AffinityTerm:
        return AffinityTerm(
            self.namespaces | frozenset(extra), self.selector, self.topology_key, self.namespace_selector
        )


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """A pod's four term lists, plus the parse errors (a group that fails to parse is left empty)."""

    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...]
    errors: tuple[str, ...]

    def error_message(self) -> str:
        """``utilerrors.NewAggregate`` rendering: one error alone, several in brackets."""
        if len(self.errors) == 1:
            return self.errors[0]
        return "[" + ", ".join(self.errors) + "]"


def _new_term(pod: PodInfo, raw: Mapping[str, Any]) -> AffinityTerm:
    selector = LabelSelector.parse(raw.get("labelSelector"))
    raw_ns_selector = raw.get("namespaceSelector")
    namespaces = list(raw.get("namespaces") or [])
    # Empty namespaces and no namespaceSelector mean the pod's own namespace.
    if not namespaces and raw_ns_selector is None:
        namespaces = [pod.namespace]
    ns_selector = LabelSelector.parse(raw_ns_selector)
    return AffinityTerm(frozenset(namespaces), selector, str(raw.get("topologyKey") or ""), ns_selector)


def _parse_terms(pod: PodInfo) -> PodAffinityTerms:
    affinity = pod.affinity
    pod_aff = affinity.get("podAffinity") or {}
    pod_anti = affinity.get("podAntiAffinity") or {}
    errors: list[str] = []

    def required(raw_terms: list[dict[str, Any]] | None, what: str) -> tuple[AffinityTerm, ...]:
        try:
            return tuple(_new_term(pod, t) for t in raw_terms or [])
        except ValueError as exc:
            errors.append(f"{what}: {exc}")
            return ()

    def preferred(raw_terms: list[dict[str, Any]] | None, what: str) -> tuple[WeightedAffinityTerm, ...]:
        try:
            return tuple(
                WeightedAffinityTerm(_new_term(pod, t.get("podAffinityTerm") or {}), int(t.get("weight") or 0))
                for t in raw_terms or []
            )
        except ValueError as exc:
            errors.append(f"{what}: {exc}")
            return ()

    req_aff = required(pod_aff.get("requiredDuringSchedulingIgnoredDuringExecution"), "requiredAffinityTerms")
    req_anti = required(pod_anti.get("requiredDuringSchedulingIgnoredDuringExecution"), "requiredAntiAffinityTerms")
    pref_aff = preferred(pod_aff.get("preferredDuringSchedulingIgnoredDuringExecution"), "preferredAffinityTerms")
    pref_anti = preferred(pod_anti.get("preferredDuringSchedulingIgnoredDuringExecution"), "preferredAntiAffinityTerms")
    return PodAffinityTerms(req_aff, req_anti, pref_aff, pref_anti, tuple(errors))


_NO_TERMS = PodAffinityTerms((), (), (), (), ())


def pod_terms(pod: PodInfo) -> PodAffinityTerms:
    """The pod's parsed affinity terms, cached on the PodInfo."""
    if not pod.has_pod_affinity_or_anti_affinity:
        return _NO_TERMS  # nothing to parse (most pods): one shared, immutable value
    return pod.memo("InterPodAffinity:terms", lambda: _parse_terms(pod))


def pod_matches_all_affinity_terms(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """True iff there is at least one term and the pod matches every one (incoming terms: no ns labels)."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


# --- PreFilter state ---------------------------------------------------------------------------------


class TopologyCounts(dict[TopologyPair, int]):
    """topology pair -> count (``topologyToMatchedTermCount``)."""

    def update_pair(self, node_labels: Mapping[str, str], key: str, value: int) -> None:
        """Add ``value`` to the node's pair for ``key`` (if the node has it), dropping it when it reaches zero."""
        tv = node_labels.get(key)
        if tv is None:
            return
        pair = (key, tv)
        n = self.get(pair, 0) + value
        if n == 0:
            self.pop(pair, None)
        else:
            self[pair] = n

    def update_with_affinity_terms(
        self, terms: Sequence[AffinityTerm], pod: PodInfo, node_labels: Mapping[str, str], value: int
    ) -> None:
        """Count every term's pair when ``pod`` matches all the terms."""
        if pod_matches_all_affinity_terms(terms, pod):
            for t in terms:
                self.update_pair(node_labels, t.topology_key, value)

    def update_with_anti_affinity_terms(
        self,
        terms: Sequence[AffinityTerm],
        pod: PodInfo,
        ns_labels: Mapping[str, str] | None,
        node_labels: Mapping[str, str],
        value: int,
    ) -> None:
        """Count the pair of each term ``pod`` matches."""
        for t in terms:
            if t.matches(pod, ns_labels):
                self.update_pair(node_labels, t.topology_key, value)

    def clone(self) -> TopologyCounts:
        return TopologyCounts(self)


class PreFilterState:
    """What PreFilter computed for Filter; AddPod/RemovePod keep it current in what-if runs."""

    __slots__ = (
        "affinity_counts",
        "anti_affinity_counts",
        "existing_anti_affinity_counts",
        "namespace_labels",
        "pod",
        "required_affinity",
        "required_anti_affinity",
    )

    def __init__(
        self,
        pod: PodInfo,
        required_affinity: tuple[AffinityTerm, ...],
        required_anti_affinity: tuple[AffinityTerm, ...],
        namespace_labels: Mapping[str, str],
    ) -> None:
        self.pod = pod
        # The incoming pod's terms with their namespaceSelector unrolled into the namespaces.
        self.required_affinity = required_affinity
        self.required_anti_affinity = required_anti_affinity
        self.namespace_labels = namespace_labels
        # Existing pods whose required anti-affinity terms match the incoming pod.
        self.existing_anti_affinity_counts = TopologyCounts()
        # Existing pods matching all of the incoming pod's required affinity terms.
        self.affinity_counts = TopologyCounts()
        # Existing pods matching the incoming pod's required anti-affinity terms.
        self.anti_affinity_counts = TopologyCounts()

    def clone(self) -> PreFilterState:
        c = PreFilterState(self.pod, self.required_affinity, self.required_anti_affinity, self.namespace_labels)
        c.existing_anti_affinity_counts = self.existing_anti_affinity_counts.clone()
        c.affinity_counts = self.affinity_counts.clone()
        c.anti_affinity_counts = self.anti_affinity_counts.clone()
        return c

    def update_with_pod(self, other: PodInfo, node_labels: Mapping[str, str], multiplier: int) -> None:
        """Account for ``other`` appearing (+1) on or leaving (-1) a node with ``node_labels``."""
        self.existing_anti_affinity_counts.update_with_anti_affinity_terms(
            pod_terms(other).required_anti_affinity, self.pod, self.namespace_labels, node_labels, multiplier
        )
        self.affinity_counts.update_with_affinity_terms(self.required_affinity, other, node_labels, multiplier)
        self.anti_affinity_counts.update_with_anti_affinity_terms(
            self.required_anti_affinity, other, None, node_labels, multiplier
        )


class PreScoreState:
    """topology key -> value -> summed weight, as PreScore built it for Score."""

    __slots__ = ("topology_score",)

    def __init__(self, topology_score: dict[str, dict[str, int]]) -> None:
        self.topology_score = topology_score

    def clone(self) -> PreScoreState:
        # Read-only after PreScore (upstream does not copy it either).
        return self


class _Extensions(PreFilterExtensions):
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo) -> Status:
        s = _read_pre_filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_add, node_info.labels, 1)
        return success()

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status:
        s = _read_pre_filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_remove, node_info.labels, -1)
        return success()


def _read_pre_filter_state(state: CycleState) -> PreFilterState | Status:
    value = state.get(PRE_FILTER_STATE_KEY)
    if value is None:
        return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
    if not isinstance(value, PreFilterState):
        return error(f"{value!r}  convert to interpodaffinity.state error")
    return value


def _read_pre_score_state(state: CycleState) -> PreScoreState | Status:
    value = state.get(PRE_SCORE_STATE_KEY)
    if value is None:
        return error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
    if not isinstance(value, PreScoreState):
        return error(f"{value!r}  convert to interpodaffinity.preScoreState error")
    return value


# --- the plugin --------------------------------------------------------------------------------------


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """Inter-pod affinity and anti-affinity, required (Filter) and preferred (Score)."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        self.hard_pod_affinity_weight = int(self.args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT))
        self.ignore_preferred_terms_of_existing_pods = bool(self.args.get("ignorePreferredTermsOfExistingPods", False))
        self._extensions = _Extensions()

    # --- EnqueueExtensions ------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod added, relabelled or deleted; a node added or relabelled (with queueing hints no taint change)."""
        return [
            *events_with_hints(("Pod/Add", ev.POD_UPDATE, ev.POD_DELETE), self.is_schedulable_after_pod_change),
            *events_with_hints((ev.NODE_ADD, ev.NODE_UPDATE_LABEL), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """A bound or nominated pod that now matches every required affinity term, or no longer (or, deleted, did)
        matches every required anti-affinity term; a deleted pod whose own anti-affinity terms the pod matched."""
        if new is not None and old is not None and pod.uid == new.uid:
            return QUEUE
        if (new is not None and not assigned_or_nominated(new)) or (old is not None and not assigned_or_nominated(old)):
            return QUEUE_SKIP
        terms = pod_terms(pod)
        if terms.errors:
            return QUEUE
        affinity, anti = terms.required_affinity, terms.required_anti_affinity
        if new is not None and old is not None:
            if not pod_matches_all_affinity_terms(affinity, old) and pod_matches_all_affinity_terms(affinity, new):
                return QUEUE
            if pod_matches_all_affinity_terms(anti, old) and not pod_matches_all_affinity_terms(anti, new):
                return QUEUE
            return QUEUE_SKIP
        if new is not None:
            return QUEUE if pod_matches_all_affinity_terms(affinity, new) else QUEUE_SKIP
        if old is None:
            return QUEUE_SKIP
        if pod_matches_all_affinity_terms(anti, old):
            return QUEUE
        deleted_terms = pod_terms(old)
        if deleted_terms.errors:
            return QUEUE
        return QUEUE if pod_matches_all_affinity_terms(deleted_terms.required_anti_affinity, pod) else QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Obj | None, new: Obj | None) -> QueueingHint:
        """A node gaining an affinity term's topology key or changing its value; with anti-affinity terms, a node
        added, or losing a term's key or changing its value."""
        if new is None:
            return QUEUE_SKIP
        terms = pod_terms(pod)
        if terms.errors:
            return QUEUE
        after = node_labels(new)
        before = node_labels(old) if old is not None else None
        for term in terms.required_affinity:
            key = term.topology_key
            if before is None:
                if key in after:
                    return QUEUE
                continue
            if key in after and (key not in before or before[key] != after[key]):
                return QUEUE
        for term in terms.required_anti_affinity:
            key = term.topology_key
            if before is None:
                return QUEUE
            if key in before and (key not in after or before[key] != after[key]):
                return QUEUE
        return QUEUE_SKIP

    # --- args ---------------------------------------------------------------------------------
    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """``SetDefaults_InterPodAffinityArgs``: hardPodAffinityWeight 1 when unset."""
        out = dict(args)
        if out.get("hardPodAffinityWeight") is None:
            out["hardPodAffinityWeight"] = DEFAULT_HARD_POD_AFFINITY_WEIGHT
        if out.get("ignorePreferredTermsOfExistingPods") is None:
            out["ignorePreferredTermsOfExistingPods"] = False
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidateInterPodAffinityArgs``: hardPodAffinityWeight within [0, 100]."""
        problems: list[tuple[str, str]] = []
        for key in args:
            if key not in ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"):
                problems.append((key, f'unknown field "{key}"'))
        weight = args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT)
        if isinstance(weight, bool) or not isinstance(weight, int):
            problems.append(("hardPodAffinityWeight", f"Invalid value: {weight!r}: must be an integer"))
        elif not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            problems.append(
                (
                    "hardPodAffinityWeight",
                    f"Invalid value: {weight}: not in valid range "
                    f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
                )
            )
        ignore = args.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            problems.append(("ignorePreferredTermsOfExistingPods", f"Invalid value: {ignore!r}: must be a boolean"))
        return problems

    # --- namespaces ---------------------------------------------------------------------------
    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """``GetNamespaceLabelsSnapshot``: the namespace's labels, empty when it is unknown."""
        return dict(self.handle.cluster.namespace_labels(namespace))

    def _merge_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """``mergeAffinityTermNamespacesIfNotEmpty``: add the namespaces the selector picks (selector kept)."""
        if term.namespace_selector.empty():
            return term
        picked = [
            name
            for name, ns in self.handle.cluster.namespaces.items()
            if term.namespace_selector.matches((ns.get("metadata") or {}).get("labels") or _NO_LABELS)
        ]
        return term.with_namespaces(picked) if picked else term

    # --- PreFilter / Filter -------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        terms = pod_terms(pod)
        if terms.errors:
            return None, unresolvable(f"parsing pod: {terms.error_message()}")
        if not terms.required_affinity and not terms.required_anti_affinity and not self._any_pod_with(anti=True):
            # No terms of its own and no existing pod with required anti-affinity: every count is empty.
            return None, SKIP
        s = self._cached_pre_filter_state(pod, nodes)
        if s is None:
            s = self._compute_pre_filter_state(pod, nodes, terms)
        if not s.existing_anti_affinity_counts and not s.required_affinity and not s.required_anti_affinity:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, success()

    def _any_pod_with(self, *, anti: bool) -> bool:
        """Whether some pod in the snapshot has required anti-affinity terms (``anti``) or any (anti-)affinity
        terms: upstream's HavePodsWith(RequiredAnti)AffinityList is not empty."""
        snapshot = self.handle.snapshot
        if not snapshot.node_info_list:
            return False
        with_affinity, with_anti = _pods_with_terms(snapshot.columns())
        return (with_anti if anti else with_affinity) > 0

    def _cached_pre_filter_state(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterState | None:
        """The PreFilter state of an earlier pod of the same shape, brought up to date with the pod changes since
        (what AddPod/RemovePod do); None when there is none to reuse (it is computed and kept then)."""
        key = _pre_filter_key(pod)
        snapshot = self.handle.snapshot
        if key is None or nodes is not snapshot.node_info_list:
            return None
        cols = snapshot.columns()
        full_key = (key, tuple(sorted(self._namespace_labels(pod.namespace).items())))
        cache: dict[Any, tuple[int, PreFilterState]] = cols.cached(f"{NAME}:preFilterStates", dict)
        entry = cache.pop(full_key, None)  # taken out and put back last: the least recently used shape goes first
        base: PreFilterState | None = None
        if entry is not None:
            seq, base = entry
            changes = cols.changes_since(seq)
            if changes is None:
                base = None
            else:
                for other, ni, sign in changes:
                    base.update_with_pod(other, ni.labels, sign)
        if base is None:
            base = self._compute_pre_filter_state(pod, nodes, pod_terms(pod))
        if len(cache) >= _STATE_CACHE_MAX:
            cache.pop(next(iter(cache)))
        cache[full_key] = (cols.journal_end(), base)
        s = base.clone()
        s.pod = pod
        return s

    def _compute_pre_filter_state(
        self, pod: PodInfo, nodes: Sequence[NodeInfo], terms: PodAffinityTerms
    ) -> PreFilterState:
        s = PreFilterState(
            pod,
            tuple(self._merge_namespaces(t) for t in terms.required_affinity),
            tuple(self._merge_namespaces(t) for t in terms.required_anti_affinity),
            self._namespace_labels(pod.namespace),
        )
        # The symmetric rule: existing pods whose required anti-affinity matches the incoming pod.
        existing = s.existing_anti_affinity_counts
        for ni in self.handle.snapshot.have_pods_with_required_anti_affinity_list:
            for existing_pod in ni.pods_with_required_anti_affinity:
                existing.update_with_anti_affinity_terms(
                    pod_terms(existing_pod).required_anti_affinity, pod, s.namespace_labels, ni.labels, 1
                )
        if s.required_affinity or s.required_anti_affinity:
            for ni in nodes:
                for existing_pod in ni.pods:
                    s.affinity_counts.update_with_affinity_terms(s.required_affinity, existing_pod, ni.labels, 1)
                    s.anti_affinity_counts.update_with_anti_affinity_terms(
                        s.required_anti_affinity, existing_pod, None, ni.labels, 1
                    )
        return s

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self._extensions

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        """``filter`` on label columns and the PreFilter counts per topology pair."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return None
        ok: BoolArray = _failure_kinds(s, batch) == 0
        return ok

    def filter_status_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """Which of the three checks fails first (each has its own status)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return None
        return _failure_kinds(s, batch)

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        s = _read_pre_filter_state(state)
        if isinstance(s, Status):
            return s
        labels = node_info.labels
        if not _satisfy_pod_affinity(s, labels):
            return unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not _satisfy_pod_anti_affinity(s, labels):
            return unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not _satisfy_existing_pods_anti_affinity(s, labels):
            return unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return success()

    # --- PreScore / Score ---------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        affinity = pod.affinity
        has_preferred_affinity = bool(
            (affinity.get("podAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
        )
        has_preferred_anti_affinity = bool(
            (affinity.get("podAntiAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
        )
        has_constraints = has_preferred_affinity or has_preferred_anti_affinity
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP

        terms = pod_terms(pod)
        if terms.errors:
            return error(f"failed to parse pod: {terms.error_message()}")
        if not has_constraints and not self._any_pod_with(anti=False):
            # No preferred terms of its own and no existing pod with (anti-)affinity terms: no topology scores.
            return SKIP
        scorer = _PreScoreCounter(self, pod, terms, has_constraints)
        sums = self._cached_pre_score_sums(pod, scorer)
        if sums is None:
            sums = scorer.full()
        # An entry exists as soon as a term matched, even if the weights sum to zero.
        topology_score: dict[str, dict[str, int]] = {}
        for (key, value), (total, matches) in sums.items():
            if matches > 0:
                topology_score.setdefault(key, {})[value] = total
        if not topology_score:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(topology_score))
        return success()

    def _cached_pre_score_sums(self, pod: PodInfo, scorer: _PreScoreCounter) -> dict[TopologyPair, list[int]] | None:
        """The PreScore sums of an earlier pod of the same shape, brought up to date with the pod changes since;
        None when there is none to reuse (they are computed and kept then)."""
        key = _pre_score_key(pod)
        if key is None:
            return None
        cols = self.handle.snapshot.columns()
        # hardPodAffinityWeight is the only plugin argument the sums depend on (profiles share the snapshot).
        full_key = (key, tuple(sorted(scorer.ns_labels.items())), scorer.hard_weight)
        cache: dict[Any, tuple[int, dict[TopologyPair, list[int]]]] = cols.cached(f"{NAME}:preScoreSums", dict)
        entry = cache.pop(full_key, None)  # taken out and put back last: the least recently used shape goes first
        sums: dict[TopologyPair, list[int]] | None = None
        if entry is not None:
            seq, sums = entry
            changes = cols.changes_since(seq)
            if changes is None:
                sums = None
            else:
                for other, ni, sign in changes:
                    scorer.add_pod(sums, other, ni.labels, sign)
        if sums is None:
            sums = scorer.full()
        if len(cache) >= _STATE_CACHE_MAX:
            cache.pop(next(iter(cache)))
        cache[full_key] = (cols.journal_end(), sums)
        return sums

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        s = _read_pre_score_state(state)
        if isinstance(s, Status):
            return 0, s
        return _node_score(s.topology_score, node_info.labels), success()

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        s = _read_pre_score_state(state)
        if isinstance(s, Status):
            return [], s
        topology_score = s.topology_score
        return [_node_score(topology_score, ni.labels) for ni in nodes], success()

    def has_normalize(self) -> bool:
        return True

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """Min-max scaling in float, truncated; all zero when every node scored the same."""
        s = _read_pre_score_state(state)
        if isinstance(s, Status):
            return s
        if not s.topology_score or not scores:
            return success()
        min_count = min(ns.score for ns in scores)
        max_count = max(ns.score for ns in scores)
        diff = max_count - min_count
        for ns in scores:
            f = float(MAX_NODE_SCORE) * ((ns.score - min_count) / diff) if diff > 0 else 0.0
            ns.score = int(f)
        return success()


_STATE_CACHE_MAX = 64


def _pods_with_terms(cols: NodeColumns) -> tuple[int, int]:
    """How many pods of the columns' nodes have (anti-)affinity terms and required anti-affinity terms: counted
    once, then kept up to date from the pod changes since (``NodeColumns.journal``)."""
    entry: list[int] | None = cols.derived.get(_PODS_WITH_TERMS)
    changes = None if entry is None else cols.changes_since(entry[0])
    if entry is None or changes is None:
        cols.sync()
        entry = [0, int(cols.num_affinity_pods.sum()), int(cols.num_anti_affinity_pods.sum())]
        cols.derived[_PODS_WITH_TERMS] = entry
    else:
        for other, _, sign in changes:
            if other.has_pod_affinity_or_anti_affinity:
                entry[1] += sign
                if other.has_required_anti_affinity:
                    entry[2] += sign
    entry[0] = cols.journal_end()
    return entry[1], entry[2]


_PODS_WITH_TERMS = f"{NAME}:podsWithTerms"


class _PreScoreCounter:
    """PreScore's sums per topology pair, pod by pod: [summed weight, number of matching terms]."""

    def __init__(self, plugin: InterPodAffinity, pod: PodInfo, terms: PodAffinityTerms, has_constraints: bool) -> None:
        self.snapshot = plugin.handle.snapshot
        self.pod = pod
        self.has_constraints = has_constraints
        self.hard_weight = plugin.hard_pod_affinity_weight
        self.ns_labels = plugin._namespace_labels(pod.namespace)
        preferred_affinity = [
            WeightedAffinityTerm(plugin._merge_namespaces(w.term), w.weight) for w in terms.preferred_affinity
        ]
        preferred_anti_affinity = [
            WeightedAffinityTerm(plugin._merge_namespaces(w.term), w.weight) for w in terms.preferred_anti_affinity
        ]
        # The incoming pod's preferred terms (namespaces merged; matched with no namespace labels, so whether the
        # kept namespaceSelector admits every namespace is fixed per term).
        self.incoming = [
            (
                w.term.topology_key,
                sign * w.weight,
                w.term.namespaces,
                w.term.namespace_selector.matches(_NO_LABELS),
                w.term.selector,
            )
            for sign, group in ((1, preferred_affinity), (-1, preferred_anti_affinity))
            for w in group
        ]

    def full(self) -> dict[TopologyPair, list[int]]:
        """The sums over every pod in the snapshot."""
        sums: dict[TopologyPair, list[int]] = {}
        snapshot = self.snapshot
        if self.incoming:
            for ni in snapshot.node_info_list:
                if ni.labels:
                    for p in ni.pods:
                        self.add_pod(sums, p, ni.labels, 1)
        else:
            # Only pods with affinity of their own have terms toward the incoming pod.
            for ni in snapshot.have_pods_with_affinity_list:
                if ni.labels:
                    for p in ni.pods_with_affinity:
                        self.add_pod(sums, p, ni.labels, 1)
        return sums

    def add_pod(self, sums: dict[TopologyPair, list[int]], p: PodInfo, labels: Mapping[str, str], sign: int) -> None:
        """Add (sign 1) or take away (-1) what pod ``p`` on a node with ``labels`` contributes."""
        if not labels:
            return

        def add(key: str, value: str, weight: int) -> None:
            entry = sums.get((key, value))
            if entry is None:
                entry = sums[(key, value)] = [0, 0]
            entry[0] += sign * weight
            entry[1] += sign

        # Every existing pod counts toward the incoming pod's preferred terms.
        for key, weight, namespaces, any_namespace, selector in self.incoming:
            tv = labels.get(key)
            if tv is not None and (any_namespace or p.namespace in namespaces) and selector.matches(p.labels):
                add(key, tv, weight)
        if not p.has_pod_affinity_or_anti_affinity:
            return
        existing_terms = pod_terms(p)
        pod, ns_labels = self.pod, self.ns_labels
        if self.hard_weight > 0:
            # Required affinity of an existing pod counts hardPodAffinityWeight.
            for t in existing_terms.required_affinity:
                tv = labels.get(t.topology_key)
                if tv is not None and t.matches(pod, ns_labels):
                    add(t.topology_key, tv, self.hard_weight)
        for w in existing_terms.preferred_affinity:
            tv = labels.get(w.term.topology_key)
            if tv is not None and w.term.matches(pod, ns_labels):
                add(w.term.topology_key, tv, w.weight)
        for w in existing_terms.preferred_anti_affinity:
            tv = labels.get(w.term.topology_key)
            if tv is not None and w.term.matches(pod, ns_labels):
                add(w.term.topology_key, tv, -w.weight)


def _affinity_key(pod: PodInfo, *, with_preferred: bool) -> str | None:
    """What the pod's PreFilter (required terms) or PreScore (also preferred terms) state depends on besides
    the cluster's pods and the namespace's labels: its namespace, labels and pod (anti-)affinity. None when a
    considered term has a namespaceSelector (the state then also depends on the cluster's namespaces)."""

    def build() -> str | None:
        affinity = pod.affinity
        groups = [affinity.get("podAffinity") or {}, affinity.get("podAntiAffinity") or {}]
        for g in groups:
            for t in g.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
                if t.get("namespaceSelector") is not None:
                    return None
            if with_preferred:
                for t in g.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
                    if (t.get("podAffinityTerm") or {}).get("namespaceSelector") is not None:
                        return None
        try:
            return orjson.dumps(
                (pod.namespace, pod.labels, groups), option=orjson.OPT_SORT_KEYS
            ).decode()  # exact size (orjson's bytes keep a 4 KB buffer)
        except TypeError:
            return None

    return pod.memo(f"{NAME}:{'preScoreKey' if with_preferred else 'preFilterKey'}", build)


def _pre_score_key(pod: PodInfo) -> str | None:
    return _affinity_key(pod, with_preferred=True)


def _pre_filter_key(pod: PodInfo) -> str | None:
    return _affinity_key(pod, with_preferred=False)


def _pair_counts(counts: TopologyCounts, key: str, table: Mapping[str, int]) -> IntArray:
    """Counts of ``key``'s pairs by label value code; the last slot (code -1, no label) stays 0."""
    out = np.zeros(len(table) + 1, np.int64)
    for (k, v), num in counts.items():
        if k == key:
            code = table.get(v)
            if code is not None:
                out[code] = num
    return out


def _failure_kinds(s: PreFilterState, batch: NodeBatch) -> IntArray:
    """Per node: 0 passes, 1 pod affinity fails, 2 pod anti-affinity fails, 3 existing pods' anti-affinity fails
    (the first failing check, in ``filter``'s order)."""
    cols = batch.cols
    n = len(batch)
    kinds: IntArray = np.zeros(n, np.int64)
    if s.required_affinity:
        present: BoolArray = np.ones(n, np.bool_)
        exist: BoolArray = np.ones(n, np.bool_)
        for term in s.required_affinity:
            codes, table = cols.label_codes(term.topology_key)
            c = batch.take(codes)
            present &= c >= 0
            exist &= _pair_counts(s.affinity_counts, term.topology_key, table)[c] > 0
        fallback = not s.affinity_counts and pod_matches_all_affinity_terms(s.required_affinity, s.pod)
        ok_affinity = present & (exist | fallback)
        kinds[~ok_affinity] = 1
    if s.anti_affinity_counts:
        anti: BoolArray = np.zeros(n, np.bool_)
        for term in s.required_anti_affinity:
            codes, table = cols.label_codes(term.topology_key)
            anti |= _pair_counts(s.anti_affinity_counts, term.topology_key, table)[batch.take(codes)] > 0
        kinds[(kinds == 0) & anti] = 2
    counts = s.existing_anti_affinity_counts
    if counts:
        existing: BoolArray = np.zeros(n, np.bool_)
        for key in {k for (k, _), num in counts.items() if num > 0}:
            codes, table = cols.label_codes(key)
            existing |= _pair_counts(counts, key, table)[batch.take(codes)] > 0
        kinds[(kinds == 0) & existing] = 3
    return kinds


def _node_score(topology_score: dict[str, dict[str, int]], node_labels: Mapping[str, str]) -> int:
    total = 0
    for key, values in topology_score.items():
        tv = node_labels.get(key)
        if tv is not None:
            total += values.get(tv, 0)
    return total


def _satisfy_pod_affinity(s: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    """Every term's topology label present on the node, and matching pods in each of those domains.

    The first pod of a group that has affinity to itself passes when no pod matches anywhere yet.
    """
    pods_exist = True
    for term in s.required_affinity:
        tv = node_labels.get(term.topology_key)
        if tv is None:
            return False
        if s.affinity_counts.get((term.topology_key, tv), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        return not s.affinity_counts and pod_matches_all_affinity_terms(s.required_affinity, s.pod)
    return True


def _satisfy_pod_anti_affinity(s: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    if s.anti_affinity_counts:
        for term in s.required_anti_affinity:
            tv = node_labels.get(term.topology_key)
            if tv is not None and s.anti_affinity_counts.get((term.topology_key, tv), 0) > 0:
                return False
    return True


def _satisfy_existing_pods_anti_affinity(s: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    counts = s.existing_anti_affinity_counts
    if counts:
        for pair in node_labels.items():
            if counts.get(pair, 0) > 0:
                return False
    return True


__all__ = [
    "AffinityTerm",
    "InterPodAffinity",
    "LabelSelector",
    "PreFilterState",
    "PreScoreState",
    "WeightedAffinityTerm",
    "pod_terms",
]
