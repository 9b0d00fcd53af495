"""The controllers take the store's own read-only dicts from its listener (``add_listener(copy=False)``), not copies:
none of them may change what it is handed. Every controller runs here over the workloads it owns (a Deployment
rolled out and scaled, a StatefulSet, a DaemonSet, a Job, a CronJob, gang pods, pods the kubelet starts and ends,
a deletion the garbage collector follows); afterwards every version of every object the store published (the watch
log keeps them all) must still equal its JSON, which the store encoded when it made that version."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.manager import ControllerManager
from kss_sim.kube.objects import Obj


class Clock:
    """A clock the test moves (the kubelet ends runs by it, the CronJob fires by it)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _template(app: str, **spec: Any) -> Obj:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "img:1"}], **spec},
    }


def _workload(kind: str, name: str, spec: Obj) -> Obj:
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _node(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": f"10.0.0.{len(name)}"}],
        },
    }


def _bind_pending(store: ClusterStore) -> int:
    """Bind every unbound pod to a node, round robin, as the scheduler would; how many were bound."""
    pods, _ = store.list("Pod", "default")
    bound = 0
    for i, pod in enumerate(p for p in pods if not p["spec"].get("nodeName")):
        store.bind_pod("default", pod["metadata"]["name"], f"node-{i % 2}")
        bound += 1
    return bound


def _run_until_settled(store: ClusterStore, manager: ControllerManager, clock: Clock) -> None:
    for _ in range(20):
        assert manager.wait_idle(20)
        if not _bind_pending(store):
            return
    raise AssertionError("pods kept appearing")


def _mutations(store: ClusterStore) -> list[str]:
    """Every published version whose dict no longer equals the JSON the store encoded with it."""
    changed = []
    for event in store.events_since(0):
        if event.obj != orjson.loads(event.raw):
            name = event.obj.get("metadata", {}).get("name")
            changed.append(f"{event.kind} {name} at {event.resource_version}")
    return changed


def _everything(store: ClusterStore, clock: Clock) -> None:
    """Every controller at work; ends with every version published."""
    manager = ControllerManager(store, clock=clock)
    manager.start()
    try:
        for i in range(2):
            store.create("Node", _node(f"node-{i}"))
        store.create(
            "Deployment",
            _workload(
                "Deployment",
                "web",
                {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": _template("web"),
                },
            ),
        )
        store.create(
            "StatefulSet",
            _workload(
                "StatefulSet",
                "db",
                {
                    "replicas": 2,
                    "serviceName": "db",
                    "selector": {"matchLabels": {"app": "db"}},
                    "template": _template("db"),
                },
            ),
        )
        store.create(
            "DaemonSet",
            _workload(
                "DaemonSet",
                "agent",
                {
                    "selector": {"matchLabels": {"app": "agent"}},
                    "template": _template("agent"),
                },
            ),
        )
        job_template = _template("batch", restartPolicy="Never")
        job_template["metadata"]["annotations"] = {"kss.sigs.k8s.io/run-duration": "10s"}
        store.create("Job", _workload("Job", "batch", {"completions": 2, "template": job_template}))
        store.create(
            "CronJob",
            _workload(
                "CronJob",
                "nightly",
                {
                    "schedule": "*/5 * * * *",
                    "jobTemplate": {"spec": {"template": _template("cron", restartPolicy="Never")}},
                },
            ),
        )
        for i in range(2):
            store.create(
                "Pod",
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"gang-{i}", "labels": {"scheduling.x-k8s.io/pod-group": "g"}},
                    "spec": {"containers": [{"name": "c", "image": "img:1"}]},
                },
            )
        _run_until_settled(store, manager, clock)
        # The Job's pods finish, the CronJob fires, the Deployment rolls out a new template and scales down.
        clock.now += timedelta(minutes=6)
        for controller in manager.controllers:
            controller.poke()
        _run_until_settled(store, manager, clock)
        web = store.get("Deployment", "default", "web")
        assert web is not None
        web["spec"]["template"]["spec"]["containers"][0]["image"] = "img:2"
        web["spec"]["replicas"] = 2
        store.update("Deployment", web)
        _run_until_settled(store, manager, clock)
        store.delete("StatefulSet", "default", "db")
        _run_until_settled(store, manager, clock)
    finally:
        manager.stop()


def test_controllers_never_change_the_objects_the_store_shares_with_them() -> None:
    clock = Clock()
    store = ClusterStore(clock=clock)
    _everything(store, clock)
    pods, _ = store.list("Pod", "default")
    # The run did what it says: the kubelet started pods, the Job's ended, the CronJob made a Job.
    phases = {p["status"].get("phase") for p in pods}
    assert "Running" in phases and "Succeeded" in phases
    assert {j["metadata"]["name"] for j in store.list("Job", "default")[0]} > {"batch"}
    # The garbage collector followed: it deletes the set's pods gracefully, so they are Terminating (or gone).
    assert all(p["metadata"].get("deletionTimestamp") for p in pods if p["metadata"]["name"].startswith("db-"))
    assert _mutations(store) == []


def test_a_listener_that_changes_a_shared_object_is_caught() -> None:
    # The check above is not vacuous: a read-only listener that writes into what it is handed shows up.
    clock = Clock()
    store = ClusterStore(clock=clock)

    def careless(_type: str, _kind: str, obj: Obj) -> None:
        obj["metadata"].setdefault("annotations", {})["seen"] = "yes"

    store.add_listener(careless, ["Node"], copy=False)
    created = store.create("Node", _node("node-0"))
    assert _mutations(store) == [f"Node node-0 at {created['metadata']['resourceVersion']}"]


@pytest.mark.parametrize("copy", [True, False])
def test_a_listener_is_handed_the_committed_object(copy: bool) -> None:
    store = ClusterStore()
    heard: list[Obj] = []
    store.add_listener(lambda _t, _k, obj: heard.append(obj), ["Node"], copy=copy)
    store.create("Node", _node("node-0"))
    stored = store.read("Node", None, "node-0")
    assert heard == [stored.obj]
    assert (heard[0] is stored.obj) is not copy
