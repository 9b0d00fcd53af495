"""The store holds equal parts of its objects once, down into parts that are new as a whole (a kubelet's status and
its managedFields entry), and keeps each version's JSON in an exact copy: what clients are served does not change,
and no write changes a part that another object (or an older version) shares."""

from __future__ import annotations

import itertools
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from kss_sim.cluster.admission import uids
from kss_sim.cluster.storage import versions
from kss_sim.cluster.storage.shared_values import SharedValues
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.pod_status import running_status
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node, pod

RESULT = "kube-scheduler-simulator.sigs.k8s.io/"


class NoSharing(SharedValues):
    """The store as it would be without sharing: every version keeps the dicts it was written with."""

    def share(self, obj: Obj) -> None:
        return None


class Clock:
    """A clock the test moves: two writes in the same second share their times, across seconds they do not."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _template_pod(name: str, image: str = "img:1") -> Obj:
    body = pod(name, labels={"app": "web"}, cpu="250m", tolerations=[{"key": "gpu", "operator": "Exists"}])
    body["spec"]["containers"][0]["image"] = image
    body["metadata"]["annotations"] = {"team": "a"}
    return body


def _kubelet_start(store: ClusterStore, name: str, ip: str) -> Obj:
    """What the kubelet writes when it starts a bound pod (its status through a merge patch, manager ``kss``)."""
    current = store.read("Pod", "default", name).obj
    status = running_status(current, now=store._versions.timestamp(), host_ips=["172.17.0.1"], pod_ips=[ip])
    return store.merge_pod_status(
        "default", name, status, resource_version=current["metadata"]["resourceVersion"], manager="kss"
    )


def _history(store: ClusterStore, clock: Clock) -> None:
    """A cluster's life: pods of a template (two images) created, bound with result annotations, started by the
    kubelet in the same second and in another, Events (one repeated), patches of every type, a server-side apply,
    a replaced spec, an unschedulable pod, a node's status, a deletion with a finalizer and plain ones."""
    for n in ("n1", "n2"):
        store.create("Node", node(n))
    names = [f"web-{i}" for i in range(8)]
    for i, name in enumerate(names):
        store.create("Pod", _template_pod(name, "img:1" if i < 6 else "img:2"), manager="kubectl-create")
    for i, name in enumerate(names[:6]):
        node_name = f"n{1 + i % 2}"
        annotations = {RESULT + "bind-result": '{"DefaultBinder":"success"}', RESULT + "selected-node": node_name}
        bound = store.bind_pod("default", name, node_name, annotations=annotations)
        store.create_event(bound, "Scheduled", f"Successfully assigned default/{name} to {node_name}")
    for i, name in enumerate(names[:4]):
        _kubelet_start(store, name, f"10.0.0.{i + 2}")  # the same second: times and states shared
    clock.now += timedelta(seconds=1)
    for i, name in enumerate(names[4:6]):
        _kubelet_start(store, name, f"10.0.1.{i + 2}")
    store.create_event(store.read("Pod", "default", "web-0").obj, "Scheduled", "Successfully assigned again")
    store.create_event(store.read("Pod", "default", "web-0").obj, "Scheduled", "Successfully assigned again")
    unschedulable = {
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes are available"}
        ]
    }
    for name in names[6:]:
        store.update_pod_status("default", name, unschedulable)
    store.patch("Pod", "default", "web-1", {"metadata": {"labels": {"tier": "front"}}}, "merge")
    store.patch(
        "Pod", "default", "web-2", {"metadata": {"annotations": {"team": "b"}}}, "strategic", manager="kubectl-edit"
    )
    store.patch("Pod", "default", "web-3", [{"op": "add", "path": "/metadata/labels/x", "value": "y"}], "json")
    store.patch(
        "Pod", "default", "web-4", {"status": {"conditions": [{"type": "Extra", "status": "True"}]}}, "merge",
        subresource="status",
    )  # fmt: skip
    applied = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-5", "labels": {"applied": "yes"}}}
    store.apply("Pod", "default", "web-5", applied, manager="kubectl")
    replaced = store.get("Pod", "default", "web-7")
    assert replaced is not None
    replaced["spec"]["containers"][0]["image"] = "img:3"
    store.update("Pod", replaced)
    n1 = store.get("Node", None, "n1")
    assert n1 is not None
    n1["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    store.update_status("Node", None, "n1", n1["status"])
    store.patch("Pod", "default", "web-6", {"metadata": {"finalizers": ["example.com/keep"]}}, "merge")
    store.delete("Pod", "default", "web-6")
    store.delete("Pod", "default", "web-1")


def _fix_uids_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """uids and Event names (``time_ns`` in them) that repeat from run to run."""
    counter = itertools.count(1)
    monkeypatch.setattr(uids, "new_uid", lambda: f"00000000-0000-4000-8000-{next(counter):012d}")
    ticks = itertools.count(1_000_000)
    monkeypatch.setattr(time, "time_ns", lambda: next(ticks))


@pytest.fixture
def fixed_uids(monkeypatch: pytest.MonkeyPatch) -> None:
    _fix_uids_and_names(monkeypatch)


def _run(monkeypatch: pytest.MonkeyPatch, sharing: bool) -> tuple[ClusterStore, list[tuple[Any, ...]]]:
    _fix_uids_and_names(monkeypatch)
    clock = Clock()
    store = ClusterStore(clock=clock)
    if not sharing:
        store._versions.shared = NoSharing()
    start = store.resource_version
    _history(store, clock)
    events = [
        (ev.type, ev.kind, ev.resource_version, ev.raw, ev.old_raw, orjson.dumps(ev.obj))
        for ev in store.events_since(start)
    ]
    return store, events


def test_clients_are_served_the_same_bytes_with_and_without_sharing(monkeypatch: pytest.MonkeyPatch) -> None:
    shared, shared_events = _run(monkeypatch, sharing=True)
    plain, plain_events = _run(monkeypatch, sharing=False)
    # Every watch event: type, resourceVersion, the JSON after and before the change, the dict's own JSON.
    assert shared_events == plain_events
    for kind in ("Pod", "Node", "Event"):
        one, other = shared.select(kind).items, plain.select(kind).items
        assert [e.raw for e in one] == [e.raw for e in other]  # what GET, list and watch send
        assert [orjson.dumps(e.obj) for e in one] == [e.raw for e in one]
    assert shared.list("Pod", "default") == plain.list("Pod", "default")
    # Not vacuous: the sharing store did share, below parts that are new as a whole.
    a, b = (shared.read("Pod", "default", n).obj for n in ("web-0", "web-3"))
    fields_a, fields_b = (
        next(e for e in p["metadata"]["managedFields"] if e["manager"] == "kss")["fieldsV1"]["f:status"] for p in (a, b)
    )
    assert fields_a is not fields_b  # each pod's own (its IP is a key in it) ...
    assert fields_a["f:conditions"] is fields_b["f:conditions"]  # ... over the same sets of the same conditions
    status_a, status_b = a["status"]["containerStatuses"][0], b["status"]["containerStatuses"][0]
    assert status_a is not status_b  # its own container id ...
    assert status_a["state"] is status_b["state"] and status_a["resources"] is status_b["resources"]
    assert a["status"]["podIPs"][0]["ip"] is a["status"]["podIP"]
    plain_a, plain_b = (plain.read("Pod", "default", n).obj for n in ("web-0", "web-3"))
    assert plain_a["status"]["containerStatuses"][0]["state"] is not plain_b["status"]["containerStatuses"][0]["state"]


def test_no_write_changes_a_part_another_object_shares(fixed_uids: None) -> None:
    """Every version the store published, checked against the JSON it had when published, after every later write:
    a write that changed a shared part in place (of another pod, of an older version) would show."""
    clock = Clock()
    store = ClusterStore(clock=clock)
    published: list[tuple[Obj, bytes]] = []
    store.add_listener(lambda _t, _k, obj: published.append((obj, orjson.dumps(obj))), copy=False)
    _history(store, clock)
    for _ in range(2):  # and a second round over the same objects: more writes over shared parts
        clock.now += timedelta(seconds=5)
        for name in ("web-0", "web-2", "web-4"):
            store.patch("Pod", "default", name, {"metadata": {"labels": {"round": "2"}}}, "merge")
            current = store.read("Pod", "default", name).obj
            store.merge_pod_status(
                "default", name, {"phase": "Succeeded"}, resource_version=current["metadata"]["resourceVersion"],
                manager="kss",
            )  # fmt: skip
    assert len(published) > 40
    changed = [obj["metadata"]["name"] for obj, raw in published if orjson.dumps(obj) != raw]
    assert changed == []


def test_a_write_into_a_shared_part_would_be_caught(fixed_uids: None) -> None:
    # The check above is not vacuous: changing a part two pods share changes both, and the other's JSON shows it.
    clock = Clock()
    store = ClusterStore(clock=clock)
    published: list[tuple[Obj, bytes]] = []
    store.add_listener(lambda _t, _k, obj: published.append((obj, orjson.dumps(obj))), copy=False)
    store.create("Node", node("n1"))
    for name in ("a", "b", "c"):
        store.create("Pod", _template_pod(name))
        store.bind_pod("default", name, "n1")
        _kubelet_start(store, name, f"10.0.0.{len(published)}")
    state = store.read("Pod", "default", "c").obj["status"]["containerStatuses"][0]["state"]
    state["running"] = {"startedAt": "1999-01-01T00:00:00Z"}  # what no writer may do
    assert {obj["metadata"]["name"] for obj, raw in published if orjson.dumps(obj) != raw} >= {"b", "c"}


def test_a_piece_is_held_from_its_second_sighting_and_unique_ones_are_not_held() -> None:
    shared = SharedValues()

    def status(ip: str, started: str) -> Obj:
        return {
            "podIP": ip,
            "containerStatuses": [{"containerID": f"id-{ip}", "state": {"running": {"startedAt": started}}}],
        }

    first, second, third = status("10.0.0.1", "T1"), status("10.0.0.2", "T1"), status("10.0.0.3", "T1")
    for value in (first, second, third):
        shared.part(value)
    states = [v["containerStatuses"][0]["state"] for v in (first, second, third)]
    assert states[1] is states[2] and states[0] is not states[1]  # held when met the second time, then shared
    assert id(states[1]) in shared._ids
    # A container status with a container id met for the first time stays out of the table.
    assert not any(id(v["containerStatuses"][0]) in shared._ids for v in (first, second, third))
    other = status("10.0.0.4", "T2")  # another second: its state is new
    shared.part(other)
    assert other["containerStatuses"][0]["state"] is not states[1]
    assert orjson.dumps(third) == orjson.dumps(status("10.0.0.3", "T1"))  # shared parts are equal parts


def test_a_stored_version_takes_no_more_memory_than_its_json(monkeypatch: pytest.MonkeyPatch) -> None:
    # orjson's result keeps the buffer it grew while writing (a pod's 7 kB held 16 kB): the store keeps a copy.
    body = _template_pod("big")
    body["metadata"]["annotations"] = {f"note-{i}": "x" * 40 for i in range(100)}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        raw = versions.encode(body)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert raw == orjson.dumps(body)
    assert len(raw) > 5000
    assert held < len(raw) + 200
