"""What a resource request asks for, read off the HTTP request: the object the URL addresses (``Target``), the
query's options (``dryRun``, ``fieldManager``, ``fieldValidation``, the Accept header's ``as=``), and the body,
size-limited and decoded (JSON, YAML, or protobuf), with kube-apiserver's 400/413/415 answers for bad ones.
The verbs that act on them are ``router.py``'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from fastapi import Request

from kss_sim.cluster.admission import decode_types, fields, go_values
from kss_sim.cluster.admission.managed_fields import manager_name, validate_field_manager
from kss_sim.cluster.api import params, protobuf
from kss_sim.cluster.crd import objects as custom_objects
from kss_sim.cluster.crd.kinds import CustomKindInfo
from kss_sim.cluster.errors import BadRequest, RequestEntityTooLarge, UnknownResource, UnsupportedMediaType
from kss_sim.cluster.kinds.registry import DEFAULT_MINOR, NO_GATES, Gates, KindInfo, resource_info
from kss_sim.config import Settings
from kss_sim.kube import go_yaml
from kss_sim.kube.api_enablement import NO_RUNTIME_CONFIG, RuntimeConfig
from kss_sim.kube.objects import Obj
from kss_sim.state import state_accessor

_settings = state_accessor("settings", Settings)


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource URL addresses."""

    info: KindInfo
    namespace: str | None
    name: str | None
    subresource: str | None


CustomLookup = Callable[[str, str, str], KindInfo | None]


def parse_target(
    group: str,
    version: str,
    segments: list[str],
    gates: Gates = NO_GATES,
    custom: CustomLookup | None = None,
    minor: int = DEFAULT_MINOR,
    apis: RuntimeConfig = NO_RUNTIME_CONFIG,
) -> Target:
    """Resolve ``.../namespaces/{ns}/{plural}/{name}/{sub}`` or ``.../{plural}/{name}/{sub}`` (only kinds served
    with the feature gates ``gates`` by Kubernetes 1.``minor`` under the runtime config ``apis``, then the CRDs'
    kinds ``custom`` finds by group, version and plural)."""

    def lookup(plural: str) -> KindInfo | None:
        info = resource_info(group, version, plural, gates, minor, apis)
        if info is None and custom is not None and group:
            info = custom(group, version, plural)
        return info

    segments = [s for s in segments if s]
    namespace: str | None = None
    if len(segments) >= 3 and segments[0] == "namespaces" and segments[2] != "namespaces" and lookup(segments[2]):
        namespace = segments[1]
        segments = segments[2:]
    if not segments:
        raise UnknownResource()
    info = lookup(segments[0])
    if info is None or len(segments) > 3:
        raise UnknownResource()
    if namespace is not None and not info.namespaced:
        raise UnknownResource()
    name = segments[1] if len(segments) > 1 else None
    sub = segments[2] if len(segments) > 2 else None
    if sub is not None and sub not in info.subresources:
        raise UnknownResource()
    return Target(info, namespace, name, sub)


def wants(request: Request, what: str) -> bool:
    accept = request.headers.get("accept", "")
    first = accept.split(",")[0]
    return f"as={what}" in first.replace(" ", "")


def query_bool(request: Request, name: str) -> bool:
    return params.flag(request.query_params, name) if request.scope.get("query_string") else False


async def read_body(request: Request) -> bytes:
    limit = _settings(request).max_body_bytes
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit:
        raise RequestEntityTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestEntityTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


_BODY_TYPES = ("application/json", "application/yaml", "")


JSON_TYPES = ("application/json", "")


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _summary(body: bytes, limit: int = 30) -> str:
    """The start of a refused body as kube-apiserver quotes it: JSON as text, anything else in hex."""
    if not body:
        return "<empty>"
    head = body[:limit]
    text = head.decode("utf-8", "replace") if body.startswith(b"{") else head.hex()
    return text + " ..." if len(body) > limit else text


_YAML_TOO_DEEP = "the object provided is unrecognized: yaml parse error: exceeded max depth"


def parse_body(request: Request, info: KindInfo | None, body: bytes) -> Any:
    """Decode a create/update body: JSON, YAML, or protobuf for the kinds kubectl's generators create."""
    content_type = media_type(request)
    if content_type == protobuf.PROTOBUF:
        if info is not None and info.custom:  # custom resources are served in JSON and YAML only, as on a cluster
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format ({content_type}) - accepted media types "
                "include: application/json, application/yaml"
            )
        try:
            return protobuf.decode(body)
        except protobuf.ProtobufError as exc:
            # kube-apiserver's transformDecodeError: a body its decoder refuses is a bad request.
            expected = info.kind if info is not None else "Object"
            raise BadRequest(
                f"the object provided is unrecognized (must be of type {expected}): {exc} ({_summary(body)})"
            ) from None
    if content_type not in _BODY_TYPES:
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format ({content_type}) - accepted media types include: "
            "application/json, application/yaml"
        )
    if content_type == "application/yaml":
        if not body.strip():
            raise BadRequest("the request body is empty")
        try:
            return go_yaml.load(body)
        except yaml.YAMLError as exc:
            raise BadRequest(f"the object provided is unrecognized: yaml parse error: {exc}") from None
        except RecursionError:  # PyYAML's constructor recurses once per level of nesting
            raise BadRequest(_YAML_TOO_DEEP) from None
    return parse_json(info, body)


