"""NodeUnschedulable: nodes with ``spec.unschedulable`` reject pods not tolerating the unschedulable taint."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kss_sim.kube.objects import Obj
from kss_sim.kube.taints import EFFECT_NO_SCHEDULE, tolerations_tolerate_taint
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch, filled
from kss_sim.scheduler.framework import (
    QUEUE,
    QUEUE_SKIP,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    QueueingHint,
    Status,
    events_with_hints,
    success,
    unresolvable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.taint_toleration import pod_tolerations

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT: dict[str, Any] = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": EFFECT_NO_SCHEDULE}


class NodeUnschedulable(FilterPlugin):
    """Filters out cordoned nodes unless the pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""

    name: ClassVar[str] = "NodeUnschedulable"
    filter_reads_pods: ClassVar[bool] = False  # the node object and the pod only

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or uncordoned (told as a taint change; the pod's own toleration change requeues it through
        its update)."""
        return events_with_hints((ev.NODE_ADD, ev.NODE_UPDATE_TAINT), self.is_schedulable_after_node_change)

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Obj | None, new: Obj | None) -> QueueingHint:
        """A schedulable node added, or a cordoned one uncordoned."""
        if new is None or (new.get("spec") or {}).get("unschedulable"):
            return QUEUE_SKIP
        return QUEUE if old is None or (old.get("spec") or {}).get("unschedulable") else QUEUE_SKIP

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if not node_info.unschedulable:
            return success()
        if tolerations_tolerate_taint(pod_tolerations(pod), _UNSCHEDULABLE_TAINT):
            return success()
        return unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_status_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """Every rejection has the same status."""
        return np.zeros(len(batch), np.int64)

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        cols = batch.cols
        # Cordons are fixed for the columns' lifetime (a node change gives new columns).
        if not cols.cached("NodeUnschedulable:any", lambda: bool(cols.unschedulable.any())):
            return filled(len(batch), True, np.bool_)
        if tolerations_tolerate_taint(pod_tolerations(pod), _UNSCHEDULABLE_TAINT):
            return filled(len(batch), True, np.bool_)
        ok: BoolArray = ~batch.take(batch.cols.unschedulable)
        return ok
