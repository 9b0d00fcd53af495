"""The PV controller: kube-controller-manager's ``pkg/controller/volume/persistentvolume``, with the part of a CSI
external-provisioner that makes a volume for a claim.

Two kinds of work, as upstream keys them (``claim`` and ``volume``):

- a claim (``syncClaim``) not yet bound (no ``pv.kubernetes.io/bind-completed``) is bound to the volume whose
  claimRef names it (what an external scheduler's VolumeBinding PreBind writes) or, for an Immediate claim, to the
  smallest Available volume that fits (class, access modes, volume mode, selector, size); a delayed-binding claim
  waits for a scheduler (``WaitForFirstConsumer`` Event) until it has ``volume.kubernetes.io/selected-node``; a
  claim no volume fits whose class has a provisioner is provisioned (the claim annotated with the provisioner, a PV
  ``pvc-<uid>`` made as the external-provisioner makes it: ``kss_sim.kube.persistent_volumes``), then bound. A
  bound claim whose volume is gone or bound elsewhere is ``Lost``;
- a volume (``syncVolume``) with no claim is ``Available``; bound to a claim that is gone, it is ``Released`` and
  reclaimed: kept (Retain), deleted when a provisioner made it (Delete, the external-provisioner's part), else
  ``Failed`` (no deleter for a static volume, as upstream without a volume plugin); a volume the controller bound
  to a claim now bound elsewhere is made Available again.

Binding writes what upstream's ``bind`` writes, in its order: the PV's claimRef (``bound-by-controller`` when the
controller set it), the PV phase Bound, the claim's ``volumeName`` with ``bound-by-controller`` and
``bind-completed``, the claim status Bound with the volume's access modes and capacity. kss's own scheduler makes
the same writes in its PreBind (``kss_sim/engine_host/volumes.py``); this controller then finds nothing to do.

Departures: no periodic resync (a volume becoming Available wakes the unbound claims instead), no recycler
(``Recycle`` fails as without a recycler plugin), no ``lastPhaseTransitionTime``, no volume attributes classes,
no protection finalizers, no CSIStorageCapacity checks when provisioning.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from kss_sim.cluster.errors import AlreadyExists, Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.kube import persistent_volumes as pvs
from kss_sim.kube.labels import label_selector_matches
from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import QuantityError, parse_quantity

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # ("claim", namespace, name) | ("volume", "", name)

COMPONENT = "persistentvolume-controller"  # the Event source upstream's recorder names
CLIENT_MANAGER = "kube-controller-manager"
PROVISIONER_MANAGER = "csi-provisioner"  # the external-provisioner's writes
WAITING_FOR_CONSUMER = "waiting for first consumer to be created before binding"
NO_CLASS = "no persistent volumes available for this claim and no storage class is set"
EXTERNAL_PROVISIONING = (
    "Waiting for a volume to be created either by the external provisioner '{}' or manually by the system "
    "administrator. If volume creation is delayed, please verify that the provisioner is running and correctly "
    "registered."
)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("metadata"))


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("spec"))


def _phase(obj: Mapping[str, Any]) -> str:
    return str(_mapping(obj.get("status")).get("phase") or "")


def _storage(raw: Any) -> Fraction:
    try:
        return parse_quantity(raw) if raw is not None else Fraction(0)
    except QuantityError:
        return Fraction(0)


def claim_request(claim: Mapping[str, Any]) -> Fraction:
    """The claim's ``resources.requests.storage`` (zero when absent)."""
    return _storage(_mapping(_mapping(_spec(claim).get("resources")).get("requests")).get("storage"))


def volume_capacity(volume: Mapping[str, Any]) -> Fraction:
    """The volume's ``capacity.storage`` (zero when absent)."""
    return _storage(_mapping(_spec(volume).get("capacity")).get("storage"))


def _volume_mode(obj: Mapping[str, Any]) -> str:
    return str(_spec(obj).get("volumeMode") or "Filesystem")