def parse_json(info: KindInfo | None, body: bytes) -> Any:
    if not body.strip():
        raise BadRequest("the request body is empty")
    try:
        parsed = orjson.loads(body)
        go_values.remember_literals(body)  # for the decoder's messages, which quote numbers as they were sent
    except orjson.JSONDecodeError as exc:
        # orjson refuses a number beyond float64 (1e1000) as a syntax error; to Go it is a number that only the
        # field's type can refuse (a Quantity takes it), so the body is read again, such numbers as infinities.
        parsed = go_values.loads_beyond_float64(body) if "infinity" in str(exc) else go_values.NOT_JSON
        if parsed is go_values.NOT_JSON:
            what = f"must be of type {info.api_kind}" if info is not None else "must be JSON"
            raise BadRequest(
                f"the object provided is unrecognized ({what}): couldn't get version/kind; json parse error: {exc}"
            ) from None
    return parsed


def field_validation(request: Request) -> str:
    """The request's ``fieldValidation`` mode (``Warn`` unless given); 422 for an unknown one."""
    if not request.scope.get("query_string"):
        return "Warn"
    params.write_options(request.query_params, request.method)  # an unknown mode is a 422 (WriteOptions)
    return request.query_params.get("fieldValidation") or "Warn"


def field_warnings(
    request: Request, info: KindInfo, obj: Any, *, patch: bool = False, kube_version: str | None = None
) -> list[str]:
    """kube-apiserver's ``fieldValidation`` on a create/update body or a merge patch: fields ``info.kind`` does
    not have in ``kube_version`` are dropped, and reported as warnings (``Warn``, the default), not at all
    (``Ignore``), or refused (``Strict``, what kubectl sends: 400, nothing written)."""
    mode = field_validation(request)
    if not isinstance(obj, dict):
        return []
    messages = _unknown_field_messages(mode, info, obj, patch=patch, kube_version=kube_version)
    if messages and mode == "Strict":
        kind = info.api_kind
        raise BadRequest(
            f'{kind} in version "{info.version}" cannot be handled as a {kind}: strict decoding error: '
            + ", ".join(messages)
        )
    return messages


def _unknown_field_messages(
    mode: str, info: KindInfo, obj: dict[str, Any], *, patch: bool = False, kube_version: str | None = None
) -> list[str]:
    """Drop from ``obj`` the fields ``info.kind`` does not have; what to report about them under ``mode``."""
    if isinstance(info, CustomKindInfo):
        # Decoded as unstructured before anything is pruned: a number beyond float64 anywhere is refused.
        if (problem := decode_types.first_beyond_float64(obj)) is not None:
            kind = info.api_kind
            raise BadRequest(f'{kind} in version "{info.version}" cannot be handled as a {kind}: {problem}')
        unknown = custom_objects.unknown_fields(info, obj)
    else:
        unknown = fields.unknown_fields(info.kind, obj, prune=True, patch=patch, kube_version=kube_version)
    if not unknown or mode == "Ignore":
        return []
    return [f'unknown field "{path}"' for path in unknown]


def json_patch_field_check(
    request: Request, info: KindInfo, warnings: list[str], *, kube_version: str | None = None
) -> Callable[[Obj], None]:
    """kube-apiserver checks a JSON patch's fields on the object it produces (the operations have no shape):
    unknown ones are dropped from it, refused under ``Strict`` (400, with decoding's message) or added to
    ``warnings``."""
    mode = field_validation(request)  # an unknown mode is refused before anything is patched

    def check(patched: Obj) -> None:
        messages = _unknown_field_messages(mode, info, patched, kube_version=kube_version)
        if messages and mode == "Strict":
            raise BadRequest("strict decoding error: " + ", ".join(messages))
        warnings.extend(messages)

    return check


def dry_run_requested(request: Request, body_dry_run: list[str] | None = None) -> bool:
    """Whether the write is a dry run; 422 for write options kube-apiserver refuses (``params.write_options``)."""
    if not request.scope.get("query_string") and not body_dry_run:
        return False  # the common case; parsing an empty query still costs (Starlette's lazy attribute)
    return params.write_options(request.query_params, request.method, body_dry_run or ())


def field_manager(request: Request) -> str:
    """The managedFields manager of a create, update or patch: ``fieldManager``, else the User-Agent's prefix."""
    given = request.query_params.get("fieldManager") if request.scope.get("query_string") else None
    if given:
        validate_field_manager(given)
    return manager_name(given, request.headers.get("user-agent", ""))
