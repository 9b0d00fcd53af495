"""One codec between Kubernetes' protobuf messages and the JSON dicts kss stores, on Google's protobuf runtime.

The messages are those of ``protobuf_messages.json`` (``tools/gen_protobuf_descriptors.py``: k8s.io/api and
apimachinery's proto2 messages with their Go JSON tags). They become one descriptor pool; parsing and serializing
are the runtime's, and a walk over the fields turns a message into the object's JSON as Go's ``encoding/json``
writes it (``omitempty`` zero values left out, ``,inline`` structs merged into their parent, int64 as numbers,
bytes as base64) and back. A few apimachinery types have a JSON form of their own: ``resource.Quantity`` (a
string), ``metav1.Time`` / ``MicroTime`` (RFC 3339), ``intstr.IntOrString`` (a number or a string),
``runtime.RawExtension`` and ``metav1.FieldsV1`` (embedded JSON), and named slices such as ``metav1.Verbs``
(a list). Loaded on first use: the runtime and the descriptors cost some milliseconds that JSON-only servers skip.
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

MESSAGES_FILE = Path(__file__).with_name("protobuf_messages.json")
MAGIC = b"k8s\x00"

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_RUNTIME = "k8s.io.apimachinery.pkg.runtime"
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_TIME = f"{_META}.Time"
_MICRO_TIME = f"{_META}.MicroTime"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_RAW_EXTENSION = f"{_RUNTIME}.RawExtension"
_FIELDS_V1 = f"{_META}.FieldsV1"
_UNKNOWN = f"{_RUNTIME}.Unknown"
_WATCH_EVENT = f"{_META}.WatchEvent"

# API group -> the protobuf package prefix of its messages (a group kss serves as a custom resource has none).
_GROUP_PACKAGES = {
    group: f"k8s.io.api.{package}"
    for group, package in {
        "": "core",
        "apps": "apps",
        "batch": "batch",
        "policy": "policy",
        "autoscaling": "autoscaling",
        "scheduling.k8s.io": "scheduling",
        "storage.k8s.io": "storage",
        "coordination.k8s.io": "coordination",
        "resource.k8s.io": "resource",
        "events.k8s.io": "events",
        "discovery.k8s.io": "discovery",
        "rbac.authorization.k8s.io": "rbac",
        "authentication.k8s.io": "authentication",
        "authorization.k8s.io": "authorization",
        "apidiscovery.k8s.io": "apidiscovery",
    }.items()
} | {"apiextensions.k8s.io": "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions"}

# apiextensions' types whose Go JSON is not their struct's (``marshal.go``): a JSON value kept as raw bytes, and the
# schema-or-something unions.
_APIEXTENSIONS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
_JSON = f"{_APIEXTENSIONS}.JSON"
_SCHEMA = f"{_APIEXTENSIONS}.JSONSchemaProps"
_SCHEMA_OR_BOOL = f"{_APIEXTENSIONS}.JSONSchemaPropsOrBool"
_SCHEMA_OR_ARRAY = f"{_APIEXTENSIONS}.JSONSchemaPropsOrArray"
_SCHEMA_OR_STRINGS = f"{_APIEXTENSIONS}.JSONSchemaPropsOrStringArray"
_UNIONS = frozenset({_SCHEMA_OR_BOOL, _SCHEMA_OR_ARRAY, _SCHEMA_OR_STRINGS})

_F = descriptor_pb2.FieldDescriptorProto
_SCALAR_TYPES = {
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
    "bool": _F.TYPE_BOOL,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "double": _F.TYPE_DOUBLE,
    "float": _F.TYPE_FLOAT,
}


class CodecError(ValueError):
    """Bytes that are not the message they claim to be, or an object that does not fit its message."""


@dataclass(frozen=True, slots=True)
class _Field:
    proto_name: str
    json_name: str
    repeated: bool
    is_map: bool
    message: str | None  # the full name of a message field's (or a map's values') type; None for scalars
    scalar: str  # the scalar type of a scalar field or of a map's values ("" for messages)
    omitempty: bool
    pointer: bool
    inline: bool


@dataclass(frozen=True, slots=True)
class _Message:
    fields: dict[int, _Field]
    by_json: dict[str, _Field]
    inline: tuple[_Field, ...]
    is_list: bool  # a named Go slice: its JSON is its ``items``


class _Registry:
    """The descriptor pool of every message, their classes, and the Go JSON facts of their fields."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.pool = descriptor_pool.DescriptorPool()
        self.messages: dict[str, _Message] = {}
        self.packages: set[str] = set()
        for file in data["files"]:
            self.pool.Add(self._file(file))
            self.packages.add(file["package"])
        self._classes: dict[str, type[Message]] = {}

    def _file(self, file: dict[str, Any]) -> descriptor_pb2.FileDescriptorProto:
        package = file["package"]
        proto = descriptor_pb2.FileDescriptorProto(
            name=f"{file['path']}/generated.proto",
            package=package,
            syntax="proto2",
            dependency=[f"{dep}/generated.proto" for dep in file["deps"]],
        )
        for name, message in file["messages"].items():
            described = proto.message_type.add(name=name)
            fields: dict[int, _Field] = {}
            for proto_name, number, label, type_name, json_name, flags in message["fields"]:
                field = described.field.add(name=proto_name, number=number, json_name=json_name)
                field.label = _F.LABEL_REPEATED if label == "r" else _F.LABEL_OPTIONAL
                is_map = type_name.startswith("map:")
                value_type = type_name.split(":")[2] if is_map else type_name
                if is_map:
                    entry = described.nested_type.add(name=proto_name[0].upper() + proto_name[1:] + "Entry")
                    entry.options.map_entry = True
                    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
                    _typed(entry.field.add(name="value", number=2, label=_F.LABEL_OPTIONAL), value_type)
                    field.type = _F.TYPE_MESSAGE
                    field.type_name = f".{package}.{name}.{entry.name}"
                else:
                    _typed(field, value_type)
                message_type = None if value_type in _SCALAR_TYPES else value_type
                fields[number] = _Field(
                    proto_name=proto_name,
                    json_name=json_name if json_name != "-" else proto_name,
                    repeated=label == "r" and not is_map,
                    is_map=is_map,
                    message=message_type,
                    scalar="" if message_type else value_type,
                    omitempty="o" in flags,
                    pointer="p" in flags,
                    inline="i" in flags,
                )
            self.messages[f"{package}.{name}"] = _Message(
                fields=fields,
                by_json={f.json_name: f for f in fields.values() if not f.inline},
                inline=tuple(f for f in fields.values() if f.inline),
                is_list=bool(message.get("list")),
            )
        return proto

    def new(self, full_name: str) -> Message:
        cls = self._classes.get(full_name)
        if cls is None:
            cls = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(full_name))
            self._classes[full_name] = cls
        return cls()

    def object_message(self, api_version: str, kind: str) -> str | None:
        """The message of an object of ``apiVersion``/``kind``; meta/v1's kinds (Status, DeleteOptions, ...) in
        any group version, as client-go sends them; None when kss has no protobuf form for it."""
        group, _, version = api_version.rpartition("/")
        package = _GROUP_PACKAGES.get(group)
        if package is not None:
            name = f"{package}.{version}.{kind}"
            if name in self.messages:
                return name
        if group in ("", "meta.k8s.io") or package is not None:
            name = f"{_META}.{kind}"
            if name in self.messages:
                return name
        return None


