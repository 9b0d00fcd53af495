"""Validation of resource.k8s.io/v1 ResourceSlices as kube-apiserver v1.35 does it (validateResourceSliceSpec):
driver, pool, the one-of node fields, devices (attributes one of int/bool/string/version, capacities, taints,
counters, binding conditions, per-device node selection), shared counters and the typed decoder's 400s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kss_sim.cluster.admission.validation.decoding import expect_type
from kss_sim.cluster.admission.validation.dra_rules import (
    _SEMVER,
    _TAINT_EFFECTS,
    ATTRIBUTE_MAX_VALUE_LENGTH,
    BINDING_CONDITIONS_MAX,
    DEVICE_MAX_DOMAIN_LENGTH,
    DEVICE_MAX_ID_LENGTH,
    DEVICE_TAINTS_MAX,
    MAX_ATTRIBUTES_AND_CAPACITIES,
    SLICE_MAX_CONSUMPTIONS_PER_DEVICE,
    SLICE_MAX_COUNTER_SETS,
    SLICE_MAX_COUNTERS_PER_CONSUMPTION,
    SLICE_MAX_COUNTERS_PER_SET,
    SLICE_MAX_DEVICES,
    SLICE_MAX_DEVICES_WITH_TAINTS_OR_COUNTERS,
    _dicts,
    _list,
    _map,
    _node_selector_errors,
    _quantity,
    _truncated_key,
    dns_label_errors,
    dns_subdomain_errors,
    driver_name_errors,
    pool_name_errors,
    qualified_name_errors_dra,
    too_long,
    too_many,
    validate_set,
    validate_slice,
)
from kss_sim.cluster.admission.validation.metadata import (
    label_value_errors,
    qualified_name_errors,
    validate_metadata,
)
from kss_sim.cluster.errors import Cause, duplicate, forbidden, invalid, not_supported, required
from kss_sim.kube.objects import Obj

# ---------------------------------------------------------------------------------------------- resource slices


def _attribute_errors(attribute: Any, path: str) -> list[Cause]:
    """validateDeviceAttribute: exactly one of int, bool, string (at most 64 bytes), version (semver)."""
    attribute = _map(attribute)
    causes: list[Cause] = []
    given = [f for f in ("int", "bool", "string", "version") if attribute.get(f) is not None]
    if "string" in given and len(str(attribute["string"])) > ATTRIBUTE_MAX_VALUE_LENGTH:
        causes.append(too_long(f"{path}.string", ATTRIBUTE_MAX_VALUE_LENGTH))
    if "version" in given:
        version = str(attribute["version"])
        if not _SEMVER.match(version):
            causes.append(invalid(f"{path}.version", version, "must be a string compatible with semver.org spec 2.0.0"))
        if len(version) > ATTRIBUTE_MAX_VALUE_LENGTH:
            causes.append(too_long(f"{path}.version", ATTRIBUTE_MAX_VALUE_LENGTH))
    if not given:
        causes.append(invalid(path, "", "exactly one value must be specified"))
    elif len(given) > 1:
        shown = "{" + ", ".join(f"{f}: {attribute[f]}" for f in given) + "}"
        causes.append(Cause(path, "FieldValueInvalid", f"Invalid value: {shown}: exactly one value must be specified"))
    return causes


def _capacity_errors(capacity: Any, path: str, multiple: bool) -> list[Cause]:
    capacity = _map(capacity)
    if capacity.get("requestPolicy") is not None and not multiple:
        return [forbidden(f"{path}.requestPolicy", "allowMultipleAllocations must be true")]
    return []


def _taint_errors(taint: Obj, path: str) -> list[Cause]:
    """validateDeviceTaint."""
    key = str(taint.get("key") or "")
    causes = (
        qualified_name_errors(f"{path}.key", key)
        if key
        else [invalid(f"{path}.key", "", "name part must be non-empty")]
    )
    if taint.get("value"):
        causes += label_value_errors(f"{path}.value", str(taint["value"]))
    effect = str(taint.get("effect") or "")
    if not effect:
        causes.append(required(f"{path}.effect"))
    elif effect not in _TAINT_EFFECTS:
        causes.append(not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return causes


def _counters_errors(counters: Any, path: str, limit: int) -> list[Cause]:
    counters = _map(counters)
    if len(counters) > limit:
        return [too_many(path, len(counters), limit)]
    causes: list[Cause] = []
    for name in counters:
        causes += dns_label_errors(path, name)
    return causes


def _counter_set_errors(counter_set: Obj, path: str) -> list[Cause]:
    name = str(counter_set.get("name") or "")
    causes = [required(f"{path}.name")] if not name else dns_label_errors(f"{path}.name", name)
    if not counter_set.get("counters"):
        causes.append(required(f"{path}.counters"))
    else:
        causes += _counters_errors(counter_set["counters"], f"{path}.counters", SLICE_MAX_COUNTERS_PER_SET)
    return causes


def _consumption_errors(consumption: Obj, path: str) -> list[Cause]:
    name = str(consumption.get("counterSet") or "")
    causes = [required(f"{path}.counterSet")] if not name else dns_label_errors(f"{path}.counterSet", name)
    if not consumption.get("counters"):
        causes.append(required(f"{path}.counters"))
    else:
        causes += _counters_errors(consumption["counters"], f"{path}.counters", SLICE_MAX_COUNTERS_PER_CONSUMPTION)
    return causes


def _binding_errors(device: Obj, path: str) -> list[Cause]:
    conditions = [str(c) for c in _list(device.get("bindingConditions"))]
    failures = [str(c) for c in _list(device.get("bindingFailureConditions"))]
    causes: list[Cause] = []
    for field, values in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        if len(values) > BINDING_CONDITIONS_MAX:
            causes.append(too_many(f"{path}.{field}", len(values), BINDING_CONDITIONS_MAX))
            continue
        seen: set[str] = set()
        for i, value in enumerate(values):
            causes += qualified_name_errors(f"{path}.{field}[{i}]", value)
            if value in seen:
                causes.append(duplicate(f"{path}.{field}[{i}]", value))
            seen.add(value)
    for i, value in enumerate(failures):
        if value in conditions:
            causes.append(
                invalid(
                    f"{path}.bindingFailureConditions[{i}]",
                    value,
                    "bindingFailureConditions must not overlap with bindingConditions",
                )
            )
    if not conditions and failures:
        causes.append(
            Cause(
                f"{path}.bindingConditions",
                "FieldValueInvalid",
                "Invalid value: null: bindingConditions are required to use bindingFailureConditions",
            )
        )
    if not failures and conditions:
        causes.append(
            Cause(
                f"{path}.bindingFailureConditions",
                "FieldValueInvalid",
                "Invalid value: null: bindingFailureConditions are required to use bindingConditions",
            )
        )
    return causes


def _device_errors(device: Obj, path: str, old_devices: dict[str, Obj], per_device_nodes: bool) -> list[Cause]:
    """validateDevice."""
    name = str(device.get("name") or "")
    causes = dns_label_errors(f"{path}.name", name)
    old = old_devices.get(name)
    attributes, capacity = _map(device.get("attributes")), _map(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        causes.append(
            invalid(
                path,
                total,
                f"the total number of attributes and capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}",
            )
        )
    key_limit = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
    for key, attribute in attributes.items():
        causes += qualified_name_errors_dra(f"{path}.attributes", key)
        causes += _attribute_errors(attribute, f"{path}.attributes[{_truncated_key(key, key_limit)}]")
    if old is None or old.get("capacity") != device.get("capacity"):
        multiple = bool(device.get("allowMultipleAllocations"))
        for key, entry in capacity.items():
            causes += qualified_name_errors_dra(f"{path}.capacity", key)
            causes += _capacity_errors(entry, f"{path}.capacity[{_truncated_key(key, key_limit)}]", multiple)
    if old is None or old.get("taints") != device.get("taints"):
        causes += validate_slice(_dicts(device.get("taints")), DEVICE_TAINTS_MAX, f"{path}.taints", _taint_errors)
    causes += validate_set(
        _dicts(device.get("consumesCounters")),
        SLICE_MAX_CONSUMPTIONS_PER_DEVICE,
        f"{path}.consumesCounters",
        _consumption_errors,
        lambda c: str(c.get("counterSet") or ""),
    )
    causes += _device_node_errors(device, path, per_device_nodes)
    causes += _binding_errors(device, path)
    return causes


def _device_node_errors(device: Obj, path: str, per_device_nodes: bool) -> list[Cause]:
    node_fields = ("nodeName", "nodeSelector", "allNodes")
    if not per_device_nodes:
        if any(device.get(f) is not None for f in node_fields):
            return [
                invalid(
                    path,
                    None,
                    "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
                )
            ]
        return []
    causes: list[Cause] = []
    set_fields: list[str] = []
    if device.get("nodeName") is not None:
        if device["nodeName"]:
            set_fields.append("`nodeName`")
            causes += dns_subdomain_errors(f"{path}.nodeName", str(device["nodeName"]))
        else:
            causes.append(invalid(f"{path}.nodeName", "", "must not be empty"))
    if isinstance(device.get("nodeSelector"), dict):
        set_fields.append("`nodeSelector`")
        causes += _node_selector_errors(device["nodeSelector"], f"{path}.nodeSelector")
    if device.get("allNodes") is not None:
        if device["allNodes"]:
            set_fields.append("`allNodes`")
        else:
            causes.append(invalid(f"{path}.allNodes", "false", "must be either unset or set to true"))
    detail = (
        "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set "
        "to true in the ResourceSlice spec"
    )
    if not set_fields:
        causes.append(required(path, detail))
    elif len(set_fields) > 1:
        causes.append(invalid(path, "{" + ", ".join(set_fields) + "}", detail))
    return causes


def _uses_advanced_features(devices: Iterable[Obj]) -> bool:
    return any(d.get("taints") or d.get("consumesCounters") for d in devices)


def _slice_spec_errors(spec: Obj, old_spec: Obj | None) -> list[Cause]:
    """validateResourceSliceSpec."""
    causes = driver_name_errors("spec.driver", str(spec.get("driver") or ""))
    pool = _map(spec.get("pool"))
    causes += pool_name_errors("spec.pool.name", str(pool.get("name") or ""))
    slice_count = pool.get("resourceSliceCount") or 0
    if slice_count <= 0:
        causes.append(invalid("spec.pool.resourceSliceCount", slice_count, "must be greater than zero"))
    generation = pool.get("generation") or 0
    if generation < 0:
        causes.append(invalid("spec.pool.generation", generation, "must be greater than or equal to zero"))
    if old_spec is not None:
        old_pool = _map(old_spec.get("pool"))
        for path, new, old in (
            ("spec.pool.name", pool.get("name"), old_pool.get("name")),
            ("spec.driver", spec.get("driver"), old_spec.get("driver")),
            ("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName")),
        ):
            if new != old:
                shown = "null" if new is None else f'"{new}"'
                causes.append(Cause(path, "FieldValueInvalid", f"Invalid value: {shown}: field is immutable"))
    set_fields: list[str] = []
    if spec.get("nodeName") is not None:
        if spec["nodeName"]:
            set_fields.append("`nodeName`")
            causes += dns_subdomain_errors("spec.nodeName", str(spec["nodeName"]))
        else:
            causes.append(invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if isinstance(spec.get("nodeSelector"), dict):
        set_fields.append("`nodeSelector`")
        causes += _node_selector_errors(spec["nodeSelector"], "spec.nodeSelector")
        terms = _list(spec["nodeSelector"].get("nodeSelectorTerms"))
        if len(terms) != 1:
            causes.append(
                Cause(
                    "spec.nodeSelector.nodeSelectorTerms",
                    "FieldValueInvalid",
                    f"Invalid value: {_go_terms(terms)}: must have exactly one node selector term",
                )
            )
    for field in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(field) is not None:
            if spec[field]:
                set_fields.append(f"`{field}`")
            else:
                causes.append(invalid(f"spec.{field}", "false", "must be either unset or set to true"))
    one_of = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not set_fields:
        causes.append(required("spec", one_of))
    elif len(set_fields) > 1:
        causes.append(invalid("spec", "{" + ", ".join(set_fields) + "}", one_of + ", but multiple fields are set"))
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        causes.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    devices = _dicts(spec.get("devices"))
    limit = SLICE_MAX_DEVICES_WITH_TAINTS_OR_COUNTERS if _uses_advanced_features(devices) else SLICE_MAX_DEVICES
    old_devices = {str(d.get("name") or ""): d for d in _dicts((old_spec or {}).get("devices"))}
    per_device_nodes = bool(spec.get("perDeviceNodeSelection"))
    causes += validate_set(
        devices,
        limit,
        "spec.devices",
        lambda d, p: _device_errors(d, p, old_devices, per_device_nodes),
        lambda d: str(d.get("name") or ""),
    )
    causes += validate_set(
        _dicts(spec.get("sharedCounters")),
        SLICE_MAX_COUNTER_SETS,
        "spec.sharedCounters",
        _counter_set_errors,
        lambda c: str(c.get("name") or ""),
    )
    return causes


def _go_terms(terms: list[Any]) -> str:
    """A ``[]core.NodeSelectorTerm`` as ``%v`` renders it in a field error, by length (the content is not kept)."""
    return "[]core.NodeSelectorTerm{" + ", ".join("core.NodeSelectorTerm{...}" for _ in terms) + "}"


def validate_resource_slice(resource_slice: Obj) -> list[Cause]:
    """ValidateResourceSlice."""
    return validate_metadata(resource_slice, namespaced=False) + _slice_spec_errors(
        _map(resource_slice.get("spec")), None
    )


def validate_resource_slice_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateResourceSliceUpdate: driver, pool name and node name are immutable."""
    return validate_metadata(new, namespaced=False) + _slice_spec_errors(_map(new.get("spec")), _map(old.get("spec")))


