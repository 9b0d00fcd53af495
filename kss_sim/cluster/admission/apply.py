"""Server-side apply (``PATCH`` with ``application/apply-patch+yaml``), as kube-apiserver does it with
structured-merge-diff.

The applied configuration is merged into the live object field by field (keyed lists item by item, sets as sets,
atomic values whole, see ``field_sets``); the fields it sets become the applier's ``Apply`` entry in managedFields.
A field the configuration would change that another manager owns is a conflict (409, ``Apply failed with N
conflict(s)``) unless ``force`` takes it over. A field the applier set last time and leaves out now is removed,
unless another applier owns it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from kss_sim.cluster.admission import field_sets
from kss_sim.cluster.admission.decode_types import check_types
from kss_sim.cluster.admission.field_sets import LIST_MAP, MAP, SET, STRUCT, Node, Shape
from kss_sim.cluster.admission.go_values import json_copy
from kss_sim.cluster.admission.managed_fields import (
    APPLY,
    Entry,
    Identity,
    cap_update_managers,
    entry_set,
    identity,
    make_entry,
    sorted_entries,
    untracked,
)
from kss_sim.cluster.errors import ApiError, BadRequest
from kss_sim.cluster.kinds.registry import KindInfo

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_LAST_APPLIED_MAX_BYTES = 256 * 1024


class ApplyConflict(ApiError):
    """409: the configuration would change fields other managers own."""

    code = 409
    reason = "Conflict"

    def __init__(self, conflicts: list[tuple[Entry, tuple[str, ...]]]) -> None:
        causes = [
            {"reason": "FieldManagerConflict", "message": f"conflict with {_manager_text(e)}", "field": _path(p)}
            for e, p in conflicts
        ]
        super().__init__(_conflict_message(conflicts), details={"causes": causes})


class TypedPatchError(ApiError):
    """500, as kube-apiserver answers a configuration it cannot type (an unkeyable list item)."""

    code = 500
    reason = ""

    def to_status(self) -> dict[str, Any]:
        """The Status, without a reason (kube-apiserver leaves it empty for such errors)."""
        status = super().to_status()
        status.pop("reason", None)
        return status


def _path(path: tuple[str, ...]) -> str:
    return field_sets.path_text(path)


def _manager_text(entry: Entry) -> str:
    """How kube-apiserver names a manager in a conflict: ``"kubectl-edit" using apps/v1`` for an Update."""
    text = orjson.dumps(str(entry.get("manager") or "")).decode()
    if entry.get("subresource"):
        text += f" with subresource {orjson.dumps(entry['subresource']).decode()}"
    if entry.get("operation") == "Update":
        text += f" using {entry.get('apiVersion')}"
    return text


def _conflict_message(conflicts: list[tuple[Entry, tuple[str, ...]]]) -> str:
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        return f"Apply failed with 1 conflict: conflict with {_manager_text(entry)}: {_path(path)}"
    by_manager: dict[str, list[str]] = {}
    for entry, path in conflicts:
        by_manager.setdefault(_manager_text(entry), []).append(_path(path))
    lines: list[str] = []
    for manager in sorted(by_manager):
        lines.append(f"conflicts with {manager}:")
        lines.extend(f"- {p}" for p in by_manager[manager])
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Applied:
    """The object an apply produces (managedFields included) and whether the apply created it."""

    obj: dict[str, Any]
    created: bool


def check_configuration(
    info: KindInfo, config: Any, namespace: str | None, name: str, *, kube_version: str | None = None
) -> dict[str, Any]:
    """The applied configuration, checked as kube-apiserver checks it before merging (400 otherwise): a field of
    the wrong type is refused here, before any conflict with another manager's fields could be reported (409).
    ``kube_version``: the release whose types decode it (None: the default)."""
    if not isinstance(config, dict):
        raise BadRequest("error decoding YAML: the applied configuration must be an object")
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if not api_version or not kind:
        raise BadRequest("Object 'Kind' is missing in applied configuration" if not kind else "apiVersion not set")
    if api_version != info.api_version:
        raise BadRequest(
            f"Incorrect version specified in apply patch. Specified patch version: {api_version}, "
            f"expected: {info.api_version}"
        )
    if kind != info.api_kind:
        raise BadRequest(f"invalid object type: {info.api_version}, Kind={kind}")
    meta = config.get("metadata")
    if meta is None:
        meta = config["metadata"] = {}
    if not isinstance(meta, dict):
        raise BadRequest("error decoding YAML: metadata must be an object")
    if meta.get("managedFields") is not None:
        raise BadRequest("metadata.managedFields must be nil")
    if meta.get("name") and meta["name"] != name:
        raise BadRequest(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    meta["name"] = name
    if info.namespaced:
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = namespace
    if not info.custom:  # a custom resource's schema judges it after the merge (422)
        # On a copy: the configuration's nulls mean "remove the field", not the zero values decoding makes of them.
        check_types(info.kind, json_copy(config), version=info.version, kube_version=kube_version,
                    api_kind=info.api_kind)  # fmt: skip
    return config


def apply(
    info: KindInfo,
    live: dict[str, Any] | None,
    config: dict[str, Any],
    *,
    manager: str,
    force: bool,
    subresource: str | None,
    time: str,
) -> dict[str, Any]:
    """``config`` applied by ``manager`` to ``live`` (a copy the caller owns; None: the object does not exist);
    the result carries its new managedFields. ``ApplyConflict`` when other managers own fields it would change and
    ``force`` is off; ``TypedPatchError`` for a configuration whose list items cannot be keyed."""
    shape = field_sets.root_shape(info)
    me: Identity = (manager, APPLY, info.api_version, subresource or "")
    try:
        applied_set = field_sets.without_subtrees(field_sets.field_set(config, shape), untracked(info, subresource))
    except field_sets.KeyError_ as exc:
        meta = config.get("metadata") or {}
        raise TypedPatchError(
            f"failed to create typed patch object ({meta.get('namespace') or ''}/{meta.get('name')}; "
            f"{_gvk(info)}): {exc}"
        ) from None
    last_applied = orjson.dumps(config) if live is not None and _has_last_applied(live) else None
    entries: list[Entry] = []
    base: dict[str, Any] = {}
    if live is not None:
        base = live
        entries = [e for e in (base["metadata"].pop("managedFields", None) or []) if isinstance(e, dict)]
    merged = merge(base, config, shape)
    previous = next((e for e in entries if identity(e) == me), None)
    if previous is not None:
        others_applied: Node | None = None
        for entry in entries:
            if entry.get("operation") == APPLY and identity(entry) != me:
                others_applied = field_sets.union(others_applied, entry_set(entry))
        dropped = field_sets.difference(field_sets.difference(entry_set(previous), applied_set), others_applied)
        if dropped is not None:
            _remove(merged, dropped, shape)
    changed, removed = field_sets.object_changes(base, merged, shape)
    skip = untracked(info, subresource)
    changed = field_sets.without_subtrees(changed, skip)
    removed = field_sets.without_subtrees(removed, skip)
    conflicts: list[tuple[Entry, tuple[str, ...]]] = []
    out: list[Entry] = []
    for entry in entries:
        if identity(entry) == me:
            continue
        owned = entry_set(entry)
        clash = field_sets.intersection(owned, changed)
        if clash is not None:
            conflicts.extend((entry, p) for p in field_sets.members(clash))
        rest = field_sets.difference(field_sets.difference(owned, clash), removed)
        if rest is not None:
            out.append(entry if rest is owned else {**entry, "fieldsV1": rest})
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    out.append(make_entry(me, applied_set or {}, time))
    # kubectl's client-side record follows a server-side apply when the object has one (LastAppliedUpdater).
    if last_applied is not None and len(last_applied) <= _LAST_APPLIED_MAX_BYTES:
        merged["metadata"].setdefault("annotations", {})[LAST_APPLIED] = last_applied.decode()
    merged["metadata"]["managedFields"] = sorted_entries(cap_update_managers(out, time))
    result: dict[str, Any] = merged
    return result


def _gvk(info: KindInfo) -> str:
    return f"{info.group}/{info.version}, Kind={info.api_kind}"


def _has_last_applied(obj: dict[str, Any]) -> bool:
    return LAST_APPLIED in ((obj.get("metadata") or {}).get("annotations") or {})


# ---------------------------------------------------------------------------------------------- merging


def merge(live: Any, config: Any, shape: Shape) -> Any:
    """``config`` merged into ``live`` (structured-merge-diff's Merge): structs and granular maps field by field,
    keyed lists item by item and sets value by value (the configuration's order, live-only items kept after the
    item they followed), everything else replaced. A null in the configuration removes the field."""
    form = shape.form
    if form in (STRUCT, MAP) and isinstance(live, dict) and isinstance(config, dict):
        result = dict(live)
        for name, value in config.items():
            if value is None:
                result.pop(name, None)
                continue
            current = live.get(name)
            child = field_sets.child_shape(shape, name, field_sets.category(value))
            result[name] = value if current is None else merge(current, value, child)
        return result
    if form in (LIST_MAP, SET) and isinstance(live, list) and isinstance(config, list):
        item_shape = shape.item if form == LIST_MAP and shape.item is not None else None
        live_items = [(field_sets.item_element(shape, i) or f"i:{n}", i) for n, i in enumerate(live)]
        config_items = [(field_sets.item_element(shape, i) or f"i:{n}", i) for n, i in enumerate(config)]
        live_index = dict(live_items)
        config_keys = {e for e, _ in config_items}
        # Live-only items ride behind the shared item they followed in the live list (or lead, before any).
        riders: dict[str | None, list[Any]] = {}
        anchor: str | None = None
        for element, item in live_items:
            if element in config_keys:
                anchor = element
            else:
                riders.setdefault(anchor, []).append(item)
        result_list: list[Any] = list(riders.get(None, []))
        for element, item in config_items:
            current = live_index.get(element)
            if current is not None and item_shape is not None:
                result_list.append(merge(current, item, item_shape))
            else:
                result_list.append(item)
            result_list.extend(riders.get(element, []))
        return result_list
    return config


def _remove(obj: Any, dropped: Node, shape: Shape) -> None:
    """Remove from ``obj`` (in place) the members of ``dropped``: fields, map keys, list items."""
    form = shape.form
    if form in (STRUCT, MAP) and isinstance(obj, dict):
        for element, node in dropped.items():
            name = element[2:]
            if not element.startswith("f:") or name not in obj:
                continue
            if field_sets.is_member(node):
                del obj[name]
            else:
                child = obj[name]
                child_shape = field_sets.child_shape(shape, name, field_sets.category(child))
                _remove(child, node, child_shape)
                if child == {} and child_shape.form == MAP:  # a map emptied by pruning goes, as Go omits it
                    del obj[name]
    elif form in (LIST_MAP, SET) and isinstance(obj, list):
        keep: list[Any] = []
        for index, item in enumerate(obj):
            element = field_sets.item_element(shape, item) or f"i:{index}"
            node = dropped.get(element)
            if node is not None and field_sets.is_member(node):
                continue
            if node is not None and shape.item is not None:
                _remove(item, node, shape.item)
            keep.append(item)
        obj[:] = keep
