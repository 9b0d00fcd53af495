"""Every violation of a custom object's schema, as kube-openapi's validator reports them all in one 422 (not the
first one only), in its order: at each node the type first (a value of the wrong type is not checked further),
then ``allOf``/``anyOf``/``oneOf``/``not``, the string, format, number and array checks, ``enum``, then an
object's properties (in the schema's order: kube walks a Go map, so its own order varies) and its required ones;
array items after their array's own checks.

``format`` is checked for the formats kube-apiserver validates (``StripUnsupportedFormatsPostProcess`` keeps only
those; ``int32``, ``int64``, ``float``, ``double``, ``password`` are descriptions only), on strings, worded as
strfmt's ``InvalidType`` (``spec.email in body must be of type email: "x"``). ``isbn`` and ``creditcard`` are
accepted unchecked.

The words of each violation are ``schema.violation``'s, shared with the fast path (fastjsonschema, which stops at
the first): this walk runs only when that one finds something, or when the schema has formats to check.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any

from kss_sim.cluster.errors import Cause

Node = Mapping[str, Any]
Report = Callable[[str, str, Node, Any], Cause]

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID_VERSION = {
    "uuid3": re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$"),
    "uuid4": re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"),
    "uuid5": re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"),
}
_HOSTNAME_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_EMAIL = re.compile(r"^(?:[^<>@\s]+@[^<>@\s]+|[^<>]*<[^<>@\s]+@[^<>@\s]+>)$")
_GO_DURATION = re.compile(r"^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$")
_WORDS_DURATION = re.compile(
    r"^(\d+)\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|sec|minutes?|min"
    r"|hours?|hr|days?|weeks?|wk)$"
)
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$")
_MAC = re.compile(r"^(?:[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5,19}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2,9})$")
_HEXCOLOR = re.compile(r"^#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_BYTE = r"(0|[1-9]\d?|1\d\d|2[0-4]\d|25[0-5])"
_RGBCOLOR = re.compile(rf"^rgb\(\s*{_BYTE}\s*,\s*{_BYTE}\s*,\s*{_BYTE}\s*\)$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_BSON_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{24}$")


def _ip(text: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False


def _cidr(text: str) -> bool:
    address, slash, bits = text.partition("/")
    if not slash or not bits.isdigit():
        return False
    try:
        ipaddress.ip_network(f"{address}/{bits}", strict=False)
    except ValueError:
        return False
    return True


def _hostname(text: str) -> bool:
    return 0 < len(text) <= 255 and all(_HOSTNAME_LABEL.match(label) for label in text.rstrip(".").split("."))


def _date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _date_time(text: str) -> bool:
    if not _RFC3339.match(text):
        return False
    try:
        datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00").replace("t", "T"))
    except ValueError:
        return False
    return True


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# kube-apiserver's validated formats (strfmt's names, dashes and underscores ignored as its registry does).
FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(_BSON_OBJECT_ID.match(s)),
    "uri": lambda s: True,  # Go's url.Parse refuses almost nothing
    "email": lambda s: bool(_EMAIL.match(s)),
    "hostname": _hostname,
    "ipv4": lambda s: _ip(s, 4),
    "ipv6": lambda s: _ip(s, 6),
    "cidr": _cidr,
    "mac": lambda s: bool(_MAC.match(s)),
    "uuid": lambda s: bool(_UUID.match(s)),
    "uuid3": lambda s: bool(_UUID_VERSION["uuid3"].match(s)),
    "uuid4": lambda s: bool(_UUID_VERSION["uuid4"].match(s)),
    "uuid5": lambda s: bool(_UUID_VERSION["uuid5"].match(s)),
    "isbn": lambda s: True,
    "isbn10": lambda s: True,
    "isbn13": lambda s: True,
    "creditcard": lambda s: True,
    "ssn": lambda s: bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": _byte,
    "password": lambda s: True,
    "date": _date,
    "duration": lambda s: bool(_GO_DURATION.match(s) or _WORDS_DURATION.match(s)),
    "datetime": _date_time,
}


def format_check(name: str) -> Callable[[str], bool] | None:
    """The check of a ``format`` kube-apiserver validates; None for one it does not (int32, a made-up name)."""
    return FORMATS.get(name.replace("-", "").replace("_", "").lower())


def has_formats(schema: Any) -> bool:
    """Whether any node of ``schema`` names a format kube validates (then valid-looking objects are walked too)."""
    if isinstance(schema, Mapping):
        if isinstance(schema.get("format"), str) and format_check(schema["format"]) is not None:
            return True
        return any(has_formats(v) for k, v in schema.items() if k not in ("default", "enum", "example"))
    if isinstance(schema, list):
        return any(has_formats(v) for v in schema)
    return False


def _is_type(value: Any, typ: str) -> bool:
    if typ == "object":
        return isinstance(value, dict)
    if typ == "array":
        return isinstance(value, list)
    if typ == "string":
        return isinstance(value, str)
    if typ == "boolean":
        return isinstance(value, bool)
    if typ == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if typ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True


def _types(node: Node) -> list[str]:
    if node.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    typ = node.get("type")
    return [typ] if isinstance(typ, str) else []


def walk(schema: Node, obj: Any, report: Report) -> list[Cause]:
    """Every violation of ``obj`` (a whole custom object) against its version's ``schema``; ``report(path, rule,
    node, value)`` words each one."""
    out: list[Cause] = []
    _node(schema, obj, "", out, report, root=True)
    return out


def _valid(node: Node, value: Any, path: str, report: Report) -> bool:
    found: list[Cause] = []
    _node(node, value, path, found, report, root=False)
    return not found


def _node(node: Node, value: Any, path: str, out: list[Cause], report: Report, *, root: bool) -> None:
    if not isinstance(node, Mapping):
        return
    if value is None:
        if node.get("nullable") or not _types(node):
            return
        out.append(report(path, "type", node, value))
        return
    types = _types(node)
    if types and not any(_is_type(value, t) for t in types):
        out.append(report(path, "type", node, value))
        return
    for sub in node.get("allOf") or []:
        _node(sub, value, path, out, report, root=False)
    if node.get("anyOf") and not any(_valid(sub, value, path, report) for sub in node["anyOf"]):
        out.append(report(path, "anyOf", node, value))
    if node.get("oneOf") and sum(_valid(sub, value, path, report) for sub in node["oneOf"]) != 1:
        out.append(report(path, "oneOf", node, value))
    if isinstance(node.get("not"), Mapping) and _valid(node["not"], value, path, report):
        out.append(report(path, "not", node, value))
    if isinstance(value, str):
        _string(node, value, path, out, report)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _number(node, value, path, out, report)
    elif isinstance(value, list):
        _array(node, value, path, out, report)
    if "enum" in node and value not in node["enum"]:
        out.append(report(path, "enum", node, value))
    if isinstance(value, dict):
        _object(node, value, path, out, report, root=root)


def _string(node: Node, value: str, path: str, out: list[Cause], report: Report) -> None:
    if "maxLength" in node and len(value) > node["maxLength"]:
        out.append(report(path, "maxLength", node, value))
    if "minLength" in node and len(value) < node["minLength"]:
        out.append(report(path, "minLength", node, value))
    if "pattern" in node and re.search(node["pattern"], value) is None:
        out.append(report(path, "pattern", node, value))
    check = format_check(node["format"]) if isinstance(node.get("format"), str) else None
    if check is not None and not check(value):
        out.append(report(path, "format", node, value))


def _number(node: Node, value: float, path: str, out: list[Cause], report: Report) -> None:
    multiple = node.get("multipleOf")
    if multiple and (value / multiple) != int(value / multiple):
        out.append(report(path, "multipleOf", node, value))
    if "maximum" in node and (value >= node["maximum"] if node.get("exclusiveMaximum") else value > node["maximum"]):
        out.append(report(path, "maximum", node, value))
    if "minimum" in node and (value <= node["minimum"] if node.get("exclusiveMinimum") else value < node["minimum"]):
        out.append(report(path, "minimum", node, value))


def _array(node: Node, value: list[Any], path: str, out: list[Cause], report: Report) -> None:
    if "minItems" in node and len(value) < node["minItems"]:
        out.append(report(path, "minItems", node, value))
    if "maxItems" in node and len(value) > node["maxItems"]:
        out.append(report(path, "maxItems", node, value))
    if node.get("uniqueItems") and any(value[i] in value[:i] for i in range(len(value))):
        out.append(report(path, "uniqueItems", node, value))
    items = node.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _node(items, item, f"{path}[{i}]", out, report, root=False)


def _object(node: Node, value: dict[str, Any], path: str, out: list[Cause], report: Report, *, root: bool) -> None:
    # Too few or too many properties is the only error of the object, as kube-openapi returns at once.
    if "minProperties" in node and len(value) < node["minProperties"]:
        out.append(report(path, "minProperties", node, value))
        return
    if "maxProperties" in node and len(value) > node["maxProperties"]:
        out.append(report(path, "maxProperties", node, value))
        return
    properties = node.get("properties") or {}
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        for key, item in value.items():
            if key not in properties:
                _node(extra, item, f"{path}.{key}" if path else key, out, report, root=False)
    for key, child in properties.items():
        if key in value and not (root and key == "metadata"):  # ObjectMeta is checked as every kind's
            _node(child, value[key], f"{path}.{key}" if path else key, out, report, root=False)
    for key in node.get("required") or []:
        if key not in value:
            out.append(report(f"{path}.{key}" if path else key, "required", node, value))
