"""The scheduler in ``kss serve`` goes on while the writes of earlier attempts are still on their way to the
database (``ATTEMPTS_IN_FLIGHT``), as kube-scheduler's binding cycles run apart from its scheduling cycle. A commit
that fails drops its batch and everything staged after it: every attempt dropped so is a failed binding cycle (the
assumed pod forgotten, the pod tried again), so the cluster still ends with every pod bound once and the scheduler's
cache agreeing with the store."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest

from kss_sim.cluster.storage import repository
from kss_sim.cluster.storage.committer import Committer
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.engine_host.scheduler_thread import SchedulerService
from tests.scheduler.factories import make_node, make_pod

PODS = 20


def _fail_the_first_binding_once(monkeypatch: pytest.MonkeyPatch, staged_behind: int) -> list[int]:
    """The first transaction carrying a binding waits (up to 10 s) until ``staged_behind`` further writes were
    staged behind it, then fails as a full disk would; the list counts the bindings it carried."""
    carried: list[int] = []
    staged = [0]
    arrived = threading.Condition()
    original_stage, original_write = Committer.stage, repository.write_changes

    def stage(self: Committer, changes: Any) -> Any:
        batch = original_stage(self, changes)
        with arrived:
            staged[0] += 1
            arrived.notify_all()
        return batch

    def write_changes(conn: Any, changes: Iterable[repository.Change], resource_version: int) -> None:
        changes = list(changes)
        bindings = [c for c in changes if c.row.kind == "Pod" and '"nodeName"' in c.row.body and c.op == "update"]
        if bindings and not carried:
            carried.append(len(bindings))
            with arrived:
                mark = staged[0]
                arrived.wait_for(lambda: staged[0] >= mark + staged_behind, timeout=10)
            raise OSError("disk full")
        original_write(conn, changes, resource_version)

    monkeypatch.setattr(Committer, "stage", stage)
    monkeypatch.setattr(repository, "write_changes", write_changes)
    return carried


def test_attempts_dropped_by_a_failed_commit_are_scheduled_again(
    store: ClusterStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Room for exactly PODS pods: an assumed pod the scheduler failed to forget would leave one pod out.
    for name in ("n1", "n2"):
        store.create("Node", make_node(name=name, allocatable={"cpu": "64", "memory": "64Gi", "pods": str(PODS // 2)}))
    scheduler = SchedulerService(store)
    scheduler.start()
    try:
        carried = _fail_the_first_binding_once(monkeypatch, staged_behind=8)
        with caplog.at_level(logging.ERROR, logger="kss.scheduler"):
            with scheduler.held():  # every pod queued before the first is tried
                for i in range(PODS):
                    store.create("Pod", make_pod(name=f"p{i:02d}"), "default")
            assert scheduler.wait_idle(30.0)
            store.flush()
            assert scheduler.wait_idle(30.0)
        dropped = [r for r in caplog.records if "was not stored" in r.getMessage()]
        # The failure hit while later attempts were in flight: all of them were dropped with it, and retried.
        assert carried and len(dropped) >= 3
        pods, _ = store.list("Pod", "default")
        on_node = Counter(p["spec"].get("nodeName") for p in pods)
        assert on_node == {"n1": PODS // 2, "n2": PODS // 2}
        assert scheduler.cache.pod_count() == PODS
        assert {uid: pi.node_name for uid, pi in scheduler.cache._pods.items()} == {
            p["metadata"]["uid"]: p["spec"]["nodeName"] for p in pods
        }
    finally:
        scheduler.stop()
