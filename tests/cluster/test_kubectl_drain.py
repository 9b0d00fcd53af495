"""``kubectl drain`` with the real kubectl against a real ``kss serve`` (scheduler, controllers and simulated kubelet
on): the Eviction API under a PodDisruptionBudget evicts a Deployment's pods one at a time as their replacements
become Ready elsewhere, answering 429 beyond the budget, and leaves the DaemonSet's pod; with ``--disable-eviction``
its DELETEs' protobuf DeleteOptions are read."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.factories import node
from tests.conftest import KUBECTL, KubectlRunner, Server, eventually, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

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

DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
"""


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Server]:
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}")
    yield server
    server.stop()


def test_drain_respects_the_disruption_budget_and_daemonsets(live: Server) -> None:
    kubectl = KubectlRunner(live.kubeconfig)

    def pods_on(node_name: str) -> list[str]:
        got = json.loads(kubectl("get", "pods", "-o", "json", f"--field-selector=spec.nodeName={node_name}").stdout)
        return sorted(p["metadata"]["name"] for p in got["items"])

    def budget() -> dict[str, Any]:
        got: dict[str, Any] = json.loads(kubectl("get", "pdb", "web", "-o", "json").stdout)
        return got

    for name in ("n1", "n2", "n3"):
        assert httpx.post(f"{live.url}/api/v1/nodes", json=node(name)).status_code == 201
    # The Deployment's three pods all on n1: n2 and n3 cordoned while it rolls out.
    kubectl("cordon", "n2", "n3")
    kubectl("apply", "-f", "-", input=DEPLOYMENT)
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    kubectl("uncordon", "n2", "n3")
    kubectl("apply", "-f", "-", input=DAEMONSET)
    kubectl("rollout", "status", "daemonset/agent", "--timeout=60s")
    on_n1 = pods_on("n1")
    assert len([p for p in on_n1 if p.startswith("web-")]) == 3
    assert len([p for p in on_n1 if p.startswith("agent-")]) == 1
    kubectl("create", "pdb", "web", "--selector=app=web", "--min-available=2")
    eventually(lambda: budget().get("status", {}).get("disruptionsAllowed") == 1, timeout=60.0)

    drained = kubectl(
        "drain", "n1", "--ignore-daemonsets", "--force", "--delete-emptydir-data", "--timeout=120s", timeout=180
    )
    assert "node/n1 drained" in drained.stdout
    # Only one disruption at a time: the evictions beyond the budget were refused (429) and retried.
    assert "Cannot evict pod as it would violate the pod's disruption budget." in drained.stderr
    assert drained.stdout.count("evicted") == 3, drained.stdout
    assert [p for p in pods_on("n1") if not p.startswith("agent-")] == []
    assert len(pods_on("n1")) == 1  # the DaemonSet's pod stays
    web = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json").stdout)["items"]
    assert len(web) == 3 and {p["spec"]["nodeName"] for p in web} <= {"n2", "n3"}
    assert json.loads(kubectl("get", "node", "n1", "-o", "json").stdout)["spec"]["unschedulable"] is True

    # --disable-eviction: drain's DELETEs, whose DeleteOptions the typed client sends as protobuf (no budget).
    on_n2 = [p for p in pods_on("n2") if p.startswith("web-")]
    assert on_n2
    kubectl("drain", "n2", "--ignore-daemonsets", "--force", "--disable-eviction", "--timeout=60s", timeout=120)
    assert [p for p in pods_on("n2") if not p.startswith("agent-")] == []
    eventually(lambda: len(pods_on("n3")) == 4, timeout=60.0)  # the three web pods and n3's agent
    assert "Traceback" not in live.log.read_text()