def find_matching_volume(
    claim: Mapping[str, Any], volumes: Sequence[Mapping[str, Any]], *, delay_binding: bool
) -> Mapping[str, Any] | None:
    """``findBestMatchForClaim``: the volumes offering every access mode the claim asks for, taken by their sets
    of modes, fewest modes first (upstream's access-modes index); in each, ``FindMatchingVolume`` without a node:
    the volume pre-bound to the claim, else (not for a delayed-binding claim: the scheduler chooses) the smallest
    Available one that fits."""
    wanted = frozenset(_spec(claim).get("accessModes") or [])
    groups: dict[frozenset[str], list[Mapping[str, Any]]] = {}
    for volume in volumes:
        modes = frozenset(_spec(volume).get("accessModes") or [])
        if wanted <= modes:
            groups.setdefault(modes, []).append(volume)
    for modes in sorted(groups, key=lambda m: (len(m), sorted(m))):
        match = _match_in(claim, groups[modes], delay_binding=delay_binding)
        if match is not None:
            return match
    return None


def _match_in(
    claim: Mapping[str, Any], volumes: list[Mapping[str, Any]], *, delay_binding: bool
) -> Mapping[str, Any] | None:
    requested = claim_request(claim)
    requested_class = pvs.claim_class(claim)
    claim_spec = _spec(claim)
    selector = claim_spec.get("selector")
    smallest: Mapping[str, Any] | None = None
    for volume in volumes:
        bound_to_claim = pvs.is_volume_bound_to_claim(volume, claim)
        if _spec(volume).get("claimRef") is not None and not bound_to_claim:
            continue
        capacity = volume_capacity(volume)
        if capacity < requested or _volume_mode(volume) != _volume_mode(claim):
            continue
        volume_attributes_class = _spec(volume).get("volumeAttributesClassName") or ""
        if volume_attributes_class != (claim_spec.get("volumeAttributesClassName") or ""):
            continue
        if _meta(volume).get("deletionTimestamp"):
            continue
        if bound_to_claim:
            return volume
        if delay_binding or _phase(volume) != "Available":
            continue
        if selector is not None and not label_selector_matches(selector, _meta(volume).get("labels") or {}):
            continue
        if pvs.volume_class(volume) != requested_class:
            continue
        if smallest is None or capacity < volume_capacity(smallest):
            smallest = volume
    return smallest