def _check_slice(spec: Any) -> None:
    def expect(path: str, value: Any, want: type | tuple[type, ...], go_type: str) -> None:
        expect_type("ResourceSlice", path, value, want, go_type)

    spec = spec or {}
    for field in ("driver", "nodeName"):
        expect(f"spec.{field}", spec.get(field), str, "string")
    for field in ("allNodes", "perDeviceNodeSelection"):
        expect(f"spec.{field}", spec.get(field), bool, "bool")
    pool = spec.get("pool")
    expect("spec.pool", pool, dict, "v1.ResourcePool")
    expect("spec.pool.name", (pool or {}).get("name"), str, "string")
    for field in ("generation", "resourceSliceCount"):
        expect(f"spec.pool.{field}", (pool or {}).get(field), int, "int64")
    expect("spec.devices", spec.get("devices"), list, "[]v1.Device")
    for device in spec.get("devices") or []:
        expect("spec.devices", device, dict, "v1.Device")
        device = device or {}
        expect("spec.devices.name", device.get("name"), str, "string")
        attributes = device.get("attributes")
        expect("spec.devices.attributes", attributes, dict, "map[v1.QualifiedName]v1.DeviceAttribute")
        for attribute in (attributes or {}).values():
            expect("spec.devices.attributes", attribute, dict, "v1.DeviceAttribute")
            attribute = attribute or {}
            expect("spec.devices.attributes.int", attribute.get("int"), int, "int64")
            expect("spec.devices.attributes.bool", attribute.get("bool"), bool, "bool")
            for field in ("string", "version"):
                expect(f"spec.devices.attributes.{field}", attribute.get(field), str, "string")
        capacity = device.get("capacity")
        expect("spec.devices.capacity", capacity, dict, "map[v1.QualifiedName]v1.DeviceCapacity")
        for entry in (capacity or {}).values():
            expect("spec.devices.capacity", entry, dict, "v1.DeviceCapacity")
            _quantity("ResourceSlice", "spec.devices.capacity.value", (entry or {}).get("value"))
        for consumption in device.get("consumesCounters") or []:
            for counter in ((consumption or {}).get("counters") or {}).values():
                _quantity("ResourceSlice", "spec.devices.consumesCounters.counters.value", (counter or {}).get("value"))
    for counter_set in spec.get("sharedCounters") or []:
        for counter in ((counter_set or {}).get("counters") or {}).values():
            _quantity("ResourceSlice", "spec.sharedCounters.counters.value", (counter or {}).get("value"))
