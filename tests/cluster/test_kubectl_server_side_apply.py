"""``kubectl apply --server-side`` and the official client's server-side apply against a real ``kss serve``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import config, dynamic
from kubernetes.client import ApiClient

from tests.conftest import KUBECTL, KubectlRunner, Server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")


def manifest(replicas: int, labels: dict[str, str]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "ssa-web", "namespace": "ssa", "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "ssa-web"}},
                "template": {
                    "metadata": {"labels": {"app": "ssa-web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
                },
            },
        }
    )


def get(kubectl: KubectlRunner) -> dict[str, Any]:
    out = kubectl("get", "deployment", "ssa-web", "-n", "ssa", "-o", "json", "--show-managed-fields").stdout
    result: dict[str, Any] = json.loads(out)
    return result


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def test_kubectl_server_side_apply_conflicts_and_force(
    kubectl: KubectlRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubectl("create", "namespace", "ssa")
    first = kubectl("apply", "--server-side", "-f", "-", input=manifest(2, {"tier": "web", "team": "a"}))
    assert first.stdout.strip() == "deployment.apps/ssa-web serverside-applied"
    obj = get(kubectl)
    assert obj["spec"]["replicas"] == 2
    assert list(managers(obj)) == [("kubectl", "Apply")]
    assert managers(obj)[("kubectl", "Apply")]["f:metadata"] == {"f:labels": {"f:team": {}, "f:tier": {}}}
    # ``kubectl get -o yaml`` hides them unless asked, as on a real cluster.
    plain = kubectl("get", "deployment", "ssa-web", "-n", "ssa", "-o", "yaml").stdout
    assert "managedFields" not in plain

    # A change, and a label left out: it goes.
    kubectl("apply", "--server-side", "-f", "-", input=manifest(3, {"tier": "web"}))
    obj = get(kubectl)
    assert obj["spec"]["replicas"] == 3 and obj["metadata"]["labels"] == {"tier": "web"}

    # kubectl edit takes spec.replicas; applying another value is then a conflict.
    script = tmp_path / "edit.py"
    script.write_text(
        "import sys\npath = sys.argv[1]\ntext = open(path).read()\n"
        "open(path, 'w').write(text.replace('replicas: 3', 'replicas: 7', 1))\n"
    )
    monkeypatch.setenv("KUBE_EDITOR", f"{sys.executable} {script}")
    kubectl("edit", "deployment", "ssa-web", "-n", "ssa")
    obj = get(kubectl)
    assert obj["spec"]["replicas"] == 7
    assert managers(obj)[("kubectl-edit", "Update")] == {"f:spec": {"f:replicas": {}}}

    refused = kubectl("apply", "--server-side", "-f", "-", input=manifest(4, {"tier": "web"}), check=False)
    assert refused.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas' in refused.stderr
    assert get(kubectl)["spec"]["replicas"] == 7

    dry = kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-", input=manifest(4, {}))
    assert "(server dry run)" in dry.stdout
    assert get(kubectl)["spec"]["replicas"] == 7

    kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=manifest(4, {"tier": "web"}))
    obj = get(kubectl)
    assert obj["spec"]["replicas"] == 4
    assert ("kubectl-edit", "Update") not in managers(obj)
    assert "f:replicas" in managers(obj)[("kubectl", "Apply")]["f:spec"]


@pytest.fixture(scope="module")
def dynamic_client(server: Server) -> Iterator[dynamic.DynamicClient]:
    api: ApiClient = config.new_client_from_config(str(server.kubeconfig))
    yield dynamic.DynamicClient(api)
    api.close()


def test_official_client_server_side_apply(dynamic_client: dynamic.DynamicClient) -> None:
    pdbs = dynamic_client.resources.get(api_version="policy/v1", kind="PodDisruptionBudget")
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "ssa-pdb", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
    }
    created = dynamic_client.server_side_apply(pdbs, body=body, namespace="default", field_manager="py-apply")
    assert created.spec.minAvailable == 1
    entry = created.metadata.managedFields[0]
    assert (entry.manager, entry.operation) == ("py-apply", "Apply")
    body["spec"]["minAvailable"] = 2
    updated = dynamic_client.server_side_apply(pdbs, body=body, namespace="default", field_manager="py-apply")
    assert updated.spec.minAvailable == 2
    # Another manager changing an owned field is refused with a 409 the client raises.
    from kubernetes.dynamic.exceptions import ConflictError

    body["spec"]["minAvailable"] = 3
    with pytest.raises(ConflictError) as refused:
        dynamic_client.server_side_apply(pdbs, body=body, namespace="default", field_manager="someone-else")
    status = json.loads(refused.value.body)
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "py-apply": .spec.minAvailable'
    forced = dynamic_client.server_side_apply(
        pdbs, body=body, namespace="default", field_manager="someone-else", force_conflicts=True
    )
    assert forced.spec.minAvailable == 3
