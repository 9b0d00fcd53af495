"""Stored Nodes whose fields have the wrong types, made safe to schedule around (issue #35).

kube-apiserver decodes every Node into Go structs, so kube-scheduler never meets ``status.images: "x"``; kss keeps
JSON, and the engine must survive whatever the store holds. ``checked_node`` looks once, where a node enters the
engine (``NodeInfo``), at every node field the engine reads: a node of the right shape comes back as it is (no
copy); otherwise a copy with each wrongly typed field dropped (read as absent, so nothing that reads it raises) and
a ``NodeDefect`` saying what was wrong. Filter fails such a node for the plugin that reads the field
(``Framework.run_filter_plugins``), so the other nodes and pods schedule on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kss_sim.kube.quantity import is_valid_quantity

# The plugin that reads each field: a node with that field malformed fails Filter in that plugin's name.
_READERS = {
    "metadata": "NodeAffinity",
    "metadata.labels": "NodeAffinity",
    "spec": "NodeUnschedulable",
    "spec.unschedulable": "NodeUnschedulable",
    "spec.taints": "TaintToleration",
    "status": "NodeResourcesFit",
    "status.allocatable": "NodeResourcesFit",
    "status.capacity": "NodeResourcesFit",
    "status.images": "ImageLocality",
}


@dataclass(slots=True)
class NodeDefect:
    """What is wrong with a stored node: the plugin that reads the first wrong field, every problem found, and
    whether an attempt reported it already (``Attempt.malformed_objects``)."""

    plugin: str
    problems: tuple[str, ...]
    reported: bool = False

    def message(self) -> str:
        """The Filter status message (one reason, so nodes with the same problem are counted together)."""
        return f"node(s) had a malformed object: {'; '.join(self.problems)}"


def kind_of(value: Any) -> str:
    """A JSON value's type as a message names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _string_map_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"must be an object, not {kind_of(value)}"
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            return f"{k!s}: must be a string, not {kind_of(v)}"
    return None


def _taints_problem(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"must be an array, not {kind_of(value)}"
    for i, taint in enumerate(value):
        if not isinstance(taint, dict):
            return f"[{i}]: must be an object, not {kind_of(taint)}"
        for field in ("key", "value", "effect"):
            v = taint.get(field)
            if v is not None and not isinstance(v, str):
                return f"[{i}].{field}: must be a string, not {kind_of(v)}"
    return None


def _resources_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"must be an object, not {kind_of(value)}"
    for name, quantity in value.items():
        if not isinstance(name, str) or not is_valid_quantity(quantity):
            return f"{name!s}: not a quantity: {quantity!r}"
    return None


def _images_problem(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"must be an array, not {kind_of(value)}"
    for i, image in enumerate(value):
        if not isinstance(image, dict):
            return f"[{i}]: must be an object, not {kind_of(image)}"
        names = image.get("names")
        if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
            return f"[{i}].names: must be an array of strings"
        size = image.get("sizeBytes")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool)):
            return f"[{i}].sizeBytes: must be an integer, not {kind_of(size)}"
    return None


def _bool_problem(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be a boolean, not {kind_of(value)}"


_CHECKS = {
    "metadata": (("labels", _string_map_problem),),
    "spec": (("unschedulable", _bool_problem), ("taints", _taints_problem)),
    "status": (
        ("allocatable", _resources_problem),
        ("capacity", _resources_problem),
        ("images", _images_problem),
    ),
}


def checked_node(node: dict[str, Any]) -> tuple[dict[str, Any], NodeDefect | None]:
    """``node`` and None when every field the engine reads has its type; else a copy without the wrong fields and
    what was wrong with them."""
    problems: list[tuple[str, str]] = []
    fixed: dict[str, Any] | None = None
    for section, fields in _CHECKS.items():
        part = node.get(section)
        if part is None:
            continue
        if not isinstance(part, dict):
            problems.append((section, f"must be an object, not {kind_of(part)}"))
            fixed = fixed if fixed is not None else dict(node)
            del fixed[section]
            continue
        fixed_part: dict[str, Any] | None = None
        for field, check in fields:
            value = part.get(field)
            if value is None:
                continue
            problem = check(value)
            if problem is not None:
                problems.append((f"{section}.{field}", problem))
                fixed_part = fixed_part if fixed_part is not None else dict(part)
                del fixed_part[field]
        if fixed_part is not None:
            fixed = fixed if fixed is not None else dict(node)
            fixed[section] = fixed_part
    if fixed is None:
        return node, None
    return fixed, NodeDefect(_READERS[problems[0][0]], tuple(f"{path}: {problem}" for path, problem in problems))
