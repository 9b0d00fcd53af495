"""The horizontal pod autoscaler's ContainerResource metrics and metric label selectors
(kss_sim/controllers/horizontal_metrics.py, replica_calculator.py) over an in-memory store on a fake clock: one
container's usage (the usage annotation's per-container JSON form) against its own request, with upstream's
status, conditions and Events; and Pods, Object and External metrics whose selector picks the labelled series of
a ``kss.sigs.k8s.io/<metric>-metric`` annotation."""

from __future__ import annotations

import json
from typing import Any

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.horizontal import HorizontalController
from kss_sim.controllers.replica_calculator import metric_value, pod_usage
from kss_sim.kube.objects import Obj
from tests.controllers.test_horizontal import LABELS, condition, controller, events, hpa, replicas, status, store, web
from tests.controllers.workloads import make_ready

__all__ = ["controller", "store"]  # the fixtures, shared with test_horizontal


def two_container_pod(store: ClusterStore, name: str, usage: dict[str, str] | str | None) -> Obj:
    """A pod of an ``app`` container (500m requested) and a ``sidecar`` (100m), Ready."""
    annotations = (
        {} if usage is None else {"kss.sigs.k8s.io/cpu-usage": usage if isinstance(usage, str) else json.dumps(usage)}
    )
    containers = [
        {"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "sidecar", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}},
    ]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(LABELS), "annotations": annotations},
        "spec": {"containers": containers},
    }
    return make_ready(store, store.create("Pod", body, "default"))


def container_cpu(container: str, **target: Any) -> Obj:
    return {
        "type": "ContainerResource",
        "containerResource": {
            "name": "cpu",
            "container": container,
            "target": target or {"type": "Utilization", "averageUtilization": 50},
        },
    }


def test_the_usage_annotation_s_per_container_form() -> None:
    pod = {
        "metadata": {"annotations": {"kss.sigs.k8s.io/cpu-usage": '{"app": "450m", "sidecar": "0.05"}'}},
        "spec": {"containers": [{"name": "app"}, {"name": "sidecar"}]},
    }
    assert pod_usage(pod, "cpu") == 500  # the pod's total: the containers' sum
    assert (pod_usage(pod, "cpu", "app"), pod_usage(pod, "cpu", "sidecar"), pod_usage(pod, "cpu", "db")) == (
        450,
        50,
        None,
    )
    single = {
        "metadata": {"annotations": {"kss.sigs.k8s.io/cpu-usage": "300m"}},
        "spec": {"containers": [{"name": "c"}]},
    }
    assert pod_usage(single, "cpu", "c") == 300  # a plain quantity is the only container's usage
    double = {**single, "spec": {"containers": [{"name": "c"}, {"name": "d"}]}}
    assert pod_usage(double, "cpu", "c") is None  # several containers: the quantity says not whose


def test_a_container_resource_metric_scales_on_one_container_s_utilization(
    store: ClusterStore, controller: HorizontalController
) -> None:
    web(store, 2)
    two_container_pod(store, "a", {"app": "450m", "sidecar": "10m"})
    two_container_pod(store, "b", {"app": "450m", "sidecar": "10m"})
    hpa(store, metrics=[container_cpu("app")])
    controller.drain()
    # The app container at 90 % of its 500m against 50 %: ceil(2 * 90 / 50) = 4 (the pods' total would be 76 %).
    assert replicas(store) == 4
    assert status(store)["currentMetrics"] == [
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "container": "app",
                "current": {"averageValue": "450m", "averageUtilization": 90},
            },
        }
    ]
    assert condition(store, "ScalingActive") == (
        "True",
        "ValidMetricFound",
        "the HPA was able to successfully calculate a replica count from cpu container resource utilization "
        "(percentage of request)",
    )
    assert events(store) == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 4; reason: cpu container resource utilization (percentage of request) above target",
        )
    ]


def test_a_container_resource_average_value_target(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 2)
    two_container_pod(store, "a", {"app": "100m", "sidecar": "90m"})
    two_container_pod(store, "b", {"app": "100m", "sidecar": "90m"})
    hpa(store, metrics=[container_cpu("sidecar", type="AverageValue", averageValue="30m")])
    controller.drain()
    # The sidecar's 90m against 30m asks for ceil(2 * 3) = 6; the scale-up limit (max(2 * 2, 4)) allows 4.
    assert replicas(store) == 4
    assert status(store)["currentMetrics"] == [
        {
            "type": "ContainerResource",
            "containerResource": {"name": "cpu", "container": "sidecar", "current": {"averageValue": "90m"}},
        }
    ]
    assert condition(store, "ScalingLimited")[:2] == ("True", "ScaleUpLimit")
    # Upstream names an average-value target "<resource> resource" whether it is a container's or the pod's.
    assert events(store) == [("Normal", "SuccessfulRescale", "New size: 4; reason: cpu resource above target")]


def test_a_container_the_pods_lack_or_without_a_request_is_reported(
    store: ClusterStore, controller: HorizontalController
) -> None:
    web(store, 1)
    two_container_pod(store, "a", {"app": "450m"})
    hpa(store, metrics=[container_cpu("db")])
    controller.drain()
    assert replicas(store) == 1
    assert condition(store, "ScalingActive") == (
        "False",
        "FailedGetContainerResourceMetric",
        "the HPA was unable to compute the replica count: failed to get cpu utilization: container db not found in "
        "Pod a",
    )
    assert events(store)[0] == (
        "Warning",
        "FailedGetContainerResourceMetric",
        "failed to get cpu utilization: container db not found in Pod a",
    )
    assert status(store)["currentMetrics"] == [{"type": ""}]


