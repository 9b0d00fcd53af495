"""The ReplicaSet and Job controllers' own pod deletes end gracefully, as kube-controller-manager's (a DELETE with
the pod's terminationGracePeriodSeconds): the pods stay Terminating until the simulated kubelet ends them, on the
clock the test moves, and the controllers count them as upstream does meanwhile (not active; ``terminating``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.job import JobController
from kss_sim.controllers.job_parts import COMPLETION_INDEX
from kss_sim.controllers.kubelet import KubeletController
from kss_sim.controllers.loop import ReconcileLoop
from kss_sim.controllers.replicaset import ReplicaSetController
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node
from tests.controllers.workloads import FakeClock, pods_of, replica_set

LABELS = {"app": "web"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    store.create("Node", node("n1"))
    return store


@pytest.fixture
def loops(store: ClusterStore, clock: FakeClock) -> Iterator[list[ReconcileLoop[Any]]]:
    """The kubelet, the ReplicaSet and the Job controllers on the test's clock."""
    started: list[ReconcileLoop[Any]] = [
        KubeletController(store, clock=clock),
        ReplicaSetController(store, clock=clock),
        JobController(store, clock=clock),
    ]
    for loop in started:
        loop.start()
    yield started
    for loop in started:
        loop.stop()


def settle(loops: list[ReconcileLoop[Any]]) -> None:
    for _ in range(3):  # one loop's writes may wake another
        for loop in loops:
            loop.poke()
            assert loop.wait_idle(), f"{loop.name} did not settle"


def tick(loops: list[ReconcileLoop[Any]], clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    settle(loops)


def bind_all(store: ClusterStore, pods: list[Obj], loops: list[ReconcileLoop[Any]]) -> None:
    """Bind the pods not bound yet to n1 (the scheduler's part), and let the kubelet run them."""
    for pod in pods:
        if not pod["spec"].get("nodeName"):
            store.bind_pod("default", pod["metadata"]["name"], "n1")
    settle(loops)


def terminating(pods: list[Obj]) -> list[Obj]:
    return [p for p in pods if p["metadata"].get("deletionTimestamp")]


def get(store: ClusterStore, kind: str, name: str) -> Obj:
    obj = store.get(kind, "default", name)
    assert obj is not None, f"{kind} {name} is missing"
    return obj


def job(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox"}]},
            },
            **spec,
        },
    }


def job_pods(store: ClusterStore, name: str) -> list[Obj]:
    return pods_of(store, get(store, "Job", name))


def test_a_replica_set_scaled_down_leaves_terminating_pods_it_does_not_replace_until_the_kubelet_ends_them(
    store: ClusterStore, loops: list[ReconcileLoop[Any]], clock: FakeClock
) -> None:
    rs = store.create("ReplicaSet", replica_set("web", 3, LABELS))
    settle(loops)
    bind_all(store, pods_of(store, rs), loops)
    store.patch("ReplicaSet", "default", "web", {"spec": {"replicas": 1}}, "merge")
    settle(loops)
    pods = pods_of(store, rs)
    ending = terminating(pods)
    assert len(pods) == 3 and len(ending) == 2
    assert all(p["metadata"]["deletionGracePeriodSeconds"] == 30 for p in ending)  # the pod's own period
    status = get(store, "ReplicaSet", "web")["status"]
    assert status["replicas"] == 1 and status["terminatingReplicas"] == 2
    tick(loops, clock, 29)
    assert len(pods_of(store, rs)) == 3  # still terminating, and no surplus made again
    tick(loops, clock, 1)
    assert [p["metadata"]["name"] for p in pods_of(store, rs)] == [
        p["metadata"]["name"] for p in pods if p not in ending
    ]
    status = get(store, "ReplicaSet", "web")["status"]
    assert status["replicas"] == 1 and status["terminatingReplicas"] == 0
    # A pod someone deletes is not active: its replacement comes at once, beside it.
    store.delete("Pod", "default", pods_of(store, rs)[0]["metadata"]["name"], options=DeleteOptions(graceful=True))
    settle(loops)
    pods = pods_of(store, rs)
    assert len(pods) == 2 and len(terminating(pods)) == 1
    status = get(store, "ReplicaSet", "web")["status"]
    assert status["replicas"] == 1 and status["terminatingReplicas"] == 1


