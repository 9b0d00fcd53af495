"""Every violation of a custom object's schema, as kube-openapi's validator reports them all in one 422 (not the
first one only), in its order: at each node the type first (a value of the wrong type is not checked further),
then ``allOf``/``anyOf``/``oneOf``/``not``, the string, format, number and array checks, ``enum``, then an
object's properties (in the schema's order: kube walks a Go map, so its own order varies) and its required ones;
array items after their array's own checks.

``format`` is checked for the formats kube-apiserver validates (``formats``), on strings, worded as strfmt's
``InvalidType`` (``spec.email in body must be of type email: "x"``).

The words of each violation are ``schema.violation``'s, shared with the fast path (fastjsonschema, which stops at
the first): this walk runs only when that one finds something, or when the schema has formats to check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kss_sim.cluster.crd.formats import format_check
from kss_sim.cluster.errors import Cause

Node = Mapping[str, Any]
Report = Callable[[str, str, Node, Any], Cause]


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
