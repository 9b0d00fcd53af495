"""The store's cheaper write paths give what the generic ones give: an Event recorded by ``create_event`` (built by
the server, not decoded) is stored in the same bytes, with the same watch event and managedFields, as the same
Event through ``create``."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection, Engine
from sqlalchemy import event as sql_event

from kss_sim.cluster.admission import uids
from kss_sim.cluster.errors import Conflict, Invalid
from kss_sim.cluster.storage import repository
from kss_sim.cluster.storage.pod_writes import SCHEDULER_MANAGER
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.cluster.storage.versions import DEFAULT_MANAGER
from kss_sim.controllers.pod_status import finished_status, restarted_status, running_status
from kss_sim.db import sqlite_chunks
from tests.scheduler.factories import make_pod

_SERVER_FIELDS = ("uid", "creationTimestamp", "resourceVersion", "managedFields")


def _fixed_clock() -> datetime:
    return datetime(2026, 11, 25, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def sequential_uids(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Makes new objects' uids 1, 2, 3, ...; calling the returned function starts again at 1."""
    counter: list[Iterator[int]] = [itertools.count(1)]
    monkeypatch.setattr(uids, "new_uid", lambda: str(uuid.UUID(int=next(counter[0]))))

    def restart() -> None:
        counter[0] = itertools.count(1)

    return restart


def _store_with_pods() -> ClusterStore:
    store = ClusterStore(None, clock=_fixed_clock)
    for name in ("p0", "p1"):
        store.create("Pod", make_pod(name=name, labels={"app": "a"}, requests={"cpu": "1"}), "default")
    store.create("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    return store


def _as_sent(event: dict[str, Any]) -> dict[str, Any]:
    """The Event as a client would send it to ``create``: without what the server sets."""
    meta = {k: v for k, v in event["metadata"].items() if k not in _SERVER_FIELDS}
    return {**event, "metadata": meta}


@pytest.mark.parametrize(
    ("involved_name", "kind", "reason", "options", "manager"),
    [
        ("p0", "Pod", "Scheduled", {"action": "Binding"}, SCHEDULER_MANAGER),
        ("p1", "Pod", "FailedCreatePodSandBox", {"type": "Warning", "component": "kubelet"}, "kubelet"),
        ("n1", "Node", "Note", {"component": "node-controller"}, "node-controller"),
    ],
)
def test_a_recorded_event_is_stored_as_the_generic_create_stores_it(
    sequential_uids: Callable[[], None],
    involved_name: str,
    kind: str,
    reason: str,
    options: dict[str, str],
    manager: str,
) -> None:
    fast = _store_with_pods()
    involved = fast.get(kind, "default" if kind == "Pod" else None, involved_name)
    assert involved is not None
    start = fast.resource_version
    for _ in range(2):  # the second is built from the cached managedFields of its shape
        recorded = fast.create_event(involved, reason, f"message about {involved_name}", **options)
        involved = {**involved, "metadata": {**involved["metadata"], "name": involved_name + "x"}}
    recorded_events = fast.events_since(start)

    sequential_uids()
    generic = _store_with_pods()
    assert generic.resource_version == start
    for event in recorded_events:
        generic.create("Event", _as_sent(event.object), "default", manager=manager)
    generic_events = generic.events_since(start)

    assert [(e.type, e.kind, e.resource_version, e.raw) for e in recorded_events] == [
        (e.type, e.kind, e.resource_version, e.raw) for e in generic_events
    ]
    assert fast.read("Event", "default", recorded["metadata"]["name"]).raw == recorded_events[-1].raw
    assert recorded["metadata"]["managedFields"][0]["manager"] == manager
    fields = recorded["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields["f:involvedObject"] == {} and fields["f:source"] == {"f:component": {}}  # an atomic reference


def test_an_event_for_a_pod_whose_name_is_too_long_for_it_is_refused_and_changes_nothing() -> None:
    store = ClusterStore(None)
    involved = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p" * 250, "namespace": "default"}}
    start = store.resource_version
    with pytest.raises(Invalid):
        store.create_event(involved, "Scheduled", "m")
    assert store.resource_version == start
    assert store.list("Event")[0] == []


def test_an_event_in_a_namespace_that_is_gone_creates_it_as_create_does() -> None:
    store = ClusterStore(None)
    involved = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "elsewhere", "uid": "u"}}
    event = store.create_event(involved, "Scheduled", "m")
    assert event["metadata"]["namespace"] == "elsewhere"
    assert store.get("Namespace", None, "elsewhere") is not None


