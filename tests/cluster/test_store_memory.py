"""What the store keeps of each object and of each change: older watch events hold only their JSON, equal parts
of stored objects are held once; replay, reads and listeners see exactly what was written."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy import Engine

from kss_sim.cluster.api import watch
from kss_sim.cluster.kinds.registry import BY_KIND
from kss_sim.cluster.storage import change_log, shared_values
from kss_sim.cluster.storage.selectors import make_selector
from kss_sim.cluster.storage.shared_values import SharedValues
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node, pod


def _write_history(store: ClusterStore) -> dict[tuple[str, int], Obj]:
    """Pods created, relabelled (in and out of ``app=a``), bound, given a status and deleted; every version
    written, by (name, resourceVersion), as the writes returned it."""
    versions: dict[tuple[str, int], Obj] = {}

    def keep(obj: Obj) -> None:
        versions[(obj["metadata"]["name"], int(obj["metadata"]["resourceVersion"]))] = obj

    store.create("Node", node("n1"))
    for i in range(6):
        keep(store.create("Pod", pod(f"p{i}", namespace="ns" if i % 2 else None, labels={"app": "a"})))
    for i in range(6):
        body = store.get("Pod", "ns" if i % 2 else "default", f"p{i}")
        assert body is not None
        body["metadata"]["labels"] = {"app": "b" if i < 3 else "a", "n": str(i)}
        keep(store.update("Pod", body))
    for i in range(6):
        keep(store.bind_pod("ns" if i % 2 else "default", f"p{i}", "n1"))
    for i in range(0, 6, 2):
        keep(store.update_pod_status("default", f"p{i}", {"phase": "Running", "qosClass": "BestEffort"}))
    keep(store.delete("Pod", "default", "p4"))
    return versions


@pytest.fixture
def few_decoded(monkeypatch: pytest.MonkeyPatch) -> int:
    """Only the 3 most recent watch events keep their dicts."""
    monkeypatch.setattr(change_log, "KEEP_DECODED", 3)
    return 3


def test_older_events_keep_only_their_json_and_replay_what_was_written(engine: Engine, few_decoded: int) -> None:
    store = ClusterStore.open(engine)
    start = store.resource_version
    versions = _write_history(store)
    events = [ev for ev in store.events_since(start) if ev.kind == "Pod"]
    assert len(events) == len(versions)
    previous: dict[str, Obj] = {}
    for ev in events:
        name = ev.obj["metadata"]["name"]
        assert ev.obj == versions[(name, ev.resource_version)] == orjson.loads(ev.raw) == ev.object
        assert ev.namespace == ev.obj["metadata"]["namespace"]
        assert ev.old == previous.get(name)  # None for ADDED; the version before for the others
        previous[name] = ev.obj
    log = store.events_since(start)
    older, recent = log[:-few_decoded], log[-few_decoded:]
    # An older event decodes its JSON on each access (it holds no dict); a recent one hands out the store's dict.
    assert all(ev.obj is not ev.obj for ev in older)
    assert all(ev.obj is ev.obj for ev in recent)
    current = store.read("Pod", "default", "p2")
    assert next(ev.obj for ev in recent if ev.resource_version == current.resource_version) is current.obj


def _watch(store: ClusterStore, since: int, namespace: str | None, labels: str | None) -> list[tuple[str, str, str]]:
    """What a watch of pods from ``since`` sends: (type, name, resourceVersion) per event line."""
    req = watch.WatchRequest(
        info=BY_KIND["Pod"],
        namespace=namespace,
        selector=make_selector("Pod", labels, None),
        resource_version=since,
        send_initial_events=False,
        allow_bookmarks=False,
        timeout_seconds=0.05,
        bookmark_seconds=60,
    )

    async def collect() -> list[bytes]:
        return [line async for lines in watch.stream(store, req, lambda _obj, raw: raw) for line in lines]

    out = []
    for line in asyncio.run(collect()):
        event = orjson.loads(line)
        meta = event["object"]["metadata"]
        out.append((event["type"], meta["name"], meta["resourceVersion"]))
    return out


@pytest.mark.parametrize(("namespace", "labels"), [(None, None), ("ns", None), (None, "app=a"), ("ns", "app=a")])
def test_a_watch_from_an_old_version_sends_the_same_events_whatever_the_log_kept_decoded(
    monkeypatch: pytest.MonkeyPatch, namespace: str | None, labels: str | None
) -> None:
    sent = {}
    for keep in (10_000, 0):
        monkeypatch.setattr(change_log, "KEEP_DECODED", keep)
        store = ClusterStore(None)
        store.ensure_builtins()
        start = store.resource_version
        _write_history(store)
        sent[keep] = _watch(store, start, namespace, labels)
    assert sent[0] == sent[10_000]
    names = {name for _, name, _ in sent[0]}
    if namespace == "ns":
        assert names == {"p1", "p3", "p5"}
    if labels == "app=a" and namespace is None:
        # p0-p2 left the selection when relabelled app=b: a DELETED each, and nothing of them after it.
        p0 = [t for t, name, _ in sent[0] if name == "p0"]
        assert p0 == ["ADDED", "DELETED"]
        p4 = [t for t, name, _ in sent[0] if name == "p4"]
        assert p4 == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]


def _pod_of_a_template(name: str) -> Obj:
    body = pod(name, labels={"app": "web"}, cpu="250m", tolerations=[{"key": "gpu", "operator": "Exists"}])
    body["metadata"]["annotations"] = {"result": "{" + '"NodeResourcesFit":"success"' + "}", "mine": name}
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u-1", "controller": True}
    ]
    return body


def _at(obj: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def test_equal_parts_of_stored_objects_are_held_once() -> None:
    now = [datetime(2026, 11, 25, 6, 0, 0, tzinfo=UTC)]
    store = ClusterStore(None, clock=lambda: now[0])
    store.ensure_builtins()
    for name in ("a", "b"):
        store.create("Pod", _pod_of_a_template(name))
    now[0] += timedelta(seconds=1)
    store.create("Pod", _pod_of_a_template("c"))
    for name in ("a", "b", "c"):
        store.bind_pod("default", name, "n1")
    a, b, c = (store.read("Pod", "default", name).obj for name in "abc")
    paths: list[tuple[str | int, ...]] = [
        ("spec", "containers"),
        ("spec", "tolerations"),
        ("metadata", "labels"),
        ("metadata", "ownerReferences"),
        ("metadata", "managedFields", 0, "fieldsV1"),
        ("metadata", "annotations", "result"),
        ("status", "conditions", 0),  # PodScheduled, set in the same second
    ]
    for path in paths:
        in_a, in_b, in_c = _at(a, path), _at(b, path), _at(c, path)
        assert in_a == in_b == in_c and in_a is in_b is in_c, path
    # A managedFields entry is each pod's own, unless written in the same second by the same manager.
    entries = [o["metadata"]["managedFields"][0] for o in (a, b, c)]
    assert entries[0] is entries[1] and entries[2] is not entries[0]
    assert entries[2]["time"] == "2026-11-25T06:00:01Z" and entries[0]["time"] == "2026-11-25T06:00:00Z"
    assert a["metadata"]["uid"] != b["metadata"]["uid"]
    assert a["metadata"]["annotations"]["mine"] == "a" and b["metadata"]["annotations"]["mine"] == "b"


def test_shared_parts_change_only_in_the_object_written(store: ClusterStore) -> None:
    seen: list[tuple[Obj, bytes]] = []
    store.add_listener(lambda _type, _kind, obj: seen.append((obj, orjson.dumps(obj))), ["Pod"], copy=False)
    for name in ("a", "b", "c"):
        store.create("Pod", _pod_of_a_template(name))
    body = store.get("Pod", "default", "a")
    assert body is not None
    body["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.11"
    body["metadata"]["labels"]["tier"] = "front"
    store.update("Pod", body)
    store.bind_pod("default", "b", "n1")
    store.patch("Pod", "default", "c", {"metadata": {"labels": {"app": "web2"}}})
    a, b, c = (store.read("Pod", "default", n).obj for n in "abc")
    assert a["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.11"
    assert b["spec"]["containers"][0]["image"] == c["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.10"
    assert a["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert b["metadata"]["labels"] == {"app": "web"} and c["metadata"]["labels"] == {"app": "web2"}
    assert b["spec"]["nodeName"] == "n1" and "nodeName" not in a["spec"] and "nodeName" not in c["spec"]
    # Every version published, shared parts and all, is still what its JSON says.
    for entry in store.select("Pod").items:
        assert orjson.loads(entry.raw) == entry.obj
    for ev in store.events_since(0):
        assert orjson.loads(ev.raw) == ev.obj
    # What listeners were handed is what was written then: no later write changed a part they shared.
    assert [obj["metadata"]["name"] for obj, _ in seen] == ["a", "b", "c", "a", "b", "c"]
    for obj, when_published in seen:
        assert orjson.dumps(obj) == when_published


def test_a_reloaded_store_holds_equal_parts_once_too(engine: Engine) -> None:
    store = ClusterStore.open(engine)
    for name in ("a", "b"):
        store.create("Pod", _pod_of_a_template(name))
    reloaded = ClusterStore.open(engine)
    a, b = reloaded.read("Pod", "default", "a"), reloaded.read("Pod", "default", "b")
    assert a.obj["spec"]["containers"] is b.obj["spec"]["containers"]
    assert orjson.loads(a.raw) == a.obj == store.read("Pod", "default", "a").obj


def test_shared_values_tell_equal_from_merely_colliding_and_forget_what_a_generation_did_not_meet() -> None:
    shared = SharedValues(limit=2)  # generations of two values met more than once
    first = {"x": [1, 2]}
    assert shared.value(first) is first
    assert shared.value({"x": [1, 2]}) is first
    assert shared.value(first) is first
    other = {"x": [1, 3]}
    assert shared.value(other) is other and shared.value({"x": [1, 3]}) is other and len(shared) == 2
    third = {"y": 1}
    assert shared.value(third) is third and len(shared) == 3  # met once so far
    # The third repeated value: this generation is full, it becomes the older one and a new one starts.
    assert shared.value({"y": 1}) is third and len(shared) == 3
    assert shared.value({"x": [1, 2]}) is first  # met again while in the older generation: kept in the newer
    fourth = {"z": 1}
    shared.value(fourth)
    assert shared.value({"z": 1}) is fourth  # the newer full again: the older goes, less what was met again
    assert len(shared) == 3 and id(other) not in shared._ids
    again = {"x": [1, 3]}
    assert shared.value(again) is again  # forgotten, so held anew
    assert shared.value({"x": [1, 2]}) is first
    # A value whose JSON hashes like a held one's but differs is not shared (a collision, forced here).
    shared = SharedValues()
    a = [1]
    shared.value(a)
    key = next(iter(shared._unmatched))
    b = [2]
    shared._unmatched[hash(orjson.dumps(b))] = shared._unmatched.pop(key)
    assert shared.value(b) is b


def test_values_met_only_once_are_forgotten_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values unique to one version (a pod's IP in its status) must not fill the table under churn: those not met
    again are held in a small table of their own, the oldest forgotten first; a value met twice stays."""
    monkeypatch.setattr(shared_values, "UNMATCHED_VALUES_LIMIT", 3)
    shared = SharedValues()
    template = {"containers": [{"name": "c"}]}
    shared.value(template)
    assert shared.value({"containers": [{"name": "c"}]}) is template
    unique = [{"podIP": f"10.0.0.{i}"} for i in range(5)]
    for value in unique:
        assert shared.value(value) is value
    assert len(shared) == 1 + 3
    assert shared.value({"podIP": "10.0.0.0"}) is not unique[0]  # forgotten
    assert shared.value({"podIP": "10.0.0.4"}) is unique[4]
    assert shared.value({"containers": [{"name": "c"}]}) is template


