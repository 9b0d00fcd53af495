"""Server-sent events for the web UI: store changes, coalesced, resumable by resourceVersion.

``GET /ui/events?resourceVersion=N`` replays every change after N, then follows the store. Each batch of
changes becomes one message per kind (``event: pod``, ``event: node``, ...) whose data names the objects
touched (and, for pods, the nodes), followed by an id-only record ``id: <resourceVersion>``. The browser keeps
that id and, when the connection drops, reconnects with ``Last-Event-ID``, which takes precedence over the
query, so nothing is missed. A resourceVersion older than the store's window gets ``event: expired``: the
page reloads its lists. Batches are at most a few per second, so a burst of 1,000 bindings costs the browser
a handful of refreshes rather than 1,000.

A pod that starts waiting in Permit changes nothing in the store (its node is only reserved in the scheduler), so
the stream also looks at the scheduler's waiting pods once a second and, when they change, sends
``event: waiting`` whose data names the pods that started or stopped waiting and their nodes (no id: it is not
a store change and is not replayed).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

import orjson

from kss_sim.cluster.errors import Expired
from kss_sim.cluster.storage.change_log import wake_on_commit
from kss_sim.web.ports import Change, Store, WaitingPodRow

# Events are written by the scheduler for every attempt; no page shows them live.
IGNORED_KINDS = frozenset({"Event"})
MAX_KEYS = 100  # more than this in one batch: the message says "truncated" and every listener refreshes
MIN_INTERVAL = 0.5  # seconds between two batches: bursts coalesce, a lone change still shows at once
HEARTBEAT = 15.0  # a comment line keeps proxies from closing an idle stream and reveals dead clients
RETRY_MS = 2000  # the browser's reconnection delay
DEFAULT_LIFETIME = 300.0  # the stream ends; the browser reconnects with Last-Event-ID (and resumes)
WAITING_POLL = 1.0  # seconds between two looks at the pods waiting in Permit

WaitingPods = Callable[[], Sequence[WaitingPodRow]]


def sse_message(*, event: str | None = None, data: str | None = None, id: int | None = None) -> bytes:
    """One SSE record; data lines are split so a newline in data cannot end the record."""
    lines: list[str] = []
    if event:
        lines.append(f"event: {event}")
    if data is not None:
        lines.extend(f"data: {line}" for line in data.split("\n"))
    if id is not None:
        lines.append(f"id: {id}")
    return ("\n".join(lines) + "\n\n").encode()


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name") or "")


def batch_messages(events: Iterable[Change], last: int) -> list[bytes]:
    """The records for one batch of store events ending at resourceVersion ``last``."""
    per_kind: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.kind in IGNORED_KINDS:
            continue
        entry = per_kind.setdefault(ev.kind, {"keys": [], "nodes": set(), "types": set(), "count": 0})
        entry["count"] += 1
        entry["types"].add(ev.type)
        if len(entry["keys"]) < MAX_KEYS:
            key = _key(ev.obj)
            if key not in entry["keys"]:
                entry["keys"].append(key)
        if ev.kind == "Pod":
            for obj in (ev.obj, ev.old):
                node = ((obj or {}).get("spec") or {}).get("nodeName")
                if node:
                    entry["nodes"].add(node)
    out: list[bytes] = []
    for kind, entry in per_kind.items():
        data = {
            "rv": last,
            "kind": kind,
            "count": entry["count"],
            "types": sorted(entry["types"]),
            "keys": entry["keys"],
            "nodes": sorted(entry["nodes"])[:MAX_KEYS],
            "truncated": entry["count"] > MAX_KEYS or len(entry["nodes"]) > MAX_KEYS,
        }
        out.append(sse_message(event=kind.lower(), data=orjson.dumps(data).decode()))
    # The id goes last: a client cut off mid-batch resumes from the previous batch and sees all of it again.
    out.append(sse_message(id=last))
    return out


def waiting_message(before: dict[str, str], now: dict[str, str]) -> bytes | None:
    """``event: waiting`` for the pods (pod -> node) that started or stopped waiting in Permit; None if none did."""
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    if not changed:
        return None
    nodes = sorted({n for k in changed for n in (before.get(k), now.get(k)) if n})
    data = {
        "count": len(now),
        "keys": changed[:MAX_KEYS],
        "nodes": nodes[:MAX_KEYS],
        "truncated": len(changed) > MAX_KEYS or len(nodes) > MAX_KEYS,
    }
    return sse_message(event="waiting", data=orjson.dumps(data).decode())


def start_version(query: str | None, last_event_id: str | None, current: int) -> int:
    """Where to resume: the browser's Last-Event-ID, else the page's resourceVersion, else now."""
    for text in (last_event_id, query):
        if text:
            with contextlib.suppress(ValueError):
                return max(0, int(text.strip()))
    return current


async def stream(
    store: Store,
    resource_version: int,
    *,
    lifetime: float = DEFAULT_LIFETIME,
    min_interval: float = MIN_INTERVAL,
    heartbeat: float = HEARTBEAT,
    waiting: WaitingPods | None = None,
    waiting_poll: float = WAITING_POLL,
) -> AsyncIterator[bytes]:
    """Yield SSE records from ``resource_version`` on, for ``lifetime`` seconds (0: the backlog only); with
    ``waiting``, also ``event: waiting`` when the pods held in Permit change."""
    loop = asyncio.get_running_loop()
    wakeup, stop_waking = wake_on_commit(store)
    try:
        yield f"retry: {RETRY_MS}\n\n".encode()
        last = resource_version
        deadline = loop.time() + lifetime
        last_sent = loop.time()
        last_batch = 0.0
        # Nothing assumed held at first: a pod that began to wait after the page was drawn is announced too.
        held: dict[str, str] = {}
        next_look = loop.time() + waiting_poll
        while True:
            wakeup.clear()
            try:
                events = store.events_since(last)
            except Expired as exc:
                data = {"rv": last, "message": exc.message, "current": store.resource_version}
                yield sse_message(event="expired", data=orjson.dumps(data).decode(), id=store.resource_version)
                return
            if events:
                last = events[-1].resource_version
                for record in batch_messages(events, last):
                    yield record
                last_sent = last_batch = loop.time()
            now = loop.time()
            if waiting is not None and now >= next_look:
                current = {row.pod: row.node for row in waiting()}
                message = waiting_message(held, current)
                held, next_look = current, now + waiting_poll
                if message is not None:
                    yield message
                    last_sent = now
            if now >= deadline:
                return
            if now - last_sent >= heartbeat:
                yield b": keep-alive\n\n"
                last_sent = now
            # Rate limit: a batch right after another waits; the events keep accumulating meanwhile.
            pause = last_batch + min_interval - now
            if pause > 0:
                await asyncio.sleep(min(pause, deadline - now))
                continue
            wait = min(deadline - now, heartbeat - (now - last_sent))
            if waiting is not None:
                wait = min(wait, next_look - now)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wakeup.wait(), timeout=max(wait, 0.001))
    finally:
        stop_waking()
