"""``kss replay`` end to end: the real command in a subprocess, its outputs, its exit codes."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.replay.test_engine import node, pod

KSS = [sys.executable, "-m", "kss_sim.cli"]
REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, events: list[dict[str, object]]) -> Path:
    doc = {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "cli"},
        "spec": {"start": [node("n1"), node("n2")], "events": events},
    }
    path.write_text(orjson.dumps(doc).decode())
    return path


def _kss(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KSS, *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def _replay_lines(stderr: str) -> list[str]:
    """What kss replay wrote (other commands' registration notes aside)."""
    return [line for line in stderr.splitlines() if not line.startswith("kss ") or line.startswith("kss replay:")]


def _events() -> list[dict[str, object]]:
    return [{"at": i * 7, "runFor": 600, "create": pod(f"p{i}", "1")} for i in range(20)]


def test_kss_replay_prints_a_summary_and_writes_the_outputs(tmp_path: Path) -> None:
    w = _write(tmp_path / "w.yaml", _events())
    done = _kss("replay", str(w), "--out", str(tmp_path / "out"), "--interval", "5m", "--quiet")
    assert done.returncode == 0, done.stderr
    # 8 cpus: pods 0-7 bind as they arrive (every 7 s), 8-15 as 0-7 end (600-649 s), 16-19 at 1200-1221 s.
    # Figures as report.html writes them (kss_sim.figures): spans of time in their units, not bare seconds.
    assert done.stdout.splitlines()[0].startswith("replayed cli: 20 pods over 30 min 21 s of virtual time in ")
    assert any(line.startswith("wait: p50 ") and line.endswith(" s") for line in done.stdout.splitlines())
    assert "scheduled 20, never scheduled 0" in done.stdout
    assert not _replay_lines(done.stderr)  # --quiet: no progress line
    summary = orjson.loads((tmp_path / "out" / "summary.json").read_bytes())
    assert (summary["pods"], summary["virtualSeconds"]) == (20, 1821)
    assert (tmp_path / "out" / "report.html").stat().st_size > 0
    rows = (tmp_path / "out" / "pods.csv").read_text().splitlines()
    assert len(rows) == 21


def test_kss_replay_twice_gives_the_same_files(tmp_path: Path) -> None:
    w = _write(tmp_path / "w.yaml", _events())
    for side in ("a", "b"):
        assert _kss("replay", str(w), "--out", str(tmp_path / side), "--quiet", "--seed", "3").returncode == 0
    for name in ("summary.json", "pods.csv", "timeseries.csv", "report.html"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert "wallSeconds" not in orjson.loads((tmp_path / "a" / "summary.json").read_bytes())


def test_kss_replay_until_stops_the_virtual_clock(tmp_path: Path) -> None:
    w = _write(tmp_path / "w.yaml", _events())
    done = _kss("replay", str(w), "--until", "1m", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "replayed cli: 9 pods over 1 min of virtual time" in done.stdout


def test_kss_replay_shows_progress_on_stderr(tmp_path: Path) -> None:
    w = _write(tmp_path / "w.yaml", _events())
    done = _kss("replay", str(w))
    assert done.returncode == 0
    assert done.stderr.strip().splitlines()[-1].startswith("day 0 00:30 · 20/20 pods placed")


def test_a_bad_workload_file_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kss.sigs.k8s.io/v1alpha1\nkind: TimedWorkload\nspec:\n  events:\n"
        "  - at: soon\n    create: {kind: Pod, metadata: {name: a}}\n"
        "  - at: 5\n    create: {metadata: {name: b}}\n"
    )
    done = _kss("replay", str(bad), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert _replay_lines(done.stderr) == [
        "kss replay: spec.events[0].at: 'soon' is not a duration (seconds, or e.g. 90s, 5m, 1h30m, 2d)",
        "kss replay: spec.events[1].create.kind: Required value",
    ]
    assert not (tmp_path / "out").exists()


def test_bad_options_exit_2_before_anything_runs(tmp_path: Path) -> None:
    w = _write(tmp_path / "w.yaml", _events())
    config = tmp_path / "c.yaml"
    config.write_text("profiles: [{schedulerName: default-scheduler, plugins: {score: {enabled: [{name: Nope}]}}}]\n")
    gates = ("--feature-gates", "Bogus=true")
    done = _kss("replay", str(w), "--until", "later", *gates, "--scheduler-config", str(config))
    assert done.returncode == 2
    lines = _replay_lines(done.stderr)
    assert lines[0] == "kss replay: --until: 'later' is not a duration (seconds, or e.g. 90s, 5m, 1h30m, 2d)"
    assert lines[1].startswith("kss replay: --feature-gates: unrecognized feature gate: Bogus")
    assert lines[2].startswith(f"kss replay: {config}: ") and "Nope" in lines[2]
    assert _kss("replay", str(tmp_path / "missing.yaml")).returncode == 2


def test_kss_replay_records_the_run_in_a_results_database(tmp_path: Path) -> None:
    w = _write(tmp_path / "w.yaml", _events())
    db = tmp_path / "runs.db"
    done = _kss("replay", str(w), "--record-db", str(db), "--name", "first", "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "recorded as run 1"
    attempts_printed = int(done.stdout.split(" attempts,")[0].rsplit("(", 1)[1])
    import sqlite3

    with sqlite3.connect(db) as conn:
        ((name, status),) = conn.execute("select name, status from replay_runs").fetchall()
        (attempts,) = conn.execute("select count(*) from scheduling_attempts where run_id = 1").fetchone()
    assert (name, status, attempts) == ("first", "done", attempts_printed)
    assert attempts > 20  # every pod's attempts, the failed retries included


def test_ctrl_c_on_a_terminal_ends_the_progress_line_before_the_last_line(tmp_path: Path) -> None:
    """Ctrl-C in a terminal reaches kss replay and its results writer (one process group): the progress line, rewritten
    in place, is ended before "kss replay: interrupted", and the writer prints no traceback over it."""
    events = [{"at": i, "runFor": 600, "create": pod(f"p{i}", "1")} for i in range(40_000)]
    w = _write(tmp_path / "w.yaml", events)
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [*KSS, "replay", str(w), "--record-db", str(tmp_path / "runs.db")],
        cwd=REPO,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while b"pods placed" not in seen and time.monotonic() < deadline:
            seen += _read_some(controller)
        assert b"pods placed" in seen, seen
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        assert proc.wait(timeout=60) == 130
        while chunk := _read_some(controller):
            seen += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(controller)
    lines = seen.decode().replace("\r\n", "\n").split("\n")
    shown = [line.rsplit("\r", 1)[-1] for line in lines if line]  # what a terminal shows of each line
    assert shown[-1] == "kss replay: interrupted", shown
    assert re.fullmatch(r"day \d+ \d\d:\d\d · [\d,]+/[\d,]+ pods placed · [\d,]+ pods/s *", shown[-2]), shown
    assert "Traceback" not in seen.decode()


def test_on_a_terminal_the_progress_line_ends_before_the_summary_and_the_recorded_run(tmp_path: Path) -> None:
    """A run to its end with --record-db on a terminal: the progress line, rewritten in place, is ended before the
    summary, and "recorded as run 1" is a line of its own (once they ran into each other)."""
    w = _write(tmp_path / "w.yaml", _events())
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [*KSS, "replay", str(w), "--record-db", str(tmp_path / "runs.db"), "--out", str(tmp_path / "out")],
        cwd=REPO,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    seen = b""
    try:
        assert proc.wait(timeout=120) == 0
        while chunk := _read_some(controller):
            seen += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(controller)
    lines = seen.decode().replace("\r\n", "\n").split("\n")
    shown = [line.rsplit("\r", 1)[-1].rstrip() for line in lines if line]  # what a terminal shows of each line
    shown = [line for line in shown if not line.startswith("kss ")]  # other commands' registration notes
    assert shown[0] == "day 0 00:30 · 20/20 pods placed · " + shown[0].rsplit(" · ", 1)[-1], shown
    assert shown[1].startswith("replayed cli: 20 pods over 30 min 21 s of virtual time"), shown
    assert shown[-1] == "recorded as run 1", shown
    assert all("pods placed" not in line for line in shown[1:]), shown


def _read_some(fd: int) -> bytes:
    """What the terminal shows next (b"" once it is closed or after a second of quiet)."""
    ready, _, _ = select.select([fd], [], [], 1.0)
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: every writer of the terminal is gone
        return b""
