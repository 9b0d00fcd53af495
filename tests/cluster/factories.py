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
        (
            "HorizontalPodAutoscaler",
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": f"hpa-{suffix}", "namespace": f"ns-{suffix}"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"web-{suffix}"},
                    "maxReplicas": 3,
                },
            },
        ),
        (
            "ControllerRevision",
            {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {"name": f"web-{suffix}-5d8f", "namespace": f"ns-{suffix}"},
                "data": {
                    "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}, "$patch": "replace"}}
                },
                "revision": 1,
            },
        ),
        *stored_objects(suffix),
    ]


def stored_objects(suffix: str = "x") -> list[tuple[str, dict[str, Any]]]:
    """One valid object of each kind kss stores without acting on it (namespace ``ns-{suffix}``), in creation
    order: (kind, object)."""
    ns = f"ns-{suffix}"

    def obj(api_version: str, kind: str, name: str, namespaced: bool = True, **fields: Any) -> tuple[str, Any]:
        meta = {"name": name, "namespace": ns} if namespaced else {"name": name}
        return kind, {"apiVersion": api_version, "kind": kind, "metadata": meta, **fields}

    rbac = "rbac.authorization.k8s.io/v1"
    return [
        obj("v1", "ConfigMap", f"cm-{suffix}", data={"mode": "fast"}, binaryData={"blob": "AAEC"}),
        obj("v1", "Secret", f"secret-{suffix}", data={"password": "czNjcmV0"}, type="Opaque"),
        obj("v1", "ServiceAccount", f"sa-{suffix}", secrets=[{"name": f"secret-{suffix}"}]),
        obj("v1", "Service", f"svc-{suffix}", spec={"selector": {"app": "x"}, "ports": [{"port": 80}]}),
        obj(
            "v1",
            "Endpoints",
            f"svc-{suffix}",
            subsets=[{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80, "protocol": "TCP"}]}],
        ),
        obj(
            "discovery.k8s.io/v1",
            "EndpointSlice",
            f"svc-{suffix}-abc",
            addressType="IPv4",
            endpoints=[{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
            ports=[{"port": 80, "protocol": "TCP"}],
        ),
        obj(
            "v1",
            "ReplicationController",
            f"rc-{suffix}",
            spec={
                "replicas": 0,
                "template": {
                    "metadata": {"labels": {"app": "rc"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        ),
        obj("storage.k8s.io/v1", "CSIDriver", f"csi.{suffix}.example.com", False, spec={"attachRequired": False}),
        obj(
            "storage.k8s.io/v1",
            "CSIStorageCapacity",
            f"cap-{suffix}",
            storageClassName=f"sc-{suffix}",
            capacity="100Gi",
            nodeTopology={"matchLabels": {"topology.kubernetes.io/zone": "a"}},
        ),
        obj(
            "storage.k8s.io/v1",
            "VolumeAttachment",
            f"va-{suffix}",
            False,
            spec={
                "attacher": "x.csi",
                "nodeName": f"node-{suffix}",
                "source": {"persistentVolumeName": f"pv-{suffix}"},
            },
        ),
        obj(rbac, "Role", f"role-{suffix}", rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
        obj(
            rbac,
            "RoleBinding",
            f"rb-{suffix}",
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"role-{suffix}"},
            subjects=[{"kind": "ServiceAccount", "name": f"sa-{suffix}", "namespace": ns}],
        ),
        obj(rbac, "ClusterRole", f"cr-{suffix}", False, rules=[{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
        obj(
            rbac,
            "ClusterRoleBinding",
            f"crb-{suffix}",
            False,
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"cr-{suffix}"},
            subjects=[{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
        ),
    ]
