"""Stepped controllers benchmark: the workload controllers attached to an in-memory store and settled at each
virtual instant, as a replay would drive them (``kss_sim/controllers/stepped.py``).

Usage: ``.venv/bin/python bench/stepped_controllers.py [--replicas N ...] [--bystanders M]``.
One Deployment of N replicas is created and settled; then its pods start one per instant (bound, Running and Ready,
then a settle), as pods bound at different virtual times do. Prints the seconds of each phase and the cost per
started pod (wall, and this process's CPU: steadier on a shared machine). The ReplicaSet's reconcile reads its own
pods, so that cost grows with N (as upstream's sync does). ``--bystanders M`` first creates M bare pods (no
controller, labels no selector matches) in the same namespace, as a replay's trace pods are: a reconcile that lists
the namespace pays for them, one that reads its own pods and the orphans its selector may match does not.
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
from tests.controllers.workloads import FakeClock, deployment, template  # noqa: E402


def run(replicas: int, bystanders: int) -> None:
    """``bystanders`` bare pods, then one Deployment of ``replicas`` created and its pods started one instant
    each; prints the timings."""
    clock = FakeClock()
    store = ClusterStore(None, clock=clock)
    for index in range(bystanders):
        bare = template({"app": f"bystander-{index % 100}"})
        store.create(
            "Pod",
            {"apiVersion": "v1", "kind": "Pod", **bare, "metadata": {"name": f"bystander-{index}", **bare["metadata"]}},
        )
    controllers = SteppedControllers([c(store, clock=clock) for c in WORKLOAD_CONTROLLERS])
    controllers.attach()
    assert controllers.settle()
    started = time.perf_counter()
    store.create("Deployment", deployment("web", replicas, {"app": "web"}))
    assert controllers.settle()
    created = time.perf_counter()
    cpu_before = time.process_time()
    for started_pod in store.list("Pod", "default", label_selector="app=web")[0]:
        clock.advance(1)
        name = started_pod["metadata"]["name"]
        store.bind_pod("default", name, "node-a")
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": clock().strftime("%Y-%m-%dT%H:%M:%SZ")}
        status = {"phase": "Running", "conditions": [ready]}
        store.merge_pod_status("default", name, status, resource_version=None, manager="kubelet")
        assert controllers.settle()
    done = time.perf_counter()
    cpu = time.process_time() - cpu_before
    controllers.detach()
    print(
        f"replicas {replicas}, bystanders {bystanders}: create {created - started:.2f}s, start one per instant "
        f"{done - created:.2f}s ({(done - created) / replicas * 1000:.2f} ms per started pod; "
        f"CPU {cpu / replicas * 1000:.2f} ms)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--bystanders", type=int, default=0, help="bare pods in the namespace beforehand")
    args = parser.parse_args()
    for replicas in args.replicas:
        run(replicas, args.bystanders)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
