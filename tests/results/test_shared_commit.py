"""Recorded attempts written through the cluster store's committer (``kss serve``): one writer for the database
file, the rows still built off the scheduler's thread, a failed batch of rows kept in ``errors`` and alone."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.db import make_engine, make_session_factory, session_scope, upgrade_database
from kss_sim.results.attempts import ResultsService
from kss_sim.results.rows import AttemptRetention
from tests.cluster.factories import pod
from tests.results.test_recording import run_two_attempts


@pytest.fixture
def shared_engine(backend_url: str) -> Iterator[Engine]:
    engine = make_engine(backend_url)
    upgrade_database(engine)
    yield engine
    engine.dispose()


def writing_threads(engine: Engine) -> set[str]:
    """The names of the threads that write to ``scheduling_attempts`` on ``engine`` from now on."""
    names: set[str] = set()

    def before(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        head = statement.lstrip().upper()
        if head.startswith(("INSERT", "DELETE", "UPDATE")) and "SCHEDULING_ATTEMPTS" in head:
            names.add(threading.current_thread().name)

    event.listen(engine, "before_cursor_execute", before)
    return names


def test_attempts_are_inserted_and_trimmed_by_the_store_committer(shared_engine: Engine) -> None:
    store = ClusterStore.open(shared_engine)
    factory = make_session_factory(shared_engine)
    writers = writing_threads(shared_engine)
    svc = ResultsService(lambda: session_scope(factory), retention=AttemptRetention(2), shared_commit=store)
    svc.start()
    first, second, web = run_two_attempts()
    for n in range(1, 6):
        att = dataclasses.replace(first if n % 2 else second)
        att.attempt = svc.next_attempt_number("default", "web")
        svc.submit(att, namespace="default", pod_name="web", pod_uid=web.uid)
        store.create("Pod", pod(f"p{n}"))
    svc.flush()
    assert svc.errors == []
    assert writers == {"kss-store-committer"}
    assert [a["attempt"] for a in svc.list_attempts("default", "web")] == [5, 4]
    svc.stop()


def test_a_batch_of_rows_that_fails_is_in_errors_and_the_next_is_recorded(shared_engine: Engine) -> None:
    store = ClusterStore.open(shared_engine)
    factory = make_session_factory(shared_engine)
    svc = ResultsService(lambda: session_scope(factory), shared_commit=store)
    _, second, web = run_two_attempts()
    svc.submit(second, namespace=None, pod_name="web", pod_uid=web.uid)  # type: ignore[arg-type]
    svc.flush()
    assert len(svc.errors) == 1
    assert "namespace" in svc.errors[0].lower()
    assert svc.count() == 0
    created = store.create("Pod", pod("after-the-failure"))
    svc.submit(second, namespace="default", pod_name="web", pod_uid=web.uid)
    svc.flush()
    svc.stop()
    assert [a["attempt"] for a in svc.list_attempts("default", "web")] == [second.attempt]
    assert ClusterStore.open(shared_engine).get("Pod", "default", "after-the-failure") == created


def test_without_a_database_in_the_store_the_service_writes_its_own_rows(shared_engine: Engine) -> None:
    factory = make_session_factory(shared_engine)
    writers = writing_threads(shared_engine)
    svc = ResultsService(lambda: session_scope(factory), shared_commit=ClusterStore())
    first, _, web = run_two_attempts()
    svc.submit(first, namespace="default", pod_name="web", pod_uid=web.uid)
    svc.flush()
    svc.stop()
    assert svc.errors == []
    assert writers == {"results-writer"}
    assert svc.count() == 1


def test_a_batch_of_attempts_is_one_insert_on_sqlite_and_reads_back_whole(engine: Engine) -> None:
    """pysqlite lets go of the GIL for each row of an executemany (a wait to win it back per row, in the store's
    commit): on SQLite a batch of attempts is one INSERT, and each attempt reads back as submitted."""
    store = ClusterStore.open(engine)
    factory = make_session_factory(engine)
    inserts: list[tuple[bool, int]] = []

    def before(_conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, executemany: bool) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO SCHEDULING_ATTEMPTS"):
            inserts.append((executemany, statement.count("),(") + 1))

    event.listen(engine, "before_cursor_execute", before)
    svc = ResultsService(lambda: session_scope(factory), shared_commit=store)
    first, second, web = run_two_attempts()
    for n in range(1, 21):  # submitted before the writer starts: it takes them in a batch or two
        att = dataclasses.replace(first if n % 2 else second)
        att.attempt = n
        svc.submit(att, namespace="default", pod_name="web", pod_uid=web.uid)
    svc.start()
    svc.flush()
    assert svc.errors == []
    assert not any(many for many, _ in inserts) and sum(rows for _, rows in inserts) == 20
    assert len(inserts) <= 5, "a few statements per batch the writer took (power-of-two sizes), not one per attempt"
    listed = svc.list_attempts("default", "web")
    assert [a["attempt"] for a in listed] == list(range(20, 0, -1))
    for n in (1, 2):
        stored = svc.get_attempt("default", "web", n)
        assert stored is not None and stored["result"] == (first if n % 2 else second).result
    svc.stop()
