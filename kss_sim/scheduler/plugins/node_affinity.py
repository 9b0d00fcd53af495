"""NodeAffinity: a pod's ``nodeSelector`` and node affinity, plus the scheduler's ``addedAffinity``.

Port of kube-scheduler v1.35 ``framework/plugins/nodeaffinity`` on top of the node selector helpers
in ``kss_sim.kube.labels`` (``component-helpers/scheduling/corev1/nodeaffinity``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from kss_sim.kube.labels import (
    FieldError,
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    aggregate_message,
    parse_preferred_terms,
)
from kss_sim.kube.objects import Obj
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch
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
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.helper import default_normalize_score, node_labels

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

# What ``filter`` found on a node, as ``_verdicts`` returns it per node (also the record's ``filter_keys``: 0 passed).
_PASSED, _ENFORCED, _POD = 0, 1, 2

_ADDED_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_ADDED_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class _PreFilterState:
    """The pod's parsed required affinity; pod additions/removals never change it."""

    __slots__ = ("required",)

    def __init__(self, required: RequiredNodeAffinity) -> None:
        self.required = required

    def clone(self) -> _PreFilterState:
        return self


class _PreScoreState:
    """The pod's parsed preferred terms (None when it has none)."""

    __slots__ = ("preferred",)

    def __init__(self, preferred: PreferredSchedulingTerms | None) -> None:
        self.preferred = preferred

    def clone(self) -> _PreScoreState:
        return self


def _node_affinity(pod: PodInfo) -> Mapping[str, Any]:
    na: Mapping[str, Any] = pod.affinity.get("nodeAffinity") or {}
    return na


def _required_affinity(pod: PodInfo) -> RequiredNodeAffinity:
    return pod.memo("NodeAffinity:required", lambda: RequiredNodeAffinity(pod.spec))


def _preferred_affinity(pod: PodInfo) -> tuple[PreferredSchedulingTerms | None, list[FieldError]]:
    """``getPodPreferredNodeAffinity``: the pod's preferred terms or their parse errors."""

    def build() -> tuple[PreferredSchedulingTerms | None, list[FieldError]]:
        # An empty list does not survive the API server's storage, so it counts as absent.
        terms = _node_affinity(pod).get(_ADDED_PREFERRED)
        if not terms:
            return None, []
        return parse_preferred_terms(terms)

    return pod.memo("NodeAffinity:preferred", build)


def _validate_added_affinity(
    args: Mapping[str, Any],
) -> tuple[NodeSelector | None, PreferredSchedulingTerms | None, list[FieldError]]:
    """Parse ``addedAffinity`` as ``New`` and ``ValidateNodeAffinityArgs`` do; errors carry paths under args."""
    added = args.get("addedAffinity")
    if added is None:
        return None, None, []
    if not isinstance(added, Mapping):
        return None, None, [("addedAffinity", "Invalid value: must be a NodeAffinity object")]
    errs: list[FieldError] = []
    selector: NodeSelector | None = None
    preferred: PreferredSchedulingTerms | None = None
    required = added.get(_ADDED_REQUIRED)
    if required is not None:
        path = f"addedAffinity.{_ADDED_REQUIRED}"
        try:
            selector = NodeSelector(required, path)
        except (AttributeError, TypeError, ValueError):
            return None, None, [(path, "Invalid value: must be a NodeSelector object")]
        errs.extend(selector.errors)
    terms = added.get(_ADDED_PREFERRED)
    if terms:
        path = f"addedAffinity.{_ADDED_PREFERRED}"
        try:
            preferred, pref_errs = parse_preferred_terms(terms, path)
        except (AttributeError, TypeError, ValueError):
            return None, None, [(path, "Invalid value: must be a list of PreferredSchedulingTerm objects")]
        errs.extend(pref_errs)
    return selector, preferred, errs


