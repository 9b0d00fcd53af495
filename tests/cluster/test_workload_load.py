"""The Alibaba GPU trace workload (1200-node scale) loads with ``kubectl apply`` through the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import KubectlRunner, start_server

WORKLOADS = Path(__file__).resolve().parents[2].parent / "shared" / "workloads" / "alibaba-gpu-trace"


def _count(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.startswith("kind:"))


@pytest.mark.slow
@pytest.mark.skipif(not (WORKLOADS / "pods-1200.yaml").exists(), reason="shared workloads not present")
def test_kubectl_apply_of_the_1200_node_trace(tmp_path: Path) -> None:
    # NORMAL sync (still durable against a killed process) keeps this test's thousands of commits quick;
    # bench/load_workload.py measures the default FULL setting.
    server = start_server(
        tmp_path,
        f"sqlite:///{tmp_path / 'kss.db'}",
        env={"KSS_SQLITE_SYNCHRONOUS": "NORMAL", "KSS_SCHEDULER_ENABLED": "false"},
    )
    try:
        kubectl = KubectlRunner(server.kubeconfig)
        nodes, pods = WORKLOADS / "nodes-1200.yaml", WORKLOADS / "pods-1200.yaml"
        kubectl("apply", "-f", str(nodes), timeout=600)
        kubectl("apply", "-f", str(pods), timeout=600)
        listed_nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
        listed_pods = json.loads(kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
        assert len(listed_nodes) == _count(nodes)
        assert len(listed_pods) == _count(pods)
        assert {p["status"]["phase"] for p in listed_pods} == {"Pending"}
    finally:
        server.stop()
