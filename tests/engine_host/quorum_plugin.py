"""KssTestQuorum, a Permit plugin of the tests loaded as users' plugins are (``KSS_PLUGIN_MODULES``), so the
scheduler's own process imports it too: test_permit_wait_in_serve.py."""

from __future__ import annotations

from kss_sim.scheduler.framework import Code, CycleState, PermitPlugin, ReservePlugin, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.waiting import WaitingPod


class KssTestQuorum(PermitPlugin, ReservePlugin):
    """Holds pods labelled ``team`` until ``quorum`` of one team are reserved, then lets them all go; Unreserve
    rejects the team's waiting pods (as Coscheduling does)."""

    name = "KssTestQuorum"

    def events_to_register(self) -> list[str]:
        return ["Pod/Add"]

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        team = pod.labels.get("team")
        self.handle.iterate_over_waiting_pods(
            lambda wp: wp.reject(self.name, "team member left") if wp.get_pod().labels.get("team") == team else None
        )

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        team = pod.labels.get("team")
        if team is None:
            return Status(), 0
        mates: list[WaitingPod] = []
        self.handle.iterate_over_waiting_pods(
            lambda wp: mates.append(wp) if wp.get_pod().labels.get("team") == team else None
        )
        if len(mates) + 1 >= int(self.args.get("quorum", 3)):
            for wp in mates:
                wp.allow(self.name)
            return Status(), 0
        return Status(Code.WAIT), float(self.args.get("timeout", 30))


# Listed rather than decorated: registered again whenever a test's fresh registry loads the module.
PLUGINS = [KssTestQuorum]