def _row(uid: str, name: str, rv: int, body: str = "{}") -> repository.Row:
    return repository.Row(uid=uid, kind="Pod", namespace="default", name=name, resource_version=rv, body=body)


# One group commit's changes: pods created then bound and started, a pod replaced by one of the same name,
# a pod created and deleted within the batch, a stored pod updated then deleted.
_BATCH = [
    repository.Change("insert", _row("a", "pa", 11, '{"v":1}')),
    repository.Change("insert", _row("b", "pb", 12, '{"v":1}')),
    repository.Change("update", _row("a", "pa", 13, '{"v":2}')),
    repository.Change("update", _row("old", "stay", 14, '{"v":2}')),
    repository.Change("delete", _row("replaced", "same", 15)),
    repository.Change("insert", _row("new", "same", 16, '{"v":1}')),
    repository.Change("update", _row("b", "pb", 17, '{"v":2}')),
    repository.Change("insert", _row("brief", "brief", 18)),
    repository.Change("delete", _row("brief", "brief", 19)),
    repository.Change("update", _row("doomed", "doomed", 20, '{"v":2}')),
    repository.Change("delete", _row("doomed", "doomed", 21)),
    repository.Change("update", _row("a", "pa", 22, '{"v":3}')),
]


def _rows_after(engine: Engine, write: Callable[[Connection], None]) -> tuple[list[repository.Row], int, int]:
    """The stored rows, the resourceVersion and the number of SQL statements ``write`` sent (rolled back after)."""
    statements = [0]

    def count(*_args: Any) -> None:
        statements[0] += 1

    with engine.connect() as conn:
        transaction = conn.begin()
        stored = [("old", "stay"), ("replaced", "same"), ("doomed", "doomed")]
        seed = [repository.Change("insert", _row(uid, name, i)) for i, (uid, name) in enumerate(stored, 1)]
        repository.write_changes(conn, seed, 10)
        sql_event.listen(conn, "before_cursor_execute", count)
        write(conn)
        sql_event.remove(conn, "before_cursor_execute", count)
        rows = sorted(repository.load_rows(conn), key=lambda r: r.uid)
        rv = repository.load_resource_version(conn)
        transaction.rollback()
    return rows, rv, statements[0]


def test_a_batch_of_changes_is_written_a_few_statements_per_operation_with_the_same_result(engine: Engine) -> None:
    def in_order(conn: Connection) -> None:
        repository._write_in_order(conn, _BATCH)
        repository.write_changes(conn, [], 22)

    ordered, ordered_rv, ordered_statements = _rows_after(engine, in_order)
    grouped, grouped_rv, statements = _rows_after(engine, lambda conn: repository.write_changes(conn, _BATCH, 22))
    assert grouped == ordered and grouped_rv == ordered_rv == 22
    assert [(r.uid, r.resource_version, r.body) for r in grouped] == [
        ("a", 22, '{"v":3}'),
        ("b", 17, '{"v":2}'),
        ("new", 16, '{"v":1}'),
        ("old", 14, '{"v":2}'),
    ]
    assert ordered_statements == 10 + 1  # one per run of one operation, and the resourceVersion
    # Deletes (2 rows: one statement), inserts (3 rows: 2 + 1), updates (1), and the resourceVersion.
    assert statements == 1 + 2 + 1 + 1


def test_a_uid_that_comes_back_after_its_deletion_is_written_in_order(engine: Engine) -> None:
    batch = [
        repository.Change("delete", _row("old", "stay", 11)),
        repository.Change("insert", _row("old", "stay", 12, '{"back":true}')),
    ]
    rows, _, _ = _rows_after(engine, lambda conn: repository.write_changes(conn, batch, 12))
    assert [(r.uid, r.body) for r in rows if r.uid == "old"] == [("old", '{"back":true}')]


