"""The kinds the virtual cluster serves: API group/version, plural, short names, scope and subresources.

Some kinds are not always there, as on a real cluster: ``PodGroup`` (scheduling.x-k8s.io) is served as the
scheduler-plugins CustomResourceDefinition would be (``custom``); the workload-scheduling kinds only while their
feature gate, GenericWorkload, is on (``feature_gate``) and only in the Kubernetes versions that have them
(``minors``): ``Workload`` in scheduling.k8s.io/v1alpha1 in v1.35, ``Workload`` and ``PodGroup`` in
scheduling.k8s.io/v1alpha2 in v1.36 and in v1beta1 (a view of the same stored objects) from v1.37 on; and only in
the group versions the release serves by default or ``--runtime-config`` enables (``kss_sim.kube.api_enablement``:
resource.k8s.io/v1 from v1.34 on, its betas when enabled). ``served`` says which kinds a version and a set of gates
have, ``api_served`` which of them the API serves under a runtime config. The registry itself lists every kind, so
the store keeps a place for each whatever the version and the gates.

A kind's ``kind`` is the name the store, the dispatch tables and the UI know it by, unique in the registry; it is
the Kubernetes kind itself except where two served types share one (``api_kind`` is what clients see).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kss_sim.kube.api_enablement import NO_RUNTIME_CONFIG, RuntimeConfig, api_enabled
from kss_sim.kube.versions import DEFAULT_KUBE_VERSION, gate_enabled

# The registry's names of v1.36's workload-scheduling kinds (``Workload`` and ``PodGroup`` are older types').
WORKLOAD_V1ALPHA2 = "Workload.v1alpha2"
POD_GROUP_V1ALPHA2 = "PodGroup.v1alpha2"

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
    # The Kubernetes minor versions whose kube-apiserver has this kind, first and last (None: still there).
    minors: tuple[int, int | None] = (0, None)
    # The kind clients see when ``kind`` (the registry's unique name) is not it: a second type of the same name.
    wire_kind: str = ""
    # Another group-version of ``kind``'s stored objects (``VIEWS``): kube-apiserver keeps one resource in storage
    # and converts it to the version a request names; the API converts at its edges, the store never sees it.
    view: bool = False

    @property
    def api_kind(self) -> str:
        """``kind`` of objects of this type as clients send and receive them (``PodGroup``)."""
        return self.wire_kind or self.kind

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
        return f"{self.api_kind}List"

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
        "scheduling.k8s.io",
        "v1alpha1",
        "Workload",
        "workloads",
        "workload",
        True,
        feature_gate="GenericWorkload",
        minors=(35, 35),
    ),
    # v1.36 replaced v1alpha1 (whose objects it cannot read) with an immutable Workload of pod group templates and
    # a runtime PodGroup with a status subresource (pkg/registry/scheduling/{workload,podgroup}). v1.37 serves them
    # in v1beta1 only (WORKLOAD_V1BETA1, POD_GROUP_V1BETA1 below); the store keeps this form from 1.36 on, and the
    # API serves v1alpha2 only where it is registered (1.36).
    KindInfo(
        "scheduling.k8s.io",
        "v1alpha2",
        WORKLOAD_V1ALPHA2,
        "workloads",
        "workload",
        True,
        feature_gate="GenericWorkload",
        minors=(36, None),
        wire_kind="Workload",
    ),
    KindInfo(
        "scheduling.k8s.io",
        "v1alpha2",
        POD_GROUP_V1ALPHA2,
        "podgroups",
        "podgroup",
        True,
        subresources=("status",),
        has_status=True,
        feature_gate="GenericWorkload",
        minors=(36, None),
        wire_kind="PodGroup",
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
    # The StatefulSet and DaemonSet controllers' template history (kubectl rollout history/undo reads it).
    KindInfo("apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", True),
    KindInfo("batch", "v1", "Job", "jobs", "job", True, (), ("status",), ("all",), has_status=True),
    KindInfo("batch", "v1", "CronJob", "cronjobs", "cronjob", True, ("cj",), ("status",), ("all",), True),
    # Scales a workload through its scale subresource from a per-pod metric (controllers/horizontal.py).
    KindInfo(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        True,
        ("hpa",),
        ("status",),
        ("all",),
        has_status=True,
    ),
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

# Kinds served from another kind's stored objects (``kind`` names the stored one, ``view`` set): not in ``KINDS``,
# which lists what the store holds; found by URL (``resource_info``) and listed by discovery.
EVENTS_V1 = KindInfo("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",), view=True)
# kubectl autoscale (before v1.34) creates autoscaling/v1 objects; v2 stays the preferred version, as upstream's.
AUTOSCALING_V1 = KindInfo(
    "autoscaling",
    "v1",
    "HorizontalPodAutoscaler",
    "horizontalpodautoscalers",
    "horizontalpodautoscaler",
    True,
    ("hpa",),
    ("status",),
    ("all",),
    has_status=True,
    view=True,
)


def _dra_view(version: str, stored: str) -> KindInfo:
    info = next(k for k in KINDS if k.kind == stored)
    return KindInfo(
        info.group,
        version,
        info.kind,
        info.plural,
        info.singular,
        info.namespaced,
        subresources=info.subresources,
        has_status=info.has_status,
        view=True,
    )


# resource.k8s.io's beta versions over the stored v1 objects (kss_sim.cluster.api.dra_versions), v1beta2 first: the
# group's version priority (pkg/apis/resource/install), so the preferred version at v1.33, where v1 is not served.
DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
DRA_V1BETA2 = tuple(_dra_view("v1beta2", kind) for kind in DRA_KINDS)
DRA_V1BETA1 = tuple(_dra_view("v1beta1", kind) for kind in DRA_KINDS)


def _workload_view(stored: str) -> KindInfo:
    info = next(k for k in KINDS if k.kind == stored)
    return KindInfo(
        info.group,
        "v1beta1",
        info.kind,
        info.plural,
        info.singular,
        info.namespaced,
        subresources=info.subresources,
        has_status=info.has_status,
        feature_gate=info.feature_gate,
        minors=(37, None),
        wire_kind=info.wire_kind,
        view=True,
    )


# v1.37's Workload API (scheduling.k8s.io/v1beta1) over the stored v1alpha2 objects
# (kss_sim.cluster.api.workload_v1beta1).
WORKLOAD_V1BETA1 = _workload_view(WORKLOAD_V1ALPHA2)
POD_GROUP_V1BETA1 = _workload_view(POD_GROUP_V1ALPHA2)
VIEWS: tuple[KindInfo, ...] = (
    EVENTS_V1,
    AUTOSCALING_V1,
    *DRA_V1BETA2,
    *DRA_V1BETA1,
    WORKLOAD_V1BETA1,
    POD_GROUP_V1BETA1,
)

BY_KIND: dict[str, KindInfo] = {k.kind: k for k in KINDS}
BY_RESOURCE: dict[tuple[str, str, str], KindInfo] = {(k.group, k.version, k.plural): k for k in KINDS + VIEWS}
BY_API_TYPE: dict[tuple[str, str], KindInfo] = {(k.api_version, k.api_kind): k for k in KINDS}
Gates = Mapping[str, bool]
NO_GATES: Gates = {}
# The minor version a caller that names none serves (the default --kube-version).
DEFAULT_MINOR = int(DEFAULT_KUBE_VERSION.split(".")[1])


def minor_of(kube_version: str | None) -> int:
    """The minor number of a release name (``"1.36"`` -> 36); None: the default version's."""
    return int(kube_version.split(".")[1]) if kube_version else DEFAULT_MINOR