def test_pods_without_the_container_s_usage_are_missing(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 2)
    two_container_pod(store, "a", {"app": "450m", "sidecar": "10m"})
    two_container_pod(store, "b", "460m")  # the pod's total only: whose it is, nobody knows
    hpa(store, metrics=[container_cpu("app")])
    controller.drain()
    # b is missing: at 0 on a scale-up, so (450m + 0) / 1000m = 45 % against 50 % goes the other way: kept at 2.
    assert replicas(store) == 2
    assert status(store)["currentMetrics"][0]["containerResource"]["current"] == {
        "averageValue": "450m",
        "averageUtilization": 90,
    }


def annotate(store: ClusterStore, kind: str, name: str, metric: str, series: dict[str, str] | str) -> None:
    value = series if isinstance(series, str) else json.dumps(series)
    body = {"metadata": {"annotations": {f"kss.sigs.k8s.io/{metric}-metric": value}}}
    store.patch(kind, "default", name, body, "merge")


def test_metric_series_are_chosen_by_the_metric_selector() -> None:
    queue = {
        "metadata": {"annotations": {"kss.sigs.k8s.io/depth-metric": '{"queue=orders": "120", "queue=mail": "30"}'}}
    }
    orders = {"matchLabels": {"queue": "orders"}}
    assert metric_value(queue, "depth") == 150_000  # no selector: every series
    assert metric_value(queue, "depth", orders) == 120_000
    assert metric_value(queue, "depth", {"matchExpressions": [{"key": "queue", "operator": "Exists"}]}) == 150_000
    assert metric_value(queue, "depth", {"matchLabels": {"queue": "billing"}}) is None  # nothing matches
    plain = {"metadata": {"annotations": {"kss.sigs.k8s.io/depth-metric": "7"}}}
    assert metric_value(plain, "depth") == 7000
    assert metric_value(plain, "depth", orders) is None  # one series without labels: not the selected one
    assert metric_value(plain, "depth", {}) == 7000  # an empty selector selects everything


def test_an_external_metric_s_selector_sums_the_series_it_selects(
    store: ClusterStore, controller: HorizontalController
) -> None:
    web(store, 2)
    store.patch("Deployment", "default", "web", {"status": {"replicas": 2}}, "merge", subresource="status")
    selector = {"matchLabels": {"queue": "orders"}}
    identifier = {"name": "queue-depth", "selector": selector}
    queue = {
        "type": "External",
        "external": {"metric": identifier, "target": {"type": "AverageValue", "averageValue": "5"}},
    }
    hpa(store, metrics=[queue])
    annotate(store, "HorizontalPodAutoscaler", "web", "queue-depth", {"queue=mail": "100"})
    controller.drain()
    # Only the mail queue has a series: nothing selected, the metric fails as the external metrics API's answer would.
    assert condition(store, "ScalingActive") == (
        "False",
        "FailedGetExternalMetric",
        "the HPA was unable to compute the replica count: unable to get external metric default/queue-depth/"
        "&LabelSelector{MatchLabels:map[string]string{queue: orders,},MatchExpressions:[]LabelSelectorRequirement{},}: "
        "no metric value (set the kss.sigs.k8s.io/queue-depth-metric annotation)",
    )
    annotate(
        store,
        "HorizontalPodAutoscaler",
        "web",
        "queue-depth",
        {"queue=mail": "100", "queue=orders,shard=1": "12", "queue=orders,shard=2": "8"},
    )
    controller.reset()
    controller.drain()
    # 20 in the orders queue's series against 5 per pod: ceil(20 / 5) = 4 (the mail queue's 100 not counted).
    assert replicas(store) == 4
    assert status(store)["currentMetrics"] == [
        {"type": "External", "external": {"metric": identifier, "current": {"averageValue": "10"}}}
    ]


def test_a_pods_metric_s_selector_reads_each_pod_s_selected_series(
    store: ClusterStore, controller: HorizontalController
) -> None:
    web(store, 2)
    for name in "ab":
        two_container_pod(store, name, None)
        annotate(store, "Pod", name, "requests", {"path=/api": "30", "path=/health": "100"})
    selector = {"matchLabels": {"path": "/api"}}
    requests = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "requests", "selector": selector},
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }
    hpa(store, metrics=[requests])
    controller.drain()
    # 30 per pod on /api against 10: ceil(2 * 3) = 6, held to the scale-up limit of 4.
    assert replicas(store) == 4
    assert status(store)["currentMetrics"][0]["pods"]["current"] == {"averageValue": "30"}


def test_an_object_metric_s_selector(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 2)
    for name in "ab":
        two_container_pod(store, name, "100m")
    store.create("Service", {"metadata": {"name": "front"}, "spec": {"ports": [{"port": 80}]}}, "default")
    annotate(store, "Service", "front", "hits", {"code=200": "40", "code=500": "400"})
    described = {"apiVersion": "v1", "kind": "Service", "name": "front"}
    hits = {
        "type": "Object",
        "object": {
            "describedObject": described,
            "metric": {"name": "hits", "selector": {"matchLabels": {"code": "200"}}},
            "target": {"type": "Value", "value": "20"},
        },
    }
    hpa(store, metrics=[hits])
    controller.drain()
    assert replicas(store) == 4  # 40 against 20: the 2 ready pods times 2 (the 500s' series not selected)
    assert status(store)["currentMetrics"][0]["object"]["current"] == {"value": "40"}
