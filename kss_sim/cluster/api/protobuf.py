"""Kubernetes' protobuf media type: bodies client-go sends, and answers to clients that ask for it.

client-go's typed clients (kube-scheduler, kube-controller-manager, kubectl's generators and drain) send built-in
kinds as ``application/vnd.kubernetes.protobuf``: the magic ``k8s\\x00`` then a ``runtime.Unknown`` whose ``raw``
holds the object's message; and they ask for answers the same way (``Accept: application/vnd.kubernetes.protobuf,
application/json``), watches included (length-prefixed ``WatchEvent`` frames). ``protobuf_codec`` does the
encoding, for every kind it has messages for; this module is what the API's handlers call, and keeps the codec
(and Google's protobuf runtime) unloaded until the first protobuf request.
"""

from __future__ import annotations

from typing import Any

import orjson

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
# What a watch answers when it streams protobuf (kube-apiserver's stream media type).
PROTOBUF_STREAM = "application/vnd.kubernetes.protobuf;stream=watch"


class ProtobufError(ValueError):
    """A body that is not the protobuf encoding of a kind kss has messages for."""


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object, with its apiVersion and kind; ProtobufError otherwise."""
    if not body.startswith(MAGIC):
        prefix = " ".join(str(b) for b in MAGIC)  # Go's %v of a byte slice
        raise ProtobufError(f"provided data does not appear to be a protobuf message, expected prefix [{prefix}]")
    from kss_sim.cluster.api import protobuf_codec

    try:
        api_version, kind, obj = protobuf_codec.decode(body)
    except protobuf_codec.CodecError as exc:
        raise ProtobufError(str(exc)) from None
    return {"apiVersion": api_version, "kind": kind, **obj}


def accepts_protobuf(accept: str) -> bool:
    """Whether a client's ``Accept`` puts protobuf first (as client-go's typed clients do): kube-apiserver answers
    in the first media type it can serve, and kss serves protobuf for plain objects, lists, Status and watches
    (a Table or another ``as=`` is JSON)."""
    if not accept.startswith(PROTOBUF):
        return False
    first = accept.split(",", 1)[0]
    return "as=" not in first


# What a custom resource's handler serves (apiextensions-apiserver's serializer: JSON and YAML, no protobuf), as
# its 406 lists them; a watch streams JSON alone.
CUSTOM_MEDIA_TYPES = "application/json, application/yaml"
CUSTOM_STREAM_MEDIA_TYPES = "application/json;stream=watch"
_TEXT_TYPES = frozenset({"application/json", "application/yaml", "application/*", "*/*"})


def accepts_text(accept: str) -> bool:
    """Whether ``accept`` lists a type a custom resource's handler answers in (JSON, YAML, a wildcard), after the
    protobuf it may put first: kube-apiserver answers a custom resource in the first it can serve, and 406 without
    one."""
    for entry in accept.split(","):
        mime, *params = (part.strip() for part in entry.split(";"))
        if mime.lower() in _TEXT_TYPES and not any(p.replace(" ", "").startswith("as=") for p in params):
            return True
    return False


def encode_json(body: bytes) -> bytes | None:
    """A JSON answer (an object, a list, a Status) as protobuf; None when its kind has no protobuf form."""
    try:
        return encode_object(orjson.loads(body))
    except orjson.JSONDecodeError:
        return None


def encode_object(obj: dict[str, Any]) -> bytes | None:
    """An object (with its apiVersion and kind) as protobuf; None when its kind has no protobuf form."""
    from kss_sim.cluster.api import protobuf_codec

    try:
        return protobuf_codec.encode(obj)
    except protobuf_codec.CodecError:
        return None


def has_protobuf(api_version: str, kind: str) -> bool:
    """Whether kss has a protobuf message for objects of ``apiVersion``/``kind`` (not for custom resources)."""
    from kss_sim.cluster.api import protobuf_codec

    return protobuf_codec.registry().object_message(api_version, kind) is not None


def encode_watch_line(line: bytes) -> bytes:
    """One newline-delimited JSON watch event as a protobuf watch frame (its kind has a message: ``has_protobuf``)."""
    from kss_sim.cluster.api import protobuf_codec

    event = orjson.loads(line)
    try:
        frame = protobuf_codec.encode_watch_event(str(event["type"]), event["object"])
    except protobuf_codec.CodecError as exc:
        raise ProtobufError(str(exc)) from None
    if frame is None:
        raise ProtobufError(f"no protobuf form for {event['object'].get('kind')}")
    return frame
