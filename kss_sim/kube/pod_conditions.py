"""The ``DisruptionTarget`` pod condition (upstream's ``PodDisruptionConditions``, GA since v1.31), written before a
pod is deleted on the cluster's behalf: by the Eviction API (``EvictionByEvictionAPI``), the taint eviction
controller (``DeletionByTaintManager``) and pod GC (``DeletionByPodGC``). One builder for the API room and the
controllers, which may not import each other."""

from __future__ import annotations

from typing import Any

from kss_sim.kube.objects import Obj

DISRUPTION_TARGET = "DisruptionTarget"
# Pod GC's condition on a pod whose node no longer exists (gcOrphaned), written before its forced delete.
POD_GC_REASON = "DeletionByPodGC"
POD_GC_MESSAGE = "PodGC: node no longer exists"


def disruption_condition(reason: str, message: str, now: str) -> Obj:
    """The condition as ``apipod.UpdatePodCondition`` stores it (a new condition's transition time is now)."""
    return {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }


def with_disruption_target(conditions: list[Any], reason: str, message: str, now: str) -> list[Any]:
    """``conditions`` with the DisruptionTarget condition set (replaced in place, else appended); a condition that
    was True already keeps its transition time, as ``UpdatePodCondition`` does."""
    current = next((c for c in conditions if isinstance(c, dict) and c.get("type") == DISRUPTION_TARGET), None)
    condition = disruption_condition(reason, message, now)
    if current is not None and current.get("status") == "True" and current.get("lastTransitionTime"):
        condition["lastTransitionTime"] = current["lastTransitionTime"]
    if current is None:
        return [*conditions, condition]
    return [condition if c is current else c for c in conditions]