# Up to this many node names in a pod's field selectors, the batch Filter finds their rows one comparison each.
_FEW_NAMES = 16


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """Filters on required node affinity and nodeSelector; scores by matching preferred terms' weights."""

    name: ClassVar[str] = NAME
    filter_reads_pods: ClassVar[bool] = False  # the node object and the pod only

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        selector, preferred, errs = _validate_added_affinity(self.args)
        if errs:
            raise ValueError(aggregate_message(errs))
        self.added_node_selector = selector
        # NewPreferredSchedulingTerms is only called for a non-empty list.
        self.added_pref_terms = preferred

    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """NodeAffinityArgs has no v1 defaults."""
        return dict(args)

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidateNodeAffinityArgs``: addedAffinity's selectors must parse."""
        return _validate_added_affinity(args)[2]

    # --- EnqueueExtensions ----------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or relabelled (with queueing hints a taint change no longer counts)."""
        return events_with_hints((ev.NODE_ADD, ev.NODE_UPDATE_LABEL), self.is_schedulable_after_node_change)

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Obj | None, new: Obj | None) -> QueueingHint:
        """The node now matches the scheduler's added affinity and the pod's required affinity, and did not
        before."""
        if new is None:
            return QUEUE_SKIP
        labels, name = node_labels(new), str((new.get("metadata") or {}).get("name") or "")
        if self.added_node_selector is not None and not self.added_node_selector.matches(labels, name):
            return QUEUE_SKIP
        required = _required_affinity(pod)
        if not required.matches(labels, name):
            return QUEUE_SKIP
        if old is None:
            return QUEUE
        return QUEUE_SKIP if required.matches(node_labels(old), name) else QUEUE

    # --- PreFilter ----------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Skip when nothing constrains the pod; restrict to the node names required terms all pin."""
        required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is None and self.added_node_selector is None and not pod.spec.get("nodeSelector"):
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(_required_affinity(pod)))
        terms = (required or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None, success()
        node_names: set[str] | None = None
        for term in terms:
            term_names: set[str] | None = None
            for req in term.get("matchFields") or []:
                if req.get("key") == "metadata.name" and req.get("operator") == "In":
                    # Requirements in a term are ANDed: intersect.
                    values = {str(v) for v in req.get("values") or []}
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                # A term without a metadata.name In requirement admits every node (terms are ORed).
                return None, success()
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        if node_names:
            return PreFilterResult(node_names), success()
        return None, success()

    def pre_filter_extensions(self) -> None:
        """The state does not depend on other pods."""
        return None

    # --- Filter -------------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """The scheduler-enforced affinity first, then the pod's nodeSelector and required terms."""
        if self.added_node_selector is not None and not self.added_node_selector.matches(
            node_info.labels, node_info.name
        ):
            return unresolvable(ERR_REASON_ENFORCED)
        s = state.get(PRE_FILTER_STATE_KEY)
        # Without PreFilter (disabled), compute the same here.
        required = s.required if isinstance(s, _PreFilterState) else _required_affinity(pod)
        if not required.matches(node_info.labels, node_info.name):
            return unresolvable(ERR_REASON_POD)
        return success()

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        """``filter`` decided once per distinct value of what the selectors read (the labels they name, and the
        node's name when a term matches fields): a cluster's nodes share a few zones, not their hostnames."""
        verdicts: BoolArray = self._verdicts(state, pod, batch) == _PASSED
        return verdicts

    def filter_status_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """0: the scheduler-enforced affinity rejected the node, 1: the pod's own selector or terms did."""
        keys: IntArray = self._verdicts(state, pod, batch) - 1
        return keys

    def filter_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """0: passed, 1: the scheduler-enforced affinity rejected the node, 2: the pod's own selector or terms did.
        The record then takes one pass over the batch (not ``filter_nodes``, then the rejected nodes' keys and
        their distinct values sorted: most of a DaemonSet pod's record of the nodes its PreFilterResult left out)."""
        return self._verdicts(state, pod, batch)

    def filter_status_of_key(self, state: CycleState, pod: PodInfo, key: int) -> Status | None:
        """The status ``filter`` gives a node of ``filter_keys`` key ``key``."""
        if key == _ENFORCED:
            return unresolvable(ERR_REASON_ENFORCED)
        if key == _POD:
            return unresolvable(ERR_REASON_POD)
        return None

    def _verdicts(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray:
        """Per node of ``batch``: ``_PASSED``, ``_ENFORCED`` or ``_POD`` (which check of ``filter`` failed)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        required = s.required if isinstance(s, _PreFilterState) else _required_affinity(pod)
        added = self.added_node_selector
        selectors = [sel for sel in (added, required.node_selector) if sel is not None]
        keys = sorted({*required.selector, *(r.key for sel in selectors for t in sel.terms for r in t.labels or ())})
        by_name = any(t.fields is not None for sel in selectors for t in sel.terms)

        def verdict(labels: Mapping[str, str], name: str) -> int:
            if added is not None and not added.matches(labels, name):
                return _ENFORCED
            if not required.matches(labels, name):
                return _POD
            return _PASSED

        if by_name and not keys:
            return self._verdicts_by_name(batch, selectors, verdict)
        seen: dict[tuple[str | None, ...], int] = {}
        out = np.empty(len(batch), np.int64)
        for i, ni in enumerate(batch.nodes):
            labels = ni.labels
            # A missing label reads None, distinct from every value: Exists and DoesNotExist are decided too.
            key = tuple(labels.get(k) for k in keys)
            if by_name:
                key += (ni.name,)
            got = seen.get(key)
            if got is None:
                got = seen[key] = verdict(labels, ni.name)
            out[i] = got
        return out

    @staticmethod
    def _verdicts_by_name(
        batch: NodeBatch, selectors: list[NodeSelector], verdict: Callable[[Mapping[str, str], str], int]
    ) -> IntArray:
        """``_verdicts`` when the selectors read the node's name only (a DaemonSet pod's affinity): a field
        requirement compares the name with one value, so every name no term mentions gets the same verdict; the
        mentioned ones (and an empty name, which fields do not constrain) are decided one by one, without a walk
        over the batch's nodes in Python (15,000 of them per DaemonSet pod at upstream's scale, when recording)."""
        mentioned = {value for sel in selectors for t in sel.terms for _, _, value in t.fields or ()}
        # A name longer than every mentioned value is none of them.
        unmentioned = "x" * (1 + max((len(v) for v in mentioned), default=0))
        out: IntArray = np.full(len(batch), verdict({}, unmentioned), np.int64)
        cols = batch.cols
        positions = [cols.position[name] for name in (*mentioned, "") if name in cols.position]
        if not positions:
            return out
        if batch.full:
            rows = at = np.array(positions, np.int64)
        else:
            # A comparison per mentioned position when they are few (a DaemonSet pod names one): cheaper than
            # np.isin's sort.
            idx = batch.idx
            if len(positions) > _FEW_NAMES:
                hit = np.isin(idx, positions)
            else:
                hit = idx == positions[0]
                for pos in positions[1:]:
                    hit |= idx == pos
            rows = np.flatnonzero(hit)
            at = idx[rows]
        names = cols.names
        for row, pos in zip(rows.tolist(), at.tolist(), strict=True):
            out[row] = verdict({}, names[pos])
        return out

    # --- PreScore / Score ---------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Skip when neither the pod nor addedAffinity has preferred terms."""
        preferred, errs = _preferred_affinity(pod)
        if errs:
            return error(aggregate_message(errs))
        if preferred is None and self.added_pref_terms is None:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return success()

    def _pod_preferred(self, state: CycleState, pod: PodInfo) -> tuple[PreferredSchedulingTerms | None, Status]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s.preferred, success()
        # Without PreScore (disabled), compute the same here.
        preferred, errs = _preferred_affinity(pod)
        if errs:
            return None, error(aggregate_message(errs))
        return preferred, success()

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        """Sum of the weights of the matching preferred terms (addedAffinity's and the pod's)."""
        scores, st = self.score_nodes(state, pod, [node_info])
        return (scores[0] if scores else 0), st

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        preferred, st = self._pod_preferred(state, pod)
        if not st.is_success():
            return [], st
        sources = [t for t in (self.added_pref_terms, preferred) if t is not None]
        return [sum(t.score(ni.labels, ni.name) for t in sources) for ni in nodes], success()

    def has_normalize(self) -> bool:
        return True

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """Default normalization, not reversed: the best node gets 100."""
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return success()
