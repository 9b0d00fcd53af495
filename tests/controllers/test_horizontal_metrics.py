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
from kss_sim.controllers.replica_calculator import pod_usage
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
        "the HPA was unable to compute the replica count: container db not found in Pod a",
    )
    assert events(store)[0] == ("Warning", "FailedGetContainerResourceMetric", "container db not found in Pod a")
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
