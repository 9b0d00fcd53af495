"""``KSS_SCHEDULER_TRACEMALLOC``: the scheduler's process writes snapshots of its allocations to compare (issue #35)."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from kss_sim.engine_host import scheduler_process


def test_snapshots_are_written_until_tracing_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_process, "TRACE_EVERY_SECONDS", 0.05)
    thread = scheduler_process._trace_memory(str(tmp_path))
    try:
        deadline = time.monotonic() + 10
        while not list(tmp_path.glob("scheduler-*.tracemalloc")) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        tracemalloc.stop()
    thread.join(5)
    assert not thread.is_alive()
    first = sorted(tmp_path.glob("scheduler-*.tracemalloc"))[0]
    assert first.name == "scheduler-001.tracemalloc"
    assert tracemalloc.Snapshot.load(str(first)).traceback_limit == 6
