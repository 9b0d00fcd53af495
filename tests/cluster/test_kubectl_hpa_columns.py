"""``kubectl get hpa`` against a real ``kss serve`` (its controllers off, so each status is the one the test writes):
the TARGETS column as kube-apiserver's printer (printHorizontalPodAutoscaler, formatHPAMetrics) fills it for every
metric type, with and without current values, ``<unknown>``, ``<nil>`` where the printer reads a value the status
leaves out, quantities in their canonical form, and the ``+ N more...`` tail; the other columns beside it."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.conftest import KUBECTL, KubectlRunner

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

NAMESPACE = "hpa-columns"


def resource(name: str, **target: Any) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def container(name: str, **target: Any) -> dict[str, Any]:
    return {"type": "ContainerResource", "containerResource": {"name": name, "container": "app", "target": target}}


def pods(**target: Any) -> dict[str, Any]:
    return {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": target}}


def object_metric(**target: Any) -> dict[str, Any]:
    described = {"apiVersion": "v1", "kind": "Service", "name": "front"}
    return {"type": "Object", "object": {"metric": {"name": "hits"}, "describedObject": described, "target": target}}


def external(**target: Any) -> dict[str, Any]:
    return {"type": "External", "external": {"metric": {"name": "queue"}, "target": target}}


def status_of(metric: dict[str, Any], **current: Any) -> dict[str, Any]:
    """A currentMetrics entry for ``metric`` (its source's identity) with ``current``."""
    source = {k: v for k, v in metric[key(metric)].items() if k not in ("target",)}
    return {"type": metric["type"], key(metric): {**source, "current": current}}


def key(metric: dict[str, Any]) -> str:
    return next(k for k in metric if k != "type")


def row(kubectl: KubectlRunner, name: str, metrics: list[Any], current: list[Any] | None, **spec: Any) -> str:
    """Apply an autoscaler with ``metrics`` (and ``current`` as its status), then its ``kubectl get hpa`` line."""
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 10,
            "metrics": metrics,
            **spec,
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(hpa))
    if current is not None:
        status = json.dumps({"status": {"currentReplicas": 3, "desiredReplicas": 3, "currentMetrics": current}})
        kubectl("patch", "hpa", name, "-n", NAMESPACE, "--subresource=status", "--type=merge", "-p", status)
    lines = kubectl("get", "hpa", name, "-n", NAMESPACE).stdout.splitlines()
    assert lines[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    return lines[1]


def targets(line: str) -> str:
    """The TARGETS cell: between the reference and MINPODS (cells are split by two spaces or more)."""
    return [cell for cell in line.split("  ") if cell.strip()][2].strip()


@pytest.fixture(scope="module", autouse=True)
def namespace(kubectl: KubectlRunner) -> None:
    kubectl("create", "namespace", NAMESPACE, check=False)


def test_resource_and_container_resource_metrics(kubectl: KubectlRunner) -> None:
    cpu = resource("cpu", type="Utilization", averageUtilization=50)
    memory = resource("memory", type="AverageValue", averageValue="1024Mi")
    app = container("cpu", type="Utilization", averageUtilization=60)
    app_memory = container("memory", type="AverageValue", averageValue="500Mi")
    line = row(kubectl, "res", [cpu, memory], None)
    assert line.split()[:2] == ["res", "Deployment/web"]
    assert targets(line) == "cpu: <unknown>/50%, memory: <unknown>/1Gi"
    current = [status_of(cpu, averageUtilization=90, averageValue="450m"), status_of(memory, averageValue="1536Mi")]
    line = row(kubectl, "res", [cpu, memory], current)
    assert targets(line) == "cpu: 90%/50%, memory: 1536Mi/1Gi"
    assert line.split()[-4:-1] == ["1", "10", "3"]  # MINPODS (defaulted), MAXPODS, REPLICAS

    assert targets(row(kubectl, "ctr", [app, app_memory], None)) == "cpu: <unknown>/60%, memory: <unknown>/500Mi"
    current = [status_of(app, averageUtilization=75, averageValue="375m"), status_of(app_memory, averageValue="0.5Gi")]
    assert targets(row(kubectl, "ctr", [app, app_memory], current)) == "cpu: 75%/60%, memory: 512Mi/500Mi"
    # A status without the utilization is unknown; one without the raw value reads as Go's nil quantity.
    current = [status_of(app, averageValue="375m"), status_of(app_memory)]
    assert targets(row(kubectl, "ctr", [app, app_memory], current)) == "cpu: <unknown>/60%, memory: <nil>/500Mi"


def test_pods_object_and_external_metrics(kubectl: KubectlRunner) -> None:
    rps = pods(type="AverageValue", averageValue="1000m")
    hits = object_metric(type="Value", value="2k")
    hits_avg = object_metric(type="AverageValue", averageValue="500")
    queue = external(type="Value", value="30")
    queue_avg = external(type="AverageValue", averageValue="0.5")
    assert targets(row(kubectl, "custom", [rps, hits], None)) == "<unknown>/1, <unknown>/2k"
    current = [status_of(rps, averageValue="1500m"), status_of(hits, value="2500")]
    assert targets(row(kubectl, "custom", [rps, hits], current)) == "1500m/1, 2500/2k"
    assert targets(row(kubectl, "avg", [hits_avg, queue_avg], None)) == "<unknown>/500 (avg), <unknown>/500m (avg)"
    current = [status_of(hits_avg, averageValue="250"), status_of(queue_avg, averageValue="1")]
    assert targets(row(kubectl, "avg", [hits_avg, queue_avg], current)) == "250/500 (avg), 1/500m (avg)"
    # An average the status leaves out is unknown; a value (or a Pods average) it leaves out is Go's nil.
    current = [status_of(hits_avg, value="3"), status_of(queue_avg)]
    assert targets(row(kubectl, "avg", [hits_avg, queue_avg], current)) == "<unknown>/500 (avg), <unknown>/500m (avg)"
    current = [status_of(rps), status_of(queue)]
    assert targets(row(kubectl, "ext", [rps, queue], current)) == "<nil>/1, <nil>/30"


def test_more_than_two_metrics_and_statuses_out_of_step(kubectl: KubectlRunner) -> None:
    cpu = resource("cpu", type="Utilization", averageUtilization=50)
    rps = pods(type="AverageValue", averageValue="10")
    queue = external(type="Value", value="30")
    hits = object_metric(type="Value", value="1")
    line = row(kubectl, "many", [cpu, rps, queue, hits], None, minReplicas=2)
    assert targets(line) == "cpu: <unknown>/50%, <unknown>/10 + 2 more..."
    assert line.split()[-4:-1] == ["2", "10", "0"]
    # The status at a metric's index gives its current value, whatever metric that status is for.
    current = [status_of(rps, averageValue="12"), status_of(cpu, averageUtilization=70)]
    assert targets(row(kubectl, "many", [cpu, rps], current)) == "cpu: <unknown>/50%, <unknown>/10"
    assert targets(row(kubectl, "none", [], None)) == "cpu: <unknown>/80%"  # the default metric
