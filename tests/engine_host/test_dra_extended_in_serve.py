"""DRAExtendedResource in a real ``kss serve --kube-version 1.36`` (controllers and kubelets on) with the official
``kubernetes`` client: a pod asking for ``example.com/gpu`` that no node has allocatable, served by a DeviceClass
naming it, is bound where a device is free; DynamicResources' PreBind has created the pod's claim (a generated name,
allocated, reserved for the pod) and written the pod's ``status.extendedResourceClaimStatus``; the claim stays while
the pod runs, and once the pod is deleted it is gone (the resourceclaim controller deallocates it, the garbage
collector removes it) and its device goes to the pod that waited."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.cluster.factories import node
from tests.conftest import Server, start_server

DRIVER = "gpu.example.com"
NS = "default"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    workdir = tmp_path_factory.mktemp("kss-dra-extended")
    srv: Server = start_server(
        workdir,
        f"sqlite:///{workdir / 'kss.db'}",
        env={
            "KSS_KUBE_VERSION": "1.36",
            "KSS_SCHEDULER_ENABLED": "true",
            "KSS_CONTROLLERS": "true",
            "KSS_KUBELET": "true",
        },
    )
    api_client = config.new_client_from_config(str(srv.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()
        srv.stop()


def _wait(what: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got:
            return got
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _gpu_pod(name: str) -> dict[str, Any]:
    resources = {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": resources}]},
    }


def test_a_pod_s_extended_resource_is_allocated_through_a_claim_the_scheduler_creates_and_released_with_the_pod(
    api: client.ApiClient,
) -> None:
    core, resource = client.CoreV1Api(api), client.ResourceV1Api(api)
    core.create_node(node("gpu-node", cpu="8"))
    resource.create_device_class(
        {
            "metadata": {"name": "gpu.example.com"},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                "extendedResourceName": "example.com/gpu",
            },
        }
    )
    resource.create_resource_slice(
        {
            "metadata": {"name": "gpu-node-gpus"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "gpu-node",
                "pool": {"name": "gpu-node", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        }
    )
    core.create_namespaced_pod(NS, _gpu_pod("first"))
    assert _wait(lambda: core.read_namespaced_pod("first", NS).spec.node_name) == "gpu-node"

    pod = core.read_namespaced_pod("first", NS)
    status = _wait(lambda: core.read_namespaced_pod("first", NS).status.extended_resource_claim_status)
    assert [(m.container_name, m.resource_name, m.request_name) for m in status.request_mappings] == [
        ("c", "example.com/gpu", "container-0-request-0")
    ]
    claim = resource.read_namespaced_resource_claim(status.resource_claim_name, NS)
    assert claim.metadata.name.startswith("first-extended-resources-")
    assert claim.metadata.annotations == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert [(o.kind, o.name, o.uid) for o in claim.metadata.owner_references] == [("Pod", "first", pod.metadata.uid)]
    results = claim.status.allocation.devices.results
    assert [(r.request, r.pool, r.device) for r in results] == [("container-0-request-0", "gpu-node", "gpu-0")]
    assert [(r.name, r.uid) for r in claim.status.reserved_for] == [("first", pod.metadata.uid)]

    # The node's one device is taken: a second pod waits.
    core.create_namespaced_pod(NS, _gpu_pod("second"))

    def condition() -> Any:
        conditions = core.read_namespaced_pod("second", NS).status.conditions or []
        return next((c for c in conditions if c.type == "PodScheduled" and c.status == "False"), None)

    assert "cannot allocate all claims" in _wait(condition).message

    # The claim stays while the pod runs...
    assert _wait(lambda: core.read_namespaced_pod("first", NS).status.phase == "Running")
    assert resource.read_namespaced_resource_claim(claim.metadata.name, NS).status.reserved_for

    # ...and goes with it; the freed device goes to the pod that waited, through a claim of its own.
    core.delete_namespaced_pod("first", NS, grace_period_seconds=0)

    def claim_names() -> set[str]:
        return {c.metadata.name for c in resource.list_namespaced_resource_claim(NS).items}

    _wait(lambda: claim.metadata.name not in claim_names())
    assert _wait(lambda: core.read_namespaced_pod("second", NS).spec.node_name) == "gpu-node"
    second = _wait(lambda: core.read_namespaced_pod("second", NS).status.extended_resource_claim_status)
    assert second.resource_claim_name.startswith("second-extended-resources-")
    assert claim_names() == {second.resource_claim_name}
