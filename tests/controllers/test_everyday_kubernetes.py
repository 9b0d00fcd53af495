"""Issue #17's "done when", tried as a new user would, with kubectl alone against a real ``kss serve``.

A Deployment of 10 replicas, a DaemonSet, a StatefulSet with volumeClaimTemplates and a Job of 5 completions are
applied; ``kubectl get deploy,rs,sts,ds,job,pods -o wide`` shows them as a real cluster would (pods Running, the
Job Complete); ``kubectl scale`` and ``kubectl rollout status`` work; deleting the Deployment removes its pods;
every pod was placed by the scheduler and has its recorded attempts.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import KUBECTL, KubectlRunner, Server, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

CLUSTER = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: standard}
provisioner: example.com/local
volumeBindingMode: WaitForFirstConsumer
"""
NODES = "".join(
    f"""---
apiVersion: v1
kind: Node
metadata:
  name: worker-{i}
  labels: {{kubernetes.io/hostname: worker-{i}}}
status:
  capacity: {{cpu: "16", memory: 64Gi, pods: "110"}}
  allocatable: {{cpu: "16", memory: 64Gi, pods: "110"}}
  addresses: [{{type: InternalIP, address: 10.0.0.{10 + i}}}]
"""
    for i in range(4)
)
WORKLOADS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        resources: {requests: {cpu: 100m, memory: 128Mi}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-agent}
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec:
      containers:
      - name: agent
        image: busybox
        resources: {requests: {cpu: 50m, memory: 64Mi}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: postgres:17
        resources: {requests: {cpu: 500m, memory: 1Gi}}
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: standard
      resources: {requests: {storage: 10Gi}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  completions: 5
  parallelism: 2
  template:
    metadata:
      annotations: {RUN_DURATION_ANNOTATION: 1s}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
        resources: {requests: {cpu: 200m}}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Server, KubectlRunner]]:
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}")
    try:
        yield server, KubectlRunner(server.kubeconfig)
    finally:
        server.stop()


def _until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def _json(kubectl: KubectlRunner, *args: str) -> Any:
    return json.loads(kubectl(*args, "-o", "json").stdout)


def test_a_new_user_s_workloads_run_as_on_a_real_cluster(cluster: tuple[Server, KubectlRunner]) -> None:
    from kss_sim.controllers.kubelet import RUN_DURATION_ANNOTATION

    server, kubectl = cluster
    kubectl("apply", "-f", "-", input=CLUSTER + NODES)
    kubectl("apply", "-f", "-", input=WORKLOADS.replace("RUN_DURATION_ANNOTATION", RUN_DURATION_ANNOTATION))

    def pods() -> list[dict[str, Any]]:
        return list(_json(kubectl, "get", "pods")["items"])

    def job_complete() -> bool:
        conditions = _json(kubectl, "get", "job", "batch").get("status", {}).get("conditions") or []
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)

    # 10 web + 4 agents + 3 db running; the Job's 5 pods Succeeded.
    _until(lambda: sum((p.get("status") or {}).get("phase") == "Running" for p in pods()) == 17, "17 running pods")
    _until(job_complete, "the Job to complete", timeout=90)

    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    kubectl("rollout", "status", "statefulset/db", "--timeout=60s")
    kubectl("rollout", "status", "daemonset/node-agent", "--timeout=60s")

    table = kubectl("get", "deploy,rs,sts,ds,job,pods", "-o", "wide").stdout
    web = next(line.split() for line in table.splitlines() if line.startswith("deployment.apps/web "))
    assert web[1:4] == ["10/10", "10", "10"]
    assert "Complete" in table and "5/5" in table
    lines = [line for line in table.splitlines() if line.startswith("pod/")]
    assert len(lines) == 22
    assert all(("Running" in line) or ("Completed" in line) for line in lines), table
    # Every pod got an IP and a node (the NODE column), as kubectl -o wide shows them.
    assert all("<none>" not in line.split()[5:7] for line in lines), table

    # The DaemonSet put one agent on each node; the StatefulSet's pods are ordered and own claims.
    agents = [p for p in pods() if p["metadata"]["labels"].get("app") == "node-agent"]
    assert sorted(p["spec"]["nodeName"] for p in agents) == [f"worker-{i}" for i in range(4)]
    assert sorted(p["metadata"]["name"] for p in pods() if p["metadata"]["labels"].get("app") == "db") == [
        "db-0",
        "db-1",
        "db-2",
    ]
    claims = _json(kubectl, "get", "pvc")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert all(c["status"]["phase"] == "Bound" for c in claims)

    # Every pod was placed by the scheduler and has its recorded attempts.
    for pod in pods():
        meta = pod["metadata"]
        assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in pod["status"]["conditions"])
        answer = httpx.get(
            f"{server.url}/simulator/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/results"
        ).json()
        assert answer["attempts"], meta["name"]
        assert answer["attempts"][-1]["result"] == "scheduled"

    kubectl("scale", "deployment/web", "--replicas=4")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    _until(lambda: sum(p["metadata"]["labels"].get("app") == "web" for p in pods()) == 4, "4 web pods")

    kubectl("delete", "deployment", "web")
    _until(lambda: not any(p["metadata"]["labels"].get("app") == "web" for p in pods()), "web pods gone")
    assert _json(kubectl, "get", "rs")["items"] == []
