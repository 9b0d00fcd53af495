"""DefaultPreemption against kube-scheduler's own preemption outcomes in the golden ``preemption`` family.

Scenarios run end to end through the offline runner (preemption needs the real filters); each PostFilter
result must name the same node, the same victims and the same status text as kube-scheduler's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.simulation.runner import run_scenario

GOLDEN = Path(__file__).resolve().parents[3].parent / "shared" / "golden"
SCENARIOS = sorted((GOLDEN / "preemption").glob("*.scenario.json")) if GOLDEN.is_dir() else []
# The corpus's expected files are kube-scheduler v1.35.4's: it runs at 1.35, whatever the default version is.
CORPUS_VERSION = kube_version("1.35")


@pytest.mark.skipif(not SCENARIOS, reason="golden corpus not present")
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name.removesuffix(".scenario.json"))
def test_preemption_outcomes_match_kube_scheduler(path: Path) -> None:
    scenario = json.loads(path.read_text())
    expected = json.loads(path.with_name(path.name.replace(".scenario.", ".expected.")).read_text())
    got = run_scenario(scenario, "summary", kube_version=CORPUS_VERSION)
    exp_entries = [(e["pod"], e["attempt"], e.get("postfilter")) for e in expected["results"]]
    got_entries = [(g["pod"], g["attempt"], g.get("postfilter")) for g in got["results"]]
    assert [e[:2] for e in got_entries] == [e[:2] for e in exp_entries]
    for (pod, attempt, exp_pf), (_, _, got_pf) in zip(exp_entries, got_entries, strict=True):
        where = f"{pod} attempt {attempt}"
        if exp_pf is None:
            assert got_pf is None, where
            continue
        assert got_pf is not None, where
        assert got_pf["nominatedNode"] == exp_pf["nominatedNode"], where
        assert sorted(got_pf["victims"]) == sorted(exp_pf["victims"]), where
        assert (got_pf["status"], got_pf["code"]) == (exp_pf["status"], exp_pf["code"]), where
