"""The kinds the established CustomResourceDefinitions serve: one ``CustomKindInfo`` per served version, with what
its version's schema and subresources say, kept per store and rebuilt only when a CRD changes.

A custom kind is stored under ``Kind.group`` (``RayCluster.ray.io``), never its bare kind: two CRDs may name the
same kind in different groups, and a CRD may name a built-in one (Kueue's ``Workload``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kss_sim.cluster.crd import schema as crd_schema
from kss_sim.cluster.crd.cel import Validations, compile_validations
from kss_sim.cluster.crd.conversion import Webhook, webhook_of
from kss_sim.cluster.crd.definition import is_established
from kss_sim.cluster.errors import Cause
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.cluster.kinds.stored import StoredObject
from kss_sim.kube.objects import Obj


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One of a version's ``additionalPrinterColumns``."""

    name: str
    type: str
    format: str
    description: str
    priority: int
    json_path: str


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """The scale subresource's paths (``.spec.replicas``, ``.status.replicas``, ``.status.selector``)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str | None


@dataclass(frozen=True, slots=True, eq=False)
class CustomKindInfo(KindInfo):
    """A kind served by a CRD, at one of its served versions."""

    storage_version: str = ""
    crd_name: str = ""
    schema: Mapping[str, Any] = field(default_factory=dict)
    validator: Callable[[Any], list[Cause]] | None = None  # every violation of the version's schema
    validations: Validations | None = None  # x-kubernetes-validations (CEL)
    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: ScalePaths | None = None
    conversion: Webhook | None = None  # the CRD's conversion webhook (strategy Webhook); None: strategy None

    @property
    def key(self) -> str:
        """Where the store keeps its objects: ``Kind.group``."""
        return f"{self.kind}.{self.group}"

    @property
    def from_definition(self) -> bool:
        """Served from a CustomResourceDefinition."""
        return True

    @property
    def storage_api_version(self) -> str:
        """``apiVersion`` of the stored objects."""
        return f"{self.group}/{self.storage_version}"


def crd_key(crd: Obj) -> str:
    """The store key of the kind ``crd`` defines (``Kind.group``)."""
    spec = crd.get("spec") or {}
    return f"{(spec.get('names') or {}).get('kind', '')}.{spec.get('group', '')}"


def kinds_of(crd: Obj) -> list[CustomKindInfo]:
    """The served versions of an established CRD, the storage version first."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    storage = next((str(v["name"]) for v in versions if v.get("storage")), "")
    out: list[CustomKindInfo] = []
    for version in versions:
        if not version.get("served"):
            continue
        subresources = version.get("subresources") or {}
        scale = subresources.get("scale")
        openapi = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        columns = tuple(
            PrinterColumn(
                str(c.get("name", "")),
                str(c.get("type", "string")),
                str(c.get("format", "")),
                str(c.get("description", "")),
                int(c.get("priority") or 0),
                str(c.get("jsonPath", "")),
            )
            for c in version.get("additionalPrinterColumns") or []
        )
        info = CustomKindInfo(
            group=str(spec.get("group", "")),
            version=str(version.get("name", "")),
            kind=str(names.get("kind", "")),
            plural=str(names.get("plural", "")),
            singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            subresources=tuple(s for s in ("status", "scale") if s in subresources),
            categories=tuple(names.get("categories") or ()),
            has_status="status" in subresources,
            custom=True,
            storage_version=storage,
            crd_name=str((crd.get("metadata") or {}).get("name", "")),
            schema=openapi,
            validator=crd_schema.compile_validator(openapi),
            validations=compile_validations(openapi),
            printer_columns=columns,
            conversion=webhook_of(spec),
            scale=ScalePaths(
                str(scale.get("specReplicasPath", "")),
                str(scale.get("statusReplicasPath", "")),
                scale.get("labelSelectorPath"),
            )
            if isinstance(scale, dict)
            else None,
        )
        out.append(info)
    out.sort(key=lambda i: i.version != storage)
    return out


class CustomKinds:
    """The custom kinds of one store, from its CRDs (``refresh`` with the working CRD entries under the store's
    lock before a lookup: nothing is rebuilt unless a CRD changed, and a CRD version is compiled once)."""

    def __init__(self) -> None:
        self._signature: tuple[str, ...] = ()
        self._compiled: dict[tuple[str, str], list[CustomKindInfo]] = {}  # (uid, resourceVersion) -> kinds
        self._by_resource: dict[tuple[str, str, str], CustomKindInfo] = {}
        self._by_key: dict[str, CustomKindInfo] = {}
        self._all: list[CustomKindInfo] = []

    def refresh(self, crds: Mapping[tuple[str, str], StoredObject]) -> None:
        """Rebuild from ``crds`` (the CRD entries) when they changed since the last call."""
        signature = tuple(e.obj["metadata"].get("resourceVersion", "") for e in crds.values())
        if signature == self._signature and len(self._compiled) == len(signature):
            return
        compiled: dict[tuple[str, str], list[CustomKindInfo]] = {}
        for entry in crds.values():
            meta = entry.obj["metadata"]
            ident = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")))
            kinds = self._compiled.get(ident)
            if kinds is None:
                kinds = kinds_of(entry.obj) if is_established(entry.obj) and "deletionTimestamp" not in meta else []
            compiled[ident] = kinds
        self._compiled = compiled
        self._signature = signature
        self._all = [k for kinds in compiled.values() for k in kinds]
        self._by_resource = {(k.group, k.version, k.plural): k for k in self._all}
        self._by_key = {}
        for k in self._all:
            self._by_key.setdefault(k.key, k)  # the storage version is listed first

    def by_key(self, key: str) -> CustomKindInfo | None:
        """The storage version's kind stored under ``key``."""
        return self._by_key.get(key)

    def resource(self, group: str, version: str, plural: str) -> CustomKindInfo | None:
        """The kind served at ``/apis/{group}/{version}/{plural}``."""
        return self._by_resource.get((group, version, plural))

    def served(self) -> list[CustomKindInfo]:
        """Every served version of every custom kind."""
        return list(self._all)

    def storage_kinds(self) -> list[CustomKindInfo]:
        """Each custom kind once, at its storage version."""
        return list(self._by_key.values())
