"""kubectl's generator commands send protobuf bodies; the kinds they create are understood."""

from __future__ import annotations

import json
from typing import Any

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


def test_kubectl_reads_the_protobuf_answers_of_its_creates_as_the_json_ones(kubectl: KubectlRunner) -> None:
    # kubectl's generators ask for protobuf first (client-go's typed clients): `-o json` prints the answer as
    # client-go decoded it from kss's protobuf, which must equal what the JSON path serves
    cases = [
        (["namespace", "pb-answer"], ["namespace", "pb-answer"]),
        (["deployment", "pb-answer", "--image=nginx", "--replicas=2", "--port=80"], ["deployment", "pb-answer"]),
        (["cronjob", "pb-answer", "--image=busybox", "--schedule=*/5 * * * *"], ["cronjob", "pb-answer"]),
        (["pdb", "pb-answer", "--selector=app=web", "--min-available=50%"], ["pdb", "pb-answer"]),
    ]
    for create, get in cases:
        answered = json.loads(kubectl("create", *create, "-o", "json").stdout)
        stored = json.loads(kubectl("get", *get, "-o", "json").stdout)
        assert _without_nulls(answered) == _without_nulls(stored), create[0]


def _without_nulls(value: Any) -> Any:
    """An object without ``null``s: a typed object's JSON writes a zero time as null (a pod template's
    creationTimestamp), the JSON kss serves leaves it out."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
