"""Small keyword-only builders for the plain Kubernetes JSON the engine consumes, shared by scheduler tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import Handle
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.snapshot import Snapshot


def make_pod(
    *,
    name: str = "pod",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    priority: int | None = None,
    requests: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    scheduler_name: str | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pod with one container; ``spec`` entries are merged last."""
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.9"}
    if requests:
        container["resources"] = {"requests": dict(requests)}
    pod_spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        pod_spec["nodeName"] = node_name
    if priority is not None:
        pod_spec["priority"] = priority
    if affinity is not None:
        pod_spec["affinity"] = affinity
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    pod_spec.update(spec or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}", "labels": labels or {}},
        "spec": pod_spec,
    }


def make_node(
    *,
    name: str = "node",
    labels: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    """A node labelled with its hostname (plus ``labels``) and 4 CPU / 8 GiB / 110 pods by default."""
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    alloc.update(allocatable or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def make_namespace(*, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A namespace with the automatic ``kubernetes.io/metadata.name`` label."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **(labels or {})}},
    }


def make_handle(
    *,
    nodes: Iterable[dict[str, Any]] = (),
    pods: Iterable[dict[str, Any]] = (),
    namespaces: Iterable[dict[str, Any]] = (),
    version: str | None = None,
) -> Handle:
    """A handle whose snapshot holds ``nodes`` with the bound ``pods`` and whose listers know ``namespaces``, at the
    Kubernetes ``version`` (None: the default one)."""
    cluster = ClusterObjects()
    for ns in namespaces:
        cluster.namespaces[ns["metadata"]["name"]] = ns
    handle = Handle(cluster)
    handle.kube_version = kube_version(version)
    handle.snapshot = Snapshot.build(list(nodes), list(pods))
    return handle


def node_info(handle: Handle, name: str) -> NodeInfo:
    """The snapshot's NodeInfo for ``name`` (fails the test when absent)."""
    ni = handle.snapshot.get(name)
    assert ni is not None, name
    return ni


def pod_info(pod: dict[str, Any]) -> PodInfo:
    return PodInfo(pod)


def make_pvc(
    *,
    name: str,
    namespace: str = "default",
    storage_class: str | None = None,
    request: str = "1Gi",
    access_modes: list[str] | None = None,
    volume_name: str | None = None,
    bound: bool | None = None,
    selector: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A claim; with ``volume_name`` it is Bound (bind-completed) unless ``bound=False``."""
    spec: dict[str, Any] = {
        "accessModes": access_modes or ["ReadWriteOnce"],
        "resources": {"requests": {"storage": request}},
        "volumeMode": "Filesystem",
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if selector is not None:
        spec["selector"] = selector
    ann = dict(annotations or {})
    phase = "Pending"
    if volume_name:
        spec["volumeName"] = volume_name
        if bound is not False:
            ann["pv.kubernetes.io/bind-completed"] = "yes"
            phase = "Bound"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pvc-{namespace}-{name}", "annotations": ann},
        "spec": spec,
        "status": {"phase": phase},
    }


def make_pv(
    *,
    name: str,
    storage_class: str = "",
    capacity: str = "1Gi",
    access_modes: list[str] | None = None,
    node_affinity: list[dict[str, Any]] | None = None,
    claim: tuple[str, str] | None = None,
    labels: dict[str, str] | None = None,
    csi: tuple[str, str] | None = None,
    source: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A PV; ``node_affinity`` is a list of matchExpressions (one term), ``claim`` (namespace, name) binds it."""
    spec: dict[str, Any] = {
        "accessModes": access_modes or ["ReadWriteOnce"],
        "capacity": {"storage": capacity},
        "persistentVolumeReclaimPolicy": "Delete",
        "storageClassName": storage_class,
        "volumeMode": "Filesystem",
    }
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    elif source is not None:
        spec.update(source)
    else:
        spec["local"] = {"path": f"/mnt/{name}"}
    if node_affinity is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": node_affinity}]}}
    if claim is not None:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": claim[0], "name": claim[1]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"phase": "Bound" if claim is not None else "Available"},
    }


def make_storage_class(
    *,
    name: str,
    provisioner: str = "ebs.csi.aws.com",
    binding_mode: str = "WaitForFirstConsumer",
    allowed_topologies: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": binding_mode,
    }
    if allowed_topologies is not None:
        sc["allowedTopologies"] = allowed_topologies
    return sc


def make_csi_node(
    *, name: str, drivers: dict[str, int | None], annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A CSINode with the given driver -> allocatable count (None: no limit published)."""
    entries: list[dict[str, Any]] = []
    for driver, count in drivers.items():
        entry: dict[str, Any] = {"name": driver, "nodeID": f"id-{name}"}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"drivers": entries},
    }


def claim_volume(claim: str, *, name: str | None = None) -> dict[str, Any]:
    """A pod volume backed by the claim ``claim``."""
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}


def add_storage(
    handle: Handle,
    *,
    pvcs: Iterable[dict[str, Any]] = (),
    pvs: Iterable[dict[str, Any]] = (),
    storage_classes: Iterable[dict[str, Any]] = (),
    csi_nodes: Iterable[dict[str, Any]] = (),
    csi_drivers: Iterable[dict[str, Any]] = (),
) -> Handle:
    """Register volume objects in the handle's listers (PVCs by ``namespace/name``, others by name)."""
    c = handle.cluster
    for pvc in pvcs:
        c.pvcs[f"{pvc['metadata'].get('namespace', 'default')}/{pvc['metadata']['name']}"] = pvc
    for group, target in (
        (pvs, c.pvs),
        (storage_classes, c.storage_classes),
        (csi_nodes, c.csi_nodes),
        (csi_drivers, c.csi_drivers),
    ):
        for obj in group:
            target[obj["metadata"]["name"]] = obj
    return handle


def make_pdb(
    *,
    name: str = "pdb",
    namespace: str = "default",
    match_labels: dict[str, str] | None = None,
    selector: dict[str, Any] | None = None,
    disruptions_allowed: int = 0,
    disrupted_pods: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A PodDisruptionBudget selecting ``match_labels`` (or the raw ``selector``) with its status filled in."""
    sel = selector if selector is not None else {"matchLabels": dict(match_labels or {})}
    status: dict[str, Any] = {"disruptionsAllowed": disruptions_allowed}
    if disrupted_pods:
        status["disruptedPods"] = dict(disrupted_pods)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": sel},
        "status": status,
    }
