"""Which ResourceSlice devices a node can use, and which claim holds each: plain reads of the objects.

Shared by the pages (the node's devices, the DRA page) and by the engine's explanation of DynamicResources'
verdicts (``kss_sim.engine_host.dra_explain``), so both count the same devices. A slice serves a node when it names
it (``nodeName``), serves every node (``allNodes``) or selects it (``nodeSelector``); with ``perDeviceNodeSelection``
each device says so itself, as the allocator's ``NodeMatches`` reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kss_sim.kube.labels import NodeSelector
from kss_sim.kube.objects import Obj, metadata_of

# A device by driver, pool and name, as allocation results name it.
DeviceKey = tuple[str, str, str]


def _name(obj: Mapping[str, Any]) -> str:
    return str(metadata_of(obj).get("name") or "")


def _serves(node: Mapping[str, Any], node_name: Any, all_nodes: Any, selector: Any) -> tuple[bool, str]:
    """Whether these node fields take in the node, and how (``node``, ``all nodes``, ``selector``)."""
    if node_name:
        return node_name == _name(node), "node"
    if all_nodes:
        return True, "all nodes"
    if isinstance(selector, Mapping):
        parsed = NodeSelector(selector)
        return (not parsed.errors and parsed.matches_node(node)), "node selector"
    return False, ""


@dataclass(frozen=True, slots=True)
class NodeDevice:
    """One device a node can use: where it is published and how it reaches the node."""

    driver: str
    pool: str
    name: str
    slice_name: str
    reach: str  # "node": published for this node; "all nodes" / "node selector": network-attached
    device: Obj  # the slice's ``spec.devices[i]``

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, self.name)


def devices_on_node(slices: Iterable[Mapping[str, Any]], node: Mapping[str, Any]) -> list[NodeDevice]:
    """Every device of ``slices`` the node can use, in slice then device order."""
    out: list[NodeDevice] = []
    for s in slices:
        spec = s.get("spec") or {}
        driver = str(spec.get("driver") or "")
        pool = str((spec.get("pool") or {}).get("name") or "")
        per_device = bool(spec.get("perDeviceNodeSelection"))
        if not per_device:
            ok, reach = _serves(node, spec.get("nodeName"), spec.get("allNodes"), spec.get("nodeSelector"))
            if not ok:
                continue
        for device in spec.get("devices") or []:
            if per_device:
                ok, reach = _serves(node, device.get("nodeName"), device.get("allNodes"), device.get("nodeSelector"))
                if not ok:
                    continue
            out.append(NodeDevice(driver, pool, str(device.get("name") or ""), _name(s), reach, device))
    return out


@dataclass(frozen=True, slots=True)
class Holder:
    """A claim whose allocation names a device: ``namespace/name`` and the request it serves."""

    claim: str
    request: str
    admin_access: bool


def device_holders(claims: Iterable[Mapping[str, Any]]) -> dict[DeviceKey, list[Holder]]:
    """For every device named in a claim's ``status.allocation.devices.results``, the claims holding it."""
    holders: dict[DeviceKey, list[Holder]] = {}
    for claim in claims:
        meta = metadata_of(claim)
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            device = (str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device") or ""))
            holders.setdefault(device, []).append(Holder(key, str(r.get("request") or ""), bool(r.get("adminAccess"))))
    return holders


def attribute_text(value: Mapping[str, Any]) -> str:
    """A device attribute's value as written (``{"string": "a100"}`` -> ``a100``)."""
    for kind in ("string", "version", "int", "bool"):
        if kind in value:
            v = value[kind]
            return str(v).lower() if kind == "bool" else str(v)
    return str(dict(value))


def capacity_text(value: Mapping[str, Any]) -> str:
    """A device capacity's amount (``{"value": "80Gi"}`` -> ``80Gi``)."""
    return str(value.get("value", "")) if isinstance(value, Mapping) else str(value)


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    """One entry of a pod's ``spec.resourceClaims``: its name in the pod and the ResourceClaim it stands for."""

    pod_claim: str
    claim: str | None  # None: a template's claim not created (recorded in the pod's status) yet
    template: str | None  # the ResourceClaimTemplate, for a generated claim


def pod_claim_refs(pod: Mapping[str, Any]) -> list[PodClaimRef]:
    """``resourceclaim.Name`` for each of the pod's claims: the named claim, or the one generated from the template
    as ``status.resourceClaimStatuses`` records it."""
    statuses = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    refs: list[PodClaimRef] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = str(entry.get("name") or "")
        if entry.get("resourceClaimName"):
            refs.append(PodClaimRef(name, str(entry["resourceClaimName"]), None))
        else:
            generated = statuses.get(name)
            template = entry.get("resourceClaimTemplateName")
            refs.append(PodClaimRef(name, str(generated) if generated else None, str(template) if template else None))
    return refs
