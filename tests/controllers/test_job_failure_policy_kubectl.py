"""A Job's podFailurePolicy in a real ``kss serve`` (scheduler, controllers and simulated kubelet on) with the real
kubectl: a pod evicted through the Eviction API (its DisruptionTarget condition, then Failed at the end of its
grace period) matches an ``Ignore`` rule, so the Job with ``backoffLimit: 0`` is not failed and replaces the pod;
the same Job without the policy fails."""

from __future__ import annotations

import json
import os
import subprocess
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
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}")
    yield server
    server.stop()


def a_job(name: str, policy: dict[str, Any] | None) -> str:
    spec: dict[str, Any] = {
        "backoffLimit": 0,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "work", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
            }
        },
    }
    if policy is not None:
        spec["podFailurePolicy"] = policy
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec})


def test_an_evicted_pod_matching_an_ignore_rule_does_not_fail_the_job(live: Server) -> None:
    kubectl = KubectlRunner(live.kubeconfig)
    assert httpx.post(f"{live.url}/api/v1/nodes", json=node("n1")).status_code == 201
    done = subprocess.run([str(KSS), "node", "heal", "n1", "--server", live.url], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ignore = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    kubectl("create", "-f", "-", input=a_job("tolerant", ignore))
    kubectl("create", "-f", "-", input=a_job("strict", None))

    def pods(job: str) -> list[dict[str, Any]]:
        got = kubectl("get", "pods", "-l", f"batch.kubernetes.io/job-name={job}", "-o", "json").stdout
        items: list[dict[str, Any]] = json.loads(got)["items"]
        return items

    def job_status(job: str) -> dict[str, Any]:
        status: dict[str, Any] = json.loads(kubectl("get", "job", job, "-o", "json").stdout).get("status") or {}
        return status

    def running(job: str) -> list[str]:
        return [p["metadata"]["name"] for p in pods(job) if (p.get("status") or {}).get("phase") == "Running"]

    evicted: dict[str, str] = {}
    for job in ("tolerant", "strict"):
        eventually(lambda job=job: len(running(job)) == 1, timeout=40.0)  # type: ignore[misc]
        (evicted[job],) = running(job)
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": evicted[job]}}
        path = f"/api/v1/namespaces/default/pods/{evicted[job]}/eviction"
        kubectl("create", "--raw", path, "-f", "-", input=json.dumps(eviction))

    # Without the policy the eviction is a failure over backoffLimit 0.
    eventually(lambda: any(c["type"] == "Failed" for c in job_status("strict").get("conditions") or []), timeout=40.0)
    assert job_status("strict")["failed"] == 1
    # With it, the evicted pod (Failed, DisruptionTarget) is ignored: a replacement runs after the pod-failure
    # backoff (10 s), and the Job has neither a failure counted nor a Failed condition.
    eventually(lambda: len(running("tolerant")) == 1 and running("tolerant") != [evicted["tolerant"]], timeout=40.0)
    status = job_status("tolerant")
    assert status.get("failed", 0) == 0, status
    assert not [c for c in status.get("conditions") or [] if c["type"] in ("Failed", "FailureTarget")], status
    described = kubectl("describe", "job", "tolerant").stdout
    assert "1 Active (" in described and "/ 0 Failed" in described, described
