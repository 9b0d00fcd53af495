"""report.html in headless Chromium: opened as a file (no server, no network), every chart drawn, no errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kss_sim.replay.metrics import Metrics
from kss_sim.replay.model import PENDING, RUNNING, SUCCEEDED, PodRecord, ReplayResult
from kss_sim.replay.outputs import write_outputs
from tests.replay.test_metrics import TARGET, cluster_state, pod
from tests.web.chromium import MARKS, fresh_page, shot

pytestmark = MARKS

CHARTS = ["allocation", "pods", "queue", "fragmentation", "nodes", "waits"]

# Pixels of a canvas that are not transparent (what uPlot drew: axes, grid and series).
INK = """canvas => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let ink = 0;
  for (let i = 3; i < data.length; i += 4) if (data[i] > 0) ink++;
  return ink;
}"""


def a_run(out: Path) -> Path:
    """A day sampled every 2 hours on a real small cluster state (pods arriving, GPUs filling), written out."""
    state, nodes, _ = cluster_state()
    metrics = Metrics(7200, target=TARGET)
    metrics.on_start(state)
    for step in range(13):
        state.now = step * 7200.0
        if 0 < step < 6:
            nodes["gpu-a"].add_pod(pod(f"more-{step}", cpu="500m"))
        state.queues = {"active": 0, "backoff": step % 2, "unschedulable": step % 3, "gated": 0}
        metrics.on_sample(state)
    records = [
        PodRecord(key=f"default/w{i}", uid=f"w{i}", arrival=100.0 * i, first_attempt=100.0 * i,
                  bound_at=100.0 * i + 3 ** (i % 9), node="gpu-a", attempts=1 + i % 3,
                  outcome=SUCCEEDED if i % 2 else RUNNING)
        for i in range(40)
    ]  # fmt: skip
    records.append(PodRecord(key="default/huge", uid="huge", arrival=50.0, first_attempt=50.0, attempts=9,
                             outcome=PENDING, last_message="0/4 nodes are available: 4 Insufficient cpu."))  # fmt: skip
    result = ReplayResult(workload="browser-day", pods=records, virtual_seconds=86400.0, attempts=90,
                          wall_seconds=0.2, config={}, seed=3)  # fmt: skip
    return write_outputs(result, metrics, out)["report.html"]


def test_report_draws_every_chart_from_the_file_alone(chromium: Any, tmp_path: Path) -> None:
    report = a_run(tmp_path)
    html = report.read_text()
    assert "<script src" not in html and "<link" not in html  # nothing to fetch: self-contained

    with fresh_page(chromium) as page:
        console_errors: list[str] = []
        page.on("console", lambda msg: console_errors.append(msg.text) if msg.type == "error" else None)
        requests: list[str] = []
        page.on("request", lambda req: requests.append(req.url))
        page.goto(report.as_uri())
        page.wait_for_selector("figure[data-chart=waits] canvas")

        assert page.eval_on_selector_all("figure.kss-chart", "els => els.map(e => e.dataset.chart)") == CHARTS
        for chart in CHARTS:
            ink = page.eval_on_selector(f"figure[data-chart={chart}] canvas", INK)
            assert ink > 2000, f"{chart}: canvas nearly blank ({ink} pixels drawn)"
        legend = page.inner_text("figure[data-chart=allocation] .u-legend")
        assert "cpu" in legend and "gpu" in legend and "nvidia.com/gpu" not in legend  # gpu counts it already
        assert page.inner_text("[data-fact=pods]") == "41"
        assert page.inner_text("[data-fact=neverScheduled]") == "1"
        assert "Insufficient cpu" in page.inner_text("#never-scheduled")
        # The cursor reads a sample back in the legend: hover the middle of the GPU fragmentation chart.
        over = page.locator("figure[data-chart=fragmentation] .u-over")
        over.scroll_into_view_if_needed()
        box = over.bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        values = page.eval_on_selector_all("figure[data-chart=fragmentation] .u-legend .u-value",
                                           "els => els.map(e => e.textContent)")  # fmt: skip
        assert values[0].startswith("day 0 ") or ":" in values[0]  # the time under the cursor
        assert all(v not in ("", "–") for v in values), values
        shot(page, "replay-report")
        assert requests == [report.as_uri()]
        assert console_errors == []


def test_the_chart_script_overlays_runs(chromium: Any, tmp_path: Path) -> None:
    """What the Compare page does: two runs in one render, one dash pattern per run."""
    report = a_run(tmp_path)
    with fresh_page(chromium) as page:
        page.goto(report.as_uri())
        page.wait_for_selector("figure[data-chart=waits] canvas")
        labels = page.evaluate("""() => {
          const data = JSON.parse(document.getElementById("replay-data").textContent);
          const a = data.runs[0], b = JSON.parse(JSON.stringify(a));
          a.name = "binpack"; b.name = "spread";
          b.timeseries.gpu_fragmentation = b.timeseries.gpu_fragmentation.map(v => v / 2);
          b.waits = b.waits.map(w => w * 10);
          const box = document.createElement("div");
          box.id = "compare";
          document.body.prepend(box);
          const drawn = kssReplayCharts.render(box, {runs: [a, b]});
          return drawn.charts.map(c => c.series.slice(1).map(s => s.label));
        }""")
        assert labels[3] == ["fragmented GPUs · binpack", "fragmented GPUs · spread", "free GPUs · binpack",
                             "free GPUs · spread"]  # fmt: skip
        assert labels[5] == ["bound pods · binpack", "bound pods · spread"]
        assert page.eval_on_selector("#compare figure[data-chart=waits] canvas", INK) > 2000
        shot(page, "replay-report-compare")


def test_charts_of_counts_tick_at_whole_numbers(chromium: Any, tmp_path: Path) -> None:
    """The queue holds 0 to 2 pods: its axis ticks 0, 1, 2, never 0.2, 0.4 (as pods, nodes)."""
    report = a_run(tmp_path)
    with fresh_page(chromium) as page:
        page.goto(report.as_uri())
        page.wait_for_selector("figure[data-chart=waits] canvas")
        page.evaluate("""() => {
          const box = document.createElement("div");
          document.body.prepend(box);
          const data = JSON.parse(document.getElementById("replay-data").textContent);
          window.drawn = kssReplayCharts.render(box, data).charts;
        }""")
        page.wait_for_function("window.drawn.every((u) => u.axes[1]._splits)")
        ticks = page.evaluate(
            "Object.fromEntries(window.drawn.map((u) => [u.root.closest('figure').dataset.chart, u.axes[1]._splits]))"
        )
        for chart in ("pods", "queue", "nodes"):
            assert ticks[chart], chart
            assert all(float(t).is_integer() for t in ticks[chart]), (chart, ticks[chart])
        assert ticks["queue"][0] == 0 and max(ticks["queue"]) >= 2
