"""NodeVolumeLimits: per-driver attachable volume limits from CSINode (upstream ``nodevolumelimits/csi.go``).

In-tree volumes count against their CSI driver when the node's CSINode lists the plugin as migrated
(csi-translation-lib). VolumeAttachments are not modelled (none are ever listed).
"""

from __future__ import annotations

import re
import secrets
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
    PreFilterPlugin,
    PreFilterResult,
    Status,
    error,
    success,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

# csi-translation-lib: in-tree plugin name -> (volume source field, CSI driver name).
AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
AZURE_DISK_PLUGIN = "kubernetes.io/azure-disk"
CINDER_PLUGIN = "kubernetes.io/cinder"
AZURE_FILE_PLUGIN = "kubernetes.io/azure-file"
VSPHERE_PLUGIN = "kubernetes.io/vsphere-volume"
PORTWORX_PLUGIN = "kubernetes.io/portworx-volume"

IN_TREE_PLUGINS: dict[str, tuple[str, str]] = {
    GCE_PD_PLUGIN: ("gcePersistentDisk", "pd.csi.storage.gke.io"),
    AWS_EBS_PLUGIN: ("awsElasticBlockStore", "ebs.csi.aws.com"),
    CINDER_PLUGIN: ("cinder", "cinder.csi.openstack.org"),
    AZURE_DISK_PLUGIN: ("azureDisk", "disk.csi.azure.com"),
    AZURE_FILE_PLUGIN: ("azureFile", "file.csi.azure.com"),
    VSPHERE_PLUGIN: ("vsphereVolume", "csi.vsphere.vmware.com"),
    PORTWORX_PLUGIN: ("portworxVolume", "pxd.portworx.com"),
}
# Plugins whose migration kube-scheduler honours (CSIMigrationPortworx is on by default since 1.31).
_MIGRATION_ON = {AWS_EBS_PLUGIN, GCE_PD_PLUGIN, AZURE_DISK_PLUGIN, CINDER_PLUGIN, PORTWORX_PLUGIN}
_AWS_VOLUME_RE = re.compile(r"^vol-[^/]*$")


def _in_tree_plugin_of(source_holder: Mapping[str, Any]) -> str | None:
    """The in-tree plugin whose source a volume or PV spec uses, if migratable."""
    for plugin, (source_field, _driver) in IN_TREE_PLUGINS.items():
        if source_holder.get(source_field) is not None:
            return plugin
    return None


