"""Every query on recorded scheduling attempts.

Attempts belong to the live cluster (``run_id`` NULL) or to one replay run; every query keeps to one of them, so
the live cluster's pages and API never see a replay's attempts (its pods may share names with the cluster's).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, func, insert, select
from sqlalchemy.orm import Session

from kss_sim.db import SQLITE_MAX_VARIABLES, sqlite_chunks, sqlite_insert_statement
from kss_sim.results.models import SchedulingAttempt


def _of_run(run_id: int | None) -> ColumnElement[bool]:
    """Attempts of the live cluster (``None``) or of one replay run."""
    return SchedulingAttempt.run_id.is_(None) if run_id is None else SchedulingAttempt.run_id == run_id


_MAX_ATTEMPT_SQLITE = (
    f"SELECT max(attempt) FROM {SchedulingAttempt.__tablename__} "
    "WHERE namespace = ? AND pod_name = ? AND run_id IS NULL"
)


@functools.cache
def _newest_attempts_sqlite(count: int) -> str:
    """The live cluster's newest attempt of ``count`` pods of one namespace (sizes from ``sqlite_chunks``)."""
    return (
        f"SELECT pod_name, max(attempt) FROM {SchedulingAttempt.__tablename__} "
        f"WHERE namespace = ? AND pod_name IN ({','.join(['?'] * count)}) AND run_id IS NULL GROUP BY pod_name"
    )


