"""``kss compare``: one workload replayed under two or more scheduler configurations, or under one configuration at
two or more Kubernetes versions (the upgrade question: what changes in my cluster's placements from v1.34 to v1.36),
side by side.

Every side replays the same workload with the same seed (:func:`run_sides`); :func:`differences` lists the pods
placed differently (another node, or bound on one side and never on another; across versions also a pod that waited
longer or was refused with other words), :func:`compare_document` is
compare.json and :func:`render_compare_html` compare.html (the summaries side by side, the series overlaid with the
report's charts, the differing pods). With a results database each side is a run of one compare group, recorded
with every plugin's verdicts, which the Compare page of ``kss serve`` shows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import orjson

from kss_sim import figures
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import KubeVersion, kube_version, version_label
from kss_sim.package_data import TEMPLATES_DIR
from kss_sim.replay.outputs import file_summary
from kss_sim.replay.report import (
    CHARTS_SCRIPT,
    UPLOT_DIR,
    UPLOT_VERSION,
    chart_run,
)
from kss_sim.replay.workload import TimedWorkload
from kss_sim.whatif.replays import ReplayOutcome, replay_once

TEMPLATE_DIR = TEMPLATES_DIR / "whatif"
DIFFERENCES_SHOWN = 500  # compare.html's table; compare.json has them all


@dataclass(frozen=True)
class Side:
    """One side compared: its name (the configuration file's stem, or ``v1.36``), where its configuration came from,
    the document (None: the defaults); a side of a comparison across versions has its version and gates (else the
    comparison's own)."""

    name: str
    source: str
    config: Obj | None
    kube_version: KubeVersion | None = None
    feature_gates: dict[str, bool] | None = None


@dataclass
class SideRun:
    side: Side
    outcome: ReplayOutcome
    run_id: int | None = None


def side_names(sources: Sequence[str]) -> list[str]:
    """A short unique name per configuration: the file's stem, ``-2``, ``-3`` ... after a repeated one."""
    names: list[str] = []
    for source in sources:
        stem = Path(source).stem or "config"
        name, n = stem, 1
        while name in names:
            n += 1
            name = f"{stem}-{n}"
        names.append(name)
    return names


def new_group(workload: str) -> str:
    """A compare group of its own for this comparison's runs in the results database."""
    return f"compare:{workload}:{uuid.uuid4().hex[:8]}"


def run_sides(
    workload: TimedWorkload,
    sides: Sequence[Side],
    *,
    feature_gates: dict[str, bool] | None = None,
    kube_version: KubeVersion | None = None,
    seed: int = 0,
    interval: float = 3600.0,
    until: float | None = None,
    record_db: str | None = None,
    group: str | None = None,
    on_side: Callable[[SideRun], None] | None = None,
) -> list[SideRun]:
    """Replay ``workload`` once per side, in order; with ``record_db`` each side is recorded (every attempt with its
    plugins' verdicts) as a run of ``group``."""
    runs = []
    for side in sides:
        run = _run_side(workload, side, (feature_gates, kube_version), seed, interval, until, record_db, group)
        runs.append(run)
        if on_side is not None:
            on_side(run)
    return runs


def _run_side(
    workload: TimedWorkload,
    side: Side,
    engine: tuple[dict[str, bool] | None, KubeVersion | None],
    seed: int,
    interval: float,
    until: float | None,
    record_db: str | None,
    group: str | None,
) -> SideRun:
    gates, version = engine
    if side.kube_version is not None:
        gates, version = side.feature_gates, side.kube_version
    if record_db is None:
        outcome = replay_once(workload, config=side.config, feature_gates=gates, seed=seed, interval=interval,
                              until=until, name=side.name, kube_version=version)  # fmt: skip
        return SideRun(side, outcome)
    from kss_sim.replay.recording import RunRecorder

    config = side.config or workload.scheduler_config or {}
    with RunRecorder(record_db, name=side.name, workload=workload.name, seed=seed, config=config,
                     compare_group=group, kube_version=(version or kube_version()).name) as recorder:  # fmt: skip
        outcome = replay_once(workload, config=side.config, feature_gates=gates, seed=seed, interval=interval,
                              until=until, name=side.name, observers=[recorder], record=True,
                              kube_version=version)  # fmt: skip
        recorder.finish(outcome.summary, outcome.timeseries, outcome.pods)
        return SideRun(side, outcome, recorder.run_id)


# What may differ between two sides' runs of one pod: where it went (another node, or bound on one side only), how
# long it waited, and the last reason it was refused with.
NODE, WAIT, REASON = "node", "wait", "reason"
ACROSS_CONFIGURATIONS = (NODE,)
ACROSS_VERSIONS = (NODE, WAIT, REASON)


def _placement(row: Mapping[str, Any]) -> tuple[str, bool]:
    bound = row.get("bound") not in (None, "")
    return (str(row.get("node") or "") if bound else "", bound)


_ASPECT_OF: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    NODE: _placement,
    WAIT: lambda row: row.get("wait"),
    REASON: lambda row: row.get("lastMessage") or "",
}


def differences(runs: Sequence[SideRun], aspects: Sequence[str] = ACROSS_CONFIGURATIONS) -> list[Obj]:
    """The pods whose runs differ in one of ``aspects`` (by default where they were placed: on another node, or bound
    on one side and never on another) or that arrived on one side only, in order of first arrival; each with what
    differs and every side's node, wait, outcome, attempts and last message."""
    by_side = [{str(row["pod"]): row for row in run.outcome.pods} for run in runs]
    arrival: dict[str, float] = {}
    for pods in by_side:
        for key, row in pods.items():
            a = float(row["arrival"]) if row.get("arrival") not in (None, "") else 0.0
            arrival[key] = min(arrival.get(key, a), a)
    out = []
    for key in sorted(arrival, key=lambda k: (arrival[k], k)):
        rows = [pods.get(key) for pods in by_side]
        present = [r for r in rows if r is not None]
        if len(present) < len(rows):
            differs = list(aspects)
        else:
            differs = [a for a in aspects if len({_key(_ASPECT_OF[a](r)) for r in present}) > 1]
        if differs:
            out.append({"pod": key, "differs": differs, "sides": [_side_view(r) for r in rows]})
    return out


def _key(value: Any) -> Any:
    """A value to compare sides by: a wait the same in every run whether read as 12 or "12"."""
    if isinstance(value, str) and value:
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _side_view(row: Mapping[str, Any] | None) -> Obj | None:
    if row is None:
        return None
    return {k: row.get(k, "") for k in ("node", "bound", "wait", "outcome", "attempts", "lastMessage")}


def across_versions(runs: Sequence[SideRun]) -> bool:
    """Whether the sides are versions (one configuration at two or more Kubernetes versions)."""
    return len({str(r.outcome.summary.get("kubeVersion") or "") for r in runs}) > 1


# The figures compared, as (label, path into the summary, how to show it).
FIGURES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("Pods", ("pods",), "count"),
    ("Scheduled", ("scheduled",), "count"),
    ("Never scheduled", ("neverScheduled",), "count"),
    ("Attempts", ("attempts",), "count"),
    ("Preemptions", ("preemptions",), "count"),
    ("Wait p50", ("waitSeconds", "p50"), "duration"),
    ("Wait p95", ("waitSeconds", "p95"), "duration"),
    ("Wait p99", ("waitSeconds", "p99"), "duration"),
    ("Wait max", ("waitSeconds", "max"), "duration"),
    ("Wait mean", ("waitSeconds", "mean"), "duration"),
    ("GPU fragmentation, mean", ("fragmentation", "mean"), "number"),
    ("GPU fragmentation, peak", ("fragmentation", "peak"), "number"),
    ("Virtual time", ("virtualSeconds",), "duration"),
    ("Kubernetes version", ("kubeVersion",), "text"),
)


