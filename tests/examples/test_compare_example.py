"""examples/replay/bin-packing.yaml under `kss compare`, as its comments and docs/whatif.md tell it: spreading (the
defaults) makes the training pod wait for a whole node, packing (examples/replay/most-allocated.yaml) does not, and
the figures compared say so."""

from __future__ import annotations

from pathlib import Path

import yaml

from kss_sim.replay.workload import parse_workload
from kss_sim.whatif.compare import Side, figure_rows, run_sides, show_figure

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "replay"


def test_the_compare_example_shows_spreading_and_packing_differ() -> None:
    workload = parse_workload((EXAMPLES / "bin-packing.yaml").read_text())
    packed = yaml.safe_load((EXAMPLES / "most-allocated.yaml").read_text())
    spread, pack = run_sides(workload, [Side("default", "default", None), Side("packed", "most-allocated", packed)])
    waits = {run.side.name: {row["pod"]: row["wait"] for row in run.outcome.pods} for run in (spread, pack)}
    # Spread, train (at 10 min) waits for the node with one inference pod to empty: infer-2's end at 8 h 1 min.
    assert waits["default"]["default/train"] == 8 * 3600 + 60 - 600
    assert waits["packed"] == dict.fromkeys(waits["packed"], 0)
    shown = {label: [show_figure(v, kind) for v in values] for label, kind, values in figure_rows(
        [spread.outcome.summary, pack.outcome.summary]
    )}  # fmt: skip
    assert shown["Wait max"] == ["7 h 51 min", "0 s"]
    assert shown["GPU fragmentation, peak"][0] != shown["GPU fragmentation, peak"][1]
    assert shown["Scheduled"] == ["4", "4"]
