"""The Kubernetes API's resources over HTTP: CRUD, patch, watch and Table output, mapped onto ``ClusterStore``
(discovery is ``discovery.py``; what a request asks for, its target, options and body, is read by ``requests.py``).

Routers stay thin: parse the path and query, call the store, and encode the answer. Every error leaves as a
``metav1.Status``. Single-object writes run in the event loop's thread (validation and versioning are quick, under
the store lock) and await their group commit through a future the committer completes, so no thread sits blocked
on the fsync; lists and collection deletes, which may be long, run in a worker thread.

The resource URLs (``/api/{version}/...``, ``/apis/{group}/{version}/...``) are the hot path: ``kube_app`` serves
them as a plain ASGI app, which the application puts behind its own auth, body-limit and metrics middleware but in
front of the framework's routing and dependency machinery (see ``kss_sim.main``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import orjson
import yaml
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from kss_sim.cluster.admission import decode_types, deletion
from kss_sim.cluster.admission.managed_fields import validate_field_manager
from kss_sim.cluster.admission.patch import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
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
)
from kss_sim.cluster.api.custom_versions import converted, in_version, in_versions, to_storage_version
from kss_sim.cluster.api.discovery import FINALIZE, STATUS_SUBRESOURCES
from kss_sim.cluster.api.requests import (
    JSON_TYPES,
    Target,
    dry_run_requested,
    field_manager,
    field_warnings,
    json_patch_field_check,
    media_type,
    parse_body,
    parse_json,
    parse_target,
    query_bool,
    read_body,
    wants,
)
from kss_sim.cluster.api.responses import JSON, authorize, error_response, json_response, raw_response
from kss_sim.cluster.api.tables import core as tables
from kss_sim.cluster.errors import (
    ApiError,
    BadRequest,
    Invalid,
    MethodNotAllowed,
    NotAcceptable,
    UnknownResource,
    UnsupportedMediaType,
    forbidden,
    required,
)
from kss_sim.cluster.kinds.registry import BY_KIND, KindInfo
from kss_sim.cluster.storage.selectors import make_selector
from kss_sim.cluster.storage.store import ClusterStore, PendingWrites, StoredObject
from kss_sim.config import Settings
from kss_sim.kube import go_yaml
from kss_sim.state import state_accessor

router = APIRouter()
_T = TypeVar("_T")


_store = state_accessor("store", ClusterStore)
_settings = state_accessor("settings", Settings)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():  # the request may have been cancelled (client gone) meanwhile
        future.set_result(None)


async def durable(pending: PendingWrites) -> None:
    """Wait, without blocking the event loop, until ``pending``'s writes are durable; ``InternalError`` (500)
    if the commit failed (then none of them became visible)."""
    if not pending.done():
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake() -> None:  # the committer thread, store lock held: only hand off to the loop
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_resolve, future)

        pending.add_done_callback(wake)
        await future
    pending.wait()


async def _write(store: ClusterStore, write: Callable[[], _T]) -> _T:
    """Run one store write in this thread and answer once it is committed (a 2xx means durable)."""
    with store.deferred() as pending:
        result = write()
    await durable(pending)
    return result


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


def _list_of(info: KindInfo, objects: list[dict[str, Any]], rv: int) -> dict[str, Any]:
    return {
        "kind": info.list_kind,
        "apiVersion": info.api_version,
        "metadata": {"resourceVersion": str(rv)},
        "items": objects,
    }


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


def _warned(response: Response, warnings: list[str]) -> Response:
    """``response`` with a ``Warning: 299 - "..."`` header per warning, as kube-apiserver sends them."""
    for text in warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.append("Warning", f'299 - "{escaped}"')
    return response


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
    if request.scope.get(_TEXT_ONLY) and protobuf.accepts_protobuf(accept) and not protobuf.accepts_text(accept):
        # A custom resource's watch asked for in protobuf alone: kube-apiserver's 406.
        raise NotAcceptable(f"only the following media types are accepted: {protobuf.CUSTOM_STREAM_MEDIA_TYPES}")
    lines = watch.stream(store, req, _render(request, target.info))
    if in_protobuf:
        return StreamingResponse(_protobuf_frames(lines), media_type=protobuf.PROTOBUF_STREAM)
    return StreamingResponse(lines, media_type=JSON)


async def _protobuf_frames(lines: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    async for line in lines:
        yield protobuf.encode_watch_line(line)


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
        return response
    answer = Response(encoded, status_code=response.status_code, media_type=protobuf.PROTOBUF)
    for key, value in response.raw_headers:
        if key not in (b"content-length", b"content-type"):
            answer.raw_headers.append((key, value))
    return answer


async def _handle_create(request: Request, store: ClusterStore, target: Target) -> Response:
    info = target.info
    dry_run = dry_run_requested(request)
    body = parse_body(request, info, await read_body(request))
    if target.subresource == "binding":
        return await _bind(store, target, body, field_manager(request))
    if target.name is not None:
        raise MethodNotAllowed("create")
    if not isinstance(body, dict):
        raise BadRequest(f"the object provided is unrecognized (must be of type {info.api_kind})")
    warnings = field_warnings(request, info, body, kube_version=store.kube_version)
    to_storage_version(info, body)
    manager = field_manager(request)
    # A JSON body was parsed for this request alone: the store takes it as it is instead of copying it first, and
    # the answer is rendered from the stored object itself (read-only) instead of a copy of it.
    owned = media_type(request) in JSON_TYPES
    created = await _write(
        store,
        lambda: store.create(
            info.key, body, target.namespace, dry_run=dry_run, manager=manager, owned=owned, copy=False
        ),
    )
    return _warned(json_response(in_version(info, created), 201), warnings)


async def _bind(store: ClusterStore, target: Target, body: Any, manager: str) -> Response:
    if not isinstance(body, dict) or body.get("kind", "Binding") != "Binding":
        raise BadRequest("the object provided is unrecognized (must be of type Binding)")
    decode_types.check_types("Binding", body, version="v1", kube_version=store.kube_version)
    meta = body.get("metadata") or {}
    name = target.name or meta.get("name") or ""
    if target.name and meta.get("name") and meta["name"] != target.name:
        raise BadRequest(f"the name of the object ({meta['name']}) does not match the name on the URL ({target.name})")
    node = str((body.get("target") or {}).get("name") or "")
    namespace = target.namespace or meta.get("namespace") or "default"
    await _write(store, lambda: store.bind_pod(namespace, name, node, uid=meta.get("uid"), binder=manager))
    return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201)


async def _handle_update(request: Request, store: ClusterStore, target: Target) -> Response:
    info = target.info
    if target.name is None:
        raise MethodNotAllowed("update")
    dry_run = dry_run_requested(request)
    body = parse_body(request, info, await read_body(request))
    if not isinstance(body, dict):
        raise BadRequest(f"the object provided is unrecognized (must be of type {info.api_kind})")
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        body["metadata"] = meta
    if meta.get("name") and meta["name"] != target.name:
        raise BadRequest(f"the name of the object ({meta['name']}) does not match the name on the URL ({target.name})")
    if info.namespaced:
        if meta.get("namespace") and meta["namespace"] != target.namespace:
            raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = target.namespace
    meta["name"] = target.name
    sub = target.subresource
    if sub is not None and sub not in STATUS_SUBRESOURCES and sub != FINALIZE:
        raise MethodNotAllowed("update")
    warnings = field_warnings(request, info, body, kube_version=store.kube_version)
    to_storage_version(info, body)
    manager = field_manager(request)
    updated = await _write(
        store, lambda: store.update(info.key, body, subresource=sub, dry_run=dry_run, manager=manager)
    )
    return _warned(json_response(in_version(info, updated)), warnings)


async def _handle_patch(request: Request, store: ClusterStore, target: Target) -> Response:
    info = target.info
    if target.name is None:
        raise MethodNotAllowed("patch")
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type == APPLY_PATCH:
        return await _handle_apply(request, store, target)
    if request.scope.get("query_string") and "force" in request.query_params:
        raise Invalid(
            "PatchOptions", "", [forbidden("force", "may not be specified for non-apply patch")], group="meta.k8s.io"
        )
    if content_type not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH):
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}, {APPLY_PATCH}"
        )
    if content_type == STRATEGIC_MERGE_PATCH and info.custom:
        # A custom resource has no Go type to take patch strategies from: kube-apiserver refuses (kubectl patch
        # needs --type merge or json there).
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}"
        )
    dry_run = dry_run_requested(request)
    patch = parse_json(None, await read_body(request))
    sub = target.subresource
    if sub is not None and sub not in STATUS_SUBRESOURCES:
        raise MethodNotAllowed("patch")
    name = target.name
    # A merge patch has the object's shape, so it is checked itself; a JSON patch through what it produces.
    warnings: list[str] = []
    check = None
    if content_type == JSON_PATCH:
        check = json_patch_field_check(request, info, warnings, kube_version=store.kube_version)
    else:
        warnings = field_warnings(request, info, patch, patch=True, kube_version=store.kube_version)
    manager = field_manager(request)
    patched = await _write(
        store,
        lambda: store.patch(
            info.key,
            target.namespace,
            name,
            patch,
            content_type,
            subresource=sub,
            dry_run=dry_run,
            check=check,
            manager=manager,
        ),
    )
    return _warned(json_response(in_version(info, patched)), warnings)


async def _handle_apply(request: Request, store: ClusterStore, target: Target) -> Response:
    """Server-side apply (``kss_sim.cluster.admission.apply``): a YAML or JSON configuration, ``fieldManager`` required,
    ``force`` to take fields from other managers; creates the object when there is none (201)."""
    info = target.info
    assert target.name is not None
    manager = request.query_params.get("fieldManager") or ""
    if not manager:
        raise Invalid(
            "PatchOptions", "", [required("fieldManager", "is required for apply patch")], group="meta.k8s.io"
        )
    validate_field_manager(manager)
    force = query_bool(request, "force")
    dry_run = dry_run_requested(request)
    sub = target.subresource
    if sub is not None and sub not in STATUS_SUBRESOURCES:
        raise MethodNotAllowed("patch")
    raw = await read_body(request)
    try:
        configuration = go_yaml.load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise BadRequest(f"error decoding YAML: {exc}") from None
    except RecursionError:  # PyYAML's constructor recurses once per level of nesting
        raise BadRequest("error decoding YAML: exceeded max depth") from None
    if not isinstance(configuration, dict):
        raise BadRequest("error decoding YAML: the applied configuration must be an object")
    warnings = field_warnings(request, info, configuration, kube_version=store.kube_version)
    to_storage_version(info, configuration)
    name = target.name
    applied, created = await _write(
        store,
        lambda: store.apply(
            info.key,
            target.namespace,
            name,
            configuration,
            manager=manager,
            force=force,
            subresource=sub,
            dry_run=dry_run,
        ),
    )
    return _warned(json_response(in_version(info, applied), 201 if created else 200), warnings)


async def _handle_delete(request: Request, store: ClusterStore, target: Target) -> Response:
    info = target.info
    if target.name is None and info.kind == "Namespace":
        # kube-apiserver serves no deletecollection for namespaces: one request must not empty the cluster.
        raise MethodNotAllowed("deletecollection")
    raw = await read_body(request)
    options: dict[str, Any] = {}
    if raw.strip():
        # kubectl's typed clients send DeleteOptions as protobuf (kubectl drain's fallback DELETE).
        parsed = parse_body(request, None, raw) if media_type(request) == protobuf.PROTOBUF else parse_json(None, raw)
        if not isinstance(parsed, dict):
            raise BadRequest("DeleteOptions must be a JSON object")
        options = parsed
    # Decoded into meta/v1 DeleteOptions as kube-apiserver does: a field of the wrong type is a 400.
    decode_types.check_types("DeleteOptions", options, version="v1", kube_version=store.kube_version)
    dry_run = dry_run_requested(request, options.get("dryRun") or [])
    if target.subresource is not None:
        raise MethodNotAllowed("delete")
    delete_options = deletion.parse_delete_options(
        options, request.query_params, query_grace_period=params.int64(request.query_params, "gracePeriodSeconds")
    )
    # batch/v1 Jobs orphan their pods unless told otherwise; kube-apiserver warns a client that did not choose.
    warnings = [deletion.JOB_DELETE_WARNING] if info.kind == "Job" and not delete_options.chosen else []
    if target.name is None:
        params.list_options(request.query_params)  # refused as a list's are (deletecollection takes ListOptions)
        label = request.query_params.get("labelSelector")
        field = request.query_params.get("fieldSelector")
        deleted = await run_in_threadpool(
            lambda: store.delete_collection(
                info.key, target.namespace, label, field, dry_run=dry_run, options=delete_options
            )
        )
        return _warned(json_response(_list_of(info, deleted, store.resource_version)), warnings)
    preconditions = options.get("preconditions") or {}
    name = target.name
    deleted_obj = await _write(
        store,
        lambda: store.delete(
            info.key,
            target.namespace,
            name,
            uid=preconditions.get("uid"),
            resource_version=preconditions.get("resourceVersion"),
            dry_run=dry_run,
            options=delete_options,
        ),
    )
    return _warned(json_response(deleted_obj), warnings)


_HANDLERS = {
    "GET": _handle_get,
    "POST": _handle_create,
    "PUT": _handle_update,
    "PATCH": _handle_patch,
    "DELETE": _handle_delete,
}
_METHODS = list(_HANDLERS)
# How each kind served from another kind's stored objects converts them (``KindInfo.view``).
_VIEW_CONVERSIONS = {
    (c.view.api_version, c.view.plural): c
    for c in (events_v1.CONVERSION, autoscaling_v1.CONVERSION, *dra_versions.CONVERSIONS)
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
        return await _bind(_store(request), target, body, field_manager(request))
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
            await _write(store, lambda: scale.write_scale(store, info, namespace, name, body, dry_run=dry_run))
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
            await _write(
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
    status = await _write(store, lambda: eviction.evict(store, namespace, asked, dry_run=dry_run))
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
