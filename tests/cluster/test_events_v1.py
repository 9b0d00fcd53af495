"""events.k8s.io/v1 Events: the same stored Events as core/v1, converted both ways as kube-apiserver converts them
(regarding/involvedObject, note/message, reportingController/reportingComponent, deprecated*), in process."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from kss_sim.cluster.api import events_v1
from kss_sim.cluster.api.protobuf_codec import decode, decode_watch_event, encode
from kss_sim.cluster.storage.event_expiry import EventExpiry
from kss_sim.cluster.storage.store import ClusterStore

V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
CORE = "/api/v1/namespaces/default/events"
NOW = "2026-01-02T03:04:05.000000Z"


def v1_event(name: str, **fields: Any) -> dict[str, Any]:
    """A valid events.k8s.io/v1 Event about a pod, as client-go's events recorder writes one."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": NOW,
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-host",
        "action": "Binding",
        "reason": "Scheduled",
        "note": "Successfully assigned default/p to n1",
        "type": "Normal",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p", "apiVersion": "v1"},
        **fields,
    }


def core_event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "Pulled",
        "message": "image pulled",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": "2026-01-02T03:04:05Z",
        "lastTimestamp": "2026-01-02T03:04:06Z",
        "count": 3,
    }


def test_conversion_round_trips_every_renamed_field() -> None:
    core = events_v1.to_core(v1_event("a", deprecatedCount=2, deprecatedSource={"component": "c"}))
    assert core["apiVersion"] == "v1"
    assert core["involvedObject"]["name"] == "p" and core["message"].startswith("Successfully")
    assert core["reportingComponent"] == "default-scheduler" and core["count"] == 2
    assert core["source"] == {"component": "c"}
    assert "regarding" not in core and "note" not in core
    back = events_v1.to_v1(core)
    assert back == v1_event("a", deprecatedCount=2, deprecatedSource={"component": "c"})


async def test_an_event_created_through_either_api_is_seen_through_both(client: httpx.AsyncClient) -> None:
    made = await client.post(V1, json=v1_event("new-style"))
    assert made.status_code == 201, made.text
    assert made.json()["apiVersion"] == "events.k8s.io/v1" and made.json()["note"].startswith("Successfully")
    as_core = (await client.get(f"{CORE}/new-style")).json()
    assert as_core["apiVersion"] == "v1"
    assert as_core["involvedObject"]["name"] == "p" and as_core["reportingComponent"] == "default-scheduler"
    assert as_core["message"] == "Successfully assigned default/p to n1" and as_core["action"] == "Binding"

    assert (await client.post(CORE, json=core_event("old-style"))).status_code == 201
    as_v1 = (await client.get(f"{V1}/old-style")).json()
    assert as_v1["kind"] == "Event" and as_v1["apiVersion"] == "events.k8s.io/v1"
    assert as_v1["regarding"]["name"] == "p" and as_v1["note"] == "image pulled"
    assert as_v1["deprecatedSource"] == {"component": "kubelet", "host": "n1"}
    assert as_v1["deprecatedCount"] == 3 and as_v1["deprecatedFirstTimestamp"] == "2026-01-02T03:04:05Z"
    assert not {"message", "involvedObject", "source", "count"} & set(as_v1)

    listing = (await client.get("/apis/events.k8s.io/v1/events")).json()
    assert listing["kind"] == "EventList" and listing["apiVersion"] == "events.k8s.io/v1"
    names = {item["metadata"]["name"]: item for item in listing["items"]}
    assert {"new-style", "old-style"} <= set(names)
    assert all(item["apiVersion"] == "events.k8s.io/v1" and "message" not in item for item in listing["items"])


