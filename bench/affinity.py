"""Affinity benchmark: 5,000 nodes; 2,000 pods with required pod anti-affinity on the hostname, then (on a fresh
cluster) 5,000 pods with a zone topology spread constraint (maxSkew 1, DoNotSchedule).

Nodes as in bench/basic.py (4 CPU, 32Gi, 110 pods, three zones); default configuration (node sampling).
Usage: ``.venv/bin/python bench/affinity.py [--nodes N] [--anti N] [--spread N] [--only anti|spread] [--record]
[--profile] [--save F] [--expect F] [--per-node]``.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import Result, check, machine, node, parser, pod, run

REQUESTS = {"cpu": "100m", "memory": "500Mi"}


def nodes(num_nodes: int) -> list[dict[str, Any]]:
    return [
        node(
            f"node-{i:05d}",
            {"topology.kubernetes.io/zone": f"zone-{i % 3}"},
            {"cpu": "4", "memory": "32Gi", "pods": "110"},
        )
        for i in range(num_nodes)
    ]


def anti_affinity(num_nodes: int, num_pods: int) -> dict[str, Any]:
    """Pods that refuse to share a node with each other."""
    term = {"labelSelector": {"matchLabels": {"app": "anti"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    pods = [pod(f"anti-{i:05d}", REQUESTS, labels={"app": "anti"}, affinity=affinity) for i in range(num_pods)]
    return {"meta": {"name": "anti-affinity"}, "nodes": nodes(num_nodes), "pending": pods}


def spread(num_nodes: int, num_pods: int) -> dict[str, Any]:
    """Pods spread evenly over the zones."""
    constraint = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
    }
    pods = [
        pod(f"spread-{i:05d}", REQUESTS, labels={"app": "spread"}, topologySpreadConstraints=[constraint])
        for i in range(num_pods)
    ]
    return {"meta": {"name": "spread"}, "nodes": nodes(num_nodes), "pending": pods}


def main() -> int:
    p = parser(__doc__)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--anti", type=int, default=2000)
    p.add_argument("--spread", type=int, default=5000)
    p.add_argument("--only", choices=("anti", "spread"))
    args = p.parse_args()
    print(machine())
    results: list[Result] = []
    if args.only in (None, "anti"):
        results.append(run("anti-affinity", anti_affinity(args.nodes, args.anti), args, sampling=True))
    if args.only in (None, "spread"):
        results.append(run("topology-spread", spread(args.nodes, args.spread), args, sampling=True))
    return check(results, args)


if __name__ == "__main__":
    sys.exit(main())
