"""The shared rules of resource.k8s.io/v1 validation (pkg/apis/resource/validation): v1.35's limits, names (DNS
labels and subdomains, driver and pool names, C identifiers, qualified names), validateSet/validateSlice, CEL
selectors compiled through ``kss_sim.kube.dra.cel``, node selectors and quantities that do not decode."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kss_sim.cluster.admission.defaults.dra import gate_on
from kss_sim.cluster.admission.validation.decoding import type_error
from kss_sim.cluster.admission.validation.metadata import DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_MSG, SUBDOMAIN_MSG
from kss_sim.cluster.admission.validation.pod import validate_node_selector_terms
from kss_sim.cluster.errors import BadRequest, Cause, duplicate, invalid, required
from kss_sim.cluster.kinds.registry import NO_GATES
from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import QuantityError, parse_quantity

DEVICE_REQUESTS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
DEVICE_SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
DEVICE_TOLERATIONS_MAX = 16
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
SLICE_MAX_DEVICES = 128
SLICE_MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = 64
SLICE_MAX_COUNTER_SETS = 8
SLICE_MAX_COUNTERS_PER_SET = 32
SLICE_MAX_CONSUMPTIONS_PER_DEVICE = 2
SLICE_MAX_COUNTERS_PER_CONSUMPTION = 32
MAX_ATTRIBUTES_AND_CAPACITIES = 32
DEVICE_TAINTS_MAX = 16
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
ATTRIBUTE_MAX_VALUE_LENGTH = 64
POOL_NAME_MAX_LENGTH = 253
DRIVER_NAME_MAX_LENGTH = 63
RESERVED_FOR_MAX = 256
ALLOCATION_RESULTS_MAX = 32
BINDING_CONDITIONS_MAX = 4

_ALLOCATION_MODES = ["All", "ExactCount"]
_TOLERATION_OPERATORS = ["Equal", "Exists"]
_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]
_CONFIG_SOURCES = ["FromClaim", "FromClass"]
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
)
_REQUEST_REF_MSG = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)


# ---------------------------------------------------------------------------------------------- small rules


def too_long(path: str, limit: int) -> Cause:
    """``field.TooLong`` with an unused value."""
    return Cause(path, "FieldValueTooLong", f"Too long: may not be more than {limit} bytes")


def too_many(path: str, actual: int, limit: int) -> Cause:
    """``field.TooMany``."""
    return Cause(path, "FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items")


def not_found(path: str, value: Any, detail: str = "") -> Cause:
    """``field.NotFound`` (with the detail some validators add)."""
    return Cause(path, "FieldValueNotFound", f'Not found: "{value}"' + (f": {detail}" if detail else ""))


def dns_label_errors(path: str, value: str) -> list[Cause]:
    """``ValidateDNS1123Label``: every message IsDNS1123Label gives."""
    causes = [invalid(path, value, "must be no more than 63 characters")] if len(value) > 63 else []
    if not DNS1123_LABEL.match(value):
        causes.append(invalid(path, value, LABEL_MSG))
    return causes


def dns_subdomain_errors(path: str, value: str) -> list[Cause]:
    """``ValidateDNS1123Subdomain``: every message IsDNS1123Subdomain gives."""
    causes = [invalid(path, value, "must be no more than 253 characters")] if len(value) > 253 else []
    if not DNS1123_SUBDOMAIN.match(value):
        causes.append(invalid(path, value, SUBDOMAIN_MSG))
    return causes


def driver_name_errors(path: str, name: str) -> list[Cause]:
    """``ValidateCSIDriverName``, which DRA reuses for driver names (and attribute domains)."""
    causes = [required(path)] if not name else []
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        causes.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    if not DNS1123_SUBDOMAIN.match(name.lower()):
        causes.append(invalid(path, name, SUBDOMAIN_MSG))
    elif len(name) > 253:
        causes.append(invalid(path, name, "must be no more than 253 characters"))
    return causes


def pool_name_errors(path: str, name: str) -> list[Cause]:
    """validatePoolName: required, at most 253 bytes, each ``/``-separated part a DNS subdomain."""
    if not name:
        return [required(path)]
    causes = [too_long(path, POOL_NAME_MAX_LENGTH)] if len(name) > POOL_NAME_MAX_LENGTH else []
    for part in name.split("/"):
        causes += dns_subdomain_errors(path, part)
    return causes


def _c_identifier_errors(path: str, value: str) -> list[Cause]:
    causes = [too_long(path, DEVICE_MAX_ID_LENGTH)] if len(value) > DEVICE_MAX_ID_LENGTH else []
    if not _C_IDENTIFIER.match(value):
        causes.append(invalid(path, value, _C_IDENTIFIER_MSG))
    return causes


def qualified_name_errors_dra(path: str, name: str) -> list[Cause]:
    """validateQualifiedName: a C identifier, optionally behind a driver-name domain and one slash."""
    parts = name.split("/")
    if len(parts) == 1:
        return _c_identifier_errors(path, parts[0])
    if len(parts) > 2:
        return [invalid(path, name, "must not contain more than one slash")]
    causes = [invalid(path, "", "the domain must not be empty")] if not parts[0] else driver_name_errors(path, parts[0])
    causes += (
        [invalid(path, "", "the name must not be empty")] if not parts[1] else _c_identifier_errors(path, parts[1])
    )
    return causes


def fully_qualified_name_errors(path: str, name: str) -> list[Cause]:
    """validateFullyQualifiedName: a qualified name that has a domain."""
    causes = qualified_name_errors_dra(path, name)
    if "/" not in name:
        causes.append(invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash"))
    return causes


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> list[Obj]:
    return [v if isinstance(v, dict) else {} for v in _list(value)]


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _truncated_key(key: str, limit: int) -> str:
    """truncateIfTooLong: long map keys shortened in the middle in field paths."""
    limit = max(limit, 16)
    if len(key) <= limit:
        return key
    remaining = limit - 3
    return key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2 :]


def validate_set(
    items: list[Obj],
    limit: int,
    path: str,
    item_errors: Callable[[Obj, str], list[Cause]],
    key: Callable[[Obj], Any],
) -> list[Cause]:
    """validateSet: at most ``limit`` items (short-circuits), each valid, no key twice."""
    if 0 <= limit < len(items):
        return [too_many(path, len(items), limit)]
    causes: list[Cause] = []
    for i, item in enumerate(items):
        causes += item_errors(item, f"{path}[{i}]")
    seen: set[Any] = set()
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            causes.append(duplicate(f"{path}[{i}]", k))
        seen.add(k)
    return causes


def validate_slice(
    items: list[Obj], limit: int, path: str, item_errors: Callable[[Obj, str], list[Cause]]
) -> list[Cause]:
    """validateSlice: at most ``limit`` items (short-circuits), each valid."""
    if 0 <= limit < len(items):
        return [too_many(path, len(items), limit)]
    causes: list[Cause] = []
    for i, item in enumerate(items):
        causes += item_errors(item, f"{path}[{i}]")
    return causes


def _string_set(values: list[Any], limit: int, path: str, each: Callable[[str, str], list[Cause]]) -> list[Cause]:
    if 0 <= limit < len(values):
        return [too_many(path, len(values), limit)]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, value in enumerate(values):
        text = str(value)
        causes += each(text, f"{path}[{i}]")
    for i, value in enumerate(values):
        if str(value) in seen:
            causes.append(duplicate(f"{path}[{i}]", value))
        seen.add(str(value))
    return causes


# ---------------------------------------------------------------------------------------------- CEL


def cel_expression_errors(path: str, expression: str) -> list[Cause]:
    """validateCELExpression: at most 10 KiB, and it must compile in the DRA environment (the compiler's words,
    with the consumable-capacity extensions as the gate's configured default has them)."""
    if len(expression) > CEL_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_EXPRESSION_MAX_LENGTH)]
    # The compiler and its protobuf descriptors load with the first selector, not at every server's start.
    from kss_sim.kube.dra.cel import CelCompileError, compile_selector

    try:
        compile_selector(expression, consumable_capacity=gate_on(NO_GATES, "DRAConsumableCapacity"))
    except CelCompileError as exc:
        return [invalid(path, expression, str(exc))]
    return []


def selector_errors(selector: Obj, path: str, *, stored: bool = False) -> list[Cause]:
    cel = selector.get("cel")
    if not isinstance(cel, dict):
        return [required(f"{path}.cel")]
    if stored:
        return []  # a stored expression was valid when stored (upstream skips it, cheaper and ratcheting)
    return cel_expression_errors(f"{path}.cel.expression", str(cel.get("expression") or ""))


def _selectors_errors(selectors: Any, path: str, *, stored: bool = False) -> list[Cause]:
    return validate_slice(
        _dicts(selectors), DEVICE_SELECTORS_MAX, path, lambda s, p: selector_errors(s, p, stored=stored)
    )


def _node_selector_errors(selector: Obj, path: str) -> list[Cause]:
    """ValidateNodeSelector: at least one term, each well formed."""
    terms = _list(selector.get("nodeSelectorTerms"))
    if not terms:
        return [required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    return validate_node_selector_terms(f"{path}.nodeSelectorTerms", terms)


def _quantity(kind: str, path: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise type_error(kind, path, "resource.Quantity", value)
    try:
        parse_quantity(value)
    except QuantityError as exc:
        raise BadRequest(f'{kind} in version "v1" cannot be handled as a {kind}: {exc}') from None