def _get(summary: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = summary
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def figure_rows(summaries: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, list[Any]]]:
    """(label, kind, value per side) for the summary table: the fixed figures, then every resource's allocation."""
    rows = [(label, kind, [_get(s, path) for s in summaries]) for label, path, kind in FIGURES]
    # A version kss is not measured at is never shown bare.
    rows = [
        (label, kind, [version_label(v, s.get("kubeVersionMeasured")) for v, s in zip(values, summaries, strict=True)])
        if label == "Kubernetes version"
        else (label, kind, values)
        for label, kind, values in rows
    ]
    resources: dict[str, None] = {}
    for s in summaries:
        for name in s.get("allocation") or {}:
            resources.setdefault(name, None)
    for name in resources:
        for key in ("peak", "mean"):
            values = [_get(s, ("allocation", name, key)) for s in summaries]
            rows.append((f"{name} allocation, {key}", "percent", values))
        for key, label in (("peakRequested", "requested, peak"), ("allocatable", "allocatable")):
            values = [_get(s, ("allocation", name, key)) for s in summaries]
            rows.append((f"{name} {label}", f"quantity:{name}", values))
    return rows


def compare_document(
    workload: TimedWorkload, runs: Sequence[SideRun], diffs: Sequence[Obj], *, seed: int, group: str | None = None
) -> Obj:
    """compare.json: the sides (name, configuration file, summary), what they differ by (configurations or versions),
    the figures side by side, the differing pods."""
    summaries = [run.outcome.summary for run in runs]
    doc: Obj = {
        "workload": workload.name,
        "seed": seed,
        "sides": [
            {"name": r.side.name, "config": r.side.source, "summary": file_summary(r.outcome.summary)} for r in runs
        ],
        "figures": [{"figure": label, "values": values} for label, _, values in figure_rows(summaries)],
        "compared": "versions" if across_versions(runs) else "configurations",
        "differentPods": len(diffs),
        "differences": list(diffs),
    }
    if group is not None:
        doc["recorded"] = {"group": group, "runs": {r.side.name: r.run_id for r in runs}}
    return doc


