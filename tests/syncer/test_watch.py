"""The list → watch → re-list loops, driven deterministically with a scripted source."""

from __future__ import annotations

import threading

from syncer.backoff import Backoff
from syncer.kinds import POD
from syncer.kube import Gone, Inactive, Unavailable
from syncer.metrics import Metrics
from syncer.sink import ADDED, DELETED, MODIFIED, SYNCED, Event
from syncer.watch import Watcher
from tests.syncer.fakes import FakeSource, page, pod


def _watcher(source: FakeSource, sleeps: list[float], events: list[Event]) -> Watcher:
    return Watcher(
        source,
        POD,
        events.append,
        backoff=Backoff(initial=1, cap=4),
        sleep=sleeps.append,
        stop=threading.Event(),
        metrics=Metrics(),
    )


def _bookmark(rv: str) -> dict:
    return {"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv}}}


def _types(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.type, e.obj.get("metadata", {}).get("name", "")) for e in events]


def test_list_pages_then_watch_from_the_lists_version() -> None:
    source = FakeSource(
        lists={"Pod": [[page(pod("a"), rv="10", token="1", remaining=1), page(pod("b"), rv="11")]]},
        watches={"Pod": [[{"type": "ADDED", "object": pod("c", rv="12")}, _bookmark("15")], []]},
    )
    events: list[Event] = []
    w = _watcher(source, [], events)
    w.run(max_iterations=2)
    assert _types(events) == [("ADDED", "a"), ("ADDED", "b"), (SYNCED, ""), ("ADDED", "c")]
    assert all(e.initial for e in events[:2]) and not events[3].initial
    assert events[2].present == frozenset({"src-a", "src-b"})
    # Watches start from the first page's version, then from the bookmark's, without listing again.
    assert source.watch_calls == [("Pod", "10"), ("Pod", "15")]
    assert len(source.list_calls) == 2


def test_gone_relists_at_once_and_the_diff_reports_only_changes() -> None:
    source = FakeSource(
        lists={
            "Pod": [
                [page(pod("a"), pod("b"), pod("c"), rv="10")],
                [page(pod("a"), pod("b", rv="20", labels={"x": "1"}), pod("d", rv="21"), rv="30")],
            ]
        },
        watches={"Pod": [[Gone("too old", status=410)], []]},
    )
    events: list[Event] = []
    sleeps: list[float] = []
    w = _watcher(source, sleeps, events)
    w.run(max_iterations=2)
    relist = events[4:]
    assert _types(relist) == [(MODIFIED, "b"), (ADDED, "d"), (SYNCED, "")]
    assert relist[-1].present == frozenset({"src-a", "src-b", "src-d"}), "c vanished during the gap"
    assert not any(e.initial for e in relist), "pods created during the gap are scheduled by the simulator"
    assert sleeps == [], "410 re-lists without backoff"
    assert source.watch_calls[-1] == ("Pod", "30")
    assert w.metrics.value("Pod", "relisted_gone") == 1


def test_errors_reconnect_with_capped_backoff_and_resume_from_the_last_version() -> None:
    down = Unavailable("connection refused")
    source = FakeSource(
        lists={"Pod": [down, down, [page(pod("a"), rv="10")]]},
        watches={
            "Pod": [
                [{"type": "MODIFIED", "object": pod("a", rv="11")}, Unavailable("connection reset")],
                down,
                down,
                down,
                [{"type": "DELETED", "object": pod("a", rv="12")}],
            ]
        },
    )
    events: list[Event] = []
    sleeps: list[float] = []
    w = _watcher(source, sleeps, events)
    w.run(max_iterations=8)
    assert sleeps == [1, 2, 1, 2, 4, 4]
    assert source.watch_calls[:5] == [("Pod", "10"), ("Pod", "11"), ("Pod", "11"), ("Pod", "11"), ("Pod", "11")]
    assert _types(events) == [(ADDED, "a"), (SYNCED, ""), (MODIFIED, "a"), (DELETED, "a")]
    assert w.known == {}


def test_silent_watch_is_restarted_without_backoff() -> None:
    source = FakeSource(
        lists={"Pod": [[page(rv="5")]]},
        watches={"Pod": [[Inactive("read timed out")], [{"type": "ADDED", "object": pod("late", rv="6")}]]},
    )
    events: list[Event] = []
    sleeps: list[float] = []
    w = _watcher(source, sleeps, events)
    w.run(max_iterations=2)
    assert sleeps == []
    assert _types(events)[-1] == (ADDED, "late")
    assert source.watch_calls == [("Pod", "5"), ("Pod", "5")]


def test_stop_ends_the_loop() -> None:
    source = FakeSource(lists={"Pod": [[page(rv="5")]]}, watches={"Pod": []})
    w = _watcher(source, [], [])
    w.stop.set()
    w.run()
    assert source.list_calls == []
