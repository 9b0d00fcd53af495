"""A HorizontalPodAutoscaler in a real ``kss serve``, driven with the official client and kubectl: a Deployment of 2
replicas whose pod template says each pod uses 450m of its 500m cpu request scales to 4 as the formula says
(ceil(2 * 90 / 50)), then to the maximum of 5; pods annotated down to 10 % bring it back to the minimum of 2 once
the scale-down stabilization window has passed; ``kubectl get hpa`` reads as on a cluster; bad specs are 422s with
kube's messages."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.conftest import KUBECTL, KubectlRunner, Server, start_server

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "worker-1", "labels": {"kubernetes.io/hostname": "worker-1"}},
    "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}, "annotations": {"kss.sigs.k8s.io/cpu-usage": "450m"}},
            "spec": {
                "containers": [{"name": "web", "image": "nginx:1.27", "resources": {"requests": {"cpu": "500m"}}}]
            },
        },
    },
}


def autoscaler(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 3}},
            **spec,
        },
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, client.ApiClient]]:
    """One server for the module: the bad specs are refused, so they leave the scaling test's world alone."""
    tmp_path = tmp_path_factory.mktemp("hpa")
    server = start_server(
        tmp_path,
        f"sqlite:///{tmp_path / 'kss.db'}",
        env={"KSS_HORIZONTAL_POD_AUTOSCALER_SYNC_PERIOD": "0.5"},
    )
    try:
        api = config.new_client_from_config(str(server.kubeconfig))  # type: ignore[no-untyped-call]
        yield server, api
        api.close()
    finally:
        server.stop()


def until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return got


def test_a_deployment_scales_with_its_pods_usage(cluster: tuple[Server, client.ApiClient]) -> None:
    server, api = cluster
    core, apps, autoscaling = client.CoreV1Api(api), client.AppsV1Api(api), client.AutoscalingV2Api(api)
    core.create_node(NODE)
    apps.create_namespaced_deployment("default", DEPLOYMENT)
    until(lambda: len(core.list_namespaced_pod("default", label_selector="app=web").items) == 2, "2 pods")
    autoscaling.create_namespaced_horizontal_pod_autoscaler("default", autoscaler())

    def rescales() -> list[str]:
        events = core.list_namespaced_event("default", field_selector="involvedObject.kind=HorizontalPodAutoscaler")
        return [e.message for e in events.items if e.reason == "SuccessfulRescale"]

    first = until(rescales, "the first rescale")
    assert first[0] == "New size: 4; reason: cpu resource utilization (percentage of request) above target"
    until(lambda: apps.read_namespaced_deployment("web", "default").spec.replicas == 5, "the maximum, 5")
    hpa = until(
        lambda: (
            (h := autoscaling.read_namespaced_horizontal_pod_autoscaler("web", "default")).status.current_replicas == 5
            and h
        ),
        "the status to say 5",
    )
    assert hpa.status.current_metrics[0].resource.current.average_utilization == 90
    limited = next(c for c in hpa.status.conditions if c.type == "ScalingLimited")
    assert (limited.status, limited.reason) == ("True", "TooManyReplicas")
    if KUBECTL and Path(KUBECTL).exists():
        table = KubectlRunner(server.kubeconfig)("get", "hpa").stdout.splitlines()
        assert table[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
        assert table[1].split()[:7] == ["web", "Deployment/web", "cpu:", "90%/50%", "2", "5", "5"]

    # Every pod now uses 10 %: ceil(5 * 10 / 50) = 1, held at the minimum of 2 once the window has passed.
    for pod in core.list_namespaced_pod("default", label_selector="app=web").items:
        core.patch_namespaced_pod(
            pod.metadata.name, "default", {"metadata": {"annotations": {"kss.sigs.k8s.io/cpu-usage": "50m"}}}
        )
    until(lambda: apps.read_namespaced_deployment("web", "default").spec.replicas == 2, "the minimum, 2", timeout=30)
    assert rescales()[-1] == "New size: 2; reason: All metrics below target"
    hpa = autoscaling.read_namespaced_horizontal_pod_autoscaler("web", "default")
    assert hpa.status.desired_replicas == 2


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"minReplicas": 3, "maxReplicas": 2},
            "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
        ),
        ({"minReplicas": 0}, "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"),
        (
            {"behavior": {"scaleUp": {"stabilizationWindowSeconds": 4000}}},
            "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
        ),
        (
            {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]},
            "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value "
            "or a target utilization",
        ),
    ],
)
def test_bad_specs_are_refused_with_kube_s_message(
    cluster: tuple[Server, client.ApiClient], spec: dict[str, Any], message: str
) -> None:
    _, api = cluster
    with pytest.raises(ApiException) as refused:
        client.AutoscalingV2Api(api).create_namespaced_horizontal_pod_autoscaler("default", autoscaler("bad", **spec))
    assert refused.value.status == 422
    body = json.loads(refused.value.body)
    assert body["reason"] == "Invalid"
    assert body["message"] == f'HorizontalPodAutoscaler.autoscaling "bad" is invalid: {message}'


@pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")
def test_kubectl_autoscale_creates_a_v1_autoscaler_the_controller_follows(
    cluster: tuple[Server, client.ApiClient],
) -> None:
    """kubectl autoscale (before v1.34) posts an autoscaling/v1 object: stored as v2, it scales like any other."""
    server, api = cluster
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    if not core.list_node().items:  # run alone, without the first test's node
        core.create_node(NODE)
    deployment = json.loads(json.dumps(DEPLOYMENT).replace('"web"', '"api"'))
    deployment["spec"]["replicas"] = 1
    apps.create_namespaced_deployment("default", deployment)
    kubectl = KubectlRunner(server.kubeconfig)
    made = kubectl("autoscale", "deployment", "api", "--min=2", "--max=5", "--cpu-percent=80")
    assert made.stdout.strip() == "horizontalpodautoscaler.autoscaling/api autoscaled"
    # 90 % of the request against a target of 80 %: 2 (the minimum), then ceil(2 * 90 / 80) = 3, ... up to the
    # maximum, 5, since every new pod uses 90 % as well.
    until(lambda: apps.read_namespaced_deployment("api", "default").spec.replicas == 5, "the maximum, 5")
    as_v1 = until(
        lambda: (
            (h := json.loads(kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "api", "-o", "json").stdout))[
                "status"
            ].get("currentCPUUtilizationPercentage")
            and h
        ),
        "v1's current cpu percentage",
    )
    assert as_v1["apiVersion"] == "autoscaling/v1"
    assert as_v1["spec"]["targetCPUUtilizationPercentage"] == 80
    assert as_v1["status"]["currentCPUUtilizationPercentage"] == 90
    conditions = json.loads(as_v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/conditions"])
    assert {c["type"] for c in conditions} >= {"AbleToScale", "ScalingActive"}
    v2 = client.AutoscalingV2Api(api).read_namespaced_horizontal_pod_autoscaler("api", "default")
    assert v2.spec.metrics[0].resource.target.average_utilization == 80
    assert v2.metadata.annotations is None
    row = kubectl("get", "hpa", "api").stdout.splitlines()[1].split()
    assert row[:6] == ["api", "Deployment/api", "cpu:", "90%/80%", "2", "5"]  # REPLICAS: the status, still catching up


@pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")
def test_container_resource_and_selected_external_metrics_with_kubectl(
    cluster: tuple[Server, client.ApiClient],
) -> None:
    """A ContainerResource metric on a two-container Deployment's app container, and an External metric whose
    selector picks one queue's series from the autoscaler's annotation: ``kubectl get hpa`` shows both."""
    server, api = cluster
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    if not core.list_node().items:  # run alone, without the first test's node
        core.create_node(NODE)
    containers = [
        {"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "proxy", "image": "envoy:1.31", "resources": {"requests": {"cpu": "100m"}}},
    ]
    usage = json.dumps({"app": "450m", "proxy": "10m"})
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "multi"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "multi"}},
            "template": {
                "metadata": {"labels": {"app": "multi"}, "annotations": {"kss.sigs.k8s.io/cpu-usage": usage}},
                "spec": {"containers": containers},
            },
        },
    }
    kubectl = KubectlRunner(server.kubeconfig)
    kubectl("apply", "-f", "-", input=json.dumps(deployment))
    selected = {"name": "queue-depth", "selector": {"matchLabels": {"queue": "orders"}}}
    hpa = autoscaler(
        "multi",
        maxReplicas=4,
        metrics=[
            {
                "type": "ContainerResource",
                "containerResource": {
                    "name": "cpu",
                    "container": "app",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                },
            },
            {
                "type": "External",
                "external": {"metric": selected, "target": {"type": "AverageValue", "averageValue": "5"}},
            },
        ],
    )
    hpa["spec"]["scaleTargetRef"]["name"] = "multi"
    hpa["metadata"]["annotations"] = {
        "kss.sigs.k8s.io/queue-depth-metric": json.dumps({"queue=orders": "8", "queue=mail": "500"})
    }
    kubectl("apply", "-f", "-", input=json.dumps(hpa))
    # The app container at 90 % of its request against 50 % asks for 4 (the maximum); the orders queue's 8 against 5
    # per pod for 2; the mail queue is not selected.
    until(lambda: apps.read_namespaced_deployment("multi", "default").spec.replicas == 4, "the maximum, 4")

    def row() -> list[str]:
        line = kubectl("get", "hpa", "multi").stdout.splitlines()[1]
        return line.split() if "<unknown>" not in line and " 4 " in f" {line} " else []

    got = until(row, "the table to show both metrics")
    assert got[:4] == ["multi", "Deployment/multi", "cpu:", "90%/50%,"]
    described = json.loads(kubectl("get", "hpa", "multi", "-o", "json").stdout)
    current = described["status"]["currentMetrics"]
    assert current[0] == {
        "type": "ContainerResource",
        "containerResource": {
            "name": "cpu",
            "container": "app",
            "current": {"averageValue": "450m", "averageUtilization": 90},
        },
    }
    assert current[1]["external"]["metric"] == selected


