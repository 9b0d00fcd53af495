"""The shared field rules (422 Invalid) every kind's validation builds on: DNS-1123 names, qualified names, label
values and selectors, and ObjectMeta (name, namespace, labels, annotations)."""

from __future__ import annotations

import functools
import re
from typing import Any

from kss_sim.cluster.errors import Cause, invalid, required
from kss_sim.kube.labels import SelectorError, label_key_errors, validate_label_selector

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
TOTAL_ANNOTATION_BYTES = 256 * 1024


def name_errors(path: str, name: str, *, label: bool = False) -> list[Cause]:
    if label:
        if len(name) > 63:
            return [invalid(path, name, "must be no more than 63 characters")]
        if not DNS1123_LABEL.match(name):
            return [invalid(path, name, LABEL_MSG)]
        return []
    if len(name) > 253:
        return [invalid(path, name, "must be no more than 253 characters")]
    if not DNS1123_SUBDOMAIN.match(name):
        return [invalid(path, name, SUBDOMAIN_MSG)]
    return []


# Every object of a kind brings the same few label and annotation keys and many of the same values: their
# verdicts are kept (bounded), the causes built only for a bad one.
@functools.lru_cache(maxsize=8192)
def _key_problems(key: str) -> tuple[str, ...]:
    return tuple(label_key_errors(key))


@functools.lru_cache(maxsize=8192)
def _label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not LABEL_VALUE.match(value):
        return LABEL_VALUE_MSG
    return None


def qualified_name_errors(path: str, key: str) -> list[Cause]:
    """``validation.IsQualifiedName`` for label keys, annotation keys and taint keys."""
    problems = _key_problems(key)
    return [invalid(path, key, msg) for msg in problems] if problems else []


def label_value_errors(path: str, value: str) -> list[Cause]:
    """``validation.IsValidLabelValue``."""
    problem = _label_value_problem(value)
    return [invalid(path, value, problem)] if problem is not None else []


def validate_labels(path: str, labels: dict[str, str] | None) -> list[Cause]:
    """Keys are qualified names, values valid label values; both at ``path`` itself, as apimachinery's
    ``ValidateLabels`` reports them (``metadata.labels: Invalid value: "not valid!"``, the key not in the path)."""
    causes: list[Cause] = []
    for key, value in (labels or {}).items():
        causes += qualified_name_errors(path, key)
        causes += label_value_errors(path, value)
    return causes


def validate_metadata(obj: dict[str, Any], *, namespaced: bool, label_name: bool = False) -> list[Cause]:
    """ObjectMeta: name (DNS-1123), namespace presence, labels and annotations."""
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name") or ""
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    else:
        causes += name_errors("metadata.name", name, label=label_name)
    if namespaced:
        ns = meta.get("namespace") or ""
        if not ns:
            causes.append(required("metadata.namespace"))
        else:
            causes += name_errors("metadata.namespace", ns, label=True)
    causes += validate_labels("metadata.labels", meta.get("labels"))
    annotations = meta.get("annotations") or {}
    for key in annotations:
        causes += qualified_name_errors("metadata.annotations", key.lower())
    if sum(len(k) + len(v) for k, v in annotations.items()) > TOTAL_ANNOTATION_BYTES:
        causes.append(Cause("metadata.annotations", "FieldValueTooLong", "Too long: must have at most 262144 bytes"))
    return causes


def selector_errors(path: str, selector: Any) -> list[Cause]:
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [invalid(path, str(selector), "must be a label selector")]
    causes = validate_labels(f"{path}.matchLabels", selector.get("matchLabels"))
    try:
        validate_label_selector(selector)
    except SelectorError as exc:
        causes.append(Cause(f"{path}.matchExpressions", "FieldValueInvalid", str(exc)))
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        causes += qualified_name_errors(f"{path}.matchExpressions[{i}].key", str((expr or {}).get("key", "")))
    return causes


def dns_label_messages(value: str) -> list[str]:
    out = ["must be no more than 63 characters"] if len(value) > 63 else []
    return out + ([] if DNS1123_LABEL.match(value) else [LABEL_MSG])


def subdomain_messages(value: str) -> list[str]:
    out = ["must be no more than 253 characters"] if len(value) > 253 else []
    return out + ([] if DNS1123_SUBDOMAIN.match(value) else [SUBDOMAIN_MSG])
