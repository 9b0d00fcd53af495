"""The Kubernetes API's writes over HTTP: create, binding, update, patch, server-side apply and delete of one object
or a collection, each answered once its group commit is durable (``durable``, ``write_and_wait``); ``router.py``
dispatches to them and serves the reads.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

import yaml
from fastapi import Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from kss_sim.cluster.admission import decode_types, deletion
from kss_sim.cluster.admission.managed_fields import validate_field_manager
from kss_sim.cluster.admission.patch import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from kss_sim.cluster.api import params, protobuf
from kss_sim.cluster.api.custom_versions import converted, in_version, to_storage_version
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
    query_bool,
    read_body,
)
from kss_sim.cluster.api.responses import json_response, raw_response
from kss_sim.cluster.errors import BadRequest, Invalid, MethodNotAllowed, UnsupportedMediaType, forbidden, required
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.cluster.storage.store import ClusterStore, PendingWrites
from kss_sim.kube import go_yaml

_T = TypeVar("_T")


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


async def write_and_wait(store: ClusterStore, write: Callable[[], _T]) -> _T:
    """Run one store write in this thread and answer once it is committed (a 2xx means durable)."""
    with store.deferred() as pending:
        result = write()
    await durable(pending)
    return result


def _list_of(info: KindInfo, objects: list[dict[str, Any]], rv: int) -> dict[str, Any]:
    return {
        "kind": info.list_kind,
        "apiVersion": info.api_version,
        "metadata": {"resourceVersion": str(rv)},
        "items": objects,
    }


def _warned(response: Response, warnings: list[str]) -> Response:
    """``response`` with a ``Warning: 299 - "..."`` header per warning, as kube-apiserver sends them."""
    for text in warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.append("Warning", f'299 - "{escaped}"')
    return response


async def handle_create(request: Request, store: ClusterStore, target: Target) -> Response:
    info = target.info
    dry_run = dry_run_requested(request)
    body = parse_body(request, info, await read_body(request))
    if target.subresource == "binding":
        return await bind(store, target, body, field_manager(request))
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
    if not dry_run and not converted(info):
        # Answered with the JSON the object was stored as (encoded once, when stored).
        stored = await write_and_wait(
            store, lambda: store.create_json(info.key, body, target.namespace, manager=manager, owned=owned)
        )
        return _warned(raw_response(stored, 201), warnings)
    created = await write_and_wait(
        store,
        lambda: store.create(
            info.key, body, target.namespace, dry_run=dry_run, manager=manager, owned=owned, copy=False
        ),
    )
    return _warned(json_response(in_version(info, created), 201), warnings)


async def bind(store: ClusterStore, target: Target, body: Any, manager: str) -> Response:
    if not isinstance(body, dict) or body.get("kind", "Binding") != "Binding":
        raise BadRequest("the object provided is unrecognized (must be of type Binding)")
    decode_types.check_types("Binding", body, version="v1", kube_version=store.kube_version)
    meta = body.get("metadata") or {}
    name = target.name or meta.get("name") or ""
    if target.name and meta.get("name") and meta["name"] != target.name:
        raise BadRequest(f"the name of the object ({meta['name']}) does not match the name on the URL ({target.name})")
    node = str((body.get("target") or {}).get("name") or "")
    namespace = target.namespace or meta.get("namespace") or "default"
    store.admit_subresource_create("Pod", namespace, name)
    await write_and_wait(store, lambda: store.bind_pod(namespace, name, node, uid=meta.get("uid"), binder=manager))
    return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201)


async def handle_update(request: Request, store: ClusterStore, target: Target) -> Response:
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
    updated = await write_and_wait(
        store, lambda: store.update(info.key, body, subresource=sub, dry_run=dry_run, manager=manager)
    )
    return _warned(json_response(in_version(info, updated)), warnings)


async def handle_patch(request: Request, store: ClusterStore, target: Target) -> Response:
    info = target.info
    if target.name is None:
        raise MethodNotAllowed("patch")
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type == APPLY_PATCH:
        return await handle_apply(request, store, target)
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
    patched = await write_and_wait(
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


async def handle_apply(request: Request, store: ClusterStore, target: Target) -> Response:
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
    applied, created = await write_and_wait(
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


async def handle_delete(request: Request, store: ClusterStore, target: Target) -> Response:
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
    deleted_obj = await write_and_wait(
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
