"""Recording benchmark: the trace scheduled placements-only, then with every attempt recorded into a database.

Usage: ``.venv/bin/python bench/record.py [--nodes FILE] [--pods FILE] [--db FILE] [--rounds N] [--profile]
[--only MODE]``.
The record run is what ``kss simulate --detail placements --record-db FILE`` does (every plugin's verdict on
every node and every score kept, encoded and inserted by the results writer process); its wall time includes
waiting for the writer to finish. Each run is its own process (peak RSS per mode: the scheduling process; the
writer's is printed apart); ``--rounds`` (5) alternate the modes. Prints each run's wall time, the overhead of
recording from the medians, the database size and peak RSS.
"""

from __future__ import annotations

import importlib.util
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from _common import REPO, Result, machine, parser, peak_rss_mb

# bench/trace.py by path: the name ``trace`` is also a standard library module.
_spec = importlib.util.spec_from_file_location("bench_trace", REPO / "bench" / "trace.py")
assert _spec is not None and _spec.loader is not None
_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_trace)
TRACE: Path = _trace.TRACE
scenario = _trace.scenario

MODES = ("placements", "record-db")


class _Placed(NamedTuple):
    pod: str
    attempt: int
    result: str
    bound_to: str | None
    nominated_node: str | None


def _children() -> resource.struct_rusage:
    return resource.getrusage(resource.RUSAGE_CHILDREN)


def start_recorder(mode: str, db: Path) -> Any:
    """The results writer of a record run (None for placements), started as ``kss simulate --record-db`` starts
    it: before the scenario is read, so that its process starts up while the scenario loads."""
    if mode != "record-db":
        return None
    from kss_sim.simulation.cli import _recorder

    db.unlink(missing_ok=True)
    return _recorder(str(db))


def run_mode(mode: str, sc: dict[str, Any], recorder: Any, db: Path, profile: bool) -> dict[str, Any]:
    """One timed run of ``mode`` in this process (``recorder``: ``start_recorder``'s)."""
    from kss_sim.simulation.runner import run_scenario

    attempts: list[Any] = []

    def on_attempt(att: Any, pod: Any) -> None:
        # What the digest needs, not the attempt (the run frees each attempt once it is written).
        attempts.append((_Placed(att.pod, att.attempt, att.result, att.bound_to, att.nominated_node), None))
        if recorder is not None:
            recorder.submit(att, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid)

    profiler = None
    if profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
    start = time.perf_counter()
    cpu = time.process_time()
    run_scenario(sc, "placements", record_all=recorder is not None, on_attempt=on_attempt)
    scheduled = time.perf_counter() - start
    if recorder is not None:
        recorder.stop()
        if recorder.errors:
            raise SystemExit(f"recording failed: {recorder.errors[0]}")
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    if profiler is not None:
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, show_all=False))
    res = Result(mode, attempts, seconds)
    return {
        "mode": mode,
        "seconds": seconds,
        "scheduling_seconds": scheduled,
        "cpu_seconds": cpu,
        # The writer process, ended by recorder.stop(): its CPU time (startup included) and peak RSS.
        "writer_cpu_seconds": _children().ru_utime + _children().ru_stime,
        "writer_rss_mb": _children().ru_maxrss / 1024.0,
        "pods": res.pods,
        "rss_mb": peak_rss_mb(),
        "digest": res.digest(),
        "db_bytes": db.stat().st_size if recorder is not None else 0,
    }


def main() -> int:
    p = parser(__doc__)
    p.add_argument("--nodes", type=Path, default=TRACE / "nodes-1200.yaml")
    p.add_argument("--pods", type=Path, default=TRACE / "pods-1200.yaml")
    p.add_argument("--db", type=Path, help="the results database to write (default: a temporary file)")
    p.add_argument("--only", choices=MODES, help="run one mode in this process")
    p.add_argument("--rounds", type=int, default=5, help="alternating runs of both modes (median taken)")
    p.add_argument("--json", action="store_true", help=argparse_hidden())
    args = p.parse_args()
    if args.only:
        db = args.db or Path(tempfile.gettempdir()) / "kss-bench-record.db"
        recorder = start_recorder(args.only, db)
        sc = scenario(args.nodes, args.pods)
        out = run_mode(args.only, sc, recorder, db, args.profile)
        print(json.dumps(out) if args.json else out)
        return 0
    print(machine())
    # Rounds alternate the two modes, so that drift on a shared machine touches both alike; the overhead is
    # taken from the medians (and shown per round).
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "results.db"
        for _ in range(args.rounds):
            for mode in MODES:
                cmd = [sys.executable, __file__, "--only", mode, "--json", "--nodes", str(args.nodes)]
                cmd += ["--pods", str(args.pods), "--db", str(db)]
                done = subprocess.run(cmd, check=True, capture_output=True, text=True)
                f = json.loads(done.stdout.strip().splitlines()[-1])
                runs[mode].append(f)
                writer = ""
                if f["writer_cpu_seconds"]:
                    writer = (
                        f"; writer process CPU {f['writer_cpu_seconds']:.2f} s, peak RSS {f['writer_rss_mb']:,.0f} MB"
                    )
                print(
                    f"{mode}: {f['pods']} pods in {f['seconds']:.2f} s (scheduling {f['scheduling_seconds']:.2f} s, "
                    f"CPU {f['cpu_seconds']:.2f} s) = {f['pods'] / f['seconds']:,.0f} pods/s; peak RSS "
                    f"{f['rss_mb']:,.0f} MB{writer}; placements {f['digest']}",
                    flush=True,
                )
    base = statistics.median(f["seconds"] for f in runs["placements"])
    rec = statistics.median(f["seconds"] for f in runs["record-db"])
    pairs = zip(runs["placements"], runs["record-db"], strict=True)
    rounds = [f"{(r['seconds'] / b['seconds'] - 1) * 100:+.0f} %" for b, r in pairs]
    fastest = min(f["seconds"] for f in runs["record-db"]) / min(f["seconds"] for f in runs["placements"]) - 1
    print(
        f"recording overhead: {(rec / base - 1) * 100:+.0f} % (medians of {args.rounds} rounds: {rec:.2f} s vs "
        f"{base:.2f} s; fastest runs {fastest * 100:+.0f} %; per round {', '.join(rounds)})"
    )
    last = runs["record-db"][-1]
    per_attempt = last["db_bytes"] / max(last["pods"], 1) / 1e3
    print(f"database size: {last['db_bytes'] / 1e6:,.1f} MB ({per_attempt:,.1f} KB/attempt)")
    if len({f["digest"] for fs in runs.values() for f in fs}) != 1:
        print("placements differ between the runs")
        return 1
    return 0


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
