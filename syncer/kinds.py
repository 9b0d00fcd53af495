"""The kinds the syncer mirrors, in the order they are applied, and where the API serves them.

Some kinds are ``optional``: a cluster serves them only with a CRD installed (PodGroup, from scheduler-plugins) or
an alpha feature gate on (Workload, GenericWorkload). They are mirrored when both ends serve them (discovery).
Kubernetes v1.36 replaced v1.35's Workload (scheduling.k8s.io/v1alpha1) with v1alpha2's Workload and PodGroup, and
v1.37 served them in v1beta1 instead: the same kind names in other versions, so their ``name`` here says the version
(``Workload.v1alpha2``, ``Workload.v1beta1``) and ``object_kind`` the kind; asking for Workloads or PodGroups asks
for every version of them, and discovery keeps the one both ends serve.

The ``workload`` kinds (apps/v1 Deployments, ReplicaSets, StatefulSets, DaemonSets, batch/v1 Jobs, CronJobs) are
mirrored only when asked for (``--workloads`` or by name in ``--kinds``): the simulator's own controllers then run
them. They come after pods in the apply order, so that a mirrored controller finds the pods (ReplicaSets) it
adopts already there instead of creating its own.

The objects a namespace's applications carry beside their pods (ServiceAccounts, ConfigMaps, Secrets, Services:
``APPLICATION_OBJECTS``) are mirrored with the workloads (``--workloads``) or by name: the simulator acts on none
of them, but a bundle applied to the source is then read from the simulator as from the source. Secrets are copied
with their data.

CustomResourceDefinitions are mirrored when asked for (``--custom-resources`` or ``crd`` in ``--kinds``), and with
them the objects of every CRD the source has (``custom_kinds``: one ``custom`` kind per CRD, at its storage
version, applied right after the CRDs, before what may refer to them; a CRD established later brings its kind along
while the syncer runs: ``syncer.runner``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
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
    workload: bool = False  # a controller's object: mirrored only when asked for, run by the simulator's controllers
    wire_kind: str = ""  # the objects' ``kind`` when ``name`` is not it (a second version of a kind)
    custom: bool = False  # a CRD's kind, found in the source's CRDs (``custom_kinds``)

    @property
    def object_kind(self) -> str:
        """``kind`` as the objects say it (``Workload``)."""
        return self.wire_kind or self.name

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
# A CRD's status is the simulator's own (names accepted, established), never copied.
CRD = Kind(
    "CustomResourceDefinition", "apiextensions.k8s.io/v1", "customresourcedefinitions", False, False, optional=True
)
POD_GROUP = Kind("PodGroup", "scheduling.x-k8s.io/v1alpha1", "podgroups", True, False, optional=True)
WORKLOAD = Kind("Workload", "scheduling.k8s.io/v1alpha1", "workloads", True, False, optional=True)
# v1.36: a PodGroup's status is the scheduler's account of its pods, made anew by the simulator's scheduler.
WORKLOAD_V1ALPHA2 = Kind(
    "Workload.v1alpha2", "scheduling.k8s.io/v1alpha2", "workloads", True, False, optional=True, wire_kind="Workload"
)
POD_GROUP_V1ALPHA2 = Kind(
    "PodGroup.v1alpha2", "scheduling.k8s.io/v1alpha2", "podgroups", True, False, optional=True, wire_kind="PodGroup"
)
# v1.37: the same kinds in the beta scheduling.k8s.io/v1beta1 (v1alpha2 dropped).
WORKLOAD_V1BETA1 = Kind(
    "Workload.v1beta1", "scheduling.k8s.io/v1beta1", "workloads", True, False, optional=True, wire_kind="Workload"
)
POD_GROUP_V1BETA1 = Kind(
    "PodGroup.v1beta1", "scheduling.k8s.io/v1beta1", "podgroups", True, False, optional=True, wire_kind="PodGroup"
)
# Dynamic Resource Allocation (resource.k8s.io/v1, v1.34+): optional, mirrored where both ends serve it. A claim's
# status is not copied (the simulator's scheduler allocates); claims a pod owns (made from its template by the
# source's resourceclaim controller) are left to the simulator's controller, which makes them from the template.
DEVICE_CLASS = Kind("DeviceClass", "resource.k8s.io/v1", "deviceclasses", False, False, optional=True)
RESOURCE_SLICE = Kind("ResourceSlice", "resource.k8s.io/v1", "resourceslices", False, False, optional=True)
RESOURCE_CLAIM_TEMPLATE = Kind(
    "ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates", True, False, optional=True
)
RESOURCE_CLAIM = Kind("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", True, False, optional=True)
POD = Kind("Pod", "v1", "pods", True, False)
SERVICE_ACCOUNT = Kind("ServiceAccount", "v1", "serviceaccounts", True, False)
CONFIG_MAP = Kind("ConfigMap", "v1", "configmaps", True, False)
SECRET = Kind("Secret", "v1", "secrets", True, False)
# A Service's status (load balancer ingress) is the source's cloud's; not copied.
SERVICE = Kind("Service", "v1", "services", True, False)
# Workloads: their status is the simulator's controllers' account of the simulator's pods, never copied.
REPLICA_SET = Kind("ReplicaSet", "apps/v1", "replicasets", True, False, optional=True, workload=True)
DEPLOYMENT = Kind("Deployment", "apps/v1", "deployments", True, False, optional=True, workload=True)
STATEFUL_SET = Kind("StatefulSet", "apps/v1", "statefulsets", True, False, optional=True, workload=True)
DAEMON_SET = Kind("DaemonSet", "apps/v1", "daemonsets", True, False, optional=True, workload=True)
JOB = Kind("Job", "batch/v1", "jobs", True, False, optional=True, workload=True)
CRON_JOB = Kind("CronJob", "batch/v1", "cronjobs", True, False, optional=True, workload=True)

# Applied in this order, so what an object refers to exists before it (classes before pods, PVCs before PVs,
# pod groups and workloads before their pods), and a controller after what it adopts (pods before ReplicaSets,
# StatefulSets and DaemonSets, ReplicaSets before Deployments, Jobs before CronJobs).
ORDER: tuple[Kind, ...] = (
    NAMESPACE,
    PRIORITY_CLASS,
    STORAGE_CLASS,
    CRD,
    DEVICE_CLASS,
    PVC,
    NODE,
    CSI_NODE,
    RESOURCE_SLICE,
    PV,
    PDB,
    SERVICE_ACCOUNT,
    CONFIG_MAP,
    SECRET,
    SERVICE,
    POD_GROUP,
    WORKLOAD,
    WORKLOAD_V1ALPHA2,
    POD_GROUP_V1ALPHA2,
    WORKLOAD_V1BETA1,
    POD_GROUP_V1BETA1,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_CLAIM,
    POD,
    REPLICA_SET,
    DEPLOYMENT,
    STATEFUL_SET,
    DAEMON_SET,
    JOB,
    CRON_JOB,
)
BY_NAME: dict[str, Kind] = {k.name: k for k in ORDER}
# Mirrored with the workloads, not by default (see the module's text).
APPLICATION_OBJECTS: tuple[Kind, ...] = (SERVICE_ACCOUNT, CONFIG_MAP, SECRET, SERVICE)
# Mirrored by default: everything but the workloads, the application objects and the CRDs.
DEFAULT: tuple[Kind, ...] = tuple(k for k in ORDER if not k.workload and k is not CRD and k not in APPLICATION_OBJECTS)
WORKLOADS: tuple[Kind, ...] = tuple(k for k in ORDER if k.workload)
# A controller mirrored without the kind it manages would be run beside copies it cannot adopt or would duplicate
# (a Deployment creating its own ReplicaSets next to the mirrored ones' pods), so asking for it brings that kind.
_BRINGS: dict[str, str] = {"Deployment": "ReplicaSet", "CronJob": "Job"}
# A kind asked for by name is asked for in every version (discovery keeps those both ends serve).
_OTHER_VERSIONS: dict[str, tuple[str, ...]] = {
    "Workload": ("Workload.v1alpha2", "Workload.v1beta1"),
    "PodGroup": ("PodGroup.v1alpha2", "PodGroup.v1beta1"),
}
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
    "rs": "ReplicaSet",
    "replicasets": "ReplicaSet",
    "deploy": "Deployment",
    "deployments": "Deployment",
    "sts": "StatefulSet",
    "statefulsets": "StatefulSet",
    "ds": "DaemonSet",
    "daemonsets": "DaemonSet",
    "jobs": "Job",
    "cj": "CronJob",
    "cronjobs": "CronJob",
    "deviceclasses": "DeviceClass",
    "resourceslices": "ResourceSlice",
    "resourceclaimtemplates": "ResourceClaimTemplate",
    "resourceclaims": "ResourceClaim",
    "sa": "ServiceAccount",
    "serviceaccounts": "ServiceAccount",
    "cm": "ConfigMap",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "svc": "Service",
    "services": "Service",
    "crd": "CustomResourceDefinition",
    "crds": "CustomResourceDefinition",
    "customresourcedefinitions": "CustomResourceDefinition",
}


def parse_kinds(spec: str | None, *, workloads: bool = False, custom_resources: bool = False) -> tuple[Kind, ...]:
    """Kinds named in a comma-separated list (any spelling), in apply order; ``DEFAULT`` for None or "".

    ``workloads`` adds every workload kind and the application objects; a Deployment brings ReplicaSets and a
    CronJob brings Jobs.
    ``custom_resources`` adds the CRDs (their objects' kinds are found when the run starts: ``custom_kinds``).
    """
    wanted: set[str] = {k.name for k in (*WORKLOADS, *APPLICATION_OBJECTS)} if workloads else set()
    if custom_resources:
        wanted.add(CRD.name)
    if not spec:
        wanted |= {k.name for k in DEFAULT}
    lower = {k.name.lower(): k.name for k in ORDER}
    for raw in (spec or "").split(","):
        word = raw.strip()
        if not word:
            continue
        name = word if word in BY_NAME else lower.get(word.lower()) or _ALIASES.get(word.lower())
        if name is None:
            raise ValueError(f"unknown kind {word!r}; known: {', '.join(k.name for k in ORDER)}")
        wanted.add(name)
    wanted |= {_BRINGS[name] for name in wanted if name in _BRINGS}
    wanted |= {other for name in wanted if name in _OTHER_VERSIONS for other in _OTHER_VERSIONS[name]}
    return tuple(k for k in ORDER if k.name in wanted)


def custom_kinds(crds: list[dict[str, Any]]) -> tuple[Kind, ...]:
    """One ``custom`` kind per established CRD of ``crds`` (the source's), at its storage version."""
    out: list[Kind] = []
    for crd in crds:
        conditions = (crd.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            continue
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        storage = next((v.get("name") for v in spec.get("versions") or [] if v.get("storage")), None)
        if not storage or not names.get("kind") or not names.get("plural"):
            continue
        api_version = f"{spec.get('group')}/{storage}"
        out.append(
            Kind(
                str(names["kind"]),
                api_version,
                str(names["plural"]),
                spec.get("scope") == "Namespaced",
                False,
                custom=True,
            )
        )
    return tuple(sorted(out, key=lambda k: (k.api_version, k.name)))


def with_custom_kinds(kinds: tuple[Kind, ...], custom: tuple[Kind, ...]) -> tuple[Kind, ...]:
    """``kinds`` with ``custom`` right after the CRDs (their objects after the CRD that defines them)."""
    if CRD not in kinds:
        return kinds
    at = kinds.index(CRD) + 1
    return (*kinds[:at], *custom, *kinds[at:])
