"""A watch sends the event lines read together in one write, never more than ``LINES_PER_WRITE`` at a time."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from kss_sim.cluster.api import watch
from kss_sim.cluster.kinds.registry import BY_KIND
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
