"""Defaulting of autoscaling/v2 HorizontalPodAutoscalers (SetDefaults_HorizontalPodAutoscaler): ``minReplicas`` 1,
a CPU utilisation target of 80 % when no metric is given, and a behavior that is set filled in with upstream's
scale-up and scale-down rules (a behavior left out stays out: the controller then uses its own defaults)."""

from __future__ import annotations

from typing import Any

from kss_sim.kube.objects import Obj

DEFAULT_CPU_UTILIZATION = 80


def scale_up_rules() -> Obj:
    """GenerateHPAScaleUpRules' defaults: no stabilization, the larger of +4 pods or +100 % every 15 s."""
    return {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }


def scale_down_rules(window: int = 300) -> Obj:
    """GenerateHPAScaleDownRules' defaults: a 300 s stabilization window, down to 0 % every 15 s."""
    return {
        "stabilizationWindowSeconds": window,
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }


def _fill(rules: Any, defaults: Obj) -> Obj:
    if not isinstance(rules, dict):
        return defaults
    for key in ("selectPolicy", "policies", "stabilizationWindowSeconds"):
        if rules.get(key) is None:
            rules[key] = defaults[key]
    return rules


def default_horizontal_pod_autoscaler(obj: Obj) -> None:
    """SetDefaults_HorizontalPodAutoscaler (autoscaling/v2), and the status's ``desiredReplicas`` Go renders."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION},
                },
            }
        ]
    status = obj.get("status")
    if isinstance(status, dict):
        status.setdefault("desiredReplicas", 0)  # no omitempty: always rendered
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _fill(behavior.get("scaleUp"), scale_up_rules())
        behavior["scaleDown"] = _fill(behavior.get("scaleDown"), scale_down_rules())


def prepare_create(obj: Obj) -> None:
    """PrepareForCreate: a new autoscaler's status is the controller's to write."""
    obj["status"] = {"desiredReplicas": 0}


DEFAULTERS = {"HorizontalPodAutoscaler": default_horizontal_pod_autoscaler}
