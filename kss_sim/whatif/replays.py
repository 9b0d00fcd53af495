"""One replay as the what-if commands run it: the engine with the metrics, and what they keep of it.

``kss compare`` and ``kss sweep`` (on each Dask worker) replay a workload through :func:`replay_once` and keep its
summary (``summary.json``'s document), its samples (``timeseries.csv``'s rows) and its pods (``pods.csv``'s rows),
plain data that travels between processes and into the results database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import KubeVersion
from kss_sim.replay.engine import Replay
from kss_sim.replay.metrics import Metrics, summarize
from kss_sim.replay.model import Observer, ReplayResult
from kss_sim.replay.outputs import pod_row
from kss_sim.replay.workload import TimedWorkload


@dataclass
class ReplayOutcome:
    """A finished replay: its result and metrics (in this process only) and the plain data kept of it."""

    result: ReplayResult
    metrics: Metrics
    summary: Obj
    timeseries: list[Obj]
    pods: list[Obj]


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
    kube_version: KubeVersion | None = None,
) -> ReplayOutcome:
    """Replay ``workload`` under ``config`` (None: the workload's own, else the defaults) with the metrics sampling
    every ``interval``; ``observers`` see the run too (a RunRecorder with ``record``)."""
    metrics = Metrics(interval, workload=workload)
    result = Replay(
        workload, scheduler_config=config, feature_gates=feature_gates, seed=seed, until=until,
        sample_interval=interval, observers=[metrics, *observers], record=record, kube_version=kube_version,
    ).run()  # fmt: skip
    summary = summarize(result, metrics)
    if name:
        summary["name"] = name
    return ReplayOutcome(result, metrics, summary, metrics.table(), [pod_row(p) for p in result.pods])
