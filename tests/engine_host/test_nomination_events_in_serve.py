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


def test_a_preemptor_that_no_longer_finds_candidates_has_its_nomination_removed(store: ClusterStore) -> None:
    """handleSchedulingFailure with the PostFilter result of a preemption that found no candidate (an empty node,
    ModeOverride): the pod's status loses the nomination of an earlier cycle through the API, as kubectl sees it."""
    attempts: list[Attempt] = []
    scheduler = SchedulerService(store, on_attempt=attempts.append)
    scheduler.start()
    try:
        store.create("Node", make_node(name="n1", allocatable={"cpu": "2"}))
        _pod(store, "victim", 0, "2", node_name="n1")  # terminating once preempted: no kubelet finishes it
        _pod(store, "preemptor", 10, "2")
        assert scheduler.wait_idle(10.0)
        preemptor = store.get("Pod", "default", "preemptor")
        assert preemptor is not None and preemptor["status"].get("nominatedNodeName") == "n1"

        node = store.get("Node", None, "n1")
        assert node is not None
        node["spec"] = {**(node.get("spec") or {}), "taints": [{"key": "k", "effect": "NoSchedule"}]}
        store.update("Node", node)
        # A taint is not an event NodeResourcesFit, which rejected the preemptor, registers (queueing hints); its
        # allocatable grown is, and its hint queues the pod for it.
        node = store.get("Node", None, "n1")
        assert node is not None
        node["status"] = {**node["status"], "allocatable": {**node["status"]["allocatable"], "cpu": "3"}}
        store.update("Node", node, subresource="status")

        deadline = time.monotonic() + 10.0
        while [a.pod for a in attempts].count("default/preemptor") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert scheduler.wait_idle(10.0)
        last = [a for a in attempts if a.pod == "default/preemptor"][-1]
        assert last.result == "unschedulable" and last.nominated_node is None and last.postfilter_clears_nomination
        preemptor = store.get("Pod", "default", "preemptor")
        assert preemptor is not None and "nominatedNodeName" not in preemptor["status"]
        condition = next(c for c in preemptor["status"]["conditions"] if c["type"] == "PodScheduled")
        assert condition["reason"] == "Unschedulable" and "untolerated taint" in condition["message"]
    finally:
        scheduler.stop()
