"""The disruption controller (app/controllers/disruption.py) over an in-memory store: every PodDisruptionBudget's
status as upstream computes it (minAvailable / maxUnavailable, ints and percentages, the scale of the owning
ReplicaSet, Deployment or StatefulSet), the DisruptionAllowed condition, a failed sync's SyncFailed, unmanaged
pods and no pods, expired disruptedPods entries."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.disruption import DisruptionController
from kss_sim.kube.objects import Obj
from tests.controllers.workloads import FakeClock, deployment, make_ready, replica_set

LABELS = {"app": "web"}


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    return store


@pytest.fixture
def controller(store: ClusterStore, clock: FakeClock) -> Iterator[DisruptionController]:
    loop = DisruptionController(store, clock=clock)
    loop.start()
    yield loop
    loop.stop()


def settle(loop: DisruptionController) -> None:
    assert loop.wait_idle(), "the controller did not settle"


def pdb(name: str = "budget", **spec: Any) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": dict(LABELS)}, **spec},
    }


def owned_pods(store: ClusterStore, owner: Obj, count: int, *, ready: int) -> list[Obj]:
    """``count`` pods controlled by ``owner``, the first ``ready`` of them Ready."""
    made = []
    for i in range(count):
        ref = {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{owner['metadata']['name']}-{i}", "labels": dict(LABELS), "ownerReferences": [ref]},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
        }
        made.append(store.create("Pod", body, "default"))
        if i < ready:
            make_ready(store, made[-1], node=f"node-{i}")
    return made


def status(store: ClusterStore, name: str = "budget") -> Obj:
    got = store.get("PodDisruptionBudget", "default", name)
    assert got is not None
    return dict(got.get("status") or {})


def counts(store: ClusterStore, name: str = "budget") -> tuple[int, int, int, int]:
    s = status(store, name)
    return s["currentHealthy"], s["desiredHealthy"], s["expectedPods"], s["disruptionsAllowed"]


def allowed_condition(store: ClusterStore, name: str = "budget") -> tuple[str, str, str]:
    (condition,) = [c for c in status(store, name)["conditions"] if c["type"] == "DisruptionAllowed"]
    return condition["status"], condition["reason"], condition["message"]


def events(store: ClusterStore) -> list[tuple[str, str, str]]:
    found, _ = store.list("Event", "default")
    return sorted(
        (e["type"], e["reason"], e["message"]) for e in found if e["involvedObject"]["kind"] == "PodDisruptionBudget"
    )


def transition_time(store: ClusterStore) -> str:
    return str(next(c for c in status(store)["conditions"] if c["type"] == "DisruptionAllowed")["lastTransitionTime"])


def test_min_available_as_an_integer_counts_the_pods(
    store: ClusterStore, controller: DisruptionController, clock: FakeClock
) -> None:
    rs = store.create("ReplicaSet", replica_set("web", 3, LABELS))
    pods = owned_pods(store, rs, 3, ready=2)
    created = store.create("PodDisruptionBudget", pdb(minAvailable=2))
    settle(controller)
    assert counts(store) == (2, 2, 3, 0)
    assert allowed_condition(store) == ("False", "InsufficientPods", "")
    assert status(store)["observedGeneration"] == created["metadata"]["generation"]
    before = transition_time(store)
    clock.advance(10)
    make_ready(store, pods[2], node="node-2")
    settle(controller)
    assert counts(store) == (3, 2, 3, 1)
    assert allowed_condition(store) == ("True", "SufficientPods", "")
    turned = transition_time(store)
    assert turned != before
    clock.advance(10)
    store.patch("PodDisruptionBudget", "default", "budget", {"spec": {"minAvailable": 1}})
    settle(controller)
    assert counts(store) == (3, 1, 3, 2)
    assert status(store)["observedGeneration"] == 2
    assert transition_time(store) == turned  # still True: the transition time stays


def test_max_unavailable_and_percentages_use_the_owning_controllers_scale(
    store: ClusterStore, controller: DisruptionController
) -> None:
    d = store.create("Deployment", deployment("web", 4, LABELS))
    rs_body = replica_set("web-abc", 3, LABELS)
    rs_body["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": d["metadata"]["uid"], "controller": True}
    ]
    rs = store.create("ReplicaSet", rs_body)
    owned_pods(store, rs, 3, ready=3)
    store.create("PodDisruptionBudget", pdb("max", maxUnavailable="30%"))
    store.create("PodDisruptionBudget", pdb("min", minAvailable="50%"))
    settle(controller)
    # The Deployment's 4 replicas, not the ReplicaSet's 3 nor the 3 pods: 30 % of 4 rounds up to 2 unavailable.
    assert counts(store, "max") == (3, 2, 4, 1)
    assert counts(store, "min") == (3, 2, 4, 1)


def test_a_stateful_set_scale_and_unmanaged_pods(store: ClusterStore, controller: DisruptionController) -> None:
    sts = store.create(
        "StatefulSet",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {
                "replicas": 5,
                "serviceName": "db",
                "selector": {"matchLabels": dict(LABELS)},
                "template": {
                    "metadata": {"labels": dict(LABELS)},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        },
    )
    owned_pods(store, sts, 2, ready=2)
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "labels": dict(LABELS)}}
    bare["spec"] = {"containers": [{"name": "c", "image": "x"}]}
    make_ready(store, store.create("Pod", bare, "default"))
    store.create("PodDisruptionBudget", pdb(maxUnavailable=1))
    settle(controller)
    assert counts(store) == (3, 4, 5, 0)  # the bare pod is healthy but not expected
    assert [r for _, r, _ in events(store)] == ["UnmanagedPods"]
    assert "were found to be unmanaged" in events(store)[0][2]


def test_a_pod_of_a_controller_without_scale_fails_the_sync_safe(
    store: ClusterStore, controller: DisruptionController
) -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": dict(LABELS)},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    owned_pods(store, store.create("DaemonSet", ds), 2, ready=2)
    store.create("PodDisruptionBudget", pdb(maxUnavailable=1))
    settle(controller)
    assert status(store)["disruptionsAllowed"] == 0
    assert allowed_condition(store) == ("False", "SyncFailed", 'found no controllers for pod "agent-0"')
    assert events(store) == [
        (
            "Warning",
            "CalculateExpectedPodCountFailed",
            'Failed to calculate the number of expected pods: found no controllers for pod "agent-0"',
        )
    ]


def test_no_pods_and_expired_disrupted_pods(
    store: ClusterStore, controller: DisruptionController, clock: FakeClock
) -> None:
    store.create("PodDisruptionBudget", pdb("empty", selector={"matchLabels": {"app": "none"}}, minAvailable=0))
    settle(controller)
    assert counts(store, "empty") == (0, 0, 0, 0)
    assert ("Normal", "NoPods", "No matching pods found") in events(store)
    rs = store.create("ReplicaSet", replica_set("web", 2, LABELS))
    owned_pods(store, rs, 2, ready=2)
    store.create("PodDisruptionBudget", pdb(minAvailable=1))
    settle(controller)
    assert counts(store) == (2, 1, 2, 1)
    # What the eviction API writes for a pod it let go: not healthy while it waits (2 minutes) for its delete.
    current = store.get("PodDisruptionBudget", "default", "budget")
    assert current is not None
    stamp = clock.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {**current, "status": {**current["status"], "disruptedPods": {"web-0": stamp}, "disruptionsAllowed": 0}}
    store.update("PodDisruptionBudget", body, subresource="status")
    settle(controller)
    assert counts(store) == (1, 1, 2, 0)
    assert status(store)["disruptedPods"] == {"web-0": stamp}
    clock.advance(timedelta(minutes=2, seconds=1).total_seconds())
    controller.poke()
    settle(controller)
    assert counts(store) == (2, 1, 2, 1)
    assert "disruptedPods" not in status(store)
