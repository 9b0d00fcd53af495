"""Node failures, taints and pod GC with the real kubectl against a real ``kss serve`` (controllers and simulated
kubelet on, the scheduler off: pods are bound by nodeName; pod GC's quarantine shortened to 1 s): a NoExecute
taint evicts at once (the pod ends after its grace period) and after tolerationSeconds, cordon taints,
``kss node fail|heal`` and a status patch taint not-ready / unreachable (the default 300 s tolerations keep pods
there), a pod bound to a missing node goes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.factories import node
from tests.conftest import KSS, KUBECTL, KubectlRunner, Server, eventually, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Server]:
    env = {"KSS_SCHEDULER_ENABLED": "false", "KSS_POD_GC_QUARANTINE": "1"}
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}", env=env)
    yield server
    server.stop()


def a_pod(name: str, node_name: str, tolerations: list[dict[str, Any]] | None = None, grace: int = 0) -> str:
    spec: dict[str, Any] = {"nodeName": node_name, "containers": [{"name": "c", "image": "registry.k8s.io/pause"}]}
    spec["terminationGracePeriodSeconds"] = grace
    if tolerations:
        spec["tolerations"] = tolerations
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def test_node_failures_taints_and_pod_gc_with_kubectl(live: Server) -> None:
    kubectl = KubectlRunner(live.kubeconfig)

    def pods() -> set[str]:
        return set(kubectl("get", "pods", "-o", "name").stdout.split())

    def taints(name: str) -> list[str]:
        got = json.loads(kubectl("get", "node", name, "-o", "json").stdout)
        return sorted(f"{t['key']}:{t['effect']}" for t in got["spec"].get("taints") or [])

    def kss_node(*args: str) -> None:
        done = subprocess.run(
            [str(KSS), "node", *args, "--server", live.url], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr

    for name in ("n1", "n2"):
        assert httpx.post(f"{live.url}/api/v1/nodes", json=node(name)).status_code == 201
        kss_node("heal", name)
    toleration = {"key": "evict", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    for name, node_name, tolerations, grace in [
        ("plain", "n1", None, 3),
        ("tolerant", "n1", [toleration], 0),
        ("other", "n2", None, 0),
    ]:
        kubectl("create", "-f", "-", input=a_pod(name, node_name, tolerations, grace))
    assert pods() == {"pod/plain", "pod/tolerant", "pod/other"}

    # A NoExecute taint: the pod that does not tolerate it is deleted at once and ends after its 3 s grace period
    # (Terminating meanwhile); the tolerating one (no grace period) goes after 5 s.
    tainted = time.monotonic()
    kubectl("taint", "nodes", "n1", "evict=yes:NoExecute")
    eventually(
        lambda: "deletionTimestamp" in json.loads(kubectl("get", "pod", "plain", "-o", "json").stdout)["metadata"]
    )
    assert "Terminating" in kubectl("get", "pod", "plain").stdout
    eventually(lambda: "pod/plain" not in pods())
    assert 2 < time.monotonic() - tainted < 10  # its 3 s grace period (deletionTimestamp has whole seconds)
    assert "pod/tolerant" in pods()
    eventually(lambda: "pod/tolerant" not in pods())
    assert 4 < time.monotonic() - tainted < 14  # its 5 s toleration (both counted from the taint, not each other)
    events = kubectl("get", "events", "--field-selector", "reason=TaintManagerEviction", "-o", "json").stdout
    assert sorted(e["message"] for e in json.loads(events)["items"]) == [
        "Marking for deletion Pod default/plain",
        "Marking for deletion Pod default/tolerant",
    ]

    # Cordon taints; uncordon takes it off.
    kubectl("cordon", "n2")
    eventually(lambda: taints("n2") == ["node.kubernetes.io/unschedulable:NoSchedule"])
    kubectl("uncordon", "n2")
    eventually(lambda: taints("n2") == [])

    # A failed node is tainted; its pod tolerates not-ready for the 300 s the admission gave it, so it stays.
    kss_node("fail", "n2")
    eventually(
        lambda: taints("n2") == ["node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"]
    )
    other = json.loads(kubectl("get", "pod", "other", "-o", "json").stdout)
    assert {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    } in other["spec"]["tolerations"]
    time.sleep(1)
    assert "pod/other" in pods()
    ready = {"status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]}}
    kubectl("patch", "node", "n2", "--subresource=status", "-p", json.dumps(ready))
    eventually(
        lambda: (
            taints("n2") == ["node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"]
        )
    )
    kss_node("heal", "n2")
    eventually(lambda: taints("n2") == [])
    assert "pod/other" in pods()

    # A pod bound to a node that does not exist goes after pod GC's quarantine.
    kubectl("run", "ghost", "--image=registry.k8s.io/pause", '--overrides={"spec":{"nodeName":"no-such-node"}}')
    eventually(lambda: "pod/ghost" not in pods())
    assert "Traceback" not in live.log.read_text()


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
"""


def test_pod_disruption_budget_status_with_kubectl(tmp_path: Path) -> None:
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}")
    try:
        kubectl = KubectlRunner(server.kubeconfig)
        for name in ("n1", "n2"):
            assert httpx.post(f"{server.url}/api/v1/nodes", json=node(name)).status_code == 201
        kubectl("apply", "-f", "-", input=DEPLOYMENT)
        kubectl("create", "pdb", "web", "--selector=app=web", "--min-available=2")
        kubectl("rollout", "status", "deployment/web", "--timeout=60s")

        def budget() -> dict[str, Any]:
            got: dict[str, Any] = json.loads(kubectl("get", "pdb", "web", "-o", "json").stdout)
            return got

        eventually(lambda: budget().get("status", {}).get("disruptionsAllowed") == 1)
        status = budget()["status"]
        assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"]) == (3, 2, 3)
        assert status["observedGeneration"] == budget()["metadata"]["generation"]
        (condition,) = status["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "DisruptionAllowed",
            "True",
            "SufficientPods",
        )
        assert kubectl("get", "pdb", "web", "--no-headers").stdout.split()[1:4] == ["2", "N/A", "1"]
        kubectl("patch", "pdb", "web", "--type=merge", "-p", '{"spec":{"minAvailable":null,"maxUnavailable":"50%"}}')
        eventually(lambda: budget()["status"].get("desiredHealthy") == 1)
        assert budget()["status"]["disruptionsAllowed"] == 2  # 50 % of 3 rounds up to 2 unavailable
    finally:
        server.stop()
    assert "Traceback" not in server.log.read_text()
