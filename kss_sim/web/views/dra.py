"""Dynamic Resource Allocation on the pages: a node's devices, a ResourceClaim, the DRA overview, a pod's claims,
and, on an attempt, the simulator's explanation beneath each DynamicResources rejection.

Everything but the explanation is read from the store; the explanation is computed by the scheduler's side
(``SchedulerView.explain_dra``), which has the CEL selectors and the devices allocated or in flight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kss_sim.cluster.errors import ApiError
from kss_sim.kube.objects import Obj, metadata_of
from kss_sim.web.dra_devices import (
    Holder,
    NodeDevice,
    PodClaimRef,
    attribute_text,
    capacity_text,
    device_holders,
    devices_on_node,
    pod_claim_refs,
)
from kss_sim.web.formatting import to_yaml
from kss_sim.web.ports import DraRequestExplanation, SchedulerView, Store
from kss_sim.web.views.events import events_for

DRA_PLUGIN = "DynamicResources"
# Nodes explained on one attempt: the explanation reads every device of each node, the matrix page holds 50 rows.
MAX_EXPLAINED_NODES = 20
MAX_CLAIM_ROWS = 500  # the Devices page lists this many claims (by namespace and name); the rest are counted


def _objects(store: Store, kind: str, namespace: str | None = None) -> list[Obj]:
    return [e.obj for e in store.select(kind, namespace).items]


# ---------------------------------------------------------------------------------------------- a node's devices


@dataclass(slots=True)
class DeviceRow:
    """One device a node can use, with its attributes, capacity and the claims holding it (none: free)."""

    driver: str
    pool: str
    name: str
    slice_name: str
    reach: str
    attributes: list[tuple[str, str]]
    capacity: list[tuple[str, str]]
    holders: list[Holder]

    @property
    def taken(self) -> bool:
        """Allocated to a claim without admin access (admin access shares the device)."""
        return any(not h.admin_access for h in self.holders)


def _device_row(device: NodeDevice, holders: Mapping[tuple[str, str, str], list[Holder]]) -> DeviceRow:
    attrs = device.device.get("attributes") or {}
    cap = device.device.get("capacity") or {}
    return DeviceRow(
        device.driver,
        device.pool,
        device.name,
        device.slice_name,
        device.reach,
        [(k, attribute_text(v)) for k, v in sorted(attrs.items())],
        [(k, capacity_text(v)) for k, v in sorted(cap.items())],
        holders.get(device.key, []),
    )


def node_devices(store: Store, node: Mapping[str, Any]) -> list[DeviceRow]:
    """The devices of the ResourceSlices this node can use, each with the claims its allocation results name."""
    slices = _objects(store, "ResourceSlice")
    if not slices:
        return []
    holders = device_holders(_objects(store, "ResourceClaim"))
    return [_device_row(d, holders) for d in devices_on_node(slices, node)]


# ---------------------------------------------------------------------------------------------- a claim


@dataclass(slots=True)
class RequestRow:
    """One request of a claim's spec (a firstAvailable alternative is its own row, named ``request/sub``)."""

    name: str
    device_class: str
    mode: str  # "ExactCount 2", "All"
    selectors: list[str]
    admin_access: bool


@dataclass(slots=True)
class ClaimDetail:
    """The claim page."""

    namespace: str
    name: str
    obj: Obj
    yaml: str
    requests: list[RequestRow]
    results: list[Obj]  # status.allocation.devices.results
    node_selector: str  # status.allocation.nodeSelector in words ("" when unset)
    config: str  # status.allocation.devices.config as YAML ("" when none)
    reserved_for: list[Obj]  # status.reservedFor
    owner_pod: str  # the controlling pod's name, for a claim generated from a template
    template: str  # the ResourceClaimTemplate it was generated from (by the pod's entry), when known
    events: list[Obj]
    resource_version: int

    @property
    def allocated(self) -> bool:
        """``status.allocation`` is set."""
        return bool((self.obj.get("status") or {}).get("allocation"))


def _mode(spec: Mapping[str, Any]) -> str:
    if spec.get("allocationMode") == "All":
        return "All"
    return f"ExactCount {spec.get('count') or 1}"


def request_rows(claim_spec: Mapping[str, Any]) -> list[RequestRow]:
    """The requests of a claim's (or template's) spec, alternatives flattened."""
    rows: list[RequestRow] = []
    for request in (claim_spec.get("devices") or {}).get("requests") or []:
        name = str(request.get("name") or "")
        entries: list[tuple[str, Mapping[str, Any]]] = []
        if request.get("exactly") is not None:
            entries.append((name, request["exactly"]))
        entries += [(f"{name}/{sub.get('name')}", sub) for sub in request.get("firstAvailable") or []]
        for label, spec in entries:
            selectors = [str((s.get("cel") or {}).get("expression") or "") for s in spec.get("selectors") or []]
            rows.append(
                RequestRow(
                    label, str(spec.get("deviceClassName") or ""), _mode(spec), selectors, bool(spec.get("adminAccess"))
                )
            )
    return rows


