"""``kubectl patch --subresource=status`` of a pod's metadata against a real ``kss serve``: kube-apiserver's pod
status strategy (podStatusStrategy.PrepareForUpdate) takes the spec, the ownerReferences and the deletionTimestamp
from the stored pod and keeps the rest of the metadata the write sent, so labels, annotations and finalizers changed
through ``pods/status`` stay, as the status does; an invalid label is refused as on the main resource."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.conftest import KUBECTL, KubectlRunner

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

NAMESPACE = "status-metadata"


def _pod(kubectl: KubectlRunner, name: str) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(
        kubectl("get", "pod", name, "-n", NAMESPACE, "-o", "json", "--show-managed-fields").stdout
    )
    return got


def test_status_writes_keep_labels_annotations_and_finalizers_but_not_owner_references(
    kubectl: KubectlRunner,
) -> None:
    kubectl("create", "namespace", NAMESPACE)
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "6d3c1c1e-0000-4000-8000-000000000001"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "a"}, "ownerReferences": [owner]},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause"}]},
    }
    kubectl("create", "-n", NAMESPACE, "-f", "-", input=json.dumps(pod))

    patch = {
        "metadata": {
            "labels": {"app": "b", "tier": "web"},
            "annotations": {"note": "from the status"},
            "finalizers": ["example.com/hold"],
            "ownerReferences": None,
        },
        "spec": {"activeDeadlineSeconds": 5},
        "status": {"phase": "Running"},
    }
    kubectl("patch", "pod", "p", "-n", NAMESPACE, "--subresource=status", "--type=merge", "-p", json.dumps(patch))

    got = _pod(kubectl, "p")
    assert got["status"]["phase"] == "Running"
    assert got["metadata"]["labels"] == {"app": "b", "tier": "web"}
    assert got["metadata"]["annotations"] == {"note": "from the status"}
    assert got["metadata"]["finalizers"] == ["example.com/hold"]
    assert got["metadata"]["ownerReferences"] == [owner], "ownerReferences are the stored pod's"
    assert "activeDeadlineSeconds" not in got["spec"], "the spec is the stored pod's"
    status_entries = [m for m in got["metadata"]["managedFields"] if m.get("subresource") == "status"]
    assert status_entries and "f:labels" in json.dumps(status_entries[0]["fieldsV1"])

    bad = {"metadata": {"labels": {"app": "not valid!"}}}
    refused = kubectl(
        "patch", "pod", "p", "-n", NAMESPACE, "--subresource=status", "--type=merge", "-p", json.dumps(bad), check=False
    )
    assert refused.returncode != 0
    assert 'metadata.labels: Invalid value: "not valid!"' in refused.stderr, refused.stderr  # as on create
    assert _pod(kubectl, "p")["metadata"]["labels"] == {"app": "b", "tier": "web"}

    finalizers = {"metadata": {"finalizers": None}}
    kubectl("patch", "pod", "p", "-n", NAMESPACE, "--subresource=status", "--type=merge", "-p", json.dumps(finalizers))
    assert "finalizers" not in _pod(kubectl, "p")["metadata"]
    kubectl("delete", "namespace", NAMESPACE, "--wait=false")
