"""A minimal OpenAPI v3 description: just enough for kubectl to learn that the server validates fields itself.

kubectl checks each group version's PATCH operations for the ``fieldValidation`` query parameter; when it
is there, kubectl sends ``fieldValidation=Strict`` instead of downloading schemas to validate client-side.
The PATCH operations carry no request body, so ``kubectl apply`` computes strategic merge patches from its
compiled-in types, as it does against any server without schemas. The documents' ``components.schemas``
(``openapi_schemas.py``) are there for ``kubectl explain``.

For a kind the v3 documents do not list (a typo, a CRD that is not installed), kubectl falls back to the
OpenAPI v2 document to validate client-side; ``/openapi/v2`` is an empty one (no definitions: nothing to
validate against), so kubectl goes on to map the kind and reports ``no matches for kind "Foo" in version "v1"``
as it does against kube-apiserver, instead of failing to download the schema.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any

import orjson

from kss_sim.cluster.api.openapi_schemas import component_schemas
from kss_sim.cluster.crd.kinds import CustomKindInfo
from kss_sim.cluster.kinds.registry import DEFAULT_MINOR, Gates, group_versions, kinds_in
from kss_sim.kube.api_enablement import NO_RUNTIME_CONFIG, RuntimeConfig


def gv_path(group: str, version: str) -> str:
    """The OpenAPI v3 path key of a group version (``api/v1``, ``apis/policy/v1``)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def gates_key(gates: Gates) -> frozenset[tuple[str, bool]]:
    """The feature gates as a hashable key for the cached documents."""
    return frozenset(gates.items())


