"""What every controller's loop (app/controllers/loop.py) does with a reconcile that raises: an object gone
before the write (NotFound, e.g. a Deployment deleted with --cascade=orphan while its controller writes its
status) is a debug line and a retry, never a traceback; any other error is logged with its traceback."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kss_sim.cluster.errors import NotFound
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.loop import ReconcileLoop
from tests.cluster.factories import pod


class Flaky(ReconcileLoop[str]):
    """Reconciles one key, raising ``errors`` one after the other first."""

    name = "flaky"

    def __init__(self, store: ClusterStore, errors: list[Exception]) -> None:
        super().__init__(store, retry_base_seconds=0.001)
        self.errors = errors
        self.calls = 0

    def observe(self, event_type: str, kind: str, obj: dict[str, object]) -> list[str]:
        return []

    def resync(self) -> list[str]:
        return ["key"]

    def reconcile(self, key: str) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


def run(errors: list[Exception]) -> Flaky:
    loop = Flaky(ClusterStore(None), errors)
    loop.start()
    try:
        assert loop.wait_idle()
    finally:
        loop.stop()
    return loop


def test_an_object_gone_before_the_write_is_a_debug_line_and_a_retry(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kss_sim.controllers.loop")
    loop = run([NotFound("deployments", "d2", group="apps")])
    assert loop.calls == 2
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.DEBUG, None)]
    assert 'deployments.apps "d2" not found' in caplog.records[0].getMessage()


def test_any_other_error_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kss_sim.controllers.loop")
    loop = run([ValueError("a bug")])
    assert loop.calls == 2
    assert [r.levelno for r in caplog.records] == [logging.ERROR] and caplog.records[0].exc_info is not None


class Indexing(ReconcileLoop[str]):
    """Indexes the pods' names from the changes (``observe``) and reconciles each name against the store."""

    name = "indexing"
    watched_kinds = ("Pod",)
    inbox_limit = 5

    def __init__(self, store: ClusterStore) -> None:
        super().__init__(store)
        self.index: set[str] = set()
        self.reconciled: dict[str, bool] = {}
        self.most_waiting = 0

    def observe(self, event_type: str, kind: str, obj: dict[str, Any]) -> list[str]:
        name = str(obj["metadata"]["name"])
        if event_type == "DELETED":
            self.index.discard(name)
        else:
            self.index.add(name)
        return [name]

    def resync(self) -> list[str]:
        names = [str(entry.obj["metadata"]["name"]) for entry in self.store.select("Pod").items]
        self.index.update(names)
        return names

    def reset(self) -> None:
        self.index.clear()

    def reconcile(self, key: str) -> None:
        self.reconciled[key] = self.store.get("Pod", "default", key) is not None


def test_an_inbox_past_its_limit_is_dropped_for_a_fresh_listing() -> None:
    """A worker that gets no time (attached here, not drained) keeps at most ``inbox_limit`` changes noted; past
    it the loop lists again, as an informer after its watch fell behind the server's window, and ends where it
    would have: every pod indexed and reconciled as the store has it."""
    store = ClusterStore(None)
    loop = Indexing(store)
    loop.attach()
    try:
        for i in range(12):
            store.create("Pod", pod(f"p{i}"), "default")
            loop.most_waiting = max(loop.most_waiting, loop.backlog()["inbox"])
        store.delete("Pod", "default", "p3")
        assert loop.most_waiting <= loop.inbox_limit
        assert loop.has_work()
        loop.drain()
    finally:
        loop.detach()
    assert loop.relists == 1
    assert loop.index == {f"p{i}" for i in range(12)} - {"p3"}
    assert loop.reconciled == {**{f"p{i}": True for i in range(12)}, "p3": False}


def test_an_inbox_within_its_limit_is_taken_in_without_a_listing() -> None:
    store = ClusterStore(None)
    loop = Indexing(store)
    loop.attach()
    try:
        for i in range(4):
            store.create("Pod", pod(f"p{i}"), "default")
        store.delete("Pod", "default", "p0")
        loop.drain()
    finally:
        loop.detach()
    assert loop.relists == 0
    assert loop.index == {"p1", "p2", "p3"}
    assert loop.reconciled == {"p0": False, "p1": True, "p2": True, "p3": True}
