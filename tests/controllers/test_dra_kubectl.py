"""Issue #18's "done when", tried as a new user would, with kubectl alone against a real ``kss serve``.

A DeviceClass, ResourceSlices of two GPU nodes and a pod asking for a GPU through a ResourceClaimTemplate are applied:
the resourceclaim controller makes the pod's claim, kube-scheduler's DynamicResources allocates it and the pod is
bound; ``kubectl get resourceclaims`` (and ``-o yaml``) shows the allocation and reservedFor, and the node's page shows
the device held by that claim. A pod whose selector matches no device stays Pending, ``kubectl describe pod`` shows
kube-scheduler's FailedScheduling message and the pod's page the simulator's per-request explanation beneath it.
Deleting the first pod frees its device: the claim goes (garbage collected once the controller has deallocated it)
and the node's page shows the device free again.
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import KUBECTL, KubectlRunner, Server, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

DRIVER = "gpu.example.com"
NODES = "".join(
    f"""---
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-{i}
  labels: {{kubernetes.io/hostname: gpu-node-{i}}}
status:
  capacity: {{cpu: "16", memory: 64Gi, pods: "110"}}
  allocatable: {{cpu: "16", memory: 64Gi, pods: "110"}}
"""
    for i in range(2)
)
# gpu-node-0 has an A100 and a T4, gpu-node-1 two T4s: an A100 request has one place to go.
DEVICES = f"""---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu.example.com}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{DRIVER}"'}}
""" + "".join(
    f"""---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: gpu-node-{i}-gpus}}
spec:
  driver: {DRIVER}
  nodeName: gpu-node-{i}
  pool: {{name: gpu-node-{i}, generation: 1, resourceSliceCount: 1}}
  devices:
  - name: gpu-0
    attributes: {{model: {{string: {first}}}}}
    capacity: {{memory: {{value: 80Gi}}}}
  - name: gpu-1
    attributes: {{model: {{string: t4}}}}
    capacity: {{memory: {{value: 16Gi}}}}
"""
    for i, first in enumerate(("a100", "t4"))
)


def template_and_pod(name: str, model: str) -> str:
    """A ResourceClaimTemplate asking for one GPU of ``model`` and a pod using it."""
    return f"""---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {model}-gpu}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          selectors:
          - cel: {{expression: 'device.attributes["{DRIVER}"].model == "{model}"'}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  resourceClaims:
  - {{name: gpu, resourceClaimTemplateName: {model}-gpu}}
  containers:
  - name: train
    image: busybox
    resources:
      requests: {{cpu: 500m}}
      claims: [{{name: gpu}}]
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Server, KubectlRunner]]:
    # Every cycle's plugin runs timed, so the plugin metric checked below is there after a few pods.
    server = start_server(
        tmp_path, f"sqlite:///{tmp_path / 'kss.db'}", env={"KSS_PLUGIN_METRICS_SAMPLE_PERCENT": "100"}
    )
    try:
        yield server, KubectlRunner(server.kubeconfig)
    finally:
        server.stop()


def _until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)
    return got


def _device_row(page: str, device: str) -> str:
    """The node page's table row of one device (``pool/name``), as text with its links kept."""
    match = re.search(rf'<tr [^>]*data-device="{re.escape(device)}">(.*?)</tr>', page, re.S)
    assert match, f"no row for {device}"
    return match.group(1)


