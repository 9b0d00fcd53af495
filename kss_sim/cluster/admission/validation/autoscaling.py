"""Validation of autoscaling/v2 HorizontalPodAutoscalers (pkg/apis/autoscaling/validation, v1.35): replica bounds,
the scale target reference, the metrics and the behavior's scaling rules, with kube-apiserver's messages.
Registered in ``core``'s tables when imported (admission imports it)."""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.admission.validation import core
from kss_sim.cluster.admission.validation.metadata import validate_metadata
from kss_sim.cluster.errors import Cause, forbidden, invalid, not_supported, required
from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import QuantityError, parse_quantity

METRIC_SOURCE_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
_SOURCE_FIELDS = {
    "ContainerResource": "containerResource",
    "External": "external",
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
}
_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
_SELECT_POLICIES = ["Disabled", "Max", "Min"]
_POLICY_TYPES = ["Percent", "Pods"]
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _path_segment_problems(name: str) -> list[str]:
    """IsValidPathSegmentName."""
    problems = [f"may not be '{name}'"] if name in (".", "..") else []
    return problems + [f"may not contain '{c}'" for c in "/%" if c in name]


def _positive_quantity(value: Any) -> bool:
    try:
        return parse_quantity(value) > 0
    except (QuantityError, TypeError, ValueError):
        return False


