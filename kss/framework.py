"""The scheduler framework as a plugin author sees it: ``from kss.framework import FilterPlugin, Status, ...``.

The names mirror kube-scheduler's ``k8s.io/kubernetes/pkg/scheduler/framework`` (Go's ``FilterPlugin`` is
``FilterPlugin`` here, ``framework.NewStatus(framework.Unschedulable, ...)`` is ``unschedulable(...)``), so an
upstream plugin ports method by method. This module only re-exports the engine's own types: an out-of-tree plugin
runs exactly as an in-tree one, recorded and shown the same way. docs/plugins.md is the walk-through.

Stable here: every name in ``__all__``, the method signatures of the plugin interfaces, and the attributes of
``PodInfo`` / ``NodeInfo`` / ``Handle`` that docs/plugins.md lists. The optional batch hooks (``filter_nodes``,
``score_batch``, ...) take NumPy columns and may still change.
"""

from __future__ import annotations

from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    QUEUE,
    QUEUE_SKIP,
    BindPlugin,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    NodeScore,
    NodeToStatus,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueuedPodInfoLike,
    QueueingHint,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
    error,
    skip,
    success,
    unresolvable,
    unschedulable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins import register
from kss_sim.scheduler.waiting import WaitingPod

__all__ = [
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "QUEUE",
    "QUEUE_SKIP",
    "BindPlugin",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "FilterPlugin",
    "Handle",
    "NodeInfo",
    "NodeScore",
    "NodeToStatus",
    "PermitPlugin",
    "Plugin",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfoLike",
    "QueueingHint",
    "ReservePlugin",
    "ScorePlugin",
    "Status",
    "WaitingPod",
    "error",
    "register",
    "skip",
    "success",
    "unresolvable",
    "unschedulable",
]