def _typed(field: descriptor_pb2.FieldDescriptorProto, type_name: str) -> None:
    if type_name in _SCALAR_TYPES:
        field.type = _SCALAR_TYPES[type_name]
    else:
        field.type = _F.TYPE_MESSAGE
        field.type_name = "." + type_name


@functools.cache
def registry() -> _Registry:
    """The messages, built once."""
    return _Registry(orjson.loads(MESSAGES_FILE.read_bytes()))


# ---------------------------------------------------------------------------------------------- to JSON


def _time_json(message: Any, micro: bool) -> str | None:
    seconds, nanos = int(message.seconds), int(message.nanos)
    if seconds == 0 and nanos == 0:
        return None  # Go's zero time: JSON null, which an object's JSON leaves out
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanos // 1000 if micro else 0)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _union_json(reg: _Registry, name: str, message: Any) -> Any:
    """apiextensions' unions as their ``MarshalJSON`` writes them: the list when it has one, else the schema, else
    (OrBool) the bool; None (left out) when empty."""
    if name == _SCHEMA_OR_ARRAY and len(message.jSONSchemas):
        return [to_json(reg, _SCHEMA, item) for item in message.jSONSchemas]
    if name == _SCHEMA_OR_STRINGS and len(message.property):
        return list(message.property)
    if message.HasField("schema"):
        return to_json(reg, _SCHEMA, message.schema)
    if name == _SCHEMA_OR_BOOL:
        return bool(message.allows)
    return None


