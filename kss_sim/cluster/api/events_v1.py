"""events.k8s.io/v1 Events: the core/v1 Events the store holds, served in the newer group-version.

kube-apiserver keeps one Event resource in storage and converts it to the version a request names
(pkg/apis/events/v1's conversion: ``regarding`` is ``involvedObject``, ``note`` is ``message``,
``reportingController`` is core's ``reportingComponent``, ``deprecatedSource``/``deprecatedFirstTimestamp``/
``deprecatedLastTimestamp``/``deprecatedCount`` are ``source``/``firstTimestamp``/``lastTimestamp``/``count``; the
other fields keep their names). kss does the same at the API's edges: a request's body (an object, a patch of
either kind, an apply configuration) is renamed into the core form and handed to the core/v1 handlers, and what
they answer (objects, lists, Tables, watch events) is renamed back. So an Event created through either API is seen
through both, and the store, Event series and expiry only ever see core/v1 Events.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import yaml
from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from starlette.types import Message

from kss_sim.cluster.admission.patch import APPLY_PATCH, JSON_PATCH
from kss_sim.cluster.admission.validation.events import events_v1_request
from kss_sim.cluster.api import protobuf
from kss_sim.cluster.api.requests import Target, field_validation, media_type, parse_body, parse_json, read_body
from kss_sim.cluster.api.responses import JSON
from kss_sim.cluster.errors import ApiError, BadRequest
from kss_sim.cluster.kinds.registry import BY_KIND, EVENTS_V1

API_VERSION = EVENTS_V1.api_version
# events.k8s.io/v1 field -> core/v1 field, where the names differ.
_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_TO_V1 = {core: v1 for v1, core in _TO_CORE.items()}
# Core's names events.k8s.io/v1 does not have: unknown fields in a v1 body, never renamed into the core form.
_CORE_ONLY = frozenset(_TO_V1)
# events.k8s.io/v1 fields Go leaves out when empty (omitempty on a string, number or pointer).
_OMITTED_EMPTY = frozenset(
    {
        "series",
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
        "related",
        "note",
        "type",
        "deprecatedCount",
    }
)

Handle = Callable[[Request, Target], Awaitable[Response]]


def to_v1(event: dict[str, Any]) -> dict[str, Any]:
    """A core/v1 Event (or a part of one: a watch bookmark) in its events.k8s.io/v1 form."""
    out: dict[str, Any] = {"kind": "Event", "apiVersion": API_VERSION}
    for key, value in event.items():
        if key in ("kind", "apiVersion"):
            continue
        name = _TO_V1.get(key, key)
        if name in _OMITTED_EMPTY and value in (None, "", 0):
            continue
        out[name] = value
    return out


def to_core(event: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event, patch or apply configuration in the core/v1 form (only the fields it has)."""
    out: dict[str, Any] = {}
    for key, value in event.items():
        if key == "apiVersion" and value == API_VERSION:
            value = "v1"
        out[_TO_CORE.get(key, key)] = value
    return out


def _json_patch_to_core(operations: Any) -> Any:
    """A JSON patch's paths (``/note``, ``/regarding/name``) renamed to the core form's."""
    if not isinstance(operations, list):
        return operations  # refused by the core handler as it refuses any malformed JSON patch
    renamed = []
    for op in operations:
        if isinstance(op, dict):
            op = dict(op)
            for key in ("path", "from"):
                path = op.get(key)
                if isinstance(path, str) and path.startswith("/"):
                    head, slash, rest = path[1:].partition("/")
                    op[key] = "/" + _TO_CORE.get(head, head) + slash + rest
        renamed.append(op)
    return renamed


def answer(obj: Any) -> Any:
    """A core handler's answer as an events.k8s.io/v1 client reads it: Events converted (alone, in a list, in a
    Table's rows); a Status or metadata-only answer unchanged."""
    if not isinstance(obj, dict):
        return obj
    kind = obj.get("kind")
    if kind == "Event" and obj.get("apiVersion") == "v1":
        return to_v1(obj)
    if kind == "EventList":
        return {**obj, "apiVersion": API_VERSION, "items": [to_v1(item) for item in obj.get("items") or []]}
    if kind == "Table":
        for row in obj.get("rows") or []:
            if isinstance(row, dict) and isinstance(row.get("object"), dict):
                row["object"] = answer(row["object"])
    return obj


def _regrouped(exc: ApiError) -> ApiError:
    """A core handler's error about Events as kube-apiserver words it for events.k8s.io (``events.events.k8s.io
    "x" not found``, ``Event.events.k8s.io "x" is invalid``)."""
    details = exc.details
    if not details or details.get("group") or details.get("kind") not in ("events", "Event"):
        return exc
    kind = str(details["kind"])
    if exc.message.startswith(f'{kind} "'):
        exc.message = f"{kind}.{EVENTS_V1.group}" + exc.message[len(kind) :]
        exc.args = (exc.message,)
    exc.details = {**details, "group": EVENTS_V1.group}
    return exc