def test_a_job_whose_parallelism_drops_counts_its_excess_pods_terminating_not_failed(
    store: ClusterStore, loops: list[ReconcileLoop[Any]], clock: FakeClock
) -> None:
    store.create("Job", job("work", parallelism=3, completions=10))
    settle(loops)
    bind_all(store, job_pods(store, "work"), loops)
    store.patch("Job", "default", "work", {"spec": {"parallelism": 1}}, "merge")
    settle(loops)
    pods = job_pods(store, "work")
    assert len(pods) == 3 and len(terminating(pods)) == 2
    status = get(store, "Job", "work")["status"]
    assert (status.get("active", 0), status["terminating"], status.get("failed", 0)) == (1, 2, 0)
    tick(loops, clock, 30)
    assert len(job_pods(store, "work")) == 1
    status = get(store, "Job", "work")["status"]
    assert (status.get("active", 0), status["terminating"], status.get("failed", 0)) == (1, 0, 0)


@pytest.mark.parametrize("policy", ["TerminatingOrFailed", "Failed"])
def test_a_jobs_replacement_for_a_deleted_pod_waits_as_its_pod_replacement_policy_says(
    store: ClusterStore, loops: list[ReconcileLoop[Any]], clock: FakeClock, policy: str
) -> None:
    store.create("Job", job("work", podReplacementPolicy=policy))
    settle(loops)
    bind_all(store, job_pods(store, "work"), loops)
    (first,) = job_pods(store, "work")
    store.delete("Pod", "default", first["metadata"]["name"], options=DeleteOptions(graceful=True))
    settle(loops)
    status = get(store, "Job", "work")["status"]
    # TerminatingOrFailed counts the terminating pod failed at once; Failed waits for the kubelet's Failed.
    assert (status.get("active", 0), status["terminating"], status.get("failed", 0)) == (0, 1, int(policy != "Failed"))
    tick(loops, clock, 10)  # the pod-failure backoff (10 s) has passed for the failure counted at the delete
    pods = job_pods(store, "work")
    if policy == "TerminatingOrFailed":
        assert len(pods) == 2 and len(terminating(pods)) == 1  # replaced beside it
        assert get(store, "Job", "work")["status"].get("active", 0) == 1
    else:
        assert [p["metadata"]["name"] for p in pods] == [first["metadata"]["name"]]  # waits for it to be gone
    tick(loops, clock, 20)  # its grace period ends: written Failed, then gone
    pods = job_pods(store, "work")
    assert first["metadata"]["name"] not in [p["metadata"]["name"] for p in pods]
    status = get(store, "Job", "work")["status"]
    assert (status["terminating"], status["failed"]) == (0, 1)
    if policy == "Failed":
        assert not pods  # the backoff now counts from its end
        tick(loops, clock, 10)
        assert len(job_pods(store, "work")) == 1 and get(store, "Job", "work")["status"].get("active", 0) == 1


def test_an_indexed_job_replacing_only_failed_pods_starts_no_other_index_while_one_terminates(
    store: ClusterStore, loops: list[ReconcileLoop[Any]], clock: FakeClock
) -> None:
    # manageJob: wantActive - terminating - active pods to create (2 - 1 - 1: none), not another index meanwhile.
    spec = {"completionMode": "Indexed", "completions": 3, "parallelism": 2, "podReplacementPolicy": "Failed"}
    store.create("Job", job("work", **spec))
    settle(loops)
    bind_all(store, job_pods(store, "work"), loops)
    index_of = {p["metadata"]["name"]: p["metadata"]["annotations"][COMPLETION_INDEX] for p in job_pods(store, "work")}
    assert sorted(index_of.values()) == ["0", "1"]
    first = next(name for name, index in index_of.items() if index == "0")
    store.delete("Pod", "default", first, options=DeleteOptions(graceful=True))
    settle(loops)
    tick(loops, clock, 29)
    assert sorted(p["metadata"]["name"] for p in job_pods(store, "work")) == sorted(index_of)
    assert get(store, "Job", "work")["status"]["terminating"] == 1
    tick(loops, clock, 1)  # it ends Failed: index 0 again after the backoff
    tick(loops, clock, 10)
    pods = job_pods(store, "work")
    assert sorted(p["metadata"]["annotations"][COMPLETION_INDEX] for p in pods) == ["0", "1"] and first not in [
        p["metadata"]["name"] for p in pods
    ]
