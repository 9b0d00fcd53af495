"""Label selectors and node selector terms, evaluated as the Kubernetes apimachinery does."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
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


# --- Label key / value syntax (k8s.io/apimachinery/pkg/api/validate/content) --------------------------

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_NAME_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_INT64_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def label_key_errors(key: str) -> list[str]:
    """``content.IsLabelKey``: why ``key`` is not a valid label key (empty when it is)."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                errs.append(
                    "prefix part " + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com")
                )
    else:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _LABEL_NAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """``content.IsLabelValue``: why ``value`` is not a valid label value (empty when it is)."""
    errs: list[str] = []
    if len(value.encode()) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign and ASCII digits only, within int64; else None."""
    if not _INT64_RE.fullmatch(text):
        return None
    value = int(text, 10)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


# --- Field errors, rendered as k8s.io/apimachinery/pkg/util/validation/field does -------------------

FieldError = tuple[str, str]
"""(field path, message body): ``field.Error`` split at its first ``": "``."""


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _go_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _invalid(path: str, value: Any, detail: str) -> FieldError:
    return (path, f"Invalid value: {_go_json(value)}: {detail}")


def _not_supported(path: str, value: Any, supported: Sequence[str]) -> FieldError:
    quoted = ", ".join(_go_json(v) for v in supported)
    return (path, f"Unsupported value: {_go_json(value)}: supported values: {quoted}")


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """``errors.NewAggregate(errs).Error()``: one error as is, several deduplicated inside ``[...]``."""
    msgs = list(dict.fromkeys(f"{path}: {body}" for path, body in errors))
    if len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"


# --- Node selectors (k8s.io/component-helpers/scheduling/corev1/nodeaffinity) ----------------------

_NODE_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_SELECTOR_OPS = ("In", "NotIn")


class LabelRequirement:
    """A valid ``labels.Requirement`` built from a ``NodeSelectorRequirement``."""

    __slots__ = ("bound", "key", "operator", "values")

    def __init__(self, key: str, operator: str, values: Sequence[str]) -> None:
        self.key = key
        self.operator = operator
        self.values = frozenset(values)
        # Gt/Lt hold exactly one integer value (checked at parse time).
        self.bound = parse_int64(values[0]) if operator in ("Gt", "Lt") and len(values) == 1 else None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches``; NotIn and DoesNotExist hold when the key is absent."""
        op = self.operator
        if op == "In":
            val = labels.get(self.key)
            return val is not None and val in self.values
        if op == "NotIn":
            val = labels.get(self.key)
            return val is None or val not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        val = labels.get(self.key)
        if val is None or self.bound is None:
            return False
        have = parse_int64(val)
        if have is None:
            return False
        return have > self.bound if op == "Gt" else have < self.bound