def _unknown_core_fields(request: Request, body: dict[str, Any]) -> list[str]:
    """Core-only names in an events.k8s.io/v1 body are unknown fields there: dropped, and warned about or
    refused as ``fieldValidation`` says (before anything is renamed into the core form, where they would count)."""
    mode = field_validation(request)
    unknown = [key for key in body if key in _CORE_ONLY]
    for key in unknown:
        del body[key]
    if not unknown or mode == "Ignore":
        return []
    messages = [f'unknown field "{key}"' for key in unknown]
    if mode == "Strict":
        raise BadRequest(
            'Event in version "v1" cannot be handled as a Event: strict decoding error: ' + ", ".join(messages)
        )
    return messages


def _request_with(request: Request, body: bytes | None, *, json_accept: bool) -> Request:
    """``request`` with ``body`` in place of the one read (JSON, or the patch's own type) and, with ``json_accept``,
    asking for JSON (a watch's frames are encoded here, after conversion)."""
    drop = {b"content-length"} if body is not None else set()
    if json_accept:
        drop.add(b"accept")
    headers = [(k, v) for k, v in request.scope["headers"] if k not in drop]
    if body is not None:
        if request.method != "PATCH":  # a patch keeps its type; an object is now JSON
            headers = [(k, v) for k, v in headers if k != b"content-type"] + [(b"content-type", JSON.encode())]
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

    return Request({**request.scope, "headers": headers}, receive)


async def _core_body(request: Request, warnings: list[str]) -> bytes:
    """The request's body in the core/v1 form."""
    raw = await read_body(request)
    if request.method == "PATCH":
        content_type = media_type(request)
        if content_type == APPLY_PATCH:
            try:
                configuration = yaml.safe_load(raw) if raw.strip() else None
            except (yaml.YAMLError, RecursionError):
                return raw  # the core handler refuses it with its own words
            return orjson.dumps(to_core(configuration)) if isinstance(configuration, dict) else raw
        patch = parse_json(None, raw)
        if content_type == JSON_PATCH:
            return orjson.dumps(_json_patch_to_core(patch))
        return orjson.dumps(to_core(patch) if isinstance(patch, dict) else patch)
    body = parse_body(request, EVENTS_V1, raw)
    if not isinstance(body, dict) or body.get("apiVersion") == "v1":
        return orjson.dumps(body)  # a core/v1 Event is decoded as such, as kube-apiserver's decoder does
    warnings += _unknown_core_fields(request, body)
    return orjson.dumps(to_core(body))


async def _converted_lines(lines: AsyncIterable[Any], frames: bool) -> AsyncIterator[bytes]:
    async for line in lines:
        event = orjson.loads(line)
        converted = orjson.dumps({"type": event["type"], "object": answer(event["object"])}) + b"\n"
        yield protobuf.encode_watch_line(converted) if frames else converted


def _with_warnings(response: Response, warnings: list[str]) -> Response:
    for text in warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.append("Warning", f'299 - "{escaped}"')
    return response


async def serve(request: Request, target: Target, handle: Handle) -> Response:
    """Answer a request to ``/apis/events.k8s.io/v1/...events...`` through ``handle``, the core/v1 handler of
    its verb, converting the body in and the answer out."""
    core_target = Target(BY_KIND["Event"], target.namespace, target.name, target.subresource)
    warnings: list[str] = []
    body = await _core_body(request, warnings) if request.method in ("POST", "PUT", "PATCH") else None
    frames = request.method == "GET" and protobuf.accepts_protobuf(request.headers.get("accept", ""))
    try:
        # The store validates the writes made inside by events.k8s.io/v1's rules (its 422s: nothing stored).
        with events_v1_request():
            response = await handle(_request_with(request, body, json_accept=frames), core_target)
    except ApiError as exc:
        raise _regrouped(exc) from None
    if isinstance(response, StreamingResponse):  # a watch
        media = protobuf.PROTOBUF_STREAM if frames else JSON
        converted: Response = StreamingResponse(_converted_lines(response.body_iterator, frames), media_type=media)
    elif response.media_type == JSON:
        converted = Response(
            orjson.dumps(answer(orjson.loads(bytes(response.body)))),
            status_code=response.status_code,
            media_type=JSON,
        )
        for key, value in response.raw_headers:
            if key == b"warning":
                converted.raw_headers.append((key, value))
    else:
        converted = response
    return _with_warnings(converted, warnings)
