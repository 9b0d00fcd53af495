"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score (``tainttoleration``).

Toleration matching (``v1helper.TolerationsTolerateTaint`` / ``Toleration.ToleratesTaint``) lives in
``kss_sim.kube.taints``, shared with NodeUnschedulable and the DaemonSet controller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from kss_sim.kube.objects import Obj
from kss_sim.kube.taints import (
    EFFECT_NO_EXECUTE,
    EFFECT_NO_SCHEDULE,
    EFFECT_PREFER_NO_SCHEDULE,
    Toleration,
    find_matching_untolerated_taint,
    tolerations_tolerate_taint,
)
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch, filled
from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    QUEUE,
    QUEUE_SKIP,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    NodeScore,
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
from kss_sim.scheduler.plugins.helper import default_normalize_batch, default_normalize_score, node_taints

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
# v1.33's reason: the first untolerated taint, as fmt's "{%s: %s}" of its key and value.
ERR_REASON_UNTOLERATED_TAINT = "node(s) had untolerated taint {{{key}: {value}}}"


def pod_tolerations(pod: PodInfo) -> tuple[Toleration, ...]:
    """The pod's tolerations, parsed once per pod."""

    def parse() -> tuple[Toleration, ...]:
        return tuple(Toleration.from_dict(t) for t in pod.spec.get("tolerations") or [])

    return pod.memo("TaintToleration:tolerations", parse)


DO_NOT_SCHEDULE_EFFECTS = (EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE)


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    tolerations_prefer_no_schedule: tuple[Toleration, ...]

    def clone(self) -> _PreScoreState:
        return self


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin):
    """Rejects nodes with untolerated NoSchedule/NoExecute taints; prefers nodes with fewer PreferNoSchedule ones."""

    name: ClassVar[str] = NAME
    filter_reads_pods: ClassVar[bool] = False  # the node object and the pod only

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        # v1.33 names the taint in the reason (one reason per taint); v1.34 on, every rejection says the same.
        self.taint_in_reason = handle.kube_version.minor < 34

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or its taints changed (the pod's own toleration change requeues it through its update)."""
        return events_with_hints((ev.NODE_ADD, ev.NODE_UPDATE_TAINT), self.is_schedulable_after_node_change)

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Obj | None, new: Obj | None) -> QueueingHint:
        """The node's NoSchedule/NoExecute taints are tolerated now and were not before (or it is new)."""
        if new is None:
            return QUEUE_SKIP
        tolerations = pod_tolerations(pod)
        was_untolerated = (
            old is None
            or find_matching_untolerated_taint(node_taints(old), tolerations, DO_NOT_SCHEDULE_EFFECTS) is not None
        )
        is_untolerated = find_matching_untolerated_taint(node_taints(new), tolerations, DO_NOT_SCHEDULE_EFFECTS)
        return QUEUE if was_untolerated and is_untolerated is None else QUEUE_SKIP

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        taints = node_info.taints
        if not taints:
            return success()
        taint = find_matching_untolerated_taint(taints, pod_tolerations(pod), DO_NOT_SCHEDULE_EFFECTS)
        if taint is None:
            return success()
        if self.taint_in_reason:
            key, value = taint.get("key") or "", taint.get("value") or ""
            return unresolvable(ERR_REASON_UNTOLERATED_TAINT.format(key=key, value=value))
        return unresolvable(ERR_REASON_UNTOLERATED)

    def filter_status_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """Every rejection has the same status (from v1.34: v1.33's names the taint, so each node is asked)."""
        if self.taint_in_reason:
            return None
        return np.zeros(len(batch), np.int64)

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        """Decided once per distinct taint list (``NodeColumns.taint_group``)."""
        tolerations = pod_tolerations(pod)
        per_group, same = _per_taint_group(
            batch,
            ("filter", tolerations),
            lambda taints: (
                not taints or find_matching_untolerated_taint(taints, tolerations, DO_NOT_SCHEDULE_EFFECTS) is None
            ),
            np.bool_,
        )
        if same is not None:
            return filled(len(batch), same, np.bool_)
        ok: BoolArray = per_group[batch.take(batch.cols.taint_group)]
        return ok

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return None
        tolerations = s.tolerations_prefer_no_schedule
        per_group, same = _per_taint_group(
            batch,
            ("score", tolerations),
            lambda taints: _count_intolerable_prefer_no_schedule(taints, tolerations),
            np.int64,
        )
        if same is not None:
            return filled(len(batch), same, np.int64)
        scores: IntArray = per_group[batch.take(batch.cols.taint_group)]
        return scores

    def normalize_batch(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray | None:
        return default_normalize_batch(MAX_NODE_SCORE, True, scores)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        prefer = tuple(t for t in pod_tolerations(pod) if t.effect in ("", EFFECT_PREFER_NO_SCHEDULE))
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(prefer))
        return success()

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return 0, error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return _count_intolerable_prefer_no_schedule(node_info.taints, s.tolerations_prefer_no_schedule), success()

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return [], error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        tolerations = s.tolerations_prefer_no_schedule
        return [_count_intolerable_prefer_no_schedule(ni.taints, tolerations) for ni in nodes], success()

    def has_normalize(self) -> bool:
        return True

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return success()


_GROUP_CACHE_MAX = 64
_GROUPS_KEY = f"{NAME}:perTaintGroup"


def _per_taint_group(
    batch: NodeBatch, key: tuple[str, tuple[Toleration, ...]], decide: Callable[[list[dict[str, Any]]], Any], dtype: Any
) -> tuple[npt.NDArray[Any], Any]:
    """``decide`` per distinct taint list of the columns (taints are fixed for the columns' lifetime), kept per
    tolerations; and the value every group shares, None when they differ."""
    cols = batch.cols
    cache: dict[tuple[str, tuple[Toleration, ...]], tuple[npt.NDArray[Any], Any]] = cols.cached(_GROUPS_KEY, dict)
    entry = cache.get(key)
    if entry is None:
        per_group = np.array([decide(taints) for taints in cols.taint_sets], dtype=dtype)
        same = per_group[0].item() if len(per_group) and (per_group == per_group[0]).all() else None
        if len(cache) >= _GROUP_CACHE_MAX:
            cache.pop(next(iter(cache)))
        entry = cache[key] = (per_group, same)
    return entry


def _count_intolerable_prefer_no_schedule(
    taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Toleration]
) -> int:
    count = 0
    for taint in taints:
        if taint.get("effect") == EFFECT_PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(tolerations, taint):
            count += 1
    return count