def _validate_target(target: Obj, path: str) -> list[Cause]:
    """validateMetricTarget."""
    causes: list[Cause] = []
    kind = target.get("type")
    if not kind:
        causes.append(required(f"{path}.type", "must specify a metric target type"))
    elif kind not in _TARGET_TYPES:
        causes.append(invalid(f"{path}.type", kind, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if target.get(key) is not None and not _positive_quantity(target[key]):
            causes.append(invalid(f"{path}.{key}", target[key], "must be positive"))
    utilization = target.get("averageUtilization")
    if isinstance(utilization, int) and utilization < 1:
        causes.append(invalid(f"{path}.averageUtilization", utilization, "must be greater than 0"))
    return causes


def _validate_resource_source(source: Obj, path: str, *, container: bool) -> list[Cause]:
    """validateResourceSource / validateContainerResourceSource: a name (and a container) and a raw or utilization
    target."""
    causes: list[Cause] = []
    if not source.get("name"):
        causes.append(required(f"{path}.name", "must specify a resource name"))
    if container and not source.get("container"):
        causes.append(required(f"{path}.container", "must specify a container"))
    target = _dict(source.get("target"))
    causes += _validate_target(target, f"{path}.target")
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        causes.append(
            required(f"{path}.target.averageUtilization", "must set either a target raw value or a target utilization")
        )
    elif target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        causes.append(
            forbidden(f"{path}.target.averageValue", "may not set both a target raw value and a target utilization")
        )
    return causes


def _validate_identifier(source: Obj, path: str) -> list[Cause]:
    """validateMetricIdentifier: the metric's name, a valid path segment."""
    name = _dict(source.get("metric")).get("name")
    if not name:
        return [required(f"{path}.metric.name", "must specify a metric name")]
    return [invalid(f"{path}.metric.name", name, problem) for problem in _path_segment_problems(str(name))]


def _validate_valued_source(kind: str, source: Obj, path: str) -> list[Cause]:
    """validateObjectSource, validateExternalSource, validatePodsSource: the metric and the target a metric of its
    kind needs (a Pods metric has only per-pod averages)."""
    target = _dict(source.get("target"))
    causes = _validate_identifier(source, path) + _validate_target(target, f"{path}.target")
    value, average = target.get("value"), target.get("averageValue")
    if kind == "Pods" and average is None:
        causes.append(required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    elif kind == "Object" and value is None and average is None:
        causes.append(required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    elif kind == "External" and value is None and average is None:
        causes.append(
            required(f"{path}.target.averageValue", "must set either a target value for metric or a per-pod target")
        )
    elif kind == "External" and value is not None and average is not None:
        causes.append(
            forbidden(f"{path}.target.value", "may not set both a target value for metric and a per-pod target")
        )
    return causes


def _validate_metric(metric: Obj, path: str) -> list[Cause]:
    """validateMetricSpec: a known source type whose own section is the one set."""
    kind = metric.get("type")
    if not kind:
        return [required(f"{path}.type", "must specify a metric source type")]
    if kind not in METRIC_SOURCE_TYPES:
        return [not_supported(f"{path}.type", kind, METRIC_SOURCE_TYPES)]
    causes: list[Cause] = []
    for other, key in _SOURCE_FIELDS.items():
        if other != kind and metric.get(key) is not None:
            causes.append(forbidden(f"{path}.{key}", "must populate the given metric source only"))
    source = metric.get(_SOURCE_FIELDS[kind])
    at = f"{path}.{_SOURCE_FIELDS[kind]}"
    if not isinstance(source, dict):
        causes.append(required(at, "must populate information for the given metric source"))
    elif kind in ("Resource", "ContainerResource"):
        causes += _validate_resource_source(source, at, container=kind == "ContainerResource")
    else:
        causes += _validate_valued_source(kind, source, at)
    return causes


def _validate_rules(rules: Any, path: str) -> list[Cause]:
    """validateScalingRules and validateScalingPolicy."""
    if not isinstance(rules, dict):
        return []
    causes: list[Cause] = []
    window = rules.get("stabilizationWindowSeconds")
    if isinstance(window, int) and window < 0:
        causes.append(invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if isinstance(window, int) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        causes.append(
            invalid(
                f"{path}.stabilizationWindowSeconds",
                window,
                f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}",
            )
        )
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        causes.append(not_supported(f"{path}.selectPolicy", select, _SELECT_POLICIES))
    policies: list[Any] = rules["policies"] if isinstance(rules.get("policies"), list) else []
    if not policies:
        causes.append(required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        at, policy = f"{path}.policies[{i}]", _dict(policy)
        if policy.get("type") not in _POLICY_TYPES:
            causes.append(not_supported(f"{at}.type", policy.get("type") or "", _POLICY_TYPES))
        value, period = policy.get("value") or 0, policy.get("periodSeconds") or 0
        if value <= 0:
            causes.append(invalid(f"{at}.value", value, "must be greater than zero"))
        if period <= 0:
            causes.append(invalid(f"{at}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            causes.append(invalid(f"{at}.periodSeconds", period, f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return causes


def validate_horizontal_pod_autoscaler(hpa: Obj) -> list[Cause]:
    """ValidateHorizontalPodAutoscaler: metadata, then ValidateHorizontalPodAutoscalerSpec's rules in its order
    (the HPAScaleToZero alpha gate is not modelled, so ``minReplicas`` is at least 1)."""
    causes = validate_metadata(hpa, namespaced=True)
    spec = _dict(hpa.get("spec"))
    min_replicas, max_replicas = spec.get("minReplicas"), spec.get("maxReplicas") or 0
    if isinstance(min_replicas, int) and min_replicas < 1:
        causes.append(invalid("spec.minReplicas", min_replicas, "must be greater than or equal to 1"))
    if max_replicas < 1:
        causes.append(invalid("spec.maxReplicas", max_replicas, "must be greater than 0"))
    if isinstance(min_replicas, int) and max_replicas < min_replicas:
        causes.append(invalid("spec.maxReplicas", max_replicas, "must be greater than or equal to `minReplicas`"))
    ref = _dict(spec.get("scaleTargetRef"))
    for key in ("kind", "name"):
        value = ref.get(key)
        if not value:
            causes.append(required(f"spec.scaleTargetRef.{key}"))
        else:
            causes += [invalid(f"spec.scaleTargetRef.{key}", value, p) for p in _path_segment_problems(str(value))]
    for i, metric in enumerate(spec.get("metrics") or []):
        causes += _validate_metric(_dict(metric), f"spec.metrics[{i}]")
    behavior = _dict(spec.get("behavior"))
    causes += _validate_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp")
    causes += _validate_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown")
    return causes


core.VALIDATORS["HorizontalPodAutoscaler"] = validate_horizontal_pod_autoscaler