def test_on_sqlite_a_run_of_rows_is_one_statement_not_an_executemany(engine: Engine) -> None:
    """pysqlite lets go of the GIL around each row of an executemany and waits to win it back (up to 5 ms under a busy
    scheduler): a run of rows is a few statements of power-of-two sizes instead, and stores the same rows."""
    many = 1_200
    batch = [repository.Change("insert", _row(f"u{i:04d}", f"p{i:04d}", 100 + i, f'{{"i":{i}}}')) for i in range(many)]
    batch += [
        repository.Change("update", _row(f"u{i:04d}", f"p{i:04d}", 2_000 + i, '{"v":2}')) for i in range(0, many, 2)
    ]
    batch += [repository.Change("update", _row("old", "stay", 3_000, '{"v":2}'))]
    batch += [
        repository.Change("delete", _row(uid, name, 3_001))
        for uid, name in (("replaced", "same"), ("doomed", "doomed"))
    ]
    sent: list[bool] = []

    def note(_conn: Any, _cursor: Any, _statement: str, _params: Any, _context: Any, executemany: bool) -> None:
        sent.append(executemany)

    def write(conn: Connection) -> None:
        sql_event.listen(conn, "before_cursor_execute", note)
        repository.write_changes(conn, batch, 3_001)

    rows, rv, statements = _rows_after(engine, write)
    assert not any(sent), "no executemany"
    # The two deletes (one statement); the 1,200 inserts, their updates folded in, in 512 + 512 + 128 + 32 + 16;
    # the one update; the resourceVersion.
    assert statements == 1 + 5 + 1 + 1
    by_uid = {r.uid: r for r in rows}
    assert len(rows) == many + 1 and rv == 3_001
    assert by_uid["u0000"].body == '{"v":2}' and by_uid["u0000"].resource_version == 2_000
    assert by_uid["u0001"].body == '{"i":1}' and by_uid["u0001"].resource_version == 101
    assert by_uid["old"].resource_version == 3_000 and "doomed" not in by_uid and "replaced" not in by_uid


def test_a_uid_updated_twice_in_a_run_replayed_in_order_keeps_its_last_row(engine: Engine) -> None:
    batch = [
        repository.Change("delete", _row("old", "stay", 11)),
        repository.Change("insert", _row("old", "stay", 12, '{"back":1}')),
        repository.Change("update", _row("doomed", "doomed", 13, '{"v":2}')),
        repository.Change("update", _row("doomed", "doomed", 14, '{"v":3}')),
    ]
    rows, _, _ = _rows_after(engine, lambda conn: repository.write_changes(conn, batch, 14))
    assert [(r.uid, r.resource_version, r.body) for r in rows if r.uid in ("old", "doomed")] == [
        ("doomed", 14, '{"v":3}'),
        ("old", 12, '{"back":1}'),
    ]


