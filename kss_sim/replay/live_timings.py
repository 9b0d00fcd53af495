"""The pod timings a live replay sends scaled to its speed, so the server's own timers run on the replay's clock.

``kss serve`` counts a pod's grace period (its kubelet ends a deleted pod ``deletionGracePeriodSeconds`` later, and
a preemption, scale-down, garbage collection or taint eviction deletes it with its ``terminationGracePeriodSeconds``)
and the NoExecute taints' ``tolerationSeconds`` on its wall clock. At ``--speed 10`` a 30 s grace period offline is
30 s of the replay's clock; the server would take 30 wall seconds, 300 on the replay's clock. So the driver sends
every pod (bare pods, the templates of workloads, the starting objects) with those durations divided by the speed:
``terminationGracePeriodSeconds`` (30 when unset), each toleration's ``tolerationSeconds``, and the
DefaultTolerationSeconds admission's 300 s not-ready/unreachable tolerations written out, scaled, so the admission
adds no unscaled ones. Each is in whole seconds, at least 1 (0 and below are kept: they mean at once). Such a pod
carries ``replay.kss.sigs.k8s.io/speed``, so a later delete or eviction knows its grace period is already scaled.
"""

from __future__ import annotations

import math
from typing import Any

from kss_sim.kube.objects import Obj

SPEED_ANNOTATION = "replay.kss.sigs.k8s.io/speed"
DEFAULT_GRACE_SECONDS = 30
DEFAULT_TOLERATION_SECONDS = 300  # the DefaultTolerationSeconds admission's, for not-ready and unreachable
_DEFAULT_TOLERATED = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_TEMPLATE_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController"})


def wall_seconds(seconds: float, speed: float) -> int:
    """``seconds`` of the replay's clock on the server's wall clock: whole seconds, at least 1 (0 and below kept)."""
    return int(seconds) if seconds <= 0 else max(1, math.ceil(seconds / speed))


def _tolerates(tolerations: list[Any], key: str) -> bool:
    """As the admission checks: a NoExecute (or any-effect) toleration of ``key``, or of every key."""
    return any(
        isinstance(t, dict) and t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "")
        for t in tolerations
    )


def _scale_pod(template: Any, speed: float, *, default_tolerations: bool = True) -> None:
    """A pod (or pod template): its grace period and tolerations scaled, marked with the speed."""
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return
    spec = template["spec"]
    grace = spec.get("terminationGracePeriodSeconds")
    spec["terminationGracePeriodSeconds"] = wall_seconds(
        DEFAULT_GRACE_SECONDS if not isinstance(grace, int | float) else grace, speed
    )
    tolerations = [dict(t) if isinstance(t, dict) else t for t in spec.get("tolerations") or []]
    for toleration in tolerations:
        if isinstance(toleration, dict) and isinstance(toleration.get("tolerationSeconds"), int | float):
            toleration["tolerationSeconds"] = wall_seconds(toleration["tolerationSeconds"], speed)
    for key in _DEFAULT_TOLERATED if default_tolerations else ():
        if not _tolerates(tolerations, key):
            scaled = wall_seconds(DEFAULT_TOLERATION_SECONDS, speed)
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": scaled})
    spec["tolerations"] = tolerations
    meta = template.setdefault("metadata", {})
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    meta["annotations"][SPEED_ANNOTATION] = f"{speed:g}"


def scale_pod_timings(obj: Obj, speed: float) -> None:
    """``obj`` (a Pod, or a workload with a pod template) in place, its pods' timings divided by ``speed``; other
    kinds, and every object at speed 1, are left as they are."""
    if speed == 1:
        return
    kind = obj.get("kind")
    found = obj.get("spec")
    spec: Obj = found if isinstance(found, dict) else {}
    if kind == "Pod":
        _scale_pod(obj, speed)
    elif kind in _TEMPLATE_KINDS:
        # A DaemonSet's controller makes its pods tolerate not-ready and unreachable for ever.
        _scale_pod(spec.get("template"), speed, default_tolerations=kind != "DaemonSet")
    elif kind == "CronJob" and isinstance(spec.get("jobTemplate"), dict):
        job_spec = spec["jobTemplate"].get("spec")
        if isinstance(job_spec, dict):
            _scale_pod(job_spec.get("template"), speed)


def scaled_for(pod: Obj, speed: float) -> bool:
    """Whether ``pod`` was sent with its timings scaled to ``speed``."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return bool(speed != 1 and annotations.get(SPEED_ANNOTATION) == f"{speed:g}")
