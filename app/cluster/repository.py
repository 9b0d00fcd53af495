"""All SQL of the virtual cluster: load everything on start, write one batch of changes per transaction."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from app.cluster.models import ClusterObject, ClusterState

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

    Runs of the same operation go out as one executemany (a group commit carries many changes).
    """
    run: list[dict[str, Any]] = []
    run_op = ""
    for change in changes:
        if change.op != run_op:
            _flush(conn, run_op, run)
            run, run_op = [], change.op
        row = change.row
        if change.op == "insert":
            run.append(
                {
                    "uid": row.uid,
                    "kind": row.kind,
                    "namespace": row.namespace,
                    "name": row.name,
                    "resource_version": row.resource_version,
                    "body": row.body,
                }
            )
        elif change.op == "update":
            run.append({"b_uid": row.uid, "resource_version": row.resource_version, "body": row.body})
        elif change.op == "delete":
            run.append({"b_uid": row.uid})
        else:  # pragma: no cover - programming error
            raise ValueError(f"unknown change {change.op!r}")
    _flush(conn, run_op, run)
    # The migration seeds the single state row, so this is always an update.
    conn.execute(update(ClusterState).where(ClusterState.id == _STATE_ID).values(resource_version=resource_version))


_UPDATE = (
    update(ClusterObject)
    .where(ClusterObject.uid == bindparam("b_uid"))
    .values(resource_version=bindparam("resource_version"), body=bindparam("body"))
)
_DELETE = delete(ClusterObject).where(ClusterObject.uid == bindparam("b_uid"))


def _flush(conn: Connection, op: str, params: list[dict[str, Any]]) -> None:
    if not params:
        return
    if op == "insert":
        conn.execute(insert(ClusterObject), params)
    elif op == "update":
        conn.execute(_UPDATE, params)
    else:
        conn.execute(_DELETE, params)