def test_shared_values_stay_bounded_under_churn_and_keep_what_live_pods_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pods created, bound, given a status of their second and deleted, on and on (the soak of issue #35): each
    second's status pieces repeat from pod to pod and then never again. The table holds at most two generations
    of values met twice besides those met once, and the parts a live pod shares with the pods still created
    (its template's) stay shared however long the churn."""
    monkeypatch.setattr(shared_values, "SHARED_VALUES_LIMIT", 40)
    monkeypatch.setattr(shared_values, "UNMATCHED_VALUES_LIMIT", 40)
    now = [datetime(2026, 11, 25, 6, 0, 0, tzinfo=UTC)]
    store = ClusterStore(None, clock=lambda: now[0])
    store.ensure_builtins()
    store.create("Pod", _pod_of_a_template("kept"))
    shared = store._versions.shared
    bound = 2 * 40 + 40
    sizes = []
    for i in range(1500):
        if i % 3 == 0:
            now[0] += timedelta(seconds=1)
        stamp = now[0].strftime("%Y-%m-%dT%H:%M:%SZ")
        name = f"churn-{i}"
        store.create("Pod", _pod_of_a_template(name))
        store.bind_pod("default", name, "n1")
        status = {
            "phase": "Running",
            "podIP": f"10.{i // 250}.{i % 250}.1",
            "startTime": stamp,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}],
            "containerStatuses": [
                {"name": "c", "containerID": f"id-{i}", "ready": True, "state": {"running": {"startedAt": stamp}}}
            ],
        }
        store.update_pod_status("default", name, status)
        store.delete("Pod", "default", name)
        sizes.append(len(shared))
    assert max(sizes) <= bound
    store.create("Pod", _pod_of_a_template("last"))
    last, kept = (store.read("Pod", "default", name).obj for name in ("last", "kept"))
    assert last["spec"]["containers"] is kept["spec"]["containers"]
    assert last["spec"]["tolerations"] is kept["spec"]["tolerations"]


