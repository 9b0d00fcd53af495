"""Small keyword-only builders of Kubernetes objects for the cluster tests."""

from __future__ import annotations

from typing import Any


def pod(
    name: str = "p",
    *,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    cpu: str | None = None,
    limits: dict[str, str] | None = None,
    node_name: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod with one container."""
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    resources: dict[str, Any] = {}
    if cpu is not None:
        resources["requests"] = {"cpu": cpu}
    if limits is not None:
        resources["limits"] = limits
    if resources:
        container["resources"] = resources
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [container], **spec},
    }
    if node_name:
        body["spec"]["nodeName"] = node_name
    return body


def node(
    name: str = "n", *, cpu: str = "4", memory: str = "8Gi", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A node with capacity only (allocatable is defaulted)."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def objects_of_every_kind(suffix: str = "x") -> list[tuple[str, dict[str, Any]]]:
    """One valid object of each served kind, in dependency order: (kind, object)."""
    return [
        ("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{suffix}"}}),
        ("Node", node(f"node-{suffix}")),
        ("Pod", pod(f"pod-{suffix}", namespace=f"ns-{suffix}")),
        (
            "PersistentVolume",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"pv-{suffix}"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/tmp"},
                },
            },
        ),
        (
            "PersistentVolumeClaim",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"pvc-{suffix}", "namespace": f"ns-{suffix}"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            },
        ),
        (
            "Event",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"ev-{suffix}", "namespace": f"ns-{suffix}"},
                "involvedObject": {"kind": "Pod", "name": f"pod-{suffix}", "namespace": f"ns-{suffix}"},
                "reason": "Testing",
                "message": "hello",
                "type": "Normal",
            },
        ),
        (
            "StorageClass",
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": f"sc-{suffix}"},
                "provisioner": "x.csi",
            },
        ),
        (
            "CSINode",
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": f"node-{suffix}"},
                "spec": {"drivers": [{"name": "x.csi", "nodeID": f"node-{suffix}"}]},
            },
        ),
        (
            "PriorityClass",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"pc-{suffix}"},
                "value": 1000,
            },
        ),
        (
            "PodDisruptionBudget",
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"pdb-{suffix}", "namespace": f"ns-{suffix}"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
            },
        ),
    ]
