"""One replay as the what-if commands run it: the engine with the metrics, and what they keep of it.

``kss compare`` and ``kss sweep`` (on each Dask worker) replay a workload through :func:`replay_once` and keep its
summary (``summary.json``'s document), its samples (``timeseries.csv``'s rows) and its pods (``pods.csv``'s rows),
plain data that travels between processes and into the results database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.replay.engine import Replay
from app.replay.metrics import Metrics, summarize
from app.replay.model import Observer, PodRecord, ReplayResult
from app.replay.workload import TimedWorkload

Obj = dict[str, Any]

POD_COLUMNS = (
    "pod", "uid", "owner", "priority", "arrival", "firstAttempt", "bound", "wait", "node", "attempts",
    "preemptions", "finished", "outcome", "lastMessage",
)  # fmt: skip


@dataclass
class ReplayOutcome:
    """A finished replay: its result and metrics (in this process only) and the plain data kept of it."""

    result: ReplayResult
    metrics: Metrics
    summary: Obj
    timeseries: list[Obj]
    pods: list[Obj]


def _time(value: float | None) -> float | str:
    if value is None:
        return ""
    return int(value) if value == int(value) else round(value, 6)


def pod_row(rec: PodRecord) -> Obj:
    """A pod's row of ``pods.csv`` (empty strings where it has no value: never bound, not finished)."""
    wait = rec.wait
    return {
        "pod": rec.key,
        "uid": rec.uid,
        "owner": rec.owner,
        "priority": rec.priority,
        "arrival": _time(rec.arrival),
        "firstAttempt": _time(rec.first_attempt),
        "bound": _time(rec.bound_at),
        "wait": _time(wait),
        "node": rec.node or "",
        "attempts": rec.attempts,
        "preemptions": rec.preemptions,
        "finished": _time(rec.finished_at),
        "outcome": rec.outcome,
        "lastMessage": rec.last_message,
    }


def replay_once(
    workload: TimedWorkload,
    *,
    config: Obj | None,
    feature_gates: dict[str, bool] | None = None,
    seed: int = 0,
    interval: float = 3600.0,
    until: float | None = None,
    name: str = "",
    observers: Sequence[Observer] = (),
    record: bool = False,
) -> ReplayOutcome:
    """Replay ``workload`` under ``config`` (None: the workload's own, else the defaults) with the metrics sampling
    every ``interval``; ``observers`` see the run too (a RunRecorder with ``record``)."""
    metrics = Metrics(interval, workload=workload)
    result = Replay(
        workload, scheduler_config=config, feature_gates=feature_gates, seed=seed, until=until,
        sample_interval=interval, observers=[metrics, *observers], record=record,
    ).run()  # fmt: skip
    summary = summarize(result, metrics)
    if name:
        summary["name"] = name
    return ReplayOutcome(result, metrics, summary, metrics.table(), [pod_row(p) for p in result.pods])
