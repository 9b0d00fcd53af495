"""resource.k8s.io/v1beta1 and v1beta2: the DRA kinds the store holds in v1, served in the beta versions.

kube-apiserver stores one resource per DRA kind and converts it to the version a request names
(pkg/apis/resource/v1beta1 and v1beta2's conversion). v1 was made from v1beta2: for DeviceClass, ResourceSlice,
ResourceClaim and ResourceClaimTemplate the two have the same fields, so v1beta2 differs by its apiVersion alone.
v1beta1 is flatter in one place and deeper in another:

- a request (``spec.devices.requests[]`` of a claim, and of a template's claim spec) holds the fields v1 keeps in
  ``exactly`` itself; converting to v1, they move into ``exactly`` when any of them is set (Go's zero values
  count as unset, an empty ``selectors`` list as set), as upstream's hasAnyMainRequestFieldsSet does;
- a ResourceSlice's device holds everything but its name in ``basic``; converting to v1beta1, ``basic`` is always
  written (upstream always converts to a BasicDevice).

``views`` serves each kind with these conversions (``CONVERSIONS``): v1beta2's patches are the v1 patches as they
are, v1beta1's are applied to the object read in v1beta1 form and written back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kss_sim.cluster.api.views import Conversion
from kss_sim.cluster.kinds.registry import BY_KIND, DRA_V1BETA1, DRA_V1BETA2, KindInfo

# ExactDeviceRequest's fields (v1), which v1beta1's DeviceRequest holds itself.
EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


def _requests(spec: Any) -> list[dict[str, Any]]:
    """The requests of a claim spec (``spec.devices.requests``), those that are objects."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    return [r for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []


def _claim_specs(obj: dict[str, Any]) -> list[Any]:
    """The claim specs an object holds: a ResourceClaim's spec, a ResourceClaimTemplate's spec.spec."""
    spec = obj.get("spec")
    if obj.get("kind") in ("ResourceClaimTemplate", "ResourceClaimTemplateList") and isinstance(spec, dict):
        return [spec.get("spec")]
    return [spec]


def _devices(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """A ResourceSlice's devices (``spec.devices``), those that are objects."""
    spec = obj.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _is_set(value: Any) -> bool:
    """Go's test for a field of v1beta1's DeviceRequest being set: not its zero value (a present list is set)."""
    return value is not None and value != "" and value != 0


def _flat_request(request: dict[str, Any]) -> None:
    exactly = request.pop("exactly", None)
    if isinstance(exactly, dict):
        request.update({key: value for key, value in exactly.items() if key in EXACT_FIELDS})


def _exact_request(request: dict[str, Any]) -> None:
    moved = {key: request.pop(key) for key in EXACT_FIELDS if key in request}
    if any(_is_set(value) for value in moved.values()):
        request["exactly"] = {key: value for key, value in moved.items() if value is not None}


def _basic_device(device: dict[str, Any]) -> None:
    basic = {key: device.pop(key) for key in list(device) if key != "name"}
    device["basic"] = basic


def _flat_device(device: dict[str, Any]) -> None:
    basic = device.pop("basic", None)
    if isinstance(basic, dict):
        device.update(basic)


def _converted(obj: dict[str, Any], api_version: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """A copy of ``obj`` (an object or an apply configuration) in ``api_version``, changed by ``change``: only the
    parts a conversion rewrites are copied."""
    out = {**obj, "apiVersion": api_version}
    if isinstance(out.get("spec"), dict):
        out["spec"] = _deep_copy(out["spec"])
    change(out)
    return out


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _to_v1beta1(obj: dict[str, Any]) -> None:
    for spec in _claim_specs(obj):
        for request in _requests(spec):
            _flat_request(request)
    if obj.get("kind") == "ResourceSlice":
        for device in _devices(obj):
            _basic_device(device)


def _to_v1(obj: dict[str, Any]) -> None:
    for spec in _claim_specs(obj):
        for request in _requests(spec):
            _exact_request(request)
    if obj.get("kind") == "ResourceSlice":
        for device in _devices(obj):
            _flat_device(device)


def _v1beta1_unknown(obj: dict[str, Any]) -> list[str]:
    """The v1 fields a v1beta1 body has where v1beta1 has none (``exactly``, a device's fields outside ``basic``),
    each removed."""
    unknown: list[str] = []
    spec_path = "spec.spec" if obj.get("kind") == "ResourceClaimTemplate" else "spec"
    for spec in _claim_specs(obj):
        for index, request in enumerate(_requests(spec)):
            if "exactly" in request:
                request.pop("exactly")
                unknown.append(f"{spec_path}.devices.requests[{index}].exactly")
    if obj.get("kind") == "ResourceSlice":
        for index, device in enumerate(_devices(obj)):
            for key in [k for k in device if k not in ("name", "basic")]:
                device.pop(key)
                unknown.append(f"spec.devices[{index}].{key}")
    return unknown


def _conversion_v1beta1(view: KindInfo) -> Conversion:
    stored = BY_KIND[view.kind]
    return Conversion(
        view=view,
        stored=stored,
        to_view=lambda obj: _converted(obj, view.api_version, _to_v1beta1),
        to_stored=lambda obj: _converted(obj, stored.api_version, _to_v1),
        pop_unknown=_v1beta1_unknown,
    )


def _conversion_v1beta2(view: KindInfo) -> Conversion:
    stored = BY_KIND[view.kind]
    return Conversion(
        view=view,
        stored=stored,
        to_view=lambda obj: {**obj, "apiVersion": view.api_version},
        to_stored=lambda obj: {**obj, "apiVersion": stored.api_version},
        rename_patch=lambda _content_type, patch: patch,  # the same fields: a v1beta2 patch is a v1 patch
    )


CONVERSIONS: tuple[Conversion, ...] = (
    *(_conversion_v1beta2(view) for view in DRA_V1BETA2),
    *(_conversion_v1beta1(view) for view in DRA_V1BETA1),
)

_BY_VIEW = {(c.view.api_version, c.view.api_kind): c for c in CONVERSIONS}


def in_stored_version(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` in v1 when it is a DRA object in a beta version (a file written for a v1.33 cluster), else itself:
    what the commands that read objects without the API (simulate, import, replay) store."""
    conversion = _BY_VIEW.get((obj.get("apiVersion"), obj.get("kind")))  # type: ignore[arg-type]
    return conversion.to_stored(obj) if conversion is not None else obj
