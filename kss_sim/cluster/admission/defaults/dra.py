"""Defaulting, create-time preparation and feature-gated fields of the resource.k8s.io/v1 kinds (DeviceClass,
ResourceSlice, ResourceClaim, ResourceClaimTemplate), as kube-apiserver v1.35 does them.

Defaulters run on every create and update body (decoding): SetDefaults_ExactDeviceRequest and
SetDefaults_DeviceSubRequest (allocationMode ExactCount, then count 1), a toleration's operator ``Equal``, a device
taint's ``timeAdded``, and quantities stored as ``Quantity.String()`` renders them. ``drop_disabled_fields`` is
the REST strategies' dropDisabledFields: a field whose feature gate is off is dropped unless the stored object
already uses it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from kss_sim.cluster.admission.go_values import quantity_text
from kss_sim.cluster.admission.quantities import canonical_quantity
from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import QuantityError
from kss_sim.kube.versions import gate_enabled

Gates = Mapping[str, bool]

DRA_KINDS = frozenset({"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"})


def gate_on(gates: Gates, name: str) -> bool:
    """A DRA gate's value: the one given, else the default version's."""
    return gate_enabled(gates, name)


def _dicts(items: Any) -> Iterable[Obj]:
    return (i for i in items if isinstance(i, dict)) if isinstance(items, list) else ()


def _dict(parent: Any, key: str) -> Obj | None:
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else None


def _canonical(parent: Any, key: str) -> None:
    if (
        isinstance(parent, dict)
        and isinstance(parent.get(key), str | int | float)
        and not isinstance(parent.get(key), bool)
    ):
        with contextlib.suppress(QuantityError):
            parent[key] = canonical_quantity(quantity_text(parent[key]))


def _canonical_values(values: Any, inner: str | None = None) -> None:
    """Every quantity of a map (``{name: q}``, or ``{name: {inner: q}}``)."""
    if not isinstance(values, dict):
        return
    for name in list(values):
        if inner is None:
            _canonical(values, name)
        else:
            _canonical(values.get(name), inner)


# ---------------------------------------------------------------------------------------------- defaults


def _default_tolerations(request: Obj) -> None:
    for toleration in _dicts(request.get("tolerations")):
        if not toleration.get("operator"):
            toleration["operator"] = "Equal"


def _default_request(request: Obj) -> None:
    """SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest."""
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    _default_tolerations(request)
    _canonical_values(_dict(request, "capacity") and request["capacity"].get("requests"))


def default_claim_spec(spec: Any) -> None:
    """A ResourceClaimSpec: each request's ``exactly`` and ``firstAvailable`` entries."""
    if not isinstance(spec, dict):
        return
    devices = spec.setdefault("devices", {})
    if not isinstance(devices, dict):
        return
    for request in _dicts(devices.get("requests")):
        exactly = _dict(request, "exactly")
        if exactly is not None:
            _default_request(exactly)
        for sub in _dicts(request.get("firstAvailable")):
            _default_request(sub)


def _default_status(claim: Obj) -> None:
    allocation = _dict(_dict(claim, "status"), "allocation")
    for result in _dicts((_dict(allocation, "devices") or {}).get("results")):
        _canonical_values(result.get("consumedCapacity"))
        _default_tolerations(result)


def default_resource_claim(claim: Obj) -> None:
    """Defaults of a ResourceClaim (spec and, for status writes, its allocation's quantities)."""
    default_claim_spec(claim.setdefault("spec", {}))
    _default_status(claim)


