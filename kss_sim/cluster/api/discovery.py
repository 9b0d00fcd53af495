"""API discovery: ``/version``, health probes, ``/api``, ``/apis``, each group version's resource list and the
OpenAPI documents, as kube-apiserver answers them (kubectl and the official client read these before any request)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kss_sim.cluster.api import aggregated_discovery, containers, openapi
from kss_sim.cluster.api.responses import JSON, authorize, json_response, raw_response
from kss_sim.cluster.crd.kinds import CustomKindInfo
from kss_sim.cluster.errors import UnknownResource
from kss_sim.cluster.kinds.registry import VERBS, Gates, KindInfo, group_versions, kinds_in
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.kube.api_enablement import NO_RUNTIME_CONFIG, RuntimeConfig
from kss_sim.kube.versions import gate_enabled
from kss_sim.state import state_accessor

router = APIRouter()
_settings = state_accessor("settings", Settings)
_store = state_accessor("store", ClusterStore)


def _gates(request: Request) -> Gates:
    """The feature gates the server runs with, its version's defaults included (what it serves depends on them)."""
    return _settings(request).effective_feature_gates


def _minor(request: Request) -> int:
    """The Kubernetes minor version the server runs as (what it serves depends on it too)."""
    return _settings(request).version.minor


def _apis(request: Request) -> RuntimeConfig:
    """The server's ``--runtime-config`` (the group versions it serves depend on it too)."""
    return _settings(request).runtime_config


# Subresources served with the object's own verbs (binding is create-only and listed on its own).
STATUS_SUBRESOURCES = {"status"}
FINALIZE = "finalize"  # namespaces/finalize: spec.finalizers' own update (FinalizeREST)


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _version_priority(version: str) -> tuple[int, int, int, str]:
    """kube's version priority (``v2`` > ``v1`` > ``v1beta2`` > ``v1beta1`` > ``v1alpha1`` > anything else, by
    name), as a sort key: what a CRD group's preferred version is."""
    match = _VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[match[2]]
    return (stage, -int(match[1]), -int(match[3] or 0), version)


def _custom(request: Request) -> list[CustomKindInfo]:
    return _store(request).custom_kinds().served()


def _all_group_versions(
    gates: Gates, minor: int, custom: list[CustomKindInfo], apis: RuntimeConfig = NO_RUNTIME_CONFIG
) -> dict[str, list[str]]:
    """The built-in groups' versions, then the CRDs' groups (each group's versions by kube's priority)."""
    out = group_versions(gates, minor, apis)
    extra: dict[str, set[str]] = {}
    for info in custom:
        if info.group not in out:
            extra.setdefault(info.group, set()).add(info.version)
    for group in sorted(extra):
        out[group] = sorted(extra[group], key=_version_priority)
    return out