def served(info: KindInfo, gates: Gates, minor: int = DEFAULT_MINOR) -> bool:
    """Whether Kubernetes 1.``minor`` has ``info`` with these feature gates (an alpha kind only while its gate is
    on): what the store accepts, whatever group version the API serves it in."""
    first, last = info.minors
    if minor < first or (last is not None and minor > last):
        return False
    return info.feature_gate is None or gate_enabled(dict(gates), info.feature_gate)


def api_served(
    info: KindInfo, gates: Gates, minor: int = DEFAULT_MINOR, apis: RuntimeConfig = NO_RUNTIME_CONFIG
) -> bool:
    """Whether the API serves ``info`` at Kubernetes 1.``minor`` with these gates and the ``--runtime-config``
    ``apis``: the kind is there (``served``) and its group version enabled (a kind served as a
    CustomResourceDefinition would be is not kube-apiserver's own: the flag does not reach it)."""
    if not served(info, gates, minor):
        return False
    return info.custom or api_enabled(info.group, info.version, info.plural, minor, apis)


def info_for(api_version: str, kind: str) -> KindInfo | None:
    """The registry entry of objects that say ``apiVersion: api_version`` and ``kind: kind``, or None."""
    return BY_API_TYPE.get((api_version, kind))


def group_versions(
    gates: Gates, minor: int = DEFAULT_MINOR, apis: RuntimeConfig = NO_RUNTIME_CONFIG
) -> dict[str, list[str]]:
    """Every served group and its versions, in registry order (the first one is the preferred version)."""
    out: dict[str, list[str]] = {}
    for info in KINDS + VIEWS:
        if api_served(info, gates, minor, apis):
            versions = out.setdefault(info.group, [])
            if info.version not in versions:
                versions.append(info.version)
    return out


def kind_info(kind: str) -> KindInfo:
    """The registry entry for a kind name (``"Pod"``); KeyError for kinds the cluster does not serve."""
    return BY_KIND[kind]


def resource_info(
    group: str,
    version: str,
    plural: str,
    gates: Gates = NO_GATES,
    minor: int = DEFAULT_MINOR,
    apis: RuntimeConfig = NO_RUNTIME_CONFIG,
) -> KindInfo | None:
    """The kind served at ``/apis/{group}/{version}/{plural}`` (group "" is the core ``/api/v1``) with ``gates``
    by Kubernetes 1.``minor`` under the runtime config ``apis``."""
    info = BY_RESOURCE.get((group, version, plural))
    return info if info is not None and api_served(info, gates, minor, apis) else None


def kinds_in(
    group: str,
    version: str,
    gates: Gates = NO_GATES,
    minor: int = DEFAULT_MINOR,
    apis: RuntimeConfig = NO_RUNTIME_CONFIG,
) -> list[KindInfo]:
    """Every kind served in one group/version with ``gates`` by Kubernetes 1.``minor`` under the runtime config
    ``apis``, in registry order."""
    return [k for k in KINDS + VIEWS if k.group == group and k.version == version and api_served(k, gates, minor, apis)]
