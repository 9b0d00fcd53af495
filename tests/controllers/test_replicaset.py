"""The ReplicaSet controller (app/controllers/replicaset.py) over an in-memory ClusterStore: pods created from the
template, scale down in upstream's ActivePodsWithRanks order, adoption and release, status with minReadySeconds on
the controller's clock, restarts that change nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.pod_ranking import POD_DELETION_COST, pods_to_delete
from kss_sim.controllers.replicaset import ReplicaSetController
from kss_sim.kube.objects import Obj
from tests.cluster.factories import pod
from tests.controllers.workloads import FakeClock, make_ready, pods_of, replica_set, set_phase

LABELS = {"app": "web"}


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    return ClusterStore(None, clock=clock)


@pytest.fixture
def rsc(store: ClusterStore, clock: FakeClock) -> Iterator[ReplicaSetController]:
    controller = ReplicaSetController(store, clock=clock)
    controller.start()
    yield controller
    controller.stop()


def settle(controller: ReplicaSetController) -> None:
    assert controller.wait_idle(), "the controller did not settle"


def scale(store: ClusterStore, name: str, replicas: int) -> None:
    store.patch("ReplicaSet", "default", name, {"spec": {"replicas": replicas}}, "merge")


def status(store: ClusterStore, name: str) -> Obj:
    rs = store.get("ReplicaSet", "default", name)
    assert rs is not None
    return dict(rs.get("status") or {})


def names(pods: list[Obj]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


def test_creates_replicas_from_the_template_unbound_with_the_controller_reference(
    store: ClusterStore, rsc: ReplicaSetController
) -> None:
    rs = store.create("ReplicaSet", replica_set("web", 3, LABELS))
    settle(rsc)
    pods = pods_of(store, rs)
    assert len(pods) == 3
    for p in pods:
        assert p["metadata"]["name"].startswith("web-") and len(p["metadata"]["name"]) == len("web-") + 5
        assert p["metadata"]["generateName"] == "web-"
        assert p["metadata"]["labels"] == LABELS
        (ref,) = p["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web",
            "uid": rs["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert not p["spec"].get("nodeName")  # the scheduler places them
    assert status(store, "web") == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "terminatingReplicas": 0,
        "observedGeneration": 1,
    }
    events, _ = store.list("Event", "default")
    created = sorted(e["message"] for e in events if e["reason"] == "SuccessfulCreate")
    assert created == sorted(f"Created pod: {n}" for n in names(pods))
    assert {e["source"]["component"] for e in events} == {"replicaset-controller"}


def test_ready_and_available_follow_the_pods_and_min_ready_seconds_on_the_clock(
    store: ClusterStore, rsc: ReplicaSetController, clock: FakeClock
) -> None:
    rs = store.create("ReplicaSet", replica_set("web", 2, LABELS, minReadySeconds=30))
    settle(rsc)
    first, second = pods_of(store, rs)
    make_ready(store, first, at=clock.now)
    settle(rsc)
    assert status(store, "web")["readyReplicas"] == 1
    assert "availableReplicas" not in status(store, "web")
    clock.advance(30)  # exactly minReadySeconds: not yet (strictly after)
    rsc.poke()
    settle(rsc)
    assert "availableReplicas" not in status(store, "web")
    clock.advance(1)
    rsc.poke()
    settle(rsc)
    assert status(store, "web")["availableReplicas"] == 1  # the timer fired without any pod change
    make_ready(store, second, at=clock.now)
    settle(rsc)
    assert status(store, "web")["readyReplicas"] == 2 and status(store, "web")["availableReplicas"] == 1


def test_scale_down_deletes_in_active_pods_with_ranks_order(
    store: ClusterStore, rsc: ReplicaSetController, clock: FakeClock
) -> None:
    rs = store.create("ReplicaSet", replica_set("web", 6, LABELS))
    settle(rsc)
    pods = sorted(pods_of(store, rs), key=lambda p: p["metadata"]["name"])
    unassigned, pending, unknown, not_ready, ready_new, ready_old = pods
    set_phase(store, pending, "Pending", node="node-a")
    set_phase(store, unknown, "Unknown", node="node-b")
    set_phase(store, not_ready, "Running", node="node-c")
    make_ready(store, ready_old, node="node-d", at=clock.now - timedelta(hours=5))
    make_ready(store, ready_new, node="node-e", at=clock.now - timedelta(seconds=10))
    settle(rsc)
    order = [unassigned, pending, unknown, not_ready, ready_new, ready_old]
    for step in range(5, 0, -1):
        scale(store, "web", step)
        settle(rsc)
        expected_gone = order[: 6 - step]
        active = [p for p in pods_of(store, rs) if not p["metadata"].get("deletionTimestamp")]
        assert names(active) == names(order) - names(expected_gone), f"at {step} replicas"
    # The bound ones terminate gracefully (no kubelet here to end them); the unassigned one went at once.
    assert names(pods_of(store, rs)) == names(order[1:])
    events, _ = store.list("Event", "default")
    deleted = [e["message"] for e in sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))]
    assert [m for m in deleted if m.startswith("Deleted")] == [
        f"Deleted pod: {p['metadata']['name']}" for p in order[:5]
    ]


def test_more_pods_of_the_set_on_a_node_go_first_then_restarts_then_newer(clock: FakeClock) -> None:
    def ready_pod(name: str, node: str, *, restarts: int = 0, created_hours_ago: float = 1) -> Obj:
        body = pod(name, namespace="default", node_name=node)
        body["metadata"]["uid"] = name
        body["metadata"]["creationTimestamp"] = (clock.now - timedelta(hours=created_hours_ago)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        since = (clock.now - timedelta(hours=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body["status"] = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": since}],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        }
        return body

    crowded = ready_pod("crowded", "n1")
    neighbour = ready_pod("neighbour", "n1")
    alone = ready_pod("alone", "n2", created_hours_ago=50)
    restarted = ready_pod("restarted", "n3", restarts=4)
    newer = ready_pod("newer", "n4", created_hours_ago=1)
    older = ready_pod("older", "n5", created_hours_ago=100)
    candidates = [older, alone, newer, crowded, restarted]
    related = [*candidates, neighbour]
    ranked = pods_to_delete(candidates, related, 4, clock.now)
    assert [p["metadata"]["name"] for p in ranked] == ["crowded", "restarted", "newer", "alone"]
    # Ages within the same power of two tie; the uid decides (LogarithmicScaleDown).
    close = ready_pod("b-close", "n6", created_hours_ago=1.2)
    assert [p["metadata"]["name"] for p in pods_to_delete([close, newer], [], 1, clock.now)] == ["b-close"]
    # A lower pod-deletion-cost goes first, whatever else.
    older["metadata"]["annotations"] = {POD_DELETION_COST: "-5"}
    assert pods_to_delete(candidates, related, 1, clock.now)[0] is older


def test_adopts_matching_orphans_and_releases_pods_that_stop_matching(
    store: ClusterStore, rsc: ReplicaSetController
) -> None:
    store.create("Pod", pod("orphan", namespace="default", labels=LABELS))
    store.create("Pod", pod("stranger", namespace="default", labels={"app": "other"}))
    rs = store.create("ReplicaSet", replica_set("web", 2, LABELS))
    settle(rsc)
    owned = pods_of(store, rs)
    assert len(owned) == 2 and "orphan" in names(owned)  # adopted, so only one was created
    assert not pods_of(store, rs) or "stranger" not in names(owned)
    store.patch("Pod", "default", "orphan", {"metadata": {"labels": {"app": "moved"}}}, "merge")
    settle(rsc)
    released = store.get("Pod", "default", "orphan")
    assert released is not None and not released["metadata"].get("ownerReferences")
    owned = pods_of(store, rs)
    assert len(owned) == 2 and "orphan" not in names(owned)  # a replacement was made
    # A pod another controller owns is left alone even when it matches.
    taken = pod("taken", namespace="default", labels=LABELS)
    taken["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "other-uid", "controller": True}
    ]
    store.create("Pod", taken)
    settle(rsc)
    assert len(pods_of(store, rs)) == 2 and len(pods_of(store, "other-uid")) == 1


def test_a_restart_reconciles_everything_and_changes_nothing_that_is_right(
    store: ClusterStore, clock: FakeClock
) -> None:
    first = ReplicaSetController(store, clock=clock)
    first.start()
    rs = store.create("ReplicaSet", replica_set("web", 3, LABELS))
    settle(first)
    for p in pods_of(store, rs):
        make_ready(store, p, at=clock.now)
    settle(first)
    first.stop()
    version = store.resource_version
    second = ReplicaSetController(store, clock=clock)
    second.start()
    try:
        settle(second)
        assert store.resource_version == version
        # While stopped, a pod was deleted: the restart notices and replaces it.
        second.stop()
        victim = pods_of(store, rs)[0]
        store.delete("Pod", "default", victim["metadata"]["name"])
        second.start()
        settle(second)
        assert len(pods_of(store, rs)) == 3 and victim["metadata"]["name"] not in names(pods_of(store, rs))
    finally:
        second.stop()


def test_a_template_the_api_refuses_is_a_replica_failure(store: ClusterStore, rsc: ReplicaSetController) -> None:
    body = replica_set("bad", 2, LABELS)
    body["spec"]["template"]["spec"]["priorityClassName"] = "missing"  # pod admission refuses it, not the RS
    store.create("ReplicaSet", body)
    settle(rsc)
    current = status(store, "bad")
    (condition,) = current["conditions"]
    assert condition["type"] == "ReplicaFailure" and condition["reason"] == "FailedCreate"
    assert current["replicas"] == 0
    events, _ = store.list("Event", "default")
    assert any(e["reason"] == "FailedCreate" and e["message"].startswith("Error creating: ") for e in events)
