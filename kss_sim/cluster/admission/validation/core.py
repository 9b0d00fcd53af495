"""Field validation (422 Invalid) of the core/v1 kinds as kube-apiserver does it, and the tables of every kind's
create and update rules (``VALIDATORS``, ``UPDATE_VALIDATORS``, ``validate_update``) the write paths consult.

The shared name/label/metadata rules are in ``metadata.py``, the decoding errors (400) in ``decoding.py``, pods in
``pod.py``, PodGroup and Workload in ``scheduling.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kss_sim.cluster.admission.validation.events import (
    EVENTS_V1_REQUEST,
    validate_events_v1_create,
    validate_events_v1_update,
)
from kss_sim.cluster.admission.validation.metadata import (
    label_value_errors,
    qualified_name_errors,
    selector_errors,
    validate_metadata,
)
from kss_sim.cluster.admission.validation.pod import (
    TAINT_EFFECTS,
    validate_node_selector_terms,
    validate_pod,
    validate_pod_update,
)
from kss_sim.cluster.admission.validation.scheduling import (
    validate_pod_group,
    validate_pod_group_v1alpha2,
    validate_pod_group_v1alpha2_update,
    validate_workload,
    validate_workload_update,
    validate_workload_v1alpha2,
    validate_workload_v1alpha2_update,
)
from kss_sim.cluster.errors import Cause, duplicate, forbidden, invalid, not_supported, required
from kss_sim.cluster.kinds.registry import POD_GROUP_V1ALPHA2, WORKLOAD_V1ALPHA2
from kss_sim.kube.quantity import parse_quantity

HIGHEST_USER_PRIORITY = 1_000_000_000


def validate_node(node: dict[str, Any]) -> list[Cause]:
    """ValidateNode: name, taints and resource quantities."""
    causes = validate_metadata(node, namespaced=False)
    spec = node.get("spec") or {}
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.get("taints") or []):
        p = f"spec.taints[{i}]"
        key = (taint or {}).get("key") or ""
        if not key:
            causes.append(required(f"{p}.key"))
        else:
            causes += qualified_name_errors(f"{p}.key", key)
        causes += label_value_errors(f"{p}.value", str(taint.get("value") or ""))
        effect = taint.get("effect")
        if not effect:
            causes.append(required(f"{p}.effect"))
        elif effect not in TAINT_EFFECTS:
            causes.append(not_supported(f"{p}.effect", effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            causes.append(duplicate(p, f"{key}:{effect}"))
        seen.add((key, str(effect)))
    status = node.get("status") or {}
    for part in ("capacity", "allocatable"):
        for name, quantity in (status.get(part) or {}).items():
            if parse_quantity(quantity) < 0:
                causes.append(invalid(f"status.{part}[{name}]", str(quantity), "must be greater than or equal to 0"))
    causes += _declared_features_errors(status.get("declaredFeatures") or [])
    return causes


# UpperCamelCase, then "/"-separated segments (``MyFeature/mySubFeature``).
_DECLARED_FEATURE = re.compile(r"[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*")
_DECLARED_FEATURE_FORMAT = (
    "must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature or "
    "MyFeature/mySubFeature), and contain only alphanumeric characters and slashes"
)


def _declared_features_errors(features: list[Any]) -> list[Cause]:
    """``validateNodeDeclaredFeatures`` (v1.35 on): well-formed names, sorted and unique, as NodeDeclaredFeatures
    reads them (the decoder has refused entries that are no strings)."""
    names = [f for f in features if isinstance(f, str)]
    causes: list[Cause] = []
    for i, name in enumerate(names):
        p = f"status.declaredFeatures[{i}]"
        if len(name) > 253:
            causes.append(invalid(p, name, f'invalid feature name "{name}": must be no more than 253 characters'))
        elif not _DECLARED_FEATURE.fullmatch(name):
            causes.append(invalid(p, name, f'invalid feature name "{name}": {_DECLARED_FEATURE_FORMAT}'))
        if i + 1 < len(names):
            following = names[i + 1]
            if name == following:
                causes.append(duplicate(f"status.declaredFeatures[{i + 1}]", following))
            elif name > following:
                causes.append(
                    invalid(f"status.declaredFeatures[{i + 1}]", following, "list must be sorted alphabetically")
                )
    return causes


_ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
_PV_SOURCES = (
    "hostPath", "local", "csi", "nfs", "gcePersistentDisk", "awsElasticBlockStore", "azureDisk", "azureFile",
    "cephfs", "cinder", "fc", "flexVolume", "flocker", "glusterfs", "iscsi", "photonPersistentDisk",
    "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume",
)  # fmt: skip


def _access_mode_errors(spec: dict[str, Any]) -> list[Cause]:
    modes = spec.get("accessModes") or []
    if not modes:
        return [required("spec.accessModes")]
    return [not_supported("spec.accessModes", m, _ACCESS_MODES) for m in modes if m not in _ACCESS_MODES]


def validate_persistent_volume(pv: dict[str, Any]) -> list[Cause]:
    """ValidatePersistentVolume: capacity, access modes, a volume source, reclaim policy, node affinity."""
    causes = validate_metadata(pv, namespaced=False)
    spec = pv.get("spec") or {}
    causes += _access_mode_errors(spec)
    if "storage" not in (spec.get("capacity") or {}):
        causes.append(required("spec.capacity", "storage"))
    if not any(spec.get(s) for s in _PV_SOURCES):
        causes.append(required("spec", "must specify a volume type"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy not in ("Retain", "Delete", "Recycle"):
        causes.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, ["Delete", "Recycle", "Retain"]))
    required_terms = ((spec.get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
    if required_terms is not None:
        causes += validate_node_selector_terms("spec.nodeAffinity.required.nodeSelectorTerms", required_terms)
    return causes


def validate_persistent_volume_claim(pvc: dict[str, Any]) -> list[Cause]:
    """ValidatePersistentVolumeClaim: access modes and a storage request."""
    causes = validate_metadata(pvc, namespaced=True)
    spec = pvc.get("spec") or {}
    causes += _access_mode_errors(spec)
    if "storage" not in ((spec.get("resources") or {}).get("requests") or {}):
        causes.append(required("spec.resources[storage]"))
    causes += selector_errors("spec.selector", spec.get("selector"))
    return causes


def validate_storage_class(sc: dict[str, Any]) -> list[Cause]:
    """ValidateStorageClass: provisioner, reclaim policy, binding mode."""
    causes = validate_metadata(sc, namespaced=False)
    if not sc.get("provisioner"):
        causes.append(required("provisioner"))
    if sc.get("reclaimPolicy") not in ("Delete", "Retain"):
        causes.append(not_supported("reclaimPolicy", sc.get("reclaimPolicy"), ["Delete", "Retain"]))
    mode = sc.get("volumeBindingMode")
    if mode not in ("Immediate", "WaitForFirstConsumer"):
        causes.append(not_supported("volumeBindingMode", mode, ["Immediate", "WaitForFirstConsumer"]))
    return causes


def validate_priority_class(pc: dict[str, Any], *, builtin: bool = False) -> list[Cause]:
    """ValidatePriorityClass: a value within the user range, no reserved ``system-`` names."""
    causes = validate_metadata(pc, namespaced=False)
    name = (pc.get("metadata") or {}).get("name") or ""
    value = pc.get("value")
    if value is None:
        causes.append(required("value"))
    elif not builtin and value > HIGHEST_USER_PRIORITY:
        causes.append(
            forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}")
        )
    if not builtin and name.startswith("system-"):
        causes.append(forbidden("metadata.name", "priority class names with 'system-' prefix are reserved"))
    policy = pc.get("preemptionPolicy")
    if policy not in ("PreemptLowerPriority", "Never"):
        causes.append(not_supported("preemptionPolicy", policy, ["Never", "PreemptLowerPriority"]))
    return causes


def _int_or_percent_errors(path: str, value: Any) -> list[Cause]:
    if value is None:
        return []
    if isinstance(value, bool):
        return [invalid(path, str(value), "must be an integer or percentage")]
    if isinstance(value, int):
        return [invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []
    if isinstance(value, str) and re.fullmatch(r"[0-9]+%", value):
        return [invalid(path, value, "must not be greater than 100%")] if int(value[:-1]) > 100 else []
    return [invalid(path, str(value), "a valid percent string must be a numeric string followed by an ending '%'")]


def validate_pdb(pdb: dict[str, Any]) -> list[Cause]:
    """ValidatePodDisruptionBudget: selector and one of minAvailable / maxUnavailable."""
    causes = validate_metadata(pdb, namespaced=True)
    spec = pdb.get("spec") or {}
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        causes.append(invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
    causes += _int_or_percent_errors("spec.minAvailable", spec.get("minAvailable"))
    causes += _int_or_percent_errors("spec.maxUnavailable", spec.get("maxUnavailable"))
    causes += selector_errors("spec.selector", spec.get("selector"))
    return causes


def _validate_core_event(event: dict[str, Any]) -> list[Cause]:
    causes = validate_metadata(event, namespaced=True)
    involved = event.get("involvedObject")
    if not isinstance(involved, dict):
        causes.append(required("involvedObject"))
        return causes
    ns = (event.get("metadata") or {}).get("namespace")
    if involved.get("namespace") and involved["namespace"] != ns:
        causes.append(invalid("involvedObject.namespace", involved["namespace"], "does not match event.namespace"))
    return causes


def validate_event(event: dict[str, Any]) -> list[Cause]:
    """ValidateEventCreate: the involved object's namespace matches the event's; through events.k8s.io/v1, that
    version's stricter rules too (``events.py``)."""
    causes = _validate_core_event(event)
    if EVENTS_V1_REQUEST.get():
        causes += validate_events_v1_create(event)
    return causes


