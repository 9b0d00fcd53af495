"""The scheduler in ``kss serve`` takes the store's own read-only dicts from its listener (``copy=False``) and copies
them on its own thread (``own_copy``), not in the committer with the store lock held. The engine keeps what it is
given, and plugins (users' too) may change what they are handed, so the copy is still made. After a run with
bindings, an unschedulable pod, a preemption (victims deleted, a nomination) and pods the kubelet starts, every
version of every object the store published (the watch log keeps them all) must still equal the JSON the store
encoded with it."""

from __future__ import annotations

from typing import Any

import orjson

from app.cluster.store import ClusterStore
from app.controllers.kubelet import KubeletController
from app.engine_host.service import SchedulerService, own_copy
from tests.scheduler.factories import make_node, make_pod


def _mutations(store: ClusterStore) -> list[str]:
    """Every published version whose dict no longer equals the JSON the store encoded with it."""
    return [
        f"{e.kind} {e.obj['metadata'].get('name')} at {e.resource_version}"
        for e in store.events_since(0)
        if e.obj != orjson.loads(e.raw)
    ]


def _run(store: ClusterStore) -> dict[str, Any]:
    """Schedule a small cluster through every kind of outcome; the pods' nodes and nominations by name."""
    for priority_class, value in (("low", 10), ("high", 1000)):
        store.create("PriorityClass", {"metadata": {"name": priority_class}, "value": value})
    for name in ("n1", "n2"):
        store.create("Node", make_node(name=name, allocatable={"cpu": "2", "memory": "4Gi", "pods": "10"}))
    scheduler = SchedulerService(store, seed=1)
    kubelet = KubeletController(store)
    scheduler.start()
    kubelet.start()
    try:
        for i in range(4):
            body = make_pod(name=f"low-{i}", requests={"cpu": "900m"}, spec={"priorityClassName": "low"})
            store.create("Pod", body, "default")
        store.create("Pod", make_pod(name="huge", requests={"cpu": "16"}), "default")
        assert scheduler.wait_idle(20.0) and kubelet.wait_idle(20.0)
        vip = make_pod(name="vip", requests={"cpu": "1500m"}, spec={"priorityClassName": "high"})
        store.create("Pod", vip, "default")
        assert scheduler.wait_idle(20.0) and kubelet.wait_idle(20.0)
        store.flush()
    finally:
        kubelet.stop()
        scheduler.stop()
    pods, _ = store.list("Pod", "default")
    return {
        p["metadata"]["name"]: (p["spec"].get("nodeName"), (p.get("status") or {}).get("nominatedNodeName"))
        for p in pods
    }


def test_the_scheduler_never_changes_the_objects_the_store_shares_with_it() -> None:
    store = ClusterStore(None)
    placed = _run(store)
    assert placed["huge"] == (None, None)  # unschedulable: PodScheduled=False written
    assert placed["vip"][0] or placed["vip"][1]  # preempted its way in (nominated, or bound once the victim went)
    assert len([n for n, (node, _) in placed.items() if n.startswith("low-") and node]) == 2  # two victims gone
    assert _mutations(store) == []


def _containers(value: Any) -> list[int]:
    """The ids of every dict and list in ``value``."""
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in _containers(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in _containers(v))]
    return []


def test_own_copy_is_a_deep_copy_sharing_only_strings() -> None:
    pod = make_pod(name="p", labels={"app": "a"}, requests={"cpu": "1"})
    pod["metadata"]["annotations"] = {"result": '{"n1":{"NodeResourcesFit":"passed"}}', "note": "x"}
    pod["metadata"]["managedFields"] = [{"manager": "kss", "fieldsV1": {"f:spec": {}}}]
    pod["status"] = {"conditions": [{"type": "PodScheduled", "status": "True"}]}
    copied = own_copy(pod)
    assert copied == pod
    assert not set(_containers(copied)) & set(_containers(pod))
    odd = {"metadata": {"name": "p", "annotations": {"nested": {"a": ["b"]}}}}  # not what the store holds, still copied
    odd_copy = own_copy(odd)
    assert odd_copy == odd and not set(_containers(odd_copy)) & set(_containers(odd))
