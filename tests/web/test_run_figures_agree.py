"""One run reads the same everywhere: its wait mean, GPU fragmentation, virtual time and the amounts of resources
behind its allocation shares as report.html, compare.html and the UI's Run and Compare pages write them
(``kss_sim.figures``), here for examples/replay/gpu-day.yaml, whose wait mean (546.6 s) and fragmentation
(3.69231 GPUs) each page once wrote its own way."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kss_sim.config import Settings
from kss_sim.main import create_app
from kss_sim.replay.report import render_report
from kss_sim.replay.workload import parse_workload
from kss_sim.whatif.compare import (
    Side,
    SideRun,
    compare_document,
    differences,
    new_group,
    render_compare_html,
    run_sides,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "replay"
# (label on report.html / the Run page, label on compare.html, label on the Compare page)
FIGURES = {
    "wait mean": ("Wait mean", "Wait mean", "Wait mean"),
    "fragmentation peak": ("GPU fragmentation peak", "GPU fragmentation, peak", "GPU fragmentation peak"),
    "fragmentation mean": ("GPU fragmentation mean", "GPU fragmentation, mean", "GPU fragmentation mean"),
    "virtual time": ("Virtual time", "Virtual time", "Virtual time"),
}


def cell_after(html: str, label: str, tag: str) -> str:
    """The text of the first ``tag`` after the element holding ``label`` (a fact's <dd>, a row's first number)."""
    match = re.search(rf">{re.escape(label)}</(?:dt|td|th)>\s*<{tag}[^>]*>([^<]*)<", html)
    assert match, f"{label!r} not found"
    return match[1].strip()


def row_cells(html: str, label: str) -> list[str]:
    """The texts of the cells after the first cell reading ``label`` in its row."""
    match = re.search(rf"<t[dh][^>]*>{re.escape(label)}</t[dh]>(.*?)</tr>", html, re.S)
    assert match, f"{label!r} not found"
    return [cell.strip() for cell in re.findall(r"<td[^>]*>([^<]*)</td>", match[1])]


# The resources whose amounts are compared: cpu in cores, memory with binary suffixes, GPUs counted.
AMOUNTS = ("cpu", "memory", "gpu")


def report_figures(html: str) -> dict[str, str]:
    peak, mean = re.search(
        r"<td>fragmented GPUs</td><td class=\"num\">([^<]*)</td>\s*<td class=\"num\">([^<]*)</td>", html
    ).groups()  # type: ignore[union-attr]
    virtual = re.search(r"·\s*([^·<]*?) of virtual time", html)
    assert virtual
    return {
        "wait mean": cell_after(html, "Wait mean", "dd"),
        "fragmentation peak": peak,
        "fragmentation mean": mean,
        "virtual time": virtual[1].strip(),
    }


@pytest.fixture
def sides(tmp_path: Path) -> tuple[list[SideRun], str]:
    """gpu-day under the defaults and packed, recorded as one compare group; the database's URL."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    workload = parse_workload((EXAMPLES / "gpu-day.yaml").read_text())
    packed = yaml.safe_load((EXAMPLES / "most-allocated.yaml").read_text())
    group = new_group(workload.name)
    runs = run_sides(
        workload,
        [Side("default", "default", None), Side("packed", "most-allocated", packed)],
        record_db=url,
        group=group,
    )
    return runs, url


@pytest.fixture
async def ui(sides: tuple[list[SideRun], str]) -> AsyncIterator[httpx.AsyncClient]:
    application = create_app(Settings(database_url=sides[1], scheduler_enabled=False))
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as client:
            yield client


async def test_report_compare_and_the_ui_write_a_run_s_figures_alike(
    sides: tuple[list[SideRun], str], ui: httpx.AsyncClient
) -> None:
    runs, _ = sides
    first = runs[0]
    report = render_report(first.outcome.summary, first.outcome.timeseries, first.outcome.pods)
    doc: Any = compare_document(
        parse_workload((EXAMPLES / "gpu-day.yaml").read_text()), runs, differences(runs), seed=0
    )
    compare_html = render_compare_html(doc, runs)
    run_page = (await ui.get(f"/ui/runs/{first.run_id}")).text
    compare_page = (await ui.get("/ui/compare", params={"runs": f"{first.run_id},{runs[1].run_id}"})).text

    in_report = report_figures(report)
    in_compare_html = {key: cell_after(compare_html, labels[1], "td") for key, labels in FIGURES.items()}
    on_run_page = {key: cell_after(run_page, labels[0], "dd") for key, labels in FIGURES.items()}
    on_compare_page = {key: cell_after(compare_page, labels[2], "td") for key, labels in FIGURES.items()}
    assert in_report == {
        "wait mean": "9 min 7 s",
        "fragmentation peak": "3.69",
        "fragmentation mean": "1.6",
        "virtual time": "15 h",
    }
    assert in_compare_html == in_report
    assert on_run_page == in_report
    assert on_compare_page == in_report
    # The amounts behind the allocation shares (peak requested, allocatable), as kubectl writes quantities.
    in_report_amounts = {r: row_cells(report, r)[2:4] for r in AMOUNTS}
    assert in_report_amounts == {"cpu": ["14", "40"], "memory": ["42Gi", "160Gi"], "gpu": ["8", "8"]}
    on_run_page_amounts = {r: row_cells(run_page, r)[2:4] for r in AMOUNTS}
    in_compare_html_amounts = {
        r: [cell_after(compare_html, f"{r} requested, peak", "td"), cell_after(compare_html, f"{r} allocatable", "td")]
        for r in AMOUNTS
    }
    on_compare_page_amounts = {
        r: [cell_after(compare_page, f"{r} requested peak", "td"), cell_after(compare_page, f"{r} allocatable", "td")]
        for r in AMOUNTS
    }
    assert on_run_page_amounts == in_report_amounts
    assert in_compare_html_amounts == in_report_amounts
    assert on_compare_page_amounts == in_report_amounts
    # gpu beside nvidia.com/gpu is explained on each.
    for html in (report, compare_html, run_page, compare_page):
        assert 'data-testid="resource-note">gpu: every GPU of the cluster' in html