def validate_event_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """ValidateEventUpdate: a core/v1 update as a create; through events.k8s.io/v1, that version's immutable
    fields (``events.py``)."""
    causes = _validate_core_event(new)
    if EVENTS_V1_REQUEST.get():
        causes += validate_events_v1_update(new, old)
    return causes


def validate_csinode(node: dict[str, Any]) -> list[Cause]:
    """ValidateCSINode: each driver has a unique name and a nodeID."""
    causes = validate_metadata(node, namespaced=False)
    names: set[str] = set()
    for i, d in enumerate((node.get("spec") or {}).get("drivers") or []):
        name = (d or {}).get("name") or ""
        if not name:
            causes.append(required(f"spec.drivers[{i}].name"))
        elif name in names:
            causes.append(duplicate(f"spec.drivers[{i}].name", name))
        names.add(name)
        if not (d or {}).get("nodeID"):
            causes.append(required(f"spec.drivers[{i}].nodeID"))
    if "drivers" not in (node.get("spec") or {}):
        causes.append(required("spec.drivers"))
    return causes


# helper.IsStandardFinalizerName: the finalizer names that need no domain.
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def _finalizer_name_errors(path: str, name: Any) -> list[Cause]:
    """validateFinalizerName: a qualified name, and one without a domain must be a standard finalizer."""
    text = str(name)
    causes = qualified_name_errors(path, text)
    if "/" not in text and text not in STANDARD_FINALIZERS:
        causes.append(invalid(path, text, "name is neither a standard finalizer name nor is it fully qualified"))
    return causes


