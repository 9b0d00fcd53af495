"""The ``DisruptionTarget`` pod condition the controllers write before they delete a pod (upstream's
``PodDisruptionConditions``, GA since v1.31): the taint eviction controller's ``DeletionByTaintManager``, pod GC's
``DeletionByPodGC`` (which also marks a pod that has not finished ``Failed``). Written through the ``status``
subresource with the resourceVersion read (a conflict is the caller's to retry), then the pod is deleted.
"""

from __future__ import annotations

from typing import Any

from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.owned import is_terminated, meta
from kss_sim.kube.objects import Obj
from kss_sim.kube.pod_conditions import DISRUPTION_TARGET, with_disruption_target


def mark_disruption_target(
    store: ClusterPort, pod: Obj, *, reason: str, message: str, now: str, manager: str, fail: bool = False
) -> Obj:
    """Add (or update) ``pod``'s DisruptionTarget condition, and with ``fail`` make a pod that has not finished
    ``Failed``; nothing is written when the pod already says so. Returns the pod as stored."""
    status = pod.get("status") or {}
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    current = next((c for c in conditions if c.get("type") == DISRUPTION_TARGET), None)
    same = current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
        "True",
        reason,
        message,
    )
    failing = fail and not is_terminated(pod)
    if same and not failing:
        return pod
    patch: dict[str, Any] = {"metadata": {"resourceVersion": meta(pod).get("resourceVersion")}, "status": {}}
    if not same:
        patch["status"]["conditions"] = with_disruption_target(conditions, reason, message, now)
    if failing:
        patch["status"]["phase"] = "Failed"
    m = meta(pod)
    return store.patch(
        "Pod", str(m.get("namespace") or ""), str(m.get("name")), patch, "merge", subresource="status", manager=manager
    )
