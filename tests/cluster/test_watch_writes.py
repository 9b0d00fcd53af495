"""A watch sends the event lines read together in one write, never more than ``LINES_PER_WRITE`` at a time, at least
``GATHER_SECONDS`` after its previous write; the commits meanwhile hand it over to its loop once."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from kss_sim.cluster.api import watch
from kss_sim.cluster.kinds.registry import BY_KIND
from kss_sim.cluster.storage import change_log
from kss_sim.cluster.storage.selectors import make_selector
from kss_sim.cluster.storage.store import ClusterStore
from tests.cluster.factories import pod


def _batches(store: ClusterStore, since: int | None, *, bookmarks: bool) -> list[list[bytes]]:
    req = watch.WatchRequest(
        info=BY_KIND["Pod"],
        namespace=None,
        selector=make_selector("Pod", None, None),
        resource_version=since,
        send_initial_events=bookmarks,
        allow_bookmarks=bookmarks,
        timeout_seconds=0.05,
        bookmark_seconds=60,
    )

    async def collect() -> list[list[bytes]]:
        return [lines async for lines in watch.stream(store, req, lambda _obj, raw: raw)]

    return asyncio.run(collect())


def _names(batches: list[list[bytes]]) -> list[tuple[str, str]]:
    events = [orjson.loads(line) for lines in batches for line in lines]
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


@pytest.mark.parametrize("since_start", [True, False])
def test_events_read_together_are_sent_in_writes_of_at_most_lines_per_write(
    monkeypatch: pytest.MonkeyPatch, since_start: bool
) -> None:
    monkeypatch.setattr(watch, "LINES_PER_WRITE", 3)
    store = ClusterStore(None)
    store.ensure_builtins()
    start = store.resource_version
    for i in range(7):
        store.create("Pod", pod(f"p{i}"))
    batches = _batches(store, start if since_start else None, bookmarks=not since_start)
    expected = [("ADDED", f"p{i}") for i in range(7)]
    if not since_start:  # a listing then its end's bookmark, sent with the last of the listing's lines
        expected.append(("BOOKMARK", ""))
    assert _names(batches) == expected
    assert [len(lines) for lines in batches] == ([3, 3, 1] if since_start else [3, 3, 2])


def test_a_burst_of_commits_is_sent_in_fewer_writes_spaced_by_gather_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    gather = 0.2
    monkeypatch.setattr(watch, "GATHER_SECONDS", gather)
    store = ClusterStore(None)
    store.ensure_builtins()
    req = watch.WatchRequest(
        info=BY_KIND["Pod"],
        namespace=None,
        selector=make_selector("Pod", None, None),
        resource_version=store.resource_version,
        send_initial_events=False,
        allow_bookmarks=False,
        timeout_seconds=60,
        bookmark_seconds=60,
    )

    async def run() -> tuple[list[tuple[float, list[bytes]]], float]:
        loop = asyncio.get_running_loop()
        writes: list[tuple[float, list[bytes]]] = []

        async def follow() -> None:
            async for lines in watch.stream(store, req, lambda _obj, raw: raw):
                writes.append((loop.time(), lines))
                if sum(len(w[1]) for w in writes) == 22:
                    return

        async def written(count: int) -> None:
            while len(writes) < count:
                await asyncio.sleep(0.001)

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.05)
        first = loop.time()
        await asyncio.to_thread(store.create, "Pod", pod("first"))  # from another thread, as the committer's
        await asyncio.wait_for(written(1), 5)
        for i in range(20):  # a burst: a commit every few milliseconds
            await asyncio.to_thread(store.create, "Pod", pod(f"p{i}"))
            await asyncio.sleep(0.005)
        await asyncio.sleep(2 * gather)
        await asyncio.to_thread(store.create, "Pod", pod("late"))
        await asyncio.wait_for(follower, 10)
        return writes, first

    writes, first = asyncio.run(run())
    names = [("ADDED", "first")] + [("ADDED", f"p{i}") for i in range(20)] + [("ADDED", "late")]
    assert _names([lines for _, lines in writes]) == names
    assert writes[0][0] - first < gather  # after a quiet spell an event is not held back
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(writes)]
    assert all(gap >= gather - 0.001 for gap in gaps), gaps
    assert len(writes) < 12, [len(lines) for _, lines in writes]  # 22 commits, several to a write


def test_commits_hand_a_waiting_watch_over_to_its_loop_once_until_it_reads() -> None:
    class Wakers:
        def __init__(self) -> None:
            self.wakers: list[Callable[[], None]] = []

        def add_waker(self, wake: Callable[[], None]) -> None:
            self.wakers.append(wake)

        def remove_waker(self, wake: Callable[[], None]) -> None:
            self.wakers.remove(wake)

    async def run() -> list[int]:
        loop = asyncio.get_running_loop()
        handed: list[object] = []
        call_soon_threadsafe = loop.call_soon_threadsafe

        def counted(callback: Any, *args: Any) -> Any:
            handed.append(callback)
            return call_soon_threadsafe(callback, *args)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        store = Wakers()
        wakeup, stop = change_log.wake_on_commit(store)
        (wake,) = store.wakers

        def commits(n: int) -> None:  # the committer's thread, while the loop is busy
            for _ in range(n):
                wake()

        counts = []
        for _ in range(3):
            thread = threading.Thread(target=commits, args=(50,))
            thread.start()
            thread.join()
            await asyncio.wait_for(wakeup.wait(), 1)
            commits(10)  # still set: the watch has not read yet, these commits are in what it reads
            counts.append(len(handed))
            wakeup.clear()
        stop()
        assert not store.wakers
        return counts

    assert asyncio.run(run()) == [1, 2, 3]
