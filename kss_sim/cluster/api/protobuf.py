"""Just enough of Kubernetes' protobuf encoding to read what kubectl's typed clients send.

``kubectl create namespace|priorityclass|poddisruptionbudget|deployment|job|cronjob`` post protobuf bodies
(``application/vnd.kubernetes.protobuf``), as do ``kubectl drain``'s Evictions and DELETEs (DeleteOptions): the
magic ``k8s\\x00`` then a ``runtime.Unknown`` whose ``raw`` field holds the object. This module decodes the
protobuf wire format with small schemas of the messages those commands build (field numbers from k8s.io/api's
generated.proto) into the same JSON dicts the JSON path produces. Other kinds answer 415 as before.
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


# What a decoder returns for a zero value that Go writes in protobuf but its JSON (omitempty) leaves out.
_OMIT = object()


def _message(schema: Schema) -> Decoder:
    def decode(raw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for number, _wire, value in _fields(bytes(raw)):
            spec = schema.get(number)
            if spec is None:
                continue  # a field kubectl's commands never set for these kinds
            name, decoder, repeated = spec
            decoded = decoder(value)
            if (decoded == "" and not repeated) or decoded is _OMIT:
                continue  # Go writes empty strings and zero values of non-pointer fields; JSON omits them
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


def _int_omitempty(raw: Any) -> Any:
    """A non-pointer integer (``minReadySeconds``, ``containerPort``): written as 0 in protobuf, omitted in JSON."""
    return _int(raw) or _OMIT


def _bool_omitempty(raw: Any) -> Any:
    """A non-pointer boolean (``paused``, ``hostNetwork``, ``stdin``)."""
    return True if raw else _OMIT


_OWNER_REFERENCE = _message({
    1: ("kind", _string, False), 3: ("name", _string, False), 4: ("uid", _string, False),
    5: ("apiVersion", _string, False), 6: ("controller", _bool, False), 7: ("blockOwnerDeletion", _bool, False),
})  # fmt: skip
_OBJECT_META_FIELDS: Schema = {
    1: ("name", _string, False), 2: ("generateName", _string, False), 3: ("namespace", _string, False),
    5: ("uid", _string, False), 6: ("resourceVersion", _string, False), 7: ("generation", _int_omitempty, False),
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


def _quantity(raw: Any) -> str:
    return str(_message({1: ("string", _string, False)})(raw).get("string", ""))


def _quantity_map_entry(raw: Any) -> tuple[str, str]:
    entry = _message({1: ("key", _string, False), 2: ("value", _quantity, False)})(raw)
    return str(entry.get("key", "")), str(entry.get("value", ""))


def _mapped(schema: Schema, *maps: str) -> Decoder:
    """A message whose ``maps`` fields are protobuf maps (repeated entries) turned into JSON objects."""
    message = _message(schema)

    def decode(raw: Any) -> dict[str, Any]:
        out: dict[str, Any] = message(raw)
        for key in maps:
            if key in out:
                out[key] = dict(out[key])
        return out

    return decode


# core/v1 PodTemplateSpec as kubectl's generators and `create job --from=cronjob/...` fill it (k8s.io/api
# core/v1/generated.proto); fields beyond these are not read.
_RESOURCES = _mapped(
    {1: ("limits", _quantity_map_entry, True), 2: ("requests", _quantity_map_entry, True)}, "limits", "requests"
)
_CONTAINER = _message(
    {
        1: ("name", _string, False),
        2: ("image", _string, False),
        3: ("command", _string, True),
        4: ("args", _string, True),
        5: ("workingDir", _string, False),
        6: (
            "ports",
            _message(
                {
                    1: ("name", _string, False),
                    2: ("hostPort", _int_omitempty, False),
                    3: ("containerPort", _int, False),
                    4: ("protocol", _string, False),
                    5: ("hostIP", _string, False),
                }
            ),
            True,
        ),
        7: ("env", _message({1: ("name", _string, False), 2: ("value", _string, False)}), True),
        8: ("resources", _RESOURCES, False),
        13: ("terminationMessagePath", _string, False),
        14: ("imagePullPolicy", _string, False),
        16: ("stdin", _bool_omitempty, False),
        17: ("stdinOnce", _bool_omitempty, False),
        18: ("tty", _bool_omitempty, False),
        20: ("terminationMessagePolicy", _string, False),
    }
)
_TOLERATION = _message(
    {
        1: ("key", _string, False),
        2: ("operator", _string, False),
        3: ("value", _string, False),
        4: ("effect", _string, False),
        5: ("tolerationSeconds", _int, False),
    }
)
_POD_SPEC = _mapped(
    {
        2: ("containers", _CONTAINER, True),
        3: ("restartPolicy", _string, False),
        4: ("terminationGracePeriodSeconds", _int, False),
        5: ("activeDeadlineSeconds", _int, False),
        6: ("dnsPolicy", _string, False),
        7: ("nodeSelector", _map, True),
        8: ("serviceAccountName", _string, False),
        10: ("nodeName", _string, False),
        11: ("hostNetwork", _bool_omitempty, False),
        14: ("securityContext", _message({}), False),
        19: ("schedulerName", _string, False),
        20: ("initContainers", _CONTAINER, True),
        22: ("tolerations", _TOLERATION, True),
        24: ("priorityClassName", _string, False),
        25: ("priority", _int, False),
        30: ("enableServiceLinks", _bool, False),
        31: ("preemptionPolicy", _string, False),
    },
    "nodeSelector",
)
_POD_TEMPLATE = _message({1: ("metadata", _object_meta, False), 2: ("spec", _POD_SPEC, False)})
_JOB_SPEC = _message(
    {
        1: ("parallelism", _int, False),
        2: ("completions", _int, False),
        3: ("activeDeadlineSeconds", _int, False),
        4: ("selector", _label_selector, False),
        5: ("manualSelector", _bool, False),
        6: ("template", _POD_TEMPLATE, False),
        7: ("backoffLimit", _int, False),
        8: ("ttlSecondsAfterFinished", _int, False),
        9: ("completionMode", _string, False),
        10: ("suspend", _bool, False),
        12: ("backoffLimitPerIndex", _int, False),
        13: ("maxFailedIndexes", _int, False),
        14: ("podReplacementPolicy", _string, False),
        15: ("managedBy", _string, False),
    }
)
_JOB_TEMPLATE = _message({1: ("metadata", _object_meta, False), 2: ("spec", _JOB_SPEC, False)})

# meta/v1 DeleteOptions (a DELETE's body, an Eviction's deleteOptions); gracePeriodSeconds is a pointer, so 0 is kept.
_DELETE_OPTIONS_FIELDS: Schema = {
    1: ("gracePeriodSeconds", _int, False),
    2: ("preconditions", _message({1: ("uid", _string, False), 2: ("resourceVersion", _string, False)}), False),
    3: ("orphanDependents", _bool, False), 4: ("propagationPolicy", _string, False), 5: ("dryRun", _string, True),
    6: ("ignoreStoreReadErrorWithClusterBreakingPotential", _bool, False),
}  # fmt: skip
_EVICTION: Schema = {
    1: ("metadata", _object_meta, False),
    2: ("deleteOptions", _message(_DELETE_OPTIONS_FIELDS), False),
}

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
    ("apps/v1", "Deployment"): {
        1: ("metadata", _object_meta, False),
        2: ("spec", _message({
            1: ("replicas", _int, False), 2: ("selector", _label_selector, False),
            3: ("template", _POD_TEMPLATE, False),
            4: ("strategy", _message({
                1: ("type", _string, False),
                2: ("rollingUpdate", _message({
                    1: ("maxUnavailable", _int_or_string, False), 2: ("maxSurge", _int_or_string, False),
                }), False),
            }), False),
            5: ("minReadySeconds", _int_omitempty, False), 6: ("revisionHistoryLimit", _int, False),
            7: ("paused", _bool_omitempty, False), 9: ("progressDeadlineSeconds", _int, False),
        }), False),
    },
    ("batch/v1", "Job"): {1: ("metadata", _object_meta, False), 2: ("spec", _JOB_SPEC, False)},
    ("policy/v1", "Eviction"): _EVICTION,
    ("policy/v1beta1", "Eviction"): _EVICTION,
    ("batch/v1", "CronJob"): {
        1: ("metadata", _object_meta, False),
        2: ("spec", _message({
            1: ("schedule", _string, False), 2: ("startingDeadlineSeconds", _int, False),
            3: ("concurrencyPolicy", _string, False), 4: ("suspend", _bool, False),
            5: ("jobTemplate", _JOB_TEMPLATE, False),
            6: ("successfulJobsHistoryLimit", _int, False), 7: ("failedJobsHistoryLimit", _int, False),
            8: ("timeZone", _string, False),
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
    # client-go encodes DeleteOptions in the group version of the client that sends it (v1, apps/v1, ...).
    schema = _DELETE_OPTIONS_FIELDS if kind == "DeleteOptions" else _KINDS.get((api_version, kind))
    if schema is None:
        raise ProtobufError(f"protobuf bodies of {kind or 'this kind'} are not supported; send JSON or YAML")
    if unknown.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {unknown['contentEncoding']!r}")
    obj = _message(schema)(unknown.get("raw") or b"")
    return {"apiVersion": api_version, "kind": kind, **obj}
