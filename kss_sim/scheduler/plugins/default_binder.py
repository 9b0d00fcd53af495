"""DefaultBinder: binds the pod to its node through the cluster's pod actions."""

from __future__ import annotations

from typing import ClassVar

from kss_sim.scheduler.framework import BindPlugin, CycleState, Status, error
from kss_sim.scheduler.nodeinfo import PodInfo


class DefaultBinder(BindPlugin):
    """``defaultbinder.DefaultBinder``: creates the pod's Binding."""

    name: ClassVar[str] = "DefaultBinder"

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        actions = self.handle.actions
        if actions is None:
            return error("no cluster to bind pods in")
        return actions.bind(pod, node_name)