def _special_json(name: str, message: Any) -> Any:
    if name == _QUANTITY:
        return message.string
    if name in (_TIME, _MICRO_TIME):
        return _time_json(message, name == _MICRO_TIME)
    if name == _INT_OR_STRING:
        return message.strVal if message.type == 1 else int(message.intVal)
    raw = message.raw if name in (_RAW_EXTENSION, _JSON) else message.Raw
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise CodecError(f"{name.rsplit('.', 1)[1]} does not hold JSON") from None


_SPECIAL = frozenset({_QUANTITY, _TIME, _MICRO_TIME, _INT_OR_STRING, _RAW_EXTENSION, _FIELDS_V1, _JSON})


def _scalar_json(field: _Field, value: Any) -> Any:
    if field.scalar == "bytes":
        return base64.b64encode(value).decode()
    if field.scalar == "double" and value.is_integer() and abs(value) < 1e21:
        return int(value)  # Go writes a whole float64 without a fraction (a schema's ``minimum: 1``)
    return value


def _value_json(reg: _Registry, field: _Field, value: Any) -> Any:
    return _scalar_json(field, value) if field.message is None else to_json(reg, field.message, value)


def to_json(reg: _Registry, name: str, message: Any) -> Any:
    """The JSON form of ``message`` (of full name ``name``), as the Go type's JSON tags write it."""
    if name in _SPECIAL:
        return _special_json(name, message)
    if name in _UNIONS:
        return _union_json(reg, name, message)
    info = reg.messages[name]
    if info.is_list:
        return list(message.items)
    out: dict[str, Any] = {}
    for descriptor, value in message.ListFields():
        field = info.fields[descriptor.number]
        if field.is_map:
            out[field.json_name] = {key: _value_json(reg, field, item) for key, item in value.items()}
        elif field.repeated:
            out[field.json_name] = [_value_json(reg, field, item) for item in value]
        elif field.message is not None:
            converted = to_json(reg, field.message, value)
            if field.inline:
                out.update(converted)
            elif converted is not None:
                out[field.json_name] = converted
        elif not (field.omitempty and not field.pointer and not value):
            # Go writes a non-pointer scalar even when zero; its JSON leaves the zero out only with omitempty.
            out[field.json_name] = _scalar_json(field, value)
    return out


# ---------------------------------------------------------------------------------------------- from JSON


