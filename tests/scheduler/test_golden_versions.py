"""The golden corpus per Kubernetes version (tests/golden/v1.XX, issue #32).

Each version directory holds what that version's kube-scheduler decided wherever it differs from v1.35.4
(`<family>/<name>.expected.json.gz`) and `AGREES.json`: the v1.35 expected files this version agrees with on every
check of compare.py, reason wording and DRA allocations included, each with the sha256 of the v1.35 file (so a
v1.35 file changed since is caught here), and the scenarios the version cannot run, with why. The files come from
the reference program (kube-scheduler's own framework and plugins of that release, built outside the repo).

Two kinds of test: the bookkeeping (hashes, every scenario accounted for, files well formed) always runs; the
comparison of `kss simulate --kube-version 1.XX` against each version's expectations runs once the simulator has
that option, and skips with that reason until then.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kss_sim.kube.versions import VERSIONS as KUBE_VERSIONS
from tools.golden import workload_scenarios
from tools.golden.versions import (
    COMPARE,
    KSS,
    ROOT,
    agreement,
    entry_notes,
    families_of,
    measure,
    own_expected,
    own_scenarios,
    read_gz,
    repo_path,
    scenarios,
    v135_expected,
    version_dirs,
)

VERSIONS = version_dirs()
HEAVY = {"large", "sampling"}


@pytest.mark.parametrize("version_dir", VERSIONS, ids=lambda p: p.name)
def test_agreeing_v135_files_are_unchanged(version_dir: Path) -> None:
    """A v1.35 expected file listed as agreeing must still be the file that was measured."""
    changed = []
    for rel, digest in agreement(version_dir)["agrees"].items():
        path = (ROOT / rel).resolve()
        if not path.exists():
            assert rel.startswith("../shared/"), f"{rel} missing"
            continue  # the shared corpus is not beside this clone
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            changed.append(rel)
    assert not changed, f"v1.35 files changed since {version_dir.name} was measured: {changed[:5]}"


@pytest.mark.parametrize("version_dir", VERSIONS, ids=lambda p: p.name)
def test_every_scenario_is_accounted_for(version_dir: Path) -> None:
    """Each scenario has, for this version, exactly one of: agreement, an expected file of its own, a reason."""
    measured_against = agreement(version_dir)
    agrees, cannot = set(measured_against["agrees"]), set(measured_against["cannotRun"])
    problems = []
    for scenario in scenarios():
        kinds = [
            repo_path(v135_expected(scenario)) in agrees,
            own_expected(version_dir, scenario).exists(),
            repo_path(scenario) in cannot,
        ]
        if sum(kinds) != 1:
            problems.append(f"{repo_path(scenario)}: {kinds}")
    assert not problems, problems[:10]
    assert all(reason.strip() for reason in measured_against["cannotRun"].values())
    # The version's own families (v1.36's gangs, topology): each scenario has its expected file beside it.
    missing = [repo_path(s) for s in own_scenarios(version_dir) if not own_expected(version_dir, s).exists()]
    assert not missing, missing
    every_versions_families = {s.parent.name for s in scenarios()}
    orphans = [
        str(p)
        for p in version_dir.glob("*/*.expected.json.gz")
        if p.parent.name not in every_versions_families
        and not p.with_name(p.name.replace(".expected.json.gz", ".scenario.json")).exists()
    ]
    assert not orphans, orphans


@pytest.mark.parametrize("version_dir", VERSIONS, ids=lambda p: p.name)
def test_own_expected_files_are_this_versions(version_dir: Path) -> None:
    version = version_dir.name  # "v1.36"
    for path in sorted(version_dir.glob("*/*.expected.json.gz")):
        expected = read_gz(path)
        assert re.fullmatch(rf"kube-scheduler {re.escape(version)}\.\d+ framework", expected["oracle"]), path
        assert expected["detail"] in {"full", "compact", "summary", "placements"}, path
        assert expected["results"], path


# --- the simulator against each version ------------------------------------------------------------------------


@cache
def _has_kube_version() -> bool:
    proc = subprocess.run([str(KSS), "simulate", "--help"], capture_output=True, text=True, timeout=120)
    return "--kube-version" in proc.stdout


# Where kss does not yet decide as that release's kube-scheduler does, and why (issue #32). Strict: a family that
# starts to agree fails here until its line goes.
NOT_YET: dict[str, str] = {}


def _cases() -> list[Any]:
    cases = []
    for version_dir in VERSIONS:
        for family in families_of(version_dir):
            marks = [pytest.mark.slow] if family in HEAVY else []
            reason = NOT_YET.get(f"{version_dir.name}/{family}")
            if reason is not None:
                marks.append(pytest.mark.xfail(reason=reason, strict=True))
            cases.append(pytest.param(version_dir, family, id=f"{version_dir.name}/{family}", marks=marks))
    return cases


@pytest.mark.skipif(not COMPARE.exists(), reason="../shared/golden/compare.py not present")
@pytest.mark.parametrize(("version_dir", "family"), _cases())
def test_simulator_agrees_with_each_version(version_dir: Path, family: str, tmp_path: Path) -> None:
    if not _has_kube_version():
        pytest.skip("kss simulate has no --kube-version yet (issue #32 item 1)")
    measured = measure(version_dir, family, tmp_path)
    problems = measured.problems
    assert not problems, "\n".join(problems[:20])


def test_the_workload_generator_reproduces_the_v1_36_families(capsys: pytest.CaptureFixture[str]) -> None:
    v136 = next(d for d in VERSIONS if d.name == "v1.36")
    assert workload_scenarios.main(["--check", "--out-dir", str(v136)]) == 0, capsys.readouterr().err
    families = {"gangs", "gangpreemption", "topology", "declaredfeatures", "draextended"}
    assert {s.parent.name for s in own_scenarios(v136)} == families


def test_a_pod_group_outcome_that_differs_is_reported() -> None:
    want = {"pod": "default/a", "attempt": 1, "podGroup": {"podGroup": "default/g", "outcome": "Scheduled"}}
    assert entry_notes("s", want, dict(want)) == []
    other = {**want, "podGroup": {"podGroup": "default/g", "outcome": "Unschedulable"}}
    assert entry_notes("s", want, other) == [
        "s: podGroup of default/a attempt 1: expected {'podGroup': 'default/g', 'outcome': 'Scheduled'} "
        "got {'podGroup': 'default/g', 'outcome': 'Unschedulable'}"
    ]
    assert entry_notes("s", want, {"pod": "default/a", "attempt": 1}) != []


def _readme_fidelity_table() -> dict[tuple[str, str], str]:
    """(family, version) -> the cell of README.md's version x family table."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| family | v1.33 |"))
    # A version kss is not measured at is headed "v1.37 (ported)".
    versions = [c.strip().split(" ")[0] for c in lines[start].strip("|").split("|")[1:]]
    cells: dict[tuple[str, str], str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        family, *row = (c.strip() for c in line.strip("|").split("|"))
        for version, cell in zip(versions, row, strict=True):
            cells[(family.split(" ")[0], version)] = cell
    return cells


def test_the_readmes_fidelity_table_says_an_unmeasured_version_is_not_measured() -> None:
    """v1.37 has no reference program, so no golden directory: its column says "not measured" in every family,
    never a count, and the golden comparisons are not run at it."""
    unmeasured = [f"v{name}" for name, v in KUBE_VERSIONS.items() if not v.measured]
    assert unmeasured == ["v1.37"]
    assert not any(d.name in unmeasured for d in VERSIONS)
    table = _readme_fidelity_table()
    column = {family: cell for (family, version), cell in table.items() if version in unmeasured}
    assert column and set(column.values()) == {"not measured"}
    assert set(column) == {family for (family, version) in table if version == "v1.36"}


@pytest.mark.skipif(not COMPARE.exists(), reason="../shared/golden not present: the v1.35 column's corpus")
def test_the_readmes_fidelity_table_counts_every_scenario() -> None:
    """The README's table says n/n for each (version, family) measured here, n the family's scenarios at that
    version (the tests above hold each at 100 %); a cell that explains itself in parentheses may count fewer."""
    table = _readme_fidelity_table()
    counted: dict[tuple[str, str], int] = {}
    for scenario in scenarios():
        counted[(scenario.parent.name, "v1.35")] = counted.get((scenario.parent.name, "v1.35"), 0) + 1
    for version_dir in VERSIONS:
        for scenario in scenarios() + own_scenarios(version_dir):
            key = (scenario.parent.name, version_dir.name)
            counted[key] = counted.get(key, 0) + 1
    wrong = []
    for key, n in sorted(counted.items()):
        cell = table.get(key)
        if cell is None:
            wrong.append(f"{key}: no cell")
            continue
        match = re.match(r"(\d+)/(\d+)", cell)
        explained = "(" in cell
        if match is None:
            if not explained:
                wrong.append(f"{key}: {cell!r}, {n} scenarios")
            continue
        agree, total = int(match.group(1)), int(match.group(2))
        if agree != total or (total != n and not explained) or total > n:
            wrong.append(f"{key}: {cell!r}, {n} scenarios")
    assert not wrong, "\n".join(wrong)
