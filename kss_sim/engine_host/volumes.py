"""What kube-scheduler's volume binder, the PV controller and a provisioner do, done through the store.

A real cluster finishes VolumeBinding's PreBind with API writes (claimRef on the PV, volumeName on the
claim) and controllers (the PV controller marks both Bound; an external provisioner creates a PV for a
claim with ``volume.kubernetes.io/selected-node``). kss's own scheduler does their work at once in its PreBind,
so `kubectl get pv,pvc` shows what a cluster would show as soon as the pod is bound; the objects are built by
``kss_sim.kube.persistent_volumes``, as the PV controller of ``kss serve`` builds them for an external
scheduler, so both paths end in the same stored state. The writes are idempotent: one the PV controller made
first (it watches the same objects) is not made again.
"""

from __future__ import annotations

from typing import Protocol

from kss_sim.cluster.errors import AlreadyExists, Conflict
from kss_sim.kube import persistent_volumes as pvs
from kss_sim.kube.objects import Obj

# A write that meets the PV controller's (it binds the same objects when it sees the claimRef first) is made
# again from fresh reads, which then find most of the work done.
CONFLICT_RETRIES = 3


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
    """Bind a PV and a claim both ways and mark them Bound (the PV controller's ``bind``), writing only what is
    not so already.

    ``pv`` / ``pvc`` pass objects this thread just wrote: inside ``store.deferred()`` a read shows only
    committed state, so the scheduler hands over what its own writes returned.
    """
    pvc = pvc if pvc is not None else store.get("PersistentVolumeClaim", namespace, claim_name)
    pv = pv if pv is not None else store.get("PersistentVolume", None, pv_name)
    if pvc is None or pv is None:
        raise LookupError(f"volume {pv_name} or claim {namespace}/{claim_name} is gone")
    if (pv.get("spec") or {}).get("claimRef") and not pvs.is_volume_bound_to_claim(pv, pvc):
        # Taken meanwhile (the PV controller bound it to an Immediate claim): the scheduler's write would conflict.
        raise LookupError(f"volume {pv_name} is bound to another claim")
    bound_volume = pvs.volume_bound_to_claim(pv, pvc)
    if bound_volume is not None:
        pv = store.update("PersistentVolume", bound_volume)
    if (pv.get("status") or {}).get("phase") != "Bound":
        pv["status"] = {**(pv.get("status") or {}), "phase": "Bound"}
        pv = store.update("PersistentVolume", pv, subresource="status")
    bound_claim = pvs.claim_bound_to_volume(pvc, pv_name)
    if bound_claim is not None:
        pvc = store.update("PersistentVolumeClaim", bound_claim)
    status = pvs.bound_claim_status(pvc, pv)
    if status != (pvc.get("status") or {}):
        pvc["status"] = status
        store.update("PersistentVolumeClaim", pvc, subresource="status")


def provision(store: VolumeStore, claim: Obj, node_name: str) -> tuple[Obj, Obj]:
    """Create a PV for a claim as a topology-aware provisioner would (on ``node_name``): (PV, updated claim)."""
    meta = claim.get("metadata") or {}
    namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
    current = store.get("PersistentVolumeClaim", namespace, name)
    if current is None:
        raise LookupError(f"claim {namespace}/{name} is gone")
    class_name = pvs.claim_class(current)
    storage_class = store.get("StorageClass", None, class_name) if class_name else None
    provisioner = str((storage_class or {}).get("provisioner") or "")
    # The scheduler records its choice on the claim; the PV controller names the provisioner to act on it.
    notes = _meta(current).setdefault("annotations", {})
    wanted = {pvs.ANN_SELECTED_NODE: node_name}
    if provisioner:
        wanted |= {pvs.ANN_STORAGE_PROVISIONER: provisioner, pvs.ANN_BETA_STORAGE_PROVISIONER: provisioner}
    if any(notes.get(key) != value for key, value in wanted.items()):
        notes.update(wanted)
        current = store.update("PersistentVolumeClaim", current)
    node = store.get("Node", None, node_name)
    labels = ((node or {}).get("metadata") or {}).get("labels")
    volume = pvs.provisioned_volume(current, storage_class, node_name=node_name, node_labels=labels)
    existing = store.get("PersistentVolume", None, volume["metadata"]["name"])
    if existing is None:
        try:
            return store.create("PersistentVolume", volume), current
        except AlreadyExists:
            existing = store.get("PersistentVolume", None, volume["metadata"]["name"])
    if existing is None:
        raise LookupError(f"volume {volume['metadata']['name']} is gone")
    return existing, current  # the PV controller provisioned it first


def bind_pod_volumes(
    store: VolumeStore, namespace: str, node_name: str, static: list[tuple[Obj, Obj]], dynamic: list[Obj]
) -> None:
    """VolumeBinding's PreBind writes and the controllers' work after them: each chosen PV bound to its claim, each
    claim to provision given a PV on ``node_name`` and bound to it (``LookupError``: an object gone meanwhile). A
    write that meets one of the PV controller's is made again from fresh reads."""
    for pv, claim in static:
        claim_name = str((claim.get("metadata") or {}).get("name") or "")
        pv_name = str((pv.get("metadata") or {}).get("name") or "")
        for attempt in range(CONFLICT_RETRIES + 1):
            try:
                bind_claim(store, pv_name, namespace, claim_name)
                break
            except Conflict:
                if attempt == CONFLICT_RETRIES:
                    raise
    for claim in dynamic:
        _provision_and_bind(store, namespace, node_name, claim)


def _provision_and_bind(store: VolumeStore, namespace: str, node_name: str, claim: Obj) -> None:
    claim_name = str((claim.get("metadata") or {}).get("name") or "")
    for attempt in range(CONFLICT_RETRIES + 1):
        try:
            pv, updated = provision(store, claim, node_name)
            # The objects just written: inside ``store.deferred()`` a read would not show them yet.
            bind_claim(store, pv["metadata"]["name"], namespace, claim_name, pv=pv, pvc=updated)
            return
        except Conflict:
            if attempt == CONFLICT_RETRIES:
                raise