def test_a_create_draws_one_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    """One uid per object created, none drawn and thrown away."""
    from kss_sim.cluster.admission import uids

    drawn: list[str] = []

    def new_uid() -> str:
        drawn.append(f"00000000-0000-4000-8000-{len(drawn) + 1:012d}")
        return drawn[-1]

    monkeypatch.setattr(uids, "new_uid", new_uid)
    store = ClusterStore(None)
    store.ensure_builtins()
    before = len(drawn)
    created = store.create("Pod", pod("a"))
    assert len(drawn) == before + 1
    assert created["metadata"]["uid"] == drawn[-1]


def _event_history(store: ClusterStore) -> list[Obj]:
    """Events recorded by the scheduler (one repeated), created and patched through the API, one deleted; what
    each write returned."""
    bound = store.create("Pod", pod("p0"))
    written = [
        store.create_event(bound, "Scheduled", "Successfully assigned default/p0 to n1", action="Binding"),
        store.create_event(bound, "FailedScheduling", "0/1 nodes are available", type="Warning", action="Scheduling"),
        store.create_event(bound, "FailedScheduling", "0/1 nodes are available", type="Warning", action="Scheduling"),
    ]
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p9", "namespace": "ns"},
        "reason": "Pulled",
        "message": "pulled",
        "type": "Normal",
    }
    written.append(store.create("Event", body))
    written.append(store.patch("Event", "ns", "e1", {"message": "pulled again"}, "application/merge-patch+json"))
    written.append(store.create("Event", {**body, "metadata": {"name": "e2", "namespace": "ns"}}))
    written.append(store.delete("Event", "ns", "e2"))
    return written