def _time_message(message: Any, text: Any, micro: bool) -> None:
    if not isinstance(text, str):
        raise CodecError(f"a time must be a string, not {text!r}")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CodecError(f"{text!r} is not an RFC 3339 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    message.seconds = int(moment.timestamp() // 1)
    message.nanos = moment.microsecond * 1000 if micro else 0


def _fill_special(name: str, message: Any, value: Any) -> None:
    if name == _QUANTITY:
        message.string = str(value)
    elif name in (_TIME, _MICRO_TIME):
        _time_message(message, value, name == _MICRO_TIME)
    elif name == _INT_OR_STRING:
        if isinstance(value, str):
            message.type, message.strVal = 1, value
        else:
            message.type, message.intVal = 0, int(value)
    elif name in (_RAW_EXTENSION, _JSON):
        message.raw = orjson.dumps(value)
    else:
        message.Raw = orjson.dumps(value)


def _scalar_value(field: _Field, value: Any) -> Any:
    if field.scalar == "bytes":
        return base64.b64decode(value) if isinstance(value, str) else bytes(value)
    if field.scalar in ("int32", "int64") and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _fill_value(reg: _Registry, field: _Field, message: Any, value: Any) -> None:
    if field.message is None:
        raise CodecError(f"{field.json_name} is not a message")
    fill(reg, field.message, message, value)


def _fill_union(reg: _Registry, name: str, message: Any, value: Any) -> None:
    """apiextensions' unions as their ``UnmarshalJSON`` reads them: an object is the schema (OrBool: allowing),
    a list the schemas or strings, a bool (OrBool) whether anything is allowed."""
    if isinstance(value, dict):
        fill(reg, _SCHEMA, message.schema, value)
        if name == _SCHEMA_OR_BOOL:
            message.allows = True
    elif isinstance(value, list) and name == _SCHEMA_OR_ARRAY:
        for item in value:
            fill(reg, _SCHEMA, message.jSONSchemas.add(), item)
    elif isinstance(value, list) and name == _SCHEMA_OR_STRINGS:
        message.property.extend(str(item) for item in value)
    elif isinstance(value, bool) and name == _SCHEMA_OR_BOOL:
        message.allows = value
    else:
        raise CodecError(f"{name.rsplit('.', 1)[1]} cannot be {type(value).__name__}")


def fill(reg: _Registry, name: str, message: Any, value: Any) -> None:
    """Set ``message`` (of full name ``name``) from the JSON form ``value``; fields it does not have are left out."""
    if name in _SPECIAL:
        _fill_special(name, message, value)
        return
    if name in _UNIONS:
        message.SetInParent()
        _fill_union(reg, name, message, value)
        return
    info = reg.messages[name]
    if info.is_list:
        message.items.extend(value or [])
        return
    if not isinstance(value, dict):
        raise CodecError(f"{name.rsplit('.', 1)[1]} must be an object, not {type(value).__name__}")
    message.SetInParent()  # a non-pointer struct is written even when empty, as Go writes it
    for inline in info.inline:
        fill(reg, str(inline.message), getattr(message, inline.proto_name), value)
    for key, item in value.items():
        field = info.by_json.get(key)
        if field is None or item is None:
            continue
        try:
            target = getattr(message, field.proto_name)
            if field.is_map:
                for map_key, map_value in item.items():
                    if field.message is None:
                        target[map_key] = _scalar_value(field, map_value)
                    else:
                        _fill_value(reg, field, target[map_key], map_value)
            elif field.repeated:
                for element in item:
                    if field.message is None:
                        target.append(_scalar_value(field, element))
                    else:
                        _fill_value(reg, field, target.add(), element)
            elif field.message is not None:
                _fill_value(reg, field, target, item)
            else:
                setattr(message, field.proto_name, _scalar_value(field, item))
        except (TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, CodecError):
                raise
            raise CodecError(f"{key}: {exc}") from None


# ---------------------------------------------------------------------------------------------- the envelope


def decode(body: bytes) -> tuple[str, str, dict[str, Any]]:
    """``(apiVersion, kind, object as JSON)`` of a ``k8s\\x00`` + ``runtime.Unknown`` body."""
    reg = registry()
    unknown: Any = reg.new(_UNKNOWN)
    try:
        unknown.ParseFromString(body[len(MAGIC) :])
    except DecodeError as exc:
        raise CodecError(f"the envelope does not decode: {exc}") from None
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    if unknown.contentEncoding:
        raise CodecError(f"unsupported content encoding {unknown.contentEncoding!r}")
    name = reg.object_message(api_version, kind)
    if name is None:
        raise CodecError(f"protobuf bodies of {kind or 'this kind'} are not supported; send JSON or YAML")
    message = reg.new(name)
    try:
        message.ParseFromString(unknown.raw)
    except DecodeError as exc:
        raise CodecError(f"the {kind} does not decode: {exc}") from None
    obj = to_json(reg, name, message)
    return api_version, kind, obj


def encode(obj: dict[str, Any]) -> bytes | None:
    """``obj`` (with its apiVersion and kind) as ``k8s\\x00`` + ``runtime.Unknown``; None when kss has no
    protobuf form for its kind (a custom resource, a Table)."""
    reg = registry()
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    name = reg.object_message(api_version, kind)
    if name is None:
        return None
    message = reg.new(name)
    fill(reg, name, message, obj)
    unknown: Any = reg.new(_UNKNOWN)
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    unknown.raw = message.SerializeToString()
    envelope: bytes = unknown.SerializeToString()
    return MAGIC + envelope


def encode_watch_event(event_type: str, obj: dict[str, Any]) -> bytes | None:
    """One watch event as kube-apiserver streams protobuf: a ``metav1.WatchEvent`` (no envelope) whose object is
    the enveloped object, after its length as four big-endian bytes."""
    inner = encode(obj)
    if inner is None:
        return None
    event: Any = registry().new(_WATCH_EVENT)
    event.type = event_type
    event.object.raw = inner
    data: bytes = event.SerializeToString()
    return len(data).to_bytes(4, "big") + data


def decode_watch_event(frame: bytes) -> tuple[str, dict[str, Any]]:
    """The inverse of ``encode_watch_event`` for one frame without its length (tests, clients)."""
    event: Any = registry().new(_WATCH_EVENT)
    event.ParseFromString(frame)
    api_version, kind, obj = decode(event.object.raw)
    return str(event.type), {"apiVersion": api_version, "kind": kind, **obj}