def show_figure(value: Any, kind: str) -> str:
    """A figure of compare.json as compare.html and the CLI's table show it (``kss_sim.figures``, as everywhere)."""
    if value is None or value == "":
        return figures.MISSING
    if kind == "duration":
        return figures.duration(float(value))
    if kind == "percent":
        return figures.percent(float(value))
    if kind == "number":
        return figures.number(float(value))
    if kind.startswith("quantity:"):
        return figures.run_quantity(kind.removeprefix("quantity:"), float(value))
    return figures.count(float(value)) if kind == "count" else str(value)


def _inline_script(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if "</script" in text.lower():
        raise ValueError(f"{path}: cannot be inlined (it contains '</script')")
    return text


def render_compare_html(doc: Mapping[str, Any], runs: Sequence[SideRun], *, ui_url: str | None = None) -> str:
    """compare.html, self-contained like report.html: uPlot and the report's chart script inlined, data inline.
    With ``ui_url`` (recorded runs) each differing pod links to its attempts on each side's run page."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["show"] = show_figure
    env.filters["duration"] = figures.duration
    data = {"runs": [chart_run(r.side.name, r.outcome.timeseries, r.outcome.pods) for r in runs]}
    links: list[str | None] = [
        f"{ui_url.rstrip('/')}/ui/runs/{r.run_id}/pods/" if ui_url and r.run_id is not None else None for r in runs
    ]
    rows = [
        (label, [show_figure(v, kind) for v in values])
        for label, kind, values in figure_rows([r.outcome.summary for r in runs])
    ]
    diffs = list(doc["differences"])
    return env.get_template("compare.html.j2").render(
        title=f"Compare: {doc['workload']} under {', '.join(r.side.name for r in runs)}",
        doc=doc,
        sides=[r.side for r in runs],
        figures=rows,
        notes=figures.resource_notes(
            {name: None for r in runs for name in (r.outcome.summary.get("allocation") or {})}
        ),
        versions=doc.get("compared") == "versions",
        differences=diffs[:DIFFERENCES_SHOWN],
        differences_total=len(diffs),
        links=links,
        uplot_css=(UPLOT_DIR / "uPlot.min.css").read_text(encoding="utf-8"),
        uplot_js=_inline_script(UPLOT_DIR / "uPlot.iife.min.js"),
        charts_js=_inline_script(CHARTS_SCRIPT),
        data_json=orjson.dumps(data).decode().replace("<", "\\u003c"),
        uplot_version=UPLOT_VERSION,
    )
