"""autoscaling/v1 HorizontalPodAutoscalers: the autoscaling/v2 ones the store holds, served in the older version.

kube-apiserver stores one HorizontalPodAutoscaler resource and converts it to the version a request names
(pkg/apis/autoscaling/v1's conversion). autoscaling/v1 has a single metric, ``targetCPUUtilizationPercentage``
(the Resource metric ``cpu`` with an ``averageUtilization`` target), and ``currentCPUUtilizationPercentage`` in the
status; what else v2 holds travels in annotations, so a v1 client that reads an object and writes it back loses
nothing:

- ``autoscaling.alpha.kubernetes.io/metrics``: the other metrics, as v1's (v2beta1-shaped) MetricSpecs;
- ``autoscaling.alpha.kubernetes.io/current-metrics``: every current metric, as v1's MetricStatuses;
- ``autoscaling.alpha.kubernetes.io/behavior``: the behavior, as Go marshals the internal type (it has no json
  tags, so its keys are Go's field names, read back ignoring case as encoding/json does);
- ``autoscaling.alpha.kubernetes.io/conditions``: the status conditions.

Converting a v1 object back reads them (a malformed one is ignored, as upstream ignores it) and drops them; a v1
object without any metric gets the 80 % cpu target v1's controller once applied implicitly. ``views`` serves the
kind with this conversion (``CONVERSION``); `kubectl autoscale` (kubectl before v1.34) creates v1 objects.
"""

from __future__ import annotations

from typing import Any

import orjson

from kss_sim.cluster.api.views import Conversion
from kss_sim.cluster.kinds.registry import AUTOSCALING_V1, BY_KIND

STORED = BY_KIND["HorizontalPodAutoscaler"]
METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
ROUND_TRIP_ANNOTATIONS = (METRICS_ANNOTATION, BEHAVIOR_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION)
# autoscaling.DefaultCPUUtilization: the target of a v1 object that names no metric.
DEFAULT_CPU_UTILIZATION = 80

_V1_FIELDS = {
    "": frozenset({"apiVersion", "kind", "metadata", "spec", "status"}),
    "spec.": frozenset({"scaleTargetRef", "minReplicas", "maxReplicas", "targetCPUUtilizationPercentage"}),
    "status.": frozenset(
        {"observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas", "currentCPUUtilizationPercentage"}
    ),
}
# Go's zero resource.Quantity, for v1's non-pointer quantities.
_ZERO = "0"


