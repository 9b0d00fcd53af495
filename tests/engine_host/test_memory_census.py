"""``KSS_SCHEDULER_MEMORY_CENSUS``: the scheduler's process writes censuses of its memory to compare (issue #35)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kss_sim.engine_host import memory_census

BENCH = Path(__file__).resolve().parents[2] / "bench"


class _Held:
    """A type of this test's own, to find among the objects counted."""


def test_a_census_counts_objects_by_type_and_reports_pymalloc() -> None:
    held = [_Held() for _ in range(321)]
    text = memory_census.census()
    assert "_Held 321" in text.splitlines()
    assert "# arenas allocated current" in text  # sys._debugmallocstats' report, caught from fd 2
    assert "allocated_blocks " in text
    if sys.platform == "linux":
        assert "Rss:" in text
    del held


def test_the_report_does_not_leave_stderr_redirected(capfd: pytest.CaptureFixture[str]) -> None:
    memory_census.pymalloc_stats()
    sys.stderr.write("after the census\n")
    sys.stderr.flush()
    assert "after the census" in capfd.readouterr().err


def test_censuses_are_written_every_period_and_compared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_census, "CENSUS_EVERY_SECONDS", 0.05)
    stop = threading.Event()
    thread = memory_census.take_census_periodically(str(tmp_path), stop)
    try:
        deadline = time.monotonic() + 20
        while len(list(tmp_path.glob("scheduler-census-*.txt"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    assert (tmp_path / "scheduler-census-002.txt").exists()
    compared = subprocess.run(
        [sys.executable, str(BENCH / "census_diff.py"), str(tmp_path), "--first", "1", "--last", "2"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "census 1 -> 2" in compared.stdout
    assert "arenas allocated current" in compared.stdout