def _patch_operation(kind: str, gvk: dict[str, str]) -> dict[str, Any]:
    return {
        "operationId": f"patch{kind}",
        "x-kubernetes-group-version-kind": gvk,
        "x-kubernetes-action": "patch",
        "parameters": [
            {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for name in ("dryRun", "fieldManager", "fieldValidation", "force")
        ],
        "responses": {"200": {"description": "OK"}},
    }


_TITLE = "Kubernetes"


def info_version(minor: int) -> str:
    """``info.version`` of kube-apiserver's documents: its emulation version, major.minor only since v1.31 (the
    generic server's completeOpenAPI fills it from ``EffectiveVersion.EmulationVersion()``), not the git version."""
    return f"1.{minor}"


@cache
def group_version_document(
    group: str,
    version: str,
    gates: frozenset[tuple[str, bool]] = frozenset(),
    minor: int = DEFAULT_MINOR,
    apis: frozenset[tuple[str, str]] = frozenset(),
) -> bytes:
    """The OpenAPI v3 document of one group version (its kinds served with ``gates`` by 1.``minor`` under the
    runtime config ``apis``), encoded."""
    prefix = "/" + gv_path(group, version)
    paths: dict[str, Any] = {}
    for info in kinds_in(group, version, dict(gates), minor, dict(apis)):
        path = (
            f"{prefix}/namespaces/{{namespace}}/{info.plural}/{{name}}"
            if info.namespaced
            else f"{prefix}/{info.plural}/{{name}}"
        )
        paths[path] = {
            "patch": _patch_operation(info.api_kind, {"group": group, "version": version, "kind": info.api_kind})
        }
    # The schemas serve `kubectl explain`; the PATCH operations still carry no request body, so `kubectl apply`
    # keeps computing strategic merge patches from its compiled-in types (it only uses schemas offered there).
    components = {"schemas": component_schemas(kinds_in(group, version, dict(gates), minor, dict(apis)))}
    doc = {
        "openapi": "3.0.0",
        "info": {"title": _TITLE, "version": info_version(minor)},
        "paths": paths,
        "components": components,
    }
    return orjson.dumps(doc)


@cache
def root_document(
    gates: frozenset[tuple[str, bool]] = frozenset(),
    minor: int = DEFAULT_MINOR,
    apis: frozenset[tuple[str, str]] = frozenset(),
) -> bytes:
    """``/openapi/v3``: where each group version's document lives (with a content hash, as kube-apiserver)."""
    paths: dict[str, Any] = {}
    for group, versions in group_versions(dict(gates), minor, dict(apis)).items():
        for version in versions:
            document = group_version_document(group, version, gates, minor, apis)
            digest = hashlib.sha512(document).hexdigest()[:32].upper()
            key = gv_path(group, version)
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return orjson.dumps({"paths": paths})


def lookup(
    path: str, gates: Gates, minor: int = DEFAULT_MINOR, apis: RuntimeConfig = NO_RUNTIME_CONFIG
) -> bytes | None:
    """The document served at ``/openapi/v3/{path}`` with ``gates`` by 1.``minor`` under ``apis``, or None."""
    for group, versions in group_versions(gates, minor, apis).items():
        for version in versions:
            if gv_path(group, version) == path.strip("/"):
                return group_version_document(group, version, gates_key(gates), minor, apis_key(apis))
    return None


def apis_key(apis: RuntimeConfig) -> frozenset[tuple[str, str]]:
    """A runtime config as the documents' caches key it."""
    return frozenset(apis.items())


def custom_documents(kinds: list[CustomKindInfo]) -> dict[str, bytes]:
    """The OpenAPI v3 documents of the CRDs' group versions (path key -> document), as kube-apiserver publishes a
    CRD's: each kind's PATCH operation (so kubectl sends ``fieldValidation=Strict``) and its schema, tagged with its
    group, version and kind (``kubectl explain``)."""
    by_gv: dict[tuple[str, str], list[CustomKindInfo]] = {}
    for info in kinds:
        by_gv.setdefault((info.group, info.version), []).append(info)
    out: dict[str, bytes] = {}
    for (group, version), infos in by_gv.items():
        prefix = "/" + gv_path(group, version)
        paths: dict[str, Any] = {}
        schemas: dict[str, Any] = {}
        for info in infos:
            path = (
                f"{prefix}/namespaces/{{namespace}}/{info.plural}/{{name}}"
                if info.namespaced
                else (f"{prefix}/{info.plural}/{{name}}")
            )
            gvk = {"group": group, "version": version, "kind": info.kind}
            paths[path] = {"patch": _patch_operation(info.kind, gvk)}
            name = ".".join([*reversed(group.split(".")), version, info.kind])
            properties = {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                **{
                    k: v
                    for k, v in (info.schema.get("properties") or {}).items()
                    if k not in ("apiVersion", "kind", "metadata")
                },
            }
            schemas[name] = {**info.schema, "properties": properties, "x-kubernetes-group-version-kind": [gvk]}
        doc = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": paths,
            "components": {"schemas": schemas},
        }
        out[gv_path(group, version)] = orjson.dumps(doc)
    return out


def root_with(root: bytes, custom: dict[str, bytes]) -> bytes:
    """``/openapi/v3``'s index ``root`` with the CRDs' group versions ``custom`` added."""
    if not custom:
        return root
    paths = orjson.loads(root)["paths"]
    for key, doc in custom.items():
        digest = hashlib.sha512(doc).hexdigest()[:32].upper()
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return orjson.dumps({"paths": paths})


# What kubectl asks /openapi/v2 for (gnostic's OpenAPI v2 Document message).
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _proto_string(field: int, text: str) -> bytes:
    """A length-delimited protobuf field (all strings here are far shorter than 128 bytes)."""
    data = text.encode()
    return bytes([field << 3 | 2, len(data)]) + data


@cache
def v2_document(protobuf: bool, minor: int = DEFAULT_MINOR) -> bytes:
    """``/openapi/v2``: a document without paths or definitions, as JSON or as gnostic's protobuf message
    (``Document``: swagger = 1, info = 2; ``Info``: title = 1, version = 2)."""
    if not protobuf:
        doc = {
            "swagger": "2.0",
            "info": {"title": _TITLE, "version": info_version(minor)},
            "paths": {},
            "definitions": {},
        }
        return orjson.dumps(doc)
    info = _proto_string(1, _TITLE) + _proto_string(2, info_version(minor))
    return _proto_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info