def _present(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None


def _dict(obj: Any, key: str) -> dict[str, Any]:
    value = _present(obj, key)
    return value if isinstance(value, dict) else {}


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    """``out[key] = value`` unless ``value`` is absent (Go's omitempty pointer)."""
    if value is not None:
        out[key] = value


def _reference(ref: Any) -> dict[str, Any]:
    """A CrossVersionObjectReference (the same fields in both versions, kind and name always written)."""
    out = {"kind": _present(ref, "kind") or "", "name": _present(ref, "name") or ""}
    _put(out, "apiVersion", _present(ref, "apiVersion") or None)
    return out


def _is_cpu_utilization(metric: Any) -> bool:
    resource = _dict(metric, "resource")
    return (
        _present(metric, "type") == "Resource"
        and resource.get("name") == "cpu"
        and _present(_dict(resource, "target"), "averageUtilization") is not None
    )


# --- metrics: v2 <-> v1's annotation form ---------------------------------------------------------------------


def _metric_spec_to_v1(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type", "")}
    if source := _present(metric, "object"):
        target, ident = _dict(source, "target"), _dict(source, "metric")
        part = {
            "target": _reference(_present(source, "describedObject")),
            "metricName": ident.get("name", ""),
            "targetValue": target.get("value") or _ZERO,
        }
        _put(part, "selector", ident.get("selector"))
        _put(part, "averageValue", target.get("averageValue"))
        out["object"] = part
    if source := _present(metric, "pods"):
        target, ident = _dict(source, "target"), _dict(source, "metric")
        part = {"metricName": ident.get("name", ""), "targetAverageValue": target.get("averageValue") or _ZERO}
        _put(part, "selector", ident.get("selector"))
        out["pods"] = part
    for key in ("resource", "containerResource"):
        if source := _present(metric, key):
            target = _dict(source, "target")
            part = {"name": source.get("name", "")}
            _put(part, "targetAverageUtilization", target.get("averageUtilization"))
            _put(part, "targetAverageValue", target.get("averageValue"))
            if key == "containerResource":
                part["container"] = source.get("container", "")
            out[key] = part
    if source := _present(metric, "external"):
        target, ident = _dict(source, "target"), _dict(source, "metric")
        part = {"metricName": ident.get("name", "")}
        _put(part, "metricSelector", ident.get("selector"))
        _put(part, "targetValue", target.get("value"))
        _put(part, "targetAverageValue", target.get("averageValue"))
        out["external"] = part
    return out


def _identifier(source: dict[str, Any], selector_key: str) -> dict[str, Any]:
    out = {"name": source.get("metricName", "")}
    _put(out, "selector", source.get(selector_key))
    return out


def _metric_spec_from_v1(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type", "")}
    if source := _present(metric, "object"):
        target = {"type": "AverageValue" if source.get("averageValue") is not None else "Value"}
        target["value"] = source.get("targetValue") or _ZERO
        _put(target, "averageValue", source.get("averageValue"))
        out["object"] = {
            "describedObject": _reference(source.get("target")),
            "target": target,
            "metric": _identifier(source, "selector"),
        }
    if source := _present(metric, "pods"):
        out["pods"] = {
            "metric": _identifier(source, "selector"),
            "target": {"type": "AverageValue", "averageValue": source.get("targetAverageValue") or _ZERO},
        }
    for key in ("resource", "containerResource"):
        if source := _present(metric, key):
            utilization = source.get("targetAverageUtilization")
            target = {"type": "Utilization" if utilization is not None else "AverageValue"}
            _put(target, "averageUtilization", utilization)
            _put(target, "averageValue", source.get("targetAverageValue"))
            part = {"name": source.get("name", ""), "target": target}
            if key == "containerResource":
                part["container"] = source.get("container", "")
            out[key] = part
    if source := _present(metric, "external"):
        target = {"type": "Value" if source.get("targetValue") is not None else "AverageValue"}
        _put(target, "value", source.get("targetValue"))
        _put(target, "averageValue", source.get("targetAverageValue"))
        out["external"] = {"metric": _identifier(source, "metricSelector"), "target": target}
    return out


def _metric_status_to_v1(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type", "")}
    if source := _present(metric, "object"):
        current, ident = _dict(source, "current"), _dict(source, "metric")
        part = {
            "target": _reference(_present(source, "describedObject")),
            "metricName": ident.get("name", ""),
            "currentValue": current.get("value") or _ZERO,
        }
        _put(part, "selector", ident.get("selector"))
        _put(part, "averageValue", current.get("averageValue"))
        out["object"] = part
    if source := _present(metric, "pods"):
        current, ident = _dict(source, "current"), _dict(source, "metric")
        part = {"metricName": ident.get("name", ""), "currentAverageValue": current.get("averageValue") or _ZERO}
        _put(part, "selector", ident.get("selector"))
        out["pods"] = part
    for key in ("resource", "containerResource"):
        if source := _present(metric, key):
            current = _dict(source, "current")
            part = {"name": source.get("name", "")}
            _put(part, "currentAverageUtilization", current.get("averageUtilization"))
            part["currentAverageValue"] = current.get("averageValue") or _ZERO
            if key == "containerResource":
                part["container"] = source.get("container", "")
            out[key] = part
    if source := _present(metric, "external"):
        current, ident = _dict(source, "current"), _dict(source, "metric")
        part = {"metricName": ident.get("name", "")}
        _put(part, "metricSelector", ident.get("selector"))
        part["currentValue"] = current.get("value") or _ZERO
        _put(part, "currentAverageValue", current.get("averageValue"))
        out["external"] = part
    return out


def _metric_status_from_v1(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type", "")}
    if source := _present(metric, "object"):
        current = {"value": source.get("currentValue") or _ZERO}
        _put(current, "averageValue", source.get("averageValue"))
        out["object"] = {
            "metric": _identifier(source, "selector"),
            "current": current,
            "describedObject": _reference(source.get("target")),
        }
    if source := _present(metric, "pods"):
        out["pods"] = {
            "metric": _identifier(source, "selector"),
            "current": {"averageValue": source.get("currentAverageValue") or _ZERO},
        }
    for key in ("resource", "containerResource"):
        if source := _present(metric, key):
            current = {"averageValue": source.get("currentAverageValue") or _ZERO}
            _put(current, "averageUtilization", source.get("currentAverageUtilization"))
            part = {"name": source.get("name", ""), "current": current}
            if key == "containerResource":
                part["container"] = source.get("container", "")
            out[key] = part
    if source := _present(metric, "external"):
        current = {"value": source.get("currentValue") or _ZERO}
        _put(current, "averageValue", source.get("currentAverageValue"))
        out["external"] = {"metric": _identifier(source, "metricSelector"), "current": current}
    return out


# --- behavior: v2 <-> Go's marshalling of the internal type (field names, nil pointers as null) ------------------

_RULES_FIELDS = (
    ("stabilizationWindowSeconds", "StabilizationWindowSeconds"),
    ("selectPolicy", "SelectPolicy"),
    ("policies", "Policies"),
    ("tolerance", "Tolerance"),
)
_POLICY_FIELDS = (("type", "Type", ""), ("value", "Value", 0), ("periodSeconds", "PeriodSeconds", 0))


def _behavior_to_go(behavior: dict[str, Any]) -> dict[str, Any]:
    def rules(value: Any) -> Any:
        if not isinstance(value, dict):
            return None
        out = {go: value.get(name) for name, go in _RULES_FIELDS}
        if isinstance(out["Policies"], list):
            out["Policies"] = [
                {go: _present(p, name) or zero for name, go, zero in _POLICY_FIELDS} for p in out["Policies"]
            ]
        return out

    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def _field(obj: dict[str, Any], go_name: str) -> Any:
    """A key as encoding/json matches it: exactly, else ignoring case."""
    if go_name in obj:
        return obj[go_name]
    folded = go_name.casefold()
    return next((value for key, value in obj.items() if key.casefold() == folded), None)


def _behavior_from_go(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None

    def rules(value: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        out: dict[str, Any] = {}
        for name, go in _RULES_FIELDS:
            _put(out, name, _field(value, go))
        if isinstance(out.get("policies"), list):
            out["policies"] = [
                {name: _field(p, go) or zero for name, go, zero in _POLICY_FIELDS}
                for p in out["policies"]
                if isinstance(p, dict)
            ]
        return out

    out: dict[str, Any] = {}
    _put(out, "scaleUp", rules(_field(raw, "ScaleUp")))
    _put(out, "scaleDown", rules(_field(raw, "ScaleDown")))
    return out or None  # the zero behavior is no behavior


# --- the objects -----------------------------------------------------------------------------------------------


def _annotation_json(obj: dict[str, Any], key: str) -> Any:
    raw = _dict(_dict(obj, "metadata"), "annotations").get(key)
    if not isinstance(raw, str):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _without_round_trip_annotations(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` (a shallow copy) without the conversion's annotations; an annotations map left empty goes too."""
    metadata = obj.get("metadata")
    annotations = _dict(metadata, "annotations")
    if not any(key in annotations for key in ROUND_TRIP_ANNOTATIONS):
        return dict(obj)
    kept = {k: v for k, v in annotations.items() if k not in ROUND_TRIP_ANNOTATIONS}
    assert isinstance(metadata, dict)
    new_metadata = {k: v for k, v in metadata.items() if k != "annotations"}
    if kept:
        new_metadata["annotations"] = kept
    return {**obj, "metadata": new_metadata}


def _annotate(obj: dict[str, Any], key: str, value: Any) -> None:
    metadata = _dict(obj, "metadata")  # shared with the object converted: copied, never changed
    annotations = {**(metadata.get("annotations") or {}), key: orjson.dumps(value).decode()}
    obj["metadata"] = {**metadata, "annotations": annotations}


def to_v1(hpa: dict[str, Any]) -> dict[str, Any]:
    """A stored (autoscaling/v2) HorizontalPodAutoscaler in its autoscaling/v1 form."""
    out = _without_round_trip_annotations(hpa)
    out["apiVersion"] = AUTOSCALING_V1.api_version
    spec, status = _dict(hpa, "spec"), _dict(hpa, "status")
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    v1_spec = {"scaleTargetRef": _reference(spec.get("scaleTargetRef"))}
    _put(v1_spec, "minReplicas", spec.get("minReplicas"))
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    out["spec"] = v1_spec
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    v1_status: dict[str, Any] = {}
    _put(v1_status, "observedGeneration", status.get("observedGeneration"))
    _put(v1_status, "lastScaleTime", status.get("lastScaleTime"))
    v1_status["currentReplicas"] = status.get("currentReplicas", 0)
    v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    for metric in current:  # upstream's loop has no break: the last cpu utilization is the one shown
        resource = _dict(metric, "resource")
        if metric.get("type") == "Resource" and resource.get("name") == "cpu":
            _put(v1_status, "currentCPUUtilizationPercentage", _dict(resource, "current").get("averageUtilization"))
    out["status"] = v1_status
    others = [_metric_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        _annotate(out, METRICS_ANNOTATION, others)
    if current:
        _annotate(out, CURRENT_METRICS_ANNOTATION, [_metric_status_to_v1(m) for m in current])
    if isinstance(spec.get("behavior"), dict):
        _annotate(out, BEHAVIOR_ANNOTATION, _behavior_to_go(spec["behavior"]))
    if status.get("conditions"):
        _annotate(out, CONDITIONS_ANNOTATION, status["conditions"])
    return out


def to_v2(hpa: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 HorizontalPodAutoscaler (or apply configuration) in the stored autoscaling/v2 form."""
    out = _without_round_trip_annotations(hpa)
    out["apiVersion"] = STORED.api_version
    if "spec" in hpa:
        spec = _dict(hpa, "spec")
        v2_spec: dict[str, Any] = {}
        if "scaleTargetRef" in spec:
            v2_spec["scaleTargetRef"] = spec["scaleTargetRef"]
        for key in ("minReplicas", "maxReplicas"):
            if key in spec:
                v2_spec[key] = spec[key]
        metrics: list[Any] = []
        if spec.get("targetCPUUtilizationPercentage") is not None:
            target = {"type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}
            metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": target}})
        others = _annotation_json(hpa, METRICS_ANNOTATION)
        if isinstance(others, list):  # before the cpu target, as upstream orders them
            metrics = [_metric_spec_from_v1(m) for m in others if isinstance(m, dict)] + metrics
        if not metrics:
            target = {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}
            metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
        v2_spec["metrics"] = metrics
        _put(v2_spec, "behavior", _behavior_from_go(_annotation_json(hpa, BEHAVIOR_ANNOTATION)))
        out["spec"] = v2_spec
    if "status" in hpa:
        status = _dict(hpa, "status")
        v2_status: dict[str, Any] = {}
        for key in ("observedGeneration", "lastScaleTime"):
            _put(v2_status, key, status.get(key))
        v2_status["currentReplicas"] = status.get("currentReplicas", 0)
        v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        if status.get("currentCPUUtilizationPercentage") is not None:
            current = {"averageUtilization": status["currentCPUUtilizationPercentage"]}
            v2_status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": current}}]
        statuses = _annotation_json(hpa, CURRENT_METRICS_ANNOTATION)
        if isinstance(statuses, list):  # every current metric, with more than the cpu percentage
            v2_status["currentMetrics"] = [_metric_status_from_v1(m) for m in statuses if isinstance(m, dict)]
        conditions = _annotation_json(hpa, CONDITIONS_ANNOTATION)
        if isinstance(conditions, list):
            v2_status["conditions"] = conditions
        out["status"] = v2_status
    return out


def _pop_unknown(body: dict[str, Any]) -> list[str]:
    """The fields of a v1 body autoscaling/v1 does not have (``spec.metrics``), removed."""
    unknown: list[str] = []
    for prefix, known in _V1_FIELDS.items():
        part = body if not prefix else body.get(prefix[:-1])
        if isinstance(part, dict):
            for key in [k for k in part if k not in known]:
                unknown.append(prefix + key)
                del part[key]
    return unknown


CONVERSION = Conversion(view=AUTOSCALING_V1, stored=STORED, to_view=to_v1, to_stored=to_v2, pop_unknown=_pop_unknown)
