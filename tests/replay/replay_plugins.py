"""Plugins of the replay tests (a user's plugin module, as ``--plugin-module tests.replay.replay_plugins`` loads it).

- ``KssReplayHold``: Permit holds every pod labelled ``hold`` for the ``timeout`` seconds of its args, then times out;
- ``KssReplayError``: Filter answers an Error status for pods labelled ``error`` (kube-scheduler's error path: the
  pod goes to the error backoffQ).
"""

from __future__ import annotations

from kss_sim.scheduler.framework import Code, CycleState, FilterPlugin, PermitPlugin, Status
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins import register


@register
class KssReplayHold(PermitPlugin):
    name = "KssReplayHold"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if "hold" not in pod.labels:
            return Status(), 0
        return Status(Code.WAIT), float(self.args.get("timeout", 10))


@register
class KssReplayError(FilterPlugin):
    name = "KssReplayError"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if "error" in pod.labels:
            return Status(Code.ERROR, "the test plugin fails")
        return Status()
