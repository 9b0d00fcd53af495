"""Trace benchmark: schedule the Alibaba GPU trace (1,213 nodes, 7,064 pods, file order) from scratch, offline.

Usage: ``.venv/bin/python bench/trace.py [--nodes FILE] [--pods FILE] [--record] [--profile] [--save F] [--expect F]``.
Golden rules (as ``kss simulate``): every node evaluated, ties by node name, placements only unless ``--record``.
Prints wall time, pods/s, peak RSS and a digest of the placements.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import yaml
from _common import WORKLOADS, check, machine, parser, run

TRACE = WORKLOADS / "alibaba-gpu-trace"


def load_yaml(path: Path) -> list[dict[str, Any]]:
    """Every object of a multi-document YAML file."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open() as f:
        return [d for d in yaml.load_all(f, Loader=loader) if d]


def scenario(nodes_path: Path, pods_path: Path) -> dict[str, Any]:
    """Nodes as they are, every pod pending (namespace ``paib-gpu`` present), in file order."""
    nodes = load_yaml(nodes_path)
    pods = load_yaml(pods_path)
    for p in pods:
        meta = p.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{meta.get('namespace', 'default')}-{meta.get('name')}")
        spec = p.setdefault("spec", {})
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("priority", 0)
    namespaces = sorted({(p.get("metadata") or {}).get("namespace") or "default" for p in pods})
    return {
        "meta": {"name": "alibaba-trace", "family": "trace"},
        "nodes": nodes,
        "pending": pods,
        "namespaces": [{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": n}} for n in namespaces],
    }


def main() -> int:
    p = parser(__doc__)
    p.add_argument("--nodes", type=Path, default=TRACE / "nodes-1200.yaml")
    p.add_argument("--pods", type=Path, default=TRACE / "pods-1200.yaml")
    args = p.parse_args()
    print(machine())
    t0 = time.perf_counter()
    sc = scenario(args.nodes, args.pods)
    print(f"loaded {len(sc['nodes'])} nodes, {len(sc['pending'])} pods in {time.perf_counter() - t0:.2f} s")
    cpu = time.process_time()
    res = run("trace", sc, args)
    print(f"CPU {time.process_time() - cpu:.2f} s (scheduling process)")
    return check([res], args)


if __name__ == "__main__":
    sys.exit(main())
