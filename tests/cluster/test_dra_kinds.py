"""The resource.k8s.io/v1 kinds through the official ``kubernetes`` client against ``kss serve`` (typed models
read back, the status subresource, 422 Invalid with causes that change nothing, field selectors, watches), the
gated fields dropped as v1.35's strategies drop them, and export/import of a cluster using DRA (classes and slices
before pods, claims after the pods that own them, owners and consumers pointed at the new pods)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from kss_sim.cluster.errors import Invalid
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.kube.versions import kube_version
from kss_sim.main import create_app
from tests.cluster.factories import node
from tests.conftest import Server

NS = "dra-client"
DRIVER = "gpu.example.com"


@pytest.fixture(scope="module")
def resource_api(server: Server) -> Iterator[client.ResourceV1Api]:
    api = config.new_client_from_config(str(server.kubeconfig))
    core = client.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": NS}})
    except ApiException as exc:
        assert exc.status == 409
    yield client.ResourceV1Api(api)
    api.close()


def _slice(name: str, node_name: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 0, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _claim(name: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"devices": {"requests": requests}}}


def test_typed_models_read_back_and_field_selectors(resource_api: client.ResourceV1Api) -> None:
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(2)]
    resource_api.create_resource_slice(_slice("sel-a", "node-a", devices))
    resource_api.create_resource_slice(_slice("sel-b", "node-b", devices))
    got = resource_api.read_resource_slice("sel-a")
    assert isinstance(got, client.V1ResourceSlice) and got.spec.node_name == "node-a"
    assert [d.attributes["index"].int for d in got.spec.devices] == [0, 1]
    names = [s.metadata.name for s in resource_api.list_resource_slice(field_selector="spec.nodeName=node-b").items]
    assert names == ["sel-b"]
    assert resource_api.list_resource_slice(field_selector=f"spec.driver={DRIVER},spec.nodeName=node-z").items == []


def test_claim_status_subresource_and_spec_immutability(resource_api: client.ResourceV1Api) -> None:
    claim = resource_api.create_namespaced_resource_claim(
        NS, {**_claim("c1", [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]), "status": {"reservedFor": []}}
    )
    assert claim.spec.devices.requests[0].exactly.count == 1 and claim.status.allocation is None
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                  "values": ["node-a"]}]}]},
    }  # fmt: skip
    consumer = {"resource": "pods", "name": "p", "uid": "6a4b2f3e-0000-4000-8000-000000000001"}
    patched = resource_api.patch_namespaced_resource_claim_status(
        "c1", NS, {"status": {"allocation": allocation, "reservedFor": [consumer]}}
    )
    assert patched.status.allocation.devices.results[0].device == "gpu-0"
    assert patched.status.reserved_for[0].name == "p"

    with pytest.raises(ApiException) as err:  # an allocation is written once
        resource_api.patch_namespaced_resource_claim_status(
            "c1", NS, {"status": {"allocation": {**allocation, "devices": {"results": []}}}}
        )
    assert err.value.status == 422
    body = json.loads(err.value.body)
    assert body["reason"] == "Invalid" and body["details"]["causes"][0]["field"] == "status.allocation"

    with pytest.raises(ApiException) as err:
        resource_api.patch_namespaced_resource_claim(
            "c1", NS, {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "x"}}]}}}
        )
    assert err.value.status == 422 and "spec: Invalid value" in json.loads(err.value.body)["message"]
    after = resource_api.read_namespaced_resource_claim("c1", NS)
    assert after.spec.devices.requests[0].exactly.device_class_name == "gpu", "nothing changed"
    assert after.metadata.resource_version == patched.metadata.resource_version


def test_invalid_slice_is_a_422_with_causes(resource_api: client.ResourceV1Api) -> None:
    bad = _slice("bad", "node-a", [{"name": "Bad_Name", "attributes": {"model": {"string": "A", "int": 1}}}])
    bad["spec"]["pool"]["resourceSliceCount"] = 0
    with pytest.raises(ApiException) as err:
        resource_api.create_resource_slice(bad)
    body = json.loads(err.value.body)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    causes = {(c["field"], c["reason"]) for c in body["details"]["causes"]}
    assert ("spec.pool.resourceSliceCount", "FieldValueInvalid") in causes
    assert ("spec.devices[0].name", "FieldValueInvalid") in causes
    assert ("spec.devices[0].attributes[model]", "FieldValueInvalid") in causes
    with pytest.raises(ApiException) as err:
        resource_api.read_resource_slice("bad")
    assert err.value.status == 404


def test_too_many_devices_in_one_slice(resource_api: client.ResourceV1Api) -> None:
    devices = [{"name": f"d{i}"} for i in range(129)]
    with pytest.raises(ApiException) as err:
        resource_api.create_resource_slice(_slice("big", "node-c", devices))
    assert "spec.devices: Too many: 129: must have at most 128 items" in json.loads(err.value.body)["message"]
    resource_api.create_resource_slice(_slice("big", "node-c", devices[:128]))


def test_watch_sees_slices(resource_api: client.ResourceV1Api) -> None:
    rv = resource_api.list_resource_slice().metadata.resource_version
    resource_api.create_resource_slice(_slice("watched", "node-w", []))
    events = watch.Watch().stream(resource_api.list_resource_slice, resource_version=rv, timeout_seconds=5)
    for event in events:
        if event["object"].metadata.name == "watched":
            assert event["type"] == "ADDED"
            break
    else:
        pytest.fail("no event for the new slice")


def _store_at_v1_35(**gates: bool) -> ClusterStore:
    """A store as ``kss serve --kube-version 1.35`` opens it: every gate at v1.35's default unless given."""
    return ClusterStore.open(None, feature_gates=kube_version("1.35").effective_gates(gates), kube_version="1.35")


