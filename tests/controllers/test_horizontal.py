"""The horizontal pod autoscaler (kss_sim/controllers/horizontal.py, replica_calculator.py) over an in-memory store
on a fake clock, attached (the test drains it): the replica count upstream's formula gives from the usage
annotations, the tolerance, min and max, the scale-up limit, the behavior's stabilization windows and policies,
unready and missing pods, the status (currentMetrics, conditions, lastScaleTime) and the Events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.horizontal import HorizontalController
from kss_sim.controllers.replica_calculator import MetricError, Tolerances, resource_replicas
from kss_sim.kube.objects import Obj
from tests.controllers.workloads import FakeClock, deployment, make_ready, set_phase

LABELS = {"app": "web"}


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    return store


@pytest.fixture
def controller(store: ClusterStore, clock: FakeClock) -> Iterator[HorizontalController]:
    loop = HorizontalController(store, clock=clock)
    loop.attach()
    yield loop
    loop.detach()


def web(store: ClusterStore, replicas: int) -> Obj:
    """The target Deployment (no Deployment controller runs: the test makes its pods)."""
    return store.create("Deployment", deployment("web", replicas, LABELS), "default")


def pod(store: ClusterStore, name: str, usage: str | None, *, request: str = "500m", ready: bool = True) -> Obj:
    annotations = {} if usage is None else {"kss.sigs.k8s.io/cpu-usage": usage}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(LABELS), "annotations": annotations},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": request}}}
            ]
        },
    }
    made = store.create("Pod", body, "default")
    return make_ready(store, made) if ready else made


def hpa(store: ClusterStore, *, min_replicas: int = 1, max_replicas: int = 10, **spec: Any) -> Obj:
    body = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
            **spec,
        },
    }
    return store.create("HorizontalPodAutoscaler", body, "default")


def replicas(store: ClusterStore) -> int:
    got = store.get("Deployment", "default", "web")
    assert got is not None
    return int(got["spec"]["replicas"])


def status(store: ClusterStore) -> Obj:
    got = store.get("HorizontalPodAutoscaler", "default", "web")
    assert got is not None
    return dict(got["status"])


def condition(store: ClusterStore, kind: str) -> tuple[str, str, str]:
    found = next(c for c in status(store)["conditions"] if c["type"] == kind)
    return found["status"], found["reason"], found["message"]


def events(store: ClusterStore) -> list[tuple[str, str, str]]:
    return [
        (e.obj["type"], e.obj["reason"], e.obj["message"])
        for e in store.select("Event", "default").items
        if e.obj["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
    ]


def sync(controller: HorizontalController, clock: FakeClock, seconds: float = 15) -> None:
    clock.advance(seconds)
    controller.drain()


def test_usage_above_target_scales_up_as_the_formula_says(
    store: ClusterStore, clock: FakeClock, controller: HorizontalController
) -> None:
    web(store, 2)
    pod(store, "a", "450m")
    pod(store, "b", "450m")
    hpa(store)
    controller.drain()
    # 90 % of the request against 50 %: ceil(2 * 90 / 50) = 4, within the scale-up limit (max(2 * 2, 4)).
    assert replicas(store) == 4
    got = status(store)
    assert (got["currentReplicas"], got["desiredReplicas"]) == (2, 4)
    assert got["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "450m", "averageUtilization": 90}}}
    ]
    assert got["lastScaleTime"] == "2025-01-01T00:00:00Z"
    assert condition(store, "AbleToScale") == (
        "True",
        "SucceededRescale",
        "the HPA controller was able to update the target scale to 4",
    )
    assert condition(store, "ScalingActive") == (
        "True",
        "ValidMetricFound",
        "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of "
        "request)",
    )
    assert condition(store, "ScalingLimited")[:2] == ("False", "DesiredWithinRange")
    assert events(store) == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 4; reason: cpu resource utilization (percentage of request) above target",
        )
    ]


def test_within_tolerance_nothing_changes(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 2)
    pod(store, "a", "270m")  # 54 % against 50 %: a ratio of 1.08, within 0.1
    pod(store, "b", "270m")
    hpa(store)
    controller.drain()
    assert replicas(store) == 2
    got = status(store)
    assert (got["currentReplicas"], got["desiredReplicas"]) == (2, 2) and "lastScaleTime" not in got
    assert condition(store, "AbleToScale")[:2] == ("True", "ReadyForNewScale")
    assert events(store) == []


def test_max_replicas_caps_the_scale_up(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 2)
    pod(store, "a", "1")  # 200 %: 8 wanted
    pod(store, "b", "1")
    hpa(store, max_replicas=3)
    controller.drain()
    assert replicas(store) == 3
    assert condition(store, "ScalingLimited") == (
        "True",
        "TooManyReplicas",
        "the desired replica count is more than the maximum replica count",
    )


def test_without_behavior_the_scale_up_limit_is_double_or_four(
    store: ClusterStore, clock: FakeClock, controller: HorizontalController
) -> None:
    web(store, 3)
    for name in "abc":
        pod(store, name, "2")  # 400 %: 24 wanted, 6 allowed
    hpa(store, max_replicas=30)
    controller.drain()
    assert replicas(store) == 6
    assert condition(store, "ScalingLimited")[:2] == ("True", "ScaleUpLimit")


def test_below_min_and_above_max_are_brought_back_without_metrics(
    store: ClusterStore, controller: HorizontalController
) -> None:
    web(store, 1)
    hpa(store, min_replicas=3)
    controller.drain()
    assert replicas(store) == 3
    assert events(store) == [
        ("Normal", "SuccessfulRescale", "New size: 3; reason: Current number of replicas below Spec.MinReplicas")
    ]


def test_behavior_scale_down_waits_for_its_stabilization_window(
    store: ClusterStore, clock: FakeClock, controller: HorizontalController
) -> None:
    web(store, 4)
    for name in "abcd":
        pod(store, name, "50m")  # 10 %: ceil(4 * 10 / 50) = 1
    hpa(store, behavior={"scaleDown": {"stabilizationWindowSeconds": 60}})
    controller.drain()
    # The first sync remembers 4 (recordInitialRecommendation): no scale-down inside the window.
    assert replicas(store) == 4
    assert condition(store, "AbleToScale")[:2] == ("True", "ScaleDownStabilized")
    sync(controller, clock, 30)
    assert replicas(store) == 4
    sync(controller, clock, 31)  # the first recommendation is more than 60 s old
    assert replicas(store) == 1
    assert events(store)[-1] == ("Normal", "SuccessfulRescale", "New size: 1; reason: All metrics below target")


def test_behavior_policies_limit_the_rate(
    store: ClusterStore, clock: FakeClock, controller: HorizontalController
) -> None:
    web(store, 2)
    pod(store, "a", "2")  # 400 %: 16 wanted
    pod(store, "b", "2")
    hpa(
        store,
        max_replicas=20,
        behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}},
    )
    controller.drain()
    assert replicas(store) == 3
    assert condition(store, "ScalingLimited") == (
        "True",
        "ScaleUpLimit",
        "the desired replica count is increasing faster than the maximum scale rate",
    )
    sync(controller, clock, 15)  # the pod added 15 s ago still counts in the 60 s period
    assert replicas(store) == 3
    sync(controller, clock, 50)
    assert replicas(store) == 4


def test_unready_and_failed_pods() -> None:
    def mk(name: str, usage: str, ready: bool, phase: str = "Running") -> Obj:
        conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
        return {
            "metadata": {"name": name, "annotations": {"kss.sigs.k8s.io/cpu-usage": usage}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": phase, "conditions": conditions},
        }

    # Two ready pods at 100 % against 50 % ask for 4; the unready third counts at 0: 200 / 3 = 66 % -> ceil(3 * 1.33).
    pods = [mk("a", "1", True), mk("b", "1", True), mk("c", "1", False)]
    assert resource_replicas(3, 50, "cpu", pods, Tolerances()) == (4, 100, 1000)
    # A Failed pod is ignored altogether.
    pods[2] = mk("c", "1", True, phase="Failed")
    assert resource_replicas(2, 50, "cpu", pods, Tolerances()) == (4, 100, 1000)
    # A Pending pod without a metric is unready, not missing: left out of a scale-down (a missing pod would count
    # at its whole request, 1200m / 3000m = 40 %, and hold the count at 3).
    pending = mk("c", "1", False, phase="Pending")
    del pending["metadata"]["annotations"]
    quiet = [mk("a", "100m", True), mk("b", "100m", True), pending]
    assert resource_replicas(3, 50, "cpu", quiet, Tolerances()) == (1, 10, 100)


def test_a_sidecars_request_counts_in_the_pods_and_a_container_without_one_is_named() -> None:
    def mk(name: str, *, sidecar_request: str | None = "500m") -> Obj:
        sidecar: Obj = {"name": "proxy", "restartPolicy": "Always", "resources": {}}
        if sidecar_request is not None:
            sidecar["resources"] = {"requests": {"cpu": sidecar_request}}
        return {
            "metadata": {"name": name, "annotations": {"kss.sigs.k8s.io/cpu-usage": "750m"}},
            "spec": {
                # an ordinary init container runs before the others: its request is not the running pod's
                "initContainers": [{"name": "setup", "resources": {"requests": {"cpu": "4"}}}, sidecar],
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }

    # 750m of 1500m (the app's 1 and the restartable init container's 500m): 50 % against 25 % asks for 4.
    assert resource_replicas(2, 25, "cpu", [mk("a"), mk("b")], Tolerances()) == (4, 50, 750)
    with pytest.raises(MetricError, match=r"^missing request for cpu in container proxy of Pod b$"):
        resource_replicas(2, 25, "cpu", [mk("a"), mk("b", sidecar_request=None)], Tolerances())


def test_missing_metrics_and_requests_are_reported(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 2)
    pod(store, "a", None)
    pod(store, "b", None)
    hpa(store)
    controller.drain()
    assert replicas(store) == 2
    # No pod has a usage: metrics-server would return no metrics, wrapped as upstream wraps the error (replica
    # calculator, then computeStatusForResourceMetricGeneric, then the condition).
    unable = "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource "
    unable += "metrics API"
    assert condition(store, "ScalingActive") == (
        "False",
        "FailedGetResourceMetric",
        f"the HPA was unable to compute the replica count: {unable}",
    )
    assert events(store) == [
        ("Warning", "FailedGetResourceMetric", unable),
        ("Warning", "FailedComputeMetricsReplicas", f"invalid metrics (1 invalid out of 1), first error is: {unable}"),
    ]


def test_a_missing_target_is_reported(store: ClusterStore, controller: HorizontalController) -> None:
    hpa(store)
    controller.drain()
    assert condition(store, "AbleToScale") == (
        "False",
        "FailedGetScale",
        'the HPA controller was unable to get the target\'s current scale: deployments.apps "web" not found',
    )


def test_a_zero_replica_target_disables_scaling(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 0)
    hpa(store)
    controller.drain()
    assert replicas(store) == 0
    assert condition(store, "ScalingActive")[:2] == ("False", "ScalingDisabled")
    got = status(store)
    assert got["desiredReplicas"] == 0 and "currentReplicas" not in got and "currentMetrics" not in got


def test_an_invalid_metric_only_lets_the_others_scale_up(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 2)
    pod(store, "a", "450m")
    pod(store, "b", "450m")
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
    qps = {
        "type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
    }
    hpa(store, metrics=[qps, cpu])
    controller.drain()
    assert replicas(store) == 4  # the cpu metric asks for more: scaled, as upstream does with a metric missing
    no_values = "unable to get metric qps: no metrics returned from custom metrics API"  # no pod has the annotation
    assert ("Warning", "FailedGetPodsMetric", no_values) in events(store)
    assert status(store)["currentMetrics"][0] == {"type": ""}


def test_an_invalid_metric_stops_a_scale_down(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 4)
    for name in "abcd":
        pod(store, name, "50m")
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
    qps = {
        "type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
    }
    hpa(store, metrics=[cpu, qps], behavior={"scaleDown": {"stabilizationWindowSeconds": 0}})
    controller.drain()
    assert replicas(store) == 4
    assert condition(store, "ScalingActive")[:2] == ("False", "FailedGetPodsMetric")
    assert events(store)[-1] == (
        "Warning",
        "FailedComputeMetricsReplicas",
        "invalid metrics (1 invalid out of 2), first error is: unable to get metric qps: no metrics returned from "
        "custom metrics API",
    )


def test_average_value_targets_and_pending_pods(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 3)
    pod(store, "a", "300m")
    pod(store, "b", "300m")
    set_phase(store, pod(store, "c", "300m", ready=False), "Pending")
    hpa(
        store,
        metrics=[
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "100m"}},
            }
        ],
    )
    controller.drain()
    # 300m against 100m on the two ready pods; the Pending one counts at 0: 600m / 3 = 200m -> ceil(3 * 2) = 6.
    assert replicas(store) == 6
    assert status(store)["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "300m"}}}
    ]


def annotate(store: ClusterStore, kind: str, name: str, **values: str) -> None:
    """Set ``kss.sigs.k8s.io/<metric>-metric`` annotations on an object."""
    annotations = {f"kss.sigs.k8s.io/{metric.replace('_', '-')}-metric": value for metric, value in values.items()}
    store.patch(kind, "default", name, {"metadata": {"annotations": annotations}}, "merge")


def test_a_pods_metric_averages_the_pods_values(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 3)
    for name, value in (("a", "30"), ("b", "20"), ("c", "10")):
        pod(store, name, None)
        annotate(store, "Pod", name, requests_per_second=value)
    set_phase(store, pod(store, "d", None, ready=False), "Pending")
    qps = {
        "type": "Pods",
        "pods": {"metric": {"name": "requests-per-second"}, "target": {"type": "AverageValue", "averageValue": "10"}},
    }
    hpa(store, metrics=[qps])
    controller.drain()
    # An average of 20 against 10 on the three pods with a value; the Pending one counts at 0 on this scale-up:
    # 60 / 4 = 15 -> ceil(1.5 * 4) = 6.
    assert replicas(store) == 6
    assert status(store)["currentMetrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "requests-per-second"}, "current": {"averageValue": "20"}}}
    ]
    assert events(store)[-1][2] == "New size: 6; reason: pods metric requests-per-second above target"


def test_an_object_metric_against_a_value_and_an_average_value(
    store: ClusterStore, clock: FakeClock, controller: HorizontalController
) -> None:
    web(store, 3)
    for name in "abc":
        pod(store, name, None)
    store.create("Service", {"metadata": {"name": "front"}, "spec": {"ports": [{"port": 80}]}}, "default")
    annotate(store, "Service", "front", hits="20")
    described = {"apiVersion": "v1", "kind": "Service", "name": "front"}
    hits = {
        "type": "Object",
        "object": {
            "describedObject": described,
            "metric": {"name": "hits"},
            "target": {"type": "Value", "value": "10"},
        },
    }
    hpa(store, metrics=[hits], max_replicas=20)
    controller.drain()
    # The value is twice the target: the 3 ready pods times 2.
    assert replicas(store) == 6
    assert status(store)["currentMetrics"] == [
        {
            "type": "Object",
            "object": {"metric": {"name": "hits"}, "describedObject": described, "current": {"value": "20"}},
        }
    ]
    assert events(store)[-1][2] == "New size: 6; reason: Service metric hits above target"

    # An average value: the object's value over the target's status replicas.
    hits["object"]["target"] = {"type": "AverageValue", "averageValue": "3"}
    store.patch("HorizontalPodAutoscaler", "default", "web", {"spec": {"metrics": [hits]}}, "merge")
    store.patch("Deployment", "default", "web", {"status": {"replicas": 6}}, "merge", subresource="status")
    annotate(store, "Service", "front", hits="45")
    sync(controller, clock)
    assert replicas(store) == 12  # ceil(45 / 3) = 15, held to the scale-up limit, double
    assert status(store)["currentMetrics"][0]["object"]["current"] == {"averageValue": "7500m"}  # 45 / 6


def test_an_external_metric_is_read_from_the_autoscaler(store: ClusterStore, controller: HorizontalController) -> None:
    web(store, 2)
    store.patch("Deployment", "default", "web", {"status": {"replicas": 2}}, "merge", subresource="status")
    for name in "ab":
        pod(store, name, None)
    queue = {
        "type": "External",
        "external": {"metric": {"name": "queue-depth"}, "target": {"type": "AverageValue", "averageValue": "5"}},
    }
    hpa(store, metrics=[queue])
    controller.drain()
    assert condition(store, "ScalingActive")[:2] == ("False", "FailedGetExternalMetric")
    annotate(store, "HorizontalPodAutoscaler", "web", queue_depth="20")
    controller.reset()
    controller.drain()
    # 20 against 5 per pod: 20 / (5 * 2) = 2 is outside the tolerance, so ceil(20 / 5) = 4.
    assert replicas(store) == 4
    assert status(store)["currentMetrics"] == [
        {"type": "External", "external": {"metric": {"name": "queue-depth"}, "current": {"averageValue": "10"}}}
    ]
    assert events(store)[-1][2] == "New size: 4; reason: external metric queue-depth(nil) above target"
