"""``report.html``: one self-contained page per run (no network: uPlot, the chart script and the data inline).

The page shows the summary on top (counts, waits, allocation, fragmentation), the charts drawn by
``static/replay-charts.js`` (the same script the Runs and Compare pages load) from the samples and the bound
pods' waits, and the pods that were never scheduled with kube-scheduler's last message for each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import orjson

from kss_sim import figures
from kss_sim.kube.objects import Obj
from kss_sim.package_data import STATIC_DIR, TEMPLATES_DIR

UPLOT_VERSION = "1.6.32"
UPLOT_DIR = STATIC_DIR / "vendor" / "uplot" / UPLOT_VERSION
CHARTS_SCRIPT = STATIC_DIR / "replay-charts.js"
TEMPLATE_DIR = TEMPLATES_DIR / "replay"
NEVER_SCHEDULED_SHOWN = 200
FIRST_RESOURCES = ("cpu", "memory", "gpu", "pods", "ephemeral-storage")


def chart_run(name: str, timeseries: Sequence[Mapping[str, Any]], pod_rows: Sequence[Mapping[str, Any]]) -> Obj:
    """One run as ``kssReplayCharts.render`` takes it: samples as columns, and the bound pods' waits."""
    columns: dict[str, list[Any]] = {}
    for row in timeseries:
        for key in row:
            columns.setdefault(key, [])
    for key, values in columns.items():
        values.extend(row.get(key) for row in timeseries)
    waits = [row["wait"] for row in pod_rows if row.get("wait") not in (None, "")]
    return {"name": name, "timeseries": columns, "waits": waits}


def _script(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if "</script" in text.lower():
        raise ValueError(f"{path}: cannot be inlined (it contains '</script')")
    return text


def _json_for_html(data: Any) -> str:
    # Inside <script type="application/json"> only "</" could end the element early: escape every "<".
    return orjson.dumps(data).decode().replace("<", "\\u003c")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["duration"] = figures.duration
    env.filters["percent"] = figures.percent
    env.filters["number"] = figures.number
    return env


def allocation_rows(summary: Mapping[str, Any]) -> list[tuple[str, float, float, str, str]]:
    """(resource, peak share, mean share, peak requested, allocatable): the amounts written as kubectl writes them."""
    allocation: Mapping[str, Mapping[str, float]] = summary.get("allocation") or {}
    names = [r for r in FIRST_RESOURCES if r in allocation] + sorted(r for r in allocation if r not in FIRST_RESOURCES)
    return [
        (
            r,
            allocation[r]["peak"],
            allocation[r]["mean"],
            figures.run_quantity(r, allocation[r].get("peakRequested")),
            figures.run_quantity(r, allocation[r].get("allocatable")),
        )
        for r in names
    ]


def render_report(
    summary: Mapping[str, Any],
    timeseries: Sequence[Mapping[str, Any]],
    pod_rows: Sequence[Mapping[str, Any]],
    *,
    title: str | None = None,
) -> str:
    """The report's HTML (a complete document)."""
    name = str(summary.get("name") or summary.get("workload") or "replay")
    never = [row for row in pod_rows if row.get("bound") in (None, "")]
    evicted = [row for row in pod_rows if row.get("evicted") not in (None, "")]
    data = {"runs": [chart_run(name, timeseries, pod_rows)]}
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            title=title or f"Replay report: {name}",
            summary=summary,
            allocation=allocation_rows(summary),
            notes=figures.resource_notes(row[0] for row in allocation_rows(summary)),
            never=never[:NEVER_SCHEDULED_SHOWN],
            never_total=len(never),
            evicted=evicted[:NEVER_SCHEDULED_SHOWN],
            evicted_total=len(evicted),
            samples=len(timeseries),
            uplot_css=(UPLOT_DIR / "uPlot.min.css").read_text(encoding="utf-8"),
            uplot_js=_script(UPLOT_DIR / "uPlot.iife.min.js"),
            charts_js=_script(CHARTS_SCRIPT),
            data_json=_json_for_html(data),
            uplot_version=UPLOT_VERSION,
        )
    )
