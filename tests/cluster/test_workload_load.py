"""The Alibaba GPU trace workload (1200-node scale) loads with ``kubectl apply`` through the API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kss_sim.kube.quantity import parse_quantity
from tests.conftest import KubectlRunner, start_server

WORKLOADS = Path(__file__).resolve().parents[2].parent / "shared" / "workloads" / "alibaba-gpu-trace"


def _requests(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """Each container's requests as numbers (the API stores quantities in canonical form: 12000m reads back as 12)."""
    return [
        {name: parse_quantity(q) for name, q in c.get("resources", {}).get("requests", {}).items()}
        for c in pod["spec"]["containers"]
    ]


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
        # The nodes go in as a user applies them (--validate=strict, kubectl's default). The 7,064 pods skip
        # kubectl's own per-object schema check, which re-reads the OpenAPI document for each object (~15 ms of
        # kubectl CPU a pod, 10x what the server spends): the server still validates and defaults each one, and
        # the pods read back are compared with the file below.
        kubectl("apply", "-f", str(nodes), timeout=600)
        kubectl("apply", "-f", str(pods), "--validate=false", timeout=600)
        listed_nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
        listed_pods = json.loads(kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
        want_nodes = [n for n in yaml.load_all(nodes.read_text(), Loader=yaml.CSafeLoader) if n]
        # libyaml: the pure-Python loader takes 16 s of CPU over these 7,064 pods.
        docs = yaml.load_all(pods.read_text(), Loader=yaml.CSafeLoader)
        want_pods = {p["metadata"]["name"]: p for p in docs if p}
        assert sorted(n["metadata"]["name"] for n in listed_nodes) == sorted(n["metadata"]["name"] for n in want_nodes)
        assert len(listed_pods) == len(want_pods)
        assert {p["status"]["phase"] for p in listed_pods} == {"Pending"}
        for got in listed_pods:
            want = want_pods[got["metadata"]["name"]]
            assert got["metadata"]["namespace"] == want["metadata"]["namespace"]
            assert got["metadata"].get("annotations", {}).items() >= want["metadata"].get("annotations", {}).items()
            assert _requests(got) == _requests(want), got["metadata"]["name"]
    finally:
        server.stop()
