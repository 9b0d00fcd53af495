"""kss serve clears, through the API, the nominations a preemptor takes over (ClearNominatedNodeName), and the
nominated pod's update requeues the pods its nomination kept out of the node (hasNominatedNodeNameChanged)."""

from __future__ import annotations

import time

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.engine_host.scheduler_thread import SchedulerService
from kss_sim.scheduler.record import Attempt
from tests.scheduler.factories import make_node, make_pod


def _pod(store: ClusterStore, name: str, priority: int, cpu: str, node_name: str | None = None) -> None:
    """A pod of the PriorityClass ``p<priority>`` (created with it: priority admission computes the value)."""
    if store.get("PriorityClass", None, f"p{priority}") is None:
        store.create(
            "PriorityClass",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"p{priority}"},
                "value": priority,
            },
        )
    spec = {"priorityClassName": f"p{priority}"}
    store.create("Pod", make_pod(name=name, node_name=node_name, requests={"cpu": cpu}, spec=spec), "default")


def test_a_cleared_nomination_is_written_and_requeues_the_pods_it_kept_out(store: ClusterStore) -> None:
    attempts: list[Attempt] = []
    scheduler = SchedulerService(store, on_attempt=attempts.append)
    scheduler.start()
    try:
        store.create("Node", make_node(name="n1", allocatable={"cpu": "2"}))
        # No kubelet here: the victim, once deleted, stays terminating and holds its node.
        _pod(store, "victim", 0, "2", node_name="n1")
        _pod(store, "nominee", 5, "2")
        assert scheduler.wait_idle(10.0)
        nominee = store.get("Pod", "default", "nominee")
        assert nominee is not None and nominee["status"].get("nominatedNodeName") == "n1"
        _pod(store, "low", 1, "1")
        assert scheduler.wait_idle(10.0)
        assert [a.pod for a in attempts].count("default/low") == 1

        _pod(store, "high", 10, "2")

        deadline = time.monotonic() + 10.0
        while [a.pod for a in attempts].count("default/low") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        nominee = store.get("Pod", "default", "nominee")
        assert nominee is not None and "nominatedNodeName" not in nominee["status"]
        high = store.get("Pod", "default", "high")
        assert high is not None and high["status"].get("nominatedNodeName") == "n1"
        assert [a.pod for a in attempts].count("default/low") == 2, "low tried again at once, not at the 5 min flush"
    finally:
        scheduler.stop()
