"""``kss replay --record-db``: a replay written into a results database as a run, with every attempt it made.

:class:`RunRecorder` is an observer: the run's row is created (``running``) when the replay starts, each finished
attempt is handed to a results writer process tagged with the run's id (so the live cluster's pages never see it),
and :meth:`RunRecorder.finish` stores the summary, the samples and the per-pod rows once the metrics are computed.
Used as a context manager, a replay that raises (or ends without ``finish``) leaves its run ``failed`` with the
error, never ``running``. The Runs and Compare pages of ``kss serve`` read the same database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from kss_sim.db import make_engine, make_session_factory, session_scope, upgrade_database
from kss_sim.replay.model import NullObserver, ReplayState
from kss_sim.results.attempts import ResultsService
from kss_sim.results.runs import RunsService
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.record import Attempt


def database_url(target: str | Path) -> str:
    """``--record-db`` takes a file path or any SQLAlchemy URL."""
    text = str(target)
    return text if "://" in text else f"sqlite:///{text}"


class RunRecorder(NullObserver):
    """Records one replay as a run in the results database at ``target`` (a file or a SQLAlchemy URL), which is
    created and migrated to the newest schema if needed."""

    def __init__(
        self,
        target: str | Path,
        *,
        name: str,
        workload: str,
        seed: int = 0,
        config: Mapping[str, Any] | None = None,
        compare_group: str | None = None,
        kube_version: str | None = None,
    ) -> None:
        self.url = database_url(target)
        self.name = name
        self.workload = workload
        self.seed = seed
        self.config = dict(config or {})
        self.compare_group = compare_group
        self.run_id: int | None = None
        self.status: str | None = None  # running, done, failed (as stored)
        self._engine = make_engine(self.url, sqlite_synchronous="NORMAL")
        upgrade_database(self._engine)
        factory = make_session_factory(self._engine)
        self.runs = RunsService(lambda: session_scope(factory))
        # Encoding and inserting attempts happen in a child process, off the replay's core.
        self._writer = ResultsService(
            lambda: session_scope(factory), writer_url=self.url, sqlite_synchronous="NORMAL", kube_version=kube_version
        )
        self._writing = False

    @property
    def errors(self) -> list[str]:
        """Attempts the writer could not record, oldest first."""
        return self._writer.errors

    # --- the observer ----------------------------------------------------------------------------
    def start(self) -> int:
        """Create the run (``running``) unless it exists; its id."""
        if self.run_id is None:
            self.run_id = self.runs.create_run(
                name=self.name,
                workload=self.workload,
                seed=self.seed,
                config=self.config,
                compare_group=self.compare_group,
            )
            self.status = "running"
        return self.run_id

    def on_start(self, state: ReplayState) -> None:
        self.start()

    def on_attempt(self, state: ReplayState, attempt: Attempt, pod: PodInfo) -> None:
        run_id = self.start()
        if not self._writing:
            self._writer.start()
            self._writing = True
        record = state.pods.get(pod.uid)
        # Queued for: virtual seconds since the pod arrived (its wait so far).
        queued = max(0.0, state.now - record.arrival) if record is not None else 0.0
        self._writer.submit(
            attempt, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid, queued_seconds=queued, run_id=run_id
        )

    # --- the end -----------------------------------------------------------------------------------
    def _stop_writer(self) -> None:
        if self._writing:
            self._writer.stop()
            self._writing = False

    def finish(
        self,
        summary: Mapping[str, Any],
        timeseries_rows: Sequence[Mapping[str, Any]],
        pod_rows: Sequence[Mapping[str, Any]],
    ) -> None:
        """Store the run's results (``done``), once every attempt is written. Attempts the writer lost are named in
        the run's message (and in ``errors``)."""
        run_id = self.start()
        self._stop_writer()
        self.runs.finish_run(run_id, summary=summary, timeseries=timeseries_rows, pods=pod_rows)
        self.status = "done"
        if self.errors:
            self.runs.set_message(run_id, f"{len(self.errors)} attempt batch(es) not recorded: {self.errors[0]}")

    def fail(self, message: str) -> None:
        """The replay failed: the run says so, with ``message``."""
        run_id = self.start()
        try:
            self._stop_writer()
        finally:
            self.runs.fail_run(run_id, message)
            self.status = "failed"

    def close(self) -> None:
        """Release the database (after ``finish`` or ``fail``)."""
        self._stop_writer()
        self._engine.dispose()

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if exc is not None and self.status in (None, "running"):
                self.fail(f"{type(exc).__name__}: {exc}")
            elif self.status == "running":
                self.fail("the replay ended before its results were stored")
        finally:
            self.close()
