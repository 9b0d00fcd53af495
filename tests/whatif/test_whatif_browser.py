"""compare.html and sweep.html opened alone in headless Chromium: drawn, no script errors, no request made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kss_sim.replay.workload import parse_workload
from kss_sim.whatif.compare import Side, compare_document, differences, render_compare_html, run_sides
from kss_sim.whatif.sweep import Cell, NodeShape, run_cell
from kss_sim.whatif.sweep_outputs import write_sweep
from tests.web.chromium import MARKS, fresh_page, shot
from tests.whatif.test_compare import room_for_a_big_pod
from tests.whatif.workloads import most_allocated, node, queue_behind, unknown_plugin

pytestmark = MARKS


def requests_made(page: Any) -> list[str]:
    made: list[str] = []
    page.on("request", lambda r: made.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    return made


def test_compare_html_overlays_both_sides_and_lists_the_differing_pods(tmp_path: Path, chromium: Any) -> None:
    workload = parse_workload(json.dumps(room_for_a_big_pod()))
    sides = [Side("least", "the v1.35 defaults", None), Side("most", "most.yaml", most_allocated())]
    runs = run_sides(workload, sides, interval=1.0)
    doc = compare_document(workload, runs, differences(runs), seed=0)
    path = tmp_path / "compare.html"
    path.write_text(render_compare_html(doc, runs))
    with fresh_page(chromium) as page:
        made = requests_made(page)
        page.goto(path.as_uri())
        page.wait_for_selector("figure.kss-chart canvas")
        assert page.locator("figure.kss-chart").count() >= 3
        # Both sides are drawn in the charts' legends (one dash pattern per run).
        legend = page.locator("figure.kss-chart").first.inner_text()
        assert "least" in legend and "most" in legend
        assert page.locator("#differences tbody tr").count() == 2
        big = page.locator('#differences tr[data-pod="default/big"]')
        assert "never bound" in big.inner_text() and "Insufficient cpu" in big.inner_text()
        assert page.locator("#figures tr.differs").count() >= 2  # never scheduled, allocation peaks
        shot(page, "whatif-compare")
        assert made == []


def test_sweep_html_draws_a_bar_per_done_cell_and_lists_failures(tmp_path: Path, chromium: Any) -> None:
    workload = parse_workload(json.dumps(queue_behind()))
    rows = [run_cell(Cell(name, cfg, "queue", shape, 0, 60.0, None), workload)
            for name, cfg in (("default", None), ("most", most_allocated()), ("bogus", unknown_plugin()))
            for shape in (NodeShape("own"), NodeShape("plus1", node("extra"), 1))]  # fmt: skip
    paths = write_sweep(tmp_path, "demo", rows)
    with fresh_page(chromium) as page:
        made = requests_made(page)
        page.goto(paths["html"].as_uri())
        assert page.locator("figure.sweep-chart").count() >= 3
        wait_chart = page.locator('figure[data-chart="Wait p95"]')
        assert wait_chart.locator("rect.bar").count() == 4  # the done cells; the own ones at 480 s, plus1 at 0
        widths = [
            float(w) for w in wait_chart.locator("rect.bar").evaluate_all("rs => rs.map(r => r.getAttribute('width'))")
        ]
        assert sorted(widths)[:2] == [1.0, 1.0] and min(sorted(widths)[2:]) > 100
        assert page.locator("ul.failures li").count() == 2
        assert page.locator("#cells tbody tr.failed").count() == 2
        shot(page, "whatif-sweep")
        assert made == []
