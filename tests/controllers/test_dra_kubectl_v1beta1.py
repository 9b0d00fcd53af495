"""DRA as a v1.33 cluster serves it, with the real kubectl against ``kss serve --kube-version 1.33``: v1.33 has no
resource.k8s.io/v1, so users' manifests say v1beta1, served once ``--runtime-config`` enables it (beta APIs are off
by default). A v1beta1 DeviceClass, ResourceSlice and ResourceClaim and a pod using the claim are applied, kss's
scheduler allocates the claim and binds the pod, and ``kubectl get resourceclaims -o yaml`` reads the allocation back
in v1beta1's form. At v1.35 the same manifests are refused unless the runtime config enables v1beta1."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import KSS, KUBECTL, KubectlRunner, Server, launch_server, start_servers

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

DRIVER = "gpu.example.com"
NODE = """
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-0
  labels: {kubernetes.io/hostname: gpu-node-0}
status:
  capacity: {cpu: "16", memory: 64Gi, pods: "110"}
  allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
"""
DRA_V1BETA1 = f"""
apiVersion: resource.k8s.io/v1beta1
kind: DeviceClass
metadata: {{name: {DRIVER}}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{DRIVER}"'}}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {{name: gpu-node-0-gpus}}
spec:
  driver: {DRIVER}
  nodeName: gpu-node-0
  pool: {{name: gpu-node-0, generation: 1, resourceSliceCount: 1}}
  devices:
  - name: gpu-0
    basic:
      attributes: {{model: {{string: a100}}}}
      capacity: {{memory: {{value: 80Gi}}}}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {{name: one-gpu, namespace: default}}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: {DRIVER}
      selectors:
      - cel: {{expression: 'device.attributes["{DRIVER}"].model == "a100"'}}
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  resourceClaims:
  - {name: gpu, resourceClaimName: one-gpu}
  containers:
  - name: train
    image: busybox
    resources:
      requests: {cpu: 500m}
      claims: [{name: gpu}]
"""


def _launch(tmp_path: Path, name: str, env: dict[str, str]) -> Server:
    workdir = tmp_path / name
    workdir.mkdir()
    return launch_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env=env)


@pytest.fixture
def at_1_33(tmp_path: Path) -> Iterator[KubectlRunner]:
    (server,) = start_servers(
        _launch(
            tmp_path,
            "v133",
            {
                "KSS_KUBE_VERSION": "1.33",
                "KSS_FEATURE_GATES": "DynamicResourceAllocation=true",
                "KSS_RUNTIME_CONFIG": "resource.k8s.io/v1beta1=true",
            },
        )
    )
    try:
        yield KubectlRunner(server.kubeconfig)
    finally:
        server.stop()


def test_a_v1beta1_claim_is_allocated_and_read_back_in_v1beta1(at_1_33: KubectlRunner) -> None:
    kubectl = at_1_33
    versions = kubectl("api-versions").stdout.split()
    assert "resource.k8s.io/v1beta1" in versions
    assert "resource.k8s.io/v1" not in versions and "resource.k8s.io/v1beta2" not in versions
    kubectl("apply", "-f", "-", input=NODE)
    kubectl("apply", "-f", "-", input=DRA_V1BETA1)
    kubectl("apply", "-f", "-", input=POD)
    deadline = time.monotonic() + 60
    while not kubectl("get", "pod", "trainer", "-o", "jsonpath={.spec.nodeName}").stdout:
        assert time.monotonic() < deadline, kubectl("describe", "pod", "trainer").stdout
        time.sleep(0.5)
    assert kubectl("get", "pod", "trainer", "-o", "jsonpath={.spec.nodeName}").stdout == "gpu-node-0"
    claim = yaml.safe_load(kubectl("get", "resourceclaims", "one-gpu", "-o", "yaml").stdout)
    assert claim["apiVersion"] == "resource.k8s.io/v1beta1"
    request = claim["spec"]["devices"]["requests"][0]
    assert request["deviceClassName"] == DRIVER and "exactly" not in request
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["request"], result["pool"], result["device"]) == ("gpu", "gpu-node-0", "gpu-0")
    assert [(r["resource"], r["name"]) for r in claim["status"]["reservedFor"]] == [("pods", "trainer")]
    slices = yaml.safe_load(kubectl("get", "resourceslices", "-o", "yaml").stdout)
    assert slices["items"][0]["spec"]["devices"][0]["basic"]["attributes"] == {"model": {"string": "a100"}}
    assert "resource.k8s.io/v1 " not in kubectl("api-resources").stdout


def test_at_1_35_v1beta1_is_refused_unless_the_runtime_config_enables_it(tmp_path: Path) -> None:
    default, enabled = start_servers(
        _launch(tmp_path, "default", {"KSS_SCHEDULER_ENABLED": "false", "KSS_CONTROLLERS": "false"}),
        _launch(
            tmp_path,
            "enabled",
            {
                "KSS_SCHEDULER_ENABLED": "false",
                "KSS_CONTROLLERS": "false",
                "KSS_RUNTIME_CONFIG": "resource.k8s.io/v1beta1=true",
            },
        ),
    )
    try:
        refused = KubectlRunner(default.kubeconfig)("apply", "-f", "-", input=DRA_V1BETA1, check=False)
        assert refused.returncode != 0
        assert 'no matches for kind "DeviceClass" in version "resource.k8s.io/v1beta1"' in refused.stderr
        kubectl = KubectlRunner(enabled.kubeconfig)
        kubectl("apply", "-f", "-", input=DRA_V1BETA1)
        # Stored once, read in v1 (the preferred version) too.
        claim = yaml.safe_load(kubectl("get", "resourceclaims", "one-gpu", "-o", "yaml").stdout)
        assert claim["apiVersion"] == "resource.k8s.io/v1"
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == DRIVER
    finally:
        default.stop()
        enabled.stop()


def test_a_bad_runtime_config_is_one_line_in_kube_apiserver_s_words(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(KSS), "serve", "--kube-version", "1.33", "--runtime-config", "resource.k8s.io/v1=true"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "kss serve: --runtime-config: group version resource.k8s.io/v1 that has not been registered"
        " (served at --kube-version 1.34, 1.35, 1.36, 1.37)"
    )


def test_the_official_python_client_s_v1beta1_and_v1beta2_apis(tmp_path: Path) -> None:
    from kubernetes import client, config

    (server,) = start_servers(
        _launch(
            tmp_path,
            "client",
            {
                "KSS_KUBE_VERSION": "1.33",
                "KSS_FEATURE_GATES": "DynamicResourceAllocation=true",
                "KSS_RUNTIME_CONFIG": "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true",
                "KSS_SCHEDULER_ENABLED": "false",
                "KSS_CONTROLLERS": "false",
            },
        )
    )
    api_client = config.new_client_from_config(str(server.kubeconfig))
    try:
        beta1, beta2 = client.ResourceV1beta1Api(api_client), client.ResourceV1beta2Api(api_client)
        beta1.create_namespaced_resource_claim(
            "default",
            {
                "apiVersion": "resource.k8s.io/v1beta1",
                "kind": "ResourceClaim",
                "metadata": {"name": "gpu"},
                "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": DRIVER, "count": 2}]}},
            },
        )
        read1 = beta1.read_namespaced_resource_claim("gpu", "default")
        assert (read1.spec.devices.requests[0].device_class_name, read1.spec.devices.requests[0].count) == (DRIVER, 2)
        read2 = beta2.read_namespaced_resource_claim("gpu", "default")
        assert read2.api_version == "resource.k8s.io/v1beta2"
        assert (
            read2.spec.devices.requests[0].exactly.device_class_name,
            read2.spec.devices.requests[0].exactly.count,
        ) == (DRIVER, 2)
        (listed,) = beta2.list_namespaced_resource_claim("default").items
        assert listed.metadata.name == "gpu"
        beta1.patch_namespaced_resource_claim("gpu", "default", {"metadata": {"labels": {"team": "ml"}}})
        assert beta2.read_namespaced_resource_claim("gpu", "default").metadata.labels == {"team": "ml"}
    finally:
        api_client.close()
        server.stop()
