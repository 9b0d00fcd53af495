"""The taint eviction controller (app/controllers/taint_eviction.py) over an in-memory store on a clock the tests
move: pods that do not tolerate a NoExecute taint are deleted at once with the DisruptionTarget condition and the
TaintManagerEviction Event, tolerating ones after the least tolerationSeconds, for ever without one; a taint
removed in time cancels (with its Event); NoSchedule taints and unbound pods are left alone. The deletes are a
client's, so a pod ends after its grace period (its kubelet finishes it)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.taint_eviction import TaintEvictionController, toleration_time
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node, pod
from tests.controllers.workloads import FakeClock

EVICT = {"key": "evict", "value": "yes", "effect": "NoExecute"}


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    return store


@pytest.fixture
def controller(store: ClusterStore, clock: FakeClock) -> Iterator[TaintEvictionController]:
    loop = TaintEvictionController(store, clock=clock)
    yield loop
    loop.stop()


def settle(loop: TaintEvictionController) -> None:
    assert loop.wait_idle(), "the controller did not settle"


def tick(loop: TaintEvictionController, clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    loop.poke()
    settle(loop)


def tolerating(name: str, seconds: int | None, **kw: Any) -> Obj:
    toleration: Obj = {"key": "evict", "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return pod(name, node_name="n1", tolerations=[toleration], **kw)


def names(store: ClusterStore) -> list[str]:
    """The pods not being deleted: an evicted pod ends after its grace period, which its kubelet sees to."""
    pods, _ = store.list("Pod", "default")
    return sorted(p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp"))


def taint(store: ClusterStore, *taints: Obj) -> None:
    store.patch("Node", None, "n1", {"spec": {"taints": list(taints)}})


def eviction_events(store: ClusterStore) -> list[tuple[str, str, str]]:
    events, _ = store.list("Event", "default")
    ordered = sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [
        (e["involvedObject"]["name"], e["message"], e["source"]["component"])
        for e in ordered
        if e["reason"] == "TaintManagerEviction"
    ]


def test_toleration_time_as_upstream() -> None:
    taints = [EVICT, {"key": "other", "effect": "NoExecute"}]
    exists = {"operator": "Exists"}
    assert toleration_time([], []) is None
    assert toleration_time(taints, [{"key": "evict", "operator": "Exists"}]) == 0  # "other" not tolerated
    assert toleration_time(taints, [exists]) is None  # tolerated for ever
    assert toleration_time(taints, [{**exists, "tolerationSeconds": 30}]) == 30
    first = {"key": "evict", "operator": "Equal", "value": "yes", "tolerationSeconds": 10}
    assert toleration_time(taints, [first, {**exists, "tolerationSeconds": 30}]) == 10
    assert toleration_time(taints, [{**exists, "tolerationSeconds": -5}]) == 0


def test_a_no_execute_taint_evicts_the_pods_that_do_not_tolerate_it(
    store: ClusterStore, controller: TaintEvictionController, clock: FakeClock
) -> None:
    store.create("Node", node("n1"))
    store.create("Node", node("n2"))
    store.create("Pod", pod("plain", node_name="n1"))
    store.create("Pod", pod("elsewhere", node_name="n2"))
    store.create("Pod", pod("unbound"))
    store.create("Pod", tolerating("forever", None))
    store.create("Pod", tolerating("five", 5))
    seen: list[Obj] = []
    store.add_listener(
        lambda t, k, o: seen.append(o) if t == "MODIFIED" and o["metadata"]["name"] == "plain" else None, ("Pod",)
    )
    controller.start()
    settle(controller)
    taint(store, {"key": "soft", "effect": "NoSchedule"})
    settle(controller)
    assert names(store) == ["elsewhere", "five", "forever", "plain", "unbound"]
    taint(store, EVICT)
    settle(controller)
    assert names(store) == ["elsewhere", "five", "forever", "unbound"]
    # The condition was written before the delete, which then marked the pod as terminating.
    assert [bool(o["metadata"].get("deletionTimestamp")) for o in seen] == [False, True]
    conditions = seen[0]["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions] == [
        ("DisruptionTarget", "True", "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
    ]
    tick(controller, clock, 4)
    assert "five" in names(store)
    tick(controller, clock, 1)
    assert names(store) == ["elsewhere", "forever", "unbound"]
    assert eviction_events(store) == [
        ("plain", "Marking for deletion Pod default/plain", "taint-eviction-controller"),
        ("five", "Marking for deletion Pod default/five", "taint-eviction-controller"),
    ]


def test_a_taint_removed_in_time_cancels_the_eviction(
    store: ClusterStore, controller: TaintEvictionController, clock: FakeClock
) -> None:
    store.create("Node", node("n1"))
    store.create("Pod", tolerating("ten", 10))
    controller.start()
    taint(store, EVICT)
    settle(controller)
    tick(controller, clock, 5)
    taint(store)
    settle(controller)
    tick(controller, clock, 10)
    assert names(store) == ["ten"]
    assert eviction_events(store) == [("ten", "Cancelling deletion of Pod default/ten", "taint-eviction-controller")]
    # Tainted again: the time counts afresh.
    taint(store, EVICT)
    settle(controller)
    tick(controller, clock, 9)
    assert names(store) == ["ten"]
    tick(controller, clock, 1)
    assert names(store) == []


def test_a_pod_bound_later_to_a_tainted_node_and_a_restart_with_work_left(
    store: ClusterStore, clock: FakeClock
) -> None:
    body = node("n1")
    body["spec"] = {"taints": [EVICT]}
    store.create("Node", body)
    store.create("Pod", tolerating("three", 3))
    first = TaintEvictionController(store, clock=clock)
    first.start()
    settle(first)
    first.stop()
    second = TaintEvictionController(store, clock=clock)
    second.start()
    try:
        settle(second)
        store.create("Pod", pod("late"))
        store.bind_pod("default", "late", "n1")
        settle(second)
        assert names(store) == ["three"]
        tick(second, clock, 3)
        assert names(store) == []
    finally:
        second.stop()


def test_an_evicted_pod_ends_after_its_grace_period_unless_it_has_none(
    store: ClusterStore, controller: TaintEvictionController, clock: FakeClock
) -> None:
    store.create("Node", node("n1"))
    store.create("Pod", pod("graceful", node_name="n1"))
    store.create("Pod", pod("abrupt", node_name="n1", terminationGracePeriodSeconds=0))
    controller.start()
    taint(store, EVICT)
    settle(controller)
    assert names(store) == []
    terminating = store.get("Pod", "default", "graceful")
    assert terminating is not None and store.get("Pod", "default", "abrupt") is None
    expected = (clock() + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert terminating["metadata"]["deletionTimestamp"] == expected
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30
