"""Label selectors and node selector terms, evaluated as the Kubernetes apimachinery does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Selector = dict[str, Any]


class SelectorError(ValueError):
    """A selector whose operator or values are invalid."""


def _requirement_matches(labels: Mapping[str, str], key: str, operator: str, values: list[str]) -> bool:
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise SelectorError(f"{operator!r} is not a valid label selector operator")


def label_selector_matches(selector: Selector | None, labels: Mapping[str, str] | None) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``.

    A ``None`` selector matches nothing (``labels.Nothing()``); an empty one matches everything.
    """
    if selector is None:
        return False
    labels = labels or {}
    for key, val in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != val:
            return False
    for expr in selector.get("matchExpressions") or []:
        if not _requirement_matches(labels, expr["key"], expr["operator"], list(expr.get("values") or [])):
            return False
    return True


def validate_label_selector(selector: Selector) -> None:
    """Raise :class:`SelectorError` for operators kube-apiserver would reject."""
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        values = expr.get("values") or []
        if op in ("In", "NotIn") and not values:
            raise SelectorError(f"values: Required value: must be specified when `operator` is '{op}'")
        if op in ("Exists", "DoesNotExist") and values:
            raise SelectorError(f"values: Forbidden: may not be specified when `operator` is '{op}'")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise SelectorError(f"operator: Invalid value: {op!r}: not a valid selector operator")


def parse_selector_string(text: str) -> list[tuple[str, str, list[str]]]:
    """Parse a ``labelSelector`` query string (``a=b,c!=d,e in (x,y),!f,g``) into requirements."""
    reqs: list[tuple[str, str, list[str]]] = []
    text = text.strip()
    if not text:
        return reqs
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    for raw in parts:
        part = raw.strip()
        if not part:
            raise SelectorError(f"invalid label selector {text!r}")
        lowered = f" {part} "
        if " notin " in lowered or " in " in lowered:
            op = "NotIn" if " notin " in lowered else "In"
            key, _, rest = part.partition(" notin " if op == "NotIn" else " in ")
            rest = rest.strip()
            if not (rest.startswith("(") and rest.endswith(")")):
                raise SelectorError(f"invalid label selector {text!r}")
            values = [v.strip() for v in rest[1:-1].split(",") if v.strip()]
            reqs.append((key.strip(), op, values))
        elif "!=" in part:
            key, _, val = part.partition("!=")
            reqs.append((key.strip(), "NotIn", [val.strip()]))
        elif "==" in part:
            key, _, val = part.partition("==")
            reqs.append((key.strip(), "In", [val.strip()]))
        elif "=" in part:
            key, _, val = part.partition("=")
            reqs.append((key.strip(), "In", [val.strip()]))
        elif part.startswith("!"):
            reqs.append((part[1:].strip(), "DoesNotExist", []))
        else:
            if any(c in part for c in " ()"):
                raise SelectorError(f"invalid label selector {text!r}")
            reqs.append((part, "Exists", []))
    return reqs


def requirements_match(reqs: list[tuple[str, str, list[str]]], labels: Mapping[str, str] | None) -> bool:
    """True when every parsed requirement holds for ``labels``."""
    labels = labels or {}
    return all(_requirement_matches(labels, key, op, values) for key, op, values in reqs)


def _node_field(node: Mapping[str, Any], key: str) -> str | None:
    if key == "metadata.name":
        name = (node.get("metadata") or {}).get("name")
        return str(name) if name is not None else None
    return None


def _parse_int(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


def node_selector_requirement_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One ``NodeSelectorRequirement`` against node labels (operators In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    key = expr.get("key", "")
    op = expr.get("operator")
    values = list(expr.get("values") or [])
    if op in ("Gt", "Lt"):
        if key not in labels or len(values) != 1:
            return False
        have = _parse_int(labels[key])
        want = _parse_int(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
        return False
    return _requirement_matches(labels, key, op, values)


def node_selector_term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A ``NodeSelectorTerm``: all of its expressions and fields must hold; an empty term matches nothing."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    for expr in exprs:
        if not node_selector_requirement_matches(expr, labels):
            return False
    for field in fields:
        value = _node_field(node, field.get("key", ""))
        op = field.get("operator")
        values = list(field.get("values") or [])
        if op not in ("In", "NotIn") or len(values) != 1:
            return False
        if op == "In" and value not in values:
            return False
        if op == "NotIn" and value in values:
            return False
    return True


def node_selector_matches(selector: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """A ``NodeSelector``: the terms are ORed."""
    if selector is None:
        return True
    return any(node_selector_term_matches(t, node) for t in selector.get("nodeSelectorTerms") or [])
