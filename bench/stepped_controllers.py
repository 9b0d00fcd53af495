"""Stepped controllers benchmark: the workload controllers attached to an in-memory store and settled at each
virtual instant, as a replay would drive them (``kss_sim/controllers/stepped.py``).

Usage: ``.venv/bin/python bench/stepped_controllers.py [--replicas N ...]``.
One Deployment of N replicas is created and settled; then its pods start one per instant (bound, Running and Ready,
then a settle), as pods bound at different virtual times do. Prints the seconds of each phase and the cost per
started pod: a reconcile that reads every pod of the namespace makes that cost grow with N (the number to watch
before a replay drives the live controllers).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kss_sim.cluster.storage.store import ClusterStore  # noqa: E402
from kss_sim.controllers.manager import WORKLOAD_CONTROLLERS  # noqa: E402
from kss_sim.controllers.stepped import SteppedControllers  # noqa: E402
from tests.controllers.workloads import FakeClock, deployment  # noqa: E402


def run(replicas: int) -> None:
    """One Deployment of ``replicas`` created, then its pods started one instant each; prints the timings."""
    clock = FakeClock()
    store = ClusterStore(None, clock=clock)
    controllers = SteppedControllers([c(store, clock=clock) for c in WORKLOAD_CONTROLLERS])
    controllers.attach()
    started = time.perf_counter()
    store.create("Deployment", deployment("web", replicas, {"app": "web"}))
    assert controllers.settle()
    created = time.perf_counter()
    for pod in store.list("Pod", "default")[0]:
        clock.advance(1)
        name = pod["metadata"]["name"]
        store.bind_pod("default", name, "node-a")
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": clock().strftime("%Y-%m-%dT%H:%M:%SZ")}
        status = {"phase": "Running", "conditions": [ready]}
        store.merge_pod_status("default", name, status, resource_version=None, manager="kubelet")
        assert controllers.settle()
    done = time.perf_counter()
    controllers.detach()
    per_pod = (done - created) / replicas * 1000
    print(f"replicas {replicas}: create {created - started:.2f}s, start one per instant {done - created:.2f}s "
          f"({per_pod:.2f} ms per started pod)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[250, 500, 1000])
    args = parser.parse_args()
    for replicas in args.replicas:
        run(replicas)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
