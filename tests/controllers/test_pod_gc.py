"""Pod GC (app/controllers/pod_gc.py) over an in-memory store on a clock the tests move: a pod bound to a node
that does not exist goes after the quarantine (Failed, with the DisruptionTarget condition, the node looked up
again), a node that appears in time saves it; terminated pods above the threshold go oldest first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.pod_gc import PodGCController
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node, pod
from tests.controllers.workloads import FakeClock


def settle(loop: PodGCController) -> None:
    assert loop.wait_idle(), "the controller did not settle"


def tick(loop: PodGCController, clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    loop.poke()
    settle(loop)


def names(store: ClusterStore) -> list[str]:
    pods, _ = store.list("Pod", "default")
    return sorted(p["metadata"]["name"] for p in pods)


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    return store


@pytest.fixture
def gc(store: ClusterStore, clock: FakeClock) -> Iterator[PodGCController]:
    loop = PodGCController(store, clock=clock, terminated_pod_gc_threshold=2)
    yield loop
    loop.stop()


def test_a_pod_on_a_missing_node_goes_after_the_quarantine(
    store: ClusterStore, gc: PodGCController, clock: FakeClock
) -> None:
    store.create("Node", node("real"))
    store.create("Pod", pod("ghost", node_name="no-such-node"))
    store.create("Pod", pod("saved", node_name="late-node"))
    store.create("Pod", pod("fine", node_name="real"))
    store.create("Pod", pod("pending"))
    final: list[Obj] = []
    store.add_listener(
        lambda t, k, o: final.append(o) if t == "DELETED" and o["metadata"]["name"] == "ghost" else None, ("Pod",)
    )
    gc.start()
    settle(gc)
    tick(gc, clock, 39)
    assert names(store) == ["fine", "ghost", "pending", "saved"]
    store.create("Node", node("late-node"))
    settle(gc)
    tick(gc, clock, 1)
    assert names(store) == ["fine", "pending", "saved"]
    (gone,) = final
    assert gone["status"]["phase"] == "Failed"
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in gone["status"]["conditions"]] == [
        ("DisruptionTarget", "True", "DeletionByPodGC", "PodGC: node no longer exists")
    ]


def test_a_pod_bound_later_to_a_missing_node_and_a_restart_start_the_quarantine_afresh(
    store: ClusterStore, clock: FakeClock
) -> None:
    store.create("Pod", pod("ghost", node_name="gone"))
    first = PodGCController(store, clock=clock)
    first.start()
    settle(first)
    tick(first, clock, 30)
    first.stop()
    second = PodGCController(store, clock=clock)
    second.start()
    try:
        settle(second)
        store.create("Pod", pod("late"))
        store.bind_pod("default", "late", "gone")
        settle(second)
        tick(second, clock, 39)
        assert names(store) == ["ghost", "late"]
        tick(second, clock, 1)
        assert names(store) == []
    finally:
        second.stop()


def test_terminated_pods_above_the_threshold_go_oldest_first(
    store: ClusterStore, gc: PodGCController, clock: FakeClock
) -> None:
    store.create("Node", node("n1"))
    gc.start()
    for i in range(4):
        store.create("Pod", pod(f"p{i}", node_name="n1"))
        clock.advance(1)
    for i in (3, 0, 1):  # finished in another order than created
        store.merge_pod_status("default", f"p{i}", {"phase": "Succeeded"}, resource_version=None, manager="kubelet")
        settle(gc)
    assert names(store) == ["p1", "p2", "p3"]  # three terminated, threshold 2: p0, the oldest, went


def test_a_node_deleted_through_the_api_leaves_its_pods_to_be_force_deleted_after_the_quarantine(
    store: ClusterStore, gc: PodGCController, clock: FakeClock
) -> None:
    """kube-apiserver does not delete a Node's pods; the pod GC force-deletes them (grace period 0, however long
    their own) once the node has been missing 40 s. The store's own Node deletes still take the pods at once."""
    store.create("Node", node("doomed"))
    slow = pod("slow", node_name="doomed", terminationGracePeriodSeconds=600)
    store.create("Pod", slow)
    store.create("Pod", pod("fast", node_name="doomed"))
    gc.start()
    settle(gc)
    store.delete("Node", None, "doomed", options=DeleteOptions(graceful=True))
    settle(gc)
    tick(gc, clock, 39)
    assert names(store) == ["fast", "slow"]
    tick(gc, clock, 1)
    assert names(store) == []

    store.create("Node", node("internal"))
    store.create("Pod", pod("with-it", node_name="internal"))
    store.delete("Node", None, "internal")
    assert names(store) == []
