"""The engine's cost per pod on a production-sized cluster, without the server: ``bench/serve_big.py``'s nodes
and pods, the cycle as ``kss serve`` runs it (every plugin recorded, random tie-breaks) and each attempt's results row.

Usage: ``.venv/bin/python bench/big_cycle.py [--nodes 5000] [--bound 20000] [--pods 300]``.
Adds the nodes to a scheduler cache one by one (as ``kss serve``'s scheduler takes them in; timed), binds ``--bound``
pods of the same mix spread over them, then schedules ``--pods`` more one at a time (each assumed where it goes) and
builds each attempt's row (``kss_sim.results.rows.attempt_row``). Prints the seconds to add the nodes and the ms per pod
of the cycle and of the row. ``PYTHONPATH=<another tree>`` measures that tree's ``app`` (before/after).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serve_big import GPU_EVERY, node_object, pod_objects

import kss_sim
from kss_sim.results.rows import attempt_row
from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import PodActions, Status, success
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_profiles


class _NoActions(PodActions):
    """The engine's PodActions with nothing behind them (no binding cycle runs here)."""

    def bind(self, pod: PodInfo, node_name: str) -> Status:
        return success()

    def delete_victim(self, victim: PodInfo, preemptor: PodInfo) -> Status:
        return success()

    def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        return None


def main() -> int:
    """Build the cluster, schedule the pods, print the figures."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--bound", type=int, default=20000, help="pods already bound (20000)")
    p.add_argument("--pods", type=int, default=300, help="pods scheduled and timed (300)")
    args = p.parse_args()
    cache = SchedulerCache()
    t0 = time.perf_counter()
    for i in range(args.nodes):
        cache.add_node(node_object(i))
    t_nodes = time.perf_counter() - t0
    pods = pod_objects(args.bound + args.pods, 1)
    plain = [i for i in range(args.nodes) if i % GPU_EVERY != GPU_EVERY - 1]
    gpu = [i for i in range(args.nodes) if i % GPU_EVERY == GPU_EVERY - 1]
    for k, pod in enumerate(pods[: args.bound]):
        pool = gpu if pod["metadata"]["labels"]["tier"] == "gpu" else plain
        pod["spec"]["nodeName"] = f"node-{pool[(k * 7919) % len(pool)]:05d}"
        pod["metadata"]["uid"] = f"bound-{k}"
        cache.add_pod(PodInfo(pod))
    _, frameworks = build_profiles(
        parse_config(None, {}),
        ClusterObjects(),
        _NoActions(),
        nominated={},
        activator=lambda pods: None,
        feature_gates={},
    )
    scheduler = Scheduler(frameworks, cache.snapshot, percentage_of_nodes_to_score=0, seed=0, cache=cache)
    options = ScheduleOptions(record=True, tie_break="random", run_binding_cycle=False)
    cycle = row = 0.0
    scheduled = 0
    for k, pod in enumerate(pods[args.bound :]):
        pod["metadata"]["uid"] = f"new-{k}"
        t1 = time.perf_counter()
        att = scheduler.schedule_one(PodInfo(pod), 1, options)
        t2 = time.perf_counter()
        attempt_row(
            att,
            namespace=pod["metadata"]["namespace"],
            pod_name=pod["metadata"]["name"],
            pod_uid="u",
            queued_seconds=0.0,
        )
        row += time.perf_counter() - t2
        cycle += t2 - t1
        scheduled += att.result == "scheduled"
    print(
        f"{Path(kss_sim.__file__).parent.parent}: {args.nodes} nodes added in {t_nodes:.1f} s; {args.bound} bound; "
        f"{args.pods} pods ({scheduled} scheduled): cycle {cycle / args.pods * 1e3:.2f} ms, "
        f"row {row / args.pods * 1e3:.2f} ms per pod"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
