"""The scheduling cycle in ``kss serve`` against the offline one: thread CPU per ``Scheduler.schedule_one``.

Usage: ``.venv/bin/python bench/serve_cycle.py [--pods N] [--rounds R] [--modes offline,serve,serve-all]``.

Same trace (the 1,213-node / 7,064-pod Alibaba trace of ``bench/serve_trace.py``, file order), same process, modes
alternating round by round so that a shared machine's load falls on each alike:

- ``offline``: ``kss simulate``'s loop (``ScenarioRun``, every attempt recorded, ties by name).
- ``serve``: the engine host of ``kss serve`` (``SchedulerService``) on an in-memory store (no HTTP, no SQL),
  every pod created through ``ClusterStore.create`` before the service starts, the kubelet on, plugin metrics fed
  to the server's Prometheus registry and sampled as ``kss serve`` samples them.
- ``serve-all``: the same with every cycle's plugin runs timed and observed (the sample at 100 %).
- ``serve-nometrics``: the same with no plugin observer at all.
- ``serve-nokubelet``: ``serve`` without the kubelet (no status write per bound pod, no thread to share the GIL with).

Each call's CPU is ``time.thread_time()`` around ``schedule_one`` on the thread that runs it; printed per mode: calls,
mean, median and p90 in ms, and the sum. The rest of each host's loop (taking changes in, the binding, Events,
the results rows) is outside the figure.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kss_sim.kube.objects import Obj

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trace import TRACE, scenario

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.kubelet import KubeletController
from kss_sim.engine_host.scheduler_thread import SchedulerService
from kss_sim.scheduler.cycle import Scheduler
from kss_sim.server.gc_policy import SERVE_GC_THRESHOLDS
from kss_sim.server.metrics import Metrics
from kss_sim.simulation.runner import ScenarioRun, _fewer_collections

_calls: list[float] = []


def _timed(original: Callable[..., Any]) -> Callable[..., Any]:
    def schedule_one(self: Scheduler, *args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            _calls.append(time.thread_time() - started)

    return schedule_one


def run_offline(sc: Obj) -> None:
    """``kss simulate``'s loop over the scenario, every attempt recorded."""
    run = ScenarioRun(sc, record=True)
    with _fewer_collections():
        for _ in run.attempts():
            pass


def run_serve(sc: Obj, sample_percent: int | None, kubelet_on: bool = True) -> None:
    """The engine host on an in-memory store (with the kubelet unless ``kubelet_on`` is off); ``sample_percent``
    None: no plugin observer."""
    store = ClusterStore(None)
    for ns in sc["namespaces"]:
        store.create("Namespace", ns)
    for n in sc["nodes"]:
        store.create("Node", n)
    for p in sc["pending"]:
        store.create("Pod", p, p["metadata"].get("namespace") or "default")
    metrics = Metrics()
    scheduler = SchedulerService(
        store,
        seed=1,
        per_node_annotations_max_nodes=50,
        on_plugin=metrics.observe_plugin if sample_percent is not None else None,
        plugin_metrics_sample_percent=sample_percent if sample_percent is not None else 100,
    )
    kubelet = KubeletController(store)
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()  # as kss serve does at its start
    gc.set_threshold(*SERVE_GC_THRESHOLDS)
    try:
        if kubelet_on:
            kubelet.start()
        scheduler.start()
        if not scheduler.wait_idle(600.0):
            raise SystemExit("the scheduler did not settle")
    finally:
        scheduler.stop()
        kubelet.stop()
        gc.set_threshold(*before)
        gc.unfreeze()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=0, help="only the first N pods of the trace (0: all)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--modes", default="offline,serve,serve-all")
    args = p.parse_args()
    modes = args.modes.split(",")
    sc = scenario(TRACE / "nodes-1200.yaml", TRACE / "pods-1200.yaml")
    if args.pods:
        sc["pending"] = sc["pending"][: args.pods]
    Scheduler.schedule_one = _timed(Scheduler.schedule_one)  # type: ignore[method-assign]
    runners: dict[str, Callable[[], None]] = {
        "offline": lambda: run_offline(sc),
        "serve": lambda: run_serve(sc, 10),
        "serve-all": lambda: run_serve(sc, 100),
        "serve-nometrics": lambda: run_serve(sc, None),
        "serve-nokubelet": lambda: run_serve(sc, 10, kubelet_on=False),
    }
    per_mode: dict[str, list[float]] = {m: [] for m in modes}
    print(f"load average before: {os.getloadavg()}; {len(sc['nodes'])} nodes, {len(sc['pending'])} pods")
    for r in range(args.rounds):
        for mode in modes:
            _calls.clear()
            cpu = time.process_time()
            runners[mode]()
            calls = list(_calls)
            per_mode[mode].extend(calls)
            print(
                f"round {r + 1} {mode:>16}: {len(calls)} calls, mean {1e3 * statistics.fmean(calls):.3f} ms, "
                f"median {1e3 * statistics.median(calls):.3f} ms, sum {sum(calls):.2f} s "
                f"(process CPU {time.process_time() - cpu:.1f} s)",
                flush=True,
            )
    print(f"load average after: {os.getloadavg()}")
    for mode, calls in per_mode.items():
        calls.sort()
        print(
            f"{mode:>16}: {len(calls)} calls, mean {1e3 * statistics.fmean(calls):.3f} ms, "
            f"median {1e3 * calls[len(calls) // 2]:.3f} ms, p90 {1e3 * calls[int(len(calls) * 0.9)]:.3f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
