"""A minimal OpenAPI v3 description: just enough for kubectl to learn that the server validates fields itself.

kubectl checks each group version's PATCH operations for the ``fieldValidation`` query parameter; when it
is there, kubectl sends ``fieldValidation=Strict`` instead of downloading schemas to validate client-side.
The PATCH operations carry no request body, so ``kubectl apply`` computes strategic merge patches from its
compiled-in types, as it does against any server without schemas.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any

import orjson

from app.cluster.kinds import GROUP_VERSIONS, kinds_in


def gv_path(group: str, version: str) -> str:
    """The OpenAPI v3 path key of a group version (``api/v1``, ``apis/policy/v1``)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


@cache
def group_version_document(group: str, version: str) -> bytes:
    """The OpenAPI v3 document of one group version, encoded."""
    prefix = "/" + gv_path(group, version)
    paths: dict[str, Any] = {}
    for info in kinds_in(group, version):
        path = (
            f"{prefix}/namespaces/{{namespace}}/{info.plural}/{{name}}"
            if info.namespaced
            else f"{prefix}/{info.plural}/{{name}}"
        )
        paths[path] = {
            "patch": {
                "operationId": f"patch{info.kind}",
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": info.kind},
                "x-kubernetes-action": "patch",
                "parameters": [
                    {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                    for name in ("dryRun", "fieldManager", "fieldValidation", "force")
                ],
                "responses": {"200": {"description": "OK"}},
            }
        }
    doc = {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.35.0"}, "paths": paths, "components": {}}
    return orjson.dumps(doc)


@cache
def root_document() -> bytes:
    """``/openapi/v3``: where each group version's document lives (with a content hash, as kube-apiserver)."""
    paths: dict[str, Any] = {}
    for group, versions in GROUP_VERSIONS.items():
        for version in versions:
            digest = hashlib.sha512(group_version_document(group, version)).hexdigest()[:32].upper()
            key = gv_path(group, version)
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return orjson.dumps({"paths": paths})


def lookup(path: str) -> bytes | None:
    """The document served at ``/openapi/v3/{path}``, or None."""
    for group, versions in GROUP_VERSIONS.items():
        for version in versions:
            if gv_path(group, version) == path.strip("/"):
                return group_version_document(group, version)
    return None
