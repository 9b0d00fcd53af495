"""A source object deleted and made again under the same name (a new uid) while the syncer was not watching.

The relist after the watch expired returns the new object (ADDED: no mirror of its uid) before the SYNCED that
finds the old uid gone. The new object is a different one: the simulator must end with a copy of it, never with
the old copy adopted under the new uid (which SYNCED then deleted, leaving the name empty).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from syncer import translate
from syncer.backoff import Backoff
from syncer.kinds import NODE, POD, Kind
from syncer.kube import Gone
from syncer.metrics import Metrics
from syncer.sink import ADDED, DELETED, MODIFIED, SYNCED, Event, Sink
from syncer.watch import Watcher
from tests.syncer.fakes import FakeSource, FakeTarget, node, page, pod

HOLD = "example.com/hold"


class FinalizingTarget(FakeTarget):
    """A simulator whose deletion of an object holding finalizers only marks it (``deletionTimestamp``), as
    kube-apiserver does; ``release`` takes the finalizers away, as the controller owning them would."""

    def delete(self, kind: Kind, namespace: str | None, name: str, *, uid: str | None = None) -> None:
        key = self._key(kind, namespace, name)
        current = self.objects.get(key)
        if current is None or not current["metadata"].get("finalizers"):
            super().delete(kind, namespace, name, uid=uid)
            return
        self._gate("delete", kind, name)
        current["metadata"].setdefault("deletionTimestamp", "2025-01-01T00:01:00Z")

    def release(self, kind: str, name: str, namespace: str = "") -> None:
        key = (kind, namespace, name)
        obj = self.objects[key]
        obj["metadata"].pop("finalizers", None)
        if obj["metadata"].get("deletionTimestamp"):
            del self.objects[key]


def _no_sleep(seconds: float) -> None:
    pass


def _sink(target: FakeTarget, sleep: Callable[[float], None] = _no_sleep) -> Sink:
    return Sink(target, metrics=Metrics(), backoff=Backoff(initial=1, cap=4), sleep=sleep)


def _relist_after_gap(first: list[dict[str, Any]], second: list[dict[str, Any]], kind: Kind = POD) -> list[Event]:
    """The events a watcher emits for a list, a watch that expires (410), and the list after it."""
    source = FakeSource(
        lists={kind.name: [[page(*first, rv="10")], [page(*second, rv="30")]]},
        watches={kind.name: [[Gone("too old resource version", status=410)], []]},
    )
    events: list[Event] = []
    watcher = Watcher(source, kind, events.append, sleep=_no_sleep, stop=threading.Event(), metrics=Metrics())
    watcher.run(max_iterations=2)
    return events


def _source_uid(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["annotations"][translate.SOURCE_UID_ANNOTATION])


def test_pod_replaced_during_a_watch_gap_ends_as_a_copy_of_the_new_pod() -> None:
    events = _relist_after_gap(
        [pod("web-0", uid="uid-a", node="n1")],
        [pod("web-0", uid="uid-b", rv="20", node="n2", labels={"generation": "b"})],
    )
    assert [(e.type, e.obj.get("metadata", {}).get("uid")) for e in events] == [
        (ADDED, "uid-a"),
        (SYNCED, None),
        (ADDED, "uid-b"),
        (SYNCED, None),
    ], "the new uid is listed before the SYNCED that finds the old one gone"
    target = FakeTarget()
    sink = _sink(target)
    for event in events[:2]:
        sink.apply(event)
    old_copy = target.find("Pod", "web-0", "default")
    assert old_copy is not None and old_copy["spec"]["nodeName"] == "n1"
    for event in events[2:]:
        sink.apply(event)

    copy = target.find("Pod", "web-0", "default")
    assert copy is not None, "the new pod is in the simulator"
    assert _source_uid(copy) == "uid-b"
    assert copy["metadata"]["uid"] != old_copy["metadata"]["uid"], "a new object, not the old copy adopted"
    assert copy["metadata"]["labels"] == {"generation": "b"}
    # Made while the syncer was not watching: like every pod created while syncing, the simulator places it.
    assert "nodeName" not in copy["spec"]
    mirror = sink.state.get("uid-b")
    assert mirror is not None and mirror.simulator_uid == copy["metadata"]["uid"]
    assert sink.state.get("uid-a") is None
    assert [c for c in target.writes() if c[0] in ("create", "delete")] == [
        ("create", "Pod", "web-0"),
        ("delete", "Pod", "web-0"),
        ("create", "Pod", "web-0"),
    ]
    assert sink.metrics.value("Pod", "adopted") == 0


def test_pod_replaced_while_the_syncer_was_down_arrives_bound_to_the_new_pods_node() -> None:
    target = FakeTarget()
    _sink(target).apply(Event(ADDED, POD, pod("db-0", uid="uid-a", node="n1"), initial=True))
    old_copy = target.find("Pod", "db-0", "default")
    assert old_copy is not None

    restarted = _sink(target)
    assert restarted.seed((POD,)) == 1, "the old copy is found by its source-uid annotation"
    restarted.apply(Event(ADDED, POD, pod("db-0", uid="uid-b", rv="7", node="n2"), initial=True))
    restarted.apply(Event(SYNCED, POD, present=frozenset({"uid-b"})))

    copy = target.find("Pod", "db-0", "default")
    assert copy is not None and _source_uid(copy) == "uid-b"
    assert copy["metadata"]["uid"] != old_copy["metadata"]["uid"]
    assert copy["spec"]["nodeName"] == "n2", "running in the source when the syncer started: the existing load"
    assert copy["status"]["phase"] == "Running"


def test_node_replaced_during_a_watch_gap_carries_the_new_nodes_capacity() -> None:
    events = _relist_after_gap([node("n1", uid="uid-a", cpu="4")], [node("n1", uid="uid-b", rv="20", cpu="16")], NODE)
    target = FakeTarget()
    sink = _sink(target)
    for event in events:
        sink.apply(event)
    copy = target.find("Node", "n1")
    assert copy is not None and _source_uid(copy) == "uid-b"
    assert copy["status"]["allocatable"]["cpu"] == "16"
    assert sink.state.uids("Node") == ["uid-b"]


def test_the_old_copy_held_by_a_finalizer_is_waited_for_and_never_adopted() -> None:
    events = _relist_after_gap([pod("web-0", uid="uid-a")], [pod("web-0", uid="uid-b", rv="20")])
    target = FinalizingTarget()
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 2:  # the controller owning the finalizer lets the old copy go
            target.release("Pod", "web-0", "default")

    sink = _sink(target, sleep)
    for event in events[:2]:
        sink.apply(event)
    target.objects[("Pod", "default", "web-0")]["metadata"]["finalizers"] = [HOLD]  # added in the simulator
    for event in events[2:]:
        sink.apply(event)

    copy = target.find("Pod", "web-0", "default")
    assert copy is not None and _source_uid(copy) == "uid-b"
    assert "deletionTimestamp" not in copy["metadata"] and "finalizers" not in copy["metadata"]
    assert sleeps == [1, 2], "capped backoff while the old copy was being deleted"
    assert sink.metrics.value("Pod", "adopted") == 0
    mirror = sink.state.get("uid-b")
    assert mirror is not None and mirror.simulator_uid == copy["metadata"]["uid"]


def test_a_deletion_that_never_ends_holds_the_events_a_bounded_time_and_the_next_event_creates_the_copy() -> None:
    target = FinalizingTarget()
    sleeps: list[float] = []
    sink = _sink(target, sleeps.append)
    # Watch order this time (DELETED, then ADDED): the old copy is held by a finalizer, so the name stays taken.
    sink.apply(Event(ADDED, POD, pod("web-0", uid="uid-a")))
    target.objects[("Pod", "default", "web-0")]["metadata"]["finalizers"] = [HOLD]
    sink.apply(Event(DELETED, POD, pod("web-0", uid="uid-a", rv="2")))
    sink.apply(Event(ADDED, POD, pod("web-0", uid="uid-b", rv="3")))
    sink.apply(Event(ADDED, POD, pod("other", uid="uid-c", rv="4")))

    held = target.find("Pod", "web-0", "default")
    assert held is not None and _source_uid(held) == "uid-a", "the terminating object was not adopted"
    assert sink.state.get("uid-b") is None
    assert 0 < sum(sleeps) <= 30 + 4, "waited a bounded time"
    assert sink.metrics.value("Pod", "failed") == 1
    assert target.find("Pod", "other", "default") is not None, "later events are applied"

    target.release("Pod", "web-0", "default")
    sink.apply(Event(MODIFIED, POD, pod("web-0", uid="uid-b", rv="5", labels={"ready": "yes"})))
    copy = target.find("Pod", "web-0", "default")
    assert copy is not None and _source_uid(copy) == "uid-b"
    assert copy["metadata"]["labels"] == {"ready": "yes"}


def test_a_simulator_object_of_the_name_mirroring_nothing_live_is_still_adopted() -> None:
    target = FakeTarget()
    sink = _sink(target)
    sink.apply(Event(ADDED, POD, pod("victim", uid="uid-a")))
    del target.objects[("Pod", "default", "victim")]  # deleted in the simulator: a tombstone
    sink.apply(Event(MODIFIED, POD, pod("victim", uid="uid-a", rv="2", labels={"x": "1"})))
    # A user makes an object of that name in the simulator; the source replaces its pod.
    made = target.create(POD, {"metadata": {"name": "victim", "namespace": "default"}, "spec": {}})
    writes = len(target.writes())
    sink.apply(Event(ADDED, POD, pod("victim", uid="uid-b", rv="3", labels={"app": "new"})))

    adopted = target.find("Pod", "victim", "default")
    assert adopted is not None and adopted["metadata"]["uid"] == made["metadata"]["uid"]
    assert _source_uid(adopted) == "uid-b"
    assert ("delete", "Pod", "victim") not in target.writes()[writes:], "a tombstone's name is not deleted again"
    assert sink.metrics.value("Pod", "adopted") == 1