def _resource_list(
    group: str,
    version: str,
    gates: Gates,
    minor: int,
    custom: list[CustomKindInfo] | None = None,
    apis: RuntimeConfig = NO_RUNTIME_CONFIG,
) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    served: list[KindInfo] = kinds_in(group, version, gates, minor, apis)
    served += [c for c in custom or [] if c.group == group and c.version == version]
    for info in served:
        entry: dict[str, Any] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.api_kind,
            # Namespaces have no deletecollection in kube-apiserver (the router answers 405).
            "verbs": ["create"]
            if info.review
            else [v for v in VERBS if v != "deletecollection"]
            if info.kind == "Namespace"
            else VERBS,
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        resources.append(entry)
        for sub in info.subresources:
            if sub == "binding":
                resources.append(
                    {
                        "name": f"{info.plural}/binding",
                        "singularName": "",
                        "namespaced": True,
                        "kind": "Binding",
                        "verbs": ["create"],
                    }
                )
            elif sub == "eviction":
                # Served as policy/v1 Eviction (EvictionREST's GroupVersionKind): what kubectl drain looks for.
                resources.append(
                    {
                        "name": f"{info.plural}/eviction",
                        "singularName": "",
                        "namespaced": True,
                        "group": "policy",
                        "version": "v1",
                        "kind": "Eviction",
                        "verbs": ["create"],
                    }
                )
            elif sub == "scale":
                # Served as autoscaling/v1 Scale whatever the object's own group (ScaleREST's GroupVersionKind).
                resources.append(
                    {
                        "name": f"{info.plural}/scale",
                        "singularName": "",
                        "namespaced": info.namespaced,
                        "group": "autoscaling",
                        "version": "v1",
                        "kind": "Scale",
                        "verbs": ["get", "patch", "update"],
                    }
                )
            elif sub in containers.SUBRESOURCES:
                # kube-apiserver's pods/log (get) and the streaming ones (create, get); kss refuses them with a
                # Status that says why (containers.py), but clients look them up in discovery first.
                resources.append(
                    {
                        "name": f"{info.plural}/{sub}",
                        "singularName": "",
                        "namespaced": True,
                        "kind": containers.OPTIONS_KIND[sub],
                        "verbs": containers.VERBS[sub],
                    }
                )
            elif sub == FINALIZE:
                resources.append(
                    {
                        "name": f"{info.plural}/{sub}",
                        "singularName": "",
                        "namespaced": False,
                        "kind": info.api_kind,
                        "verbs": ["update"],
                    }
                )
            elif sub in STATUS_SUBRESOURCES:
                resources.append(
                    {
                        "name": f"{info.plural}/{sub}",
                        "singularName": "",
                        "namespaced": info.namespaced,
                        "kind": info.api_kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
    if group == "":
        resources.append(
            {"name": "bindings", "singularName": "binding", "namespaced": True, "kind": "Binding", "verbs": ["create"]}
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _group(name: str, all_versions: dict[str, list[str]]) -> dict[str, Any]:
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in all_versions[name]]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


@router.get("/version")
async def version(request: Request) -> Response:
    """``/version``: the Kubernetes release this simulator runs as (``--kube-version``'s reference patch release)."""
    return json_response(_settings(request).version.version_info())


@router.get("/healthz")
@router.get("/livez")
@router.get("/readyz")
async def healthz() -> Response:
    """Health probes, answered ``ok`` as kube-apiserver does."""
    return Response(b"ok", media_type="text/plain")


@router.get("/openapi/v3")
async def openapi_root(request: Request) -> Response:
    """``/openapi/v3``: the index of per-group-version documents."""
    authorize(request)
    root = openapi.root_document(openapi.gates_key(_gates(request)), _minor(request), openapi.apis_key(_apis(request)))
    return raw_response(openapi.root_with(root, openapi.custom_documents(_custom(request))))


@router.get("/openapi/v2")
async def openapi_v2(request: Request) -> Response:
    """``/openapi/v2``: an empty document (see ``openapi.py``), protobuf when asked for as kubectl does."""
    authorize(request)
    protobuf = openapi.OPENAPI_V2_PROTOBUF in request.headers.get("accept", "")
    # Not the protobuf media type itself: its "@" does not parse as a media type in client-go.
    media_type = "application/octet-stream" if protobuf else JSON
    return Response(openapi.v2_document(protobuf, _minor(request)), media_type=media_type)


@router.get("/openapi/v3/{path:path}")
async def openapi_group_version(request: Request, path: str) -> Response:
    """``/openapi/v3/{api/v1 | apis/g/v}``: a minimal document (see ``openapi.py``)."""
    authorize(request)
    doc = openapi.lookup(path, _gates(request), _minor(request), _apis(request)) or openapi.custom_documents(
        _custom(request)
    ).get(path.strip("/"))
    if doc is None:
        raise UnknownResource()
    return raw_response(doc)


def _aggregated_version(request: Request) -> tuple[str, bool] | None:
    """The apidiscovery version the client asks ``/api`` or ``/apis`` for first and whether in protobuf, or None
    for the plain lists."""
    serve_v2beta1 = not gate_enabled(_gates(request), aggregated_discovery.REMOVE_BETA_GATE)
    return aggregated_discovery.negotiate(request.headers.get("accept", ""), serve_v2beta1=serve_v2beta1)


@router.get("/api")
async def api_versions(request: Request) -> Response:
    """``/api``: the core group's versions; aggregated discovery of its resources when asked for."""
    authorize(request)
    aggregated = _aggregated_version(request)
    if aggregated is not None:
        core = _resource_list("", "v1", _gates(request), _minor(request), apis=_apis(request))
        items = [aggregated_discovery.group_entry("", [("v1", aggregated_discovery.resources_of(core, "", "v1"))])]
        version, in_protobuf = aggregated
        return aggregated_discovery.respond(items, version, request.headers.get("if-none-match"), protobuf=in_protobuf)
    server = f"{request.url.hostname}:{request.url.port or 80}"
    return json_response(
        {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}],
        }
    )


@router.get("/apis")
async def api_groups(request: Request) -> Response:
    """``/apis``: every named group served; aggregated discovery of their resources when asked for (CRDs' groups
    included, so they appear and disappear with their definitions)."""
    authorize(request)
    gates, minor, custom, apis = _gates(request), _minor(request), _custom(request), _apis(request)
    all_versions = _all_group_versions(gates, minor, custom, apis)
    aggregated = _aggregated_version(request)
    if aggregated is not None:
        items = [
            aggregated_discovery.group_entry(
                group,
                [
                    (
                        v,
                        aggregated_discovery.resources_of(
                            _resource_list(group, v, gates, minor, custom, apis), group, v
                        ),
                    )
                    for v in versions
                ],
            )
            for group, versions in all_versions.items()
            if group
        ]
        version, in_protobuf = aggregated
        return aggregated_discovery.respond(items, version, request.headers.get("if-none-match"), protobuf=in_protobuf)
    groups = [_group(g, all_versions) for g in all_versions if g]
    return json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


@router.get("/apis/{group}")
async def api_group(request: Request, group: str) -> Response:
    """``/apis/{group}``: one group's versions."""
    authorize(request)
    all_versions = _all_group_versions(_gates(request), _minor(request), _custom(request), _apis(request))
    if group not in all_versions or not group:
        raise UnknownResource()
    return json_response({"kind": "APIGroup", "apiVersion": "v1", **_group(group, all_versions)})


@router.get("/api/v1")
async def core_resources(request: Request) -> Response:
    """``/api/v1``: the core resources."""
    authorize(request)
    return json_response(_resource_list("", "v1", _gates(request), _minor(request), apis=_apis(request)))


@router.get("/apis/{group}/{version}")
async def group_resources(request: Request, group: str, version: str) -> Response:
    """``/apis/{group}/{version}``: one group version's resources."""
    authorize(request)
    gates, minor, apis = _gates(request), _minor(request), _apis(request)
    custom = _custom(request)
    if version not in _all_group_versions(gates, minor, custom, apis).get(group, []) or not group:
        raise UnknownResource()
    return json_response(_resource_list(group, version, gates, minor, custom, apis))