def test_gated_fields_dropped_as_the_strategies_do(tmp_path: Path) -> None:
    # At v1.35, where DRADeviceTaints, DRAPartitionableDevices and DRAConsumableCapacity are alpha and off.
    store = _store_at_v1_35()
    device = {
        "name": "d0",
        "taints": [{"key": "k", "effect": "NoSchedule"}],
        "consumesCounters": [{"counterSet": "s", "counters": {"mem": {"value": "1Gi"}}}],
        "allowMultipleAllocations": True,
    }
    created = store.create("ResourceSlice", _slice("gated", "n", [device]))
    assert created["spec"]["devices"] == [{"name": "d0"}], "taints, counters, consumable capacity are off in v1.35"
    tolerations = [{"key": "k", "operator": "Exists"}]
    claim = _claim(
        "gated", [{"name": "r", "exactly": {"deviceClassName": "c", "adminAccess": True, "tolerations": tolerations}}]
    )
    exactly = store.create("ResourceClaim", claim, "default")["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["adminAccess"] is True and "tolerations" not in exactly

    on = _store_at_v1_35(DRADeviceTaints=True)
    exactly = on.create("ResourceClaim", claim, "default")["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["tolerations"] == [{"key": "k", "operator": "Exists"}]
    # v1.36 (the default) has the three beta and on: nothing is dropped.
    default = ClusterStore.open(None)
    kept = default.create("ResourceSlice", _slice("kept", "n", [device]))["spec"]["devices"][0]
    assert {k: v for k, v in kept.items() if k != "taints"} == {k: v for k, v in device.items() if k != "taints"}
    assert [{k: t[k] for k in ("key", "effect")} for t in kept["taints"]] == device["taints"]  # timeAdded defaulted
    exactly = default.create("ResourceClaim", claim, "default")["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["tolerations"] == [{"key": "k", "operator": "Exists"}]
    off = _store_at_v1_35(DRAPrioritizedList=False)
    first = _claim("fa", [{"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]}])
    with pytest.raises(Invalid) as exc:  # the field dropped, the request has neither form left
        off.create("ResourceClaim", first, "default")
    assert exc.value.causes[0].field == "spec.devices.requests[0]"


# ---------------------------------------------------------------------------------------------- export / import


async def _client(tmp_path: Path, name: str) -> AsyncIterator[httpx.AsyncClient]:
    application: FastAPI = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / name}", scheduler_enabled=False, controllers=False, kubelet=False)
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async for c in _client(tmp_path, "source.db"):
        yield c


@pytest.fixture
async def target(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async for c in _client(tmp_path, "target.db"):
        yield c


RES = "/apis/resource.k8s.io/v1"
MERGE = {"content-type": "application/merge-patch+json"}


async def _load(c: httpx.AsyncClient) -> dict[str, Any]:
    assert (await c.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    dc = {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
    assert (await c.post(f"{RES}/deviceclasses", json=dc)).status_code == 201
    assert (await c.post(f"{RES}/resourceslices", json=_slice("n1-gpu", "n1", [{"name": "gpu-0"}]))).status_code == 201
    template = {"metadata": {"name": "one"}, "spec": {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}}  # fmt: skip
    assert (await c.post(f"{RES}/namespaces/ml/resourceclaimtemplates", json=template)).status_code == 201
    pod = {
        "metadata": {"name": "train"},
        "spec": {
            "nodeName": "n1",
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}],
            "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
        },
    }
    created_pod = (await c.post("/api/v1/namespaces/ml/pods", json=pod)).json()
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "train", "uid": created_pod["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    claim = {
        "metadata": {"name": "train-gpu-x7k2p", "ownerReferences": [owner],
                     "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"}},
        "spec": template["spec"]["spec"],
    }  # fmt: skip
    assert (await c.post(f"{RES}/namespaces/ml/resourceclaims", json=claim)).status_code == 201
    status = {"status": {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "train", "uid": created_pod["metadata"]["uid"]}],
    }}  # fmt: skip
    r = await c.patch(f"{RES}/namespaces/ml/resourceclaims/train-gpu-x7k2p/status", json=status, headers=MERGE)
    assert r.status_code == 200, r.text
    pod_status = {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "train-gpu-x7k2p"}]}}
    r = await c.patch("/api/v1/namespaces/ml/pods/train/status", json=pod_status, headers=MERGE)
    assert r.status_code == 200, r.text
    return created_pod