def _status_writes(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The kubelet's status writes over a pod's life, and a patch that removes a key (null) and adds one."""
    now = "2026-11-25T09:00:00Z"
    running = running_status(pod, now=now, host_ips=["10.0.0.1"], pod_ips=["10.1.0.7"])
    started = {**pod, "status": running}
    restarted = restarted_status(started, code=1, now="2026-11-25T09:01:00Z")
    finished = finished_status({**started, "status": restarted}, phase="Succeeded", code=0, now=now)
    return [running, running, restarted, {"nominatedNodeName": None, "message": "done"}, finished]


@pytest.mark.parametrize("manager", [DEFAULT_MANAGER, "kubelet"])
def test_the_kubelets_status_write_is_stored_as_the_generic_merge_patch_stores_it(
    sequential_uids: Callable[[], None], manager: str
) -> None:
    def run(write: Callable[[ClusterStore, dict[str, Any], dict[str, Any]], None]) -> list[tuple[str, int, bytes]]:
        store = _store_with_pods()
        store.patch("Pod", "default", "p0", {"status": {"nominatedNodeName": "n1"}}, "merge", subresource="status")
        store.bind_pod("default", "p0", "n1", annotations={"result": "x" * 300})
        start = store.resource_version
        for status in _status_writes(store.read("Pod", "default", "p0").obj):
            write(store, store.read("Pod", "default", "p0").obj, status)
        return [(e.type, e.resource_version, e.raw) for e in store.events_since(start)]

    def generic(store: ClusterStore, pod: dict[str, Any], status: dict[str, Any]) -> None:
        body = {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]}, "status": status}
        store.patch("Pod", "default", "p0", body, "merge", subresource="status", manager=manager)

    def merged(store: ClusterStore, pod: dict[str, Any], status: dict[str, Any]) -> None:
        version = pod["metadata"]["resourceVersion"]
        stored = store.merge_pod_status("default", "p0", status, resource_version=version, manager=manager)
        assert stored is store.read("Pod", "default", "p0").obj

    expected = run(generic)
    sequential_uids()
    assert run(merged) == expected
    assert len(expected) == 4  # the repeated Running status changed nothing, so wrote nothing


def test_a_status_write_from_a_stale_version_is_refused(store: ClusterStore) -> None:
    store.create("Pod", make_pod(name="p", requests={"cpu": "1"}), "default")
    bound = store.bind_pod("default", "p", "n1")
    store.merge_pod_status("default", "p", {"phase": "Running"}, resource_version=None, manager="kubelet")
    with pytest.raises(Conflict):
        store.merge_pod_status(
            "default",
            "p",
            {"phase": "Failed"},
            resource_version=bound["metadata"]["resourceVersion"],
            manager="kubelet",
        )
    stored = store.get("Pod", "default", "p")
    assert stored is not None and stored["status"]["phase"] == "Running"
    assert ClusterStore.open(store._engine).get("Pod", "default", "p") == stored  # written through


def test_an_annotation_key_checked_once_is_refused_again_on_the_next_binding() -> None:
    store = ClusterStore(None)
    for name in ("p", "q"):
        store.create("Pod", make_pod(name=name, requests={"cpu": "1"}), "default")
    for name in ("p", "q"):
        with pytest.raises(Invalid) as refused:
            store.bind_pod("default", name, "n1", annotations={"good.example/key": "1", "bad key!": "2"})
        assert [c.field for c in refused.value.causes] == ["metadata.annotations"]
        assert not (store.get("Pod", "default", name) or {})["spec"].get("nodeName")


@pytest.mark.parametrize("count", [0, 1, 2, 3, 14, 511, 512, 513, 1_200, 5_000])
def test_runs_of_rows_are_cut_in_powers_of_two_that_cover_them_once(count: int) -> None:
    chunks = list(sqlite_chunks(count, 512))
    sizes = [stop - start for start, stop in chunks]
    assert [start for start, _ in chunks] == [sum(sizes[:i]) for i in range(len(sizes))]
    assert sum(sizes) == count and all(size & (size - 1) == 0 and size <= 512 for size in sizes)
    assert len(chunks) <= count // 512 + bin(count % 512).count("1"), "the fewest such statements"


@pytest.mark.parametrize(("gate", "left"), [(None, None), (True, None), (False, "n2")])
def test_a_binding_clears_the_nomination_as_v1_35_kube_apiserver_does(gate: bool | None, left: str | None) -> None:
    # ClearingNominatedNodeNameAfterBinding: beta and on by default in v1.35 (the binding storage sets it to "").
    store = ClusterStore(None, feature_gates={} if gate is None else {"ClearingNominatedNodeNameAfterBinding": gate})
    store.create("Pod", make_pod(name="p", requests={"cpu": "1"}), "default")
    store.patch("Pod", "default", "p", {"status": {"nominatedNodeName": "n2"}}, "merge", subresource="status")
    bound = store.bind_pod("default", "p", "n1")
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["status"].get("nominatedNodeName") == left
    stored = store.get("Pod", "default", "p")
    assert stored is not None and stored["status"].get("nominatedNodeName") == left
