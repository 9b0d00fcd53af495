"""Events go ``--event-ttl`` after their last write (``KSS_EVENT_TTL_SECONDS``), as kube-apiserver's etcd lease does:
an old Event is gone and a fresh one stays, an Event written again lives on from that write, Events read back from
the database keep the time they were written, and a watch sees the expiry as a deletion (DELETED, the Event's last
state, a new resourceVersion)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from sqlalchemy import Engine

from kss_sim.cluster.storage.event_expiry import EventExpiry, last_written
from kss_sim.cluster.storage.store import ClusterStore
from tests.conftest import start_server

HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


def _event(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Scheduled",
        "message": name,
        "count": 1,
    }


def _names(store: ClusterStore) -> list[str]:
    return sorted(e["metadata"]["name"] for e in store.list("Event", "default")[0])


def test_an_old_event_is_deleted_and_a_fresh_or_rewritten_one_stays() -> None:
    clock = Clock()
    store = ClusterStore(None, clock=clock)
    expiry = EventExpiry(store, HOUR, interval=3600)  # the test calls expire_due itself
    expiry.start()
    try:
        store.create("Event", _event("old"))
        store.create("Event", _event("renewed"))
        clock.advance(30)
        store.create("Event", _event("fresh"))
        clock.advance(20)
        store.patch("Event", "default", "renewed", {"count": 2})  # a write renews the TTL (TTLFunc on update)
        clock.advance(9)
        store.flush()
        assert expiry.expire_due() == 0  # 59 minutes: nothing due
        clock.advance(2)
        before = store.resource_version
        old = store.get("Event", "default", "old")
        assert expiry.expire_due() == 1
        assert _names(store) == ["fresh", "renewed"]
        changes = store.events_since(before)
        assert [(c.type, c.kind, c.object["metadata"]["name"]) for c in changes] == [("DELETED", "Event", "old")]
        assert {k: v for k, v in changes[0].object.items() if k != "metadata"} == {
            k: v for k, v in (old or {}).items() if k != "metadata"
        }
        assert int(changes[0].object["metadata"]["resourceVersion"]) > before
        clock.advance(30)  # fresh: 61 minutes old; renewed: 41 minutes since its patch
        assert expiry.expire_due() == 1 and _names(store) == ["renewed"]
        clock.advance(20)
        assert expiry.expire_due() == 1 and _names(store) == []
        assert expiry.pending() == 0
    finally:
        expiry.stop()


def test_events_deleted_meanwhile_or_scheduler_events_are_followed_too() -> None:
    clock = Clock()
    store = ClusterStore(None, clock=clock)
    expiry = EventExpiry(store, HOUR, interval=3600)
    expiry.start()
    try:
        pod = store.create("Pod", {"metadata": {"name": "p", "namespace": "default"},
                                   "spec": {"containers": [{"name": "c", "image": "i"}]}})  # fmt: skip
        store.create_event(pod, "Scheduled", "Successfully assigned default/p to n1")
        store.create("Event", _event("gone"))
        store.delete("Event", "default", "gone")
        store.flush()
        assert expiry.pending() == 1
        clock.advance(61)
        assert expiry.expire_due() == 1 and _names(store) == []
    finally:
        expiry.stop()


def test_a_ttl_of_zero_keeps_events_forever() -> None:
    clock = Clock()
    store = ClusterStore(None, clock=clock)
    expiry = EventExpiry(store, 0)
    expiry.start()
    store.create("Event", _event("kept"))
    clock.advance(24 * 60)
    assert expiry.expire_due() == 0 and _names(store) == ["kept"]
    expiry.stop()


def test_events_read_back_from_the_database_keep_their_write_time(engine: Engine) -> None:
    clock = Clock()
    first = ClusterStore.open(engine, clock=clock)
    first.create("Event", _event("written-at-start"))
    clock.advance(90)
    first.create("Event", _event("written-later"))
    first.flush()
    assert last_written(first.get("Event", "default", "written-later") or {}) == clock.now
    clock.advance(40)  # restart: 130 minutes after the first Event, 40 after the second
    reopened = ClusterStore.open(engine, clock=clock)
    expiry = EventExpiry(reopened, HOUR, interval=3600)
    expiry.start()
    try:
        assert expiry.expire_due() == 1
        assert _names(reopened) == ["written-later"]
        clock.advance(21)
        assert expiry.expire_due() == 1 and _names(reopened) == []
    finally:
        expiry.stop()
    assert _names(ClusterStore.open(engine, clock=clock)) == []  # the deletions were written through


def test_kss_serve_expires_events_and_a_watch_sees_them_deleted(tmp_path: Path) -> None:
    srv = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}", env={"KSS_EVENT_TTL_SECONDS": "2"})
    api = config.new_client_from_config(str(srv.kubeconfig))  # type: ignore[no-untyped-call]
    try:
        core: Any = client.CoreV1Api(api)  # the client's models are loosely typed
        start = core.list_namespaced_event("default").metadata.resource_version
        core.create_namespaced_event("default", _event("short-lived"))
        seen: list[tuple[str, str, int]] = []
        began = time.monotonic()
        watcher: Any = watch.Watch()  # type: ignore[no-untyped-call]
        for e in watcher.stream(core.list_namespaced_event, "default", resource_version=start, timeout_seconds=10):
            seen.append((e["type"], e["object"].metadata.name, e["object"].count))
            if e["type"] == "DELETED":
                break
        waited = time.monotonic() - began
        assert seen == [("ADDED", "short-lived", 1), ("DELETED", "short-lived", 1)]
        assert 1.0 <= waited < 8.0
        assert core.list_namespaced_event("default").items == []
    finally:
        api.close()
        srv.stop()


@pytest.mark.parametrize("ttl", [HOUR, 0], ids=["with-ttl", "no-ttl"])
def test_past_the_limit_the_oldest_events_go_first(ttl: float) -> None:
    clock = Clock()
    store = ClusterStore(None, clock=clock)
    expiry = EventExpiry(store, ttl, limit=3, interval=3600)
    expiry.start()
    try:
        for name in ("e1", "e2", "e3", "e4"):
            store.create("Event", _event(name))
            clock.advance(1)
        store.patch("Event", "default", "e1", {"count": 2})  # rewritten: now the newest
        store.create("Event", _event("e5"))
        store.flush()
        assert expiry.expire_due() == 2
        assert _names(store) == ["e1", "e4", "e5"]
        assert expiry.pending() == 3
        assert expiry.expire_due() == 0  # within the limit, and nothing past its TTL
    finally:
        expiry.stop()


def test_following_an_event_costs_little_beside_it() -> None:
    # The expiry follows every Event the store holds (20,000 at the defaults): a due time, a version and a key
    # each cost ~0.35 kB when kept per Event; queued in order of due time, with the strings the store's entry holds,
    # ~16 bytes. The bound fails if a record per Event comes back.
    import gc
    import tracemalloc

    def held_per_event(follow: bool) -> float:
        clock = Clock()
        store = ClusterStore(None, clock=clock, watch_window=1)
        expiry = EventExpiry(store, HOUR, limit=10_000, interval=3600)
        if follow:
            expiry.start()
        bound = store.create("Pod", {"metadata": {"name": "p", "namespace": "default"},
                                     "spec": {"containers": [{"name": "c", "image": "i"}]}})  # fmt: skip
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(1000):
                bound["metadata"]["name"] = f"pod-{i}"
                store.create_event(bound, "Scheduled", f"Successfully assigned default/pod-{i} to n1")
                clock.advance(0.001)  # 60 ms: ~17 Events a second, as a busy scheduler writes them
            gc.collect()
            return (tracemalloc.get_traced_memory()[0] - before) / 1000
        finally:
            tracemalloc.stop()
            expiry.stop()

    extra = held_per_event(True) - held_per_event(False)
    assert extra < 64, extra


def test_a_failed_deletion_is_retried_with_every_event_still_due(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    store = ClusterStore(None, clock=clock)
    expiry = EventExpiry(store, HOUR, interval=3600)
    expiry.start()
    try:
        for name in ("a", "b", "c"):
            store.create("Event", _event(name))
        clock.advance(61)
        deletes = store.delete

        def fail_on_b(kind: str, namespace: str | None, name: str, **options: Any) -> Any:
            if name == "b":
                raise RuntimeError("the database went away")
            return deletes(kind, namespace, name, **options)

        monkeypatch.setattr(store, "delete", fail_on_b)
        with pytest.raises(RuntimeError):
            expiry.expire_due()
        monkeypatch.setattr(store, "delete", deletes)
        assert expiry.expire_due() == 2  # "a" went in the failed round; "b" and "c" were queued again
        assert _names(store) == []
    finally:
        expiry.stop()
