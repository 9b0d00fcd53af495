"""The horizontal pod autoscaler's replica calculation: kube-controller-manager's
``pkg/controller/podautoscaler/replica_calculator.go`` (v1.35) over the usage the user sets per pod.

A pod's usage of a resource is its ``kss.sigs.k8s.io/<resource>-usage`` annotation (``cpu-usage: 450m``,
``memory-usage: 300Mi``, or per container ``{"app": "450m", "sidecar": "50m"}``), in thousandths here as
metrics-server's are read; a pod without it has no metric (upstream's missing pod), and for a ContainerResource
metric a pod without that container's figure neither. Failed and deleting pods are ignored; Pending pods, and for
cpu pods not Ready, are unready: left out, and counted at 0 when the others ask for a scale-up. Missing pods count
at the target's edge (their whole request, or the target when above 100 %, on a scale-down; 0 on a scale-up), and
a recount that changes direction or falls within the tolerance keeps the current count.

Custom and external metrics (Pods, Object, External) are the ``kss.sigs.k8s.io/<metric>-metric`` annotation of a
pod, the described object or the autoscaler, read in thousandths as the HPA reads them: a Pods metric averaged as
calcPlainMetricReplicas does, a value target scaling the ready pods by the ratio (getUsageRatioReplicaCount), an
average-value target dividing the total among the target's replicas (Get{Object,External}PerPodMetricReplicas).
The annotation holds one series (a quantity) or labelled ones (a JSON object keyed by label set, ``{"queue=orders":
"120", "queue=emails": "30"}``); a metric's label selector takes the total of the series it matches, as a metrics
adapter sums the series of a selected metric (and the HPA an External metric's).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kss_sim.controllers.owned import is_deleting, meta, pod_condition
from kss_sim.kube.labels import label_selector_matches
from kss_sim.kube.objects import Obj
from kss_sim.kube.pod_usage import USAGE_ANNOTATION
from kss_sim.kube.quantity import QuantityError, milli_value

# A custom (Pods, Object) or external metric's value: on each pod, on the described object, on the autoscaler.
METRIC_ANNOTATION = "kss.sigs.k8s.io/{metric}-metric"
TOLERANCE = 0.1  # --horizontal-pod-autoscaler-tolerance
# GetResourceReplicas' wrapping of the metrics client's error when the resource metrics API returns nothing.
NO_RESOURCE_METRICS = "unable to get metrics for resource {resource}: no metrics returned from resource metrics API"


class MetricError(Exception):
    """A metric that gives no replica count (its ScalingActive reason and the error)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def milli(text: Any) -> int | None:
    """``Quantity.MilliValue()`` of ``text``, None when it is no quantity."""
    try:
        return milli_value(text)
    except (QuantityError, TypeError, ValueError):
        return None


