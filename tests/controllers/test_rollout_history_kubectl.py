"""``kubectl rollout history`` and ``kubectl rollout undo`` of a StatefulSet and a DaemonSet with the real kubectl
against a real ``kss serve`` (controllers, scheduler and simulated kubelet on): kubectl lists the ControllerRevisions
the controllers keep, shows one revision's template, and undoes by sending the revision's strategic merge patch;
the old revision comes back renumbered (history 2, 3) and the pods are remade from it."""

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
from tests.conftest import KSS, KUBECTL, KubectlRunner, Server, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Server]:
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}")
    yield server
    server.stop()


def _template(app: str, image: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": image}]},
    }


def _workloads() -> str:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": _template("web", "nginx:1.27"),
        },
    }
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": _template("agent", "agent:1")},
    }
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [sts, ds]})


def _revisions(history: str) -> list[str]:
    """The REVISION column of ``kubectl rollout history``."""
    lines = history.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("REVISION"))
    return [line.split()[0] for line in lines[start + 1 :] if line.strip()]


def test_rollout_history_and_undo_of_a_statefulset_and_a_daemonset(live: Server) -> None:
    kubectl = KubectlRunner(live.kubeconfig)
    for name in ("n1", "n2"):
        assert httpx.post(f"{live.url}/api/v1/nodes", json=node(name)).status_code == 201
        done = subprocess.run([str(KSS), "node", "heal", name, "--server", live.url], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    kubectl("apply", "-f", "-", input=_workloads())
    for workload, container, image in (("sts/web", "c", "nginx:1.28"), ("ds/agent", "c", "agent:2")):
        kubectl("rollout", "status", workload, "--timeout=90s")
        kubectl("set", "image", workload, f"{container}={image}")
        kubectl("rollout", "status", workload, "--timeout=90s")
        assert _revisions(kubectl("rollout", "history", workload).stdout) == ["1", "2"]
        first = kubectl("rollout", "history", workload, "--revision=1").stdout
        assert "revision #1" in first and image not in first

        undone = kubectl("rollout", "undo", workload).stdout
        assert "rolled back" in undone
        kubectl("rollout", "status", workload, "--timeout=90s")
        assert _revisions(kubectl("rollout", "history", workload).stdout) == ["2", "3"]

    listed = json.loads(kubectl("get", "controllerrevisions", "-o", "json").stdout)["items"]
    assert len(listed) == 4
    table = kubectl("get", "controllerrevisions").stdout
    assert "statefulset.apps/web" in table and "daemonset.apps/agent" in table
    pods = json.loads(kubectl("get", "pods", "-o", "json").stdout)["items"]
    images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in pods}
    assert images["web-0"] == images["web-1"] == "nginx:1.27"
    assert {image for name, image in images.items() if name.startswith("agent-")} == {"agent:1"}
