"""What the ReplicaSet and Deployment controller tests share: a clock they move, manifests, pods made Ready."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube.objects import Obj


class FakeClock:
    """A clock the test moves; the store stamps objects with it and the controllers time things by it."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def template(labels: dict[str, str], *, image: str = "registry.k8s.io/pause:3.10") -> Obj:
    """A pod template with one container."""
    return {"metadata": {"labels": dict(labels)}, "spec": {"containers": [{"name": "c", "image": image}]}}


def replica_set(name: str, replicas: int, labels: dict[str, str], *, namespace: str = "default", **spec: Any) -> Obj:
    """A ReplicaSet selecting ``labels`` whose template carries them."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)}, "template": template(labels), **spec},
    }


def deployment(name: str, replicas: int, labels: dict[str, str], *, namespace: str = "default", **spec: Any) -> Obj:
    """A Deployment selecting ``labels`` whose template carries them."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)}, "template": template(labels), **spec},
    }


def pods_of(store: ClusterStore, owner: Obj | str, *, namespace: str = "default") -> list[Obj]:
    """The pods controlled by ``owner`` (an object, or its uid), by name."""
    uid = owner if isinstance(owner, str) else owner["metadata"]["uid"]
    pods, _ = store.list("Pod", namespace)
    return [
        p
        for p in pods
        if any(r.get("uid") == uid and r.get("controller") for r in p["metadata"].get("ownerReferences") or [])
    ]


def make_ready(
    store: ClusterStore, pod: Obj, *, node: str = "node-a", at: datetime | None = None, restarts: int = 0
) -> Obj:
    """Bind ``pod`` to ``node`` (unless bound) and mark it Running and Ready since ``at`` (now by default), as
    a kubelet would report it."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    current = store.get("Pod", namespace, name)
    assert current is not None
    if not (current.get("spec") or {}).get("nodeName"):
        current = store.bind_pod(namespace, name, node)
    status = copy.deepcopy(current.get("status") or {})
    when = (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status["phase"] = "Running"
    status["conditions"] = [c for c in status.get("conditions") or [] if c["type"] != "Ready"] + [
        {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": when}
    ]
    status["containerStatuses"] = [{"name": "c", "ready": True, "restartCount": restarts, "image": "x", "imageID": ""}]
    return store.update_pod_status(namespace, name, status)


def set_phase(store: ClusterStore, pod: Obj, phase: str, *, node: str | None = None) -> Obj:
    """Bind ``pod`` to ``node`` (when given) and set its phase, not ready."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    if node is not None:
        store.bind_pod(namespace, name, node)
    current = store.get("Pod", namespace, name)
    assert current is not None
    status = copy.deepcopy(current.get("status") or {})
    status["phase"] = phase
    return store.update_pod_status(namespace, name, status)
