"""Node heartbeat Leases (app/controllers/node_lease.py) over an in-memory ClusterStore on a clock the tests move:
created with the node as the kubelet creates them, renewed on the clock (the interval stretched on large clusters),
recreated when deleted by hand, deleted with their node, caught up after a restart without a burst."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.node_lease import LEASE_NAMESPACE, NodeLeaseController, micro_time, renew_interval
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node

T0 = datetime(2025, 6, 1, 12, 0, 0, 250000, tzinfo=UTC)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem_store(clock: Clock) -> ClusterStore:
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    return store


@pytest.fixture
def leases(mem_store: ClusterStore, clock: Clock) -> Iterator[NodeLeaseController]:
    controller = NodeLeaseController(mem_store, clock=clock)
    yield controller
    controller.stop()


def settle(controller: NodeLeaseController) -> None:
    assert controller.wait_idle(), "the lease controller did not settle"


def tick(controller: NodeLeaseController, clock: Clock, seconds: float) -> None:
    clock.advance(seconds)
    controller.poke()
    settle(controller)


def lease(store: ClusterStore, name: str) -> Obj | None:
    return store.get("Lease", LEASE_NAMESPACE, name)


def renewed(store: ClusterStore, name: str) -> str:
    got = lease(store, name)
    assert got is not None
    return str(got["spec"]["renewTime"])


def test_a_new_node_gets_the_lease_its_kubelet_would_create(
    mem_store: ClusterStore, leases: NodeLeaseController
) -> None:
    leases.start()
    created = mem_store.create("Node", node("n1"))
    settle(leases)
    got = lease(mem_store, "n1")
    assert got is not None
    assert got["apiVersion"] == "coordination.k8s.io/v1"
    assert got["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": created["metadata"]["uid"]}
    ]
    assert got["spec"] == {
        "holderIdentity": "n1",
        "leaseDurationSeconds": 40,
        "renewTime": "2025-06-01T12:00:00.250000Z",
    }


def test_leases_are_renewed_every_ten_seconds_on_a_small_cluster(
    mem_store: ClusterStore, leases: NodeLeaseController, clock: Clock
) -> None:
    for name in ("a", "b"):
        mem_store.create("Node", node(name))
    leases.start()
    settle(leases)
    version = mem_store.get("Lease", LEASE_NAMESPACE, "a")["metadata"]["resourceVersion"]  # type: ignore[index]
    tick(leases, clock, 9.9)
    assert renewed(mem_store, "a") == micro_time(T0)
    assert mem_store.get("Lease", LEASE_NAMESPACE, "a")["metadata"]["resourceVersion"] == version  # type: ignore[index]
    tick(leases, clock, 0.1)
    assert renewed(mem_store, "a") == renewed(mem_store, "b") == micro_time(T0 + timedelta(seconds=10))
    tick(leases, clock, 10)
    assert renewed(mem_store, "a") == micro_time(T0 + timedelta(seconds=20))


def test_the_interval_stretches_with_the_cluster() -> None:
    assert renew_interval(1) == renew_interval(400) == timedelta(seconds=10)
    assert renew_interval(5000) == timedelta(seconds=125)
    assert renew_interval(5000, renewals_per_second=100) == timedelta(seconds=50)


def test_a_lease_deleted_by_hand_comes_back_at_the_next_renewal(
    mem_store: ClusterStore, leases: NodeLeaseController, clock: Clock
) -> None:
    mem_store.create("Node", node("n1"))
    leases.start()
    settle(leases)
    mem_store.delete("Lease", LEASE_NAMESPACE, "n1")
    settle(leases)
    assert lease(mem_store, "n1") is None
    tick(leases, clock, 10)
    assert renewed(mem_store, "n1") == micro_time(T0 + timedelta(seconds=10))


def test_a_deleted_node_takes_its_lease_with_it(mem_store: ClusterStore, leases: NodeLeaseController) -> None:
    mem_store.create("Node", node("n1"))
    mem_store.create(
        "Lease",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "someone-else"},
            "spec": {"holderIdentity": "x"},
        },
        LEASE_NAMESPACE,
    )
    leases.start()
    settle(leases)
    mem_store.delete("Node", None, "n1")
    settle(leases)
    assert lease(mem_store, "n1") is None
    assert lease(mem_store, "someone-else") is not None  # not a node's: not ours


def test_a_node_made_again_under_the_same_name_becomes_the_owner(
    mem_store: ClusterStore, leases: NodeLeaseController, clock: Clock
) -> None:
    mem_store.create("Node", node("n1"))
    leases.start()
    settle(leases)
    leases.stop()
    mem_store.delete("Node", None, "n1")
    again = mem_store.create("Node", node("n1"))
    clock.advance(2)
    leases.start()
    settle(leases)
    got = lease(mem_store, "n1")
    assert got is not None
    assert got["metadata"]["ownerReferences"][0]["uid"] == again["metadata"]["uid"]
    assert got["spec"]["renewTime"] == micro_time(T0 + timedelta(seconds=2))


def test_after_a_restart_fresh_leases_wait_and_stale_ones_are_caught_up_over_one_interval(
    mem_store: ClusterStore, clock: Clock
) -> None:
    names = [f"n{i}" for i in range(20)]
    for name in names:
        mem_store.create("Node", node(name))
    first = NodeLeaseController(mem_store, clock=clock)
    first.start()
    settle(first)
    first.stop()
    mem_store.delete("Node", None, "n0")  # while stopped: its lease is an orphan
    clock.advance(4)
    second = NodeLeaseController(mem_store, clock=clock)
    second.start()
    try:
        settle(second)
        assert lease(mem_store, "n0") is None
        live = names[1:]
        assert {renewed(mem_store, n) for n in live} == {micro_time(T0)}  # fresh: nothing written at start
        tick(second, clock, 6)
        assert {renewed(mem_store, n) for n in live} == {micro_time(T0 + timedelta(seconds=10))}
        clock.advance(3600)  # a long stop: every lease is stale
        second.stop()
        second.start()
        settle(second)
        times = [renewed(mem_store, n) for n in live]
        assert set(times) == {micro_time(T0 + timedelta(seconds=10))}  # none renewed at once ...
        tick(second, clock, 5)
        halfway = sum(t != micro_time(T0 + timedelta(seconds=10)) for t in (renewed(mem_store, n) for n in live))
        assert 0 < halfway < len(live)  # ... but spread over the interval
        tick(second, clock, 5)
        assert all(renewed(mem_store, n) != micro_time(T0 + timedelta(seconds=10)) for n in live)
    finally:
        second.stop()
