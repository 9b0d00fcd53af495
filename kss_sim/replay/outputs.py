"""The files of ``kss replay --out DIR``: ``summary.json``, ``pods.csv``, ``timeseries.csv`` and ``report.html``.

Every file is a function of the run alone (the wall-clock time a run took is printed and recorded, never written
here), so the same workload, configuration and seed write the same bytes.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from kss_sim.kube.objects import Obj
from kss_sim.replay.metrics import Metrics, summarize
from kss_sim.replay.model import PodRecord, ReplayResult
from kss_sim.replay.report import render_report

POD_COLUMNS = (
    "pod", "uid", "owner", "priority", "arrival", "firstAttempt", "bound", "wait", "node", "attempts",
    "preemptions", "terminating", "evicted", "finished", "outcome", "reason", "lastMessage",
)  # fmt: skip
FILES = ("summary.json", "pods.csv", "timeseries.csv", "report.html")


def _time(value: float | None) -> float | str:
    if value is None:
        return ""
    return int(value) if value == int(value) else round(value, 6)


def pod_row(rec: PodRecord) -> Obj:
    """A pod's row of ``pods.csv`` (times in virtual seconds; "" where it has none: never bound, not finished)."""
    return {
        "pod": rec.key,
        "uid": rec.uid,
        "owner": rec.owner,
        "priority": rec.priority,
        "arrival": _time(rec.arrival),
        "firstAttempt": _time(rec.first_attempt),
        "bound": _time(rec.bound_at),
        "wait": _time(rec.wait),
        "node": rec.node or "",
        "attempts": rec.attempts,
        "preemptions": rec.preemptions,
        "terminating": _time(rec.terminating_at),
        "evicted": _time(rec.evicted_at),
        "finished": _time(rec.finished_at),
        "outcome": rec.outcome,
        "reason": rec.reason,
        "lastMessage": rec.last_message,
    }


def file_summary(summary: Mapping[str, Any]) -> Obj:
    """The summary as ``summary.json`` holds it: without ``wallSeconds``, which differs from run to run."""
    return {k: v for k, v in summary.items() if k != "wallSeconds"}


def csv_text(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """RFC 4180 CSV (``\\r\\n`` line ends, fields quoted when needed) with a header line."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def write_outputs(
    result: ReplayResult, metrics: Metrics | None, out_dir: Path | str, *, summary: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Write the four files into ``out_dir`` (created if needed); their paths by file name. ``summary`` defaults to
    :func:`kss_sim.replay.metrics.summarize` of the run."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    document = dict(summary) if summary is not None else summarize(result, metrics)
    pods = [pod_row(rec) for rec in result.pods]
    samples = metrics.table() if metrics is not None else []
    columns = metrics.columns() if metrics is not None else ["t"]
    texts = {
        "summary.json": orjson.dumps(file_summary(document), option=orjson.OPT_INDENT_2).decode() + "\n",
        "pods.csv": csv_text(POD_COLUMNS, pods),
        "timeseries.csv": csv_text(columns, samples),
        "report.html": render_report(document, samples, pods),
    }
    paths: dict[str, Path] = {}
    for name in FILES:
        path = out / name
        path.write_text(texts[name], encoding="utf-8", newline="")
        paths[name] = path
    return paths
