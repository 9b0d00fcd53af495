"""Just enough of Kubernetes' protobuf encoding to read what kubectl's typed clients send.

``kubectl create namespace|priorityclass|poddisruptionbudget`` post protobuf bodies
(``application/vnd.kubernetes.protobuf``): the magic ``k8s\\x00`` then a ``runtime.Unknown`` whose ``raw``
field holds the object. This module decodes the protobuf wire format with small schemas of the
messages those commands build (field numbers from k8s.io/api's generated.proto) into the same JSON
dicts the JSON path produces. Other kinds answer 415 as before.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """A body that is not the protobuf encoding of a kind this module knows."""


# A schema maps field number -> (json name, decoder, repeated).
Field = tuple[str, "Decoder", bool]
Schema = dict[int, Field]
Decoder = Callable[[Any], Any]


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, raw value) for each field of a message."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ProtobufError("truncated field")
            value, pos = buf[pos : pos + length], pos + length
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _string(raw: Any) -> str:
    return bytes(raw).decode()


def _int(raw: Any) -> int:
    value = int(raw)
    return value - (1 << 64) if value >= 1 << 63 else value  # int32/int64 are two's complement varints


def _bool(raw: Any) -> bool:
    return bool(raw)


def _message(schema: Schema) -> Decoder:
    def decode(raw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for number, _wire, value in _fields(bytes(raw)):
            spec = schema.get(number)
            if spec is None:
                continue  # a field kubectl's commands never set for these kinds
            name, decoder, repeated = spec
            decoded = decoder(value)
            if decoded == "" and not repeated:
                continue  # Go writes empty strings; their JSON form omits them
            if repeated:
                out.setdefault(name, []).append(decoded)
            else:
                out[name] = decoded
        return out

    return decode


def _map(raw: Any) -> tuple[str, str]:
    entry = _message({1: ("key", _string, False), 2: ("value", _string, False)})(raw)
    return str(entry.get("key", "")), str(entry.get("value", ""))


def _time(raw: Any) -> str:
    t = _message({1: ("seconds", _int, False), 2: ("nanos", _int, False)})(raw)
    seconds = int(t.get("seconds", 0))
    if seconds == 0:
        return ""  # the zero time: JSON leaves it out
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _int_or_string(raw: Any) -> int | str:
    v = _message({1: ("type", _int, False), 2: ("intVal", _int, False), 3: ("strVal", _string, False)})(raw)
    return str(v.get("strVal", "")) if v.get("type") == 1 else int(v.get("intVal", 0))


_OWNER_REFERENCE = _message({
    1: ("kind", _string, False), 3: ("name", _string, False), 4: ("uid", _string, False),
    5: ("apiVersion", _string, False), 6: ("controller", _bool, False), 7: ("blockOwnerDeletion", _bool, False),
})  # fmt: skip
_OBJECT_META_FIELDS: Schema = {
    1: ("name", _string, False), 2: ("generateName", _string, False), 3: ("namespace", _string, False),
    5: ("uid", _string, False), 6: ("resourceVersion", _string, False), 7: ("generation", _int, False),
    8: ("creationTimestamp", _time, False), 11: ("labels", _map, True), 12: ("annotations", _map, True),
    13: ("ownerReferences", _OWNER_REFERENCE, True), 14: ("finalizers", _string, True),
}  # fmt: skip


def _object_meta(raw: Any) -> dict[str, Any]:
    meta: dict[str, Any] = _message(_OBJECT_META_FIELDS)(raw)
    for key in ("labels", "annotations"):
        if key in meta:
            meta[key] = dict(meta[key])
    return meta


_REQUIREMENT = _message({1: ("key", _string, False), 2: ("operator", _string, False), 3: ("values", _string, True)})


def _label_selector(raw: Any) -> dict[str, Any]:
    sel: dict[str, Any] = _message({1: ("matchLabels", _map, True), 2: ("matchExpressions", _REQUIREMENT, True)})(raw)
    if "matchLabels" in sel:
        sel["matchLabels"] = dict(sel["matchLabels"])
    return sel


# apiVersion/kind -> schema of the top-level object.
_KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {
        1: ("metadata", _object_meta, False),
        2: ("spec", _message({1: ("finalizers", _string, True)}), False),
    },
    ("scheduling.k8s.io/v1", "PriorityClass"): {
        1: ("metadata", _object_meta, False), 2: ("value", _int, False), 3: ("globalDefault", _bool, False),
        4: ("description", _string, False), 5: ("preemptionPolicy", _string, False),
    },
    ("policy/v1", "PodDisruptionBudget"): {
        1: ("metadata", _object_meta, False),
        2: ("spec", _message({
            1: ("minAvailable", _int_or_string, False), 2: ("selector", _label_selector, False),
            3: ("maxUnavailable", _int_or_string, False), 4: ("unhealthyPodEvictionPolicy", _string, False),
        }), False),
    },
}  # fmt: skip


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object of a supported kind; ProtobufError otherwise."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic number")
    unknown = _message({
        1: ("typeMeta", _message({1: ("apiVersion", _string, False), 2: ("kind", _string, False)}), False),
        2: ("raw", bytes, False), 3: ("contentEncoding", _string, False), 4: ("contentType", _string, False),
    })(body[len(MAGIC):])  # fmt: skip
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = str(type_meta.get("apiVersion", "")), str(type_meta.get("kind", ""))
    schema = _KINDS.get((api_version, kind))
    if schema is None:
        raise ProtobufError(f"protobuf bodies of {kind or 'this kind'} are not supported; send JSON or YAML")
    if unknown.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {unknown['contentEncoding']!r}")
    obj = _message(schema)(unknown.get("raw") or b"")
    return {"apiVersion": api_version, "kind": kind, **obj}
