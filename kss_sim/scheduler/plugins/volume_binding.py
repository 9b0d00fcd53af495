"""VolumeBinding: PVC/PV binding decisions inside the scheduling cycle (upstream ``volumebinding``).

PreFilter sorts the pod's claims into bound, unbound delayed-binding (WaitForFirstConsumer) and unbound
immediate ones; Filter checks bound PVs' node affinity and finds static PVs or dynamic provisioning for
the delayed ones on each node; Reserve assumes the chosen bindings in the binder's assume caches so
later pods see them; PreBind writes them to the cluster. Storage-capacity scoring sits behind the
StorageCapacityScoring gate, off in v1.35, so PreScore always skips.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler import volume_helpers as vol
from kss_sim.scheduler.framework import (
    SKIP,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
    error,
    skip,
    success,
    unresolvable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

STATE_KEY = "VolumeBinding"

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class BinderError(Exception):
    """An unexpected binder failure (upstream returns it as an error status)."""


@dataclass(slots=True)
class BindingInfo:
    """A PVC to bind to a pre-provisioned PV."""

    pvc: dict[str, Any]
    pv: dict[str, Any]


@dataclass(slots=True)
class DynamicProvision:
    pvc: dict[str, Any]


@dataclass(slots=True)
class PodVolumes:
    """What a node needs for the pod: static bindings and claims to provision."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


@dataclass(slots=True)
class PodVolumeClaims:
    bound: list[dict[str, Any]] = field(default_factory=list)
    unbound_delay_binding: list[dict[str, Any]] = field(default_factory=list)
    unbound_immediate: list[dict[str, Any]] = field(default_factory=list)
    # Storage class -> PVs of that class (assumed versions), for the delayed claims.
    unbound_volumes_delay_binding: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


class VolumeBindingState:
    """Cycle state; upstream shares it between clones (Clone returns the same pointer)."""

    __slots__ = ("all_bound", "has_static_bindings", "pod_volume_claims", "pod_volumes_by_node")

    def __init__(self, claims: PodVolumeClaims | None = None) -> None:
        self.all_bound = False
        self.pod_volumes_by_node: dict[str, PodVolumes] = {}
        self.pod_volume_claims = claims
        self.has_static_bindings = False

    def clone(self) -> VolumeBindingState:
        return self


def _pv_key(obj: Mapping[str, Any]) -> str:
    return vol.name_of(obj)


def _pvc_key(obj: Mapping[str, Any]) -> str:
    return vol.pvc_key(vol.namespace_of(obj), vol.name_of(obj))


def _is_pvc_fully_bound(pvc: Mapping[str, Any]) -> bool:
    return bool(vol.spec(pvc).get("volumeName")) and vol.ANN_BIND_COMPLETED in vol.annotations_of(pvc)


