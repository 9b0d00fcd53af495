"""VolumeRestrictions: disk conflicts and ReadWriteOncePod claims (upstream ``volumerestrictions``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler import volume_helpers as vol
from kss_sim.scheduler.framework import (
    SKIP,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    Status,
    error,
    success,
    unresolvable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

PRE_FILTER_STATE_KEY = "PreFilterVolumeRestrictions"
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
# v1.33's wording of the same conflict.
ERR_REASON_RWOP_CONFLICT_V1_33 = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
_CONFLICT_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


class VolumeRestrictionsState:
    """The pod's ReadWriteOncePod claim names and how many scheduled pods use them."""

    __slots__ = ("conflicting_pvc_ref_count", "rwop_pvcs")

    def __init__(self, rwop_pvcs: frozenset[str], conflicting_pvc_ref_count: int) -> None:
        self.rwop_pvcs = rwop_pvcs
        self.conflicting_pvc_ref_count = conflicting_pvc_ref_count

    def update_with_pod(self, pod: PodInfo, multiplier: int) -> None:
        self.conflicting_pvc_ref_count += multiplier * self._conflicts_for_pod(pod)

    def _conflicts_for_pod(self, pod: PodInfo) -> int:
        n = 0
        for volume in pod.spec.get("volumes") or []:
            source = volume.get("persistentVolumeClaim")
            if source is not None and source.get("claimName") in self.rwop_pvcs:
                n += 1
        return n

    def clone(self) -> VolumeRestrictionsState:
        return VolumeRestrictionsState(self.rwop_pvcs, self.conflicting_pvc_ref_count)


def needs_restrictions_check(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(k) is not None for k in _CONFLICT_SOURCES)


def _have_overlap(a: list[str], b: list[str]) -> bool:
    return bool(set(a) & set(b))


def is_volume_conflict(volume: Mapping[str, Any], existing_pod: Mapping[str, Any]) -> bool:
    """``isVolumeConflict``: the volume clashes with one of the existing pod's volumes."""
    for existing in vol.spec(existing_pod).get("volumes") or []:
        disk, other = volume.get("gcePersistentDisk"), existing.get("gcePersistentDisk")
        if (
            disk is not None
            and other is not None
            and disk.get("pdName", "") == other.get("pdName", "")
            and not (disk.get("readOnly") and other.get("readOnly"))
        ):
            return True
        ebs, other = volume.get("awsElasticBlockStore"), existing.get("awsElasticBlockStore")
        if ebs is not None and other is not None and ebs.get("volumeID", "") == other.get("volumeID", ""):
            return True
        iscsi, other = volume.get("iscsi"), existing.get("iscsi")
        if (
            iscsi is not None
            and other is not None
            and iscsi.get("iqn", "") == other.get("iqn", "")
            and not (iscsi.get("readOnly") and other.get("readOnly"))
        ):
            return True
        rbd, other = volume.get("rbd"), existing.get("rbd")
        if (
            rbd is not None
            and other is not None
            and _have_overlap(list(rbd.get("monitors") or []), list(other.get("monitors") or []))
            # The API server defaults pool to "rbd".
            and (rbd.get("pool") or "rbd") == (other.get("pool") or "rbd")
            and rbd.get("image", "") == other.get("image", "")
            and not (rbd.get("readOnly") and other.get("readOnly"))
        ):
            return True
    return False


class _Extensions(PreFilterExtensions):
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo) -> Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, VolumeRestrictionsState):
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_add, 1)
        return success()

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, VolumeRestrictionsState):
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_remove, -1)
        return success()


_EXTENSIONS = _Extensions()


class VolumeRestrictions(PreFilterPlugin, FilterPlugin):
    """Upstream ``VolumeRestrictions``."""

    name: ClassVar[str] = "VolumeRestrictions"

    def events_to_register(self) -> list[str]:
        """A pod deleted (its claims freed), a node added, a claim added or changed (no hints ported)."""
        return [ev.POD_DELETE, ev.NODE_ADD, ev.PVC_CHANGE]

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        self.rwop_conflict = (
            ERR_REASON_RWOP_CONFLICT if handle.kube_version.minor >= 34 else ERR_REASON_RWOP_CONFLICT_V1_33
        )

    def _rwop_pvcs(self, pod: PodInfo) -> tuple[frozenset[str], str | None]:
        """Names of the pod's ReadWriteOncePod claims; the NotFound message for a missing claim."""
        names: set[str] = set()
        for volume in pod.spec.get("volumes") or []:
            source = volume.get("persistentVolumeClaim")
            if source is None:
                continue
            claim_name = str(source.get("claimName") or "")
            pvc = self.handle.cluster.pvcs.get(vol.pvc_key(pod.namespace, claim_name))
            if pvc is None:
                return frozenset(), vol.pvc_not_found(claim_name)
            if READ_WRITE_ONCE_POD in vol.access_modes(pvc):
                names.add(vol.name_of(pvc))
        return frozenset(names), None

    def _pvc_used_by_pods(self, key: str) -> bool:
        """``StorageInfos().IsPVCUsedByPods``: some scheduled pod references the claim."""
        return any(key in ni.pvc_ref_counts for ni in self.handle.snapshot.node_info_list)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        needs_check = any(needs_restrictions_check(v) for v in pod.spec.get("volumes") or [])
        pvcs, missing = self._rwop_pvcs(pod)
        if missing is not None:
            return None, unresolvable(missing)
        conflicts = sum(1 for name in pvcs if self._pvc_used_by_pods(vol.pvc_key(pod.namespace, name)))
        if not needs_check and conflicts == 0:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, VolumeRestrictionsState(pvcs, conflicts))
        return None, success()

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return _EXTENSIONS

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        for volume in pod.spec.get("volumes") or []:
            if not needs_restrictions_check(volume):
                continue
            for existing in node_info.pods:
                if is_volume_conflict(volume, existing.pod):
                    return Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, VolumeRestrictionsState):
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if s.conflicting_pvc_ref_count > 0:
            return Status(Code.UNSCHEDULABLE, self.rwop_conflict)
        return success()
