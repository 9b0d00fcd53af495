"""The kinds the virtual cluster serves: API group/version, plural, short names, scope and subresources."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    KindInfo("", "v1", "Pod", "pods", "pod", True, ("po",), ("binding", "status"), ("all",), has_status=True),
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
    KindInfo("storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", False, ("sc",)),
    KindInfo("storage.k8s.io", "v1", "CSINode", "csinodes", "csinode", False),
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
)

BY_KIND: dict[str, KindInfo] = {k.kind: k for k in KINDS}
BY_RESOURCE: dict[tuple[str, str, str], KindInfo] = {(k.group, k.version, k.plural): k for k in KINDS}
GROUP_VERSIONS: dict[str, list[str]] = {}
for _k in KINDS:
    versions = GROUP_VERSIONS.setdefault(_k.group, [])
    if _k.version not in versions:
        versions.append(_k.version)


def kind_info(kind: str) -> KindInfo:
    """The registry entry for a kind name (``"Pod"``); KeyError for kinds the cluster does not serve."""
    return BY_KIND[kind]


def resource_info(group: str, version: str, plural: str) -> KindInfo | None:
    """The kind served at ``/apis/{group}/{version}/{plural}`` (group "" is the core ``/api/v1``)."""
    return BY_RESOURCE.get((group, version, plural))


def kinds_in(group: str, version: str) -> list[KindInfo]:
    """Every kind served in one group/version, in registry order."""
    return [k for k in KINDS if k.group == group and k.version == version]