def default_resource_claim_template(template: Obj) -> None:
    """Defaults of a ResourceClaimTemplate: its claim spec at ``spec.spec``."""
    spec = template.setdefault("spec", {})
    if isinstance(spec, dict):
        default_claim_spec(spec.setdefault("spec", {}))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_resource_slice(slice_: Obj) -> None:
    """Defaults of a ResourceSlice: device taints' ``timeAdded`` (SetDefaults_DeviceTaint), canonical quantities."""
    spec = slice_.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    for counter_set in _dicts(spec.get("sharedCounters")):
        _canonical_values(counter_set.get("counters"), "value")
    for device in _dicts(spec.get("devices")):
        capacity = device.get("capacity")
        _canonical_values(capacity, "value")
        for entry in (capacity or {}).values() if isinstance(capacity, dict) else ():
            policy = _dict(entry, "requestPolicy")
            if policy is None:
                continue
            _canonical(policy, "default")
            if isinstance(policy.get("validValues"), list):
                values = policy["validValues"]
                for i in range(len(values)):
                    _canonical(values, i)  # type: ignore[arg-type]
            valid_range = _dict(policy, "validRange")
            for key in ("min", "max", "step"):
                _canonical(valid_range, key)
        for consumption in _dicts(device.get("consumesCounters")):
            _canonical_values(consumption.get("counters"), "value")
        for taint in _dicts(device.get("taints")):
            if taint.get("timeAdded") is None:
                taint["timeAdded"] = _now()


def default_device_class(device_class: Obj) -> None:
    """A DeviceClass has no defaults of its own; its spec is always rendered."""
    device_class.setdefault("spec", {})


DEFAULTERS: dict[str, Callable[[Obj], None]] = {
    "DeviceClass": default_device_class,
    "ResourceSlice": default_resource_slice,
    "ResourceClaim": default_resource_claim,
    "ResourceClaimTemplate": default_resource_claim_template,
}


def prepare_create(kind: str, body: Obj) -> None:
    """PrepareForCreate: a ResourceClaim's status is the server's (dropped on create)."""
    if kind == "ResourceClaim":
        body["status"] = {}


# ---------------------------------------------------------------------------------------------- dropDisabledFields


def _requests(spec: Any) -> list[Obj]:
    """Every request of a claim spec and every subrequest, the places request-level gated fields live."""
    devices = _dict(spec, "devices") or {}
    out: list[Obj] = []
    for request in _dicts(devices.get("requests")):
        exactly = _dict(request, "exactly")
        if exactly is not None:
            out.append(exactly)
        out.extend(_dicts(request.get("firstAvailable")))
    return out


def _results(claim: Any) -> list[Obj]:
    allocation = _dict(_dict(claim, "status"), "allocation")
    return list(_dicts((_dict(allocation, "devices") or {}).get("results")))


def _uses(objs: Iterable[Obj], *fields: str) -> bool:
    return any(obj.get(f) is not None for obj in objs for f in fields)


def _drop(objs: Iterable[Obj], *fields: str) -> None:
    for obj in objs:
        for f in fields:
            obj.pop(f, None)


def _drop_claim_spec_fields(spec: Any, old_spec: Any, gates: Gates) -> None:
    requests, old_requests = _requests(spec), _requests(old_spec)
    devices = _dict(spec, "devices") or {}
    old_devices = _dict(old_spec, "devices") or {}
    if not gate_on(gates, "DRAPrioritizedList") and not any(
        r.get("firstAvailable") for r in _dicts(old_devices.get("requests"))
    ):
        _drop(_dicts(devices.get("requests")), "firstAvailable")
        requests = _requests(spec)
    if not gate_on(gates, "DRAAdminAccess") and not _uses(old_requests, "adminAccess"):
        _drop(requests, "adminAccess")
    if not gate_on(gates, "DRADeviceTaints") and not _uses(old_requests, "tolerations"):
        _drop(requests, "tolerations")
    if not gate_on(gates, "DRAConsumableCapacity"):
        if not _uses(old_requests, "capacity"):
            _drop(requests, "capacity")
        if not _uses(_dicts(old_devices.get("constraints")), "distinctAttribute"):
            _drop(_dicts(devices.get("constraints")), "distinctAttribute")