class PersistentVolumeController(ReconcileLoop[Key]):
    """Binds claims and volumes, provisions for claims a class can provision, reclaims released volumes."""

    name = "persistentvolume-binder-controller"
    watched_kinds = ("PersistentVolume", "PersistentVolumeClaim", "StorageClass")

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now) -> None:
        """A stopped controller over ``store``."""
        super().__init__(store, clock=clock)
        self._unbound: set[Key] = set()  # claims not bound yet: a volume becoming Available may fit one
        self._volumes_of_claim: dict[tuple[str, str], set[str]] = {}  # claimRef -> volumes naming it

    def reset(self) -> None:
        self._unbound.clear()
        self._volumes_of_claim.clear()

    # --- keys ---------------------------------------------------------------------------------------------------
    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        meta = _meta(obj)
        name = str(meta.get("name") or "")
        if kind == "StorageClass":
            return sorted(self._unbound) if event_type != DELETED else []
        if kind == "PersistentVolumeClaim":
            namespace = str(meta.get("namespace") or "default")
            key: Key = ("claim", namespace, name)
            if event_type == DELETED or pvs.ANN_BIND_COMPLETED in pvs.annotations_of(obj):
                self._unbound.discard(key)
            else:
                self._unbound.add(key)
            keys = [key]
            volume_name = _spec(obj).get("volumeName")
            if volume_name:
                keys.append(("volume", "", str(volume_name)))
            keys += [("volume", "", v) for v in sorted(self._volumes_of_claim.get((namespace, name), ()))]
            return keys
        return self._observe_volume(event_type, name, obj)

    def _observe_volume(self, event_type: str, name: str, volume: Obj) -> list[Key]:
        for names in self._volumes_of_claim.values():
            names.discard(name)
        keys: list[Key] = [] if event_type == DELETED else [("volume", "", name)]
        ref = _spec(volume).get("claimRef")
        if isinstance(ref, Mapping) and ref.get("name"):
            claim = (str(ref.get("namespace") or "default"), str(ref["name"]))
            if event_type != DELETED:
                self._volumes_of_claim.setdefault(claim, set()).add(name)
            keys.append(("claim", *claim))  # a claim bound to a volume now gone is Lost
        elif _phase(volume) == "Available":
            keys += sorted(self._unbound)
        return keys

    def resync(self) -> list[Key]:
        keys: list[Key] = []
        for entry in self.store.select("PersistentVolume").items:
            keys += self._observe_volume("ADDED", entry.name, entry.obj)
        for entry in self.store.select("PersistentVolumeClaim").items:
            keys += self.observe("ADDED", "PersistentVolumeClaim", entry.obj)
        return list(dict.fromkeys(keys))

    def reconcile(self, key: Key) -> None:
        if key[0] == "claim":
            self.sync_claim(key[1], key[2])
        else:
            self.sync_volume(key[2])

    # --- claims -------------------------------------------------------------------------------------------------
    def sync_claim(self, namespace: str, name: str) -> None:
        """``syncClaim``."""
        claim = self.store.get("PersistentVolumeClaim", namespace, name)
        if claim is None:
            return
        if pvs.ANN_BIND_COMPLETED in pvs.annotations_of(claim):
            self._sync_bound_claim(claim)
        else:
            self._sync_unbound_claim(claim)

    def _sync_unbound_claim(self, claim: Obj) -> None:
        volume_name = str(_spec(claim).get("volumeName") or "")
        if volume_name:
            # Pre-bound by its user to a volume.
            volume = self.store.get("PersistentVolume", None, volume_name)
            if volume is None:
                self._claim_event(claim, "FailedBinding", f'volume "{volume_name}" not found', warning=True)
                self._set_claim_phase(claim, "Pending")
            elif _spec(volume).get("claimRef") is None or pvs.is_volume_bound_to_claim(volume, claim):
                self._bind(volume, claim)
            else:
                message = f'volume "{volume_name}" already bound to a different claim.'
                self._claim_event(claim, "FailedBinding", message, warning=True)
                self._set_claim_phase(claim, "Pending")
            return
        storage_class = self._storage_class(claim)
        delay_binding = (storage_class or {}).get("volumeBindingMode") == pvs.WAIT_FOR_FIRST_CONSUMER
        volumes = [entry.obj for entry in self.store.select("PersistentVolume").items]
        match = find_matching_volume(claim, volumes, delay_binding=delay_binding)
        if match is not None:
            volume = self.store.get("PersistentVolume", None, str(_meta(match).get("name") or ""))
            if volume is not None:
                self._bind(volume, claim)
            return
        selected_node = pvs.annotations_of(claim).get(pvs.ANN_SELECTED_NODE)
        if delay_binding and not selected_node:
            self._claim_event(claim, "WaitForFirstConsumer", WAITING_FOR_CONSUMER)
        elif pvs.claim_class(claim):
            claim = self._provision(claim, storage_class, selected_node)
        else:
            self._claim_event(claim, "FailedBinding", NO_CLASS)
        self._set_claim_phase(claim, "Pending")

    def _sync_bound_claim(self, claim: Obj) -> None:
        volume_name = str(_spec(claim).get("volumeName") or "")
        if not volume_name:
            message = "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            self._claim_lost(claim, "ClaimLost", message)
            return
        volume = self.store.get("PersistentVolume", None, volume_name)
        if volume is None:
            self._claim_lost(
                claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
            )
        elif _spec(volume).get("claimRef") is None or pvs.is_volume_bound_to_claim(volume, claim):
            self._bind(volume, claim)
        else:
            message = "Two claims are bound to the same volume, this one is bound incorrectly"
            self._claim_lost(claim, "ClaimMisbound", message)

    def _claim_lost(self, claim: Obj, reason: str, message: str) -> None:
        if _phase(claim) != "Lost":
            self._claim_event(claim, reason, message, warning=True)
            self._set_claim_phase(claim, "Lost")

    # --- volumes ------------------------------------------------------------------------------------------------
    def sync_volume(self, name: str) -> None:
        """``syncVolume``."""
        volume = self.store.get("PersistentVolume", None, name)
        if volume is None:
            return
        ref = _spec(volume).get("claimRef")
        if not isinstance(ref, Mapping) or not ref.get("uid"):
            # Unused, or pre-bound by a user to a claim (the claim's sync binds it).
            self._set_volume_phase(volume, "Available")
            return
        claim = self.store.get("PersistentVolumeClaim", str(ref.get("namespace") or "default"), str(ref.get("name")))
        if claim is not None and _meta(claim).get("uid") != ref.get("uid"):
            claim = None  # deleted, and another made under its name
        if claim is None:
            if _phase(volume) not in ("Released", "Failed"):
                volume = self._set_volume_phase(volume, "Released")
            if _phase(volume) == "Released":
                self._reclaim(volume)
            return
        claimed = str(_spec(claim).get("volumeName") or "")
        if not claimed:
            return  # the claim's sync finishes the binding
        if claimed == name:
            self._set_volume_phase(volume, "Bound")
            return
        # The claim is bound to another volume.
        if (
            pvs.ANN_PROVISIONED_BY in pvs.annotations_of(volume)
            and _spec(volume).get("persistentVolumeReclaimPolicy") == "Delete"
        ):
            if _phase(volume) not in ("Released", "Failed"):
                volume = self._set_volume_phase(volume, "Released")
            self._reclaim(volume)
        elif pvs.ANN_BOUND_BY_CONTROLLER in pvs.annotations_of(volume):
            self._unbind(volume)

    def _reclaim(self, volume: Obj) -> None:
        """``reclaimVolume``."""
        policy = _spec(volume).get("persistentVolumeReclaimPolicy") or "Retain"
        name = str(_meta(volume).get("name") or "")
        if policy == "Retain":
            return
        if policy == "Delete" and pvs.ANN_PROVISIONED_BY in pvs.annotations_of(volume):
            log.info("volume %s released: deleted as its provisioner would", name)
            # Gone already, or another volume of that name now: nothing to delete.
            with contextlib.suppress(NotFound, Conflict):
                self.store.delete("PersistentVolume", None, name, uid=str(_meta(volume).get("uid") or "") or None)
            return
        if policy == "Delete":
            reason, message = "VolumeFailedDelete", f'error getting deleter volume plugin for volume "{name}"'
        else:
            reason, message = "VolumeFailedRecycle", "No recycler plugin found for the volume!"
        self._set_volume_phase(volume, "Failed")
        self.store.create_event(volume, reason, message, type="Warning", component=COMPONENT)

    def _unbind(self, volume: Obj) -> None:
        """``unbindVolume``: a volume the controller bound loses its claimRef; a user's keeps the name only."""
        notes = volume.setdefault("metadata", {}).setdefault("annotations", {})
        if pvs.ANN_BOUND_BY_CONTROLLER in notes:
            volume.setdefault("spec", {}).pop("claimRef", None)
            del notes[pvs.ANN_BOUND_BY_CONTROLLER]
        else:
            volume["spec"]["claimRef"].pop("uid", None)
        volume = self.store.update("PersistentVolume", volume, manager=CLIENT_MANAGER)
        self._set_volume_phase(volume, "Available")

    # --- binding and provisioning -------------------------------------------------------------------------------
    def _bind(self, volume: Obj, claim: Obj) -> None:
        """``bind``: volume to claim, volume Bound, claim to volume, claim Bound; each write only when needed."""
        bound_volume = pvs.volume_bound_to_claim(volume, claim)
        if bound_volume is not None:
            volume = self.store.update("PersistentVolume", bound_volume, manager=CLIENT_MANAGER)
        volume = self._set_volume_phase(volume, "Bound")
        bound_claim = pvs.claim_bound_to_volume(claim, str(_meta(volume).get("name") or ""))
        if bound_claim is not None:
            claim = self.store.update("PersistentVolumeClaim", bound_claim, manager=CLIENT_MANAGER)
        status = pvs.bound_claim_status(claim, volume)
        if status != (claim.get("status") or {}):
            claim["status"] = status
            self.store.update("PersistentVolumeClaim", claim, subresource="status", manager=CLIENT_MANAGER)

    def _provision(self, claim: Obj, storage_class: Mapping[str, Any] | None, selected_node: str | None) -> Obj:
        """``provisionClaim`` for an external provisioner, and that provisioner's work: the claim annotated with
        the provisioner, a PV made for it (bound to it by the next sync of the claim). Returns the claim."""
        class_name = pvs.claim_class(claim)
        if storage_class is None:
            message = f'storageclass.storage.k8s.io "{class_name}" not found'
            self._claim_event(claim, "ProvisioningFailed", message, warning=True)
            return claim
        provisioner = str(storage_class.get("provisioner") or "")
        if not provisioner or provisioner == pvs.NOT_SUPPORTED_PROVISIONER:
            return claim  # only pre-made volumes serve this class
        notes = claim.setdefault("metadata", {}).setdefault("annotations", {})
        if notes.get(pvs.ANN_STORAGE_PROVISIONER) != provisioner:
            notes[pvs.ANN_STORAGE_PROVISIONER] = provisioner
            notes[pvs.ANN_BETA_STORAGE_PROVISIONER] = provisioner
            claim = self.store.update("PersistentVolumeClaim", claim, manager=CLIENT_MANAGER)
            self._claim_event(claim, "ExternalProvisioning", EXTERNAL_PROVISIONING.format(provisioner))
        labels = None
        if selected_node:
            node = self.store.get("Node", None, selected_node)
            labels = _meta(node).get("labels") if node is not None else None
        volume = pvs.provisioned_volume(claim, storage_class, node_name=selected_node, node_labels=labels)
        try:
            self.store.create("PersistentVolume", volume, manager=PROVISIONER_MANAGER)
        except AlreadyExists:
            return claim  # made by an earlier sync, or by kss's own scheduler
        meta = _meta(claim)
        self.store.create_event(
            claim,
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {volume['metadata']['name']}",
            component=provisioner,
        )
        log.info("claim %s/%s: provisioned %s", meta.get("namespace"), meta.get("name"), volume["metadata"]["name"])
        return claim

    # --- small writes -------------------------------------------------------------------------------------------
    def _storage_class(self, claim: Mapping[str, Any]) -> Obj | None:
        name = pvs.claim_class(claim)
        return self.store.get("StorageClass", None, name) if name else None

    def _set_claim_phase(self, claim: Obj, phase: str) -> Obj:
        if _phase(claim) == phase:
            return claim
        claim["status"] = {**(claim.get("status") or {}), "phase": phase}
        return self.store.update("PersistentVolumeClaim", claim, subresource="status", manager=CLIENT_MANAGER)

    def _set_volume_phase(self, volume: Obj, phase: str) -> Obj:
        if _phase(volume) == phase:
            return volume
        volume["status"] = {**(volume.get("status") or {}), "phase": phase}
        return self.store.update("PersistentVolume", volume, subresource="status", manager=CLIENT_MANAGER)

    def _claim_event(self, claim: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        self.store.create_event(claim, reason, message, type="Warning" if warning else "Normal", component=COMPONENT)
