"""The loop's idle hook (``kss serve`` reclaims frozen garbage there): once after scheduling, never while busy."""

from __future__ import annotations

import time

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.engine_host import scheduler_thread
from kss_sim.engine_host.scheduler_thread import SchedulerService
from tests.scheduler.factories import make_node, make_pod


def test_on_idle_runs_once_after_the_loop_has_been_idle_for_a_while(
    store: ClusterStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler_thread, "IDLE_HOOK_SECONDS", 0.2)
    calls: list[float] = []
    scheduler = SchedulerService(store, on_idle=lambda: calls.append(time.monotonic()))
    scheduler.start()
    try:
        time.sleep(0.5)
        assert calls == [], "nothing was scheduled yet: nothing to reclaim"
        store.create("Node", make_node(name="n1"))
        store.create("Pod", make_pod(name="p"), "default")
        assert scheduler.wait_idle(10.0)
        deadline = time.monotonic() + 5.0
        while not calls and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        assert len(calls) == 1, "once per busy stretch"
    finally:
        scheduler.stop()
