"""The kinds the syncer mirrors, in the order they are applied, and where the API serves them.

Some kinds are ``optional``: a cluster serves them only with a CRD installed (PodGroup, from scheduler-plugins) or
an alpha feature gate on (Workload, GenericWorkload). They are mirrored when both ends serve them (discovery).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class Kind:
    """One mirrored resource type."""

    name: str  # Kind, as in objects ("PersistentVolumeClaim")
    api_version: str  # "v1" or "group/version"
    plural: str  # resource name in URLs ("persistentvolumeclaims")
    namespaced: bool
    mirror_status: bool  # status comes from the source too (nodes' allocatable, PV/PVC phases, PDB budgets)
    optional: bool = False  # not every cluster serves it: mirrored only when discovery finds it on both ends

    @property
    def group_version_path(self) -> str:
        """The discovery document listing this kind's resources (``/api/v1``, ``/apis/group/version``)."""
        return "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path: the collection (in ``namespace``, or everywhere), one object, or its subresource."""
        parts = [self.group_version_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


NAMESPACE = Kind("Namespace", "v1", "namespaces", False, False)
PRIORITY_CLASS = Kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", False, False)
STORAGE_CLASS = Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", False, False)
PVC = Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims", True, True)
NODE = Kind("Node", "v1", "nodes", False, True)
CSI_NODE = Kind("CSINode", "storage.k8s.io/v1", "csinodes", False, False)
PV = Kind("PersistentVolume", "v1", "persistentvolumes", False, True)
PDB = Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", True, True)
# A PodGroup's status is its controller's account of the source's pods; the simulator's pods are placed anew, so
# the status is not copied.
POD_GROUP = Kind("PodGroup", "scheduling.x-k8s.io/v1alpha1", "podgroups", True, False, optional=True)
WORKLOAD = Kind("Workload", "scheduling.k8s.io/v1alpha1", "workloads", True, False, optional=True)
POD = Kind("Pod", "v1", "pods", True, False)

# Applied in this order, so what an object refers to exists before it (classes before pods, PVCs before PVs,
# pod groups and workloads before their pods).
ORDER: tuple[Kind, ...] = (
    NAMESPACE,
    PRIORITY_CLASS,
    STORAGE_CLASS,
    PVC,
    NODE,
    CSI_NODE,
    PV,
    PDB,
    POD_GROUP,
    WORKLOAD,
    POD,
)
BY_NAME: dict[str, Kind] = {k.name: k for k in ORDER}
# Accepted spellings on the command line: Kind, lower-case kind, plural, short name.
_ALIASES: dict[str, str] = {
    "ns": "Namespace",
    "namespaces": "Namespace",
    "pc": "PriorityClass",
    "priorityclasses": "PriorityClass",
    "sc": "StorageClass",
    "storageclasses": "StorageClass",
    "pvc": "PersistentVolumeClaim",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "no": "Node",
    "nodes": "Node",
    "csinodes": "CSINode",
    "pv": "PersistentVolume",
    "persistentvolumes": "PersistentVolume",
    "pdb": "PodDisruptionBudget",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "pg": "PodGroup",
    "pgs": "PodGroup",
    "podgroups": "PodGroup",
    "workloads": "Workload",
    "po": "Pod",
    "pods": "Pod",
}


def parse_kinds(spec: str | None) -> tuple[Kind, ...]:
    """Kinds named in a comma-separated list (any spelling), in apply order; all of them for None or ""."""
    if not spec:
        return ORDER
    wanted: set[str] = set()
    lower = {k.name.lower(): k.name for k in ORDER}
    for raw in spec.split(","):
        word = raw.strip()
        if not word:
            continue
        name = word if word in BY_NAME else lower.get(word.lower()) or _ALIASES.get(word.lower())
        if name is None:
            raise ValueError(f"unknown kind {word!r}; known: {', '.join(k.name for k in ORDER)}")
        wanted.add(name)
    return tuple(k for k in ORDER if k.name in wanted)
