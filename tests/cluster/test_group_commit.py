"""Group commit: concurrent writes share transactions, each is acknowledged only once durable, and a failed
transaction leaves nothing visible (neither its own changes nor those staged on top of it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

import pytest
from sqlalchemy import Engine, event

from kss_sim.cluster.errors import Invalid
from kss_sim.cluster.storage import repository
from kss_sim.cluster.storage.committer import Committer
from kss_sim.cluster.storage.store import ClusterStore, InternalError
from tests.cluster.factories import node, pod

WRITERS = 24
WRITES_EACH = 10


def count_commits(engine: Engine) -> list[int]:
    """A one-item list counting the transactions committed on ``engine`` from now on."""
    commits = [0]

    def on_commit(_conn: Any) -> None:
        commits[0] += 1

    event.listen(engine, "commit", on_commit)
    return commits


def first_commit_waits_for(monkeypatch: pytest.MonkeyPatch, staged_behind: int) -> list[int]:
    """Count the transactions from now on; the first one waits (up to 10 s) until ``staged_behind`` further
    writes were staged behind it, so whether writes share a transaction does not hang on this machine's speed
    (a fast disk and a slow CPU otherwise commit every write before the next one arrives)."""
    commits, staged = [0], [0]
    arrived = threading.Condition()
    original_stage, original_write = Committer.stage, repository.write_changes

    def stage(self: Committer, changes: Any) -> Any:
        batch = original_stage(self, changes)
        with arrived:
            staged[0] += 1
            arrived.notify_all()
        return batch

    def write_changes(conn: Any, changes: Iterable[repository.Change], resource_version: int) -> None:
        commits[0] += 1
        if commits[0] == 1:
            with arrived:
                arrived.wait_for(lambda: staged[0] > staged_behind, timeout=10)
        original_write(conn, changes, resource_version)

    monkeypatch.setattr(Committer, "stage", stage)
    monkeypatch.setattr(repository, "write_changes", write_changes)
    return commits


def test_concurrent_writers_are_all_acknowledged_durable_and_share_commits(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ClusterStore.open(engine)
    heard: list[int] = []
    store.add_listener(lambda _t, _k, obj: heard.append(int(obj["metadata"]["resourceVersion"])), kinds=["Pod"])
    commits = first_commit_waits_for(monkeypatch, staged_behind=WRITERS - 1)
    acknowledged: dict[str, dict[str, Any]] = {}
    versions: list[list[int]] = [[] for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)

    def work(worker: int) -> None:
        start.wait()
        for i in range(WRITES_EACH):
            created = store.create("Pod", pod(f"g{worker}-{i}"))
            # Acknowledged means committed: a fresh store on the same database already has it.
            acknowledged[created["metadata"]["name"]] = created
            versions[worker].append(int(created["metadata"]["resourceVersion"]))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    total = WRITERS * WRITES_EACH
    assert len(acknowledged) == total
    every = sorted(v for per_worker in versions for v in per_worker)
    assert len(set(every)) == total, "a resourceVersion was handed out twice"
    for per_worker in versions:
        assert per_worker == sorted(per_worker)
    assert heard == every, "listeners hear every change once, in resourceVersion order"
    assert [e.resource_version for e in store.events_since(0) if e.kind == "Pod"] == every
    assert commits[0] < total, "concurrent writes should share transactions"
    reopened = ClusterStore.open(engine)
    assert reopened.resource_version == store.resource_version
    for name, body in acknowledged.items():
        assert reopened.get("Pod", "default", name) == body


def failing_on(
    monkeypatch: pytest.MonkeyPatch, name: str, *, entered: threading.Event, release: threading.Event
) -> None:
    """Make the transaction carrying an object called ``name`` wait for ``release``, then fail."""
    original = repository.write_changes

    def write_changes(conn: Any, changes: Iterable[repository.Change], resource_version: int) -> None:
        changes = list(changes)
        if any(c.row.name == name for c in changes):
            entered.set()
            release.wait(10)
            raise OSError("disk full")
        original(conn, changes, resource_version)

    monkeypatch.setattr(repository, "write_changes", write_changes)


def test_a_failed_commit_changes_nothing_visible(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ClusterStore.open(engine)
    store.create("Node", node("n1"))
    before_rv = store.resource_version
    before_node = store.get("Node", None, "n1")
    heard: list[tuple[str, str]] = []
    store.add_listener(lambda t, _k, obj: heard.append((t, obj["metadata"]["name"])))
    entered, release = threading.Event(), threading.Event()
    failing_on(monkeypatch, "doomed", entered=entered, release=release)
    errors: dict[str, BaseException] = {}

    def attempt(label: str, write: Any) -> None:
        try:
            write()
        except BaseException as exc:
            errors[label] = exc

    first = threading.Thread(target=attempt, args=("create", lambda: store.create("Pod", pod("doomed"))))
    first.start()
    assert entered.wait(10)
    # While that transaction hangs, a second write is staged on top of it (it sees the doomed pod) ...
    second = threading.Thread(
        target=attempt,
        args=("patch", lambda: store.patch("Node", None, "n1", {"metadata": {"labels": {"late": "yes"}}})),
    )
    second.start()
    with pytest.raises(Exception, match="already exists"):
        store.create("Pod", pod("doomed"))
    deadline = time.monotonic() + 10
    while store._committer._open is None and time.monotonic() < deadline:  # the patch has been staged
        time.sleep(0.01)
    # ... and readers see neither (nothing is visible before it is durable).
    assert store.get("Pod", "default", "doomed") is None
    assert store.get("Node", None, "n1") == before_node
    assert store.resource_version == before_rv
    release.set()
    first.join()
    second.join()

    assert isinstance(errors.get("create"), InternalError)
    assert isinstance(errors.get("patch"), InternalError), "a write staged on a failed batch fails with it"
    assert store.get("Pod", "default", "doomed") is None
    assert store.get("Node", None, "n1") == before_node
    assert store.resource_version == before_rv
    assert heard == []
    assert store.events_since(before_rv) == []
    # The store carries on: the dropped versions are handed out again, nothing was ever seen with them.
    monkeypatch.undo()
    again = store.create("Pod", pod("doomed"))
    assert int(again["metadata"]["resourceVersion"]) == before_rv + 1
    reopened = ClusterStore.open(engine)
    assert reopened.get("Node", None, "n1") == before_node
    assert reopened.get("Pod", "default", "doomed") == again


def test_deferred_writes_are_staged_then_acknowledged(engine: Engine) -> None:
    store = ClusterStore.open(engine)
    store.create("Node", node("n1"))
    store.create("Pod", pod("p1"))
    with store.deferred() as pending:
        bound = store.bind_pod("default", "p1", "n1", annotations={"example.com/result": "ok"})
        store.create_event(bound, "Scheduled", "assigned default/p1 to n1")
    pending.wait()
    assert pending.done()
    stored = store.get("Pod", "default", "p1")
    assert stored is not None and stored == bound
    assert stored["spec"]["nodeName"] == "n1"
    assert stored["metadata"]["annotations"] == {"example.com/result": "ok"}
    assert ClusterStore.open(engine).get("Pod", "default", "p1") == bound


def test_status_and_annotations_in_one_change_or_none(store: ClusterStore) -> None:
    store.create("Pod", pod("p2"))
    rv = store.resource_version
    status = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    updated = store.update_pod_status("default", "p2", status, annotations={"example.com/a": "1"})
    assert updated["status"]["conditions"][0]["reason"] == "Unschedulable"
    assert updated["metadata"]["annotations"] == {"example.com/a": "1"}
    assert int(updated["metadata"]["resourceVersion"]) == rv + 1, "one change, one version"
    with pytest.raises(Invalid):
        store.bind_pod("default", "p2", "n1", annotations={"not a valid key!": "x"})
    current = store.get("Pod", "default", "p2")
    assert current == updated, "a refused binding changes nothing"


def test_listeners_can_ask_for_some_kinds_only(store: ClusterStore) -> None:
    heard: list[str] = []
    store.add_listener(lambda _t, kind, _o: heard.append(kind), kinds=["Node"])
    store.create("Pod", pod("p3"))
    store.create("Node", node("n3"))
    assert heard == ["Node"]
