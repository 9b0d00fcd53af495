"""The golden corpus per Kubernetes version (tests/golden/v1.XX, issue #32): what each release's kube-scheduler
decided, and how far ``kss simulate --kube-version`` agrees with it.

A version directory holds that release's expected file wherever it differs from v1.35.4's
(``<family>/<name>.expected.json.gz``) and ``AGREES.json``: the v1.35 files the release agrees with (with the sha256
of each, so a v1.35 file changed since is caught) and the scenarios it cannot run, with why. The files come from
the reference program (the release's own framework and plugins, built outside the repository).

``python -m tools.golden.versions`` runs every version on every family and prints the fidelity table of the
README (scenarios agreeing on every check of compare.py, reason wording and DRA allocations included);
tests/scheduler/test_golden_versions.py asserts the same per (version, family).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
SHARED = ROOT.parent / "shared" / "golden"
COMPARE = SHARED / "compare.py"
KSS = Path(sys.executable).with_name("kss")


def version_dirs() -> list[Path]:
    """tests/golden/v1.XX, each with its AGREES.json."""
    return sorted(p for p in GOLDEN.glob("v1.*") if (p / "AGREES.json").is_file())


def agreement(version_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((version_dir / "AGREES.json").read_text())
    return data


def scenarios() -> list[Path]:
    """Every scenario each version is measured on: the shared corpus (when present) and the repository's families."""
    shared = sorted(SHARED.glob("*/*.scenario.json")) if SHARED.is_dir() else []
    return shared + sorted((GOLDEN / "dra").glob("*.scenario.json"))


def own_scenarios(version_dir: Path) -> list[Path]:
    """The families of one version alone (v1.36's `gangs`, `topology`): scenario and expected file side by side."""
    return sorted(version_dir.glob("*/*.scenario.json"))


def scenarios_of(version_dir: Path) -> list[Path]:
    return scenarios() + own_scenarios(version_dir)


def families() -> list[str]:
    return sorted({s.parent.name for s in scenarios()})


def families_of(version_dir: Path) -> list[str]:
    return sorted({s.parent.name for s in scenarios_of(version_dir)})


def repo_path(path: Path) -> str:
    """A path as AGREES.json names it: relative to the repository root (the shared corpus sits beside it)."""
    if path.is_relative_to(ROOT):
        return str(path.relative_to(ROOT))
    return "../shared/golden/" + str(path.relative_to(SHARED))


def v135_expected(scenario: Path) -> Path:
    return scenario.with_name(scenario.name.replace(".scenario.json", ".expected.json"))


def own_expected(version_dir: Path, scenario: Path) -> Path:
    return version_dir / scenario.parent.name / scenario.name.replace(".scenario.json", ".expected.json.gz")


def read_gz(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return data


def expected_for(version_dir: Path, scenario: Path) -> dict[str, Any]:
    """What the release decided for ``scenario``: its own file, or v1.35's it agrees with."""
    own = own_expected(version_dir, scenario)
    if own.exists():
        return read_gz(own)
    data: dict[str, Any] = json.loads(v135_expected(scenario).read_text())
    return data


@cache
def compare_module() -> ModuleType:
    """../shared/golden/compare.py, whose checks judge every version."""
    spec = importlib.util.spec_from_file_location("golden_compare", COMPARE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["golden_compare"] = module
    spec.loader.exec_module(module)
    return module


def without_share_ids(value: Any) -> Any:
    """DRA allocations with every shareID replaced by a marker (kept: whether a result is a share)."""
    if isinstance(value, dict):
        return {k: ("<shareID>" if k == "shareID" else without_share_ids(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [without_share_ids(v) for v in value]
    return value


def entry_notes(name: str, want: dict[str, Any], have: dict[str, Any]) -> list[str]:
    """What compare.py does not check of one entry: DRA allocations (shareIDs aside) and, for a pod tried in a
    v1.36 PodGroup cycle, its ``podGroup`` (the group's outcome, placement, whether the group turned it back)."""
    notes = []
    attempt = f"{want['pod']} attempt {want['attempt']}"
    if without_share_ids(want.get("allocations")) != without_share_ids(have.get("allocations")):
        notes.append(f"{name}: allocations of {attempt}")
    if want.get("podGroup") != have.get("podGroup"):
        notes.append(f"{name}: podGroup of {attempt}: expected {want.get('podGroup')} got {have.get('podGroup')}")
    return notes


@dataclass
class Measured:
    """One (version, family): how many scenarios agree in full, of how many run, and the first problems."""

    agreed: int = 0
    total: int = 0
    cannot_run: int = 0
    problems: list[str] = field(default_factory=list)


def measure(version_dir: Path, family: str, out_dir: Path) -> Measured:
    """Run ``kss simulate --kube-version`` on the family's scenarios the version can run, judged as compare.py
    judges (plus DRA allocations, shareIDs aside)."""
    compare = compare_module()
    cannot = set(agreement(version_dir)["cannotRun"])
    version = version_dir.name.removeprefix("v")
    measured = Measured()
    by_detail: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for scenario in (s for s in scenarios_of(version_dir) if s.parent.name == family):
        if repo_path(scenario) in cannot:
            measured.cannot_run += 1
            continue
        expected = expected_for(version_dir, scenario)
        by_detail.setdefault(expected.get("detail", "full"), []).append((scenario, expected))
    for detail, group in by_detail.items():
        proc = subprocess.run(
            [str(KSS), "simulate", "--kube-version", version, "--detail", detail, "--out-dir", str(out_dir)]
            + [str(s) for s, _ in group],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"kss simulate --kube-version {version} failed: {proc.stderr[-2000:]}")
        for scenario, expected in group:
            measured.total += 1
            result = out_dir / scenario.name.replace(".scenario.json", ".result.json")
            got = json.loads(result.read_text()) if result.exists() else None
            notes = [f"{scenario.name}: {note}" for note in compare.compare_scenario(expected, got).notes[:3]]
            if got is not None:
                for want, have in zip(expected["results"], got["results"], strict=False):
                    notes += entry_notes(scenario.name, want, have)
            if notes:
                measured.problems += notes
            else:
                measured.agreed += 1
    return measured


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="append", help="only these (1.36); repeatable")
    args = p.parse_args()
    dirs = [d for d in version_dirs() if not args.version or d.name.removeprefix("v") in args.version]
    table: dict[str, dict[str, Measured]] = {}
    for version_dir in dirs:
        for family in families_of(version_dir):
            with tempfile.TemporaryDirectory() as out:
                table.setdefault(family, {})[version_dir.name] = measure(version_dir, family, Path(out))
    names = [d.name for d in dirs]
    print("| family | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for family, row in table.items():
        cells = []
        for name in names:
            m = row.get(name, Measured())
            cell = f"{m.agreed}/{m.total}" if m.total else "—"
            if m.cannot_run:
                cell += f" ({m.cannot_run} cannot run)"
            cells.append(cell)
        print(f"| {family} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
