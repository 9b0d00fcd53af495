"""The horizontal pod autoscaler's metrics: each metric of an autoscaler's spec read from the values the user sets
(``kss.sigs.k8s.io/<resource>-usage`` on pods, ``kss.sigs.k8s.io/<metric>-metric`` on pods, the described object
or the autoscaler) and turned into a replica count, a name for the scaling reason and the metric's status, as
kube-controller-manager's ``computeStatusFor*Metric`` (v1.35) do; ``horizontal.py`` takes the largest.
"""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.admission.quantities import canonical_quantity
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.owned import meta
from kss_sim.controllers.replica_calculator import (
    METRIC_ANNOTATION,
    MetricError,
    Tolerances,
    metric_value,
    milli,
    per_pod_replicas,
    pods_metric_replicas,
    raw_resource_replicas,
    resource_replicas,
    usage_ratio_replicas,
)
from kss_sim.kube.objects import Obj


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _quantity(thousandths: int) -> str:
    return canonical_quantity(f"{thousandths}m")


def _go_selector(selector: Any) -> str:
    """A metric's label selector as Go's ``%+v`` shows it in the scaling reason: the generated String() of the
    pointer (``nil`` without one)."""
    if not isinstance(selector, dict):
        return "nil"
    labels = "".join(f"{k}: {v}," for k, v in sorted(_dict(selector.get("matchLabels")).items()))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or []
        if isinstance(e, dict)
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )


def replicas_for_metric(
    store: ClusterPort, hpa: Obj, metric: Obj, current: int, pods: list[Obj], spec: Obj, target: Obj, tolerance: float
) -> tuple[int, str, Obj]:
    """computeReplicasForMetric: the replicas one metric asks for, its name and its status; MetricError when it
    gives none."""
    kind = metric.get("type")
    if kind == "Pods":
        return _pods_metric(metric, current, pods, tolerances(spec, tolerance))
    if kind in ("Object", "External"):
        # statusReplicas: the target's scale status, what the per-pod average divides by.
        status_replicas = _int(_dict(target.get("status")).get("replicas"), 0)
        if kind == "Object":
            return _object_metric(store, hpa, metric, current, status_replicas, pods, tolerances(spec, tolerance))
        return _external_metric(hpa, metric, current, status_replicas, pods, tolerances(spec, tolerance))
    if kind not in ("Resource", "ContainerResource"):
        raise MetricError("InvalidMetricSourceType", f'unknown metric source type "{kind}"')
    return _resource_metric(metric, str(kind), current, pods, tolerances(spec, tolerance))


def _resource_metric(metric: Obj, kind: str, current: int, pods: list[Obj], within: Tolerances) -> tuple[int, str, Obj]:
    """computeStatusForResourceMetric / computeStatusForContainerResourceMetric (computeStatusForResourceMetricGeneric):
    the pods' usage of a resource, or of one container's, against a utilization of its requests or an average
    value."""
    container_metric = kind == "ContainerResource"
    source = _dict(metric.get("containerResource" if container_metric else "resource"))
    resource, target = str(source.get("name") or ""), _dict(source.get("target"))
    container = str(source.get("container") or "") if container_metric else ""
    reason = "FailedGetContainerResourceMetric" if container_metric else "FailedGetResourceMetric"
    if target.get("averageValue") is not None:
        goal = milli(target["averageValue"]) or 1
        try:
            replicas, average = raw_resource_replicas(current, goal, resource, pods, within, container, reason)
        except MetricError as exc:  # computeStatusForResourceMetricGeneric's wrapping
            raise MetricError(exc.reason, f"failed to get {resource} usage: {exc}") from exc
        current_value: Obj = {"averageValue": _quantity(average)}
        name = f"{resource} resource"
    else:
        goal = _int(target.get("averageUtilization"), 80)
        try:
            replicas, utilization, average = resource_replicas(current, goal, resource, pods, within, container, reason)
        except MetricError as exc:
            raise MetricError(exc.reason, f"failed to get {resource} utilization: {exc}") from exc
        current_value = {"averageValue": _quantity(average), "averageUtilization": utilization}
        what = "container resource" if container_metric else "resource"
        name = f"{resource} {what} utilization (percentage of request)"
    if container_metric:
        status = {"name": resource, "container": container, "current": current_value}
        return replicas, name, {"type": "ContainerResource", "containerResource": status}
    return replicas, name, {"type": "Resource", "resource": {"name": resource, "current": current_value}}


