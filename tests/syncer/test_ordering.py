"""Lists apply the pods the source scheduled before those it did not (``syncer.ordering``), over scripted fakes."""

from __future__ import annotations

import threading
import time
from typing import Any

from syncer.backoff import Backoff
from syncer.kinds import NAMESPACE, NODE, POD, REPLICA_SET
from syncer.kube import Gone, Page, Unavailable
from syncer.metrics import Metrics
from syncer.ordering import running_first
from syncer.runner import Syncer, SyncOptions
from syncer.sink import ADDED, MODIFIED, SYNCED, Event
from syncer.watch import Watcher
from tests.syncer.fakes import FakeSource, FakeTarget, node, page, pod


def _names(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.type, e.obj.get("metadata", {}).get("name", "")) for e in events]


def _watcher(source: FakeSource, events: list[Event]) -> Watcher:
    return Watcher(
        source, POD, events.append, backoff=Backoff(initial=1, cap=1), sleep=lambda _s: None, stop=threading.Event()
    )


def test_running_first_keeps_each_parts_order_and_leaves_other_kinds_and_deletions() -> None:
    events = [
        Event(ADDED, POD, pod("wait-1")),
        Event(ADDED, POD, pod("run-1", node="n1")),
        Event("DELETED", POD, pod("gone")),
        Event(MODIFIED, POD, pod("wait-2")),
        Event(ADDED, REPLICA_SET, {"metadata": {"name": "rs"}, "spec": {}}),
        Event(ADDED, POD, pod("run-2", node="n2")),
    ]
    now, later = running_first(events)
    assert _names(now) == [(ADDED, "run-1"), ("DELETED", "gone"), (ADDED, "rs"), (ADDED, "run-2")]
    assert _names(later) == [(ADDED, "wait-1"), (MODIFIED, "wait-2")]


def test_a_list_emits_the_pods_its_source_has_not_scheduled_after_the_rest_and_before_synced() -> None:
    first = page(pod("a-wait"), pod("b-run", node="n1"), rv="10", token="1", remaining=2)
    second = page(pod("c-wait"), pod("d-run", node="n2"), rv="10")
    watched = [{"type": "ADDED", "object": pod("e-new", rv="11")}, {"type": "ADDED", "object": pod("f", rv="12")}]
    source = FakeSource(lists={"Pod": [[first, second]]}, watches={"Pod": [watched]})
    events: list[Event] = []
    _watcher(source, events).run(max_iterations=1)
    assert _names(events) == [
        (ADDED, "b-run"),
        (ADDED, "d-run"),
        (ADDED, "a-wait"),
        (ADDED, "c-wait"),
        (SYNCED, ""),
        (ADDED, "e-new"),  # watch events keep the source's order
        (ADDED, "f"),
    ]
    assert events[4].present == frozenset({"src-a-wait", "src-b-run", "src-c-wait", "src-d-run"})


def test_a_relist_after_gone_follows_the_same_order() -> None:
    source = FakeSource(
        lists={
            "Pod": [
                [page(pod("a"), rv="10")],
                [page(pod("a", rv="20", labels={"v": "2"}), pod("b-new"), pod("c-run", node="n1", rv="21"), rv="30")],
            ]
        },
        watches={"Pod": [[Gone("too old", status=410)], []]},
    )
    events: list[Event] = []
    _watcher(source, events).run(max_iterations=3)
    assert _names(events) == [
        (ADDED, "a"),
        (SYNCED, ""),
        (ADDED, "c-run"),
        (MODIFIED, "a"),
        (ADDED, "b-new"),
        (SYNCED, ""),
    ]


class _FailingOnSecondPage(FakeSource):
    """Answers the second page of the first list with an outage, then lists normally."""

    failed = False

    def list(self, kind: Any, namespace: Any, **kwargs: Any) -> Page:
        if kwargs.get("continue_token") and not self.failed:
            self.failed = True
            self.lists[kind.name].pop(0)
            raise Unavailable("connection reset")
        return super().list(kind, namespace, **kwargs)


def test_a_list_that_fails_part_way_emits_the_held_pods_with_the_next_one() -> None:
    pages = [page(pod("a-wait"), pod("b-run", node="n1"), rv="10", token="1"), page(pod("c-run", node="n1"))]
    source = _FailingOnSecondPage(lists={"Pod": [pages, [page(*pages[0].items, *pages[1].items, rv="10")]]})
    events: list[Event] = []
    _watcher(source, events).run(max_iterations=2)
    # The first try emitted what it could apply at once; the waiting pod it held is emitted by the second list.
    assert _names(events) == [(ADDED, "b-run"), (ADDED, "c-run"), (ADDED, "a-wait"), (SYNCED, "")]
    assert all(e.initial for e in events[:3])


def test_start_up_holds_waiting_pods_of_every_namespace_until_the_running_ones_are_created() -> None:
    lists: dict[str, list[Any]] = {}
    lists["Namespace"] = [[page(*({"metadata": {"name": n, "uid": f"src-{n}"}} for n in ("first", "second")))]]
    lists["Node"] = [[page(node("n1"), rv="9")]]
    lists["Pod"] = [
        [page(pod("wait", namespace="first"), pod("run-1", namespace="first", node="n1"), rv="9")],
        [page(pod("run-2", namespace="second", node="n1"), rv="9")],
    ]
    rs = {"metadata": {"name": "web", "namespace": "second", "uid": "src-rs"}, "spec": {"replicas": 0}}
    lists["ReplicaSet"] = [[page(rv="9")], [page(rs, rv="9")]]
    source = FakeSource(lists=lists)
    target = FakeTarget()
    kinds = (NAMESPACE, NODE, POD, REPLICA_SET)
    syncer = Syncer(source, target, SyncOptions(kinds=kinds, namespaces=("first", "second")), metrics=Metrics())
    syncer.start()
    try:
        deadline = time.monotonic() + 10
        while target.find("ReplicaSet", "web", "second") is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        syncer.shutdown()
    creates = [(kind, name) for verb, kind, name in target.calls if verb == "create"]
    pods_and_after = creates[creates.index(("Pod", "run-1")) :]
    assert pods_and_after == [("Pod", "run-1"), ("Pod", "run-2"), ("Pod", "wait"), ("ReplicaSet", "web")]
