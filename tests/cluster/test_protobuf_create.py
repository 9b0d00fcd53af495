"""kubectl's generator commands send protobuf bodies; the kinds they create are understood."""

from __future__ import annotations

import json

from tests.conftest import KubectlRunner


def test_kubectl_create_namespace_priorityclass_and_pdb_with_protobuf_bodies(kubectl: KubectlRunner) -> None:
    kubectl("create", "namespace", "proto-ns")
    kubectl("create", "priorityclass", "proto-high", "--value=1000", "--description=vip", "--preemption-policy=Never")
    kubectl("create", "pdb", "proto-pdb", "-n", "proto-ns", "--selector=app=web", "--max-unavailable=25%")

    ns = json.loads(kubectl("get", "namespace", "proto-ns", "-o", "json").stdout)
    assert ns["metadata"]["name"] == "proto-ns"
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "proto-ns"
    assert "generateName" not in ns["metadata"]
    pc = json.loads(kubectl("get", "priorityclass", "proto-high", "-o", "json").stdout)
    assert (pc["value"], pc["description"], pc["preemptionPolicy"]) == (1000, "vip", "Never")
    pdb = json.loads(kubectl("get", "pdb", "proto-pdb", "-n", "proto-ns", "-o", "json").stdout)
    assert pdb["spec"] == {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}}

