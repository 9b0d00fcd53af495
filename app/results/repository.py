"""Every query on recorded scheduling attempts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from app.results.models import SchedulingAttempt


class ResultsRepository:
    """Reads and writes ``scheduling_attempts`` within the caller's session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add_many(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.session.execute(insert(SchedulingAttempt), list(rows))

    def list_for_pod(self, namespace: str, pod_name: str) -> list[SchedulingAttempt]:
        stmt = (
            select(SchedulingAttempt)
            .where(SchedulingAttempt.namespace == namespace, SchedulingAttempt.pod_name == pod_name)
            .order_by(SchedulingAttempt.attempt.desc(), SchedulingAttempt.id.desc())
        )
        return list(self.session.scalars(stmt))

    def get(self, namespace: str, pod_name: str, attempt: int) -> SchedulingAttempt | None:
        stmt = (
            select(SchedulingAttempt)
            .where(
                SchedulingAttempt.namespace == namespace,
                SchedulingAttempt.pod_name == pod_name,
                SchedulingAttempt.attempt == attempt,
            )
            .order_by(SchedulingAttempt.id.desc())
            .limit(1)
        )
        return self.session.scalars(stmt).first()

    def attempt_counts(self) -> dict[tuple[str, str], int]:
        """Attempts recorded per (namespace, pod name)."""
        stmt = select(
            SchedulingAttempt.namespace, SchedulingAttempt.pod_name, func.max(SchedulingAttempt.attempt)
        ).group_by(SchedulingAttempt.namespace, SchedulingAttempt.pod_name)
        return {(ns, name): int(n) for ns, name, n in self.session.execute(stmt)}

    def max_attempt(self, namespace: str, pod_name: str) -> int:
        stmt = select(func.max(SchedulingAttempt.attempt)).where(
            SchedulingAttempt.namespace == namespace, SchedulingAttempt.pod_name == pod_name
        )
        return int(self.session.scalar(stmt) or 0)

    def trim(self, namespace: str, pod_name: str, keep: int) -> None:
        """Keep only the newest ``keep`` attempts of a pod."""
        newest = self.max_attempt(namespace, pod_name)
        self.session.execute(
            delete(SchedulingAttempt).where(
                SchedulingAttempt.namespace == namespace,
                SchedulingAttempt.pod_name == pod_name,
                SchedulingAttempt.attempt <= newest - keep,
            )
        )

    def delete_for_pod(self, namespace: str, pod_name: str) -> int:
        res = self.session.execute(
            delete(SchedulingAttempt).where(
                SchedulingAttempt.namespace == namespace, SchedulingAttempt.pod_name == pod_name
            )
        )
        return int(getattr(res, "rowcount", 0) or 0)

    def delete_all(self) -> None:
        self.session.execute(delete(SchedulingAttempt))

    def count(self) -> int:
        return int(self.session.scalar(select(func.count()).select_from(SchedulingAttempt)) or 0)
