"""Kinds served in a second group-version from another kind's stored objects (``KindInfo.view``).

kube-apiserver keeps one resource in storage and converts it to the version a request names. kss does the same at
the API's edges: a request to a view is handed to the stored kind's handlers, its body (an object, a patch, an apply
configuration) converted into the stored form first, and what the handlers answer (objects, lists, Tables, watch
events) converted back. The store, validation and the controllers only ever see the stored kind. Each view's
``Conversion`` says how its objects differ (``events_v1``: events.k8s.io/v1 Events over core/v1 ones;
``autoscaling_v1``: autoscaling/v1 HorizontalPodAutoscalers over autoscaling/v2 ones).

A merge, strategic merge or JSON patch is applied as kube-apiserver applies it, to the object in the request's
version: either renamed into the stored form when the two forms differ only by field names (``rename_patch``), or
by reading the object, converting it, patching it, and writing the result back with its resourceVersion (retried
on a conflict, as kube-apiserver's patcher retries).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml
from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from starlette.types import Message

from kss_sim.cluster.admission import decode_types
from kss_sim.cluster.admission.patch import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)
from kss_sim.cluster.api import protobuf
from kss_sim.cluster.api.requests import Target, field_validation, media_type, parse_body, parse_json, read_body
from kss_sim.cluster.api.responses import JSON
from kss_sim.cluster.errors import ApiError, BadRequest, Conflict, NotAcceptable
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.kube import go_yaml

Handle = Callable[[Request, Target], Awaitable[Response]]
# How often a read-modify-write patch is retried when the object changed between its read and its write.
_PATCH_ATTEMPTS = 5


@dataclass(frozen=True)
class Conversion:
    """How one view's objects map to the stored kind's."""

    view: KindInfo
    stored: KindInfo
    # A stored object in the view's form, and an object (or apply configuration) of the view in the stored form.
    to_view: Callable[[dict[str, Any]], dict[str, Any]]
    to_stored: Callable[[dict[str, Any]], dict[str, Any]]
    # The paths of a view body's fields the view's type does not have (dropped before conversion, then warned
    # about or refused as ``fieldValidation`` says), each removed from the body.
    pop_unknown: Callable[[dict[str, Any]], list[str]] = field(default=lambda body: [])
    # A patch renamed into the stored form (the forms differ by field names only); None: read, patch, write back.
    rename_patch: Callable[[str, Any], Any] | None = None
    # An error of the stored kind's handlers as kube-apiserver words it for the view (another group's name).
    regroup: Callable[[ApiError], ApiError] = field(default=lambda exc: exc)
    # Entered around the stored kind's handler: the view's own validation rules, if it has any.
    during_write: Callable[[], AbstractContextManager[None]] = field(default=contextlib.nullcontext)

    def answer(self, obj: Any) -> Any:
        """A stored-kind handler's answer as the view's client reads it: objects converted (alone, in a list, in a
        Table's rows); a Status or metadata-only answer unchanged."""
        if not isinstance(obj, dict):
            return obj
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if kind == self.stored.api_kind and api_version == self.stored.api_version:
            return self.to_view(obj)
        if kind == self.stored.list_kind:
            items = [self.to_view(item) for item in obj.get("items") or []]
            return {**obj, "apiVersion": self.view.api_version, "kind": self.view.list_kind, "items": items}
        if kind == "Table":
            for row in obj.get("rows") or []:
                if isinstance(row, dict) and isinstance(row.get("object"), dict):
                    row["object"] = self.answer(row["object"])
        return obj


def _request_with(
    request: Request, body: bytes | None, *, json_accept: bool, method: str | None = None, content_type: str = ""
) -> Request:
    """``request`` with ``body`` in place of the one read (JSON, or ``content_type``) and, with ``json_accept``,
    asking for JSON (a watch's frames are encoded after conversion); ``method`` in place of its own."""
    drop = {b"content-length"} if body is not None else set()
    if json_accept:
        drop.add(b"accept")
    headers = [(k, v) for k, v in request.scope["headers"] if k not in drop]
    if body is not None:
        sent_type = content_type or (None if request.method == "PATCH" else JSON)  # a patch keeps its type
        if sent_type is not None:
            headers = [(k, v) for k, v in headers if k != b"content-type"] + [(b"content-type", sent_type.encode())]
        headers.append((b"content-length", str(len(body)).encode()))
    if json_accept:
        headers.append((b"accept", JSON.encode()))
    sent = body is None

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await request.receive()  # the client going away

    scope = {**request.scope, "headers": headers}
    if method is not None:
        scope["method"] = method
    return Request(scope, receive)


def _unknown_fields(request: Request, conversion: Conversion, body: dict[str, Any]) -> list[str]:
    """Fields the view's type does not have are unknown there: dropped, and warned about or refused as
    ``fieldValidation`` says (before conversion, where they could count as the stored kind's fields)."""
    mode = field_validation(request)
    unknown = conversion.pop_unknown(body)
    if not unknown or mode == "Ignore":
        return []
    messages = [f'unknown field "{path}"' for path in unknown]
    if mode == "Strict":
        kind = conversion.view.api_kind
        raise BadRequest(
            f'{kind} in version "{conversion.view.version}" cannot be handled as a {kind}: strict decoding error: '
            + ", ".join(messages)
        )
    return messages


async def _stored_body(
    request: Request, conversion: Conversion, raw: bytes, warnings: list[str], kube_version: str | None
) -> bytes:
    """A create, update or apply body in the stored form (a patch: renamed when the view renames patches)."""
    content_type = media_type(request)
    if request.method == "PATCH":
        if content_type == APPLY_PATCH:
            try:
                configuration = go_yaml.load(raw) if raw.strip() else None
            except (yaml.YAMLError, RecursionError):
                return raw  # the stored kind's handler refuses it with its own words
            if not isinstance(configuration, dict) or configuration.get("apiVersion") == conversion.stored.api_version:
                return raw
            return orjson.dumps(conversion.to_stored(configuration))
        assert conversion.rename_patch is not None
        return orjson.dumps(conversion.rename_patch(content_type, parse_json(None, raw)))
    body = parse_body(request, conversion.view, raw)
    if not isinstance(body, dict) or body.get("apiVersion") == conversion.stored.api_version:
        return orjson.dumps(body)  # the stored version is decoded as such, as kube-apiserver's decoder does
    warnings += _unknown_fields(request, conversion, body)
    _check_types(conversion, body, kube_version)
    return orjson.dumps(conversion.to_stored(body))


def _check_types(conversion: Conversion, body: dict[str, Any], kube_version: str | None) -> None:
    """The decoder's 400 for a field of the view's type it cannot decode, named as in the view's version (after
    conversion it would be another field of another version); views without a decoding schema are not checked."""
    view = conversion.view
    decode_types.check_types(
        decode_types.view_root(view), body, version=view.version, kube_version=kube_version, api_kind=view.api_kind
    )


def _patched(conversion: Conversion, content_type: str, current: dict[str, Any], patch: Any) -> Any:
    """The view's form of ``current`` with ``patch`` applied as its type says."""
    if content_type == JSON_PATCH:
        return json_patch(current, patch)
    if not isinstance(patch, dict):
        raise BadRequest(f"the object provided is unrecognized (must be of type {conversion.view.api_kind})")
    if content_type == STRATEGIC_MERGE_PATCH:
        return strategic_merge_patch(current, patch)
    return json_merge_patch(current, patch)


async def _read_modify_write(
    request: Request,
    target: Target,
    conversion: Conversion,
    handle: Handle,
    raw: bytes,
    warnings: list[str],
    kube_version: str | None,
) -> Response:
    """A merge, strategic merge or JSON patch to a view whose form is not a renaming of the stored one: applied
    to the object in the view's form, written back in the stored form as an update with the read resourceVersion."""
    content_type = media_type(request)
    if content_type not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH):
        return await handle(request, target)  # the stored kind's handler refuses the type with its own words
    if request.scope.get("query_string") and "force" in request.query_params:
        return await handle(_request_with(request, b"{}", json_accept=True), target)  # refused there as well
    patch = parse_json(None, raw)
    for attempt in range(_PATCH_ATTEMPTS):
        read = await handle(_request_with(request, None, json_accept=True, method="GET"), target)
        current = conversion.to_view(orjson.loads(bytes(read.body)))
        patched = _patched(conversion, content_type, current, patch)
        if not isinstance(patched, dict):
            raise BadRequest(f"the object provided is unrecognized (must be of type {conversion.view.api_kind})")
        resource_version = current.get("metadata", {}).get("resourceVersion")
        warnings += _unknown_fields(request, conversion, patched)
        _check_types(conversion, patched, kube_version)
        stored = conversion.to_stored(patched)
        stored.setdefault("metadata", {})["resourceVersion"] = resource_version
        body = orjson.dumps(stored)
        try:
            return await handle(_request_with(request, body, json_accept=True, method="PUT", content_type=JSON), target)
        except Conflict:
            if attempt == _PATCH_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