async def test_patch_apply_and_delete_in_the_events_form(client: httpx.AsyncClient) -> None:
    assert (await client.post(V1, json=v1_event("series"))).status_code == 201
    # client-go's events recorder counts a repeat by patching the series in.
    series = {"series": {"count": 2, "lastObservedTime": NOW}}
    for content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        patched = await client.patch(f"{V1}/series", json=series, headers={"content-type": content_type})
        assert patched.status_code == 200, patched.text
        assert patched.json()["series"] == {"count": 2, "lastObservedTime": NOW}
    # A JSON patch's paths are the events form's (a test of /note fails unless it reaches core's message).
    json_patch = [
        {"op": "test", "path": "/note", "value": "Successfully assigned default/p to n1"},
        {"op": "replace", "path": "/series/count", "value": 3},
    ]
    patched = await client.patch(
        f"{V1}/series", content=json.dumps(json_patch), headers={"content-type": "application/json-patch+json"}
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["series"]["count"] == 3
    assert (await client.get(f"{CORE}/series")).json()["series"]["count"] == 3
    json_patch[0]["value"] = "another note"
    failed = await client.patch(
        f"{V1}/series", content=json.dumps(json_patch), headers={"content-type": "application/json-patch+json"}
    )
    assert failed.status_code == 422

    applied = await client.patch(
        f"{V1}/applied?fieldManager=test",
        content=json.dumps(v1_event("applied")),
        headers={"content-type": "application/apply-patch+yaml"},
    )
    assert applied.status_code == 201, applied.text
    assert applied.json()["regarding"]["name"] == "p"
    assert (await client.get(f"{CORE}/applied")).json()["involvedObject"]["name"] == "p"

    deleted = await client.delete(f"{V1}/applied")
    assert deleted.status_code == 200
    assert (await client.get(f"{CORE}/applied")).status_code == 404
    missing = await client.get(f"{V1}/applied")
    assert missing.status_code == 404
    assert missing.json()["message"] == 'events.events.k8s.io "applied" not found'
    assert missing.json()["details"] == {"name": "applied", "group": "events.k8s.io", "kind": "events"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"eventTime": None}, "eventTime: Required value"),
        ({"action": ""}, "action: Required value"),
        ({"reportingController": ""}, "reportingController: Required value"),
        ({"reportingInstance": ""}, "reportingInstance: Required value"),
        ({"type": "Odd"}, 'type: Invalid value: "": has invalid value: Odd'),
        ({"deprecatedCount": 4}, 'count: Invalid value: "": needs to be unset'),
        ({"deprecatedSource": {"component": "kubelet"}}, 'source: Invalid value: "": needs to be unset'),
        ({"series": {"count": 1, "lastObservedTime": NOW}}, 'series.count: Invalid value: "": should be at least 2'),
        ({"note": "x" * 1025}, 'message: Invalid value: "": can have at most 1024 characters'),
    ],
)
async def test_a_bad_events_v1_create_is_422_with_kubes_message_and_nothing_stored(
    client: httpx.AsyncClient, change: dict[str, Any], message: str
) -> None:
    refused = await client.post(V1, json=v1_event("bad", **change))
    assert refused.status_code == 422, refused.text
    status = refused.json()
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('Event.events.k8s.io "bad" is invalid: ')
    assert message in status["message"]
    assert status["details"]["group"] == "events.k8s.io"
    assert (await client.get(f"{CORE}/bad")).status_code == 404


async def test_a_core_only_field_is_unknown_in_the_events_form(client: httpx.AsyncClient) -> None:
    body = v1_event("strict", message="core's name")
    refused = await client.post(f"{V1}?fieldValidation=Strict", json=body)
    assert refused.status_code == 400
    assert 'strict decoding error: unknown field "message"' in refused.json()["message"]
    assert (await client.get(f"{CORE}/strict")).status_code == 404
    warned = await client.post(V1, json=body)
    assert warned.status_code == 201
    assert 'unknown field \\"message\\"' in warned.headers["warning"]
    assert warned.json()["note"] == "Successfully assigned default/p to n1"


async def test_discovery_lists_events_in_events_k8s_io_v1(client: httpx.AsyncClient) -> None:
    groups = (await client.get("/apis")).json()
    events = next(g for g in groups["groups"] if g["name"] == "events.k8s.io")
    assert events["preferredVersion"] == {"groupVersion": "events.k8s.io/v1", "version": "v1"}
    resources = (await client.get("/apis/events.k8s.io/v1")).json()["resources"]
    assert resources == [
        {
            "name": "events",
            "singularName": "event",
            "namespaced": True,
            "kind": "Event",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["ev"],
        }
    ]


async def test_table_and_protobuf_answers_are_in_the_events_form(client: httpx.AsyncClient) -> None:
    assert (await client.post(V1, json=v1_event("shown"))).status_code == 201
    table = (
        await client.get(
            f"{V1}?includeObject=Object", headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
        )
    ).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Last Seen", "Type", "Reason", "Object", "Message"]
    row = next(r for r in table["rows"] if r["object"]["metadata"]["name"] == "shown")
    assert row["cells"][1:] == ["Normal", "Scheduled", "pod/p", "Successfully assigned default/p to n1"]
    assert row["object"]["apiVersion"] == "events.k8s.io/v1" and "note" in row["object"]

    answer = await client.get(f"{V1}/shown", headers={"accept": "application/vnd.kubernetes.protobuf"})
    assert answer.headers["content-type"] == "application/vnd.kubernetes.protobuf"
    api_version, kind, obj = decode(answer.content)
    assert (api_version, kind) == ("events.k8s.io/v1", "Event")
    assert obj["regarding"]["name"] == "p" and obj["reportingController"] == "default-scheduler"

    body = encode(v1_event("from-protobuf"))
    assert body is not None
    # As client-go's typed client writes: a protobuf body, protobuf asked for first; the answer is the view's.
    protobuf_first = "application/vnd.kubernetes.protobuf, application/json"
    made = await client.post(
        V1, content=body, headers={"content-type": "application/vnd.kubernetes.protobuf", "accept": protobuf_first}
    )
    assert made.status_code == 201, made.text
    assert made.headers["content-type"] == "application/vnd.kubernetes.protobuf"
    api_version, kind, obj = decode(made.content)
    assert (api_version, kind) == ("events.k8s.io/v1", "Event")
    assert obj["regarding"]["name"] == "p" and obj["reportingController"] == "default-scheduler"
    assert (await client.get(f"{CORE}/from-protobuf")).json()["reportingComponent"] == "default-scheduler"


