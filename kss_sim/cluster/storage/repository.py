"""All SQL of the virtual cluster: load everything on start, write one batch of changes per transaction."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from kss_sim.cluster.storage.models import ClusterObject, ClusterState
from kss_sim.db import SQLITE_MAX_VARIABLES, sqlite_chunks, sqlite_insert_statement

_STATE_ID = 1


@dataclass(frozen=True, slots=True)
class Row:
    """One object as stored: identity, version and JSON text."""

    uid: str
    kind: str
    namespace: str
    name: str
    resource_version: int
    body: str


@dataclass(frozen=True, slots=True)
class Change:
    """A write to persist: ``op`` is "insert", "update" or "delete"."""

    op: str
    row: Row


def load_rows(conn: Connection) -> Iterator[Row]:
    """Every stored object, oldest resourceVersion first."""
    stmt = select(
        ClusterObject.uid,
        ClusterObject.kind,
        ClusterObject.namespace,
        ClusterObject.name,
        ClusterObject.resource_version,
        ClusterObject.body,
    ).order_by(ClusterObject.resource_version)
    for r in conn.execute(stmt):
        yield Row(r.uid, r.kind, r.namespace, r.name, r.resource_version, r.body)


def load_resource_version(conn: Connection) -> int:
    """The last resourceVersion handed out (0 on an empty database)."""
    rv = conn.execute(select(ClusterState.resource_version).where(ClusterState.id == _STATE_ID)).scalar()
    return int(rv or 0)


def write_changes(conn: Connection, changes: Iterable[Change], resource_version: int) -> None:
    """Apply ``changes`` in order and record ``resource_version`` as the cluster's latest; the caller commits.

    A group commit carries many changes, often several of one object (created, bound, then started). Each object's
    changes are folded into the one that leaves its final row, so the batch is at most three executemany: deletes
    first (a name deleted and created again in the batch is free for the new uid), then inserts, then updates.
    """
    net = _net_changes(changes)
    if net is None:  # a uid deleted then inserted again: replay in order
        _write_in_order(conn, changes)
    else:
        by_op: dict[str, list[Row]] = {"delete": [], "insert": [], "update": []}
        for change in net.values():
            by_op[change.op].append(change.row)
        for op, rows in by_op.items():
            _flush(conn, op, rows)
    conn.execute(_SET_STATE, {"state_rv": resource_version})


def _net_changes(changes: Iterable[Change]) -> dict[str, Change] | None:
    """Each uid's changes folded into one (its final row): insert + updates is an insert, updates an update, insert
    + delete nothing; None when a uid comes back after its deletion (the store never reuses uids, imports may)."""
    net: dict[str, Change] = {}
    gone: set[str] = set()
    for change in changes:
        uid = change.row.uid
        earlier = net.get(uid)
        if change.op not in ("insert", "update", "delete"):  # pragma: no cover - programming error
            raise ValueError(f"unknown change {change.op!r}")
        if uid in gone or (earlier is not None and change.op == "insert"):
            return None
        if earlier is None:
            net[uid] = change
        elif change.op == "delete":
            if earlier.op == "insert":
                del net[uid]
                gone.add(uid)
            else:
                net[uid] = change
        else:
            net[uid] = Change(earlier.op, change.row)
    return net


def _write_in_order(conn: Connection, changes: Iterable[Change]) -> None:
    """Runs of the same operation, in order, each written as ``_flush`` writes a run."""
    run: list[Row] = []
    run_op = ""
    for change in changes:
        if change.op != run_op:
            _flush(conn, run_op, run)
            run, run_op = [], change.op
        run.append(change.row)
    _flush(conn, run_op, run)


def _params(op: str, row: Row) -> dict[str, Any]:
    if op == "insert":
        return {
            "uid": row.uid,
            "kind": row.kind,
            "namespace": row.namespace,
            "name": row.name,
            "resource_version": row.resource_version,
            "body": row.body,
        }
    if op == "update":
        return {"b_uid": row.uid, "resource_version": row.resource_version, "body": row.body}
    return {"b_uid": row.uid}


# Statements built once: building one per commit (and its cache key) was most of the committer's Python time.
# The migration seeds the single state row, so setting the version is always an update.
_SET_STATE = update(ClusterState).where(ClusterState.id == _STATE_ID).values(resource_version=bindparam("state_rv"))
_INSERT = insert(ClusterObject)
_UPDATE = (
    update(ClusterObject)
    .where(ClusterObject.uid == bindparam("b_uid"))
    .values(resource_version=bindparam("resource_version"), body=bindparam("body"))
)
_DELETE = delete(ClusterObject).where(ClusterObject.uid == bindparam("b_uid"))


def _flush(conn: Connection, op: str, rows: list[Row]) -> None:
    if not rows:
        return
    if conn.dialect.name == "sqlite":
        if op == "update":  # a run replayed in order may update one uid twice: its last row is the one to keep
            rows = list({row.uid: row for row in rows}.values())
        for start, stop in sqlite_chunks(len(rows), _SQLITE_ROWS_PER_STATEMENT):
            chunk = rows[start:stop]
            conn.exec_driver_sql(_sqlite_statement(op, len(chunk)), _sqlite_parameters(op, chunk))
        return
    params = [_params(op, row) for row in rows]
    if op == "insert":
        conn.execute(_INSERT, params)
    elif op == "update":
        conn.execute(_UPDATE, params)
    else:
        conn.execute(_DELETE, params)


# On SQLite a run of rows is a few many-row statements (power-of-two chunks), not an executemany: pysqlite lets go of
# the GIL around every row's step and must win it back after each, which under a busy scheduler thread takes up to the
# switch interval (5 ms). A commit of a dozen rows then took 50-350 ms at 50,000 pods, and every API write waiting for
# it as long (issue #20, the bursts' p99).
_SQLITE_ROWS_PER_STATEMENT = min(512, SQLITE_MAX_VARIABLES // 6)
_TABLE = ClusterObject.__tablename__
_INSERT_COLUMNS = ("uid", "kind", "namespace", "name", "resource_version", "body")


@functools.cache
def _sqlite_statement(op: str, count: int) -> str:
    if op == "insert":
        return sqlite_insert_statement(_TABLE, _INSERT_COLUMNS, count)
    if op == "update":
        values = ",".join(["(?,?,?)"] * count)
        # VALUES' columns are column1..3 in SQLite (no column aliases there).
        return (
            f"UPDATE {_TABLE} SET resource_version = v.column2, body = v.column3 "
            f"FROM (VALUES {values}) AS v WHERE {_TABLE}.uid = v.column1"
        )
    return f"DELETE FROM {_TABLE} WHERE uid IN ({','.join(['?'] * count)})"


def _sqlite_parameters(op: str, rows: list[Row]) -> tuple[Any, ...]:
    if op == "insert":
        return tuple(v for r in rows for v in (r.uid, r.kind, r.namespace, r.name, r.resource_version, r.body))
    if op == "update":
        return tuple(v for r in rows for v in (r.uid, r.resource_version, r.body))
    return tuple(r.uid for r in rows)
