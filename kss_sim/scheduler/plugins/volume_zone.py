"""VolumeZone: bound PVs' zone/region labels must match the node's (upstream ``volumezone``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler import volume_helpers as vol
from kss_sim.scheduler.framework import (
    SKIP,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    Status,
    success,
    unresolvable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

PRE_FILTER_STATE_KEY = "PreFilterVolumeZone"
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"

TOPOLOGY_LABELS = (
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
)
_TO_GA = {LABEL_FAILURE_DOMAIN_BETA_REGION: LABEL_TOPOLOGY_REGION, LABEL_FAILURE_DOMAIN_BETA_ZONE: LABEL_TOPOLOGY_ZONE}
# cloudvolume.LabelMultiZoneDelimiter
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


class VolumeZoneState:
    """The pod's PV topologies; upstream shares it between clones."""

    __slots__ = ("topologies",)

    def __init__(self, topologies: list[PVTopology]) -> None:
        self.topologies = topologies

    def clone(self) -> VolumeZoneState:
        return self


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """``volumehelpers.LabelZonesToSet``: ``__``-separated zones; None when an entry is empty."""
    zones: set[str] = set()
    for part in value.split(MULTI_ZONE_DELIMITER):
        zone = part.strip()
        if not zone:
            return None
        zones.add(zone)
    return frozenset(zones)


def pv_topologies(pv: Mapping[str, Any]) -> list[PVTopology]:
    """``getPVTopologies``: one entry per topology label on the PV (unparsable values ignored)."""
    labels: dict[str, str] = vol.meta(pv).get("labels") or {}
    out: list[PVTopology] = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            zones = label_zones_to_set(labels[key])
            if zones is None:
                continue
            out.append(PVTopology(vol.name_of(pv), key, zones))
    return out


class VolumeZone(PreFilterPlugin, FilterPlugin):
    """Upstream ``VolumeZone``."""

    name: ClassVar[str] = "VolumeZone"

    def events_to_register(self) -> list[str]:
        """A node added or relabelled, volumes, claims and classes added or changed (no hints ported)."""
        return [ev.NODE_ADD, ev.NODE_UPDATE_LABEL, ev.PV_CHANGE, ev.PVC_CHANGE, ev.STORAGE_CLASS_CHANGE]

    filter_reads_pods: ClassVar[bool] = False  # the node's labels, the pod's volumes and their PVs only

    def _pv_topologies_for_pod(self, pod: PodInfo) -> tuple[list[PVTopology], Status]:
        """``getPVbyPod``."""
        cluster = self.handle.cluster
        out: list[PVTopology] = []
        for volume in pod.spec.get("volumes") or []:
            source = volume.get("persistentVolumeClaim")
            if source is None:
                continue
            claim_name = str(source.get("claimName") or "")
            if not claim_name:
                return [], unresolvable("PersistentVolumeClaim had no name")
            pvc = cluster.pvcs.get(vol.pvc_key(pod.namespace, claim_name))
            if pvc is None:
                return [], unresolvable(vol.pvc_not_found(claim_name))
            pv_name = str(vol.spec(pvc).get("volumeName") or "")
            if not pv_name:
                class_name = vol.claim_class(pvc)
                if not class_name:
                    return [], unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                sc = cluster.storage_classes.get(class_name)
                if sc is None:
                    return [], unresolvable(vol.storage_class_not_found(class_name))
                mode = sc.get("volumeBindingMode")
                if mode is None:
                    return [], unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                if mode == vol.WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], unresolvable("PersistentVolume had no name")
            pv = cluster.pvs.get(pv_name)
            if pv is None:
                return [], unresolvable(vol.pv_not_found(pv_name))
            out.extend(pv_topologies(pv))
        return out, success()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        topologies, status = self._pv_topologies_for_pod(pod)
        if not status.is_success():
            return None, status
        if not topologies:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, VolumeZoneState(topologies))
        return None, success()

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if not pod.spec.get("volumes"):
            return success()
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, VolumeZoneState):
            topologies = s.topologies
        else:
            topologies, status = self._pv_topologies_for_pod(pod)
            if not status.is_success():
                return status
        labels = node_info.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            # A node without topology labels (single-zone cluster) fits any volume.
            return success()
        for topo in topologies:
            value = labels.get(topo.key)
            if value is None:
                value = labels.get(_TO_GA.get(topo.key, topo.key))
            if value is None or value not in topo.values:
                return unresolvable(ERR_REASON_CONFLICT)
        return success()
