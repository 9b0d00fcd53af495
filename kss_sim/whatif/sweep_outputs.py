"""What ``kss sweep --out DIR`` writes: sweep.csv and sweep.json (a row per cell), sweep.html (the table and bar
charts of the main figures, self-contained: inline SVG drawn here, no script), and each done cell's own
summary.json, timeseries.csv and pods.csv under ``cells/<config>__<workload>__<shape>__seed-<n>/``."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from kss_sim.kube.objects import Obj
from kss_sim.replay.outputs import POD_COLUMNS, csv_text

CELL_COLUMNS = ("cell", "config", "workload", "nodeShape", "seed", "status", "error", "cellSeconds")
# Summary keys that say what the cell is (already in its own columns) or hold documents, not figures.
_NOT_FIGURES = frozenset(("workload", "seed", "config", "name"))
# The bar charts of sweep.html: title, unit, the figure of a row.
CHARTS: tuple[tuple[str, str, Callable[[Obj], float | None]], ...] = (
    ("Pods scheduled", "%", lambda s: 100.0 * s["scheduled"] / s["pods"] if s.get("pods") else None),
    ("Wait p95", "s", lambda s: (s.get("waitSeconds") or {}).get("p95")),
    ("Wait p99", "s", lambda s: (s.get("waitSeconds") or {}).get("p99")),
    ("Mean CPU allocation", "%", lambda s: _pct(s, "cpu", "mean")),
    ("Mean GPU allocation", "%", lambda s: _pct(s, "gpu", "mean")),
    ("Mean GPU fragmentation", "GPUs", lambda s: (s.get("fragmentation") or {}).get("mean")),
    ("Preemptions", "", lambda s: s.get("preemptions")),
)


def _pct(summary: Obj, resource: str, key: str) -> float | None:
    value = ((summary.get("allocation") or {}).get(resource) or {}).get(key)
    return None if value is None else 100.0 * value


def flat_figures(summary: Obj, prefix: str = "") -> dict[str, Any]:
    """The summary's figures as ``a.b.c`` columns (waitSeconds.p95, allocation.gpu.peak, outcomes.succeeded, ...)."""
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if not prefix and key in _NOT_FIGURES:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_figures(value, name + "."))
        elif isinstance(value, int | float | str | bool):
            out[name] = value
    return out


def table(rows: Sequence[Obj]) -> tuple[list[str], list[Obj]]:
    """sweep.csv's columns and rows: the cell's own, then every figure any cell's summary has."""
    figures = [flat_figures(row.get("summary") or {}) for row in rows]
    columns = list(CELL_COLUMNS)
    for f in figures:
        columns += [k for k in f if k not in columns]
    out = []
    for row, f in zip(rows, figures, strict=True):
        out.append({**{c: row.get(c, "") for c in CELL_COLUMNS}, **f})
    return columns, out


def cell_dir_name(row: Obj) -> str:
    return f"{row['config']}__{row['workload']}__{row['nodeShape']}__seed-{row['seed']}"