def test_a_live_replays_usage_curve_drives_the_servers_autoscaler(cluster: tuple[Server, client.ApiClient]) -> None:
    # kss replay --target-url: the curve's steps are written on the server as the pods' usage annotations, on pods
    # made after a step too, and the server's autoscaler (synced every 0.5 s here) scales on them.
    from kss_sim.replay.live import LiveReplay
    from kss_sim.replay.live_api import Connection, Target
    from kss_sim.replay.workload import parse_workload

    server, api = cluster
    namespace = "curve"
    deployment = json.loads(json.dumps(DEPLOYMENT))
    deployment["metadata"]["namespace"] = namespace
    deployment["spec"]["replicas"] = 1
    del deployment["spec"]["template"]["metadata"]["annotations"]
    hpa = autoscaler(minReplicas=1, maxReplicas=4)
    hpa["metadata"]["namespace"] = namespace
    usage = {"cpu": [[0, "100m"], ["30s", "450m"]]}  # 20%, then 90% of the 500m request, against 50%
    doc = {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "curve"},
        "spec": {
            "start": [{**NODE, "metadata": {"name": "curve-node", "labels": {"kubernetes.io/hostname": "curve-node"}}}],
            "events": [
                {"at": 0, "create": deployment, "usage": usage},
                {"at": 0, "create": hpa},
            ],
        },
    }
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    target = Target(Connection.from_options(server.url))
    try:
        summary = LiveReplay(parse_workload(json.dumps(doc)), target, speed=30, until=240).run()
    finally:
        target.close()
    assert summary.errors == []
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 4  # 1 -> 2 -> 4 once at 90%
    pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
    assert len(pods) == 4
    assert {p.metadata.annotations["kss.sigs.k8s.io/cpu-usage"] for p in pods} == {"450m"}