async def test_export_import_round_trip_relinks_claims_to_new_pods(
    source: httpx.AsyncClient, target: httpx.AsyncClient
) -> None:
    old_pod = await _load(source)
    snap = (await source.get("/simulator/v1/export")).json()
    assert [o["metadata"]["name"] for o in snap["deviceClasses"]] == ["gpu"]
    assert [o["metadata"]["name"] for o in snap["resourceSlices"]] == ["n1-gpu"]
    assert [o["metadata"]["name"] for o in snap["resourceClaimTemplates"]] == ["one"]
    assert [o["metadata"]["name"] for o in snap["resourceClaims"]] == ["train-gpu-x7k2p"]

    r = await target.post("/simulator/v1/import", content=(await source.get("/simulator/v1/export")).text)
    assert r.status_code == 200, r.text
    pod = (await target.get("/api/v1/namespaces/ml/pods/train")).json()
    assert pod["metadata"]["uid"] != old_pod["metadata"]["uid"]
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": "train-gpu-x7k2p"}]
    claim = (await target.get(f"{RES}/namespaces/ml/resourceclaims/train-gpu-x7k2p")).json()
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"], "owned by the new pod"
    assert claim["status"]["reservedFor"][0]["uid"] == pod["metadata"]["uid"], "reserved for the new pod"
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"

    # Unbound, the pods lose their node and their claims their allocation (placed again by the scheduler).
    r = await target.post(
        "/simulator/v1/import", params={"unbind": "true", "mode": "replace"}, content=json.dumps(snap)
    )
    assert r.status_code == 200, r.text
    claim = (await target.get(f"{RES}/namespaces/ml/resourceclaims/train-gpu-x7k2p")).json()
    assert claim["status"] == {}


async def test_reset_removes_dra_objects_added_since_the_start(source: httpx.AsyncClient) -> None:
    await _load(source)
    r = await source.post("/simulator/v1/reset")
    assert r.status_code == 200, r.text
    for plural in ("deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates"):
        assert (await source.get(f"{RES}/{plural}")).json()["items"] == [], plural
    assert (await source.get("/api/v1/namespaces/default")).status_code == 200
