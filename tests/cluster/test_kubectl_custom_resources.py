"""A bundle of manifests as a real cluster's are written (examples/cluster/crd-raycluster.yaml and raycluster.yaml:
a CRD and its objects beside ConfigMaps, Secrets, Services and ServiceAccounts) through the real kubectl against
``kss serve``: applied, read back with the CRD's printer columns, scaled; bad input refused as kube-apiserver
refuses it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import KUBECTL, KubectlRunner

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cluster"
CRD = (EXAMPLES / "crd-raycluster.yaml").read_text()
BUNDLE = (EXAMPLES / "raycluster.yaml").read_text()


def _columns(out: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in out.splitlines() if line.strip()]
    return lines[0].split(), [line.split() for line in lines[1:]]


def test_a_bundle_with_a_crd_applies_and_reads_as_on_a_cluster(kubectl: KubectlRunner) -> None:
    # A CRD and its objects in one apply: kubectl maps every object before it applies any, so the objects of a kind
    # that is not there yet fail ("ensure CRDs are installed first") on a real cluster too; the CRD is applied
    # first, then the bundle.
    kubectl("apply", "-f", "-", input=CRD)
    kubectl("wait", "--for", "condition=Established", "crd/rayclusters.ray.kss.example", "--timeout=30s")
    applied = kubectl("apply", "-f", "-", input=BUNDLE)
    assert "raycluster.ray.kss.example/demo created" in applied.stdout
    assert "configmap/ray-config created" in applied.stdout
    assert "secret/ray-token created" in applied.stdout
    assert "service/ray-head created" in applied.stdout
    assert "serviceaccount/ray-head created" in applied.stdout

    header, rows = _columns(kubectl("get", "rayclusters", "-n", "ray-demo").stdout)
    assert header == ["NAME", "DESIRED", "WORKERS", "IMAGE", "STATUS", "AGE"]
    # No status yet: kubectl prints the empty cell as blank, so the row has one word less.
    assert rows[0][:3] == ["demo", "3", "rayproject/ray:2.9.0"] and len(rows[0]) == 4
    # The short name, the singular and the qualified plural all reach it.
    for name in ("rc8", "raycluster", "rayclusters.ray.kss.example"):
        assert kubectl("get", name, "demo", "-n", "ray-demo", "-o", "name").stdout.strip() == (
            "raycluster.ray.kss.example/demo"
        )
    _, rows = _columns(kubectl("get", "crd", "rayclusters.ray.kss.example").stdout)
    assert rows[0][0] == "rayclusters.ray.kss.example"
    header, rows = _columns(kubectl("get", "configmap", "ray-config", "-n", "ray-demo").stdout)
    assert header == ["NAME", "DATA", "AGE"] and rows[0][:2] == ["ray-config", "1"]
    header, rows = _columns(kubectl("get", "secret", "ray-token", "-n", "ray-demo").stdout)
    assert header == ["NAME", "TYPE", "DATA", "AGE"] and rows[0][:3] == ["ray-token", "Opaque", "1"]
    header, rows = _columns(kubectl("get", "service", "ray-head", "-n", "ray-demo").stdout)
    assert header[:3] == ["NAME", "TYPE", "CLUSTER-IP"] and rows[0][:2] == ["ray-head", "ClusterIP"]
    header, rows = _columns(kubectl("get", "serviceaccount", "ray-head", "-n", "ray-demo").stdout)
    assert rows[0][0] == "ray-head"

    # Applying the same bundle again changes nothing.
    again = kubectl("apply", "-f", "-", input=BUNDLE)
    assert "raycluster.ray.kss.example/demo unchanged" in again.stdout

    scaled = kubectl("scale", "raycluster", "demo", "-n", "ray-demo", "--replicas=5")
    assert "raycluster.ray.kss.example/demo scaled" in scaled.stdout
    workers = kubectl("get", "raycluster", "demo", "-n", "ray-demo", "-o", "jsonpath={.spec.workerReplicas}")
    assert workers.stdout == "5"

    kubectl("delete", "crd", "rayclusters.ray.kss.example")
    gone = kubectl("get", "--raw", "/apis/ray.kss.example/v1/namespaces/ray-demo/rayclusters/demo", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    # Without kube-controller-manager (this server runs none) the namespace stays Terminating, as on a cluster.
    deleted = kubectl("delete", "namespace", "ray-demo", "--wait=false")
    assert deleted.stdout.strip() == 'namespace "ray-demo" deleted'
    assert kubectl("get", "namespace", "ray-demo", "-o", "jsonpath={.status.phase}").stdout == "Terminating"


def test_bad_custom_input_is_refused_as_kube_apiserver_refuses_it(kubectl: KubectlRunner) -> None:
    non_structural = CRD.replace("image: {type: string}", "image: {description: no type}").replace(
        "rayclusters.ray.kss.example", "rayclusters.bad.kss.example"
    )
    non_structural = non_structural.replace("group: ray.kss.example", "group: bad.kss.example")
    refused = kubectl("apply", "-f", "-", input=non_structural, check=False)
    assert refused.returncode != 0
    assert 'The CustomResourceDefinition "rayclusters.bad.kss.example" is invalid' in refused.stderr
    assert (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].type: Required value: "
        "must not be empty for specified object fields"
    ) in refused.stderr

    kubectl("apply", "-f", "-", input=CRD.replace("rc8", "rc9").replace("ray.kss.example", "ray2.kss.example"))
    kubectl("wait", "--for", "condition=Established", "crd/rayclusters.ray2.kss.example", "--timeout=30s")
    bad = """
apiVersion: ray2.kss.example/v1
kind: RayCluster
metadata: {name: bad, namespace: default}
spec: {image: ray, workerReplicas: -1}
"""
    refused = kubectl("apply", "-f", "-", input=bad, check=False)
    assert refused.returncode != 0
    assert (
        'The RayCluster "bad" is invalid: spec.workerReplicas: Invalid value: -1: '
        "spec.workerReplicas in body should be greater than or equal to 0"
    ) in refused.stderr
    typo = kubectl(
        "apply", "-f", "-", input=bad.replace("workerReplicas: -1", "workerReplicas: 1, workerReplica: 2"), check=False
    )
    assert typo.returncode != 0
    assert 'strict decoding error: unknown field "spec.workerReplica"' in typo.stderr
    explained = kubectl("explain", "rayclusters.ray2.kss.example.spec")
    assert "workerReplicas" in explained.stdout and "<integer>" in explained.stdout
    unknown = kubectl("apply", "-f", "-", input=bad.replace("ray2.kss.example", "nowhere.kss.example"), check=False)
    assert unknown.returncode != 0
    assert 'no matches for kind "RayCluster" in version "nowhere.kss.example/v1"' in unknown.stderr
    missing = kubectl("get", "--raw", "/apis/nowhere.kss.example/v1", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr
    kubectl("delete", "crd", "rayclusters.ray2.kss.example")
