"""Aggregated discovery (apidiscovery.k8s.io/v2) on ``/api`` and ``/apis``, as kube-apiserver answers the
``Accept`` client-go sends first: the document's shape, its ETag and 304, the fallbacks, CRDs coming and going,
the served set following the version and gates; then the real kubectl and the official client reading it."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import kubernetes
import pytest
from fastapi import FastAPI

from kss_sim.cluster.api import protobuf_codec
from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.test_custom_resources import CLUSTER_QUEUE_CRD, CRDS
from tests.conftest import KUBECTL, KubectlRunner, Server

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
# What client-go's discovery client sends (discovery_client.go's acceptDiscoveryFormats).
CLIENT_GO_ACCEPT = f"{V2},{V2BETA1},application/json"


def _versions(doc: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{group: {version: {resource: entry}}}`` of an APIGroupDiscoveryList."""
    return {
        item["metadata"].get("name", ""): {
            v["version"]: {r["resource"]: r for r in v["resources"]} for v in item["versions"]
        }
        for item in doc["items"]
    }


def _subresources(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["subresource"]: s for s in entry.get("subresources", [])}


async def test_api_answers_the_core_group_as_an_aggregated_document(client: httpx.AsyncClient) -> None:
    answer = await client.get("/api", headers={"Accept": CLIENT_GO_ACCEPT})
    assert answer.status_code == 200
    assert answer.headers["content-type"] == V2
    doc = answer.json()
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    assert [item["metadata"] for item in doc["items"]] == [{}]  # the core group has no name
    (version,) = doc["items"][0]["versions"]
    assert version["version"] == "v1" and version["freshness"] == "Current"
    core = _versions(doc)[""]["v1"]
    pods = core["pods"]
    assert pods["responseKind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert pods["scope"] == "Namespaced" and pods["singularResource"] == "pod"
    assert pods["shortNames"] == ["po"] and pods["categories"] == ["all"]
    assert pods["verbs"] == ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    subs = _subresources(pods)
    assert subs["binding"] == {
        "subresource": "binding",
        "responseKind": {"group": "", "version": "v1", "kind": "Binding"},
        "verbs": ["create"],
    }
    assert subs["eviction"]["responseKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert subs["status"]["verbs"] == ["get", "patch", "update"]
    assert subs["exec"]["responseKind"]["kind"] == "PodExecOptions"
    assert core["nodes"]["scope"] == "Cluster"
    # Namespaces have no deletecollection, as in the per-version list.
    assert "deletecollection" not in core["namespaces"]["verbs"]
    # No "pods/binding" resource of its own: subresources live under their parent.
    assert not [name for name in core if "/" in name]


async def test_apis_lists_every_named_group_with_the_per_version_lists_resources(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/apis", headers={"Accept": CLIENT_GO_ACCEPT})).json()
    groups = _versions(doc)
    legacy = (await client.get("/apis")).json()["groups"]
    # The same groups in the same order, each group's versions preferred first.
    assert [item["metadata"]["name"] for item in doc["items"]] == [g["name"] for g in legacy]
    for group in legacy:
        assert list(groups[group["name"]]) == [v["version"] for v in group["versions"]]
        for version in group["versions"]:
            plain = (await client.get(f"/apis/{version['groupVersion']}")).json()["resources"]
            tops = [r["name"] for r in plain if "/" not in r["name"]]
            assert list(groups[group["name"]][version["version"]]) == tops, version["groupVersion"]
    deployments = groups["apps"]["v1"]["deployments"]
    assert deployments["responseKind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert _subresources(deployments)["scale"]["responseKind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }
    assert groups["storage.k8s.io"]["v1"]["storageclasses"]["shortNames"] == ["sc"]


async def test_the_etag_turns_a_repeated_request_into_a_304(client: httpx.AsyncClient) -> None:
    first = await client.get("/apis", headers={"Accept": V2})
    etag = first.headers["etag"]
    assert re.fullmatch(r'"[0-9A-F]{128}"', etag)  # SHA-512, upper-case hex, quoted
    assert first.headers["vary"] == "Accept" and first.headers["cache-control"] == "public"
    again = await client.get("/apis", headers={"Accept": V2, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    stale = await client.get("/apis", headers={"Accept": V2, "If-None-Match": '"0"'})
    assert stale.status_code == 200 and stale.headers["etag"] == etag
    # /api has its own document and ETag.
    assert (await client.get("/api", headers={"Accept": V2})).headers["etag"] != etag


async def test_a_crd_appears_and_disappears_and_changes_the_etag(client: httpx.AsyncClient) -> None:
    before = await client.get("/apis", headers={"Accept": V2})
    assert "kueue.example.com" not in _versions(before.json())
    created = await client.post(CRDS, json=CLUSTER_QUEUE_CRD)
    assert created.status_code == 201, created.text
    after = await client.get("/apis", headers={"Accept": V2, "If-None-Match": before.headers["etag"]})
    assert after.status_code == 200 and after.headers["etag"] != before.headers["etag"]
    queues = _versions(after.json())["kueue.example.com"]["v1beta1"]["clusterqueues"]
    assert queues["responseKind"] == {"group": "kueue.example.com", "version": "v1beta1", "kind": "ClusterQueue"}
    assert queues["scope"] == "Cluster" and queues["shortNames"] == ["cq"] and queues["categories"] == ["kueue"]
    assert list(_subresources(queues)) == ["status"]
    # The CRD groups come after the built-in ones, as their lower group priority puts them.
    assert after.json()["items"][-1]["metadata"]["name"] == "kueue.example.com"
    deleted = await client.delete(f"{CRDS}/clusterqueues.kueue.example.com")
    assert deleted.status_code == 200, deleted.text
    gone = await client.get("/apis", headers={"Accept": V2})
    assert "kueue.example.com" not in _versions(gone.json())
    assert gone.headers["etag"] == before.headers["etag"]


@pytest.mark.parametrize(
    "accept",
    [
        "application/json",
        "*/*",
        "",
        # Plain protobuf: the unaggregated lists are served in JSON, so the next entry is used.
        "application/vnd.kubernetes.protobuf,application/json",
        # A transformation discovery does not serve (a Table) is skipped too.
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList",
    ],
)
async def test_other_accepts_get_the_unaggregated_lists(client: httpx.AsyncClient, accept: str) -> None:
    answer = await client.get("/apis", headers={"Accept": accept} if accept else {})
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["kind"] == "APIGroupList" and "etag" not in answer.headers
    assert (await client.get("/api", headers={"Accept": accept} if accept else {})).json()["kind"] == "APIVersions"


async def test_newer_client_gos_nopeer_profile_gets_the_v2_document(client: httpx.AsyncClient) -> None:
    # client-go v1.35 asks for the document without peer-aggregated resources first; kss has no peers.
    answer = await client.get("/apis", headers={"Accept": f"{V2};profile=nopeer,{CLIENT_GO_ACCEPT}"})
    assert answer.headers["content-type"] == V2 and answer.json()["apiVersion"] == "apidiscovery.k8s.io/v2"


@pytest.mark.parametrize("path", ["/apis", "/api"])
async def test_the_document_in_protobuf_is_the_json_one(client: httpx.AsyncClient, path: str) -> None:
    # As kube-apiserver's codec factory serves it: the apidiscovery messages in the k8s\x00 envelope, the media
    # type naming the group, version and kind; the same ETag as the JSON answer's.
    version = "v2"
    protobuf = f"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    json_type = protobuf.replace("application/vnd.kubernetes.protobuf", "application/json")
    answer = await client.get(path, headers={"Accept": f"{protobuf},{V2}"})
    assert answer.status_code == 200
    assert answer.headers["content-type"] == protobuf
    assert answer.content.startswith(b"k8s\x00")
    api_version, kind, decoded = protobuf_codec.decode(answer.content)
    assert (api_version, kind) == (f"apidiscovery.k8s.io/{version}", "APIGroupDiscoveryList")
    as_json = await client.get(path, headers={"Accept": json_type})
    assert as_json.headers["content-type"] == json_type
    assert {"apiVersion": api_version, "kind": kind, **decoded} == as_json.json()
    assert answer.headers["etag"] == as_json.headers["etag"]
    cached = await client.get(path, headers={"Accept": protobuf, "If-None-Match": answer.headers["etag"]})
    assert cached.status_code == 304


@pytest.fixture
async def app_at(tmp_path: Path) -> AsyncIterator[Any]:
    """A factory of applications at a Kubernetes version and feature gates (lifespan run, scheduler off)."""
    started: list[Any] = []

    async def start(version: str, gates: dict[str, bool], runtime_config: str = "api/alpha=true") -> FastAPI:
        application = create_app(
            Settings(
                database_url=f"sqlite:///{tmp_path / f'kss-{len(started)}.db'}",
                kube_version=version,
                feature_gates=gates,
                runtime_config=runtime_config,
                scheduler_enabled=False,
                controllers=False,
                kubelet=False,
            )
        )
        context = application.router.lifespan_context(application)
        await context.__aenter__()
        started.append(context)
        return application

    yield start
    for context in reversed(started):
        await context.__aexit__(None, None, None)


async def _aggregated(application: FastAPI, accept: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
        return await c.get("/apis", headers={"Accept": accept})


async def test_the_served_set_follows_the_kube_version_and_gates(app_at: Any) -> None:
    default = _versions((await _aggregated(await app_at("1.35", {}), V2)).json())
    assert list(default["scheduling.k8s.io"]) == ["v1"]
    workloads = _versions((await _aggregated(await app_at("1.35", {"GenericWorkload": True}), V2)).json())
    assert list(workloads["scheduling.k8s.io"]) == ["v1", "v1alpha1"]
    assert "workloads" in workloads["scheduling.k8s.io"]["v1alpha1"]
    v136 = _versions((await _aggregated(await app_at("1.36", {"GenericWorkload": True}), V2)).json())
    assert list(v136["scheduling.k8s.io"]) == ["v1", "v1alpha2"]
    # The gate alone is not enough: an alpha API is off until --runtime-config enables it.
    gate_only = _versions((await _aggregated(await app_at("1.36", {"GenericWorkload": True}, ""), V2)).json())
    assert list(gate_only["scheduling.k8s.io"]) == ["v1"]


async def test_v2beta1_is_served_only_while_the_remove_beta_gate_is_off(app_at: Any) -> None:
    # v1.33 to v1.35 default AggregatedDiscoveryRemoveBetaType on: v2beta1 alone gets the plain list.
    on = await _aggregated(await app_at("1.34", {}), V2BETA1)
    assert on.json()["kind"] == "APIGroupList"
    off = await _aggregated(await app_at("1.34", {"AggregatedDiscoveryRemoveBetaType": False}), V2BETA1)
    assert off.headers["content-type"] == V2BETA1
    assert off.json()["apiVersion"] == "apidiscovery.k8s.io/v2beta1" and off.json()["items"]
    in_protobuf = await _aggregated(
        await app_at("1.34", {"AggregatedDiscoveryRemoveBetaType": False}),
        V2BETA1.replace("json", "vnd.kubernetes.protobuf"),
    )
    assert in_protobuf.headers["content-type"] == V2BETA1.replace("json", "vnd.kubernetes.protobuf")
    assert protobuf_codec.decode(in_protobuf.content)[2] == {
        k: v for k, v in off.json().items() if k not in ("apiVersion", "kind")
    }
    # Asked for both, v2 first, v2 wins.
    both = await _aggregated(await app_at("1.33", {"AggregatedDiscoveryRemoveBetaType": False}), CLIENT_GO_ACCEPT)
    assert both.json()["apiVersion"] == "apidiscovery.k8s.io/v2"
    # Locked on from v1.35, as kube refuses to turn it off.
    with pytest.raises(ValueError, match="locked to true"):
        Settings(kube_version="1.35", feature_gates={"AggregatedDiscoveryRemoveBetaType": False})


kubectl_installed = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

CRD_YAML = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.aggregated.kss.example}
spec:
  group: aggregated.kss.example
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wdg], categories: [gadgets]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
"""


def _gets(stderr: str) -> list[str]:
    """The paths kubectl's ``-v=6`` log says it GET."""
    return [m[1] for m in re.finditer(r"GET http://[^/]+(/\S*?)(?:\?\S*)? \d{3}", stderr)]


@kubectl_installed
def test_kubectl_discovers_everything_with_two_requests(kubectl: KubectlRunner, tmp_path: Path) -> None:
    # A fresh discovery cache: kubectl asks /api and /apis for the aggregated document and nothing else (with the
    # per-version lists it would GET every group version).
    cache = tmp_path / "cache"
    listed = kubectl("api-resources", f"--cache-dir={cache}", "-v=6")
    assert _gets(listed.stderr) == ["/api", "/apis"], listed.stderr
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:]}
    assert rows["pods"][1:] == ["po", "v1", "true", "Pod"]
    assert rows["deployments"][1:] == ["deploy", "apps/v1", "true", "Deployment"]


@kubectl_installed
def test_kubectl_finds_a_new_crds_kind_through_aggregated_discovery(kubectl: KubectlRunner, tmp_path: Path) -> None:
    cache = f"--cache-dir={tmp_path / 'cache'}"
    kubectl("api-resources", cache)  # the cache now holds a document without the kind
    kubectl("apply", "-f", "-", input=CRD_YAML)
    try:
        kubectl("wait", "--for", "condition=Established", "crd/widgets.aggregated.kss.example", "--timeout=30s")
        kubectl("create", "namespace", "widgets", check=False)
        applied = kubectl(
            "apply",
            cache,
            "-v=6",
            "-f",
            "-",
            input="apiVersion: aggregated.kss.example/v1\nkind: Widget\n"
            "metadata: {name: w1, namespace: widgets}\nspec: {size: 3}\n",
        )
        # The kind was not in the cached document: kubectl invalidated it and read the aggregated one again
        # rather than the group version's own list.
        gets = _gets(applied.stderr)
        assert "/apis" in gets and "/apis/aggregated.kss.example/v1" not in gets, applied.stderr
        got = kubectl("get", "wdg", "-n", "widgets", cache)
        assert got.stdout.split()[:2] == ["NAME", "AGE"] and "w1" in got.stdout
        by_category = kubectl("get", "gadgets", "-n", "widgets", "-o", "name", cache)
        assert by_category.stdout.strip() == "widget.aggregated.kss.example/w1"
    finally:
        kubectl("delete", "crd", "widgets.aggregated.kss.example", "--wait=false", check=False)
    gone = kubectl("api-resources", "--api-group=aggregated.kss.example", cache, "-v=6")
    assert "widgets" not in gone.stdout


def _official_discovery(api: kubernetes.client.ApiClient, path: str) -> Any:
    """``path``'s aggregated document through the official client's own request and deserialization."""
    method, url, headers, _body, _post = api.param_serialize("GET", path, header_params={"Accept": V2})
    answer = api.call_api(method, url, header_params=headers)
    answer.read()
    assert answer.status == 200 and answer.headers["content-type"] == V2
    return api.response_deserialize(answer, {"200": "V2APIGroupDiscoveryList"}).data


def test_the_official_client_decodes_the_document_into_its_models(server: Server) -> None:
    configuration = kubernetes.client.Configuration()
    configuration.host = server.url
    with kubernetes.client.ApiClient(configuration) as api:
        doc = _official_discovery(api, "/apis")
        core = _official_discovery(api, "/api")
    assert isinstance(doc, kubernetes.client.V2APIGroupDiscoveryList)
    apps = next(item for item in doc.items if item.metadata.name == "apps")
    resources = {r.resource: r for r in apps.versions[0].resources}
    assert resources["deployments"].response_kind.kind == "Deployment"
    assert resources["deployments"].scope == "Namespaced"
    assert {s.subresource for s in resources["deployments"].subresources} == {"status", "scale"}
    pods = next(r for r in core.items[0].versions[0].resources if r.resource == "pods")
    assert pods.singular_resource == "pod" and pods.short_names == ["po"]


@pytest.mark.parametrize("version", ["1.33", "1.36"])
async def test_the_openapi_documents_name_the_emulation_version(app_at: Any, version: str) -> None:
    # kube-apiserver fills info.version with its emulation version (major.minor) since v1.31, as a real v1.36 shows.
    transport = httpx.ASGITransport(app=await app_at(version, {}))
    async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
        v3 = (await c.get("/openapi/v3/api/v1")).json()
        v2 = (await c.get("/openapi/v2")).json()
        proto = await c.get(
            "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
        )
    assert v3["info"] == {"title": "Kubernetes", "version": version}
    assert v2["info"] == {"title": "Kubernetes", "version": version}
    assert proto.content.endswith(b"\x12" + bytes([len(version)]) + version.encode())  # Info.version, field 2
