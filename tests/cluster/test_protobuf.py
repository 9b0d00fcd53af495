"""Protobuf bodies and answers (``application/vnd.kubernetes.protobuf``), as client-go's typed clients use them.

Every kind kss serves with a built-in message round-trips with every field of its message tree set; bodies are
built here byte by byte with upstream's field numbers as client-go writes them (``runtime.Unknown`` after the
``k8s\\x00`` magic); answers, lists, Status and watches come back in protobuf to a client that asks first for it,
and in JSON to everyone else.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from kss_sim.cluster.api import protobuf, protobuf_codec
from kss_sim.cluster.api.protobuf import MAGIC, PROTOBUF
from kss_sim.cluster.kinds.registry import KINDS, KindInfo, kind_info
from tests.cluster.factories import objects_of_every_kind, pod

ACCEPT = {"accept": f"{PROTOBUF}, application/json"}  # what client-go's typed clients send
PODS = "/api/v1/namespaces/default/pods"
APIEXTENSIONS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64 are ten-byte two's complement varints
    out = b""
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def _field(number: int, value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _unknown(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version) + _field(2, kind)
    # client-go writes every field of Unknown, the empty contentEncoding and contentType too
    return MAGIC + _field(1, type_meta) + _field(2, raw) + _field(3, b"") + _field(4, b"")


# --- the codec: every kind, every field --------------------------------------------------------------------------


def _sample(reg: Any, name: str, depth: int = 0) -> Any:
    """A JSON value of message ``name`` with every field set to a non-zero value (nested messages to a depth)."""
    special = {
        "k8s.io.apimachinery.pkg.api.resource.Quantity": "1500m",
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "2026-01-02T03:04:05Z",
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "2026-01-02T03:04:05.123456Z",
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "25%",
        "k8s.io.apimachinery.pkg.runtime.RawExtension": {"apiVersion": "x/v1", "kind": "Config", "n": 1},
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": {"f:metadata": {"f:labels": {}}},
        f"{APIEXTENSIONS}.JSON": {"any": ["json", 1]},
        # apiextensions' unions: their JSON is a schema, a bool or a list, never their struct's fields
        f"{APIEXTENSIONS}.JSONSchemaPropsOrBool": False,
        f"{APIEXTENSIONS}.JSONSchemaPropsOrArray": [{"type": "string"}, {"type": "integer", "minimum": 2}],
        f"{APIEXTENSIONS}.JSONSchemaPropsOrStringArray": ["a", "b"],
    }
    if name in special:
        return special[name]
    info = reg.messages[name]
    if info.is_list:
        return ["a", "b"]
    out: dict[str, Any] = {}
    if depth > 6:
        return out
    for field in info.fields.values():
        if field.message is not None:
            value: Any = _sample(reg, field.message, depth + 1)
        else:
            scalars = {"string": "s", "bytes": "AAEC", "bool": True, "int32": -7, "int64": 1 << 40, "double": 2.5}
            value = scalars[field.scalar]
        if field.inline:
            out.update(value)
        elif field.is_map:
            out[field.json_name] = {"k1": value, "k2": value}
        elif field.repeated:
            out[field.json_name] = [value, value]
        else:
            out[field.json_name] = value
    return out


def _with_protobuf(info: KindInfo) -> bool:
    return protobuf.has_protobuf(info.api_version, info.api_kind)


@pytest.mark.parametrize("info", [k for k in KINDS if _with_protobuf(k)], ids=lambda k: f"{k.api_version}/{k.kind}")
def test_every_field_of_every_served_kind_round_trips(info: KindInfo) -> None:
    reg = protobuf_codec.registry()
    name = reg.object_message(info.api_version, info.api_kind)
    assert name is not None
    obj = {"apiVersion": info.api_version, "kind": info.api_kind, **_sample(reg, name)}
    encoded = protobuf_codec.encode(obj)
    assert encoded is not None and encoded.startswith(MAGIC)
    assert protobuf.decode(encoded) == obj


def test_kinds_served_as_custom_resources_have_no_protobuf_form() -> None:
    custom = [k for k in KINDS if k.custom]
    assert custom and not any(_with_protobuf(k) for k in custom)
    # every other kind kss serves has its message, CustomResourceDefinition included (apiextensions-apiserver
    # serves it in protobuf)
    assert [k.kind for k in KINDS if not k.custom and not _with_protobuf(k)] == []


def test_zero_values_follow_go_json_tags() -> None:
    # Go writes non-pointer scalars even when zero; JSON omits them only with omitempty, and keeps pointers' zeros.
    container = _field(1, "c") + _field(2, "img") + _field(6, _field(3, 0) + _field(2, 0)) + _field(16, 0)
    spec = _field(2, container) + _field(11, 0) + _field(25, 0) + _field(4, 0)
    meta = _field(1, "p") + _field(2, "") + _field(8, b"")  # creationTimestamp: the zero Time
    obj = protobuf.decode(_unknown("v1", "Pod", _field(1, meta) + _field(2, spec) + _field(3, b"")))
    assert obj == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        # containerPort has no omitempty; hostPort, stdin and hostNetwork have; priority and the grace period
        # are pointers
        "spec": {
            "containers": [{"name": "c", "image": "img", "ports": [{"containerPort": 0}]}],
            "priority": 0,
            "terminationGracePeriodSeconds": 0,
        },
        "status": {},
    }


def test_special_types_json_forms() -> None:
    time = _field(1, 1767322800)  # 2026-01-02T03:00:00Z
    micro = time + _field(2, 5_000_000)
    event = (
        _field(1, _field(1, "e") + _field(3, "default"))
        + _field(2, micro)  # eventTime: MicroTime
        + _field(4, "kss")  # reportingController
        + _field(7, "Scheduled")  # reason
        + _field(8, _field(1, "Pod") + _field(3, "p"))  # regarding
    )
    obj = protobuf.decode(_unknown("events.k8s.io/v1", "Event", event))
    assert obj["eventTime"] == "2026-01-02T03:00:00.005000Z"
    assert obj["regarding"] == {"kind": "Pod", "name": "p"}
    cpu = _field(1, "cpu") + _field(2, _field(1, "250m"))  # a ResourceList entry: key, Quantity{string}
    pdb_spec = _field(1, _field(1, 1) + _field(3, "30%"))  # minAvailable: IntOrString (type 1: string)
    pdb = protobuf.decode(_unknown("policy/v1", "PodDisruptionBudget", _field(1, b"") + _field(2, pdb_spec)))
    assert pdb["spec"] == {"minAvailable": "30%"}
    node_status = _field(1, cpu)  # NodeStatus.capacity
    node = protobuf.decode(_unknown("v1", "Node", _field(1, _field(1, "n")) + _field(3, node_status)))
    assert node["status"] == {"capacity": {"cpu": "250m"}}
    secret = _field(1, _field(1, "s")) + _field(2, _field(1, "k") + _field(2, b"\x00\xff"))
    assert protobuf.decode(_unknown("v1", "Secret", secret))["data"] == {"k": "AP8="}


# --- the API -------------------------------------------------------------------------------------------------------


async def test_binding_event_and_lease_sent_in_protobuf_as_kube_scheduler_sends_them(
    client: httpx.AsyncClient,
) -> None:
    created = await client.post(PODS, json=pod("p6"))
    assert created.status_code == 201, created.text
    uid = created.json()["metadata"]["uid"]
    await client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    # Binding{metadata{name: p6, namespace: default, uid}, target{kind: Node, name: n1}}
    binding = _field(1, _field(1, "p6") + _field(3, "default") + _field(5, uid)) + _field(
        2, _field(1, "Node") + _field(3, "n1")
    )
    r = await client.post(
        f"{PODS}/p6/binding", content=_unknown("v1", "Binding", binding), headers={"content-type": PROTOBUF, **ACCEPT}
    )
    assert r.status_code == 201, r.text
    assert r.headers["content-type"] == PROTOBUF
    assert protobuf.decode(r.content)["status"] == "Success"
    assert (await client.get(f"{PODS}/p6")).json()["spec"]["nodeName"] == "n1"

    # core/v1 Event{metadata, involvedObject, reason, message, source, firstTimestamp, lastTimestamp, count, type}
    when = _field(1, 1767322800)
    event = (
        _field(1, _field(1, "p6.1") + _field(3, "default"))
        + _field(2, _field(1, "Pod") + _field(2, "default") + _field(3, "p6") + _field(4, uid))
        + _field(3, "Scheduled")
        + _field(4, "Successfully assigned default/p6 to n1")
        + _field(5, _field(1, "default-scheduler"))
        + _field(6, when)
        + _field(7, when)
        + _field(8, 1)
        + _field(9, "Normal")
    )
    r = await client.post(
        "/api/v1/namespaces/default/events",
        content=_unknown("v1", "Event", event),
        headers={"content-type": PROTOBUF, **ACCEPT},
    )
    assert r.status_code == 201, r.text
    stored = protobuf.decode(r.content)
    assert (stored["reason"], stored["count"], stored["firstTimestamp"]) == ("Scheduled", 1, "2026-01-02T03:00:00Z")
    assert stored["source"] == {"component": "default-scheduler"}

    # coordination/v1 Lease{metadata, spec{holderIdentity, leaseDurationSeconds, acquireTime, renewTime}}
    micro = _field(1, 1767322800) + _field(2, 1000)
    spec = _field(1, "kss-1_abc") + _field(2, 15) + _field(3, micro) + _field(4, micro) + _field(5, 0)
    lease = _field(1, _field(1, "kube-scheduler") + _field(3, "kube-system")) + _field(2, spec)
    await client.post(
        "/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}
    )
    r = await client.post(
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
        content=_unknown("coordination.k8s.io/v1", "Lease", lease),
        headers={"content-type": PROTOBUF, **ACCEPT},
    )
    assert r.status_code in (200, 201), r.text
    assert protobuf.decode(r.content)["spec"] == {
        "holderIdentity": "kss-1_abc",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-02T03:00:00.000001Z",
        "renewTime": "2026-01-02T03:00:00.000001Z",
        "leaseTransitions": 0,
    }


async def test_every_kind_created_in_protobuf_reads_back_the_same_in_both_encodings(
    client: httpx.AsyncClient,
) -> None:
    for kind, obj in objects_of_every_kind("pb"):
        info = kind_info(kind)
        body = protobuf_codec.encode(obj)
        assert body is not None, kind
        namespace = obj["metadata"].get("namespace")
        prefix = f"/api/{info.version}" if not info.group else f"/apis/{info.group}/{info.version}"
        collection = f"{prefix}/namespaces/{namespace}/{info.plural}" if namespace else f"{prefix}/{info.plural}"
        r = await client.post(collection, content=body, headers={"content-type": PROTOBUF})
        assert r.status_code == 201, (kind, r.text)
        as_json = r.json()
        url = f"{collection}/{obj['metadata']['name']}"
        r = await client.get(url, headers=ACCEPT)
        assert r.headers["content-type"] == PROTOBUF, kind
        assert protobuf.decode(r.content) == as_json, kind
        listed = await client.get(collection, headers=ACCEPT)
        items = protobuf.decode(listed.content)
        # a list's items carry no apiVersion and kind in protobuf (client-go's typed lists have them empty)
        item = {k: v for k, v in as_json.items() if k not in ("apiVersion", "kind")}
        assert items["kind"] == info.list_kind and item in items["items"], kind


async def test_json_clients_tables_and_custom_resources_are_answered_in_json(client: httpx.AsyncClient) -> None:
    await client.post(PODS, json=pod("p"))
    assert (await client.get(f"{PODS}/p")).headers["content-type"] == "application/json"
    table = await client.get(PODS, headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert table.json()["kind"] == "Table"
    # a custom resource (PodGroup) has no protobuf form: JSON, which client-go accepts second
    r = await client.get("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups", headers=ACCEPT)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"


async def test_errors_are_a_protobuf_status(client: httpx.AsyncClient) -> None:
    r = await client.get(f"{PODS}/missing", headers=ACCEPT)
    assert r.status_code == 404 and r.headers["content-type"] == PROTOBUF
    status = protobuf.decode(r.content)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "NotFound", 404)
    assert status["details"] == {"name": "missing", "kind": "pods"}


async def test_bad_protobuf_bodies_are_refused_and_nothing_is_stored(client: httpx.AsyncClient) -> None:
    cases = [
        b"not protobuf",  # no magic
        MAGIC + b"\xff\xff\xff",  # an envelope that does not decode
        _unknown("v1", "Pod", b"\x0a\xff"),  # a Pod whose bytes do not decode
        _unknown("scheduling.x-k8s.io/v1alpha1", "PodGroup", b""),  # a custom resource: JSON only
        _unknown("v1", "NoSuchKind", b""),
    ]
    for body in cases:
        r = await client.post(PODS, content=body, headers={"content-type": PROTOBUF})
        assert r.status_code == 400, (body, r.text)
        status = r.json()
        assert status["kind"] == "Status" and status["reason"] == "BadRequest"
        assert status["message"].startswith("the object provided is unrecognized (must be of type Pod): ")
    assert (await client.get(PODS)).json()["items"] == []
    r = await client.post(PODS, content=b"not protobuf", headers={"content-type": PROTOBUF})
    assert r.json()["message"].endswith(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] "
        "(6e6f742070726f746f627566)"
    )


async def test_custom_resources_refuse_protobuf_bodies_as_unsupported(client: httpx.AsyncClient) -> None:
    url = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
    body = _unknown("scheduling.x-k8s.io/v1alpha1", "PodGroup", b"")
    r = await client.post(url, content=body, headers={"content-type": PROTOBUF})
    assert r.status_code == 415 and r.json()["reason"] == "UnsupportedMediaType", r.text
    assert (await client.get(url)).json()["items"] == []


PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"


@pytest.mark.parametrize("accept", [PROTOBUF, f"{PROTOBUF};q=1.0", "application/vnd.kubernetes.protobuf;stream=watch"])
async def test_custom_resources_asked_for_in_protobuf_alone_are_not_acceptable(
    client: httpx.AsyncClient, accept: str
) -> None:
    # apiextensions-apiserver serves custom resources in JSON and YAML only: a 406 listing them, in JSON.
    r = await client.get(PODGROUPS, headers={"accept": accept})
    assert r.status_code == 406 and r.headers["content-type"] == "application/json", r.text
    assert r.json()["reason"] == "NotAcceptable"
    assert r.json()["message"] == "only the following media types are accepted: application/json, application/yaml"
    watched = await client.get(f"{PODGROUPS}?watch=true&timeoutSeconds=1", headers={"accept": accept})
    assert watched.status_code == 406
    assert watched.json()["message"] == "only the following media types are accepted: application/json;stream=watch"
    # An error keeps its own code and is written in JSON; a text type after the protobuf gets JSON.
    missing = await client.get(f"{PODGROUPS}/missing", headers={"accept": accept})
    assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
    for fallback in ("application/json", "*/*", "application/yaml"):
        r = await client.get(PODGROUPS, headers={"accept": f"{accept}, {fallback}"})
        assert r.status_code == 200 and r.headers["content-type"] == "application/json", fallback


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.proto.kss.example"},
    "spec": {
        "group": "proto.kss.example",
        "scope": "Namespaced",
        "names": {"kind": "Gizmo", "plural": "gizmos", "singular": "gizmo", "shortNames": ["gz"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.n", "statusReplicasPath": ".status.n"},
                },
                "additionalPrinterColumns": [{"name": "N", "type": "integer", "jsonPath": ".spec.n"}],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["n"],
                                "x-kubernetes-validations": [{"rule": "self.n < 10", "message": "too many"}],
                                "properties": {
                                    "n": {"type": "integer", "minimum": 1, "maximum": 9.5, "default": 1},
                                    "mode": {"type": "string", "enum": ["a", "b"]},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "tags": {
                                        "type": "array",
                                        "items": {"type": "string"},
                                        "x-kubernetes-list-type": "set",
                                    },
                                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "port": {"x-kubernetes-int-or-string": True},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"n": {"type": "integer"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


async def test_a_crd_is_created_and_read_in_protobuf_as_apiextensions_apiserver_serves_it(
    client: httpx.AsyncClient,
) -> None:
    body = protobuf_codec.encode(CRD)
    assert body is not None
    url = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    r = await client.post(url, content=body, headers={"content-type": PROTOBUF, **ACCEPT})
    assert r.status_code == 201, r.text
    assert r.headers["content-type"] == PROTOBUF
    created = protobuf.decode(r.content)
    as_json = (await client.get(f"{url}/{CRD['metadata']['name']}")).json()
    assert created == as_json
    # The schema came through the unions and raw JSON values whole: numbers, defaults, booleans, enums.
    assert as_json["spec"]["versions"][0]["schema"] == CRD["spec"]["versions"][0]["schema"]
    read = await client.get(f"{url}/{CRD['metadata']['name']}", headers=ACCEPT)
    assert protobuf.decode(read.content) == as_json
    listed = protobuf.decode((await client.get(url, headers=ACCEPT)).content)
    assert listed["kind"] == "CustomResourceDefinitionList"
    assert {k: v for k, v in as_json.items() if k not in ("apiVersion", "kind")} in listed["items"]
    # Its kind's objects are served in JSON all the same.
    gizmos = "/apis/proto.kss.example/v1/namespaces/default/gizmos"
    made = await client.post(
        gizmos,
        json={"apiVersion": "proto.kss.example/v1", "kind": "Gizmo", "metadata": {"name": "g"}, "spec": {"n": 2}},
        headers=ACCEPT,
    )
    assert made.status_code == 201 and made.headers["content-type"] == "application/json", made.text


async def test_watch_streams_length_prefixed_protobuf_frames(client: httpx.AsyncClient) -> None:
    await client.post(PODS, json=pod("a"))
    await client.post(PODS, json=pod("b"))
    r = await client.get(
        f"{PODS}?watch=true&timeoutSeconds=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        headers=ACCEPT,
    )
    assert r.headers["content-type"] == protobuf.PROTOBUF_STREAM
    data, events = r.content, []
    while data:
        size = int.from_bytes(data[:4], "big")
        events.append(protobuf_codec.decode_watch_event(data[4 : 4 + size]))
        data = data[4 + size :]
    names = [(t, o["metadata"].get("name")) for t, o in events]
    assert names[:2] == [("ADDED", "a"), ("ADDED", "b")]
    bookmark_type, bookmark = events[2]
    assert bookmark_type == "BOOKMARK"
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert json.loads(json.dumps(events[0][1]))["kind"] == "Pod"


# --- bytes a real client-go wrote ------------------------------------------------------------------------------------

CAPTURED = json.loads((Path(__file__).parent / "data" / "client_go_protobuf.json").read_text())


def _without_nulls(value: Any) -> Any:
    """Go's JSON of an object without its ``null``s (a zero metav1.Time), which kss's JSON leaves out."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(CAPTURED["bodies"]))
def test_client_go_bodies_decode_to_the_json_go_writes_for_them(name: str) -> None:
    # tools/capture_client_go_protobuf.py: kubectl's generators (client-go's typed clients) posting protobuf, and
    # the same command's --dry-run=client -o json (Go's encoding/json of the same object)
    captured = CAPTURED["bodies"][name]
    decoded = protobuf.decode(base64.b64decode(captured["protobuf"]))
    assert decoded == _without_nulls(captured["json"]), captured["command"]
    # and kss's encoding of that JSON reads back the same
    encoded = protobuf_codec.encode(decoded)
    assert encoded is not None and protobuf.decode(encoded) == decoded
