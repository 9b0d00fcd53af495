"""The scheduling loop's writer in a replay (``LoopWriter``), on the replay engine's objects (``engine.py``).

A binding is immediate (the pod runs from the virtual instant it is bound), a preemption victim terminates for its
grace period, a nomination is written into the pod, a PodGroup's condition replaces the group as an update the
scheduler's informer sees, and VolumeBinding's PreBind binds as the PV controller and a provisioner would
(``volumes.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kss_sim.replay import intake
from kss_sim.scheduler.framework import Status
from kss_sim.scheduler.loop import LoopWriter
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.gang_scheduling import POD_GROUP_V1ALPHA2
from kss_sim.scheduler.podgroup_cycle import pod_group_conditions_after
from kss_sim.scheduler.record import Attempt

if TYPE_CHECKING:
    from kss_sim.replay.engine import Replay


class ReplayWriter(LoopWriter):
    """The scheduling loop's writer in a replay, on the replay's objects: binds are immediate, victims terminate for
    their grace period, nominations are written into the pod."""

    def __init__(self, run: Replay) -> None:
        self.run = run

    # --- the attempt's outcome (LoopWriter) -----------------------------------------------------
    def write_binding(self, pod: PodInfo, att: Attempt, current: dict[str, Any]) -> str | None:
        return None

    def scheduled(self, pod: PodInfo, att: Attempt) -> None:
        self.run.bound_now(pod, att)

    def unschedulable(self, pod: PodInfo, att: Attempt) -> None:
        record = self.run.records.get(pod.uid)
        if record is not None:
            record.last_message = att.message

    def concluded(self, pod: PodInfo, att: Attempt) -> None:
        self.run.attempt_concluded(pod, att)

    def pod_after_wait(self, pod: PodInfo) -> dict[str, Any] | None:
        return pod.pod if self.run.pending.get(pod.key) is pod else None

    def forget_waiting(self, pod: PodInfo, att: Attempt) -> None:
        if att.result == "scheduled":
            self.run.cache.remove_pod(pod.uid)  # deleted while it waited

    def pod_group_condition(self, namespace: str, name: str, condition: dict[str, str]) -> None:
        """The cycle's outcome on the PodGroup's status as kss serve writes it (``updatePodGroupCondition``), its
        transition time on the virtual clock; the changed group is an update the scheduler's informer sees."""
        run = self.run
        group = run.cluster.get_object(POD_GROUP_V1ALPHA2, namespace, name)
        if group is None:
            return
        updated = pod_group_conditions_after(group, condition, lambda: intake.rfc3339(run.workload.epoch, run.now))
        if updated is None:
            return
        changed = {**group, "status": {**(group.get("status") or {}), "conditions": updated}}
        run.objects.put(POD_GROUP_V1ALPHA2, changed, added=False)

    # --- PodActions (the plugins' side) ---------------------------------------------------------
    def bind(self, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def delete_victim(
        self, victim: PodInfo, preemptor: PodInfo, preempting_group: dict[str, Any] | None = None
    ) -> Status:
        self.run.terminate_victim(victim, preemptor)
        return Status()

    def record_nomination(self, pod: PodInfo, node_name: str) -> None:
        pod.pod.setdefault("status", {})["nominatedNodeName"] = node_name

    def bind_volumes(
        self, pod: PodInfo, node_name: str, static: list[tuple[dict[str, Any], dict[str, Any]]], dynamic: list[Any]
    ) -> Status:
        # VolumeBinding's PreBind and what the PV controller and a provisioner then do (app/replay/volumes.py).
        from kss_sim.replay.volumes import bind_pod_volumes

        return bind_pod_volumes(self.run, pod, node_name, static, dynamic)