def _pods_metric(metric: Obj, current: int, pods: list[Obj], within: Tolerances) -> tuple[int, str, Obj]:
    """computeStatusForPodsMetric: the pods' ``kss.sigs.k8s.io/<metric>-metric`` against the average value."""
    source = _dict(metric.get("pods"))
    identifier = _dict(source.get("metric"))
    name = str(identifier.get("name") or "")
    goal = milli(_dict(source.get("target")).get("averageValue")) or 1
    replicas, average = pods_metric_replicas(current, goal, name, pods, within, identifier.get("selector"))
    status = {"type": "Pods", "pods": {"metric": identifier, "current": {"averageValue": _quantity(average)}}}
    return replicas, f"pods metric {name}", status


def _object_metric(
    store: ClusterPort, hpa: Obj, metric: Obj, current: int, status_replicas: int, pods: list[Obj], within: Tolerances
) -> tuple[int, str, Obj]:
    """computeStatusForObjectMetric: the described object's ``kss.sigs.k8s.io/<metric>-metric`` (or, for a
    kind kss does not store, the autoscaler's own) against a value or a per-pod average value."""
    source = _dict(metric.get("object"))
    identifier, described = _dict(source.get("metric")), _dict(source.get("describedObject"))
    name, kind = str(identifier.get("name") or ""), str(described.get("kind") or "")
    namespace = str(meta(hpa).get("namespace") or "")
    holder = store.get(kind, namespace, str(described.get("name") or "")) if store.serves(kind) else hpa
    usage = None if holder is None else metric_value(holder, name, identifier.get("selector"))
    if usage is None:
        raise MetricError(
            "FailedGetObjectMetric",
            f"unable to get metric {name}: {kind} on {namespace} {described.get('name')}: no metric value "
            f"(set the {METRIC_ANNOTATION.format(metric=name)} annotation)",
        )
    target = _dict(source.get("target"))
    base: Obj = {"metric": identifier, "describedObject": described}
    if target.get("type") == "Value" and target.get("value") is not None:
        goal = milli(target["value"]) or 1
        replicas = usage_ratio_replicas(current, usage / goal, pods, within, "FailedGetObjectMetric")
        current_value: Obj = {"value": _quantity(usage)}
    elif target.get("type") == "AverageValue" and target.get("averageValue") is not None:
        goal = milli(target["averageValue"]) or 1
        replicas, average = per_pod_replicas(status_replicas, usage, goal, within)
        current_value = {"averageValue": _quantity(average)}
    else:
        raise MetricError(
            "FailedGetObjectMetric", "invalid object metric source: neither a value target nor an average value "
            "target was set"
        )  # fmt: skip
    status = {"type": "Object", "object": {**base, "current": current_value}}
    return replicas, f"{kind} metric {name}", status


def _external_metric(
    hpa: Obj, metric: Obj, current: int, status_replicas: int, pods: list[Obj], within: Tolerances
) -> tuple[int, str, Obj]:
    """computeStatusForExternalMetric: the autoscaler's ``kss.sigs.k8s.io/<metric>-metric`` (the total of the
    metric's series) against a value or a per-pod average value."""
    source = _dict(metric.get("external"))
    identifier = _dict(source.get("metric"))
    name = str(identifier.get("name") or "")
    selector = identifier.get("selector")
    usage = metric_value(hpa, name, selector)
    if usage is None:
        raise MetricError(
            "FailedGetExternalMetric",
            f"unable to get external metric {meta(hpa).get('namespace')}/{name}/{_go_selector(selector)}: no metric "
            f"value (set the {METRIC_ANNOTATION.format(metric=name)} annotation)",
        )
    target = _dict(source.get("target"))
    if target.get("averageValue") is not None:
        goal = milli(target["averageValue"]) or 1
        replicas, average = per_pod_replicas(status_replicas, usage, goal, within)
        current_value: Obj = {"averageValue": _quantity(average)}
    elif target.get("value") is not None:
        goal = milli(target["value"]) or 1
        replicas = usage_ratio_replicas(current, usage / goal, pods, within, "FailedGetExternalMetric")
        current_value = {"value": _quantity(usage)}
    else:
        raise MetricError(
            "FailedGetExternalMetric", "invalid external metric source: neither a value target nor an average "
            "value target was set"
        )  # fmt: skip
    status = {"type": "External", "external": {"metric": identifier, "current": current_value}}
    return replicas, f"external metric {name}({_go_selector(selector)})", status


def tolerances(spec: Obj, tolerance: float) -> Tolerances:
    """The controller's tolerance, or a behavior's own (``tolerance``, HPAConfigurableTolerance)."""
    behavior = _dict(spec.get("behavior"))
    result = Tolerances(tolerance, tolerance)
    for key, attr in (("scaleDown", "scale_down"), ("scaleUp", "scale_up")):
        own = (
            milli(_dict(behavior.get(key)).get("tolerance"))
            if _dict(behavior.get(key)).get("tolerance") is not None
            else None
        )
        if own is not None:
            setattr(result, attr, own / 1000)
    return result
