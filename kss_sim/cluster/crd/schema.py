"""A CustomResourceDefinition version's ``openAPIV3Schema`` at work, as apiextensions-apiserver uses it: whether it
is structural (a CRD whose schema is not is refused), and, for the custom objects, pruning of unknown fields,
defaulting and validation.

Validation is a JSON Schema check compiled once per CRD version by fastjsonschema (the OpenAPI dialect translated:
``nullable``, ``x-kubernetes-int-or-string``); when it finds a violation, ``violations`` walks the schema for all
of them, each worded as kube-openapi words it, with the field path. Pruning and defaulting walk the structural
schema as kube's ``structural/pruning`` and ``structural/defaulting`` do.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

import fastjsonschema

from kss_sim.cluster.crd import violations
from kss_sim.cluster.errors import Cause, forbidden, invalid, required

Schema = dict[str, Any]

# The object's own fields: never pruned (metadata is ObjectMeta, checked as every kind's).
_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
# The validation keywords JSON Schema shares with OpenAPI v3; ``format`` is left out (kube's formats are not JSON
# Schema's), the x-kubernetes extensions are translated or only matter to pruning and defaulting.
_KEPT = frozenset(
    {"type", "enum", "required", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
    | {"minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "multipleOf"}
)


# ---------------------------------------------------------------------------------------------- structural


def structural_causes(schema: Any, path: str) -> list[Cause]:
    """Why ``schema`` (a version's ``openAPIV3Schema`` at ``path``) is not structural, as the CRD's validation
    says it: every specified field has a type (unless it preserves unknown fields or is an int-or-string), an
    object at the root, no ``properties`` beside ``additionalProperties``, no ``$ref``."""
    if not isinstance(schema, dict):
        return [required(path, "schemas are required")]
    causes: list[Cause] = []
    if not schema.get("type"):
        causes.append(required(f"{path}.type", "must not be empty at the root"))
    elif schema["type"] != "object":
        causes.append(invalid(f"{path}.type", schema["type"], "must be object at the root"))
    _structural(schema, path, causes, root=True)
    return causes


def _structural(node: Schema, path: str, causes: list[Cause], *, root: bool = False) -> None:
    typ = node.get("type")
    if typ is not None and typ not in _TYPES:
        causes.append(
            Cause(
                f"{path}.type",
                "FieldValueNotSupported",
                f'Unsupported value: "{typ}": supported values: "array", "boolean", "integer", "number", '
                '"object", "string"',
            )
        )
    if "$ref" in node:
        causes.append(forbidden(f"{path}.$ref", "$ref is not supported"))
    if node.get("uniqueItems") is True:
        causes.append(
            forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    # Unknown fields are pruned or kept, never refused: the API conventions forbid a closed object.
    if node.get("additionalProperties") is False:
        causes.append(forbidden(f"{path}.additionalProperties", "additionalProperties cannot be set to false"))
    if node.get("properties") and node.get("additionalProperties") not in (None, False):
        causes.append(
            forbidden(f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive")
        )
    properties = node.get("properties") or {}
    if isinstance(properties, dict):
        for name, child in properties.items():
            if isinstance(child, dict):
                if not root or name not in _ROOT_FIELDS:
                    _require_type(
                        child, f"{path}.properties[{name}]", "must not be empty for specified object fields", causes
                    )
                _structural(child, f"{path}.properties[{name}]", causes)
    items = node.get("items")
    if isinstance(items, dict):
        _require_type(items, f"{path}.items", "must not be empty for specified array items", causes)
        _structural(items, f"{path}.items", causes)
    elif typ == "array" and items is None:
        causes.append(required(f"{path}.items", "must be specified"))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        _require_type(extra, f"{path}.additionalProperties", "must not be empty for specified object fields", causes)
        _structural(extra, f"{path}.additionalProperties", causes)


def _require_type(node: Schema, path: str, detail: str, causes: list[Cause]) -> None:
    if node.get("type") or node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields"):
        return
    causes.append(required(f"{path}.type", detail))


# ---------------------------------------------------------------------------------------------- pruning


def prune(schema: Schema, obj: dict[str, Any]) -> list[str]:
    """Drop from ``obj`` (in place) the fields ``schema`` does not specify, as kube-apiserver prunes a custom
    object; the paths dropped (``spec.foo``), in document order, for ``fieldValidation``."""
    dropped: list[str] = []
    _prune_object(schema, obj, "", dropped, root=True)
    return dropped


def _prune_object(node: Schema, obj: dict[str, Any], path: str, dropped: list[str], *, root: bool = False) -> None:
    properties = node.get("properties") or {}
    extra = node.get("additionalProperties")
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
    for key in list(obj):
        child_path = f"{path}.{key}" if path else key
        if root and key in _ROOT_FIELDS:
            continue
        child = properties.get(key)
        if child is None and isinstance(extra, dict):
            child = extra
        if child is None:
            if not preserve and extra is not True:
                del obj[key]
                dropped.append(child_path)
            continue
        _prune_value(child, obj[key], child_path, dropped)


def _prune_value(node: Schema, value: Any, path: str, dropped: list[str]) -> None:
    if isinstance(value, dict):
        _prune_object(node, value, path, dropped)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            _prune_value(node["items"], item, f"{path}[{i}]", dropped)


# ---------------------------------------------------------------------------------------------- defaulting


def apply_defaults(schema: Schema, obj: Any) -> None:
    """Set, in place, each missing field whose schema has a ``default`` (a copy of it), at every level present,
    as kube's structural defaulting does (a null is left alone unless the field is not nullable)."""
    if isinstance(obj, dict):
        properties = schema.get("properties") or {}
        for key, child in properties.items():
            if not isinstance(child, dict):
                continue
            if "default" in child and (key not in obj or (obj[key] is None and not child.get("nullable"))):
                obj[key] = copy.deepcopy(child["default"])
            if key in obj:
                apply_defaults(child, obj[key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in obj.items():
                if key not in properties:
                    apply_defaults(extra, value)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            apply_defaults(schema["items"], item)


# ---------------------------------------------------------------------------------------------- validation


def _json_schema(node: Any, *, root: bool = False) -> Any:
    """The JSON Schema (draft 4) form of an OpenAPI v3 structural schema node."""
    if not isinstance(node, dict):
        return node
    out: Schema = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            out[key] = {
                name: _json_schema(child)
                for name, child in value.items()
                if not (root and name == "metadata")  # ObjectMeta is checked as every kind's
            }
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_json_schema(v) for v in value]
        elif key in _KEPT:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if node.get("nullable") and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def compile_validator(schema: Schema) -> Callable[[Any], list[Cause]]:
    """The object validator of one CRD version's schema, compiled once (the CRD's kinds are rebuilt only when the
    CRD changes): every violation of an object's schema as the CRD handler reports them (``spec.replicas in body
    must be of type integer``). The compiled check says quickly whether there is any (it stops at the first);
    only then, or when the schema has formats (which it does not check), is the schema walked for all of them."""
    compiled: Callable[[Any], Any] = fastjsonschema.compile(
        {"$schema": "http://json-schema.org/draft-04/schema#", **_json_schema(schema, root=True)},
        use_formats=False,
    )
    formats = violations.has_formats(schema)

    def validate(obj: Any) -> list[Cause]:
        try:
            compiled(obj)
        except fastjsonschema.JsonSchemaValueException as exc:
            return violations.walk(schema, obj, violation) or [_cause(exc)]
        return violations.walk(schema, obj, violation) if formats else []

    return validate


def _field_path(exc: fastjsonschema.JsonSchemaValueException) -> str:
    out = ""
    for part in exc.path[1:]:  # the first is "data"
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _go_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"))


def _cause(exc: fastjsonschema.JsonSchemaValueException) -> Cause:
    """The compiled validator's violation in kube's words (when the walk found none: it should not happen)."""
    path, rule, definition, value = _field_path(exc), str(exc.rule), exc.definition or {}, exc.value
    if rule == "required":
        missing = next((name for name in definition.get("required", []) if name not in (value or {})), "")
        path = f"{path}.{missing}" if path else missing
    return violation(path, rule, definition, value, exc.message.removeprefix("data").strip())


def violation(path: str, rule: str, node: Any, value: Any, fallback: str = "") -> Cause:
    """One violation of keyword ``rule`` of schema ``node`` by ``value`` at ``path`` as kube-openapi words it and
    apiextensions-apiserver turns it into a field error (``required``: ``path`` is the missing field's)."""
    definition: Mapping[str, Any] = node if isinstance(node, Mapping) else {}
    shown = _go_value(value)
    if rule == "required":
        return required(path)
    if rule == "type":
        typ = definition.get("type")
        if definition.get("x-kubernetes-int-or-string"):
            typ = ["integer", "string"]
        names = [t for t in (typ if isinstance(typ, list) else [typ]) if t != "null"]
        actual = _type_name(value)
        detail = f"{path} in body must be of type {','.join(str(n) for n in names)}: {actual}"
        return Cause(path, "FieldValueTypeInvalid", f"Invalid value: {actual}: {detail}")
    if rule == "format":
        detail = f"{path} in body must be of type {definition.get('format')}: {shown}"
        return Cause(path, "FieldValueTypeInvalid", f"Invalid value: {shown}: {detail}")
    if rule == "enum":
        allowed = ", ".join(_go_value(v) for v in definition.get("enum", []) if v is not None)
        return Cause(path, "FieldValueNotSupported", f"Unsupported value: {shown}: supported values: {allowed}")
    if rule == "maxLength":
        return Cause(path, "FieldValueTooLong", f"Too long: may not be more than {definition.get('maxLength')} bytes")
    if rule in ("maxItems", "maxProperties"):
        limit = definition.get(rule)
        return Cause(path, "FieldValueTooMany", f"Too many: {len(value or ())}: must have at most {limit} items")
    exclusive_min, exclusive_max = definition.get("exclusiveMinimum"), definition.get("exclusiveMaximum")
    words = {
        "minimum": f"should be greater than {'' if exclusive_min else 'or equal to '}{definition.get('minimum')}",
        "maximum": f"should be less than {'' if exclusive_max else 'or equal to '}{definition.get('maximum')}",
        "pattern": f"should match '{definition.get('pattern')}'",
        "minLength": f"should be at least {definition.get('minLength')} chars long",
        "minItems": f"should have at least {definition.get('minItems')} items",
        "minProperties": f"should have at least {definition.get('minProperties')} properties",
        "multipleOf": f"should be a multiple of {definition.get('multipleOf')}",
        "uniqueItems": "shouldn't contain duplicates",
        "anyOf": "must validate at least one schema (anyOf)",
        "oneOf": "must validate one and only one schema (oneOf)",
        "not": "must not validate the schema (not)",
    }
    detail = words.get(rule, fallback)
    return Cause(path, "FieldValueInvalid", f"Invalid value: {shown}: {path} in body {detail}")


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return '"boolean"'
    if isinstance(value, int):
        return '"integer"'
    if isinstance(value, float):
        return '"number"'
    if isinstance(value, str):
        return '"string"'
    if isinstance(value, list):
        return '"array"'
    if isinstance(value, dict):
        return '"object"'
    return '"null"'