def _parse_label_requirement(expr: Mapping[str, Any], path: str) -> tuple[LabelRequirement | None, list[FieldError]]:
    """``labels.NewRequirement`` for one node selector expression: the requirement or why it is invalid."""
    key = str(expr.get("key") or "")
    op = expr.get("operator")
    raw_values = expr.get("values")
    values = [str(v) for v in raw_values or []]
    if op not in _NODE_SELECTOR_OPS:
        return None, [_not_supported(_child(path, "operator"), op, _NODE_SELECTOR_OPS)]
    errs: list[FieldError] = []
    key_errs = label_key_errors(key)
    if key_errs:
        errs.append(_invalid(_child(path, "key"), key, "; ".join(key_errs)))
    values_path = _child(path, "values")
    if op in ("In", "NotIn"):
        if not values:
            errs.append(_invalid(values_path, raw_values, "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(_invalid(values_path, raw_values, "values set must be empty for exists and does not exist"))
    else:
        if len(values) != 1:
            errs.append(_invalid(values_path, raw_values, "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(values):
            if parse_int64(v) is None:
                errs.append(
                    _invalid(f"{values_path}[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
                )
    for i, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            errs.append(_invalid(f"{values_path}[{i}][{key}]", v, "; ".join(value_errs)))
    if errs:
        return None, errs
    return LabelRequirement(key, op, values), []


class NodeSelectorTerm:
    """A parsed ``NodeSelectorTerm``: label requirements and field requirements, ANDed.

    A term with parse errors matches nothing (``errors`` says why).
    """

    __slots__ = ("errors", "fields", "labels")

    def __init__(self, term: Mapping[str, Any], path: str = "") -> None:
        self.errors: list[FieldError] = []
        self.labels: list[LabelRequirement] | None = None
        # (field key, must equal?, value): fields.OneTermEqualSelector / OneTermNotEqualSelector.
        self.fields: list[tuple[str, bool, str]] | None = None
        exprs = term.get("matchExpressions") or []
        if exprs:
            base = _child(path, "matchExpressions")
            reqs: list[LabelRequirement] = []
            for i, expr in enumerate(exprs):
                req, errs = _parse_label_requirement(expr, f"{base}[{i}]")
                if req is not None:
                    reqs.append(req)
                self.errors.extend(errs)
            self.labels = reqs
        field_exprs = term.get("matchFields") or []
        if field_exprs:
            base = _child(path, "matchFields")
            fields: list[tuple[str, bool, str]] = []
            for i, expr in enumerate(field_exprs):
                p = f"{base}[{i}]"
                op = expr.get("operator")
                raw_values = expr.get("values")
                values = list(raw_values or [])
                if op not in _FIELD_SELECTOR_OPS:
                    self.errors.append(_not_supported(_child(p, "operator"), op, _FIELD_SELECTOR_OPS))
                elif len(values) != 1:
                    self.errors.append(_invalid(_child(p, "values"), raw_values, "must have one element"))
                else:
                    fields.append((str(expr.get("key") or ""), op == "In", str(values[0])))
            self.fields = fields

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        """Labels and fields (only ``metadata.name`` is known) both hold; never for an erroneous term."""
        if self.errors:
            return False
        if self.labels is not None and not all(r.matches(labels) for r in self.labels):
            return False
        if self.fields is not None and name:
            for key, equal, value in self.fields:
                have = name if key == "metadata.name" else ""
                if (have == value) != equal:
                    return False
        return True


def _is_empty_term(term: Mapping[str, Any]) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


class NodeSelector:
    """``nodeaffinity.LazyErrorNodeSelector``: terms ORed; empty terms dropped; erroneous terms never match."""

    __slots__ = ("terms",)

    def __init__(self, selector: Mapping[str, Any], path: str = "") -> None:
        base = _child(path, "nodeSelectorTerms")
        self.terms = [
            NodeSelectorTerm(t, f"{base}[{i}]")
            for i, t in enumerate(selector.get("nodeSelectorTerms") or [])
            if not _is_empty_term(t)
        ]

    @property
    def errors(self) -> list[FieldError]:
        """Every term's parse errors (``NewNodeSelector`` refuses a selector that has any)."""
        return [e for t in self.terms for e in t.errors]

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        return any(t.matches(labels, name) for t in self.terms)

    def matches_node(self, node: Mapping[str, Any]) -> bool:
        return self.matches(*_labels_and_name(node))


class PreferredSchedulingTerms:
    """``nodeaffinity.PreferredSchedulingTerms``: (weight, term) pairs; zero-weight and empty terms dropped."""

    __slots__ = ("terms",)

    def __init__(self, terms: list[tuple[int, NodeSelectorTerm]]) -> None:
        self.terms = terms

    def score(self, labels: Mapping[str, str], name: str) -> int:
        """Sum of the weights of the terms that match."""
        return sum(w for w, t in self.terms if t.matches(labels, name))


def parse_preferred_terms(
    terms: Sequence[Mapping[str, Any]], path: str = ""
) -> tuple[PreferredSchedulingTerms | None, list[FieldError]]:
    """``NewPreferredSchedulingTerms``: the parsed terms, or None and every parse error."""
    parsed: list[tuple[int, NodeSelectorTerm]] = []
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        weight = int(term.get("weight") or 0)
        preference = term.get("preference") or {}
        if weight == 0 or _is_empty_term(preference):
            continue
        t = NodeSelectorTerm(preference, f"{path}[{i}]")
        if t.errors:
            errs.extend(t.errors)
        else:
            parsed.append((weight, t))
    if errs:
        return None, errs
    return PreferredSchedulingTerms(parsed), []


class RequiredNodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: a pod's ``nodeSelector`` and required node affinity."""

    __slots__ = ("node_selector", "selector")

    def __init__(self, pod_spec: Mapping[str, Any]) -> None:
        # labels.SelectorFromValidatedSet: plain equality, no syntax check.
        self.selector: dict[str, str] = dict(pod_spec.get("nodeSelector") or {})
        required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        self.node_selector = NodeSelector(required) if required is not None else None

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        for key, value in self.selector.items():
            if labels.get(key) != value:
                return False
        if self.node_selector is not None:
            return self.node_selector.matches(labels, name)
        return True

    def matches_node(self, node: Mapping[str, Any]) -> bool:
        return self.matches(*_labels_and_name(node))


def _labels_and_name(node: Mapping[str, Any]) -> tuple[Mapping[str, str], str]:
    meta = node.get("metadata") or {}
    return meta.get("labels") or {}, str(meta.get("name") or "")


def node_selector_requirement_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One ``NodeSelectorRequirement`` against node labels; an invalid requirement matches nothing."""
    req, _ = _parse_label_requirement(expr, "")
    return req is not None and req.matches(labels)


def node_selector_term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A ``NodeSelectorTerm``: all of its expressions and fields must hold; an empty or invalid term matches nothing."""
    if _is_empty_term(term):
        return False
    return NodeSelectorTerm(term).matches(*_labels_and_name(node))


def node_selector_matches(selector: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """``MatchNodeSelectorTerms``: the terms are ORed (erroneous ones skipped); ``None`` matches every node."""
    if selector is None:
        return True
    return NodeSelector(selector).matches_node(node)