def validate_namespace(ns: dict[str, Any]) -> list[Cause]:
    """ValidateNamespace: the name is a DNS-1123 label, and each of ``spec.finalizers`` a finalizer name."""
    causes = validate_metadata(ns, namespaced=False, label_name=True)
    for finalizer in (ns.get("spec") or {}).get("finalizers") or []:
        causes += _finalizer_name_errors("spec.finalizers", finalizer)
    return causes


def validate_namespace_finalize(ns: dict[str, Any]) -> list[Cause]:
    """ValidateNamespaceFinalizeUpdate (the ``finalize`` subresource): the metadata, and each of
    ``spec.finalizers`` a finalizer name, by index."""
    causes = validate_metadata(ns, namespaced=False, label_name=True)
    for i, finalizer in enumerate((ns.get("spec") or {}).get("finalizers") or []):
        causes += _finalizer_name_errors(f"spec.finalizers[{i}]", finalizer)
    return causes


VALIDATORS: dict[str, Callable[[dict[str, Any]], list[Cause]]] = {
    "Pod": validate_pod,
    "Node": validate_node,
    "Namespace": validate_namespace,
    "PersistentVolume": validate_persistent_volume,
    "PersistentVolumeClaim": validate_persistent_volume_claim,
    "StorageClass": validate_storage_class,
    "PriorityClass": validate_priority_class,
    "PodDisruptionBudget": validate_pdb,
    "Event": validate_event,
    "CSINode": validate_csinode,
    "PodGroup": validate_pod_group,
    "Workload": validate_workload,
    WORKLOAD_V1ALPHA2: validate_workload_v1alpha2,
    POD_GROUP_V1ALPHA2: validate_pod_group_v1alpha2,
}
# Update rules of kinds whose module registers them (workloads.py: apps/v1, batch/v1, Lease; dra.py); that
# module builds on this one and adds its kinds to both tables when imported (admission imports it).
UPDATE_VALIDATORS: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[Cause]]] = {
    "Event": validate_event_update,
    WORKLOAD_V1ALPHA2: validate_workload_v1alpha2_update,
    POD_GROUP_V1ALPHA2: validate_pod_group_v1alpha2_update,
}


def validate_update(kind: str, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """Validation on update: the create rules plus the kind's immutable fields."""
    if kind == "Pod":
        return validate_pod_update(new, old)
    if kind == "Workload":
        return validate_workload_update(new, old)
    if kind in UPDATE_VALIDATORS:
        return UPDATE_VALIDATORS[kind](new, old)
    if kind == "PriorityClass":
        builtin = (old.get("metadata") or {}).get("name", "").startswith("system-")
        causes = validate_priority_class(new, builtin=builtin)
        if new.get("value") != old.get("value"):
            causes.append(forbidden("value", "may not be changed in an update."))
        return causes
    causes = VALIDATORS[kind](new)
    if kind == "StorageClass":
        for field in ("parameters", "provisioner", "reclaimPolicy", "volumeBindingMode"):
            if new.get(field) != old.get(field):
                causes.append(forbidden(field, "updates to " + field + " are forbidden."))
    if kind == "PersistentVolumeClaim":
        old_spec, new_spec = dict(old.get("spec") or {}), dict(new.get("spec") or {})
        for spec in (old_spec, new_spec):
            spec.pop("resources", None)
            spec.pop("volumeName", None)
        if old_spec != new_spec:
            causes.append(
                forbidden("spec", "spec is immutable after creation except resources.requests and volumeName")
            )
    return causes
