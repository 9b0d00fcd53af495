"""Basic benchmark (scheduler_perf SchedulingBasic shape): 5,000 nodes, 10,000 pods with requests.

Nodes: 4 CPU, 32Gi, 110 pods, three zones. Pods: one container requesting 100m CPU and 500Mi. Runs the default
configuration (node sampling: percentageOfNodesToScore 0, adaptive) and then percentageOfNodesToScore 100.
Usage: ``.venv/bin/python bench/basic.py [--nodes N] [--pods N] [--only sampling|all] [--record] [--profile]
[--save F] [--expect F] [--per-node]``; ``--per-node`` runs the per-node reference loop instead of the batch path.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import Result, check, machine, node, parser, pod, run


def scenario(num_nodes: int, num_pods: int, percentage: int | None) -> dict[str, Any]:
    """The cluster and the pending pods; ``percentage`` None leaves the configuration at its defaults."""
    nodes = [
        node(
            f"node-{i:05d}",
            {"topology.kubernetes.io/zone": f"zone-{i % 3}"},
            {"cpu": "4", "memory": "32Gi", "pods": "110"},
        )
        for i in range(num_nodes)
    ]
    pods = [pod(f"pod-{i:05d}", {"cpu": "100m", "memory": "500Mi"}) for i in range(num_pods)]
    sc: dict[str, Any] = {"meta": {"name": "basic"}, "nodes": nodes, "pending": pods}
    config: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    if percentage is not None:
        config["percentageOfNodesToScore"] = percentage
    sc["config"] = config
    return sc


def main() -> int:
    p = parser(__doc__)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--only", choices=("sampling", "all"))
    args = p.parse_args()
    print(machine())
    results: list[Result] = []
    if args.only in (None, "sampling"):
        results.append(run("basic-sampling", scenario(args.nodes, args.pods, None), args, sampling=True))
    if args.only in (None, "all"):
        results.append(run("basic-all-nodes", scenario(args.nodes, args.pods, 100), args, sampling=True))
    return check(results, args)


if __name__ == "__main__":
    sys.exit(main())
