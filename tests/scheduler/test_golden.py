"""Every golden scenario through the engine, judged by the corpus's own compare.py.

The expected files come from the real kube-scheduler v1.35; a mismatch is a bug in the engine.
Reason wording is checked too: users read those messages.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.simulation.runner import run_scenario

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "golden"
SCENARIOS = sorted(GOLDEN.glob("*/*.scenario.json")) if GOLDEN.is_dir() else []
# The corpus's expected files are kube-scheduler v1.35.4's: it runs at 1.35, whatever the default version is.
CORPUS_VERSION = kube_version("1.35")
# The biggest families run in the slow tier; every other family runs on each test run.
HEAVY = {"large", "sampling"}


def _compare_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("golden_compare", GOLDEN / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["golden_compare"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    return _compare_module()


def _param(path: Path) -> object:
    marks = [pytest.mark.slow] if path.parent.name in HEAVY else []
    return pytest.param(path, id=f"{path.parent.name}/{path.name.removesuffix('.scenario.json')}", marks=marks)


@pytest.mark.skipif(not SCENARIOS, reason="golden corpus ../shared/golden not present")
@pytest.mark.parametrize("scenario_path", [_param(p) for p in SCENARIOS])
def test_engine_agrees_with_kube_scheduler(scenario_path: Path, compare: ModuleType) -> None:
    name = scenario_path.name.removesuffix(".scenario.json")
    expected = json.loads(scenario_path.with_name(name + ".expected.json").read_text())
    scenario = json.loads(scenario_path.read_text())
    got = run_scenario(scenario, expected.get("detail", "full"), kube_version=CORPUS_VERSION)
    tally = compare.compare_scenario(expected, got)
    problems = [n for n in tally.notes][:10]
    assert not problems, "\n".join(problems)