def test_events_are_held_as_their_json_and_read_back_as_written(engine: Engine, few_decoded: int) -> None:
    store = ClusterStore.open(engine)
    start = store.resource_version
    written = _event_history(store)
    held = store.select("Event").items
    assert [type(e).__name__ for e in held] == ["PackedObject"] * 3  # two by the scheduler, e1
    assert all(e.decoded is None for e in held)
    latest = {(w["metadata"]["namespace"], w["metadata"]["name"]): w for w in written[:-1]}
    for entry in held:
        assert entry.obj == latest[(entry.namespace, entry.name)] == store.get("Event", entry.namespace, entry.name)
        assert entry.uid == entry.obj["metadata"]["uid"]
        assert entry.resource_version == int(entry.obj["metadata"]["resourceVersion"])
    repeated = store.get("Event", "default", written[1]["metadata"]["name"])
    assert repeated is not None and repeated["count"] == 2
    # Selectors read the decoded Event.
    found, _ = store.list("Event", "ns", field_selector="involvedObject.name=p9")
    assert [e["message"] for e in found] == ["pulled again"]
    # (An object that cannot hold a selector's value is passed over undecoded: the same answers.)
    for selector, reasons in [
        ("involvedObject.name=p0,type=Warning", ["FailedScheduling"]),
        ("source=default-scheduler", ["FailedScheduling", "Scheduled"]),
        ("type!=Normal", ["FailedScheduling"]),
        ("involvedObject.name=p", []),
        ("involvedObject.fieldPath=", ["FailedScheduling", "Scheduled"]),
    ]:
        found, _ = store.list("Event", "default", field_selector=selector)
        assert sorted(e["reason"] for e in found) == reasons, selector
    # The watch log replays every version as written, the deletion with its last state.
    replayed = [(ev.type, ev.obj) for ev in store.events_since(start) if ev.kind == "Event"]
    assert [obj for _, obj in replayed] == written
    assert [t for t, _ in replayed] == ["ADDED", "ADDED", "MODIFIED", "ADDED", "MODIFIED", "ADDED", "DELETED"]
    # Read back from the database, Events are held packed too.
    reloaded = ClusterStore.open(engine)
    again = reloaded.select("Event").items
    assert [type(e).__name__ for e in again] == ["PackedObject"] * 3
    assert [e.obj for e in again] == [e.obj for e in held]


def test_a_held_event_costs_about_its_json(monkeypatch: pytest.MonkeyPatch) -> None:
    # Measured without the watch log (a window of one, one event decoded): what the store itself keeps. With the
    # dict beside the JSON it was ~3.2 kB an Event; packed, ~1.9 kB (the JSON ~1.1 kB, the recorder's cache of
    # recent Events, the key). The bound fails if the dict is kept again.
    import gc
    import tracemalloc

    monkeypatch.setattr(change_log, "KEEP_DECODED", 1)
    store = ClusterStore(None, watch_window=1)
    bound = store.create("Pod", pod("p0"))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(1000):
            bound["metadata"]["name"] = f"pod-{i}"
            store.create_event(bound, "Scheduled", f"Successfully assigned default/pod-{i} to n{i % 20}", action="Bind")
        gc.collect()
        per_event = (tracemalloc.get_traced_memory()[0] - before) / 1000
    finally:
        tracemalloc.stop()
    raw = len(store.select("Event").items[0].raw)
    assert per_event < raw + 1200, (per_event, raw)
