"""The Kubernetes API's resources over HTTP: each request dispatched to its handler, the reads (get, list, watch,
Table output) served here, the writes by ``write_handlers.py`` (discovery is ``discovery.py``; what a request asks
for, its target, options and body, is read by ``requests.py``).

Routers stay thin: parse the path and query, call the store, and encode the answer. Every error leaves as a
``metav1.Status``. Single-object writes run in the event loop's thread (validation and versioning are quick, under
the store lock) and await their group commit through a future the committer completes, so no thread sits blocked
on the fsync; lists and collection deletes, which may be long, run in a worker thread.

The resource URLs (``/api/{version}/...``, ``/apis/{group}/{version}/...``) are the hot path: ``kube_app`` serves
them as a plain ASGI app, which the application puts behind its own auth, body-limit and metrics middleware but in
front of the framework's routing and dependency machinery (see ``kss_sim.main``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from kss_sim.cluster.admission.patch import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from kss_sim.cluster.api import (
    autoscaling_v1,
    containers,
    dra_versions,
    events_v1,
    eviction,
    params,
    protobuf,
    reviews,
    scale,
    views,
    watch,
    workload_v1beta1,
)
from kss_sim.cluster.api.custom_versions import converted, in_version, in_versions
from kss_sim.cluster.api.discovery import FINALIZE
from kss_sim.cluster.api.requests import (
    Target,
    dry_run_requested,
    field_manager,
    media_type,
    parse_body,
    parse_json,
    parse_target,
    read_body,
    wants,
)
from kss_sim.cluster.api.responses import JSON, authorize, error_response, json_response, raw_response
from kss_sim.cluster.api.tables import core as tables
from kss_sim.cluster.api.write_handlers import (
    bind,
    handle_create,
    handle_delete,
    handle_patch,
    handle_update,
    write_and_wait,
)
from kss_sim.cluster.errors import (
    ApiError,
    MethodNotAllowed,
    NotAcceptable,
    UnknownResource,
    UnsupportedMediaType,
)
from kss_sim.cluster.kinds.registry import BY_KIND, KindInfo
from kss_sim.cluster.storage.selectors import make_selector
from kss_sim.cluster.storage.store import ClusterStore, StoredObject
from kss_sim.config import Settings
from kss_sim.state import state_accessor

router = APIRouter()


_store = state_accessor("store", ClusterStore)
_settings = state_accessor("settings", Settings)


# ---------------------------------------------------------------------------------------------- resources


def _list_body(info: KindInfo, items: list[StoredObject], rv: int, token: str, remaining: int | None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if token:
        meta["continue"] = token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    head = orjson.dumps({"kind": info.list_kind, "apiVersion": info.api_version, "metadata": meta})
    if converted(info):
        raws = [orjson.dumps(obj) for obj in in_versions(info, [e.obj for e in items])]
    else:
        raws = [e.raw for e in items]
    return head[:-1] + b',"items":[' + b",".join(raws) + b"]}"


def _render(request: Request, info: KindInfo) -> Callable[[dict[str, Any], bytes], bytes]:
    if wants(request, "Table"):
        include = request.query_params.get("includeObject", "Metadata")
        return lambda obj, _raw: orjson.dumps(tables.table(info, [obj], None, include_object=include))
    if wants(request, "PartialObjectMetadata"):
        return lambda obj, _raw: orjson.dumps(
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}
        )
    if converted(info):
        return lambda obj, _raw: orjson.dumps(in_version(info, obj))
    return lambda _obj, raw: raw


async def _handle_get(request: Request, store: ClusterStore, target: Target) -> Response:
    info = target.info
    if target.name is not None:
        entry = store.read(info.key, target.namespace, target.name)  # in memory, committed state: quick
        if wants(request, "Table"):
            include = request.query_params.get("includeObject", "Metadata")
            return json_response(tables.table(info, [entry.obj], entry.resource_version, include_object=include))
        return raw_response(_render(request, info)(entry.obj, entry.raw))
    selector = make_selector(
        info.key, request.query_params.get("labelSelector"), request.query_params.get("fieldSelector")
    )
    # No query (the common case) is the default options: parsing an empty query still costs.
    options = params.list_options(request.query_params) if request.scope.get("query_string") else params.NO_OPTIONS
    if options.watch:
        return _watch(request, store, target, selector, options)
    result = await run_in_threadpool(
        store.select,
        info.key,
        target.namespace,
        selector,
        limit=options.limit,
        continue_token=request.query_params.get("continue") or None,
    )
    if wants(request, "Table"):
        include = request.query_params.get("includeObject", "Metadata")
        return json_response(
            tables.table(
                info,
                [e.obj for e in result.items],
                result.resource_version,
                include_object=include,
                continue_token=result.continue_token,
                remaining=result.remaining,
            )
        )
    if wants(request, "PartialObjectMetadataList"):
        return json_response(
            {
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": str(result.resource_version)},
                "items": [
                    {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": e.obj["metadata"]}
                    for e in result.items
                ],
            }
        )
    return raw_response(
        _list_body(info, result.items, result.resource_version, result.continue_token, result.remaining)
    )


def _watch(
    request: Request, store: ClusterStore, target: Target, selector: Any, options: params.ListOptions
) -> Response:
    settings = _settings(request)
    if target.name is not None:
        # A watch on one object is a watch on the collection filtered by name.
        name_selector = f"metadata.name={target.name}"
        field = request.query_params.get("fieldSelector")
        selector = make_selector(
            target.info.key,
            request.query_params.get("labelSelector"),
            f"{field},{name_selector}" if field else name_selector,
        )
    timeout = options.timeout_seconds
    req = watch.WatchRequest(
        info=target.info,
        namespace=target.namespace,
        selector=selector,
        resource_version=options.resource_version,
        send_initial_events=options.send_initial_events,
        allow_bookmarks=options.allow_bookmarks,
        timeout_seconds=float(timeout if timeout and timeout > 0 else settings.watch_timeout_seconds),
        bookmark_seconds=settings.watch_bookmark_seconds,
    )
    info = target.info
    accept = request.headers.get("accept", "")
    in_protobuf = protobuf.accepts_protobuf(accept) and protobuf.has_protobuf(info.api_version, info.api_kind)
    text_only = request.scope.get(_TEXT_ONLY) or not in_protobuf
    if text_only and protobuf.accepts_protobuf(accept) and not protobuf.accepts_text(accept):
        # A custom resource's watch (or one of a kind kss has no protobuf messages for) asked for in protobuf
        # alone: kube-apiserver's 406.
        raise NotAcceptable(f"only the following media types are accepted: {protobuf.CUSTOM_STREAM_MEDIA_TYPES}")
    batches = watch.stream(store, req, _render(request, target.info))
    if in_protobuf:
        return StreamingResponse(_protobuf_frames(batches), media_type=protobuf.PROTOBUF_STREAM)
    return StreamingResponse(_joined(batches), media_type=JSON)


async def _joined(batches: AsyncIterator[list[bytes]]) -> AsyncIterator[bytes]:
    async for lines in batches:
        yield b"".join(lines)


async def _protobuf_frames(batches: AsyncIterator[list[bytes]]) -> AsyncIterator[bytes]:
    async for lines in batches:
        yield b"".join(protobuf.encode_watch_line(line) for line in lines)


# Set on a request's scope when its answer is served in JSON alone (a custom resource's, but its scale subresource:
# apiextensions-apiserver serves custom objects in JSON and YAML, their autoscaling/v1 Scale in protobuf too).
_TEXT_ONLY = "kss.text_only"


def negotiated(request: Request, response: Response) -> Response:
    """``response`` in protobuf when the client asks for it first and its kind has a protobuf form (client-go's
    typed clients); as it is otherwise (JSON clients pay one header lookup)."""
    if (
        response.media_type != JSON
        or isinstance(response, StreamingResponse)
        or not protobuf.accepts_protobuf(request.headers.get("accept", ""))
    ):
        return response
    if request.scope.get(_TEXT_ONLY):
        # A custom resource's answer: JSON, its errors too (kube-apiserver writes an error its negotiation cannot
        # encode as raw JSON with its own code), and a 406 when the client takes nothing but protobuf.
        if response.status_code < 400 and not protobuf.accepts_text(request.headers.get("accept", "")):
            return error_response(
                NotAcceptable(f"only the following media types are accepted: {protobuf.CUSTOM_MEDIA_TYPES}")
            )
        return response
    encoded = protobuf.encode_json(bytes(response.body))
    if encoded is None:
        # A kind kss has no protobuf messages for (v1.37's scheduling.k8s.io/v1beta1: no v1.37 tree was read):
        # answered as a server without a protobuf serializer for it answers, in JSON to a client that takes JSON
        # too (client-go's typed clients do), else 406.
        if response.status_code < 400 and not protobuf.accepts_text(request.headers.get("accept", "")):
            return error_response(
                NotAcceptable(f"only the following media types are accepted: {protobuf.CUSTOM_MEDIA_TYPES}")
            )
        return response
    answer = Response(encoded, status_code=response.status_code, media_type=protobuf.PROTOBUF)
    for key, value in response.raw_headers:
        if key not in (b"content-length", b"content-type"):
            answer.raw_headers.append((key, value))
    return answer


_HANDLERS = {
    "GET": _handle_get,
    "POST": handle_create,
    "PUT": handle_update,
    "PATCH": handle_patch,
    "DELETE": handle_delete,
}
_METHODS = list(_HANDLERS)
# How each kind served from another kind's stored objects converts them (``KindInfo.view``).
_VIEW_CONVERSIONS = {
    (c.view.api_version, c.view.plural): c
    for c in (events_v1.CONVERSION, autoscaling_v1.CONVERSION, *dra_versions.CONVERSIONS, *workload_v1beta1.CONVERSIONS)
}
KUBE_METHODS = frozenset(_HANDLERS)


async def _dispatch(request: Request, group: str, version: str, path: str) -> Response:
    authorize(request)
    segments = path.split("/")
    if group == "" and segments and segments[0] == "namespaces" and len(segments) == 3 and segments[2] == "bindings":
        if request.method != "POST":
            raise MethodNotAllowed(request.method.lower())
        body = parse_body(request, None, await read_body(request))
        target = Target(BY_KIND["Pod"], segments[1], None, "binding")
        return await bind(_store(request), target, body, field_manager(request))
    settings = _settings(request)
    target = parse_target(
        group,
        version,
        segments,
        settings.effective_feature_gates,
        _store(request).custom_resource,
        settings.version.minor,
        settings.runtime_config,
    )
    if target.info.custom and target.subresource != "scale":
        request.scope[_TEXT_ONLY] = True
    if target.info.review:
        if request.method != "POST" or target.name is not None:
            raise MethodNotAllowed(request.method.lower())
        body = parse_body(request, target.info, await read_body(request))
        return json_response(reviews.answer(target.info, body, _settings(request).api_token or ""), 201)
    if target.info.view:
        store = _store(request)
        conversion = _VIEW_CONVERSIONS[target.info.api_version, target.info.plural]
        return await views.serve(
            request,
            target,
            conversion,
            lambda req, stored: _HANDLERS[req.method](req, store, stored),
            kube_version=store.kube_version,
        )
    if target.subresource == FINALIZE and request.method != "PUT":
        # namespaces/finalize is an update alone (FinalizeREST has no Get, so no patch either).
        raise MethodNotAllowed(request.method.lower())
    if target.subresource == "scale":
        return await _handle_scale(request, _store(request), target)
    if target.subresource == "eviction":
        return await _handle_eviction(request, _store(request), target)
    if target.subresource in containers.SUBRESOURCES and target.name is not None and target.namespace is not None:
        store = _store(request)
        raise await run_in_threadpool(
            containers.refuse, store, request.method, target.namespace, target.name, target.subresource
        )
    return await _HANDLERS[request.method](request, _store(request), target)


async def _handle_scale(request: Request, store: ClusterStore, target: Target) -> Response:
    """``.../{name}/scale`` (apps/v1 Deployments, ReplicaSets, StatefulSets): an autoscaling/v1 Scale to read,
    replace or patch (see ``scale.py``)."""
    info, namespace, name = target.info, target.namespace, target.name
    if name is None:
        raise UnknownResource()
    if request.method == "GET":
        return json_response(scale.read_scale(store, info, namespace, name))
    dry_run = dry_run_requested(request)
    if request.method == "PUT":
        body = parse_body(request, None, await read_body(request))
        return json_response(
            await write_and_wait(store, lambda: scale.write_scale(store, info, namespace, name, body, dry_run=dry_run))
        )
    if request.method == "PATCH":
        content_type = request.headers.get("content-type", "").split(";")[0].strip()
        if content_type not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH):
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}"
            )
        patch = parse_json(None, await read_body(request))
        return json_response(
            await write_and_wait(
                store,
                lambda: scale.patch_scale(store, info, namespace, name, patch, content_type, dry_run=dry_run),
            )
        )
    raise MethodNotAllowed(request.method.lower())


async def _handle_eviction(request: Request, store: ClusterStore, target: Target) -> Response:
    """``POST .../pods/{name}/eviction``: a policy/v1 Eviction (see ``eviction.py``)."""
    if request.method != "POST" or target.name is None:
        raise MethodNotAllowed(request.method.lower())
    dry_run = dry_run_requested(request)
    asked = eviction.parse(media_type(request), await read_body(request), target.name, kube_version=store.kube_version)
    namespace = target.namespace or "default"
    store.admit_subresource_create("Pod", namespace, target.name)
    status = await write_and_wait(store, lambda: eviction.evict(store, namespace, asked, dry_run=dry_run))
    return json_response(status, int(status["code"]))


@router.api_route("/api/{version}/{path:path}", methods=_METHODS)
async def core_api(request: Request, version: str, path: str) -> Response:
    """Every core (``/api/v1``) resource URL."""
    return negotiated(request, await _dispatch(request, "", version, path))


@router.api_route("/apis/{group}/{version}/{path:path}", methods=_METHODS)
async def group_api(request: Request, group: str, version: str, path: str) -> Response:
    """Every named-group (``/apis/{group}/{version}``) resource URL."""
    return negotiated(request, await _dispatch(request, group, version, path))


def resource_route(path: str) -> tuple[str, str, str] | None:
    """``(group, version, rest)`` when ``path`` is a resource URL, i.e. what ``core_api`` / ``group_api`` match;
    None for anything else (discovery, OpenAPI, the simulator's own endpoints)."""
    if path.startswith("/api/"):
        group = ""
        version, slash, rest = path[5:].partition("/")
    elif path.startswith("/apis/"):
        group, slash, tail = path[6:].partition("/")
        if not group or not slash:
            return None
        version, slash, rest = tail.partition("/")
    else:
        return None
    if not version or not slash:
        return None
    return group, version, rest


async def kube_app(scope: Scope, receive: Receive, send: Send) -> None:
    """The resource URLs as a plain ASGI app: the same handlers as ``core_api`` / ``group_api`` without the
    framework's routing, dependency and exception layers. ``scope["app"]`` must be the application (its state
    holds the store and settings); only paths ``resource_route`` accepts and methods in ``_HANDLERS`` come here.
    """
    route = resource_route(scope["path"])
    if route is None:  # a caller's mistake; answer as the router would
        await error_response(UnknownResource())(scope, receive, send)
        return
    request = Request(scope, receive, send)
    try:
        response = await _dispatch(request, *route)
    except ApiError as exc:
        response = error_response(exc)
    except Exception:
        # Nothing was sent yet (handlers return their response): answer a 500 Status, then let the server log
        # the exception as it does for the framework's routes.
        await error_response(ApiError("Internal error occurred"))(scope, receive, send)
        raise
    await negotiated(request, response)(scope, receive, send)