def test_a_new_user_s_gpu_pod_gets_its_device_through_a_claim_template(cluster: tuple[Server, KubectlRunner]) -> None:
    server, kubectl = cluster
    kubectl("apply", "-f", "-", input=NODES + DEVICES)
    kubectl("apply", "-f", "-", input=template_and_pod("trainer", "a100"))

    def pod(name: str) -> dict[str, Any]:
        return dict(json.loads(kubectl("get", "pod", name, "-o", "json").stdout))

    assert _until(lambda: pod("trainer")["spec"].get("nodeName"), "trainer to be bound") == "gpu-node-0"
    trainer = pod("trainer")
    claim_name = trainer["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert claim_name.startswith("trainer-gpu-")

    # kubectl get resourceclaims: the claim generated for the pod, allocated and reserved.
    table = kubectl("get", "resourceclaims").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "AGE"]
    assert [line.split()[:2] for line in table[1:]] == [[claim_name, "allocated,reserved"]]
    claims = yaml.safe_load(kubectl("get", "resourceclaims", "-o", "yaml").stdout)["items"]
    (claim,) = claims
    allocation = claim["status"]["allocation"]
    assert allocation["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "gpu-node-0", "device": "gpu-0"}
    ]
    assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"] == [
        {"key": "metadata.name", "operator": "In", "values": ["gpu-node-0"]}
    ]
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "trainer", "uid": trainer["metadata"]["uid"]}
    ]
    owner = claim["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Pod", "trainer", True)

    # The node's page: gpu-0 is held by that claim (a link to its page), the T4 is free.
    page = httpx.get(f"{server.url}/ui/nodes/gpu-node-0").text
    held = _device_row(page, "gpu-node-0/gpu-0")
    assert f'href="/ui/claims/default/{claim_name}"' in held and "free" not in held
    assert "model=a100" in held and "memory=80Gi" in held
    assert ">free<" in _device_row(page, "gpu-node-0/gpu-1")
    claim_page = httpx.get(f"{server.url}/ui/claims/default/{claim_name}")
    assert claim_page.status_code == 200
    assert 'href="/ui/pods/default/trainer"' in claim_page.text and "gpu-0" in claim_page.text

    # A pod whose selector matches nothing stays Pending with kube-scheduler's message.
    kubectl("apply", "-f", "-", input=template_and_pod("waiting", "h100"))
    message = (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: 0/2 nodes are "
        "available: 2 Preemption is not helpful for scheduling."
    )
    _until(lambda: "FailedScheduling" in kubectl("describe", "pod", "waiting").stdout, "a FailedScheduling event")
    described = kubectl("describe", "pod", "waiting").stdout
    assert re.search(r"Status:\s+Pending", described)
    event = next(line for line in described.splitlines() if "FailedScheduling" in line)
    assert event.split("default-scheduler", 1)[1].strip() == message
    assert pod("waiting")["spec"].get("nodeName") is None
    # Its page: kube-scheduler's words, and the simulator's explanation beneath them, once for the two nodes it
    # refused alike.
    pod_page = html.unescape(httpx.get(f"{server.url}/ui/pods/default/waiting").text)
    assert pod_page.count('data-testid="dra-message">cannot allocate all claims<') == 1
    assert 'data-node="gpu-node-0,gpu-node-1"' in pod_page
    assert 'data-testid="dra-group-count">2 nodes<' in pod_page
    assert f'no device matches selector device.attributes["{DRIVER}"].model == "h100"' in pod_page
    # The results API and /metrics carry DynamicResources as any plugin.
    results = httpx.get(f"{server.url}/simulator/v1/namespaces/default/pods/waiting/results").json()
    attempt = httpx.get(
        f"{server.url}/simulator/v1/namespaces/default/pods/waiting/results/{results['attempts'][0]['attempt']}"
    ).json()
    assert {row["filter"]["DynamicResources"] for row in attempt["matrix"]["rows"]} == {"cannot allocate all claims"}
    metrics = httpx.get(f"{server.url}/metrics").text
    assert re.search(r'scheduler_plugin_execution_duration_seconds_count\{extension_point="PreFilter",'
                     r'plugin="DynamicResources",status="Success"\} [1-9]', metrics), metrics  # fmt: skip

    # Deleting the pod frees its device: the claim is deallocated and garbage collected.
    kubectl("delete", "pod", "trainer", "--grace-period=1")  # it ends after a second, not the default 30 s
    _until(lambda: claim_name not in kubectl("get", "resourceclaims", "-o", "name").stdout, "the claim to be deleted")
    page = httpx.get(f"{server.url}/ui/nodes/gpu-node-0").text
    freed = _device_row(page, "gpu-node-0/gpu-0")
    assert ">free<" in freed and "/ui/claims/" not in freed
