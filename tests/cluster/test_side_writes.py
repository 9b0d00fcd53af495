"""Writes alongside the store's own (``ClusterStore.write_alongside``): other rows committed in the store's batch
transactions, each in its own SAVEPOINT, so a failing one never costs the API writes it shares a batch with."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, event, text

from kss_sim.cluster.storage import repository
from kss_sim.cluster.storage.store import ClusterStore, InternalError
from kss_sim.db import make_engine, upgrade_database
from tests.cluster.factories import pod


@pytest.fixture
def side_engine(backend_url: str) -> Iterator[Engine]:
    """A migrated database (SQLite; PostgreSQL when configured) with a table for the side rows."""
    engine = make_engine(backend_url)
    upgrade_database(engine)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE side_rows (id INTEGER PRIMARY KEY, note VARCHAR(40) NOT NULL)"))
    yield engine
    engine.dispose()


def insert(row_id: int, note: str = "kept") -> Any:
    def write(conn: Connection) -> None:
        conn.execute(text("INSERT INTO side_rows (id, note) VALUES (:id, :note)"), {"id": row_id, "note": note})

    return write


def side_rows(engine: Engine) -> dict[int, str]:
    with engine.connect() as conn:
        return {int(i): str(n) for i, n in conn.execute(text("SELECT id, note FROM side_rows"))}


def count_commits(engine: Engine) -> list[int]:
    commits = [0]

    def on_commit(_conn: Any) -> None:
        commits[0] += 1

    event.listen(engine, "commit", on_commit)
    return commits


@contextmanager
def one_batch(store: ClusterStore) -> Iterator[None]:
    """Everything staged inside shares one batch: the committer cannot take the open batch while this thread
    holds the store's lock (writes inside must be ``deferred()``: they cannot wait for the commit)."""
    with store._lock:
        yield


def test_a_raising_side_write_rolls_back_alone_and_the_api_writes_of_its_batch_commit(side_engine: Engine) -> None:
    store = ClusterStore.open(side_engine)
    store.flush()
    commits = count_commits(side_engine)

    def inserts_then_raises(conn: Connection) -> None:
        insert(2, "rolled back")(conn)
        raise ValueError("the results could not be encoded")

    with one_batch(store), store.deferred() as pending:
        created = store.create("Pod", pod("api-1"))
        before = store.write_alongside(insert(1))
        failing = store.write_alongside(inserts_then_raises)
        # A constraint violation aborts the whole transaction on PostgreSQL but for its SAVEPOINT.
        duplicate = store.write_alongside(insert(1, "duplicate"))
        after = store.write_alongside(insert(3))
        created_after = store.create("Pod", pod("api-2"))
    pending.wait()  # the API writes are acknowledged: no InternalError
    assert before is not None and failing is not None and duplicate is not None and after is not None
    before.wait()
    after.wait()
    with pytest.raises(ValueError, match="could not be encoded"):
        failing.wait()
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        duplicate.wait()
    assert commits[0] == 1, "the API writes and the side writes shared one transaction"
    assert store.get("Pod", "default", "api-1") == created
    assert store.get("Pod", "default", "api-2") == created_after
    assert side_rows(side_engine) == {1: "kept", 3: "kept"}
    reopened = ClusterStore.open(side_engine)
    assert reopened.get("Pod", "default", "api-1") == created
    assert reopened.get("Pod", "default", "api-2") == created_after
    assert reopened.resource_version == store.resource_version


def test_a_side_write_with_no_api_write_pending_commits_at_once_and_is_not_published(side_engine: Engine) -> None:
    store = ClusterStore.open(side_engine)
    store.flush()
    version = store.resource_version
    log_before = list(store.events_since(0))
    heard: list[Any] = []
    store.add_listener(lambda *change: heard.append(change))
    handle = store.write_alongside(insert(7))
    assert handle is not None
    handle.wait()
    assert side_rows(side_engine) == {7: "kept"}
    assert heard == []
    assert list(store.events_since(0)) == log_before
    assert store.resource_version == version
    # The next API write still gets the next version, and a reopened store agrees.
    created = store.create("Pod", pod("next"))
    assert int(created["metadata"]["resourceVersion"]) == version + 1
    assert ClusterStore.open(side_engine).resource_version == version + 1


def test_a_side_write_that_raises_alone_changes_nothing(side_engine: Engine) -> None:
    store = ClusterStore.open(side_engine)
    store.flush()

    def raises(conn: Connection) -> None:
        insert(1)(conn)
        raise RuntimeError("no")

    handle = store.write_alongside(raises)
    assert handle is not None
    with pytest.raises(RuntimeError, match="no"):
        handle.wait()
    assert side_rows(side_engine) == {}
    # The store goes on writing.
    store.create("Pod", pod("after"))
    assert ClusterStore.open(side_engine).get("Pod", "default", "after") is not None


def test_a_failed_transaction_fails_its_side_writes_too(side_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ClusterStore.open(side_engine)
    store.flush()
    original = repository.write_changes

    def write_changes(conn: Any, changes: Iterable[repository.Change], resource_version: int) -> None:
        changes = list(changes)
        if any(c.row.name == "doomed" for c in changes):
            raise OSError("disk full")
        original(conn, changes, resource_version)

    monkeypatch.setattr(repository, "write_changes", write_changes)
    with one_batch(store), store.deferred() as pending:
        store.create("Pod", pod("doomed"))
        handle = store.write_alongside(insert(1))
    assert handle is not None
    with pytest.raises(InternalError):
        pending.wait()
    with pytest.raises(OSError, match="disk full"):
        handle.wait()
    assert side_rows(side_engine) == {}
    assert store.get("Pod", "default", "doomed") is None


def test_side_writes_from_many_threads_beside_api_writers_all_commit(side_engine: Engine) -> None:
    store = ClusterStore.open(side_engine)
    failures: list[BaseException] = []

    def api_writer(worker: int) -> None:
        for i in range(10):
            store.create("Pod", pod(f"w{worker}-{i}"))

    def side_writer(worker: int) -> None:
        for i in range(10):
            handle = store.write_alongside(insert(worker * 100 + i))
            assert handle is not None
            try:
                handle.wait()
            except BaseException as exc:
                failures.append(exc)

    threads = [threading.Thread(target=api_writer, args=(w,)) for w in range(4)]
    threads += [threading.Thread(target=side_writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert set(side_rows(side_engine)) == {w * 100 + i for w in range(4) for i in range(10)}
    reopened = ClusterStore.open(side_engine)
    assert len([p for p in reopened.list("Pod")[0] if p["metadata"]["name"].startswith("w")]) == 40


def test_without_a_database_the_caller_writes_on_its_own() -> None:
    assert ClusterStore().write_alongside(lambda _conn: None) is None
