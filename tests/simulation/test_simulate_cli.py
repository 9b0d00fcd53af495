"""``kss simulate`` as compare.py and users call it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

KSS = Path(sys.executable).with_name("kss")
GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "golden"
SCENARIO = GOLDEN / "taints" / "taints-000.scenario.json"

pytestmark = pytest.mark.skipif(not SCENARIO.exists(), reason="golden corpus not present")


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KSS), "simulate", *args], capture_output=True, text=True, timeout=120)


def test_one_scenario_writes_the_golden_format_to_stdout() -> None:
    # At 1.35: the corpus's expected files are kube-scheduler v1.35.4's.
    proc = simulate("--kube-version", "1.35", "--detail", "summary", str(SCENARIO))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    expected = json.loads(SCENARIO.with_name("taints-000.expected.json").read_text())
    assert result["detail"] == "summary"
    assert [(r["pod"], r["boundTo"]) for r in result["results"]] == [
        (r["pod"], r["boundTo"]) for r in expected["results"]
    ]


def test_several_scenarios_need_an_out_dir_and_write_one_file_each(tmp_path: Path) -> None:
    other = GOLDEN / "ports" / "ports-000.scenario.json"
    assert simulate(str(SCENARIO), str(other)).returncode == 2
    proc = simulate("--detail", "placements", "--out-dir", str(tmp_path), str(SCENARIO), str(other))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ports-000.result.json", "taints-000.result.json"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "must be a JSON object"),
        ("{}", "neither 'nodes' nor 'pending'"),
        ('{"detail": "full", "results": []}', "result (or expected) file"),
        ("{not json", "JSONDecodeError"),
    ],
)
def test_a_file_that_is_not_a_scenario_is_refused_clearly(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    proc = simulate(str(bad))
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_record_db_accepts_a_path_or_a_url(tmp_path: Path) -> None:
    for target in (str(tmp_path / "a.db"), f"sqlite:///{tmp_path / 'b.db'}"):
        proc = simulate("--detail", "placements", "--record-db", target, "--out-dir", str(tmp_path), str(SCENARIO))
        assert proc.returncode == 0, proc.stderr
        db = target.removeprefix("sqlite:///")
        with sqlite3.connect(db) as conn:
            (count,) = conn.execute("select count(*) from scheduling_attempts").fetchone()
        assert count == len(json.loads(SCENARIO.read_text())["pending"])
    proc = simulate("--record-db", "nosuchdriver://x/y", str(SCENARIO))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