def node_selector_text(selector: Mapping[str, Any] | None) -> str:
    """A node selector in words: terms ORed, each term's requirements ANDed (``metadata.name In [node-b]``)."""
    if not selector:
        return ""
    terms = []
    for term in selector.get("nodeSelectorTerms") or []:
        parts = [
            f"{r.get('key')} {r.get('operator')} [{', '.join(r.get('values') or [])}]"
            for r in (term.get("matchExpressions") or []) + (term.get("matchFields") or [])
        ]
        terms.append(" and ".join(parts))
    return " or ".join(f"({t})" if len(terms) > 1 else t for t in terms)


def _owner_pod(claim: Mapping[str, Any]) -> str:
    for ref in metadata_of(claim).get("ownerReferences") or []:
        if ref.get("kind") == "Pod" and ref.get("controller"):
            return str(ref.get("name") or "")
    return ""


def claim_view(store: Store, namespace: str, name: str) -> ClaimDetail | None:
    """A ResourceClaim: its requests, allocation, reservations and owner; None when there is no such claim."""
    rv = store.resource_version
    try:
        claim = store.read("ResourceClaim", namespace, name).obj
    except ApiError:
        return None
    status = claim.get("status") or {}
    allocation = status.get("allocation") or {}
    owner = _owner_pod(claim)
    template = ""
    if owner:
        pod = store.get("Pod", namespace, owner)
        for ref in pod_claim_refs(pod) if pod else []:
            if ref.claim == name and ref.template:
                template = ref.template
    config = (allocation.get("devices") or {}).get("config")
    return ClaimDetail(
        namespace,
        name,
        claim,
        to_yaml(claim),
        request_rows(claim.get("spec") or {}),
        list((allocation.get("devices") or {}).get("results") or []),
        node_selector_text(allocation.get("nodeSelector")),
        to_yaml(config) if config else "",
        list(status.get("reservedFor") or []),
        owner,
        template,
        events_for(store, "ResourceClaim", namespace, name),
        rv,
    )


# ---------------------------------------------------------------------------------------------- a pod's claims


@dataclass(slots=True)
class PodClaimRow:
    """One of a pod's claims as the pod page lists it."""

    ref: PodClaimRef
    namespace: str
    exists: bool
    devices: list[str]  # driver/pool/device of its allocation results
    reserved: bool  # the pod is in its reservedFor


def pod_claims(store: Store, pod: Mapping[str, Any]) -> list[PodClaimRow]:
    """The pod's ``spec.resourceClaims`` with the claims they name (or were generated) and their allocation."""
    namespace = str(metadata_of(pod).get("namespace") or "default")
    uid = metadata_of(pod).get("uid")
    rows: list[PodClaimRow] = []
    for ref in pod_claim_refs(pod):
        claim = store.get("ResourceClaim", namespace, ref.claim) if ref.claim else None
        status = (claim or {}).get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        devices = [f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results]
        reserved = any(r.get("uid") == uid for r in status.get("reservedFor") or [])
        rows.append(PodClaimRow(ref, namespace, claim is not None, devices, reserved))
    return rows


# ---------------------------------------------------------------------------------------------- the DRA page


@dataclass(slots=True)
class ClassRow:
    name: str
    selectors: list[str]
    configs: int


@dataclass(slots=True)
class NodeDevicesRow:
    """A node's devices in numbers, for the DRA page."""

    node: str
    slices: list[str]
    drivers: list[str]
    devices: int
    taken: int


@dataclass(slots=True)
class ClaimRow:
    namespace: str
    name: str
    state: str  # "allocated" / "pending"
    devices: list[str]
    reserved_for: list[str]  # pod names
    owner_pod: str
    requests: int


@dataclass(slots=True)
class DraOverview:
    classes: list[ClassRow]
    nodes: list[NodeDevicesRow]
    claims: list[ClaimRow]
    templates: list[tuple[str, str, int]]  # namespace, name, requests
    unattached_slices: list[str] = field(default_factory=list)  # slices no node can use
    resource_version: int = 0
    claims_total: int = 0  # the claims shown are the first MAX_CLAIM_ROWS of these


