"""The node lifecycle controller (app/controllers/node_lifecycle.py) over an in-memory store on a clock the tests
move: the taints follow cordon, the Ready condition and the pressure conditions (the node's own taints kept), a
lapsed Lease makes the node Unknown after the grace period (counted from first sight after a restart), a node
without a Lease is left alone, and the NodeNotReady Event."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.node_lease import LEASE_NAMESPACE, lease_for
from kss_sim.controllers.node_lifecycle import (
    NodeLifecycleController,
    effective_grace,
    reconciled_taints,
    wanted_taints,
)
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node
from tests.controllers.workloads import FakeClock

GRACE = 50.0


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    return store


@pytest.fixture
def controller(store: ClusterStore, clock: FakeClock) -> Iterator[NodeLifecycleController]:
    loop = NodeLifecycleController(store, clock=clock, grace_period=GRACE)
    yield loop
    loop.stop()


def settle(loop: NodeLifecycleController) -> None:
    assert loop.wait_idle(), "the controller did not settle"


def tick(loop: NodeLifecycleController, clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    loop.poke()
    settle(loop)


def a_node(name: str, ready: str | None = "True", **conditions: str) -> Obj:
    body = node(name)
    found = [{"type": "Ready", "status": ready}] if ready is not None else []
    found += [{"type": kind, "status": status} for kind, status in conditions.items()]
    body["status"]["conditions"] = found
    return body


def taints(store: ClusterStore, name: str) -> list[tuple[str, str]]:
    got = store.get("Node", None, name)
    assert got is not None
    return [(t["key"], t["effect"]) for t in (got.get("spec") or {}).get("taints") or []]


def set_ready(store: ClusterStore, name: str, status: str) -> None:
    patch = {"status": {"conditions": [{"type": "Ready", "status": status}]}}
    store.patch("Node", None, name, patch, "strategic", subresource="status")


def test_cordon_and_uncordon_add_and_remove_the_unschedulable_taint(
    store: ClusterStore, controller: NodeLifecycleController
) -> None:
    mine = {"key": "team", "value": "a", "effect": "NoSchedule"}
    body = a_node("n1")
    body["spec"] = {"taints": [mine]}
    store.create("Node", body)
    controller.start()
    settle(controller)
    assert taints(store, "n1") == [("team", "NoSchedule")]
    store.patch("Node", None, "n1", {"spec": {"unschedulable": True}})
    settle(controller)
    assert taints(store, "n1") == [("team", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule")]
    unschedulable = store.get("Node", None, "n1")["spec"]["taints"][1]  # type: ignore[index]
    assert "timeAdded" not in unschedulable
    store.patch("Node", None, "n1", {"spec": {"unschedulable": None}})
    settle(controller)
    assert taints(store, "n1") == [("team", "NoSchedule")]


def test_ready_false_and_unknown_taint_not_ready_and_unreachable_with_time_added(
    store: ClusterStore, controller: NodeLifecycleController, clock: FakeClock
) -> None:
    store.create("Node", a_node("n1"))
    controller.start()
    settle(controller)
    set_ready(store, "n1", "False")
    settle(controller)
    assert sorted(taints(store, "n1")) == [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/not-ready", "NoSchedule"),
    ]
    no_execute = next(t for t in store.get("Node", None, "n1")["spec"]["taints"] if t["effect"] == "NoExecute")  # type: ignore[index]
    assert no_execute["timeAdded"] == clock.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    events, _ = store.list("Event", "default")
    assert [(e["reason"], e["message"], e["source"]["component"]) for e in events] == [
        ("NodeNotReady", "Node n1 status is now: NodeNotReady", "node-controller")
    ]
    set_ready(store, "n1", "Unknown")
    settle(controller)
    assert sorted(taints(store, "n1")) == [
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
    ]
    set_ready(store, "n1", "True")
    settle(controller)
    assert taints(store, "n1") == []


def test_pressure_conditions_taint_no_schedule_and_a_node_without_ready_gets_no_ready_taint() -> None:
    pressed = a_node("n", ready=None, MemoryPressure="True", DiskPressure="False", NetworkUnavailable="True")
    assert wanted_taints(pressed) == {
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/network-unavailable", "NoSchedule"),
    }
    tainted = a_node("n", MemoryPressure="True")
    tainted["spec"] = {"taints": [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]}
    assert reconciled_taints(tainted, "now") is None


def test_a_lapsed_lease_makes_the_node_unknown_after_the_grace_period(
    store: ClusterStore, controller: NodeLifecycleController, clock: FakeClock
) -> None:
    created = store.create("Node", a_node("n1", MemoryPressure="False"))
    store.create("Node", a_node("no-lease"))
    store.create("Lease", lease_for(created, clock.now), LEASE_NAMESPACE)
    controller.start()
    settle(controller)
    tick(controller, clock, GRACE - 1)
    assert taints(store, "n1") == []
    # A renewal moves the deadline.
    store.patch("Lease", LEASE_NAMESPACE, "n1", {"spec": {"renewTime": (clock.now).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}})
    settle(controller)
    tick(controller, clock, GRACE - 1)
    assert taints(store, "n1") == []
    tick(controller, clock, 2)
    got = store.get("Node", None, "n1")
    assert got is not None
    conditions = {c["type"]: c for c in got["status"]["conditions"]}
    assert [(k, c["status"], c["reason"], c["message"]) for k, c in conditions.items()] == [
        ("Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
        ("MemoryPressure", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
    ]
    assert sorted(taints(store, "n1")) == [
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
    ]
    assert taints(store, "no-lease") == []  # nothing renews it, nothing to judge by


def test_after_a_restart_the_grace_period_counts_from_first_sight(store: ClusterStore, clock: FakeClock) -> None:
    created = store.create("Node", a_node("n1"))
    store.create("Lease", lease_for(created, clock.now - timedelta(hours=1)), LEASE_NAMESPACE)
    loop = NodeLifecycleController(store, clock=clock, grace_period=GRACE)
    loop.start()
    try:
        settle(loop)
        assert taints(store, "n1") == []
        tick(loop, clock, GRACE + 1)
        assert sorted(taints(store, "n1"))[0] == ("node.kubernetes.io/unreachable", "NoExecute")
    finally:
        loop.stop()


def test_the_grace_period_stretches_with_the_simulated_kubelets_renewal_interval() -> None:
    grace = timedelta(seconds=GRACE)
    assert effective_grace(grace, 10) == effective_grace(grace, 400) == grace  # renewals every 10 s
    assert effective_grace(grace, 5000) == timedelta(seconds=GRACE * 12.5)  # renewals every 125 s