def is_csi_migration_on(csi_node: Mapping[str, Any] | None, plugin: str) -> bool:
    """``isCSIMigrationOn``: the plugin's migration is on and the CSINode lists it as migrated."""
    if csi_node is None or not plugin or plugin not in _MIGRATION_ON:
        return False
    listed = vol.annotations_of(csi_node).get(vol.MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin in (listed.split(",") if listed else [])


def _aws_volume_handle(volume_id: str) -> str | None:
    if not volume_id.startswith("aws://"):
        return volume_id
    handle = volume_id[len("aws://") :].partition("/")[2].strip("/")
    return handle if _AWS_VOLUME_RE.match(handle) else None


def _gce_volume_handle(pd_name: str, labels: Mapping[str, str] | None) -> str:
    zones_label = ""
    if labels is not None:
        zones_label = labels.get("failure-domain.beta.kubernetes.io/zone") or labels.get(
            "topology.kubernetes.io/zone", ""
        )
    zones = zones_label.split("__")
    if len(zones) == 1 and zones[0]:
        return f"projects/UNSPECIFIED/zones/{zones[0]}/disks/{pd_name}"
    if len(zones) > 1:
        region = zones[0].rpartition("-")[0]
        return f"projects/UNSPECIFIED/regions/{region}/disks/{pd_name}"
    return f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{pd_name}"


def translated_handle(plugin: str, source: Mapping[str, Any], pv_labels: Mapping[str, str] | None) -> str | None:
    """The CSI volume handle csi-translation-lib gives an in-tree source (None when untranslatable)."""
    if plugin == AWS_EBS_PLUGIN:
        return _aws_volume_handle(str(source.get("volumeID") or ""))
    if plugin == GCE_PD_PLUGIN:
        return _gce_volume_handle(str(source.get("pdName") or ""), pv_labels)
    if plugin == AZURE_DISK_PLUGIN:
        return str(source.get("diskURI") or "")
    if plugin == CINDER_PLUGIN:
        return str(source.get("volumeID") or "")
    if plugin == PORTWORX_PLUGIN:
        return str(source.get("volumeID") or "")
    return None


def volume_limits(csi_node: Mapping[str, Any] | None) -> dict[str, int]:
    """``getVolumeLimits``: driver -> allocatable count (drivers without a count are unlimited)."""
    limits: dict[str, int] = {}
    if csi_node is None:
        return limits
    for driver in vol.spec(csi_node).get("drivers") or []:
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name") or "")] = int(count)
    return limits


class _LookupError(Exception):
    """A new pod's claim could not be resolved; ``not_found`` marks lister NotFound errors."""

    def __init__(self, message: str, not_found: bool) -> None:
        super().__init__(message)
        self.not_found = not_found


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin):
    """Upstream ``CSILimits`` (registered as NodeVolumeLimits)."""

    name: ClassVar[str] = "NodeVolumeLimits"

    def events_to_register(self) -> list[str]:
        """A CSINode added or changed, a pod deleted, a claim added or changed (no hints ported)."""
        return [ev.CSI_NODE_CHANGE, ev.POD_DELETE, ev.PVC_CHANGE]

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        # Unbound claims are counted under "<prefix>-<ns>/<claim>"; the prefix keeps them apart from real handles.
        self.random_volume_id_prefix = secrets.token_hex(16)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        for volume in pod.spec.get("volumes") or []:
            if (
                volume.get("persistentVolumeClaim") is not None
                or volume.get("ephemeral") is not None
                or _in_tree_plugin_of(volume) is not None
            ):
                return None, success()
        return None, SKIP

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if not pod.spec.get("volumes"):
            return success()
        csi_node = self.handle.cluster.csi_nodes.get(node_info.name)
        new_volumes: dict[str, str] = {}
        try:
            self._filter_attachable_volumes(pod.pod, csi_node, True, new_volumes)
        except _LookupError as exc:
            if exc.not_found:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))
            return error(str(exc))
        if not new_volumes:
            return success()
        limits = volume_limits(csi_node)
        if not limits:
            return success()
        attached: dict[str, str] = {}
        for existing in node_info.pods:
            try:
                self._filter_attachable_volumes(existing.pod, csi_node, False, attached)
            except _LookupError as exc:
                return error(str(exc))
        attached_count: dict[str, int] = {}
        for unique_name, driver in attached.items():
            # A volume already attached for another pod is not counted twice.
            new_volumes.pop(unique_name, None)
            attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return success()

    def _filter_attachable_volumes(
        self, pod: Mapping[str, Any], csi_node: Mapping[str, Any] | None, new_pod: bool, result: dict[str, str]
    ) -> None:
        """``filterAttachableVolumes``: add the pod's attachable volumes as unique name -> driver."""
        namespace = vol.namespace_of(pod)
        for volume in vol.spec(pod).get("volumes") or []:
            if volume.get("persistentVolumeClaim") is not None:
                claim_name = str(volume["persistentVolumeClaim"].get("claimName") or "")
                is_ephemeral = False
            elif volume.get("ephemeral") is not None:
                claim_name = vol.ephemeral_claim_name(pod, volume)
                is_ephemeral = True
            else:
                self._check_attachable_inline_volume(volume, csi_node, result)
                continue
            if not claim_name:
                raise _LookupError("PersistentVolumeClaim had no name", False)
            pvc = self.handle.cluster.pvcs.get(vol.pvc_key(namespace, claim_name))
            if pvc is None:
                if new_pod:
                    raise _LookupError(
                        f"looking up PVC {namespace}/{claim_name}: {vol.pvc_not_found(claim_name)}", True
                    )
                continue
            if is_ephemeral:
                problem = vol.ephemeral_volume_is_for_pod(pod, pvc)
                if problem:
                    raise _LookupError(problem, False)
            driver, handle = self._csi_driver_info(csi_node, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = driver

    @staticmethod
    def _check_attachable_inline_volume(
        volume: Mapping[str, Any], csi_node: Mapping[str, Any] | None, result: dict[str, str]
    ) -> None:
        plugin = _in_tree_plugin_of(volume)
        if plugin is None or not is_csi_migration_on(csi_node, plugin):
            return
        source_field, driver = IN_TREE_PLUGINS[plugin]
        # Inline GCE PDs translate with an unspecified zone.
        handle = translated_handle(plugin, volume[source_field], None)
        if handle is None:
            raise _LookupError(f"converting volume({volume.get('name', '')}) from inline to csi", False)
        result[f"{driver}/{handle}"] = driver

    def _csi_driver_info(self, csi_node: Mapping[str, Any] | None, pvc: Mapping[str, Any]) -> tuple[str, str]:
        """``getCSIDriverInfo``: the claim's driver and volume handle ("" when not countable)."""
        pv_name = str(vol.spec(pvc).get("volumeName") or "")
        if not pv_name:
            return self._csi_driver_info_from_sc(csi_node, pvc)
        pv = self.handle.cluster.pvs.get(pv_name)
        if pv is None:
            return self._csi_driver_info_from_sc(csi_node, pvc)
        pv_spec = vol.spec(pv)
        csi = pv_spec.get("csi")
        if csi is not None:
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        plugin = _in_tree_plugin_of(pv_spec)
        if plugin is None or not is_csi_migration_on(csi_node, plugin):
            return "", ""
        source_field, driver = IN_TREE_PLUGINS[plugin]
        handle = translated_handle(plugin, pv_spec[source_field], vol.meta(pv).get("labels") or {})
        if handle is None:
            return "", ""
        return driver, handle

    def _csi_driver_info_from_sc(self, csi_node: Mapping[str, Any] | None, pvc: Mapping[str, Any]) -> tuple[str, str]:
        class_name = vol.claim_class(pvc)
        if not class_name:
            return "", ""
        sc = self.handle.cluster.storage_classes.get(class_name)
        if sc is None:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{vol.namespace_of(pvc)}/{vol.name_of(pvc)}"
        provisioner = str(sc.get("provisioner") or "")
        if provisioner in IN_TREE_PLUGINS:
            if not is_csi_migration_on(csi_node, provisioner):
                return "", ""
            return IN_TREE_PLUGINS[provisioner][1], handle
        return provisioner, handle
