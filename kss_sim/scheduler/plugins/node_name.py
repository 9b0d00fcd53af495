"""NodeName: a pod with ``spec.nodeName`` fits only the node of that name."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch, filled
from kss_sim.scheduler.framework import CycleState, FilterPlugin, Status, success, unresolvable
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: PodInfo, node_info: NodeInfo) -> bool:
    """``nodename.Fits``: no requested node name, or it is this node's."""
    wanted = pod.node_name
    return not wanted or wanted == node_info.name


class NodeName(FilterPlugin):
    """Rejects every node but the one the pod names."""

    name: ClassVar[str] = "NodeName"
    filter_reads_pods: ClassVar[bool] = False  # the node object and the pod only

    def events_to_register(self) -> list[str]:
        """A node added (with queueing hints no update: a node keeps its name)."""
        return [ev.NODE_ADD]

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if fits(pod, node_info):
            return success()
        return unresolvable(ERR_REASON)

    def filter_status_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """Every rejection has the same status."""
        return np.zeros(len(batch), np.int64)

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        wanted = pod.node_name
        if not wanted:
            return filled(len(batch), True, np.bool_)
        ok: BoolArray = batch.idx == batch.cols.position.get(wanted, -1)
        return ok
