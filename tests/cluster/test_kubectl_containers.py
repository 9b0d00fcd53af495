"""``kubectl logs``, ``exec``, ``attach`` and ``port-forward`` (the real kubectl and the official client) against a
real ``kss serve``: no container runs in kss, so each is answered with a 400 Status saying what kss has instead, a
missing pod with a 404, and nothing about the pod changes."""

from __future__ import annotations

import json
import os

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config
from kubernetes.client.rest import ApiException

from tests.conftest import KUBECTL, KubectlRunner, Server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

POD = """
apiVersion: v1
kind: Pod
metadata: {name: quiet, namespace: ctr}
spec:
  nodeName: ctr-node
  containers: [{name: c, image: registry.k8s.io/pause:3.10, ports: [{containerPort: 8080}]}]
"""


@pytest.fixture(scope="module")
def pod(kubectl: KubectlRunner) -> str:
    kubectl("create", "namespace", "ctr", check=False)
    kubectl("apply", "-f", "-", input=POD)
    # Running, as the simulated kubelet (off in the session server) would say: kubectl port-forward asks for it.
    running = '{"status": {"phase": "Running"}}'
    kubectl("patch", "pod", "quiet", "-n", "ctr", "--subresource", "status", "--type", "merge", "-p", running)
    return json.loads(kubectl("get", "pod", "quiet", "-n", "ctr", "-o", "json").stdout)["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["logs", "quiet", "-n", "ctr"], "there are no container logs"),
        (["logs", "quiet", "-n", "ctr", "--tail", "5", "-c", "c"], "there are no container logs"),
        (["exec", "quiet", "-n", "ctr", "--", "ls"], "there is no container to run a command in"),
        (["attach", "quiet", "-n", "ctr"], "there is no container to attach to"),
        (["port-forward", "pod/quiet", "-n", "ctr", "18080:8080"], "there is no container port to forward to"),
    ],
)
def test_kubectl_is_told_what_kss_has_instead(kubectl: KubectlRunner, pod: str, args: list[str], what: str) -> None:
    proc = kubectl(*args, check=False, timeout=60)
    assert proc.returncode != 0
    assert what in proc.stderr, proc.stderr
    assert "kubectl describe pod quiet -n ctr" in proc.stderr
    after = json.loads(kubectl("get", "pod", "quiet", "-n", "ctr", "-o", "json").stdout)
    assert after["metadata"]["resourceVersion"] == pod  # nothing written


def test_a_missing_pod_is_not_found(kubectl: KubectlRunner, pod: str) -> None:
    proc = kubectl("logs", "ghost", "-n", "ctr", check=False, timeout=60)
    assert proc.returncode != 0
    assert 'pods "ghost" not found' in proc.stderr


def test_the_status_and_the_verbs_as_kube_apiserver_serves_them(server: Server, pod: str) -> None:
    base = f"{server.url}/api/v1/namespaces/ctr/pods/quiet"
    answer = httpx.get(f"{base}/log", timeout=30)
    assert answer.status_code == 400
    status = answer.json()
    assert (status["kind"], status["status"], status["reason"], status["code"]) == (
        "Status",
        "Failure",
        "BadRequest",
        400,
    )
    assert "/ui/pods/ctr/quiet" in status["message"]
    assert httpx.post(f"{base}/log", timeout=30).status_code == 405
    assert httpx.post(f"{base}/exec?command=ls", timeout=30).status_code == 400
    discovery = httpx.get(f"{server.url}/api/v1", timeout=30).json()
    listed = {r["name"]: (r["kind"], r["verbs"]) for r in discovery["resources"]}
    assert listed["pods/log"] == ("PodLogOptions", ["get"])
    assert listed["pods/exec"] == ("PodExecOptions", ["create", "get"])
    assert listed["pods/portforward"] == ("PodPortForwardOptions", ["create", "get"])


def test_the_official_client_reads_the_status(server: Server, pod: str) -> None:
    api = k8s.CoreV1Api(config.new_client_from_config(str(server.kubeconfig)))  # type: ignore[no-untyped-call]
    with pytest.raises(ApiException) as raised:
        api.read_namespaced_pod_log("quiet", "ctr")
    assert raised.value.status == 400
    assert "there are no container logs" in json.loads(raised.value.body)["message"]