def dra_view(store: Store) -> DraOverview:
    """Device classes, each node's devices (taken / total), every claim and template."""
    rv = store.resource_version
    classes = [
        ClassRow(
            metadata_of(c).get("name") or "",
            [str((s.get("cel") or {}).get("expression") or "") for s in (c.get("spec") or {}).get("selectors") or []],
            len((c.get("spec") or {}).get("config") or []),
        )
        for c in _objects(store, "DeviceClass")
    ]
    slices = _objects(store, "ResourceSlice")
    claims = _objects(store, "ResourceClaim")
    holders = device_holders(claims)
    nodes: list[NodeDevicesRow] = []
    used: set[str] = set()
    # Most slices name their node: file them by it, so each node looks only at its own and the network-attached ones.
    by_node: dict[str, list[Obj]] = {}
    shared: list[Obj] = []
    for s in slices:
        node_name = (s.get("spec") or {}).get("nodeName")
        if node_name:
            by_node.setdefault(str(node_name), []).append(s)
        else:
            shared.append(s)
    if slices:
        for node in sorted(_objects(store, "Node"), key=lambda n: str(metadata_of(n).get("name"))):
            devices = devices_on_node(by_node.get(str(metadata_of(node).get("name")), []) + shared, node)
            if not devices:
                continue
            used.update(d.slice_name for d in devices)
            taken = sum(1 for d in devices if any(not h.admin_access for h in holders.get(d.key, [])))
            nodes.append(
                NodeDevicesRow(
                    str(metadata_of(node).get("name")),
                    sorted({d.slice_name for d in devices}),
                    sorted({d.driver for d in devices}),
                    len(devices),
                    taken,
                )
            )
    claim_rows = []
    by_name = sorted(claims, key=lambda c: (str(metadata_of(c).get("namespace")), str(metadata_of(c).get("name"))))
    for c in by_name[:MAX_CLAIM_ROWS]:
        status = c.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        claim_rows.append(
            ClaimRow(
                str(metadata_of(c).get("namespace") or ""),
                str(metadata_of(c).get("name") or ""),
                "allocated" if status.get("allocation") else "pending",
                [f"{r.get('pool')}/{r.get('device')}" for r in results],
                [str(r.get("name")) for r in status.get("reservedFor") or []],
                _owner_pod(c),
                len(((c.get("spec") or {}).get("devices") or {}).get("requests") or []),
            )
        )
    templates = [
        (
            str(metadata_of(t).get("namespace") or ""),
            str(metadata_of(t).get("name") or ""),
            len((((t.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []),
        )
        for t in _objects(store, "ResourceClaimTemplate")
    ]
    unattached = sorted(str(metadata_of(s).get("name")) for s in slices if str(metadata_of(s).get("name")) not in used)
    return DraOverview(classes, nodes, claim_rows, templates, unattached, rv, len(claims))


# ---------------------------------------------------------------------------------------------- an attempt


@dataclass(slots=True)
class DraRejection:
    """One node DynamicResources refused in an attempt: kube-scheduler's message, then the simulator's account."""

    node: str
    message: str
    explanations: list[DraRequestExplanation]


def dra_rejections(
    scheduler: SchedulerView, pod: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], *, running: bool
) -> list[DraRejection]:
    """The nodes of these filter-matrix rows where DynamicResources failed, with the scheduler's explanation of each
    (none when the scheduler does not run in this process: it holds the listers the explanation reads)."""
    failed = [
        (str(r["node"]), str((r.get("filter") or {})[DRA_PLUGIN]))
        for r in rows
        if (r.get("filter") or {}).get(DRA_PLUGIN, "passed") not in ("passed", "skip")
    ][:MAX_EXPLAINED_NODES]
    if not failed:
        return []
    explained = scheduler.explain_dra(dict(pod), [n for n, _ in failed]) if running else {}
    return [DraRejection(node, message, explained.get(node, [])) for node, message in failed]


@dataclass(slots=True)
class DraRejectionGroup:
    """Nodes DynamicResources refused for the same reasons: kube-scheduler's message and the same explanation."""

    nodes: list[str]
    message: str
    explanations: list[DraRequestExplanation]

    @property
    def has_devices(self) -> bool:
        """Whether the nodes can use a device of a requested class: where the telling explanations are."""
        return any(e.of_class for e in self.explanations)


def group_rejections(rejections: Sequence[DraRejection]) -> list[DraRejectionGroup]:
    """The rejections with the same message and explanation as one group each ("5 nodes: no ResourceSlice offers
    this node any device" once, not five times), the groups whose nodes have devices of the class first."""
    groups: dict[tuple[str, tuple[DraRequestExplanation, ...]], DraRejectionGroup] = {}
    for r in rejections:
        key = (r.message, tuple(r.explanations))
        group = groups.get(key)
        if group is None:
            groups[key] = DraRejectionGroup([r.node], r.message, r.explanations)
        else:
            group.nodes.append(r.node)
    return sorted(groups.values(), key=lambda g: (not g.has_devices, -len(g.nodes)))
