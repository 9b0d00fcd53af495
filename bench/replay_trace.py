"""Replay benchmark: the Alibaba GPU trace v2023 on the virtual clock (``kss replay`` without the reports).

Usage: ``.venv/bin/python bench/replay_trace.py [--pods default|gpuspec33|multigpu50] [--form extended|dra]
[--limit N] [--record] [--profile] [--seed N]``.
Pods arrive at their creation times and run for deletion - scheduled time (app/replay/alibaba.py); the default
v1.35 profile. Prints wall time, attempts, pods/s, virtual days, peak RSS and a digest of the placements (equal
digests: equal decisions). ``--pods multigpu50`` is the filling cluster: 9,061 pods on 1,523 nodes, 1,973 never fit,
14,381 attempts, most of them failed ones that see every node rejected (docs/performance.md).
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kss_sim.replay.alibaba import load_trace_dir  # noqa: E402
from kss_sim.replay.engine import Replay  # noqa: E402
from kss_sim.replay.model import ReplayResult  # noqa: E402

TRACE = REPO.parent / "shared" / "workloads" / "alibaba-gpu-trace-v2023"


def digest(result: ReplayResult) -> str:
    """The placements and times of every pod, hashed."""
    h = hashlib.sha256()
    for p in result.pods:
        h.update(f"{p.key} {p.bound_at} {p.node} {p.attempts} {p.finished_at} {p.outcome}\n".encode())
    return h.hexdigest()[:16]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", default="default", help="pod list (default, gpuspec33, multigpu50)")
    p.add_argument("--form", default="extended", help="extended (nvidia.com/gpu) or dra")
    p.add_argument("--limit", type=int, default=None, help="only the first N pods")
    p.add_argument("--record", action="store_true", help="record every plugin's verdicts in every attempt")
    p.add_argument("--profile", action="store_true", help="run under pyinstrument and print the call tree")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    t0 = time.perf_counter()
    workload = load_trace_dir(TRACE, pods=args.pods, form=args.form, limit=args.limit)
    load_s = time.perf_counter() - t0
    run = Replay(workload, seed=args.seed, record=args.record)
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler()
        profiler.start()
    result = run.run()
    if profiler is not None:
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, show_all=False))
    pods = len(result.pods)
    placed = sum(1 for r in result.pods if r.bound_at is not None)
    print(f"machine: {platform.python_implementation()} {platform.python_version()}, {platform.machine()}")
    print(f"workload: {workload.name} ({len(workload.start)} starting objects, {len(workload.events)} events), "
          f"loaded in {load_s:.2f} s")  # fmt: skip
    print(f"replay: {result.wall_seconds:.2f} s wall, {result.virtual_seconds / 86400:.1f} virtual days, "
          f"record={args.record}")  # fmt: skip
    print(f"pods: {pods} arrived, {placed} placed, {result.attempts} attempts "
          f"({result.attempts / max(result.wall_seconds, 1e-9):.0f} attempts/s, "
          f"{pods / max(result.wall_seconds, 1e-9):.0f} pods/s)")  # fmt: skip
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"digest: {digest(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