class VolumeBinding(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin):
    """Upstream ``VolumeBinding`` with its ``volumeBinder``."""

    name: ClassVar[str] = "VolumeBinding"

    def events_to_register(self) -> list[str]:
        """A node added or relabelled, volumes, claims, classes and CSINodes added or changed (no hints ported)."""
        return [
            ev.NODE_ADD,
            ev.NODE_UPDATE_LABEL,
            ev.PV_CHANGE,
            ev.PVC_CHANGE,
            ev.STORAGE_CLASS_CHANGE,
            ev.CSI_NODE_CHANGE,
        ]

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        # The caches read the listers through the handle, so a replaced ClusterObjects is seen too.
        self.pv_cache = vol.AssumeCache(lambda: self.handle.cluster.pvs, _pv_key)
        self.pvc_cache = vol.AssumeCache(lambda: self.handle.cluster.pvcs, _pvc_key)

    # --- args -----------------------------------------------------------------------------------
    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        out = dict(args)
        if out.get("bindTimeoutSeconds") is None:
            out["bindTimeoutSeconds"] = DEFAULT_BIND_TIMEOUT_SECONDS
        # The default shape is only filled in with StorageCapacityScoring on (off in v1.35).
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        errors: list[tuple[str, str]] = []
        timeout = args.get("bindTimeoutSeconds")
        if isinstance(timeout, bool) or not isinstance(timeout, int):
            errors.append(("bindTimeoutSeconds", f"Invalid value: {timeout!r}: must be an integer"))
        elif timeout < 0:
            errors.append(
                (
                    "bindTimeoutSeconds",
                    f"Invalid value: {timeout}: invalid BindTimeoutSeconds, should not be a negative value",
                )
            )
        if args.get("shape") is not None:
            errors.append(
                (
                    "shape",
                    f"Invalid value: {args['shape']!r}: unexpected field `shape`, remove it or turn on the "
                    "feature gate StorageCapacityScoring",
                )
            )
        return errors

    # --- claim classification ---------------------------------------------------------------------
    def _pod_has_pvcs(self, pod: PodInfo) -> tuple[bool, str | None]:
        """``podHasPVCs``: whether the pod uses claims, and the error that makes it unschedulable."""
        has_pvc = False
        for _volume, claim_name, is_ephemeral in vol.pod_claims(pod.pod):
            has_pvc = True
            pvc = self.handle.cluster.pvcs.get(vol.pvc_key(pod.namespace, claim_name))
            if pvc is None:
                if is_ephemeral:
                    return True, (
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim_name}"'
                    )
                return True, vol.pvc_not_found(claim_name)
            if (pvc.get("status") or {}).get("phase") == "Lost":
                return True, (
                    f'persistentvolumeclaim "{vol.name_of(pvc)}" bound to non-existent persistentvolume '
                    f'"{vol.spec(pvc).get("volumeName") or ""}"'
                )
            if vol.meta(pvc).get("deletionTimestamp") is not None:
                return True, f'persistentvolumeclaim "{vol.name_of(pvc)}" is being deleted'
            if is_ephemeral:
                problem = vol.ephemeral_volume_is_for_pod(pod.pod, pvc)
                if problem:
                    return True, problem
        return has_pvc, None

    def _is_delay_binding_mode(self, pvc: Mapping[str, Any]) -> bool:
        class_name = vol.claim_class(pvc)
        if not class_name:
            return False
        sc = self.handle.cluster.storage_classes.get(class_name)
        if sc is None:
            return False
        mode = sc.get("volumeBindingMode")
        if mode is None:
            raise BinderError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
        return bool(mode == vol.WAIT_FOR_FIRST_CONSUMER)

    def _get_pod_volume_claims(self, pod: PodInfo) -> PodVolumeClaims:
        """``GetPodVolumeClaims`` (claims read through the assume cache)."""
        claims = PodVolumeClaims()
        for _volume, claim_name, is_ephemeral in vol.pod_claims(pod.pod):
            key = vol.pvc_key(pod.namespace, claim_name)
            pvc = self.pvc_cache.get(key)
            if pvc is None:
                raise BinderError(f'error getting PVC "{key}": {vol.pvc_not_found(key)}')
            if is_ephemeral:
                problem = vol.ephemeral_volume_is_for_pod(pod.pod, pvc)
                if problem:
                    raise BinderError(problem)
            if _is_pvc_fully_bound(pvc):
                claims.bound.append(pvc)
            elif self._is_delay_binding_mode(pvc) and not vol.spec(pvc).get("volumeName"):
                claims.unbound_delay_binding.append(pvc)
            else:
                claims.unbound_immediate.append(pvc)
        for pvc in claims.unbound_delay_binding:
            class_name = vol.claim_class(pvc)
            claims.unbound_volumes_delay_binding[class_name] = self._list_pvs(class_name)
        return claims

    def _list_pvs(self, class_name: str) -> list[dict[str, Any]]:
        """``pvCache.ListPVs``: the PVs of a storage class (indexed on the informer version)."""
        return self.pv_cache.list(lambda pv: vol.volume_class(pv) == class_name)

    # --- PreFilter ------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        has_pvc, problem = self._pod_has_pvcs(pod)
        if problem is not None:
            return None, unresolvable(problem)
        if not has_pvc:
            state.write(STATE_KEY, VolumeBindingState())
            return None, SKIP
        try:
            claims = self._get_pod_volume_claims(pod)
        except BinderError as exc:
            return None, error(str(exc))
        if claims.unbound_immediate:
            return None, unresolvable(UNBOUND_IMMEDIATE)
        state.write(
            STATE_KEY,
            VolumeBindingState(
                PodVolumeClaims(
                    bound=claims.bound,
                    unbound_delay_binding=claims.unbound_delay_binding,
                    unbound_volumes_delay_binding=claims.unbound_volumes_delay_binding,
                )
            ),
        )
        return None, success()

    # --- Filter ---------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        s = state.get(STATE_KEY)
        if not isinstance(s, VolumeBindingState):
            return error("not found")
        try:
            pod_volumes, reasons = self._find_pod_volumes(s.pod_volume_claims or PodVolumeClaims(), node_info)
        except BinderError as exc:
            return error(str(exc))
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)
        s.pod_volumes_by_node[node_info.name] = pod_volumes
        s.has_static_bindings = s.has_static_bindings or bool(pod_volumes.static_bindings)
        return success()

    def _find_pod_volumes(self, claims: PodVolumeClaims, node_info: NodeInfo) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: the node's bindings/provisions, or the reasons it cannot host the pod."""
        pod_volumes = PodVolumes()
        labels = node_info.labels
        bound_satisfied = True
        bound_pvs_found = True
        unbound_satisfied = True
        sufficient_storage = True

        def reasons() -> list[str]:
            out: list[str] = []
            if not bound_satisfied:
                out.append(ERR_REASON_NODE_CONFLICT)
            if not unbound_satisfied:
                out.append(ERR_REASON_BIND_CONFLICT)
            if not sufficient_storage:
                out.append(ERR_REASON_NOT_ENOUGH_SPACE)
            if not bound_pvs_found:
                out.append(ERR_REASON_PV_NOT_EXIST)
            return out

        if claims.bound:
            bound_satisfied, bound_pvs_found = self._check_bound_claims(claims.bound, labels)

        if claims.unbound_delay_binding:
            to_match: list[dict[str, Any]] = []
            to_provision: list[dict[str, Any]] = []
            for claim in claims.unbound_delay_binding:
                selected = vol.annotations_of(claim).get(vol.ANN_SELECTED_NODE)
                if selected is not None:
                    if selected != node_info.name:
                        unbound_satisfied = False
                        return pod_volumes, reasons()
                    to_provision.append(claim)
                else:
                    to_match.append(claim)
            if to_match:
                unbound_satisfied, bindings, unmatched = self._find_matching_volumes(
                    to_match, claims.unbound_volumes_delay_binding, labels
                )
                pod_volumes.static_bindings = bindings
                to_provision.extend(unmatched)
            if to_provision:
                unbound_satisfied, sufficient_storage, provisions = self._check_volume_provisions(to_provision, labels)
                pod_volumes.dynamic_provisions = provisions
        return pod_volumes, reasons()

    def _check_bound_claims(self, claims: list[dict[str, Any]], labels: Mapping[str, str]) -> tuple[bool, bool]:
        """(node affinity satisfied, PVs found) for the bound claims."""
        for pvc in claims:
            pv = self.pv_cache.get(str(vol.spec(pvc).get("volumeName") or ""))
            if pv is None:
                return True, False
            # In-tree PVs would be translated to CSI here when migrated on the node; the golden corpus
            # uses CSI and local PVs only, whose affinity needs no translation.
            if not vol.check_node_affinity(pv, labels):
                return False, True
        return True, True

    def _find_matching_volumes(
        self,
        claims: list[dict[str, Any]],
        pvs_by_class: dict[str, list[dict[str, Any]]],
        labels: Mapping[str, str],
    ) -> tuple[bool, list[BindingInfo], list[dict[str, Any]]]:
        """``findMatchingVolumes``: smallest fitting PV per claim, claims taken in increasing size."""
        ordered = sorted(claims, key=vol.claim_request)
        chosen: set[str] = set()
        found = True
        bindings: list[BindingInfo] = []
        unmatched: list[dict[str, Any]] = []
        for pvc in ordered:
            pv = self._find_matching_volume(pvc, pvs_by_class.get(vol.claim_class(pvc), []), labels, chosen)
            if pv is None:
                unmatched.append(pvc)
                found = False
                continue
            chosen.add(vol.name_of(pv))
            bindings.append(BindingInfo(pvc=pvc, pv=pv))
        return found, bindings, unmatched

    @staticmethod
    def _find_matching_volume(
        pvc: Mapping[str, Any], pvs: list[dict[str, Any]], labels: Mapping[str, str], excluded: set[str]
    ) -> dict[str, Any] | None:
        """``volume.FindMatchingVolume`` on the scheduler path (node given, delayBinding true, VAC on)."""
        requested = vol.claim_request(pvc)
        requested_class = vol.claim_class(pvc)
        claim_spec = vol.spec(pvc)
        selector_reqs: list[vol.Requirement] | None = None
        if claim_spec.get("selector") is not None:
            try:
                selector_reqs = vol.label_selector_requirements(claim_spec["selector"])
            except vol.SelectorError as exc:
                raise BinderError(
                    f"error creating internal label selector for claim: "
                    f"{vol.namespace_of(pvc)}/{vol.name_of(pvc)}: {exc}"
                ) from exc
        claim_vac = claim_spec.get("volumeAttributesClassName") or ""
        claim_mode = vol.volume_mode(pvc)
        smallest: dict[str, Any] | None = None
        smallest_qty = None
        for pv in pvs:
            if vol.name_of(pv) in excluded:
                continue
            pv_spec = vol.spec(pv)
            bound_to_claim = vol.is_volume_bound_to_claim(pv, pvc)
            if pv_spec.get("claimRef") is not None and not bound_to_claim:
                continue
            qty = vol.volume_capacity(pv)
            if qty < requested:
                continue
            if vol.volume_mode(pv) != claim_mode:
                continue
            if (pv_spec.get("volumeAttributesClassName") or "") != claim_vac:
                continue
            if vol.meta(pv).get("deletionTimestamp") is not None:
                continue
            affinity_ok = vol.check_node_affinity(pv, labels)
            if bound_to_claim:
                # A PV pre-bound to this claim is the only candidate; its affinity decides the node.
                return pv if affinity_ok else None
            if (pv.get("status") or {}).get("phase") != "Available":
                continue
            if selector_reqs is not None:
                pv_labels = vol.meta(pv).get("labels") or {}
                if not all(vol.requirement_matches(r, pv_labels) for r in selector_reqs):
                    continue
            if vol.volume_class(pv) != requested_class:
                continue
            if not affinity_ok:
                continue
            if not vol.check_access_modes(pvc, pv):
                continue
            if smallest is None or (smallest_qty is not None and smallest_qty > qty):
                smallest = pv
                smallest_qty = qty
        return smallest

    def _check_volume_provisions(
        self, claims: list[dict[str, Any]], labels: Mapping[str, str]
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        """``checkVolumeProvisions``: (provisioning possible, enough storage, provisions)."""
        provisions: list[DynamicProvision] = []
        for claim in claims:
            class_name = vol.claim_class(claim)
            if not class_name:
                raise BinderError(f'no class for claim "{vol.namespace_of(claim)}/{vol.name_of(claim)}"')
            sc = self.handle.cluster.storage_classes.get(class_name)
            if sc is None:
                raise BinderError(f'failed to find storage class "{class_name}"')
            provisioner = sc.get("provisioner") or ""
            if not provisioner or provisioner == vol.NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not vol.match_topology_selector_terms(sc.get("allowedTopologies"), labels):
                return False, True, []
            if not self._has_enough_capacity(provisioner, claim):
                return True, False, []
            provisions.append(DynamicProvision(pvc=claim))
        return True, True, provisions

    def _has_enough_capacity(self, provisioner: str, claim: Mapping[str, Any]) -> bool:
        """``hasEnoughCapacity``: only CSI drivers with ``storageCapacity: true`` are checked.

        CSIStorageCapacity objects are not modelled, so such a driver never has room (as upstream with
        no capacity objects published).
        """
        requests = (vol.spec(claim).get("resources") or {}).get("requests") or {}
        if "storage" not in requests:
            return True
        driver = self.handle.cluster.csi_drivers.get(provisioner)
        if driver is None:
            return True
        return not vol.spec(driver).get("storageCapacity")

    # --- PreScore / Score -----------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        # No scorer without the StorageCapacityScoring gate (alpha, off in v1.35).
        return SKIP

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        return 0, success()

    # --- Reserve / Unreserve --------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s = state.get(STATE_KEY)
        if not isinstance(s, VolumeBindingState):
            return error("not found")
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            s.all_bound = True
            return success()
        try:
            s.all_bound = self._assume_pod_volumes(pod, node_name, pod_volumes)
        except BinderError as exc:
            return error(str(exc))
        return success()

    def _are_pod_volumes_bound(self, pod: PodInfo) -> bool:
        for _volume, claim_name, is_ephemeral in vol.pod_claims(pod.pod):
            pvc = self.pvc_cache.get(vol.pvc_key(pod.namespace, claim_name))
            if pvc is None or not _is_pvc_fully_bound(pvc):
                return False
            if is_ephemeral and vol.ephemeral_volume_is_for_pod(pod.pod, pvc):
                return False
        return True

    def _assume_pod_volumes(self, pod: PodInfo, node_name: str, pod_volumes: PodVolumes) -> bool:
        """``AssumePodVolumes``: PVs pre-bound to their claims and claims marked for provisioning, in memory."""
        if self._are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in pod_volumes.static_bindings:
            new_pv, dirty = vol.bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                problem = self.pv_cache.assume(new_pv)
                if problem is not None:
                    self._revert(new_bindings, [])
                    raise BinderError(problem)
            new_bindings.append(BindingInfo(pvc=binding.pvc, pv=new_pv))
        new_provisions: list[DynamicProvision] = []
        for provision in pod_volumes.dynamic_provisions:
            claim = copy.deepcopy(provision.pvc)
            claim.setdefault("metadata", {}).setdefault("annotations", {})[vol.ANN_SELECTED_NODE] = node_name
            problem = self.pvc_cache.assume(claim)
            if problem is not None:
                self._revert(new_bindings, [p.pvc for p in new_provisions])
                raise BinderError(problem)
            new_provisions.append(DynamicProvision(pvc=claim))
        pod_volumes.static_bindings = new_bindings
        pod_volumes.dynamic_provisions = new_provisions
        return False

    def _revert(self, bindings: list[BindingInfo], claims: list[dict[str, Any]]) -> None:
        for b in bindings:
            self.pv_cache.restore(b.pv)
        for c in claims:
            self.pvc_cache.restore(c)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, VolumeBindingState):
            return
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            return
        self._revert(pod_volumes.static_bindings, [p.pvc for p in pod_volumes.dynamic_provisions])

    # --- PreBind --------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s = state.get(STATE_KEY)
        if not isinstance(s, VolumeBindingState):
            return error("not found")
        if s.all_bound:
            return skip()
        if node_name not in s.pod_volumes_by_node:
            return error(f'no pod volume found for node "{node_name}"')
        return success()

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s = state.get(STATE_KEY)
        if not isinstance(s, VolumeBindingState):
            return error("not found")
        if s.all_bound:
            return success()
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            return error(f'no pod volume found for node "{node_name}"')
        return self.bind_pod_volumes(pod, node_name, pod_volumes)

    def bind_pod_volumes(self, pod: PodInfo, node_name: str, pod_volumes: PodVolumes) -> Status:
        """``BindPodVolumes`` hook: write the assumed PVs and claims to the cluster.

        Upstream updates the API objects and then waits for the PV controller (and provisioners) to
        finish binding. The handle's actions do that when they can (``kss serve`` writes the bindings
        through its API, acting as the PV controller and provisioner); otherwise the assumed objects
        are kept in ``handle.cluster``.
        """
        actions = self.handle.actions
        if actions is not None:
            st = actions.bind_volumes(
                pod,
                node_name,
                [(b.pv, b.pvc) for b in pod_volumes.static_bindings],
                [p.pvc for p in pod_volumes.dynamic_provisions],
            )
            if st is not None:
                return st
        cluster = self.handle.cluster
        for binding in pod_volumes.static_bindings:
            cluster.pvs[vol.name_of(binding.pv)] = binding.pv
        for provision in pod_volumes.dynamic_provisions:
            cluster.pvcs[_pvc_key(provision.pvc)] = provision.pvc
        return success()