class ResultsRepository:
    """Reads and writes ``scheduling_attempts`` within the caller's session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add_many(self, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        conn = self.session.connection()
        columns = tuple(rows[0])
        if conn.dialect.name != "sqlite" or any(tuple(row) != columns for row in rows):
            self.session.execute(insert(SchedulingAttempt), list(rows))
            return
        # Many-row statements rather than an executemany, inside the store's shared commit (see sqlite_chunks).
        for start, stop in sqlite_chunks(len(rows), SQLITE_MAX_VARIABLES // len(columns)):
            chunk = rows[start:stop]
            statement = sqlite_insert_statement(SchedulingAttempt.__tablename__, columns, len(chunk))
            conn.exec_driver_sql(statement, tuple(row[c] for row in chunk for c in columns))

    def list_for_pod(self, namespace: str, pod_name: str, *, run_id: int | None = None) -> list[SchedulingAttempt]:
        stmt = (
            select(SchedulingAttempt)
            .where(SchedulingAttempt.namespace == namespace, SchedulingAttempt.pod_name == pod_name, _of_run(run_id))
            .order_by(SchedulingAttempt.attempt.desc(), SchedulingAttempt.id.desc())
        )
        return list(self.session.scalars(stmt))

    def get(
        self, namespace: str, pod_name: str, attempt: int, *, run_id: int | None = None
    ) -> SchedulingAttempt | None:
        stmt = (
            select(SchedulingAttempt)
            .where(
                SchedulingAttempt.namespace == namespace,
                SchedulingAttempt.pod_name == pod_name,
                SchedulingAttempt.attempt == attempt,
                _of_run(run_id),
            )
            .order_by(SchedulingAttempt.id.desc())
            .limit(1)
        )
        return self.session.scalars(stmt).first()

    def attempt_counts(self, *, run_id: int | None = None) -> dict[tuple[str, str], int]:
        """Attempts recorded per (namespace, pod name)."""
        stmt = (
            select(SchedulingAttempt.namespace, SchedulingAttempt.pod_name, func.max(SchedulingAttempt.attempt))
            .where(_of_run(run_id))
            .group_by(SchedulingAttempt.namespace, SchedulingAttempt.pod_name)
        )
        return {(ns, name): int(n) for ns, name, n in self.session.execute(stmt)}

    def max_attempt(self, namespace: str, pod_name: str) -> int:
        """The live cluster's newest attempt number of a pod."""
        conn = self.session.connection()
        if conn.dialect.name == "sqlite":
            # A fixed statement text (pysqlite keeps it prepared): asked once per recorded attempt inside the store's
            # commit, the ORM select cost ~0.25 ms of Python each, a tenth of the server's CPU per pod.
            row = conn.exec_driver_sql(_MAX_ATTEMPT_SQLITE, (namespace, pod_name)).first()
            return int(row[0] or 0) if row is not None else 0
        stmt = select(func.max(SchedulingAttempt.attempt)).where(
            SchedulingAttempt.namespace == namespace, SchedulingAttempt.pod_name == pod_name, _of_run(None)
        )
        return int(self.session.scalar(stmt) or 0)

    def newest_attempts(self, pods: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``max_attempt`` of each (namespace, pod name), 0 for a pod without attempts."""
        newest = dict.fromkeys(pods, 0)
        conn = self.session.connection()
        if conn.dialect.name != "sqlite":
            for namespace, pod_name in newest:
                newest[(namespace, pod_name)] = self.max_attempt(namespace, pod_name)
            return newest
        # A statement per namespace and run of names, not per pod: a pod's was ~a tenth of the store's committer
        # when each created pod's attempt was inserted in a commit of its own.
        by_namespace: dict[str, list[str]] = {}
        for namespace, pod_name in newest:
            by_namespace.setdefault(namespace, []).append(pod_name)
        for namespace, names in by_namespace.items():
            for start, stop in sqlite_chunks(len(names), SQLITE_MAX_VARIABLES - 1):
                run = names[start:stop]
                for pod_name, attempt in conn.exec_driver_sql(_newest_attempts_sqlite(len(run)), (namespace, *run)):
                    newest[(namespace, pod_name)] = int(attempt or 0)
        return newest

    def trim(self, namespace: str, pod_name: str, after: int, through: int) -> None:
        """Drop a live pod's attempts numbered ``after`` + 1 to ``through`` (a run keeps all of its own)."""
        if through <= after:
            return
        self.session.execute(
            delete(SchedulingAttempt).where(
                SchedulingAttempt.namespace == namespace,
                SchedulingAttempt.pod_name == pod_name,
                SchedulingAttempt.attempt > after,
                SchedulingAttempt.attempt <= through,
                _of_run(None),
            )
        )

    def delete_for_pod(self, namespace: str, pod_name: str) -> int:
        """Forget a live pod's attempts."""
        res = self.session.execute(
            delete(SchedulingAttempt).where(
                SchedulingAttempt.namespace == namespace, SchedulingAttempt.pod_name == pod_name, _of_run(None)
            )
        )
        return int(getattr(res, "rowcount", 0) or 0)

    def delete_all(self) -> None:
        """Forget every attempt of the live cluster (replay runs keep theirs)."""
        self.session.execute(delete(SchedulingAttempt).where(_of_run(None)))

    def delete_run(self, run_id: int) -> None:
        """Forget every attempt of one replay run."""
        self.session.execute(delete(SchedulingAttempt).where(_of_run(run_id)))

    def shadow_judged(self, *, differing_only: bool, limit: int) -> list[SchedulingAttempt]:
        """The live cluster's attempts of other schedulers that the shadow judged, newest first."""
        judged = (
            SchedulingAttempt.shadow_agrees.is_(False)
            if differing_only
            else SchedulingAttempt.shadow_agrees.is_not(None)
        )
        stmt = (
            select(SchedulingAttempt)
            .where(judged, _of_run(None))
            .order_by(SchedulingAttempt.started_at.desc(), SchedulingAttempt.id.desc())
            .limit(limit)
        )
        return list(self.session.scalars(stmt))

    def shadow_counts(self) -> dict[str, int]:
        """Judged bindings of the live cluster: how many agreed with kss's choice and how many differed."""
        stmt = (
            select(SchedulingAttempt.shadow_agrees, func.count())
            .where(SchedulingAttempt.shadow_agrees.is_not(None), _of_run(None))
            .group_by(SchedulingAttempt.shadow_agrees)
        )
        counts = {"agree": 0, "differ": 0}
        for agrees, n in self.session.execute(stmt):
            counts["agree" if agrees else "differ"] = int(n)
        return counts

    def count(self, *, run_id: int | None = None) -> int:
        stmt = select(func.count()).select_from(SchedulingAttempt).where(_of_run(run_id))
        return int(self.session.scalar(stmt) or 0)
