"""The committed dra scenarios are what tools/golden/dra_scenarios.py writes: an edit to one side alone fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.golden import dra_scenarios

FAMILY = Path(__file__).resolve().parents[1] / "golden" / "dra"


def test_the_generator_reproduces_every_committed_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert dra_scenarios.main(["--check", "--out-dir", str(FAMILY)]) == 0, capsys.readouterr().err


def test_every_scenario_has_the_oracle_s_expected_file() -> None:
    scenarios = {p.name.removesuffix(".scenario.json") for p in FAMILY.glob("*.scenario.json")}
    expected = {p.name.removesuffix(".expected.json") for p in FAMILY.glob("*.expected.json")}
    assert len(scenarios) >= 100
    assert scenarios == expected


def test_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    assert dra_scenarios.main(["--out-dir", str(tmp_path)]) == 0
    victim = sorted(tmp_path.glob("*.scenario.json"))[0]
    victim.write_text(victim.read_text().replace('"nodes"', '"nodez"', 1))
    assert dra_scenarios.main(["--check", "--out-dir", str(tmp_path)]) == 1
