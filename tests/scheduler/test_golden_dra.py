"""The `dra` golden family (tests/golden/dra) through the engine, judged by the corpus's compare.py and, beyond it,
by the `allocations` each bound pod's claims received (compare.py ignores that key).

The expected files come from kube-scheduler v1.35.4's own framework and plugins (the oracle, outside the repo); a
mismatch is a bug in the engine. Consumable-capacity allocations carry a random shareID upstream (a new UID per
allocation): it is compared by presence only.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.simulation.runner import run_scenario
from tools.golden.versions import compare_module, without_share_ids

ROOT = Path(__file__).resolve().parents[2]
FAMILY = ROOT / "tests" / "golden" / "dra"
COMPARE = ROOT.parent / "shared" / "golden" / "compare.py"
SCENARIOS = sorted(FAMILY.glob("*.scenario.json"))
# The family's expected files are kube-scheduler v1.35.4's (tests/golden/v1.XX: the other versions').
CORPUS_VERSION = kube_version("1.35")


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    return compare_module()


def test_every_scenario_has_an_expected_file() -> None:
    assert len(SCENARIOS) >= 100
    missing = [p.name for p in SCENARIOS if not p.with_name(p.name.replace(".scenario.", ".expected.")).exists()]
    assert not missing


@pytest.mark.skipif(not COMPARE.exists(), reason="../shared/golden/compare.py not present")
@pytest.mark.parametrize("scenario_path", SCENARIOS, ids=lambda p: p.name.removesuffix(".scenario.json"))
def test_engine_agrees_with_kube_scheduler(scenario_path: Path, compare: ModuleType) -> None:
    expected_path = scenario_path.with_name(scenario_path.name.replace(".scenario.", ".expected."))
    if not expected_path.exists():
        pytest.fail(f"{expected_path.name} missing")
    expected = json.loads(expected_path.read_text())
    got = run_scenario(
        json.loads(scenario_path.read_text()), expected.get("detail", "full"), kube_version=CORPUS_VERSION
    )
    tally = compare.compare_scenario(expected, got)
    problems = list(tally.notes)[:10]
    assert not problems, "\n".join(problems)
    for want, have in zip(expected["results"], got["results"], strict=True):
        where = f"{want['pod']} attempt {want['attempt']}"
        assert without_share_ids(have.get("allocations")) == without_share_ids(want.get("allocations")), where
