"""Deleting a namespace with kubectl against a real ``kss serve``, as on a cluster: the namespace is Terminating
while its Deployment goes and its pods end over their grace period, then it is gone; without the simulated kubelet
its pods stay Terminating and hold it (``kubectl describe`` says why) until they are force-deleted. Deleting a node
leaves its pods to the pod GC, which force-deletes them after its quarantine."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KUBECTL, KubectlRunner, Server, launch_server, start_servers

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "worker-1", "labels": {"kubernetes.io/hostname": "worker-1"}},
    "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "team"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"terminationGracePeriodSeconds": 3, "containers": [{"name": "web", "image": "nginx:1.27"}]},
        },
    },
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """Two servers, started side by side: with the simulated kubelet, and without."""
    on, off = tmp_path_factory.mktemp("kubelet-on"), tmp_path_factory.mktemp("kubelet-off")
    env = {"KSS_POD_GC_QUARANTINE": "2"}
    launched = (
        launch_server(on, f"sqlite:///{on / 'kss.db'}", env=env),
        launch_server(off, f"sqlite:///{off / 'kss.db'}", env={**env, "KSS_KUBELET": "false"}),
    )
    with_kubelet, without_kubelet = start_servers(*launched)
    try:
        yield with_kubelet, without_kubelet
    finally:
        with_kubelet.stop()
        without_kubelet.stop()


def until(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return got


def setup_team(kubectl: KubectlRunner) -> list[str]:
    """The node, the namespace and a Deployment of 2 pods bound to the node; the pods' names."""
    kubectl("apply", "-f", "-", input=json.dumps(NODE))
    kubectl("create", "namespace", "team")
    kubectl("apply", "-f", "-", input=json.dumps(DEPLOYMENT))

    def bound() -> list[str]:
        pods = json.loads(kubectl("get", "pods", "-n", "team", "-o", "json").stdout)["items"]
        names = [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")]
        return names if len(names) == 2 else []

    return list(until(bound, "2 bound pods"))


def phase(kubectl: KubectlRunner) -> str:
    found = kubectl("get", "namespace", "team", "-o", "jsonpath={.status.phase}", check=False)
    return found.stdout if found.returncode == 0 else "gone"


def test_a_namespace_terminates_with_its_pods_grace_period(servers: tuple[Server, Server]) -> None:
    kubectl = KubectlRunner(servers[0].kubeconfig)
    setup_team(kubectl)
    started = time.monotonic()
    assert kubectl("delete", "namespace", "team", "--wait=false").stdout.strip() == 'namespace "team" deleted'
    assert phase(kubectl) == "Terminating"
    refused = kubectl("create", "configmap", "late", "-n", "team", check=False)
    assert refused.returncode != 0
    assert (
        'configmaps "late" is forbidden: unable to create new content in namespace team because it is being '
        "terminated" in refused.stderr
    )
    again = kubectl("delete", "namespace", "team", "--wait=false", check=False)
    assert "The system is ensuring all content is removed from this namespace." in again.stderr
    until(lambda: phase(kubectl) == "gone", "the namespace to go")
    # The pods held it for their 3 s grace period (the kubelet ended them), not less; deletionTimestamp is whole
    # seconds, so the grace can end up to 1 s before 3 s after the delete.
    assert time.monotonic() - started >= 2.0


def test_without_a_kubelet_terminating_pods_hold_the_namespace_until_force_deleted(
    servers: tuple[Server, Server],
) -> None:
    kubectl = KubectlRunner(servers[1].kubeconfig)
    pods = setup_team(kubectl)
    kubectl("delete", "namespace", "team", "--wait=false")
    until(lambda: "pods has 2 resource instances" in kubectl("describe", "namespace", "team").stdout, "the condition")
    described = kubectl("describe", "namespace", "team").stdout
    assert "Status:       Terminating" in described
    assert "NamespaceContentRemaining" in described and "SomeResourcesRemain" in described
    assert kubectl("get", "deployment", "-n", "team", "-o", "name").stdout == ""
    time.sleep(4)  # well past the pods' grace period: no kubelet ends them
    assert phase(kubectl) == "Terminating"
    kubectl("delete", "pod", "-n", "team", *pods, "--grace-period=0", "--force")
    until(lambda: phase(kubectl) == "gone", "the namespace to go")


def test_a_deleted_node_s_pods_are_force_deleted_by_the_pod_gc(servers: tuple[Server, Server]) -> None:
    kubectl = KubectlRunner(servers[1].kubeconfig)
    kubectl("apply", "-f", "-", input=json.dumps(NODE))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stranded"},
        "spec": {
            "nodeName": "worker-1",
            "terminationGracePeriodSeconds": 600,
            "containers": [{"name": "c", "image": "nginx:1.27"}],
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(pod))
    kubectl("delete", "node", "worker-1")
    assert kubectl("get", "pod", "stranded", "-o", "name").stdout.strip() == "pod/stranded"  # kept by the API
    until(lambda: kubectl("get", "pods", "-o", "name").stdout == "", "the pod GC's force delete")


RAY_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "rayclusters.ray.example.com"},
    "spec": {
        "group": "ray.example.com",
        "names": {"kind": "RayCluster", "plural": "rayclusters"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


def test_custom_objects_go_with_their_namespace_and_a_finalizer_holds_it(servers: tuple[Server, Server]) -> None:
    kubectl = KubectlRunner(servers[1].kubeconfig)
    kubectl("apply", "-f", "-", input=json.dumps(RAY_CRD))
    kubectl("create", "namespace", "lab")
    for name, finalizers in (("plain", []), ("held", ["example.com/hold"])):
        ray = {
            "apiVersion": "ray.example.com/v1",
            "kind": "RayCluster",
            "metadata": {"name": name, "namespace": "lab", "finalizers": finalizers},
        }
        until(lambda body=ray: kubectl("apply", "-f", "-", input=json.dumps(body), check=False).returncode == 0, name)
    kubectl("delete", "namespace", "lab", "--wait=false")
    until(lambda: "rayclusters.ray.example.com has 1" in kubectl("describe", "namespace", "lab").stdout, "condition")
    described = kubectl("describe", "namespace", "lab").stdout
    assert "example.com/hold in 1 resource instances" in described
    left = kubectl("get", "rayclusters", "-n", "lab", "-o", "name").stdout.split()
    assert left == ["raycluster.ray.example.com/held"]
    kubectl("patch", "raycluster", "held", "-n", "lab", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    until(lambda: kubectl("get", "namespace", "lab", check=False).returncode != 0, "the namespace to go", 40)


def test_finalize_takes_a_stuck_namespace_s_finalizers_a_plain_replace_does_not(servers: tuple[Server, Server]) -> None:
    kubectl = KubectlRunner(servers[1].kubeconfig)
    kubectl("apply", "-f", "-", input=json.dumps(NODE))
    kubectl("create", "namespace", "stuck")
    stuck = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "stuck"},
        "spec": {"nodeName": "worker-1", "containers": [{"name": "c", "image": "nginx:1.27"}]},
    }
    kubectl("apply", "-f", "-", input=json.dumps(stuck))
    kubectl("delete", "namespace", "stuck", "--wait=false")  # its pod never ends: no kubelet
    namespace = json.loads(kubectl("get", "namespace", "stuck", "-o", "json").stdout)
    assert namespace["spec"]["finalizers"] == ["kubernetes"]
    namespace["spec"]["finalizers"] = []
    replaced = json.loads(kubectl("replace", "-f", "-", "-o", "json", input=json.dumps(namespace)).stdout)
    assert replaced["spec"]["finalizers"] == ["kubernetes"]  # kept: a plain update does not change them
    assert phase_of(kubectl, "stuck") == "Terminating"
    namespace["metadata"].pop("resourceVersion")
    kubectl("replace", "--raw", "/api/v1/namespaces/stuck/finalize", "-f", "-", input=json.dumps(namespace))
    assert phase_of(kubectl, "stuck") == "gone"
    refused = kubectl("get", "--raw", "/api/v1/namespaces/default/finalize", check=False)
    assert refused.returncode != 0 and "Error from server (MethodNotAllowed)" in refused.stderr  # update alone


def phase_of(kubectl: KubectlRunner, namespace: str) -> str:
    found = kubectl("get", "namespace", namespace, "-o", "jsonpath={.status.phase}", check=False)
    return found.stdout if found.returncode == 0 else "gone"
