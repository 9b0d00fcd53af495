"""The batch path (columns, vectorised plugins) against kube-scheduler: every golden scenario in placements mode.

``kss simulate --detail placements`` evaluates nodes in batches, while the other detail levels record every
plugin per node. Running each golden scenario at placements detail checks that the batch path takes
kube-scheduler's decisions: bound node and how, the selected (tied best) nodes, the feasible count, the
fit error and the preemption result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.simulation.runner import run_scenario

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "golden"
SCENARIOS = sorted(GOLDEN.glob("*/*.scenario.json")) if GOLDEN.is_dir() else []
HEAVY = {"large", "sampling"}
# The corpus's expected files are kube-scheduler v1.35.4's: it runs at 1.35, whatever the default version is.
CORPUS_VERSION = kube_version("1.35")


def _param(path: Path) -> object:
    marks = [pytest.mark.slow] if path.parent.name in HEAVY else []
    return pytest.param(path, id=f"{path.parent.name}/{path.name.removesuffix('.scenario.json')}", marks=marks)


def _decision(entry: dict[str, Any]) -> dict[str, Any]:
    post = entry.get("postfilter") or {}
    feasible = entry.get("feasible")
    return {
        "pod": entry["pod"],
        "attempt": entry["attempt"],
        "boundTo": entry.get("boundTo"),
        "boundBy": entry.get("boundBy") if entry.get("boundTo") else None,
        "selected": entry.get("selected"),
        "feasibleCount": entry.get("feasibleCount", len(feasible) if feasible is not None else None),
        "fitError": entry.get("fitError"),
        "nominated": post.get("nominatedNode"),
        "victims": sorted(post.get("victims") or []),
    }


@pytest.mark.skipif(not SCENARIOS, reason="golden corpus ../shared/golden not present")
@pytest.mark.parametrize("scenario_path", [_param(p) for p in SCENARIOS])
def test_batch_path_decides_as_kube_scheduler(scenario_path: Path) -> None:
    name = scenario_path.name.removesuffix(".scenario.json")
    expected = json.loads(scenario_path.with_name(name + ".expected.json").read_text())
    got = run_scenario(json.loads(scenario_path.read_text()), "placements", kube_version=CORPUS_VERSION)
    want = [_decision(e) for e in expected["results"] if e.get("preEnqueue") is None]
    have = [_decision(e) for e in got["results"] if e.get("preEnqueue") is None]
    assert len(have) == len(want)
    for w, h in zip(want, have, strict=True):
        assert h == w, f"{w['pod']} attempt {w['attempt']}"