async def _converted_lines(conversion: Conversion, chunks: AsyncIterable[Any], frames: bool) -> AsyncIterator[bytes]:
    """A JSON watch's event lines in the view's form; each chunk holds the lines sent together, one or more."""
    async for chunk in chunks:
        out = []
        for line in bytes(chunk).split(b"\n"):
            if not line:
                continue
            event = orjson.loads(line)
            converted = orjson.dumps({"type": event["type"], "object": conversion.answer(event["object"])}) + b"\n"
            out.append(protobuf.encode_watch_line(converted) if frames else converted)
        yield b"".join(out)


def _with_warnings(response: Response, warnings: list[str]) -> Response:
    for text in warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.append("Warning", f'299 - "{escaped}"')
    return response


async def serve(
    request: Request, target: Target, conversion: Conversion, handle: Handle, *, kube_version: str | None = None
) -> Response:
    """Answer a request to a view's URL through ``handle``, the stored kind's handler of the request's verb,
    converting the body in and the answer out (decoded as ``kube_version``'s kube-apiserver decodes it)."""
    stored_target = Target(conversion.stored, target.namespace, target.name, target.subresource)
    warnings: list[str] = []
    accept = request.headers.get("accept", "")
    wants_protobuf = protobuf.accepts_protobuf(accept)
    has_form = protobuf.has_protobuf(conversion.view.api_version, conversion.view.api_kind)
    if wants_protobuf and not has_form and not protobuf.accepts_text(accept):
        # No protobuf form (v1.37's scheduling.k8s.io/v1beta1) and a client that takes nothing else: refused before
        # anything is done, as kube-apiserver negotiates the answer's media type first.
        watching = request.query_params.get("watch") in ("true", "1")
        types = protobuf.CUSTOM_STREAM_MEDIA_TYPES if watching else protobuf.CUSTOM_MEDIA_TYPES
        raise NotAcceptable(f"only the following media types are accepted: {types}")
    frames = request.method == "GET" and wants_protobuf and has_form  # a watch's frames, encoded after conversion
    # A view without a protobuf form answers in JSON, as the client's Accept allows: never the stored kind's
    # protobuf, another version's object.
    json_accept = (request.method == "GET" or not has_form) and wants_protobuf
    try:
        with conversion.during_write():
            if request.method == "PATCH" and conversion.rename_patch is None and media_type(request) != APPLY_PATCH:
                raw = await read_body(request)
                response = await _read_modify_write(
                    request, stored_target, conversion, handle, raw, warnings, kube_version
                )
            else:
                body = None
                if request.method in ("POST", "PUT", "PATCH"):
                    body = await _stored_body(request, conversion, await read_body(request), warnings, kube_version)
                response = await handle(_request_with(request, body, json_accept=json_accept), stored_target)
    except ApiError as exc:
        raise conversion.regroup(exc) from None
    if isinstance(response, StreamingResponse):  # a watch
        media = protobuf.PROTOBUF_STREAM if frames else JSON
        lines = _converted_lines(conversion, response.body_iterator, frames)
        converted: Response = StreamingResponse(lines, media_type=media)
    elif response.media_type == JSON:
        converted = Response(
            orjson.dumps(conversion.answer(orjson.loads(bytes(response.body)))),
            status_code=response.status_code,
            media_type=JSON,
        )
        for key, value in response.raw_headers:
            if key == b"warning":
                converted.raw_headers.append((key, value))
    else:
        converted = response
    return _with_warnings(converted, warnings)