def _per_container(text: str) -> dict[str, int | None] | None:
    """A usage annotation's per-container form (a JSON object of container name to quantity) in thousandths;
    None when the annotation is a plain quantity."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}
    return {str(k): milli(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {}


def pod_usage(pod: Mapping[str, Any], resource: str, container: str = "") -> int | None:
    """The pod's usage of ``resource`` in thousandths (its annotation), or with ``container`` that container's
    alone (metrics-server's per-container figure); None without one.

    The annotation is a quantity (the pod's total, which is its only container's usage too) or a JSON object of
    container name to quantity (``{"app": "450m", "sidecar": "50m"}``: the pod's total is their sum).
    """
    annotations = _dict(_dict(pod.get("metadata")).get("annotations"))
    text = annotations.get(USAGE_ANNOTATION.format(resource=resource))
    if not isinstance(text, str):
        return None
    containers = _per_container(text)
    if containers is None:
        if not container:
            return milli(text)
        names = [_dict(c).get("name") for c in _dict(pod.get("spec")).get("containers") or []]
        return milli(text) if names == [container] else None
    if container:
        return containers.get(container)
    values = list(containers.values())
    return None if not values or None in values else sum(v for v in values if v is not None)


def _request_containers(pod: Mapping[str, Any]) -> list[Obj]:
    """The containers whose requests count (calculatePodRequestsFromContainers): the regular ones and the
    restartable init containers (sidecars), which run beside them."""
    spec = _dict(pod.get("spec"))
    return [
        *(_dict(c) for c in spec.get("containers") or []),
        *(_dict(c) for c in spec.get("initContainers") or [] if _dict(c).get("restartPolicy") == "Always"),
    ]


def _request_of(container: Obj, resource: str, pod: Mapping[str, Any], reason: str) -> int:
    request = _dict(_dict(container.get("resources")).get("requests")).get(resource)
    thousandths = None if request is None else milli(request)
    if thousandths is None:
        raise MetricError(
            reason,
            f"missing request for {resource} in container {container.get('name')} of Pod {meta(pod).get('name')}",
        )
    return thousandths


def container_request(pod: Mapping[str, Any], resource: str, container: str, reason: str) -> int:
    """calculatePodRequestsFromContainers for one container (its regular containers and restartable init
    containers): its request of ``resource`` in thousandths; MetricError when it has none or is not there."""
    for candidate in _request_containers(pod):
        if candidate.get("name") == container:
            return _request_of(candidate, resource, pod, reason)
    raise MetricError(reason, f"container {container} not found in Pod {meta(pod).get('name')}")


def pod_request(pod: Mapping[str, Any], resource: str, reason: str) -> int:
    """calculatePodRequestsFromContainers for the whole pod: its containers' and restartable init containers'
    requests added up; MetricError naming the first container without one."""
    return sum(_request_of(c, resource, pod, reason) for c in _request_containers(pod))


def has_usage(pods: list[Obj], resource: str) -> bool:
    """Whether any of the pods has a usage of ``resource``: without, the resource metrics API (metrics-server)
    would return no metrics at all."""
    annotation = USAGE_ANNOTATION.format(resource=resource)
    return any(annotation in _dict(_dict(pod.get("metadata")).get("annotations")) for pod in pods)


@dataclass
class Tolerances:
    scale_down: float = TOLERANCE
    scale_up: float = TOLERANCE

    def within(self, ratio: float) -> bool:
        return 1.0 - self.scale_down <= ratio <= 1.0 + self.scale_up


def _ready(pod: Mapping[str, Any]) -> bool:
    condition = pod_condition(pod, "Ready")
    return condition is not None and condition.get("status") == "True"


def _group_pods(
    pods: list[Obj], resource: str, usage_of: Callable[[Obj], int | None]
) -> tuple[dict[str, int], set[str], set[str]]:
    """groupPods: the ready pods' metrics, the unready pods (Pending; for cpu not Ready either) and the pods
    without a metric; Failed and deleting pods are ignored. ``usage_of``: where a pod's value comes from (its
    usage of ``resource``, one container's, or a custom metric)."""
    metrics: dict[str, int] = {}
    unready: set[str] = set()
    missing: set[str] = set()
    for pod in pods:
        name = str(meta(pod).get("name"))
        phase = _dict(pod.get("status")).get("phase")
        if is_deleting(pod) or phase == "Failed":
            continue
        usage = usage_of(pod)
        # Pending before missing, as upstream: a Pending pod without a metric is unready, not missing.
        if phase == "Pending" or (usage is not None and resource == "cpu" and not _ready(pod)):
            unready.add(name)
        elif usage is None:
            missing.add(name)
        else:
            metrics[name] = usage
    return metrics, unready, missing


def _utilization(
    metrics: Mapping[str, int], requests: Mapping[str, int], target: int, reason: str
) -> tuple[float, int, int]:
    """GetResourceUtilizationRatio: the ratio to the target, the utilization (percent) and the average usage."""
    used = sum(value for name, value in metrics.items() if name in requests)
    requested = sum(requests[name] for name in metrics if name in requests)
    counted = sum(1 for name in metrics if name in requests)
    if requested == 0:
        raise MetricError(reason, "no metrics returned matched known pods")
    utilization = used * 100 // requested
    return utilization / target, utilization, used // counted


def resource_replicas(
    current: int,
    target: int,
    resource: str,
    pods: list[Obj],
    tolerances: Tolerances,
    container: str = "",
    reason: str = "FailedGetResourceMetric",
) -> tuple[int, int, int]:
    """GetResourceReplicas: the replicas a utilization target asks for, the utilization and the average usage
    (with ``container``: that container's usage against its request, a ContainerResource metric)."""
    if not has_usage(pods, resource):
        raise MetricError(reason, NO_RESOURCE_METRICS.format(resource=resource))
    metrics, unready, missing = _group_pods(pods, resource, lambda pod: pod_usage(pod, resource, container))
    requests: dict[str, int] = {}
    for pod in pods:
        name = str(meta(pod).get("name"))
        if container:
            requests[name] = container_request(pod, resource, container, reason)
        else:
            requests[name] = pod_request(pod, resource, reason)
    if not metrics:
        raise MetricError(reason, "did not receive metrics for targeted pods (pods might be unready)")
    ratio, utilization, raw = _utilization(metrics, requests, target, reason)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerances.within(ratio):
            return current, utilization, raw
        return math.ceil(ratio * len(metrics)), utilization, raw
    if missing:
        if ratio < 1.0:  # on a scale-down a missing pod counts as using all of its request (or the target)
            fallback = max(100, target)
            metrics.update({name: requests[name] * fallback // 100 for name in missing})
        elif ratio > 1.0:
            metrics.update(dict.fromkeys(missing, 0))
    if scale_up_with_unready:
        metrics.update(dict.fromkeys(unready, 0))
    new_ratio, _, _ = _utilization(metrics, requests, target, reason)
    if tolerances.within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current, utilization, raw
    replicas = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current, utilization, raw
    return replicas, utilization, raw


def raw_resource_replicas(
    current: int,
    target: int,
    resource: str,
    pods: list[Obj],
    tolerances: Tolerances,
    container: str = "",
    reason: str = "FailedGetResourceMetric",
) -> tuple[int, int]:
    """GetRawResourceReplicas (calcPlainMetricReplicas): the replicas an average-value target asks for and the
    average usage (thousandths; with ``container``, that container's)."""
    if not has_usage(pods, resource):
        raise MetricError(reason, NO_RESOURCE_METRICS.format(resource=resource))
    metrics, unready, missing = _group_pods(pods, resource, lambda pod: pod_usage(pod, resource, container))
    if not metrics:
        raise MetricError(reason, "did not receive metrics for targeted pods (pods might be unready)")
    return _plain_replicas(current, target, metrics, unready, missing, tolerances)


def _plain_replicas(
    current: int, target: int, metrics: dict[str, int], unready: set[str], missing: set[str], tolerances: Tolerances
) -> tuple[int, int]:
    """calcPlainMetricReplicas over grouped pods: the replicas an average target asks for and the average."""
    average = sum(metrics.values()) // len(metrics)
    ratio = sum(metrics.values()) / len(metrics) / target
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerances.within(ratio):
            return current, average
        return math.ceil(ratio * len(metrics)), average
    if missing:
        metrics.update(dict.fromkeys(missing, target if ratio < 1.0 else 0))
    if scale_up_with_unready:
        metrics.update(dict.fromkeys(unready, 0))
    new_ratio = sum(metrics.values()) / len(metrics) / target
    if tolerances.within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current, average
    replicas = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current, average
    return replicas, average


# --- Pods, Object and External metrics: custom and external metrics the user sets --------------------------------


def _series_labels(key: str) -> dict[str, str] | None:
    """A series key's labels: ``queue=orders,tier=gold`` (labels.Set's String() form; ``""``: no labels); None
    when a part is no ``name=value``."""
    labels: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in key.split(","))):
        name, equals, value = part.partition("=")
        if not equals or not name.strip():
            return None
        labels[name.strip()] = value.strip()
    return labels


def metric_series(text: str) -> list[tuple[dict[str, str], int | None]]:
    """The series a ``kss.sigs.k8s.io/<metric>-metric`` annotation holds, each its labels and value in thousandths
    (None: no quantity): a plain quantity is one series without labels; a JSON object keyed by label set
    (``{"queue=orders": "120", "queue=emails": "30"}``) holds one series per key."""
    if not text.lstrip().startswith("{"):
        return [({}, milli(text))]
    try:
        parsed = json.loads(text)
    except ValueError:
        return [({}, None)]
    if not isinstance(parsed, dict):
        return [({}, None)]
    series: list[tuple[dict[str, str], int | None]] = []
    for key, value in parsed.items():
        labels = _series_labels(str(key))
        series.append(({}, None) if labels is None else (labels, milli(value)))
    return series


def metric_value(obj: Mapping[str, Any], metric: str, selector: Any = None) -> int | None:
    """The value of the custom or external metric ``metric`` an object's ``kss.sigs.k8s.io/<metric>-metric``
    annotation gives, in thousandths (``Quantity.MilliValue()``, as the HPA reads custom metrics): the total of the
    series the metric's label ``selector`` matches (every series without one, as the metrics APIs answer an empty
    selector); None without the annotation, when no series matches or a matching one is no quantity."""
    annotations = _dict(_dict(obj.get("metadata")).get("annotations"))
    text = annotations.get(METRIC_ANNOTATION.format(metric=metric))
    if not isinstance(text, str):
        return None
    values = [
        value
        for labels, value in metric_series(text)
        if not isinstance(selector, dict) or label_selector_matches(selector, labels)
    ]
    if not values or None in values:
        return None
    return sum(v for v in values if v is not None)


def pods_metric_replicas(
    current: int, target: int, metric: str, pods: list[Obj], tolerances: Tolerances, selector: Any = None
) -> tuple[int, int]:
    """GetMetricReplicas: the replicas a Pods metric's average-value target asks for and the pods' average (the
    readiness rules of a non-cpu resource: Pending pods are unready, pods without the annotation missing)."""
    values: dict[str, int] = {}
    for pod in pods:
        value = metric_value(pod, metric, selector)
        if value is not None:
            values[str(meta(pod).get("name"))] = value
    if not values:
        raise MetricError(
            "FailedGetPodsMetric", f"unable to get metric {metric}: no metrics returned from custom metrics API"
        )
    if not pods:
        raise MetricError("FailedGetPodsMetric", "no pods returned by selector while calculating replica count")
    # Not "cpu": a Pending pod is unready, any other pod without a value is missing.
    metrics, unready, missing = _group_pods(pods, "", lambda pod: values.get(str(meta(pod).get("name"))))
    if not metrics:
        raise MetricError("FailedGetPodsMetric", "did not receive metrics for targeted pods (pods might be unready)")
    return _plain_replicas(current, target, metrics, unready, missing, tolerances)


def usage_ratio_replicas(current: int, ratio: float, pods: list[Obj], tolerances: Tolerances, reason: str) -> int:
    """getUsageRatioReplicaCount (an Object or External metric's value target): the ready pods times the ratio;
    from zero replicas, the ratio itself."""
    if current == 0:
        return math.ceil(ratio)
    if tolerances.within(ratio):
        return current
    if not pods:
        raise MetricError(
            reason, "unable to calculate ready pods: no pods returned by selector while calculating replica count"
        )
    ready = sum(1 for pod in pods if _dict(pod.get("status")).get("phase") == "Running" and _ready(pod))
    return math.ceil(ratio * ready)


def per_pod_replicas(status_replicas: int, usage: int, target: int, tolerances: Tolerances) -> tuple[int, int]:
    """GetObjectPerPodMetricReplicas / GetExternalPerPodMetricReplicas (an average-value target): the replicas
    the total asks for, unless within the tolerance of the current ones, and the average per current replica."""
    replicas = status_replicas
    ratio = usage / (target * replicas) if replicas else math.inf
    if not tolerances.within(ratio):
        replicas = math.ceil(usage / target)
    return replicas, math.ceil(usage / status_replicas) if status_replicas else 0
