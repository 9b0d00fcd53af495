"""Cluster events as the scheduling queue names them (upstream ``framework.ClusterEvent``, flattened to
"Resource/Action"), how a plugin's registration matches them, and which events an object's update raises
(``NodeSchedulingPropertiesChange``, ``PodSchedulingPropertiesChange``)."""

from __future__ import annotations

from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.resources import Resource

# Cluster events (upstream framework.ClusterEvent, flattened to "Resource/Action").
NODE_ADD = "Node/Add"
NODE_UPDATE = "Node/Update"  # registered: every node update below; raised: a node update not told apart
# A node update is raised as one event per scheduling property it changed (``NodeSchedulingPropertiesChange``).
NODE_UPDATE_ALLOCATABLE = "Node/UpdateNodeAllocatable"
NODE_UPDATE_LABEL = "Node/UpdateNodeLabel"
NODE_UPDATE_TAINT = "Node/UpdateNodeTaint"  # its taints changed, or spec.unschedulable turned false
NODE_UPDATE_CONDITION = "Node/UpdateNodeCondition"
NODE_UPDATE_ANNOTATION = "Node/UpdateNodeAnnotation"
NODE_UPDATE_DECLARED_FEATURE = "Node/UpdateNodeDeclaredFeature"
NODE_UPDATES = (
    NODE_UPDATE_ALLOCATABLE,
    NODE_UPDATE_LABEL,
    NODE_UPDATE_TAINT,
    NODE_UPDATE_CONDITION,
    NODE_UPDATE_ANNOTATION,
    NODE_UPDATE_DECLARED_FEATURE,
)
NODE_DELETE = "Node/Delete"
POD_DELETE = "AssignedPod/Delete"
POD_ADD = "AssignedPod/Add"
POD_UPDATE = "AssignedPod/Update"  # its labels changed or its requests went down (what in-tree plugins register)
POD_UPDATE_OTHER = "AssignedPod/UpdateOther"  # any other change (its status, say): only "Pod/Update" registrants
PV_CHANGE = "PersistentVolume/AddOrUpdate"
PVC_CHANGE = "PersistentVolumeClaim/AddOrUpdate"
STORAGE_CLASS_CHANGE = "StorageClass/AddOrUpdate"
CSI_NODE_CHANGE = "CSINode/AddOrUpdate"
NAMESPACE_CHANGE = "Namespace/AddOrUpdate"
UNSCHEDULED_POD_ADD = "UnscheduledPod/Add"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
FORCE_ACTIVATE = "ForceActivate"

# "Pod/<action>" as a plugin registers it matches the assigned and the unscheduled pod's event (upstream's Pod
# resource covers both); "Node/Update" every node update.
_EVENT_ALIASES = {
    "Pod/Add": (POD_ADD, UNSCHEDULED_POD_ADD),
    "Pod/Update": (POD_UPDATE, POD_UPDATE_OTHER),
    "Pod/Delete": (POD_DELETE,),
    NODE_UPDATE: NODE_UPDATES,
}


def expand_events(events: list[str]) -> set[str]:
    """A plugin's registered events in the queue's vocabulary (a registered node update also matches a node update
    raised without telling what changed)."""
    out: set[str] = set()
    for event in events:
        out.update(_EVENT_ALIASES.get(event, (event,)))
        if event.startswith(NODE_UPDATE):
            out.add(NODE_UPDATE)
    return out


def node_update_events(old: Obj, new: Obj, *, declared_features: bool) -> list[str]:
    """``NodeSchedulingPropertiesChange``: one event per scheduling property a node update changed (none for a
    heartbeat); the declared features with the NodeDeclaredFeatures gate."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    events = []
    # spec.unschedulable turned false is told as a taint change (upstream's TODO for its own ActionType).
    if bool(old_spec.get("unschedulable")) and not new_spec.get("unschedulable"):
        events.append(NODE_UPDATE_TAINT)
    if (old_status.get("allocatable") or {}) != (new_status.get("allocatable") or {}):
        events.append(NODE_UPDATE_ALLOCATABLE)
    if (old_meta.get("labels") or {}) != (new_meta.get("labels") or {}):
        events.append(NODE_UPDATE_LABEL)
    if (old_spec.get("taints") or []) != (new_spec.get("taints") or []):
        events.append(NODE_UPDATE_TAINT)
    if _condition_statuses(old_status) != _condition_statuses(new_status):
        events.append(NODE_UPDATE_CONDITION)
    if (old_meta.get("annotations") or {}) != (new_meta.get("annotations") or {}):
        events.append(NODE_UPDATE_ANNOTATION)
    if declared_features and (old_status.get("declaredFeatures") or []) != (new_status.get("declaredFeatures") or []):
        events.append(NODE_UPDATE_DECLARED_FEATURE)
    return events


def assigned_pod_update_event(old: PodInfo, new: PodInfo) -> str:
    """The cluster event of a bound pod's update, as ``PodSchedulingPropertiesChange`` tells them apart: a label
    change or requests scaled down wake the plugins that registered those; anything else (the kubelet's status
    writes) only plugins registering every pod update."""
    if old.labels != new.labels:
        return POD_UPDATE
    if old.resource_key != new.resource_key and _scaled_down(old.requests, new.requests):
        return POD_UPDATE
    return POD_UPDATE_OTHER


def _scaled_down(old: Resource, new: Resource) -> bool:
    """``extractPodScaleDown``: some request of the old pod is gone or smaller."""
    if new.milli_cpu < old.milli_cpu or new.memory < old.memory or new.ephemeral_storage < old.ephemeral_storage:
        return True
    return any(new.scalar_resources.get(name, 0) < amount for name, amount in old.scalar_resources.items())


def _condition_statuses(status: Obj) -> dict[Any, Any]:
    return {c.get("type"): c.get("status") for c in status.get("conditions") or [] if isinstance(c, dict)}
