"""Replay runs in the results database: the ``replay_runs`` rows and the reads the Runs and Compare pages make.

A run is written by ``kss replay --record-db`` (``kss_sim.replay.recording.RunRecorder``): created ``running`` when the
replay starts, its attempts recorded with its id as they happen, then ``done`` with the summary, the samples and
the per-pod rows (compressed JSON), or ``failed`` with the error. Reads return plain dicts, as
``ResultsService`` does, so the web room reads them through its ports without SQLAlchemy.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import zstandard
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from kss_sim.results.attempts import ResultsService
from kss_sim.results.models import ReplayRun
from kss_sim.results.repository import ResultsRepository
from kss_sim.results.rows import SessionFactory
from kss_sim.web.ports import AttemptDetail, AttemptQuery, AttemptSummary

RUNNING, DONE, FAILED = "running", "done", "failed"
_ZSTD_LEVEL = 6  # written once, read on every run page: small beats fast

# The columns a list of runs reads (not the compressed samples and pods).
_LISTED = (
    ReplayRun.id,
    ReplayRun.name,
    ReplayRun.workload,
    ReplayRun.created_at,
    ReplayRun.seed,
    ReplayRun.status,
    ReplayRun.message,
    ReplayRun.summary,
    ReplayRun.compare_group,
)


def pack(value: Any) -> bytes:
    """``value`` as zstd-compressed JSON."""
    return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))


def unpack(blob: bytes | None) -> Any:
    """What ``pack`` stored (None for nothing)."""
    if blob is None:
        return None
    return orjson.loads(zstandard.ZstdDecompressor().decompress(blob))


class RunsRepository:
    """Every query on ``replay_runs``, within the caller's session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, run: ReplayRun) -> int:
        self.session.add(run)
        self.session.flush()
        return run.id

    def set(self, run_id: int, **values: Any) -> bool:
        res = self.session.execute(update(ReplayRun).where(ReplayRun.id == run_id).values(**values))
        return bool(getattr(res, "rowcount", 0))

    def listed(self, *, group: str | None = None, ids: Sequence[int] | None = None) -> list[Any]:
        """Runs newest first (the listed columns), all or those of one compare group or with these ids."""
        stmt = select(*_LISTED).order_by(ReplayRun.id.desc())
        if group is not None:
            stmt = stmt.where(ReplayRun.compare_group == group)
        if ids is not None:
            stmt = stmt.where(ReplayRun.id.in_(list(ids)))
        return list(self.session.execute(stmt))

    def get(self, run_id: int) -> ReplayRun | None:
        return self.session.get(ReplayRun, run_id)

    def delete(self, run_id: int) -> bool:
        res = self.session.execute(delete(ReplayRun).where(ReplayRun.id == run_id))
        return bool(getattr(res, "rowcount", 0))


def _listed(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "workload": row.workload,
        "createdAt": row.created_at,
        "seed": row.seed,
        "status": row.status,
        "message": row.message,
        "compareGroup": row.compare_group,
        "summary": orjson.loads(row.summary) if row.summary else None,
    }


class RunsService:
    """Creates, finishes and reads replay runs; their attempts are read with ``ResultsService``'s queries."""

    def __init__(self, session_scope: SessionFactory) -> None:
        self._session_scope = session_scope
        self._attempts = ResultsService(session_scope)  # reads only: its writer is never started

    # --- writing --------------------------------------------------------------------------------
    def create_run(
        self,
        *,
        name: str,
        workload: str,
        seed: int,
        config: Mapping[str, Any] | None,
        compare_group: str | None = None,
    ) -> int:
        """A new run, ``running``; its id."""
        run = ReplayRun(
            name=name,
            workload=workload,
            created_at=time.time(),
            seed=seed,
            config=orjson.dumps(config or {}).decode(),
            status=RUNNING,
            message="",
            compare_group=compare_group,
        )
        with self._session_scope() as session:
            return RunsRepository(session).add(run)

    def finish_run(
        self,
        run_id: int,
        *,
        summary: Mapping[str, Any],
        timeseries: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
    ) -> None:
        """The run is ``done``: its summary (summary.json), samples (timeseries.csv's rows), pods (pods.csv's)."""
        values = {
            "status": DONE,
            "summary": orjson.dumps(summary, option=orjson.OPT_NON_STR_KEYS).decode(),
            "timeseries": pack(list(timeseries)),
            "pods": pack(list(pods)),
        }
        with self._session_scope() as session:
            if not RunsRepository(session).set(run_id, **values):
                raise KeyError(f"no replay run {run_id}")

    def fail_run(self, run_id: int, message: str) -> None:
        """The run is ``failed``, with why."""
        with self._session_scope() as session:
            RunsRepository(session).set(run_id, status=FAILED, message=message)

    def set_message(self, run_id: int, message: str) -> None:
        """A note on the run (a done run whose writer lost attempts says so)."""
        with self._session_scope() as session:
            RunsRepository(session).set(run_id, message=message)

    def delete_run(self, run_id: int) -> bool:
        """Forget a run and its attempts."""
        with self._session_scope() as session:
            ResultsRepository(session).delete_run(run_id)
            return RunsRepository(session).delete(run_id)

    # --- reading --------------------------------------------------------------------------------
    def list_runs(self, *, ids: Sequence[int] | None = None) -> list[dict[str, Any]]:
        """Every run (or those with ``ids``), newest first: name, workload, when, seed, status, summary."""
        with self._session_scope() as session:
            return [_listed(r) for r in RunsRepository(session).listed(ids=ids)]

    def compare_group(self, group: str) -> list[dict[str, Any]]:
        """The runs of one compare group (``kss compare --record-db``), oldest first."""
        with self._session_scope() as session:
            return [_listed(r) for r in reversed(RunsRepository(session).listed(group=group))]

    def get_run(self, run_id: int) -> dict[str, Any] | None:
        """One run in full: what ``list_runs`` gives, the configuration, the samples and the pods (empty until
        it is done)."""
        with self._session_scope() as session:
            run = RunsRepository(session).get(run_id)
            if run is None:
                return None
            out = _listed(run)
            out["config"] = orjson.loads(run.config)
            out["timeseries"] = unpack(run.timeseries) or []
            out["pods"] = unpack(run.pods) or []
            return out

    def attempt_counts(self, run_id: int) -> dict[tuple[str, str], int]:
        """Attempts recorded per (namespace, pod name) in the run."""
        return self._attempts.attempt_counts(run_id=run_id)

    def list_attempts(self, run_id: int, namespace: str, pod_name: str) -> list[AttemptSummary]:
        """A pod's attempts in the run, newest first (as ``ResultsService.list_attempts``)."""
        return self._attempts.list_attempts(namespace, pod_name, run_id=run_id)

    def get_attempt(
        self,
        run_id: int,
        namespace: str,
        pod_name: str,
        attempt: int,
        query: AttemptQuery = AttemptQuery(),
    ) -> AttemptDetail | None:
        """One attempt of the run in full (as ``ResultsService.get_attempt``)."""
        return self._attempts.get_attempt(namespace, pod_name, attempt, query, run_id=run_id)
