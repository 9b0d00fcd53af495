"""The kinds the virtual cluster serves: API group/version, plural, short names, scope and subresources.

Two kinds are not always there, as on a real cluster: ``PodGroup`` (scheduling.x-k8s.io) is served as the
scheduler-plugins CustomResourceDefinition would be (``custom``), and ``Workload`` (scheduling.k8s.io/v1alpha1)
only while its feature gate, GenericWorkload, is on (``feature_gate``; ``served`` says which kinds a set of gates
serves). The registry itself lists every kind, so the store keeps a place for each whatever the gates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kss_sim.kube.versions import gate_enabled

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True, slots=True)
class KindInfo:
    """One resource type as discovery describes it."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = field(default=False)
    # Served as a CustomResourceDefinition: no empty spec/status rendered, status dropped on create (the status
    # subresource), fields checked against its OpenAPI schema (422 for wrong types too).
    custom: bool = False
    # The alpha feature gate that must be on for the kind to be served (None: always served).
    feature_gate: str | None = None
    # A review (TokenReview, SubjectAccessReview): create only, answered and never stored.
    review: bool = False

    @property
    def key(self) -> str:
        """Where the store keeps this kind's objects: its kind (a CRD's kinds: ``Kind.group``, see
        ``kss_sim.cluster.crd.kinds``)."""
        return self.kind

    @property
    def from_definition(self) -> bool:
        """Served from a CustomResourceDefinition (False for every kind of this registry)."""
        return False

    @property
    def api_version(self) -> str:
        """``apiVersion`` of objects of this kind (``v1`` or ``group/version``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        """Kind of the list object (``PodList``)."""
        return f"{self.kind}List"

    @property
    def qualified(self) -> str:
        """``plural.group`` as in error messages (``storageclasses.storage.k8s.io``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


KINDS: tuple[KindInfo, ...] = (
    KindInfo("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",), ("status", "finalize"), has_status=True),
    KindInfo("", "v1", "Node", "nodes", "node", False, ("no",), ("status",), has_status=True),
    KindInfo(
        "",
        "v1",
        "Pod",
        "pods",
        "pod",
        True,
        ("po",),
        ("binding", "eviction", "status", "log", "exec", "attach", "portforward"),
        ("all",),
        has_status=True,
    ),
    KindInfo(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        "persistentvolume",
        False,
        ("pv",),
        ("status",),
        has_status=True,
    ),
    KindInfo(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        True,
        ("pvc",),
        ("status",),
        has_status=True,
    ),
    KindInfo("", "v1", "Event", "events", "event", True, ("ev",)),
    # Kinds kss stores and serves without acting on them, as control-plane clients (kube-scheduler's informers,
    # kube-controller-manager) and real manifests expect them to exist.
    KindInfo("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",)),
    KindInfo("", "v1", "Secret", "secrets", "secret", True),
    KindInfo("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",)),
    KindInfo("", "v1", "Service", "services", "service", True, ("svc",), ("status",), ("all",), has_status=True),
    KindInfo("", "v1", "Endpoints", "endpoints", "endpoints", True, ("ep",)),
    KindInfo(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        "replicationcontroller",
        True,
        ("rc",),
        ("status",),
        ("all",),
        has_status=True,
    ),
    KindInfo("storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", False, ("sc",)),
    KindInfo("storage.k8s.io", "v1", "CSINode", "csinodes", "csinode", False),
    KindInfo("storage.k8s.io", "v1", "CSIDriver", "csidrivers", "csidriver", False),
    KindInfo("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", "csistoragecapacity", True),
    KindInfo(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        "volumeattachment",
        False,
        subresources=("status",),
        has_status=True,
    ),
    KindInfo("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", False, ("pc",)),
    KindInfo(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        True,
        ("pdb",),
        ("status",),
        has_status=True,
    ),
    KindInfo(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "PodGroup",
        "podgroups",
        "podgroup",
        True,
        ("pg", "pgs"),
        ("status",),
        has_status=True,
        custom=True,
    ),
    KindInfo(
        "scheduling.k8s.io", "v1alpha1", "Workload", "workloads", "workload", True, feature_gate="GenericWorkload"
    ),
    # The workload kinds kube-controller-manager's controllers own (app/controllers/ plays that part here).
    KindInfo(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        "deployment",
        True,
        ("deploy",),
        ("scale", "status"),
        ("all",),
        has_status=True,
    ),
    KindInfo(
        "apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ("rs",), ("scale", "status"), ("all",), True
    ),
    KindInfo(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        "statefulset",
        True,
        ("sts",),
        ("scale", "status"),
        ("all",),
        has_status=True,
    ),
    KindInfo("apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, ("ds",), ("status",), ("all",), True),
    KindInfo("batch", "v1", "Job", "jobs", "job", True, (), ("status",), ("all",), has_status=True),
    KindInfo("batch", "v1", "CronJob", "cronjobs", "cronjob", True, ("cj",), ("status",), ("all",), True),
    # Node heartbeats (kube-node-lease), renewed by the simulated kubelet.
    KindInfo("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    # Dynamic Resource Allocation (GA in v1.34): no short names or categories, as `kubectl api-resources` lists them.
    KindInfo("resource.k8s.io", "v1", "DeviceClass", "deviceclasses", "deviceclass", False),
    KindInfo("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", "resourceslice", False),
    KindInfo(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "resourceclaims",
        "resourceclaim",
        True,
        subresources=("status",),
        has_status=True,
    ),
    KindInfo("resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", "resourceclaimtemplate", True),
    KindInfo("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", True),
    # What delegated authentication and authorization ask (kube-scheduler's own HTTPS endpoint, kubectl auth can-i).
    KindInfo("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", "tokenreview", False, review=True),
    KindInfo(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        "subjectaccessreview",
        False,
        review=True,
    ),
    KindInfo(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        False,
        review=True,
    ),
    # CustomResourceDefinitions (kss_sim.cluster.crd); the kinds they define are served per store, not listed here.
    KindInfo(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
        False,
        ("crd", "crds"),
        ("status",),
        ("api-extensions",),
        has_status=True,
    ),
    KindInfo("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True),
    KindInfo("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True),
    KindInfo("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False),
    KindInfo(
        "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", False
    ),
)

BY_KIND: dict[str, KindInfo] = {k.kind: k for k in KINDS}
BY_RESOURCE: dict[tuple[str, str, str], KindInfo] = {(k.group, k.version, k.plural): k for k in KINDS}
Gates = Mapping[str, bool]
NO_GATES: Gates = {}


def served(info: KindInfo, gates: Gates) -> bool:
    """Whether ``info`` is served with these feature gates (an alpha kind only while its gate is on)."""
    return info.feature_gate is None or gate_enabled(dict(gates), info.feature_gate)


def group_versions(gates: Gates) -> dict[str, list[str]]:
    """Every served group and its versions, in registry order (the first one is the preferred version)."""
    out: dict[str, list[str]] = {}
    for info in KINDS:
        if served(info, gates):
            versions = out.setdefault(info.group, [])
            if info.version not in versions:
                versions.append(info.version)
    return out


def kind_info(kind: str) -> KindInfo:
    """The registry entry for a kind name (``"Pod"``); KeyError for kinds the cluster does not serve."""
    return BY_KIND[kind]


def resource_info(group: str, version: str, plural: str, gates: Gates = NO_GATES) -> KindInfo | None:
    """The kind served at ``/apis/{group}/{version}/{plural}`` (group "" is the core ``/api/v1``) with ``gates``."""
    info = BY_RESOURCE.get((group, version, plural))
    return info if info is not None and served(info, gates) else None


def kinds_in(group: str, version: str, gates: Gates = NO_GATES) -> list[KindInfo]:
    """Every kind served in one group/version with ``gates``, in registry order."""
    return [k for k in KINDS if k.group == group and k.version == version and served(k, gates)]
