"""Repeated Events become one Event with a count, as the components' event recorders make them.

kube-scheduler records through events.k8s.io's recorder: an Event isomorphic to one recorded in the last 6 minutes
(same object, reason, action, type, note, reporting component) is not created again; the first one gains a
``series`` (count, lastObservedTime). Controllers record through client-go's core/v1 recorder, whose correlator
bumps ``count`` and ``lastTimestamp`` of the same Event. kss keeps both in core/v1 form: ``count`` and
``lastTimestamp`` always, ``series`` for the events.k8s.io ones (they carry an ``action``), so ``kubectl describe``
prints ``(x5 over 3m)`` as on a real cluster. Both recorders remember at most 4,096 Events (an LRU cache).
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timedelta
from typing import Any

SERIES_WINDOW = timedelta(minutes=6)  # events.k8s.io's isomorphic-event window
CACHE_SIZE = 4096  # both recorders' LRU cache size

EventKey = tuple[str, ...]


def event_key(event: dict[str, Any]) -> EventKey:
    """What makes two Events the same occurrence repeated."""
    involved = event.get("involvedObject") or {}
    return (
        str(involved.get("kind") or ""),
        str(involved.get("namespace") or ""),
        str(involved.get("name") or ""),
        str(involved.get("uid") or ""),
        str(event.get("reason") or ""),
        str(event.get("message") or ""),
        str(event.get("type") or ""),
        str(event.get("action") or ""),
        str((event.get("source") or {}).get("component") or ""),
    )


def micro_time(moment: datetime) -> str:
    """A MicroTime as the API writes it (``2026-11-24T10:00:00.123456Z``)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class RecentEvents:
    """The Events recorded lately, by ``event_key``: which one a repeat should count on."""

    def __init__(self, size: int = CACHE_SIZE, window: timedelta = SERIES_WINDOW) -> None:
        """An empty cache of ``size`` Events; a repeat later than ``window`` after the last starts a new Event."""
        self._size = size
        self._window = window
        self._seen: OrderedDict[EventKey, tuple[str, str, datetime]] = OrderedDict()

    def find(self, key: EventKey, now: datetime) -> tuple[str, str] | None:
        """``(namespace, name)`` of the Event a repeat of ``key`` at ``now`` adds to, or None."""
        seen = self._seen.get(key)
        if seen is None:
            return None
        namespace, name, last = seen
        if now - last > self._window:
            del self._seen[key]
            return None
        return namespace, name

    def remember(self, key: EventKey, namespace: str, name: str, now: datetime) -> None:
        """``key`` was recorded (or repeated) at ``now`` as Event ``namespace/name``."""
        self._seen[key] = (namespace, name, now)
        self._seen.move_to_end(key)
        while len(self._seen) > self._size:
            self._seen.popitem(last=False)

    def clear(self) -> None:
        """Forget every Event (the store was emptied)."""
        self._seen.clear()


def repeated(event: dict[str, Any], now: datetime, timestamp: str) -> dict[str, Any]:
    """``event`` (a copy the caller owns) counted once more at ``now``."""
    count = int(event.get("count") or 1) + 1
    event["count"] = count
    event["lastTimestamp"] = timestamp
    if event.get("action"):
        event["series"] = {"count": count, "lastObservedTime": micro_time(now)}
    return event
