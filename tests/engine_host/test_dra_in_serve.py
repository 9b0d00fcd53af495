"""DRA end to end in a real ``kss serve`` with the official ``kubernetes`` client: a DeviceClass, ResourceSlices and a
ResourceClaim whose CEL selector picks one model; the pod using the claim is bound where that device is, and the
claim reads back allocated (the device, the node selector) and reserved for the pod, as kube-scheduler's PreBind
writes it. A claim nothing matches keeps its pod pending with kube-scheduler's message."""

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
    workdir = tmp_path_factory.mktemp("kss-dra")
    srv: Server = start_server(
        workdir,
        f"sqlite:///{workdir / 'kss.db'}",
        env={"KSS_SCHEDULER_ENABLED": "true", "KSS_CONTROLLERS": "false", "KSS_KUBELET": "false"},
    )
    api_client = config.new_client_from_config(str(srv.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()
        srv.stop()


def _slice(node_name: str, models: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": m}}} for i, m in enumerate(models)],
        },
    }


def _claim(name: str, model: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.example.com",
                            "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}],
                        },
                    }
                ]
            }
        },
    }


def _pod(name: str, claim: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }


def _wait(what: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got:
            return got
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_pod_with_a_claim_is_bound_and_the_claim_allocated_and_reserved(api: client.ApiClient) -> None:
    core, resource = client.CoreV1Api(api), client.ResourceV1Api(api)
    for name in ("node-a", "node-b"):
        core.create_node(node(name, cpu="8"))
    resource.create_device_class({"metadata": {"name": "gpu.example.com"}, "spec": {}})
    resource.create_resource_slice(_slice("node-a", ["t4", "t4"]))
    resource.create_resource_slice(_slice("node-b", ["t4", "a100"]))
    resource.create_namespaced_resource_claim(NS, _claim("a100", "a100"))
    core.create_namespaced_pod(NS, _pod("trainer", "a100"))

    bound = _wait(lambda: core.read_namespaced_pod("trainer", NS).spec.node_name)
    assert bound == "node-b"
    claim = resource.read_namespaced_resource_claim("a100", NS)
    results = claim.status.allocation.devices.results
    assert [(r.request, r.driver, r.pool, r.device) for r in results] == [("gpu", DRIVER, "node-b", "gpu-1")]
    terms = claim.status.allocation.node_selector.node_selector_terms
    assert [(f.key, f.operator, f.values) for f in terms[0].match_fields] == [("metadata.name", "In", ["node-b"])]
    pod_uid = core.read_namespaced_pod("trainer", NS).metadata.uid
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [("pods", "trainer", pod_uid)]
    assert claim.metadata.finalizers == ["resource.kubernetes.io/delete-protection"]

    # No device matches: the pod stays pending with kube-scheduler's message.
    resource.create_namespaced_resource_claim(NS, _claim("h100", "h100"))
    core.create_namespaced_pod(NS, _pod("waiting", "h100"))

    def condition() -> Any:
        conditions = core.read_namespaced_pod("waiting", NS).status.conditions or []
        return next((c for c in conditions if c.type == "PodScheduled" and c.status == "False"), None)

    scheduled = _wait(condition)
    assert scheduled.reason == "Unschedulable"
    assert scheduled.message == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: 0/2 nodes are "
        "available: 2 Preemption is not helpful for scheduling."
    )
    assert core.read_namespaced_pod("waiting", NS).spec.node_name is None
    assert resource.read_namespaced_resource_claim("h100", NS).status.allocation is None


def test_a_pod_created_before_its_claim_waits_and_is_scheduled_once_the_claim_appears(api: client.ApiClient) -> None:
    core, resource = client.CoreV1Api(api), client.ResourceV1Api(api)
    if not core.list_node().items:  # the module's first test made them; alone, this test makes its own
        for name in ("node-a", "node-b"):
            core.create_node(node(name, cpu="8"))
        resource.create_device_class({"metadata": {"name": "gpu.example.com"}, "spec": {}})
        resource.create_resource_slice(_slice("node-a", ["t4", "t4"]))
    core.create_namespaced_pod(NS, _pod("early", "t4-late"))
    time.sleep(1.5)  # PreEnqueue keeps it out of the queue: 'could not find ResourceClaim "default/t4-late"'
    assert core.read_namespaced_pod("early", NS).spec.node_name is None
    resource.create_namespaced_resource_claim(NS, _claim("t4-late", "t4"))
    assert _wait(lambda: core.read_namespaced_pod("early", NS).spec.node_name) in ("node-a", "node-b")
    claim = resource.read_namespaced_resource_claim("t4-late", NS)
    assert [r.name for r in claim.status.reserved_for] == ["early"]
