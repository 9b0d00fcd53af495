"""``KSS_SCHEDULER_MEMORY_CENSUS``, ``KSS_API_MEMORY_CENSUS``: the scheduler's process and the API process write
censuses of their memory to compare (issue #35)."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kss_sim.config import Settings
from kss_sim.engine_host import memory_census
from kss_sim.main import create_app

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


def test_cyclic_garbage_among_frozen_objects_is_found_and_kept() -> None:
    """The API process freezes the survivors of each full collection (``gc_policy``): garbage in cycles among them
    is never collected. The census finds it by type without freeing it (what the process holds stays the same for
    the next census), and counts the frozen objects' types too."""
    cycles = [_Held() for _ in range(17)]
    for held in cycles:
        held.me = held  # type: ignore[attr-defined]
    alive = [_Held() for _ in range(5)]
    first = id(cycles[0])
    gc.collect()
    gc.freeze()
    start = len(gc.garbage)
    try:
        del cycles, held
        frozen, garbage, by_type = memory_census.frozen_garbage()
        assert frozen > 0
        assert garbage["_Held"] == 17
        assert by_type["_Held"] >= 17 + len(alive)
        assert any(id(obj) == first for obj in gc.garbage[start:]), "kept in gc.garbage, not freed"
        assert gc.get_freeze_count() > 0, "frozen again afterwards"
        assert memory_census.frozen_garbage()[1]["_Held"] == 0, "found once"
    finally:
        del gc.garbage[start:]
        gc.unfreeze()


def test_the_api_process_writes_its_censuses_with_its_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``KSS_API_MEMORY_CENSUS``: the census names the store's objects by kind and the watch log, what the
    controllers have waiting, and the frozen objects."""
    monkeypatch.setattr(memory_census, "CENSUS_EVERY_SECONDS", 0.05)
    census = tmp_path / "census"
    census.mkdir()
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        scheduler_enabled=False,
        kubelet=False,
        api_memory_census=census,
    )
    app = create_app(settings)

    async def run() -> None:
        async with app.router.lifespan_context(app):
            store = app.state.store
            store.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "census"}})
            for i in range(3):
                store.create(
                    "Pod",
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": f"p{i}", "namespace": "census"},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                    },
                )
            deadline = time.monotonic() + 30
            while not _census_with_three_pods(census) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)

    asyncio.run(run())
    text = _census_with_three_pods(census)
    assert text is not None
    counts = dict(line.split() for line in text.split("## counts\n")[1].split("## ")[0].splitlines())
    assert counts["objects_Pod"] == "3"
    assert int(counts["watch_log"]) >= 4
    assert "results_counters" in counts
    assert "frozen_objects " in text


def _census_with_three_pods(directory: Path) -> str | None:
    """The newest census that counts the store's three pods, or None."""
    for path in sorted(directory.glob("api-census-*.txt"), reverse=True):
        text = path.read_text()
        if "objects_Pod 3\n" in text:
            return text
    return None
