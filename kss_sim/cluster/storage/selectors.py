"""``labelSelector`` and ``fieldSelector`` query strings, parsed and matched as kube-apiserver does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from kss_sim.cluster.errors import BadRequest
from kss_sim.kube.labels import SelectorError, parse_selector_string, requirements_match


def _get(obj: dict[str, Any], *path: str) -> Any:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _field(*path: str) -> Callable[[dict[str, Any]], str]:
    return lambda obj: _text(_get(obj, *path))


def _source(obj: dict[str, Any]) -> str:
    return _text(_get(obj, "source", "component")) or _text(obj.get("reportingComponent"))


_COMMON: dict[str, Callable[[dict[str, Any]], str]] = {
    "metadata.name": _field("metadata", "name"),
    "metadata.namespace": _field("metadata", "namespace"),
}
FIELDS: dict[str, dict[str, Callable[[dict[str, Any]], str]]] = {
    "Pod": {
        "spec.nodeName": _field("spec", "nodeName"),
        "spec.restartPolicy": _field("spec", "restartPolicy"),
        "spec.schedulerName": _field("spec", "schedulerName"),
        "spec.serviceAccountName": _field("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda o: _text(bool(_get(o, "spec", "hostNetwork"))),
        "status.phase": _field("status", "phase"),
        "status.podIP": _field("status", "podIP"),
        "status.nominatedNodeName": _field("status", "nominatedNodeName"),
    },
    "Node": {"spec.unschedulable": lambda o: _text(bool(_get(o, "spec", "unschedulable")))},
    "Namespace": {"status.phase": _field("status", "phase")},
    "PersistentVolume": {"name": _field("metadata", "name")},
    "PersistentVolumeClaim": {"name": _field("metadata", "name")},
    "Event": {
        "involvedObject.kind": _field("involvedObject", "kind"),
        "involvedObject.namespace": _field("involvedObject", "namespace"),
        "involvedObject.name": _field("involvedObject", "name"),
        "involvedObject.uid": _field("involvedObject", "uid"),
        "involvedObject.apiVersion": _field("involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": _field("involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": _field("involvedObject", "fieldPath"),
        "reason": _field("reason"),
        "reportingComponent": _field("reportingComponent"),
        "source": _source,
        "type": _field("type"),
    },
    # The resourceslice strategy's selectable fields (kubelets and drivers list their node's slices by them).
    "ResourceSlice": {"spec.nodeName": _field("spec", "nodeName"), "spec.driver": _field("spec", "driver")},
}


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """``field=value`` or ``field!=value``."""

    getter: Callable[[dict[str, Any]], str]
    value: str
    negate: bool

    def matches(self, obj: dict[str, Any]) -> bool:
        """True when the object satisfies this requirement."""
        return (self.getter(obj) == self.value) != self.negate


def _split_terms(text: str) -> list[str]:
    terms, current, escaped = [], "", False
    for ch in text:
        if escaped:
            current += "\\" + ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    return terms


def _unescape(value: str) -> str:
    out, escaped = "", False
    for ch in value:
        if escaped:
            out += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out += ch
    return out


def parse_field_selector(kind: str, text: str | None) -> list[FieldRequirement]:
    """Parse ``fieldSelector`` for ``kind``; unknown field labels are a ``BadRequest`` like kube-apiserver."""
    if not text:
        return []
    supported = {**_COMMON, **FIELDS.get(kind, {})}
    reqs: list[FieldRequirement] = []
    for term in _split_terms(text):
        if not term:
            continue
        for op in ("!=", "==", "="):
            if op in term:
                field, _, value = term.partition(op)
                break
        else:
            raise BadRequest(f"invalid field selector: {text!r}: invalid selector: '{term}'; can't understand '{term}'")
        field = field.strip()
        if field not in supported:
            raise BadRequest(f"field label not supported: {field}")
        reqs.append(FieldRequirement(supported[field], _unescape(value), op == "!="))
    return reqs


def parse_label_selector(text: str | None) -> list[tuple[str, str, list[str]]]:
    """Parse ``labelSelector`` (equality and set-based); malformed text is a ``BadRequest``."""
    if not text:
        return []
    try:
        reqs = parse_selector_string(text)
    except SelectorError as exc:
        raise BadRequest(f"unable to parse requirement: {exc}") from None
    for key, op, values in reqs:
        if not key or any(c in key for c in " =!()"):
            raise BadRequest(f"unable to parse requirement: invalid label key {key!r}")
        if op in ("In", "NotIn") and not values:
            raise BadRequest(f"unable to parse requirement: values for {op} must be non-empty")
    return reqs


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed pair of label and field selectors."""

    labels: list[tuple[str, str, list[str]]]
    fields: list[FieldRequirement]
    # The JSON strings an object's encoding must hold to match (``field=value`` with a value): a packed object
    # (an Event) without one of them is passed over without being decoded.
    needles: tuple[bytes, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector matches everything."""
        return not self.labels and not self.fields

    def may_match_raw(self, raw: bytes) -> bool:
        """False when the object encoded as ``raw`` (by orjson, as the store encodes) cannot match."""
        return all(needle in raw for needle in self.needles)

    def matches(self, obj: dict[str, Any]) -> bool:
        """True when both selectors hold for ``obj``."""
        if self.labels and not requirements_match(self.labels, _get(obj, "metadata", "labels")):
            return False
        return all(f.matches(obj) for f in self.fields)


def make_selector(kind: str, label_selector: str | None, field_selector: str | None) -> Selector:
    """Parse both selectors for ``kind``."""
    fields = parse_field_selector(kind, field_selector)
    # Every Event field a selector names is a string of the object (or empty when absent: no needle for "").
    needles = tuple(orjson.dumps(f.value) for f in fields if not f.negate and f.value) if kind == "Event" else ()
    return Selector(parse_label_selector(label_selector), fields, needles)
