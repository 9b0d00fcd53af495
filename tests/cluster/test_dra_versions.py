"""resource.k8s.io/v1beta1 and v1beta2 served over the stored v1 DRA objects, as each release's kube-apiserver
serves them: which versions a release has and enables (``--runtime-config``), and the conversions both ways
(v1beta1's flat requests and ``basic`` devices), through create, read, list, patch, the status subresource and
Tables, in process."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from pydantic import ValidationError

from kss_sim.cluster.api import dra_versions, protobuf_codec
from kss_sim.cluster.api.protobuf import PROTOBUF, PROTOBUF_STREAM
from kss_sim.config import Settings
from kss_sim.kube.api_enablement import api_enabled, check_runtime_config, parse_runtime_config
from kss_sim.main import create_app
from tests.conftest import asgi_client

GROUP = "/apis/resource.k8s.io"
BETAS = "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true"

V1_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "gpus", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [
                {"name": "one", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount"}},
                {"name": "any", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.example.com"}]},
            ]
        }
    },
}
V1BETA1_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceClaim",
    "metadata": {"name": "gpus", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [
                {"name": "one", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount"},
                {"name": "any", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.example.com"}]},
            ]
        }
    },
}
# The claim as the server keeps it: defaulted (count 1 for ExactCount, as upstream's defaults).
V1BETA1_DEFAULTED_SPEC = {
    "devices": {
        "requests": [
            {"name": "one", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1},
            {
                "name": "any",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}
                ],
            },
        ]
    }
}
V1BETA1_SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpus"},
    "spec": {
        "driver": "gpu.example.com",
        "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "basic": {"attributes": {"model": {"string": "A100"}}, "capacity": {"memory": {"value": "40Gi"}}},
            }
        ],
    },
}
V1BETA1_CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}


# --- which versions a release serves ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("minor", "config", "served"),
    [
        (33, {}, []),
        (33, {"resource.k8s.io/v1beta1": "true"}, ["v1beta1"]),
        (33, {"api/beta": "true"}, ["v1beta2", "v1beta1"]),
        (33, {"api/all": "true", "resource.k8s.io/v1beta2": "false"}, ["v1beta1"]),
        (34, {}, ["v1"]),
        (35, {"resource.k8s.io/v1beta1": ""}, ["v1", "v1beta1"]),
        (36, {"api/ga": "false"}, []),
        (36, {"resource.k8s.io/v1beta2/resourceclaims": "true"}, ["v1"]),  # one resource of v1beta2, not the rest
    ],
)
def test_each_release_serves_its_resource_versions_and_the_runtime_config_changes_them(
    minor: int, config: dict[str, str], served: list[str]
) -> None:
    check_runtime_config(config, minor)
    versions = ["v1", "v1beta2", "v1beta1"]
    assert [v for v in versions if api_enabled("resource.k8s.io", v, "deviceclasses", minor, config)] == served
    assert api_enabled("resource.k8s.io", "v1", "deviceclasses", 33, {"api/all": "true"}) is False  # not in 1.33


def test_a_resource_key_serves_that_resource_alone() -> None:
    config = {"resource.k8s.io/v1beta2/resourceclaims": "true"}
    assert api_enabled("resource.k8s.io", "v1beta2", "resourceclaims", 35, config)
    assert not api_enabled("resource.k8s.io", "v1beta2", "deviceclasses", 35, config)


@pytest.mark.parametrize(
    ("text", "minor", "message"),
    [
        (
            "resource.k8s.io/v1beta1=maybe",
            35,
            'invalid value of resource.k8s.io/v1beta1: maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
        ),
        ("api/beta=yes", 35, "invalid value api/beta=yes"),
        ("resource.k8s.io/v1=true", 33, "group version resource.k8s.io/v1 that has not been registered"),
        ("resource.k8s.io/v2=true", 36, "group version resource.k8s.io/v2 that has not been registered"),
        (
            "resource.k8s.io/v1beta1/DeviceClasses=true",
            35,
            "invalid key resource.k8s.io/v1beta1/DeviceClasses: group/version/resource and resource is always "
            'lowercase plural, not "DeviceClasses"',
        ),
    ],
)
def test_bad_runtime_config_is_refused_in_kube_apiserver_s_words(text: str, minor: int, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        check_runtime_config(parse_runtime_config(text), minor)
    assert str(raised.value) == message
    version = {33: "1.33", 35: "1.35", 36: "1.36"}[minor]
    with pytest.raises(ValidationError, match="runtime_config"):
        Settings(kube_version=version, runtime_config=text)


def test_a_registered_group_version_kss_does_not_serve_is_accepted() -> None:
    check_runtime_config(parse_runtime_config("flowcontrol.apiserver.k8s.io/v1beta3=true,/v1"), 33)


# --- conversions ---------------------------------------------------------------------------------------------


def test_v1beta1_requests_are_flat_and_devices_basic_and_convert_back_unchanged() -> None:
    (beta1,) = (c for c in dra_versions.CONVERSIONS if c.view.version == "v1beta1" and c.view.kind == "ResourceClaim")
    original = copy.deepcopy(V1_CLAIM)
    assert beta1.to_view(V1_CLAIM) == V1BETA1_CLAIM
    assert original == V1_CLAIM  # the stored object is not changed
    assert beta1.to_stored(V1BETA1_CLAIM) == V1_CLAIM
    # A request with none of exactly's fields set (Go's zero values) has no exactly in v1.
    empty = {"name": "x", "count": 0, "deviceClassName": "", "firstAvailable": []}
    claim = {**V1BETA1_CLAIM, "spec": {"devices": {"requests": [empty]}}}
    assert beta1.to_stored(claim)["spec"]["devices"]["requests"] == [{"name": "x", "firstAvailable": []}]
    (slices,) = (c for c in dra_versions.CONVERSIONS if c.view.version == "v1beta1" and c.view.kind == "ResourceSlice")
    stored = slices.to_stored(V1BETA1_SLICE)
    assert stored["spec"]["devices"] == [
        {"name": "gpu-0", "attributes": {"model": {"string": "A100"}}, "capacity": {"memory": {"value": "40Gi"}}}
    ]
    assert slices.to_view(stored) == V1BETA1_SLICE
    # A device with nothing but its name still has a basic part in v1beta1.
    bare = {**stored, "spec": {**stored["spec"], "devices": [{"name": "gpu-1"}]}}
    assert slices.to_view(bare)["spec"]["devices"] == [{"name": "gpu-1", "basic": {}}]


def test_v1beta1_template_requests_are_flat_too() -> None:
    (templates,) = (
        c for c in dra_versions.CONVERSIONS if c.view.version == "v1beta1" and c.view.kind == "ResourceClaimTemplate"
    )
    v1 = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu"},
        "spec": {"spec": V1_CLAIM["spec"]},
    }
    view = templates.to_view(v1)
    assert view["spec"]["spec"] == V1BETA1_CLAIM["spec"]
    assert templates.to_stored(view) == v1


# --- served over HTTP ----------------------------------------------------------------------------------------


async def _app(tmp_path: Path, version: str, runtime_config: str = "") -> AsyncIterator[FastAPI]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        scheduler_enabled=False,
        controllers=False,
        kubelet=False,
        kube_version=version,
        runtime_config=runtime_config,
        # Off by default in v1.33 (beta, and alpha for the prioritized list the claims' second request uses).
        feature_gates={"DynamicResourceAllocation": True, "DRAPrioritizedList": True} if version == "1.33" else {},
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def v133(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async for application in _app(tmp_path, "1.33", BETAS):
        async with asgi_client(application) as client:
            yield client


async def test_at_1_33_the_betas_are_served_when_enabled_and_v1_is_not(v133: httpx.AsyncClient) -> None:
    group = (await v133.get(GROUP)).json()
    assert [v["version"] for v in group["versions"]] == ["v1beta2", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1beta2"
    assert (await v133.get(f"{GROUP}/v1")).status_code == 404
    assert (await v133.get(f"{GROUP}/v1/deviceclasses")).status_code == 404
    resources = (await v133.get(f"{GROUP}/v1beta1")).json()["resources"]
    assert {r["name"] for r in resources} == {
        "deviceclasses",
        "resourceslices",
        "resourceclaims",
        "resourceclaims/status",
        "resourceclaimtemplates",
    }
    paths = (await v133.get("/openapi/v3")).json()["paths"]
    assert "apis/resource.k8s.io/v1beta1" in paths and "apis/resource.k8s.io/v1" not in paths
    # Aggregated discovery (kubectl's and client-go's first choice) says the same.
    aggregated = await v133.get(
        "/apis", headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}
    )
    (entry,) = [item for item in aggregated.json()["items"] if item["metadata"]["name"] == "resource.k8s.io"]
    assert [v["version"] for v in entry["versions"]] == ["v1beta2", "v1beta1"]


async def test_v1beta1_objects_are_stored_in_v1_and_read_in_the_version_asked(v133: httpx.AsyncClient) -> None:
    for body, path in (
        (V1BETA1_CLASS, "deviceclasses"),
        (V1BETA1_SLICE, "resourceslices"),
        (V1BETA1_CLAIM, "namespaces/default/resourceclaims"),
    ):
        created = await v133.post(f"{GROUP}/v1beta1/{path}", json=body)
        assert created.status_code == 201, created.text
        assert created.json()["apiVersion"] == "resource.k8s.io/v1beta1"
    claim = (await v133.get(f"{GROUP}/v1beta1/namespaces/default/resourceclaims/gpus")).json()
    assert claim["spec"] == V1BETA1_DEFAULTED_SPEC
    claim2 = (await v133.get(f"{GROUP}/v1beta2/namespaces/default/resourceclaims/gpus")).json()
    assert claim2["apiVersion"] == "resource.k8s.io/v1beta2"
    assert claim2["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"
    slices = (await v133.get(f"{GROUP}/v1beta1/resourceslices")).json()
    assert slices["kind"] == "ResourceSliceList" and slices["apiVersion"] == "resource.k8s.io/v1beta1"
    assert slices["items"][0]["spec"]["devices"] == V1BETA1_SLICE["spec"]["devices"]
    table = await v133.get(
        f"{GROUP}/v1beta1/resourceslices", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    assert table.json()["rows"][0]["cells"][0] == "node-1-gpus"


async def test_a_v1beta1_merge_patch_and_status_write_are_converted(v133: httpx.AsyncClient) -> None:
    assert (await v133.post(f"{GROUP}/v1beta1/namespaces/default/resourceclaims", json=V1BETA1_CLAIM)).is_success
    claim_path = f"{GROUP}/v1beta1/namespaces/default/resourceclaims/gpus"
    patched = await v133.patch(
        claim_path,
        json={"metadata": {"labels": {"team": "ml"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["labels"] == {"team": "ml"}
    assert patched.json()["spec"] == V1BETA1_DEFAULTED_SPEC
    current = patched.json()
    current["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "one", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
                    {"request": "any/big", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-1"},
                ]
            }
        }
    }
    written = await v133.put(f"{claim_path}/status", json=current)
    assert written.status_code == 200, written.text
    results = written.json()["status"]["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == ["gpu-0", "gpu-1"]


async def test_v1_fields_in_a_v1beta1_body_are_unknown_there(v133: httpx.AsyncClient) -> None:
    body = copy.deepcopy(V1BETA1_CLAIM)
    body["spec"]["devices"]["requests"][0] = {"name": "one", "exactly": {"deviceClassName": "gpu.example.com"}}
    refused = await v133.post(f"{GROUP}/v1beta1/namespaces/default/resourceclaims?fieldValidation=Strict", json=body)
    assert refused.status_code == 400
    assert 'unknown field "spec.devices.requests[0].exactly"' in refused.json()["message"]


async def test_at_1_33_without_the_runtime_config_no_dra_version_is_served(tmp_path: Path) -> None:
    async for application in _app(tmp_path, "1.33"):
        async with asgi_client(application) as client:
            assert (await client.get(GROUP)).status_code == 404
            assert (await client.post(f"{GROUP}/v1beta1/deviceclasses", json=V1BETA1_CLASS)).status_code == 404


async def test_at_1_35_the_betas_are_served_only_when_enabled(tmp_path: Path) -> None:
    async for application in _app(tmp_path, "1.35"):
        async with asgi_client(application) as client:
            assert [v["version"] for v in (await client.get(GROUP)).json()["versions"]] == ["v1"]
            assert (await client.post(f"{GROUP}/v1beta1/deviceclasses", json=V1BETA1_CLASS)).status_code == 404
    async for application in _app(tmp_path, "1.35", "api/beta=true"):
        async with asgi_client(application) as client:
            group = (await client.get(GROUP)).json()
            assert [v["version"] for v in group["versions"]] == ["v1", "v1beta2", "v1beta1"]
            assert group["preferredVersion"]["version"] == "v1"
            assert (await client.post(f"{GROUP}/v1beta1/deviceclasses", json=V1BETA1_CLASS)).status_code == 201
            stored = (await client.get(f"{GROUP}/v1/deviceclasses/gpu.example.com")).json()
            assert stored["apiVersion"] == "resource.k8s.io/v1"


async def test_server_side_apply_and_json_patch_in_the_beta_versions(v133: httpx.AsyncClient) -> None:
    applied = await v133.patch(
        f"{GROUP}/v1beta1/resourceslices/node-1-gpus?fieldManager=driver",
        json=V1BETA1_SLICE,
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert applied.status_code == 201, applied.text
    assert applied.json()["spec"]["devices"] == V1BETA1_SLICE["spec"]["devices"]
    # v1beta2 has v1's fields: a JSON patch at a device's attribute is v1's path as it is.
    patch = [{"op": "replace", "path": "/spec/devices/0/attributes/model/string", "value": "H100"}]
    patched = await v133.patch(
        f"{GROUP}/v1beta2/resourceslices/node-1-gpus",
        json=patch,
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["spec"]["devices"][0]["attributes"]["model"] == {"string": "H100"}
    # In v1beta1 the same attribute sits under basic.
    patch = [{"op": "replace", "path": "/spec/devices/0/basic/attributes/model/string", "value": "B200"}]
    patched = await v133.patch(
        f"{GROUP}/v1beta1/resourceslices/node-1-gpus",
        json=patch,
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["spec"]["devices"][0]["basic"]["attributes"]["model"] == {"string": "B200"}


async def test_a_v1beta1_watch_sees_v1beta1_objects(v133: httpx.AsyncClient) -> None:
    listed = (await v133.get(f"{GROUP}/v1beta1/resourceslices")).json()
    version = listed["metadata"]["resourceVersion"]
    assert (await v133.post(f"{GROUP}/v1beta1/resourceslices", json=V1BETA1_SLICE)).status_code == 201
    async with v133.stream(
        "GET", f"{GROUP}/v1beta1/resourceslices?watch=true&resourceVersion={version}&timeoutSeconds=1"
    ) as watched:
        async for line in watched.aiter_lines():
            if line.strip():
                event = orjson.loads(line)
                break
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "resource.k8s.io/v1beta1"
    assert event["object"]["spec"]["devices"] == V1BETA1_SLICE["spec"]["devices"]


async def test_the_beta_versions_openapi_documents_describe_their_own_types(v133: httpx.AsyncClient) -> None:
    beta1 = (await v133.get("/openapi/v3/apis/resource.k8s.io/v1beta1")).json()["components"]["schemas"]
    request = beta1["io.k8s.api.DeviceRequest"]["properties"]
    assert "deviceClassName" in request and "exactly" not in request
    assert "basic" in beta1["io.k8s.api.Device"]["properties"]
    beta2 = (await v133.get("/openapi/v3/apis/resource.k8s.io/v1beta2")).json()["components"]["schemas"]
    assert "exactly" in beta2["io.k8s.api.DeviceRequest"]["properties"]
    kinds = {gvk["kind"] for s in beta2.values() for gvk in s.get("x-kubernetes-group-version-kind", [])}
    assert kinds == {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"}


def test_a_file_of_v1beta1_objects_is_read_into_v1_by_the_commands_that_serve_no_api() -> None:
    from kss_sim.operations import snapshot

    text = "\n---\n".join(orjson.dumps(o).decode() for o in (V1BETA1_CLAIM, V1BETA1_SLICE, V1BETA1_CLASS))
    parsed = snapshot.parse(text)
    assert not parsed.errors
    claim, slice_, device_class = (item.obj for item in parsed.items)
    assert claim == V1_CLAIM
    assert slice_["apiVersion"] == "resource.k8s.io/v1" and "basic" not in slice_["spec"]["devices"][0]
    assert device_class["apiVersion"] == "resource.k8s.io/v1"


async def test_a_protobuf_client_reads_and_writes_the_betas_in_their_own_protobuf_form(
    v133: httpx.AsyncClient,
) -> None:
    # client-go's typed clients (a v1.33 kube-scheduler's informers) put protobuf first and JSON second; a v1.33
    # client writes its v1beta1/v1beta2 objects in protobuf (k8s.io/api/resource/v1beta1 and v1beta2 messages).
    accept = {"Accept": "application/vnd.kubernetes.protobuf, application/json"}
    encoded = protobuf_codec.encode(V1BETA1_SLICE)
    assert encoded is not None
    created = await v133.post(
        f"{GROUP}/v1beta1/resourceslices", content=encoded, headers={**accept, "content-type": PROTOBUF}
    )
    assert created.status_code == 201, created.text
    assert created.headers["content-type"] == PROTOBUF
    api_version, kind, body = protobuf_codec.decode(created.content)
    assert (api_version, kind) == ("resource.k8s.io/v1beta1", "ResourceSlice")
    assert body["spec"]["devices"] == V1BETA1_SLICE["spec"]["devices"]
    listed = await v133.get(f"{GROUP}/v1beta1/resourceslices", headers=accept)
    assert listed.headers["content-type"] == PROTOBUF
    api_version, kind, items = protobuf_codec.decode(listed.content)
    assert (api_version, kind) == ("resource.k8s.io/v1beta1", "ResourceSliceList")
    assert items["items"][0]["spec"]["devices"] == V1BETA1_SLICE["spec"]["devices"]
    # The same object read as v1beta2: v1's shape (no basic), in v1beta2's protobuf message.
    beta2 = await v133.get(f"{GROUP}/v1beta2/resourceslices/node-1-gpus", headers=accept)
    api_version, kind, body = protobuf_codec.decode(beta2.content)
    assert (api_version, kind) == ("resource.k8s.io/v1beta2", "ResourceSlice")
    assert body["spec"]["devices"][0] == {
        "name": "gpu-0",
        "attributes": {"model": {"string": "A100"}},
        "capacity": {"memory": {"value": "40Gi"}},
    }
    async with v133.stream(
        "GET", f"{GROUP}/v1beta1/resourceslices?watch=true&resourceVersion=0&timeoutSeconds=1", headers=accept
    ) as watched:
        assert watched.headers["content-type"].startswith(PROTOBUF_STREAM)
        frames = b"".join([chunk async for chunk in watched.aiter_bytes()])
    size = int.from_bytes(frames[:4], "big")
    event_type, obj = protobuf_codec.decode_watch_event(frames[4 : 4 + size])
    assert (event_type, obj["apiVersion"]) == ("ADDED", "resource.k8s.io/v1beta1")
    assert obj["spec"]["devices"] == V1BETA1_SLICE["spec"]["devices"]