def write_sweep(out_dir: Path, name: str, rows: Sequence[Obj], *, spec_path: str = "") -> dict[str, Path]:
    """Write every output of a sweep into ``out_dir``; the paths written, by name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    columns, flat = table(rows)
    paths = {"csv": out_dir / "sweep.csv", "json": out_dir / "sweep.json", "html": out_dir / "sweep.html"}
    paths["csv"].write_text(csv_text(columns, flat))
    doc = {
        "sweep": name,
        "spec": spec_path,
        "cells": [{k: v for k, v in row.items() if k not in ("timeseries", "pods", "trace")} for row in rows],
        "failed": sum(1 for row in rows if row.get("status") != "done"),
    }
    paths["json"].write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    paths["html"].write_text(render_html(name, columns, flat, rows))
    for row in rows:
        if row.get("status") != "done":
            continue
        cell = out_dir / "cells" / cell_dir_name(row)
        cell.mkdir(parents=True, exist_ok=True)
        (cell / "summary.json").write_bytes(orjson.dumps(row["summary"], option=orjson.OPT_INDENT_2))
        series = row.get("timeseries") or []
        if series:
            (cell / "timeseries.csv").write_text(csv_text(list(series[0]), series))
        (cell / "pods.csv").write_text(csv_text(POD_COLUMNS, row.get("pods") or []))
    return paths


# ---- sweep.html ------------------------------------------------------------------------------------------------

_PALETTE = ("#2f6fdf", "#d9480f", "#2b8a3e", "#7048e8", "#c2255c", "#0b7285", "#e67700", "#495057")
_BAR, _GAP, _LABEL_W, _VALUE_W = 18, 6, 330, 90


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.6g}"
    return str(value)


def bar_chart(title: str, unit: str, bars: Sequence[tuple[str, str, float | None]], width: int = 760) -> str:
    """A horizontal bar chart as inline SVG: one bar per (label, group, value), coloured by group."""
    groups = list(dict.fromkeys(g for _, g, _ in bars))
    values = [v for _, _, v in bars if v is not None]
    top = max(values, default=0.0) or 1.0
    plot_w = width - _LABEL_W - _VALUE_W
    height = len(bars) * (_BAR + _GAP) + _GAP
    e = html.escape
    parts = [f'<figure class="sweep-chart" data-chart="{e(title)}"><figcaption>{e(title)}'
             f'{f" ({e(unit)})" if unit else ""}</figcaption>',
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{e(title)}">']  # fmt: skip
    for i, (label, group, value) in enumerate(bars):
        y = _GAP + i * (_BAR + _GAP)
        colour = _PALETTE[groups.index(group) % len(_PALETTE)]
        parts.append(f'<text x="{_LABEL_W - 8}" y="{y + _BAR - 5}" text-anchor="end">{e(label)}</text>')
        if value is None:
            parts.append(f'<text x="{_LABEL_W + 4}" y="{y + _BAR - 5}" class="na">n/a</text>')
            continue
        w = max(1.0, plot_w * max(value, 0.0) / top)
        parts.append(f'<rect class="bar" x="{_LABEL_W}" y="{y}" width="{w:.1f}" height="{_BAR}" fill="{colour}">'
                     f"<title>{e(label)}: {_fmt(value)}{e(unit)}</title></rect>")  # fmt: skip
        parts.append(f'<text x="{_LABEL_W + w + 6:.1f}" y="{y + _BAR - 5}">{_fmt(value)}</text>')
    parts.append("</svg></figure>")
    return "".join(parts)


_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#212529}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;font-size:12px}th,td{border:1px solid #dee2e6;padding:2px 6px;text-align:right}
th{background:#f1f3f5;position:sticky;top:0}td.text{text-align:left}tr.failed td{background:#fff0f0}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem}figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}
svg text{font-size:12px;fill:#212529}svg text.na{fill:#868e96}.scroll{overflow-x:auto;max-width:100%}
"""


def render_html(name: str, columns: Sequence[str], flat: Sequence[Obj], rows: Sequence[Obj]) -> str:
    """sweep.html: the figures per cell as bar charts (one colour per configuration) and the whole table."""
    e = html.escape
    done = [r for r in rows if r.get("status") == "done"]
    failed = [r for r in rows if r.get("status") != "done"]
    charts = []
    for title, unit, figure in CHARTS:
        bars = [(r["cell"], str(r["config"]), _safe(figure, r["summary"])) for r in done]
        if any(v is not None for _, _, v in bars):
            charts.append(bar_chart(title, unit, bars))
    head = "".join(f"<th>{e(c)}</th>" for c in columns)
    body = []
    for row in flat:
        cls = ' class="failed"' if row.get("status") != "done" else ""
        cells = "".join(
            f'<td class="text">{e(_fmt(row.get(c, "")))}</td>' if isinstance(row.get(c), str)
            else f"<td>{e(_fmt(row.get(c, '')))}</td>"
            for c in columns
        )  # fmt: skip
        body.append(f"<tr{cls}>{cells}</tr>")
    failures = "".join(f"<li><code>{e(r['cell'])}</code>: {e(str(r.get('error', '')))}</li>" for r in failed)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>kss sweep {e(name)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>kss sweep {e(name)}</h1>"
        f"<p>{len(rows)} cell(s): {len(done)} done, {len(failed)} failed.</p>"
        + (f'<h2>Failed cells</h2><ul class="failures">{failures}</ul>' if failed else "")
        + f'<h2>Figures</h2><div class="charts">{"".join(charts)}</div>'
        f'<h2>Cells</h2><div class="scroll"><table id="cells"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div></body></html>\n"
    )


def _safe(figure: Callable[[Obj], float | None], summary: Obj) -> float | None:
    try:
        value = figure(summary)
    except (KeyError, TypeError, ZeroDivisionError):
        return None
    return float(value) if isinstance(value, int | float) else None
