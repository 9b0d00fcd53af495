"""What every controller's loop (app/controllers/loop.py) does with a reconcile that raises: an object gone
before the write (NotFound, e.g. a Deployment deleted with --cascade=orphan while its controller writes its
status) is a debug line and a retry, never a traceback; any other error is logged with its traceback."""

from __future__ import annotations

import logging

import pytest

from kss_sim.cluster.errors import NotFound
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.loop import ReconcileLoop


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
