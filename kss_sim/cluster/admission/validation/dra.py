"""Validation of the resource.k8s.io/v1 kinds (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate) as
kube-apiserver v1.35 does it: what its typed decoder refuses (400) and the field errors of
pkg/apis/resource/validation with upstream's field paths and messages (422). Claims, templates and classes are
here, slices in ``validation_dra_slices``, shared rules in ``validation_dra_rules``. Importing this module
registers the four kinds into ``validation``'s tables (admission does).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kss_sim.cluster.admission.decode_types import first_beyond_float64
from kss_sim.cluster.admission.defaults.dra import gate_on
from kss_sim.cluster.admission.validation import core
from kss_sim.cluster.admission.validation.decoding import expect_type
from kss_sim.cluster.admission.validation.dra_rules import (
    _ALLOCATION_MODES,
    _CONFIG_SOURCES,
    _REQUEST_REF_MSG,
    _TAINT_EFFECTS,
    _TOLERATION_OPERATORS,
    ALLOCATION_RESULTS_MAX,
    DEVICE_CONFIG_MAX,
    DEVICE_CONSTRAINTS_MAX,
    DEVICE_REQUESTS_MAX,
    FIRST_AVAILABLE_MAX,
    OPAQUE_PARAMETERS_MAX_LENGTH,
    RESERVED_FOR_MAX,
    _dicts,
    _list,
    _map,
    _node_selector_errors,
    _quantity,
    _selectors_errors,
    _string_set,
    dns_label_errors,
    dns_subdomain_errors,
    driver_name_errors,
    fully_qualified_name_errors,
    pool_name_errors,
    too_long,
    validate_set,
    validate_slice,
)
from kss_sim.cluster.admission.validation.dra_slices import (
    _check_slice,
    validate_resource_slice,
    validate_resource_slice_update,
)
from kss_sim.cluster.admission.validation.metadata import (
    label_value_errors,
    qualified_name_errors,
    validate_labels,
    validate_metadata,
)
from kss_sim.cluster.errors import Cause, forbidden, invalid, not_supported, required
from kss_sim.cluster.kinds.registry import NO_GATES
from kss_sim.kube.objects import Obj

# ---------------------------------------------------------------------------------------------- claims


def _request_names(devices: Obj) -> dict[str, set[str] | None]:
    """gatherRequestNames: each request's name and, for firstAvailable, its subrequests' names."""
    names: dict[str, set[str] | None] = {}
    for request in _dicts(devices.get("requests")):
        subs = _dicts(request.get("firstAvailable"))
        names[str(request.get("name") or "")] = {str(s.get("name") or "") for s in subs} if subs else None
    return names


def _names_have(names: dict[str, set[str] | None], ref: str) -> bool:
    parts = ref.split("/")
    if len(parts) > 2 or parts[0] not in names:
        return False
    if len(parts) == 1:
        return True
    return parts[1] in (names[parts[0]] or set())


def _request_ref_errors(ref: str, path: str, names: dict[str, set[str] | None]) -> list[Cause]:
    """validateRequestNameRef: ``request`` or ``request/subrequest`` of this claim."""
    parts = ref.split("/")
    if len(parts) > 2:
        return [invalid(path, ref, _REQUEST_REF_MSG)]
    causes: list[Cause] = []
    for part in parts:
        causes += dns_label_errors(path, part)
    if not _names_have(names, ref):
        causes.append(invalid(path, ref, _REQUEST_REF_MSG))
    return causes


def _allocation_mode_errors(request: Obj, path: str) -> list[Cause]:
    mode = request.get("allocationMode") or ""
    count = request.get("count") or 0
    if mode == "All":
        if count != 0:
            return [invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")]
        return []
    if mode == "ExactCount":
        return [invalid(f"{path}.count", count, "must be greater than zero")] if count <= 0 else []
    return [not_supported(f"{path}.allocationMode", mode, _ALLOCATION_MODES)]


def _toleration_errors(toleration: Obj, path: str) -> list[Cause]:
    """validateDeviceToleration."""
    causes: list[Cause] = []
    key = str(toleration.get("key") or "")
    if key:
        causes += qualified_name_errors(f"{path}.key", key)
    operator = str(toleration.get("operator") or "")
    value = str(toleration.get("value") or "")
    if operator == "Exists":
        if value:
            causes.append(invalid(f"{path}.value", value, "must be empty for operator `Exists`"))
    elif operator == "Equal":
        causes += label_value_errors(f"{path}.value", value)
    elif not operator:
        causes.append(required(f"{path}.operator"))
    else:
        causes.append(not_supported(f"{path}.operator", operator, _TOLERATION_OPERATORS))
    effect = str(toleration.get("effect") or "")
    if effect and effect not in _TAINT_EFFECTS:
        causes.append(not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return causes


def _tolerations_errors(tolerations: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, toleration in enumerate(_dicts(tolerations)):
        causes += _toleration_errors(toleration, f"{path}[{i}]")
    return causes


def _device_class_name_errors(name: str, path: str) -> list[Cause]:
    return [required(path)] if not name else dns_subdomain_errors(path, name)


def _exact_request_errors(request: Obj, path: str, stored: bool) -> list[Cause]:
    causes = _device_class_name_errors(str(request.get("deviceClassName") or ""), f"{path}.deviceClassName")
    causes += _selectors_errors(request.get("selectors"), f"{path}.selectors", stored=stored)
    causes += _allocation_mode_errors(request, path)
    causes += _tolerations_errors(request.get("tolerations"), f"{path}.tolerations")
    return causes


def _sub_request_errors(sub: Obj, path: str, stored: bool) -> list[Cause]:
    causes = dns_label_errors(f"{path}.name", str(sub.get("name") or ""))
    causes += _exact_request_errors(sub, path, stored)
    return causes


def _device_request_errors(request: Obj, path: str, stored: bool) -> list[Cause]:
    """validateDeviceRequest: a DNS-label name and exactly one of ``exactly`` / ``firstAvailable``."""
    causes = dns_label_errors(f"{path}.name", str(request.get("name") or ""))
    first = _dicts(request.get("firstAvailable"))
    exactly = request.get("exactly")
    if not first and not isinstance(exactly, dict):
        causes.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif first and isinstance(exactly, dict):
        causes.append(
            invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
        )
    elif first:
        causes += validate_set(
            first,
            FIRST_AVAILABLE_MAX,
            f"{path}.firstAvailable",
            lambda s, p: _sub_request_errors(s, p, stored),
            lambda s: str(s.get("name") or ""),
        )
    elif isinstance(exactly, dict):
        causes += _exact_request_errors(exactly, f"{path}.exactly", stored)
    return causes


def _constraint_errors(constraint: Obj, path: str, names: dict[str, set[str] | None]) -> list[Cause]:
    causes = _string_set(
        _list(constraint.get("requests")),
        DEVICE_REQUESTS_MAX,
        f"{path}.requests",
        lambda ref, p: _request_ref_errors(ref, p, names),
    )
    if constraint.get("matchAttribute") is not None:
        causes += fully_qualified_name_errors(f"{path}.matchAttribute", str(constraint["matchAttribute"]))
    elif constraint.get("distinctAttribute") is not None:
        causes += fully_qualified_name_errors(f"{path}.distinctAttribute", str(constraint["distinctAttribute"]))
    elif gate_on(NO_GATES, "DRAConsumableCapacity"):  # the configured default: validators see no request's gates
        causes.append(
            required(
                path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set'
            )
        )
    else:
        causes.append(required(f"{path}.matchAttribute"))
    return causes


def _raw_extension_errors(value: Any, path: str, stored: bool) -> list[Cause]:
    """validateRawExtension: a JSON object of at most 10 KiB that encoding/json reads (a number beyond float64, which
    the decoder left in the bytes, it does not)."""
    if value is None:
        return [required(path)]
    raw = json.dumps(value, separators=(",", ":"))
    if not stored and len(raw) > OPAQUE_PARAMETERS_MAX_LENGTH:
        return [too_long(path, OPAQUE_PARAMETERS_MAX_LENGTH)]
    if (problem := first_beyond_float64(value)) is not None:
        return [invalid(path, "<value omitted>", f"error parsing data as JSON: {problem}")]
    if not isinstance(value, dict):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def _configuration_errors(config: Obj, path: str, stored: bool) -> list[Cause]:
    """validateDeviceConfiguration: an ``opaque`` configuration for a driver."""
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        return [required(f"{path}.opaque")]
    causes = driver_name_errors(f"{path}.opaque.driver", str(opaque.get("driver") or ""))
    causes += _raw_extension_errors(opaque.get("parameters"), f"{path}.opaque.parameters", stored)
    return causes


def _claim_config_errors(config: Obj, path: str, names: dict[str, set[str] | None], stored: bool) -> list[Cause]:
    causes = _string_set(
        _list(config.get("requests")),
        DEVICE_REQUESTS_MAX,
        f"{path}.requests",
        lambda ref, p: _request_ref_errors(ref, p, names),
    )
    return causes + _configuration_errors(config, path, stored)


def claim_spec_errors(spec: Any, path: str, *, stored: bool = False) -> list[Cause]:
    """validateResourceClaimSpec at ``path`` (``spec`` or a template's ``spec.spec``)."""
    devices = _map(_map(spec).get("devices"))
    devices_path = f"{path}.devices"
    names = _request_names(devices)
    causes = validate_set(
        _dicts(devices.get("requests")),
        DEVICE_REQUESTS_MAX,
        f"{devices_path}.requests",
        lambda r, p: _device_request_errors(r, p, stored),
        lambda r: str(r.get("name") or ""),
    )
    causes += validate_slice(
        _dicts(devices.get("constraints")),
        DEVICE_CONSTRAINTS_MAX,
        f"{devices_path}.constraints",
        lambda c, p: _constraint_errors(c, p, names),
    )
    causes += validate_slice(
        _dicts(devices.get("config")),
        DEVICE_CONFIG_MAX,
        f"{devices_path}.config",
        lambda c, p: _claim_config_errors(c, p, names, stored),
    )
    return causes


_CLAIM_SPEC = "resource.ResourceClaimSpec{...}"


def _immutable(path: str, shown: str) -> Cause:
    """``ValidateImmutableField`` of a struct (Go prints the whole struct; its type is kept here)."""
    return Cause(path, "FieldValueInvalid", f"Invalid value: {shown}: field is immutable")


def validate_resource_claim(claim: Obj) -> list[Cause]:
    """ValidateResourceClaim."""
    return validate_metadata(claim, namespaced=True) + claim_spec_errors(claim.get("spec"), "spec")


def _consumer_errors(ref: Obj, path: str) -> list[Cause]:
    return [required(f"{path}.{f}") for f in ("resource", "name", "uid") if not ref.get(f)]


def _allocation_result_errors(result: Obj, path: str, names: dict[str, set[str] | None]) -> list[Cause]:
    """validateDeviceRequestAllocationResult."""
    causes = _request_ref_errors(str(result.get("request") or ""), f"{path}.request", names)
    causes += driver_name_errors(f"{path}.driver", str(result.get("driver") or ""))
    causes += pool_name_errors(f"{path}.pool", str(result.get("pool") or ""))
    causes += dns_label_errors(f"{path}.device", str(result.get("device") or ""))
    causes += _tolerations_errors(result.get("tolerations"), f"{path}.tolerations")
    return causes


def _allocation_config_errors(config: Obj, path: str, names: dict[str, set[str] | None]) -> list[Cause]:
    source = str(config.get("source") or "")
    causes = [required(f"{path}.source")] if not source else []
    if source and source not in _CONFIG_SOURCES:
        causes.append(not_supported(f"{path}.source", source, _CONFIG_SOURCES))
    return causes + _claim_config_errors(config, path, names, False)


def _allocation_errors(allocation: Obj, path: str, names: dict[str, set[str] | None]) -> list[Cause]:
    """validateAllocationResult for a new allocation."""
    devices = _map(allocation.get("devices"))
    causes = validate_slice(
        _dicts(devices.get("results")),
        ALLOCATION_RESULTS_MAX,
        f"{path}.devices.results",
        lambda r, p: _allocation_result_errors(r, p, names),
    )
    causes += validate_slice(
        _dicts(devices.get("config")),
        2 * DEVICE_CONFIG_MAX,
        f"{path}.devices.config",
        lambda c, p: _allocation_config_errors(c, p, names),
    )
    node_selector = allocation.get("nodeSelector")
    if isinstance(node_selector, dict):
        causes += _node_selector_errors(node_selector, f"{path}.nodeSelector")
    return causes


def _device_ids(status: Obj) -> set[tuple[str, str, str]]:
    allocation = _map(status.get("allocation"))
    return {
        (str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device") or ""))
        for r in _dicts(_map(allocation.get("devices")).get("results"))
    }


def claim_status_errors(claim: Obj, old: Obj) -> list[Cause]:
    """validateResourceClaimStatusUpdate: consumers, device statuses, and an allocation written once."""
    status, old_status = _map(claim.get("status")), _map(old.get("status"))
    names = _request_names(_map(_map(claim.get("spec")).get("devices")))
    reserved = _dicts(status.get("reservedFor"))
    causes = validate_set(reserved, RESERVED_FOR_MAX, "status.reservedFor", _consumer_errors, lambda r: r.get("uid"))
    allocated = _device_ids(status)
    for i, device in enumerate(_dicts(status.get("devices"))):
        p = f"status.devices[{i}]"
        causes += driver_name_errors(f"{p}.driver", str(device.get("driver") or ""))
        causes += pool_name_errors(f"{p}.pool", str(device.get("pool") or ""))
        causes += dns_label_errors(f"{p}.device", str(device.get("device") or ""))
        key = (str(device.get("driver") or ""), str(device.get("pool") or ""), str(device.get("device") or ""))
        if key not in allocated:
            causes.append(invalid(p, "/".join(key), "must be an allocated device in the claim"))
    allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
    if reserved:
        if not isinstance(allocation, dict):
            causes.append(forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
        elif (claim.get("metadata") or {}).get("deletionTimestamp"):
            old_uids = {r.get("uid") for r in _dicts(old_status.get("reservedFor"))}
            if any(r.get("uid") not in old_uids for r in reserved):
                causes.append(
                    forbidden(
                        "status.reservedFor",
                        "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                    )
                )
    if isinstance(old_allocation, dict) and isinstance(allocation, dict):
        if allocation != old_allocation:
            causes.append(_immutable("status.allocation", "&resource.AllocationResult{...}"))
    elif isinstance(allocation, dict):
        causes += _allocation_errors(allocation, "status.allocation", names)
    return causes


def validate_resource_claim_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateResourceClaimUpdate (the spec is immutable) and, when the status changed, the status rules (the
    store keeps the other half as stored, so each write changes one of them)."""
    causes = validate_metadata(new, namespaced=True)
    if new.get("spec") != old.get("spec"):
        causes.append(_immutable("spec", _CLAIM_SPEC))
    if new.get("status") != old.get("status"):
        causes += claim_status_errors(new, old)
    return causes


# ---------------------------------------------------------------------------------------------- templates


def validate_resource_claim_template(template: Obj) -> list[Cause]:
    """ValidateResourceClaimTemplate: its claim's metadata (labels, annotations) and spec."""
    causes = validate_metadata(template, namespaced=True)
    spec = _map(template.get("spec"))
    meta = _map(spec.get("metadata"))
    causes += validate_labels("spec.metadata.labels", meta.get("labels"))
    for key in _map(meta.get("annotations")):
        causes += qualified_name_errors("spec.metadata.annotations", key.lower())
    return causes + claim_spec_errors(spec.get("spec"), "spec.spec")


def validate_resource_claim_template_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateResourceClaimTemplateUpdate: the spec is immutable."""
    causes = validate_metadata(new, namespaced=True)
    if new.get("spec") != old.get("spec"):
        causes.append(_immutable("spec", "resource.ResourceClaimTemplateSpec{...}"))
    return causes


# ---------------------------------------------------------------------------------------------- device classes


def _class_spec_errors(spec: Obj, old_spec: Obj | None) -> list[Cause]:
    stored = old_spec is not None and spec.get("selectors") == old_spec.get("selectors")
    causes = _selectors_errors(spec.get("selectors"), "spec.selectors", stored=stored)
    stored = old_spec is not None and spec.get("config") == old_spec.get("config")
    causes += validate_slice(
        _dicts(spec.get("config")), DEVICE_CONFIG_MAX, "spec.config", lambda c, p: _configuration_errors(c, p, stored)
    )
    name = spec.get("extendedResourceName")
    if name is not None and not _is_extended_resource_name(str(name)):
        causes.append(invalid("spec.extendedResourceName", name, "must be a valid extended resource name"))
    return causes


def _is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain outside kubernetes.io, and ``requests.<name>`` a qualified name."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False
    return not qualified_name_errors("", "requests." + name)


def validate_device_class(device_class: Obj) -> list[Cause]:
    """ValidateDeviceClass."""
    return validate_metadata(device_class, namespaced=False) + _class_spec_errors(_map(device_class.get("spec")), None)


def validate_device_class_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateDeviceClassUpdate: unchanged selectors and config are not compiled again."""
    return validate_metadata(new, namespaced=False) + _class_spec_errors(_map(new.get("spec")), _map(old.get("spec")))


# ---------------------------------------------------------------------------------------------- decoding (400)


def _check_claim_spec(kind: str, spec: Any, prefix: str) -> None:
    def expect(path: str, value: Any, want: type | tuple[type, ...], go_type: str) -> None:
        expect_type(kind, f"{prefix}{path}", value, want, go_type)

    expect("spec", spec, dict, "v1.ResourceClaimSpec")
    devices = (spec or {}).get("devices")
    expect("spec.devices", devices, dict, "v1.DeviceClaim")
    devices = devices or {}
    expect("spec.devices.requests", devices.get("requests"), list, "[]v1.DeviceRequest")
    for request in devices.get("requests") or []:
        expect("spec.devices.requests", request, dict, "v1.DeviceRequest")
        expect("spec.devices.requests.name", request.get("name"), str, "string")
        exactly = request.get("exactly")
        expect("spec.devices.requests.exactly", exactly, dict, "v1.ExactDeviceRequest")
        first = request.get("firstAvailable")
        expect("spec.devices.requests.firstAvailable", first, list, "[]v1.DeviceSubRequest")
        for where, sub in [("exactly", exactly), *(("firstAvailable", s) for s in first or [])]:
            base = f"spec.devices.requests.{where}"
            expect(base, sub, dict, "v1.DeviceSubRequest")
            sub = sub or {}
            for field in ("deviceClassName", "allocationMode"):
                expect(f"{base}.{field}", sub.get(field), str, "string")
            expect(f"{base}.count", sub.get("count"), int, "int64")
            expect(f"{base}.adminAccess", sub.get("adminAccess"), bool, "bool")
            expect(f"{base}.selectors", sub.get("selectors"), list, "[]v1.DeviceSelector")
            for selector in sub.get("selectors") or []:
                expect(f"{base}.selectors", selector, dict, "v1.DeviceSelector")
                cel = (selector or {}).get("cel")
                expect(f"{base}.selectors.cel", cel, dict, "v1.CELDeviceSelector")
                expect(f"{base}.selectors.cel.expression", (cel or {}).get("expression"), str, "string")
            capacity = sub.get("capacity")
            expect(f"{base}.capacity", capacity, dict, "v1.CapacityRequirements")
            requests = (capacity or {}).get("requests")
            expect(f"{base}.capacity.requests", requests, dict, "map[v1.QualifiedName]resource.Quantity")
            for value in (requests or {}).values():
                _quantity(kind, f"{prefix}{base}.capacity.requests", value)
    for field, go_type in (("constraints", "[]v1.DeviceConstraint"), ("config", "[]v1.DeviceClaimConfiguration")):
        expect(f"spec.devices.{field}", devices.get(field), list, go_type)


def check_dra_decodable(kind: str, obj: Obj) -> None:
    """Raise ``BadRequest`` where kube-apiserver's typed decoder fails on a DRA object (wrong JSON types, quantities
    that do not parse)."""
    spec = obj.get("spec")
    if kind == "ResourceClaim":
        _check_claim_spec(kind, spec, "")
    elif kind == "ResourceClaimTemplate":
        _check_claim_spec(kind, (spec or {}).get("spec"), "spec.")
    elif kind == "ResourceSlice":
        _check_slice(spec)
    elif kind == "DeviceClass":
        expect_type(kind, "spec.selectors", (spec or {}).get("selectors"), list, "[]v1.DeviceSelector")
        expect_type(kind, "spec.config", (spec or {}).get("config"), list, "[]v1.DeviceClassConfiguration")


VALIDATORS: dict[str, Callable[[Obj], list[Cause]]] = {
    "DeviceClass": validate_device_class,
    "ResourceSlice": validate_resource_slice,
    "ResourceClaim": validate_resource_claim,
    "ResourceClaimTemplate": validate_resource_claim_template,
}
UPDATE_VALIDATORS: dict[str, Callable[[Obj, Obj], list[Cause]]] = {
    "DeviceClass": validate_device_class_update,
    "ResourceSlice": validate_resource_slice_update,
    "ResourceClaim": validate_resource_claim_update,
    "ResourceClaimTemplate": validate_resource_claim_template_update,
}
core.VALIDATORS.update(VALIDATORS)
core.UPDATE_VALIDATORS.update(UPDATE_VALIDATORS)
