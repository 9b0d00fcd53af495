"""What managedFields cost on the store's write path: pod creates, the scheduler's status writes and Events.

Usage: ``.venv/bin/python bench/managed_fields.py [--pods 2000] [--rounds 5]``. An in-memory ``ClusterStore`` per
run; each round times the same writes with field tracking on and off (``track_update`` replaced by one that keeps
the entries), alternating so the machine's drift cancels, and prints the median µs per write of each and the
difference. A binding records no manager (as kube-apiserver's binding subresource), so it is not measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kss_sim.cluster.admission import managed_fields
from kss_sim.cluster.storage.store import ClusterStore


def pod(i: int) -> dict[str, Any]:
    """A pod as workload files have them: labels, one container with requests and a port."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{i}", "labels": {"app": "web", "shard": str(i % 7)}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "nginx:1.27",
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ]
        },
    }


def run(pods: int, tracked: bool) -> dict[str, float]:
    """µs per create, status write and Event create on a fresh store."""
    original = managed_fields.track_update
    if not tracked:
        managed_fields.track_update = lambda info, old, new, entries, *a, **k: entries  # type: ignore[assignment]
    try:
        store = ClusterStore(None)
        store.ensure_builtins()
        out: dict[str, float] = {}

        def timed(name: str, write: Callable[[int], Any]) -> None:
            start = time.perf_counter()
            for i in range(pods):
                write(i)
            out[name] = (time.perf_counter() - start) / pods * 1e6

        timed("create", lambda i: store.create("Pod", pod(i), "bench"))
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}

        def status(i: int) -> None:
            current = store.get("Pod", "bench", f"p-{i}")
            assert current is not None
            store.update_pod_status("bench", f"p-{i}", {**current["status"], "conditions": [condition]})

        timed("status", status)
        timed("event", lambda i: store.create_event(store.get("Pod", "bench", f"p-{i}") or {}, "Scheduled", f"m{i}"))
        return out
    finally:
        managed_fields.track_update = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    on: dict[str, list[float]] = {}
    off: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for tracked, sink in ((False, off), (True, on)):
            for name, value in run(args.pods, tracked).items():
                sink.setdefault(name, []).append(value)
    for name in on:
        a, b = statistics.median(off[name]), statistics.median(on[name])
        print(f"{name:7s} off {a:7.1f} µs  on {b:7.1f} µs  +{b - a:6.1f} µs ({(b - a) / a * 100:+.0f} %)")


if __name__ == "__main__":
    main()
