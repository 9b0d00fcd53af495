"""Recording cost per attempt, measured side by side: the trace scheduled three times at once, one attempt of
each run in turn, in one process.

Usage: ``.venv/bin/python bench/record_steps.py [--nodes FILE] [--pods FILE]``.
The runs: placements only; every attempt recorded but not written (the engine's record mode); recorded and handed
to the results writer process (as ``kss simulate --record-db``; a temporary database). Each attempt's CPU time
(``time.thread_time``) is added to its run: drift on a shared machine touches the three alike, so the differences
(the engine's record mode, the hand-off to the writer) stay steady where the wall times of separate runs
(``bench/record.py``) move by tens of percent. The three runs share the process's caches, which makes each a
little slower than alone.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import REPO, machine, parser

_spec = importlib.util.spec_from_file_location("bench_trace", REPO / "bench" / "trace.py")
assert _spec is not None and _spec.loader is not None
_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_trace)

RUNS = ("placements", "record", "record+writer")


def main() -> int:
    p = parser(__doc__)
    p.add_argument("--nodes", type=Path, default=_trace.TRACE / "nodes-1200.yaml")
    p.add_argument("--pods", type=Path, default=_trace.TRACE / "pods-1200.yaml")
    args = p.parse_args()
    from kss_sim.simulation.cli import _recorder
    from kss_sim.simulation.runner import ScenarioRun, _fewer_collections

    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        recorder = _recorder(str(Path(tmp) / "results.db"))
        sc = _trace.scenario(args.nodes, args.pods)
        runs = {name: ScenarioRun(sc, record=name != "placements") for name in RUNS}

        def submit(att: Any, pod: Any) -> None:
            recorder.submit(att, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid)

        runs["record+writer"].on_attempt = submit
        recorder.flush()  # the writer process is up before the clock starts
        steps: dict[str, Iterator[Any]] = {name: run.attempts() for name, run in runs.items()}
        cpu = dict.fromkeys(RUNS, 0.0)
        order = list(RUNS)
        attempts = 0
        with _fewer_collections():
            while True:
                order = order[1:] + order[:1]  # each run goes first in turn
                ended = False
                for name in order:
                    start = time.thread_time()
                    try:
                        next(steps[name])
                    except StopIteration:
                        ended = True
                    cpu[name] += time.thread_time() - start
                if ended:
                    break
                attempts += 1
        start = time.perf_counter()
        recorder.stop()
        waited = time.perf_counter() - start
        if recorder.errors:
            raise SystemExit(f"recording failed: {recorder.errors[0]}")
    base = cpu["placements"]
    print(f"{attempts} attempts; CPU per run: " + ", ".join(f"{name} {cpu[name]:.2f} s" for name in RUNS))
    for name, label in (("record", "record mode"), ("record+writer", "record mode and hand-off")):
        extra = cpu[name] - base
        print(f"{label}: +{extra / attempts * 1e6:.1f} us per attempt ({extra / base * 100:+.1f} % over placements)")
    handoff = (cpu["record+writer"] - cpu["record"]) / attempts * 1e6
    print(f"hand-off to the writer process: {handoff:.1f} us per attempt; end wait {waited * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