async def test_a_watch_in_the_events_form_sees_core_events(client: httpx.AsyncClient) -> None:
    listing = (await client.get(V1)).json()
    assert (await client.post(CORE, json=core_event("watched"))).status_code == 201
    rv = listing["metadata"]["resourceVersion"]
    answer = await client.get(f"{V1}?watch=1&resourceVersion={rv}&timeoutSeconds=1")
    lines = [json.loads(line) for line in answer.text.splitlines() if line]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "watched")]
    assert lines[0]["object"]["apiVersion"] == "events.k8s.io/v1" and lines[0]["object"]["note"] == "image pulled"


def test_events_v1_events_expire_and_a_series_patch_renews_them() -> None:
    """What the events form writes is a core Event to the store, so --event-ttl counts from its last write."""
    now = [datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)]
    store = ClusterStore(None, clock=lambda: now[0])
    expiry = EventExpiry(store, 3600.0, interval=3600)  # the test calls expire_due itself
    expiry.start()
    try:
        for name in ("quiet", "repeated"):
            store.create("Event", events_v1.to_core(v1_event(name)))
        now[0] += timedelta(minutes=50)
        series = events_v1.to_core({"series": {"count": 2, "lastObservedTime": "2026-01-02T03:54:05.000000Z"}})
        store.patch("Event", "default", "repeated", series, "strategic")
        now[0] += timedelta(minutes=11)
        store.flush()
        assert expiry.expire_due() == 1
        assert [e["metadata"]["name"] for e in store.list("Event", "default")[0]] == ["repeated"]
    finally:
        expiry.stop()


async def test_a_protobuf_watch_in_the_events_form_streams_events_v1_frames(client: httpx.AsyncClient) -> None:
    assert (await client.post(CORE, json=core_event("framed"))).status_code == 201
    answer = await client.get(
        f"{V1}?watch=true&timeoutSeconds=1&allowWatchBookmarks=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan",
        headers={"accept": "application/vnd.kubernetes.protobuf, application/json"},
    )
    assert answer.headers["content-type"] == "application/vnd.kubernetes.protobuf;stream=watch"
    data, events = answer.content, []
    while data:
        size = int.from_bytes(data[:4], "big")
        events.append(decode_watch_event(data[4 : 4 + size]))
        data = data[4 + size :]
    assert (events[0][0], events[0][1]["metadata"]["name"]) == ("ADDED", "framed")
    assert events[0][1]["note"] == "image pulled" and events[0][1]["regarding"]["name"] == "p"
    assert events[-1][0] == "BOOKMARK"


async def test_an_events_v1_update_keeps_the_event_immutable_but_a_core_one_may_change_it(
    client: httpx.AsyncClient,
) -> None:
    made = (await client.post(V1, json=v1_event("fixed"))).json()
    changed = {**made, "note": "rewritten"}
    refused = await client.put(f"{V1}/fixed", json=changed)
    assert refused.status_code == 422, refused.text
    assert refused.json()["message"] == (
        'Event.events.k8s.io "fixed" is invalid: message: Invalid value: "rewritten": field is immutable'
    )
    moved = await client.patch(
        f"{V1}/fixed",
        json={"regarding": {"name": "q"}},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert moved.status_code == 422
    assert moved.json()["message"] == (
        'Event.events.k8s.io "fixed" is invalid: involvedObject: Invalid value: core.ObjectReference{Kind:"Pod", '
        'Namespace:"default", Name:"q", UID:"", APIVersion:"v1", ResourceVersion:"", FieldPath:""}: '
        "field is immutable"
    )
    bad_series = await client.patch(
        f"{V1}/fixed",
        json={"series": {"count": 1}},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert bad_series.json()["message"] == (
        'Event.events.k8s.io "fixed" is invalid: [series.count: Invalid value: "": should be at least 2, '
        "series.lastObservedTime: Required value]"
    )
    assert (await client.get(f"{V1}/fixed")).json()["note"] == made["note"]
    # core/v1 keeps its older rules for the same stored Event.
    as_core = await client.patch(
        f"{CORE}/fixed", json={"message": "rewritten"}, headers={"content-type": "application/merge-patch+json"}
    )
    assert as_core.status_code == 200
    assert (await client.get(f"{V1}/fixed")).json()["note"] == "rewritten"


async def test_an_apply_that_creates_an_events_v1_event_is_validated_as_a_create(client: httpx.AsyncClient) -> None:
    refused = await client.patch(
        f"{V1}/applied-bad?fieldManager=test",
        content=json.dumps(v1_event("applied-bad", action="")),
        headers={"content-type": "application/apply-patch+yaml"},
    )
    assert refused.status_code == 422
    assert refused.json()["message"] == 'Event.events.k8s.io "applied-bad" is invalid: action: Required value'
    assert (await client.get(f"{CORE}/applied-bad")).status_code == 404
