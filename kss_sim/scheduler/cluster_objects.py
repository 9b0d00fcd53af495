"""The scheduler's listers: the non-node objects plugins read (``ClusterObjects``), indexed as the gang plugins
query them.

Held by the plugins' ``framework.Handle``; the hosts keep it in step with the cluster's pods and objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ClusterObjects:
    """The non-node objects plugins read (listers), as plain Kubernetes JSON dicts.

    Keys: PVCs ``namespace/name``; PVs, StorageClasses, CSINodes, CSIDrivers, Namespaces and
    PriorityClasses by name; the selector-bearing workload objects per namespace.
    """

    def __init__(self) -> None:
        self.pvcs: dict[str, dict[str, Any]] = {}
        self.pvs: dict[str, dict[str, Any]] = {}
        self.storage_classes: dict[str, dict[str, Any]] = {}
        self.csi_nodes: dict[str, dict[str, Any]] = {}
        self.csi_drivers: dict[str, dict[str, Any]] = {}
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.priority_classes: dict[str, dict[str, Any]] = {}
        self.pdbs: list[dict[str, Any]] = []
        self.services: list[dict[str, Any]] = []
        self.replica_sets: list[dict[str, Any]] = []
        self.stateful_sets: list[dict[str, Any]] = []
        self.replication_controllers: list[dict[str, Any]] = []

        # The scheduler's pod lister: every pod it knows that has not finished, pending or bound ("ns/name" -> pod),
        # with indexes for the gang plugins (the pod-group label, the workload reference of v1.35, the scheduling
        # group of v1.36).
        self.pods: dict[str, dict[str, Any]] = {}
        self._by_pod_group: dict[tuple[str, str], set[str]] = {}
        self._by_workload: dict[tuple[str, str, str, str], set[str]] = {}
        self._by_scheduling_group: dict[tuple[str, str], set[str]] = {}
        # Objects of kinds without a typed table above (PodGroup, Workload): kind -> "namespace/name" -> object.
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}
        # Told (kind, old, new) of every put_object/delete_object (None for absent): informer event handlers,
        # such as DynamicResources' allocated-devices tracker.
        self.object_listeners: list[Callable[[str, dict[str, Any] | None, dict[str, Any] | None], None]] = []

    # --- pods -------------------------------------------------------------------------------------
    def put_pod(self, pod: dict[str, Any]) -> None:
        """Add or replace a pod in the lister (the host calls this on every pod event)."""
        key = _key(pod)
        old = self.pods.get(key)
        if old is not None:
            self._unindex(key, old)
        self.pods[key] = pod
        group = _pod_group_of(pod)
        if group is not None:
            self._by_pod_group.setdefault(group, set()).add(key)
        ref = workload_key(pod)
        if ref is not None:
            self._by_workload.setdefault(ref, set()).add(key)
        scheduling_group = scheduling_group_key(pod)
        if scheduling_group is not None:
            self._by_scheduling_group.setdefault(scheduling_group, set()).add(key)

    def delete_pod(self, pod: dict[str, Any]) -> None:
        key = _key(pod)
        old = self.pods.pop(key, None)
        if old is not None:
            self._unindex(key, old)

    def _unindex(self, key: str, pod: dict[str, Any]) -> None:
        group = _pod_group_of(pod)
        if group is not None:
            _discard(self._by_pod_group, group, key)
        ref = workload_key(pod)
        if ref is not None:
            _discard(self._by_workload, ref, key)
        scheduling_group = scheduling_group_key(pod)
        if scheduling_group is not None:
            _discard(self._by_scheduling_group, scheduling_group, key)

    def pods_in_pod_group(self, namespace: str, group: str) -> list[dict[str, Any]]:
        """Pods labelled ``scheduling.x-k8s.io/pod-group=<group>`` in ``namespace`` (Coscheduling's lister query)."""
        return [self.pods[k] for k in sorted(self._by_pod_group.get((namespace, group), ()))]

    def pods_of_workload(self, namespace: str, ref: dict[str, Any]) -> list[dict[str, Any]]:
        """Pods whose ``spec.workloadRef`` equals ``ref`` (name, podGroup, podGroupReplicaKey) in ``namespace``."""
        index_key = (namespace, str(ref.get("name") or ""), str(ref.get("podGroup") or ""),
                     str(ref.get("podGroupReplicaKey") or ""))  # fmt: skip
        return [self.pods[k] for k in sorted(self._by_workload.get(index_key, ()))]

    def pods_of_scheduling_group(self, namespace: str, pod_group: str) -> list[dict[str, Any]]:
        """Pods whose ``spec.schedulingGroup.podGroupName`` is ``pod_group`` in ``namespace`` (v1.36)."""
        return [self.pods[k] for k in sorted(self._by_scheduling_group.get((namespace, pod_group), ()))]

    # --- other kinds ------------------------------------------------------------------------------
    def put_object(self, kind: str, obj: dict[str, Any]) -> None:
        table = self.objects.setdefault(kind, {})
        key = _key(obj)
        old = table.get(key)
        table[key] = obj
        for listener in self.object_listeners:
            listener(kind, old, obj)

    def delete_object(self, kind: str, obj: dict[str, Any]) -> None:
        old = self.objects.get(kind, {}).pop(_key(obj), None)
        if old is not None:
            for listener in self.object_listeners:
                listener(kind, old, None)

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A PodGroup, Workload, ... by namespace and name (None when absent)."""
        return self.objects.get(kind, {}).get(f"{namespace or 'default'}/{name}")

    def list_objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        objs = self.objects.get(kind, {})
        if namespace is None:
            return list(objs.values())
        prefix = f"{namespace}/"
        return [obj for key, obj in objs.items() if key.startswith(prefix)]

    def namespace_labels(self, name: str) -> dict[str, str]:
        ns = self.namespaces.get(name) or {}
        labels: dict[str, str] = (ns.get("metadata") or {}).get("labels") or {}
        return labels


POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def _discard(index: dict[Any, set[str]], index_key: Any, key: str) -> None:
    keys = index.get(index_key)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[index_key]


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _pod_group_of(pod: dict[str, Any]) -> tuple[str, str] | None:
    meta = pod.get("metadata") or {}
    group = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
    return (meta.get("namespace") or "default", group) if group else None


def workload_key(pod: dict[str, Any]) -> tuple[str, str, str, str] | None:
    """(namespace, workload, pod group, replica key) of a pod's ``spec.workloadRef``; None without one."""
    ref = (pod.get("spec") or {}).get("workloadRef")
    if not ref:
        return None
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    return (namespace, str(ref.get("name") or ""), str(ref.get("podGroup") or ""),
            str(ref.get("podGroupReplicaKey") or ""))  # fmt: skip


def scheduling_group_key(pod: dict[str, Any]) -> tuple[str, str] | None:
    """(namespace, PodGroup name) of a pod's ``spec.schedulingGroup`` (v1.36); None without one."""
    group = (pod.get("spec") or {}).get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, dict) else None
    if not name:
        return None
    return (pod.get("metadata") or {}).get("namespace") or "default", str(name)
