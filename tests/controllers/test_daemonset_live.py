"""A DaemonSet in the live app with its scheduler, driven and read with the real kubectl: over three nodes, one
tainted, the controller makes one pod per eligible node and the scheduler binds each to the node its matchFields
term names; once the pods report Ready (as a kubelet would), ``kubectl rollout status ds/...`` completes."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from kubernetes import client, config

from kss_sim.config import Settings
from kss_sim.controllers.daemonset import DaemonSetController
from kss_sim.main import create_app
from kss_sim.serve_cli import kubeconfig
from tests.conftest import KUBECTL, free_port

MANIFESTS = """
apiVersion: v1
kind: Node
metadata: {name: worker-1, labels: {kubernetes.io/hostname: worker-1}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: worker-2, labels: {kubernetes.io/hostname: worker-2}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {kubernetes.io/hostname: gpu-1}}
spec: {taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-agent, namespace: default}
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec:
      containers:
      - name: agent
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 100m, memory: 64Mi}}
"""


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[FastAPI, Path]]:
    """The app with its scheduler on a free port, and a DaemonSet controller around its store (the app's own
    ControllerManager does not run one yet)."""
    app = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_enabled=True, controllers=False)
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    controller = DaemonSetController(app.state.store)
    controller.start()
    config_path = tmp_path / "kubeconfig"
    config_path.write_text(kubeconfig(f"http://127.0.0.1:{port}"))
    try:
        yield app, config_path
    finally:
        controller.stop()
        server.should_exit = True
        thread.join(timeout=30)


def kubectl(config_path: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", str(config_path), *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=90,
        env={**os.environ, "KUBECACHEDIR": str(config_path.parent / "kubecache")},
    )
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def agent_pods(config_path: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(kubectl(config_path, "get", "pods", "-l", "app=node-agent", "-o", "json"))[
        "items"
    ]
    return items


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_daemonset_pods_are_placed_one_per_eligible_node_and_the_rollout_completes(
    live: tuple[FastAPI, Path],
) -> None:
    _, config_path = live
    kubectl(config_path, "apply", "-f", "-", stdin=MANIFESTS)

    pods: list[dict[str, Any]] = []
    until = time.monotonic() + 30
    while time.monotonic() < until:
        pods = agent_pods(config_path)
        if len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods):
            break
        time.sleep(0.2)
    placed = sorted(p["spec"].get("nodeName") for p in pods)
    assert placed == ["worker-1", "worker-2"], json.dumps(pods, indent=1)[:3000]
    for pod in pods:
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert terms == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}]}
        ]
        assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in pod["spec"][
            "tolerations"
        ]

    status = json.loads(kubectl(config_path, "get", "ds", "node-agent", "-o", "json"))["status"]
    assert status["desiredNumberScheduled"] == 2
    assert status["currentNumberScheduled"] == 2
    assert status["numberMisscheduled"] == 0

    # What the kubelet would report once the containers run.
    api = config.new_client_from_config(str(config_path))  # type: ignore[no-untyped-call]
    core: Any = client.CoreV1Api(api)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for pod in pods:
        core.patch_namespaced_pod_status(
            pod["metadata"]["name"],
            "default",
            {
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
                }
            },
        )
    out = kubectl(config_path, "rollout", "status", "ds/node-agent", "--timeout=30s")
    assert 'daemon set "node-agent" successfully rolled out' in out
