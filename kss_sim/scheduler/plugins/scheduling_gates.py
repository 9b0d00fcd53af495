"""SchedulingGates: pods keep waiting while ``spec.schedulingGates`` is non-empty."""

from __future__ import annotations

from typing import ClassVar

from kss_sim.scheduler.framework import PreEnqueuePlugin, Status, success, unresolvable
from kss_sim.scheduler.nodeinfo import PodInfo


class SchedulingGates(PreEnqueuePlugin):
    """``schedulinggates.SchedulingGates``."""

    name: ClassVar[str] = "SchedulingGates"

    def events_to_register(self) -> list[str]:
        """None: a gate is lifted by the pod's own update, which runs PreEnqueue again."""
        return []

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.spec.get("schedulingGates") or []
        if not gates:
            return success()
        names = " ".join(str(g.get("name") or "") for g in gates)
        # Go's %v of a []string: "[a b]".
        return unresolvable(f"waiting for scheduling gates: [{names}]")