def _drop_claim_status_fields(claim: Obj, old: Obj | None, gates: Gates) -> None:
    status = _dict(claim, "status")
    if status is None:
        return
    results, old_results = _results(claim), _results(old)
    old_status = _dict(old, "status") or {}
    if not gate_on(gates, "DRAAdminAccess") and not _uses(old_results, "adminAccess"):
        _drop(results, "adminAccess")
    if not gate_on(gates, "DRADeviceTaints") and not _uses(old_results, "tolerations"):
        _drop(results, "tolerations")
    if not gate_on(gates, "DRAConsumableCapacity") and not _uses(old_results, "shareID", "consumedCapacity"):
        _drop(results, "shareID", "consumedCapacity")
        _drop(_dicts(status.get("devices")), "shareID")
    binding = gate_on(gates, "DRADeviceBindingConditions") and gate_on(gates, "DRAResourceClaimDeviceStatus")
    if not binding and not _uses(old_results, "bindingConditions", "bindingFailureConditions"):
        _drop(results, "bindingConditions", "bindingFailureConditions")
        allocation = _dict(status, "allocation")
        if allocation is not None and (_dict(old_status, "allocation") or {}).get("allocationTimestamp") is None:
            allocation.pop("allocationTimestamp", None)
    if not gate_on(gates, "DRAResourceClaimDeviceStatus") and not old_status.get("devices"):
        status.pop("devices", None)


def _drop_slice_fields(spec: Any, old_spec: Any, gates: Gates) -> None:
    if not isinstance(spec, dict):
        return
    devices = list(_dicts(spec.get("devices")))
    old_spec = old_spec if isinstance(old_spec, dict) else {}
    old_devices = list(_dicts(old_spec.get("devices")))
    if not gate_on(gates, "DRADeviceTaints") and not any(d.get("taints") for d in old_devices):
        _drop(devices, "taints")
    if not gate_on(gates, "DRAPartitionableDevices") and not (
        old_spec.get("sharedCounters") is not None
        or old_spec.get("perDeviceNodeSelection") is not None
        or _uses(old_devices, "consumesCounters", "nodeName", "nodeSelector", "allNodes")
    ):
        spec.pop("sharedCounters", None)
        spec.pop("perDeviceNodeSelection", None)
        _drop(devices, "consumesCounters", "nodeName", "nodeSelector", "allNodes")
    binding = gate_on(gates, "DRADeviceBindingConditions") and gate_on(gates, "DRAResourceClaimDeviceStatus")
    if not binding and not _uses(old_devices, "bindsToNode", "bindingConditions", "bindingFailureConditions"):
        _drop(devices, "bindsToNode", "bindingConditions", "bindingFailureConditions")
    if not gate_on(gates, "DRAConsumableCapacity"):
        old_policies = any(
            isinstance(c, dict) and c.get("requestPolicy") is not None
            for d in old_devices
            for c in (d.get("capacity") or {}).values()
        )
        if not old_policies and not _uses(old_devices, "allowMultipleAllocations"):
            _drop(devices, "allowMultipleAllocations")
            for device in devices:
                _drop((c for c in (device.get("capacity") or {}).values() if isinstance(c, dict)), "requestPolicy")


def drop_disabled_fields(kind: str, body: Obj, old: Obj | None, gates: Gates) -> None:
    """kube-apiserver's dropDisabledFields for the DRA kinds, in place (``old``: the stored object on update)."""
    if kind == "ResourceClaim":
        _drop_claim_spec_fields(body.get("spec"), (old or {}).get("spec"), gates)
        _drop_claim_status_fields(body, old, gates)
    elif kind == "ResourceClaimTemplate":
        _drop_claim_spec_fields(_dict(body.get("spec"), "spec"), _dict((old or {}).get("spec"), "spec"), gates)
    elif kind == "ResourceSlice":
        _drop_slice_fields(body.get("spec"), (old or {}).get("spec"), gates)
    elif kind == "DeviceClass":
        spec = _dict(body, "spec")
        old_spec = _dict(old, "spec") or {}
        if spec is not None and not gate_on(gates, "DRAExtendedResource") and not old_spec.get("extendedResourceName"):
            spec.pop("extendedResourceName", None)
