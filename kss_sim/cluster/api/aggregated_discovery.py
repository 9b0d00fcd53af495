"""Aggregated discovery (apidiscovery.k8s.io): every group, version and resource in one answer to ``/api`` or
``/apis``, as kube-apiserver gives it to a client whose ``Accept`` asks for an ``APIGroupDiscoveryList``.

client-go (kubectl, controllers, the official clients' dynamic discovery) asks for it first on ``/api`` and ``/apis``
and falls back to the per-group-version lists when the answer is something else; one request instead of one per
group version. The document is built from the same per-version resource lists (``discovery.resource_list``), each
resource with its subresources folded in as kube-apiserver's ``ConvertGroupVersionIntoToDiscovery`` does, and
carries an ``ETag`` (SHA-512 of the v2 JSON, the same for every version asked) that a client's ``If-None-Match``
turns into a ``304``. v2beta1 is served only while the ``AggregatedDiscoveryRemoveBetaType`` gate is off (kube
v1.33 and v1.34 can turn it off; it is locked on from v1.35). In JSON or, when the ``Accept`` entry chosen asks for
it, in protobuf (``application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``: the
apidiscovery messages in the ``k8s\x00`` envelope, as kube-apiserver's codec factory serves them; client-go itself
asks for JSON); the answer's ``Content-Type`` names the group, version and kind either way.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from fastapi.responses import Response

from kss_sim.cluster.api import protobuf as protobuf_media

GROUP = "apidiscovery.k8s.io"
KIND = "APIGroupDiscoveryList"
V2 = "v2"
V2BETA1 = "v2beta1"
REMOVE_BETA_GATE = "AggregatedDiscoveryRemoveBetaType"

_JSON_TYPES = ("application/json", "application/*", "*/*")
PROTOBUF = protobuf_media.PROTOBUF


def _media_type(entry: str) -> tuple[str, dict[str, str]]:
    """One ``Accept`` entry as its type and parameters (names lowercased, values as given)."""
    mime, *raw = (part.strip() for part in entry.split(";"))
    params: dict[str, str] = {}
    for item in raw:
        name, sep, value = item.partition("=")
        if sep:
            params[name.strip().lower()] = value.strip().strip('"')
    return mime.lower(), params


def negotiate(accept: str, *, serve_v2beta1: bool) -> tuple[str, bool] | None:
    """The apidiscovery version to answer ``accept`` with (``v2`` or ``v2beta1``) and whether in protobuf, or None
    when the first entry kss can serve asks for the unaggregated document (a plain JSON type, or nothing kss
    knows)."""
    for entry in accept.split(","):
        if not entry.strip():
            continue
        mime, params = _media_type(entry)
        protobuf = mime == PROTOBUF
        if mime not in _JSON_TYPES and not protobuf:
            continue  # YAML, ...: not served for discovery, try the next entry
        if "as" not in params:
            if protobuf:
                continue  # the unaggregated lists are served in JSON alone
            return None
        if params.get("g") == GROUP and params.get("as") == KIND:
            if params.get("v") == V2:
                return V2, protobuf
            if params.get("v") == V2BETA1 and serve_v2beta1:
                return V2BETA1, protobuf
        # Another transformation (a Table, an unknown version): kube skips it and tries the next entry.
    return None


def _response_kind(entry: dict[str, Any], group: str, version: str) -> dict[str, str]:
    """``responseKind`` of a per-version resource entry: its own group/version when it names one (Scale,
    Eviction), else the group version listed."""
    return {
        "group": str(entry.get("group", group)),
        "version": str(entry.get("version", version)),
        "kind": str(entry.get("kind", "")),
    }


def resources_of(resource_list: dict[str, Any], group: str, version: str) -> list[dict[str, Any]]:
    """An ``APIResourceList``'s resources as ``APIResourceDiscovery`` entries: top-level resources in their order,
    each ``parent/sub`` entry folded into its parent's ``subresources``."""
    out: list[dict[str, Any]] = []
    parents: dict[str, dict[str, Any]] = {}
    for entry in resource_list["resources"]:
        name = str(entry["name"])
        if "/" in name:
            continue
        resource: dict[str, Any] = {
            "resource": name,
            "responseKind": _response_kind(entry, group, version),
            "scope": "Namespaced" if entry["namespaced"] else "Cluster",
            "singularResource": entry.get("singularName", ""),
            "verbs": list(entry["verbs"]),
        }
        if entry.get("shortNames"):
            resource["shortNames"] = list(entry["shortNames"])
        if entry.get("categories"):
            resource["categories"] = list(entry["categories"])
        out.append(resource)
        parents[name] = resource
    for entry in resource_list["resources"]:
        parent, slash, sub = str(entry["name"]).partition("/")
        if not slash or parent not in parents:
            continue
        parents[parent].setdefault("subresources", []).append(
            {"subresource": sub, "responseKind": _response_kind(entry, group, version), "verbs": list(entry["verbs"])}
        )
    return out


def group_entry(group: str, versions: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """One ``APIGroupDiscovery``: the group (nameless for the core group) and its versions, preferred first."""
    metadata = {"name": group} if group else {}
    return {
        "metadata": metadata,
        "versions": [
            {"version": version, "resources": resources, "freshness": "Current"} for version, resources in versions
        ],
    }


def document(items: list[dict[str, Any]], version: str = V2) -> dict[str, Any]:
    """The ``APIGroupDiscoveryList`` of ``items`` as apidiscovery.k8s.io/``version``."""
    return {"kind": KIND, "apiVersion": f"{GROUP}/{version}", "metadata": {}, "items": items}


def content_type(version: str, *, protobuf: bool = False) -> str:
    """The media type of the answer (client-go checks its g, v and as before it decodes the body)."""
    return f"{PROTOBUF if protobuf else 'application/json'};g={GROUP};v={version};as={KIND}"


def respond(
    items: list[dict[str, Any]], version: str, if_none_match: str | None, *, protobuf: bool = False
) -> Response:
    """The document in ``version`` (``protobuf``: in protobuf) with kube-apiserver's caching headers; a bodiless
    ``304`` when the client's ``If-None-Match`` already names its ETag (computed on the v2 JSON form, so it is the
    same for both versions and both encodings)."""
    etag = '"' + hashlib.sha512(orjson.dumps(document(items, V2))).hexdigest().upper() + '"'
    headers = {"ETag": etag, "Vary": "Accept", "Cache-Control": "public"}
    if if_none_match == etag:
        return Response(status_code=304, headers=headers)
    doc = document(items, version)
    encoded = protobuf_media.encode_object(doc) if protobuf else None
    body = encoded if encoded is not None else orjson.dumps(doc)
    return Response(body, media_type=content_type(version, protobuf=encoded is not None), headers=headers)
