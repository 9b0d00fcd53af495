"""PersistentVolumes and their claims as kube-controller-manager's PV controller and a CSI external-provisioner
write them: the annotations they set, the claim reference, and the PV a provisioner makes for a claim.

Shared by the two paths that bind volumes, so both end in the same stored state: kss's own scheduler, whose
PreBind does the controllers' work at once (``kss_sim/engine_host/volumes.py``), and the PV controller
(``kss_sim/controllers/persistent_volume.py``) that finishes what an external scheduler's PreBind started.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kss_sim.kube.objects import Obj

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"  # AnnDynamicallyProvisioned
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """The object's annotations (empty when none)."""
    return _mapping(_mapping(obj.get("metadata")).get("annotations"))


def claim_class(claim: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation wins over ``spec.storageClassName``."""
    beta = annotations_of(claim).get(ANN_BETA_STORAGE_CLASS)
    if beta is not None:
        return str(beta)
    return str(_mapping(claim.get("spec")).get("storageClassName") or "")


def volume_class(volume: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClass``: the beta annotation wins over ``spec.storageClassName``."""
    beta = annotations_of(volume).get(ANN_BETA_STORAGE_CLASS)
    if beta is not None:
        return str(beta)
    return str(_mapping(volume.get("spec")).get("storageClassName") or "")


def claim_reference(claim: Mapping[str, Any]) -> Obj:
    """``reference.GetReference`` of a claim: what a PV's ``spec.claimRef`` holds once bound to it."""
    meta = _mapping(claim.get("metadata"))
    ref: Obj = {
        "kind": "PersistentVolumeClaim",
        "namespace": str(meta.get("namespace") or "default"),
        "name": str(meta.get("name") or ""),
        "apiVersion": "v1",
    }
    if meta.get("uid"):
        ref["uid"] = str(meta["uid"])
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = str(meta["resourceVersion"])
    return ref


def is_volume_bound_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """``IsVolumeBoundToClaim``: claimRef names the claim (and its uid, when the ref has one)."""
    ref = _mapping(volume.get("spec")).get("claimRef")
    if not isinstance(ref, Mapping):
        return False
    meta = _mapping(claim.get("metadata"))
    if ref.get("name") != meta.get("name") or (ref.get("namespace") or "default") != (
        meta.get("namespace") or "default"
    ):
        return False
    ref_uid = ref.get("uid") or ""
    return not ref_uid or ref_uid == (meta.get("uid") or "")


def volume_bound_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> Obj | None:
    """``GetBindVolumeToClaim``: a copy of the volume with claimRef naming the claim (and ``bound-by-controller``
    when it was not bound to it before, by a user or the scheduler), or None when nothing would change."""
    set_bound_by_controller = not is_volume_bound_to_claim(volume, claim)
    clone: Obj = copy.deepcopy(dict(volume))
    ref = _mapping(_mapping(volume.get("spec")).get("claimRef"))
    meta = _mapping(claim.get("metadata"))
    dirty = False
    if (
        not ref
        or ref.get("name") != meta.get("name")
        or (ref.get("namespace") or "default") != (meta.get("namespace") or "default")
        or (ref.get("uid") or "") != (meta.get("uid") or "")
    ):
        clone.setdefault("spec", {})["claimRef"] = claim_reference(claim)
        dirty = True
    if set_bound_by_controller:
        notes = clone.setdefault("metadata", {}).setdefault("annotations", {})
        if ANN_BOUND_BY_CONTROLLER not in notes:
            notes[ANN_BOUND_BY_CONTROLLER] = "yes"
            dirty = True
    return clone if dirty else None


def claim_bound_to_volume(claim: Mapping[str, Any], volume_name: str) -> Obj | None:
    """``bindClaimToVolume``'s object: a copy of the claim with ``spec.volumeName`` (``bound-by-controller`` when
    the controller set it) and ``bind-completed``, or None when nothing would change."""
    clone: Obj = copy.deepcopy(dict(claim))
    notes = clone.setdefault("metadata", {}).setdefault("annotations", {})
    dirty = False
    if (clone.get("spec") or {}).get("volumeName") != volume_name:
        clone.setdefault("spec", {})["volumeName"] = volume_name
        notes.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
        dirty = True
    if ANN_BIND_COMPLETED not in notes:
        notes[ANN_BIND_COMPLETED] = "yes"
        dirty = True
    return clone if dirty else None


def bound_claim_status(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> Obj:
    """``updateClaimStatus(ClaimBound, volume)``: phase Bound with the volume's access modes and capacity."""
    volume_spec = _mapping(volume.get("spec"))
    return {
        **_mapping(claim.get("status")),
        "phase": "Bound",
        "accessModes": list(volume_spec.get("accessModes") or []),
        "capacity": dict(_mapping(volume_spec.get("capacity"))),
    }


def provisioned_node_affinity(
    storage_class: Mapping[str, Any] | None, node_name: str | None, node_labels: Mapping[str, str] | None
) -> Obj | None:
    """The node affinity a topology-aware driver reports for a volume it made: the selected node's values of the
    topology keys the class's ``allowedTopologies`` names (the node itself, ``kubernetes.io/hostname``, when the
    class names none, as a node-local driver); without a selected node, the class's allowed topologies (None when
    it has none: storage reachable from every node)."""
    topologies = [t for t in (storage_class or {}).get("allowedTopologies") or [] if isinstance(t, Mapping)]
    keys: list[str] = []
    for term in topologies:
        for expression in term.get("matchLabelExpressions") or []:
            key = str(_mapping(expression).get("key") or "")
            if key and key not in keys:
                keys.append(key)
    if node_name is None:
        if not keys:
            return None
        terms = [
            {
                "matchExpressions": [
                    {"key": str(e.get("key")), "operator": "In", "values": list(e.get("values") or [])}
                    for e in term.get("matchLabelExpressions") or []
                    if isinstance(e, Mapping)
                ]
            }
            for term in topologies
        ]
        return {"required": {"nodeSelectorTerms": terms}}
    labels = dict(node_labels or {})
    if not keys or any(key not in labels for key in keys):
        keys, labels = [HOSTNAME_LABEL], {HOSTNAME_LABEL: labels.get(HOSTNAME_LABEL, node_name)}
    expressions = [{"key": key, "operator": "In", "values": [labels[key]]} for key in keys]
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}


def provisioned_volume(
    claim: Mapping[str, Any],
    storage_class: Mapping[str, Any] | None,
    *,
    node_name: str | None,
    node_labels: Mapping[str, str] | None = None,
) -> Obj:
    """The PV a CSI external-provisioner creates for ``claim`` (selected node ``node_name``, None for an
    Immediate claim): named ``pvc-<claim uid>``, bound to the claim from the start (claimRef), the requested size,
    the claim's access and volume modes, the class's reclaim policy and mount options, ``provisioned-by``."""
    meta = _mapping(claim.get("metadata"))
    spec = _mapping(claim.get("spec"))
    provisioner = str((storage_class or {}).get("provisioner") or "")
    name = f"pvc-{meta.get('uid') or meta.get('name')}"
    requested = _mapping(_mapping(spec.get("resources")).get("requests")).get("storage", "1Gi")
    volume_spec: Obj = {
        "capacity": {"storage": requested},
        "accessModes": copy.deepcopy(list(spec.get("accessModes") or ["ReadWriteOnce"])),
        "claimRef": claim_reference(claim),
        "storageClassName": claim_class(claim),
        "persistentVolumeReclaimPolicy": (storage_class or {}).get("reclaimPolicy") or "Delete",
        "volumeMode": spec.get("volumeMode") or "Filesystem",
        "csi": {"driver": provisioner or "kss.simulator", "volumeHandle": name},
    }
    mount_options = (storage_class or {}).get("mountOptions")
    if mount_options:
        volume_spec["mountOptions"] = list(mount_options)
    affinity = provisioned_node_affinity(storage_class, node_name, node_labels)
    if affinity is not None:
        volume_spec["nodeAffinity"] = affinity
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {ANN_PROVISIONED_BY: provisioner}},
        "spec": volume_spec,
    }
