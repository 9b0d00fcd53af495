"""What kube-scheduler's volume binder, the PV controller and a provisioner do, done through the store.

A real cluster finishes VolumeBinding's PreBind with API writes (claimRef on the PV, volumeName on the
claim) and controllers (the PV controller marks both Bound; an external provisioner creates a PV for a
claim with ``volume.kubernetes.io/selected-node``). The simulator has no controllers, so the scheduler's
PreBind performs their work at once: `kubectl get pv,pvc` shows what a cluster would show.
"""

from __future__ import annotations

import copy
from typing import Protocol

from kss_sim.kube.objects import Obj

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
HOSTNAME_LABEL = "kubernetes.io/hostname"


class VolumeStore(Protocol):
    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None: ...

    def create(self, kind: str, obj: Obj, namespace: str | None = None) -> Obj: ...

    def update(self, kind: str, obj: Obj, *, subresource: str | None = None) -> Obj: ...


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.setdefault("metadata", {})
    return meta


def bind_claim(
    store: VolumeStore, pv_name: str, namespace: str, claim_name: str, *, pv: Obj | None = None, pvc: Obj | None = None
) -> None:
    """Bind a PV and a claim both ways and mark them Bound (the PV controller's syncVolume/syncClaim).

    ``pv`` / ``pvc`` pass objects this thread just wrote: inside ``store.deferred()`` a read shows only
    committed state, so the scheduler hands over what its own writes returned.
    """
    pvc = pvc if pvc is not None else store.get("PersistentVolumeClaim", namespace, claim_name)
    pv = pv if pv is not None else store.get("PersistentVolume", None, pv_name)
    if pvc is None or pv is None:
        raise LookupError(f"volume {pv_name} or claim {namespace}/{claim_name} is gone")
    pvc_meta = _meta(pvc)
    pv.setdefault("spec", {})["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": namespace,
        "name": claim_name,
        "uid": pvc_meta.get("uid", ""),
        "resourceVersion": pvc_meta.get("resourceVersion", ""),
    }
    _meta(pv).setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
    pv = store.update("PersistentVolume", pv)
    pv["status"] = {**(pv.get("status") or {}), "phase": "Bound"}
    pv = store.update("PersistentVolume", pv, subresource="status")

    pvc.setdefault("spec", {})["volumeName"] = pv_name
    annotations = _meta(pvc).setdefault("annotations", {})
    annotations[BIND_COMPLETED] = "yes"
    annotations[BOUND_BY_CONTROLLER] = "yes"
    pvc = store.update("PersistentVolumeClaim", pvc)
    pv_spec = pv.get("spec") or {}
    pvc["status"] = {
        **(pvc.get("status") or {}),
        "phase": "Bound",
        "accessModes": list(pv_spec.get("accessModes") or []),
        "capacity": dict(pv_spec.get("capacity") or {}),
    }
    store.update("PersistentVolumeClaim", pvc, subresource="status")


def provision(store: VolumeStore, claim: Obj, node_name: str) -> tuple[Obj, Obj]:
    """Create a PV for a claim as a topology-aware provisioner would (on ``node_name``): (PV, updated claim)."""
    meta = claim.get("metadata") or {}
    namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
    current = store.get("PersistentVolumeClaim", namespace, name)
    if current is None:
        raise LookupError(f"claim {namespace}/{name} is gone")
    # The scheduler records its choice on the claim; the provisioner reads it.
    _meta(current).setdefault("annotations", {})[SELECTED_NODE] = node_name
    current = store.update("PersistentVolumeClaim", current)
    spec = current.get("spec") or {}
    class_name = spec.get("storageClassName") or ""
    storage_class = store.get("StorageClass", None, class_name) if class_name else None
    provisioner = (storage_class or {}).get("provisioner", "")
    pv_name = f"pvc-{_meta(current).get('uid', name)}"
    requested = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    pv: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name, "annotations": {PROVISIONED_BY: provisioner}},
        "spec": {
            "capacity": {"storage": requested},
            "accessModes": copy.deepcopy(spec.get("accessModes") or ["ReadWriteOnce"]),
            "storageClassName": class_name,
            "persistentVolumeReclaimPolicy": (storage_class or {}).get("reclaimPolicy", "Delete"),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [node_name]}]}
                    ]
                }
            },
            "csi": {"driver": provisioner or "kss.simulator", "volumeHandle": pv_name},
        },
    }
    return store.create("PersistentVolume", pv), current


def bind_pod_volumes(
    store: VolumeStore, namespace: str, node_name: str, static: list[tuple[Obj, Obj]], dynamic: list[Obj]
) -> None:
    """VolumeBinding's PreBind writes and the controllers' work after them: each chosen PV bound to its claim, each
    claim to provision given a PV on ``node_name`` and bound to it (``LookupError``: an object gone meanwhile)."""
    for pv, claim in static:
        claim_name = str((claim.get("metadata") or {}).get("name") or "")
        bind_claim(store, str((pv.get("metadata") or {}).get("name") or ""), namespace, claim_name)
    for claim in dynamic:
        pv, updated = provision(store, claim, node_name)
        claim_name = str((claim.get("metadata") or {}).get("name") or "")
        bind_claim(store, pv["metadata"]["name"], namespace, claim_name, pv=pv, pvc=updated)
