"""Shared helpers of the engine benchmarks: scenario building, one timed offline run, the figures printed.

Each benchmark builds a scenario in memory (golden format: ``nodes``, ``pending``, optional ``config``) and runs
the engine on it as ``kss simulate --detail placements`` does (``ScenarioRun`` without recording), unless
``--record`` asks for the full per-plugin record of every attempt.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import platform
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kss_sim.kube.versions import kube_version, versions_help  # noqa: E402
from kss_sim.simulation.runner import ScenarioRun  # noqa: E402

WORKLOADS = REPO.parent / "shared" / "workloads"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def parser(description: str | None) -> argparse.ArgumentParser:
    """Options every benchmark takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--profile", action="store_true", help="run under pyinstrument and print the call tree")
    p.add_argument("--record", action="store_true", help="record every plugin on every node (as --detail full)")
    p.add_argument("--save", type=Path, help="write the placements (pod -> node) to this JSON file")
    p.add_argument("--expect", type=Path, help="compare the placements with a file written by --save")
    p.add_argument("--per-node", action="store_true", help="the per-node reference loop instead of the batch path")
    p.add_argument("--kube-version", help=f"the Kubernetes version to schedule as: {versions_help()} (default: kss's)")
    return p


def node(name: str, labels: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    """A Node as the API server stores it."""
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "uid": f"uid-node-{name}", "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"capacity": dict(allocatable), "allocatable": dict(allocatable)},
    }


def pod(name: str, requests: dict[str, str], *, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A pending Pod with one container, as the API server stores it (defaults applied)."""
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": dict(labels or {})},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": requests}}],
            "schedulerName": "default-scheduler",
            "priority": 0,
            **spec,
        },
        "status": {"phase": "Pending"},
    }


class Result:
    """One timed run: attempts, seconds, peak memory."""

    def __init__(self, name: str, attempts: list[Any], seconds: float) -> None:
        self.name = name
        self.attempts = attempts
        self.seconds = seconds
        self.rss_mb = peak_rss_mb()
        self.pods = sum(1 for a, _ in attempts if a.attempt == 1)
        self.scheduled = sum(1 for a, _ in attempts if a.result == "scheduled")

    def placements(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for att, _ in self.attempts:
            out[att.pod] = att.bound_to or (f"nominated:{att.nominated_node}" if att.nominated_node else None)
        return out

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.placements(), sort_keys=True).encode()).hexdigest()[:16]

    def line(self) -> str:
        return (
            f"{self.name}: {self.pods} pods ({self.scheduled} scheduled) in {self.seconds:.2f} s = "
            f"{self.pods / self.seconds:,.0f} pods/s; peak RSS {self.rss_mb:,.0f} MB; placements {self.digest()}"
        )


def run(
    name: str,
    scenario: dict[str, Any],
    args: argparse.Namespace,
    *,
    sampling: bool = False,
) -> Result:
    """Schedule the scenario's pending pods (file order) and time it; sampling keeps percentageOfNodesToScore."""
    scenario = dict(scenario)
    meta = dict(scenario.get("meta") or {})
    if sampling:
        meta["family"] = "sampling"  # ScenarioRun applies the configured percentageOfNodesToScore then
    scenario["meta"] = meta
    gc.collect()
    start = time.perf_counter()
    version = kube_version(args.kube_version) if getattr(args, "kube_version", None) else None
    sr = ScenarioRun(scenario, record=args.record, kube_version=version)
    if args.per_node:
        opts = sr.options()
        opts.batch = False
        sr.options = lambda: opts  # type: ignore[method-assign]
    build = time.perf_counter() - start
    runner: Callable[[], list[Any]] = sr.run
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
        attempts = runner()
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, show_all=False))
    else:
        attempts = runner()
    seconds = time.perf_counter() - start
    res = Result(name, attempts, seconds)
    print(f"{res.line()} (setup {build:.2f} s)")
    return res


def check(results: list[Result], args: argparse.Namespace) -> int:
    """Save or compare placements; non-zero exit when they differ from ``--expect``."""
    placements = {r.name: r.placements() for r in results}
    if args.save:
        args.save.write_text(json.dumps(placements, sort_keys=True))
        print(f"placements saved to {args.save}")
    if args.expect:
        want = json.loads(args.expect.read_text())
        bad = 0
        for name, got in placements.items():
            ref = want.get(name)
            if ref is None:
                print(f"{name}: no reference placements")
                continue
            diff = [k for k in ref if ref[k] != got.get(k)]
            if diff:
                bad += 1
                print(f"{name}: {len(diff)} placements differ, first {diff[0]}: {ref[diff[0]]} != {got.get(diff[0])}")
            else:
                print(f"{name}: placements equal to the reference ({len(ref)} pods)")
        return 1 if bad else 0
    return 0


def machine() -> str:
    """The interpreter and the machine, for the report."""
    import os

    return f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs"
