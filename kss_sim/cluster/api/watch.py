"""Watch streams: replay the store's change log from a resourceVersion, then follow it, as kube-apiserver does.

Each watcher parks on an ``asyncio.Event`` that the store's commit hook sets from whichever thread committed
(via ``loop.call_soon_threadsafe``), then reads the events after its last resourceVersion. The lines read together
are sent together (one write to the socket rather than one per event: each write is a system call made with the
GIL held), up to ``LINES_PER_WRITE`` at a time, and a write comes at least ``GATHER_SECONDS`` after the last.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from kss_sim.cluster.errors import Expired
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.cluster.storage.change_log import ADDED, DELETED, MODIFIED, wake_on_commit
from kss_sim.cluster.storage.selectors import Selector
from kss_sim.cluster.storage.store import ClusterStore, StoredObject

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# Renders one object for the stream (plain JSON, or a one-row Table); returns encoded JSON.
Render = Callable[[dict[str, Any], bytes], bytes]
# The most event lines sent in one write: a long listing or backlog is still streamed, not held whole in memory.
LINES_PER_WRITE = 256
# The least time between two writes of a watch: under a burst of commits (one a pod at the server's pace) a write
# carries a few commits' events instead of one each; an event after a quiet spell still goes at once.
GATHER_SECONDS = 0.005


@dataclass(frozen=True, slots=True)
class WatchRequest:
    """What a client asked to watch."""

    info: KindInfo
    namespace: str | None
    selector: Selector
    resource_version: int | None  # None: start with the current state as ADDED events
    send_initial_events: bool
    allow_bookmarks: bool
    timeout_seconds: float
    bookmark_seconds: float


def event_line(event_type: str, payload: bytes) -> bytes:
    """One newline-delimited ``watch.Event``."""
    return b'{"type":"' + event_type.encode() + b'","object":' + payload + b"}\n"


def _bookmark(info: KindInfo, resource_version: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(resource_version)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return event_line(
        "BOOKMARK", orjson.dumps({"kind": info.api_kind, "apiVersion": info.api_version, "metadata": meta})
    )


def _in_scope(req: WatchRequest, obj: dict[str, Any]) -> bool:
    if req.info.namespaced and req.namespace and (obj.get("metadata") or {}).get("namespace") != req.namespace:
        return False
    return req.selector.empty or req.selector.matches(obj)


def classify(req: WatchRequest, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> str | None:
    """The event type this watcher sees: an object entering the selection is ADDED, leaving it DELETED."""
    now = _in_scope(req, obj)
    if event_type == MODIFIED:
        before = old is not None and _in_scope(req, old)
        if now and before:
            return MODIFIED
        if now:
            return ADDED
        return DELETED if before else None
    return event_type if now else None


async def stream(store: ClusterStore, req: WatchRequest, render: Render) -> AsyncIterator[list[bytes]]:
    """Yield watch event lines until ``timeout_seconds`` pass or the client goes away, in lists of the lines that
    are ready together (never empty)."""
    loop = asyncio.get_running_loop()
    wakeup, stop_waking = wake_on_commit(store)
    try:
        last = req.resource_version
        lines: list[bytes] = []
        if last is None:
            listing = store.select(req.info.key, req.namespace, req.selector)
            entries: list[StoredObject] = listing.items
            for entry in entries:
                lines.append(event_line(ADDED, render(entry.obj, entry.raw)))
                if len(lines) == LINES_PER_WRITE:
                    yield lines
                    lines = []
            last = listing.resource_version
            if req.send_initial_events and req.allow_bookmarks:
                lines.append(_bookmark(req.info, last, initial_end=True))
        deadline = loop.time() + req.timeout_seconds
        written = loop.time() - GATHER_SECONDS  # the first events go at once
        next_bookmark = loop.time() + req.bookmark_seconds
        while True:
            wakeup.clear()
            try:
                events = store.events_since(last)
            except Expired as exc:
                lines.append(event_line("ERROR", orjson.dumps(exc.to_status())))
                yield lines
                return
            for ev in events:
                last = ev.resource_version
                if ev.kind != req.info.key:
                    continue
                if req.info.namespaced and req.namespace and ev.namespace != req.namespace:
                    continue
                # Without a selector the namespace decides, so an older event is not decoded for it.
                seen = ev.type if req.selector.empty else classify(req, ev.type, ev.obj, ev.old)
                if seen is not None:
                    lines.append(event_line(seen, render(ev.obj, ev.raw)))
                    if len(lines) == LINES_PER_WRITE:
                        yield lines
                        lines = []
            now = loop.time()
            if req.allow_bookmarks and now >= next_bookmark and now < deadline:
                lines.append(_bookmark(req.info, last))
                next_bookmark = now + req.bookmark_seconds
            if lines:
                yield lines
                lines = []
                written = loop.time()
            if now >= deadline:
                return
            # A write right after another waits a little: the events of the commits meanwhile go with the next.
            pause = written + GATHER_SECONDS - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)
                if wakeup.is_set():
                    continue
                now = loop.time()
            wait = min(deadline, next_bookmark if req.allow_bookmarks else deadline) - now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wakeup.wait(), timeout=max(wait, 0.001))
    finally:
        stop_waking()
