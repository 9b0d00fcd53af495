"""``metadata.managedFields`` kept as kube-apiserver keeps them (k8s.io/apiserver's fieldmanager).

Every write records who set which fields: one entry per (manager, operation, apiVersion, subresource), with the set of
fields it owns (``field_sets``) and the time it last changed something. A create, update or non-apply patch is an
``Update``: its manager takes the fields it added or changed (from every other manager) and the fields it removed leave
every set. A server-side apply is an ``Apply`` (``kss_sim.cluster.admission.apply``). The fields the server owns
(``apiVersion``, ``kind``, ``metadata.name``, ``uid``, ``resourceVersion``, ...) are never tracked, nor the status
through the main resource, nor the rest through ``/status``.

The manager of a non-apply write is the request's ``fieldManager`` or, without one, the User-Agent up to its
first ``/`` (``kubectl/v1.35.0 (linux/amd64) ...`` is ``kubectl``): ``manager_name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kss_sim.cluster.admission import field_sets
from kss_sim.cluster.admission.field_sets import Node
from kss_sim.cluster.errors import Invalid, invalid
from kss_sim.cluster.kinds.registry import KindInfo

APPLY, UPDATE = "Apply", "Update"
FIELD_MANAGER_MAX_LENGTH = 128
MAX_UPDATE_MANAGERS = 10  # older Update entries are folded into one "ancient-changes" entry
ANCIENT_CHANGES = "ancient-changes"

Entry = dict[str, Any]
Entries = list[Entry]
Identity = tuple[str, str, str, str]  # manager, operation, apiVersion, subresource

# Fields the server sets, which no manager owns.
_SERVER_FIELDS: Node = {
    "f:apiVersion": {},
    "f:kind": {},
    "f:metadata": {
        ".": {},
        "f:name": {},
        "f:namespace": {},
        "f:creationTimestamp": {},
        "f:selfLink": {},
        "f:uid": {},
        "f:generation": {},
        "f:managedFields": {},
        "f:resourceVersion": {},
        "f:deletionTimestamp": {},
        "f:deletionGracePeriodSeconds": {},
    },
}
_STATUS: Node = {"f:status": {}}
_SPEC: Node = {"f:spec": {}}


def manager_name(field_manager: str | None, user_agent: str) -> str:
    """The manager of a write: ``fieldManager``, else the User-Agent before its first ``/``, printable characters
    only, at most 128 bytes (as kube-apiserver's ``prefixFromUserAgent``)."""
    if field_manager:
        return field_manager
    out = ""
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable():
            continue
        if len((out + char).encode()) > FIELD_MANAGER_MAX_LENGTH:
            break
        out += char
    return out


def validate_field_manager(field_manager: str) -> None:
    """``PatchOptions``' check of a given ``fieldManager`` (422)."""
    if len(field_manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        raise Invalid(
            "PatchOptions",
            "",
            [invalid("fieldManager", field_manager, f"may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes")],
            group="meta.k8s.io",
        )
    if not field_manager.isprintable():
        raise Invalid(
            "PatchOptions",
            "",
            [invalid("fieldManager", field_manager, "must only contain printable characters")],
            group="meta.k8s.io",
        )


def identity(entry: Mapping[str, Any]) -> Identity:
    """What tells entries apart: manager, operation, apiVersion and subresource (not the time)."""
    return (
        str(entry.get("manager") or ""),
        str(entry.get("operation") or ""),
        str(entry.get("apiVersion") or ""),
        str(entry.get("subresource") or ""),
    )


def entry_set(entry: Mapping[str, Any]) -> Node | None:
    """An entry's set of fields."""
    fields = entry.get("fieldsV1")
    return fields if isinstance(fields, dict) else None


def make_entry(who: Identity, fields: Node, time: str) -> Entry:
    """A managedFields entry, keys in the order kube-apiserver writes them."""
    manager, operation, api_version, subresource = who
    entry: Entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def decoded(value: Any) -> list[Entry] | None:
    """``metadata.managedFields`` as sent, if it is a list of entries with FieldsV1 sets; None otherwise."""
    if not isinstance(value, list) or not value:
        return None
    for entry in value:
        if not isinstance(entry, dict):
            return None
        if entry and (entry.get("fieldsType", "FieldsV1") != "FieldsV1" or not isinstance(entry_set(entry), dict)):
            return None
    return [e for e in value if e]  # ``[{}]`` resets: every entry empty


def untracked(info: KindInfo, subresource: str | None) -> Node:
    """The fields that a write through ``subresource`` never owns (kube-apiserver's stripped and reset fields)."""
    if subresource == "status":
        return {**_SERVER_FIELDS, **_SPEC}
    if info.has_status:
        return {**_SERVER_FIELDS, **_STATUS}
    return _SERVER_FIELDS


def sorted_entries(entries: list[Entry]) -> list[Entry]:
    """Apply entries first, then by time, manager, apiVersion, subresource (kube-apiserver's order)."""
    return sorted(
        entries,
        key=lambda e: (
            str(e.get("operation") or ""),
            str(e.get("time") or ""),
            str(e.get("manager") or ""),
            str(e.get("apiVersion") or ""),
            str(e.get("subresource") or ""),
        ),
    )


def cap_update_managers(entries: list[Entry], time: str) -> list[Entry]:
    """At most ``MAX_UPDATE_MANAGERS`` Update entries: the oldest are merged into ``ancient-changes``."""
    updates = [e for e in entries if e.get("operation") == UPDATE]
    if len(updates) <= MAX_UPDATE_MANAGERS:
        return entries
    updates.sort(key=lambda e: str(e.get("time") or ""))
    fold = updates[: len(updates) - MAX_UPDATE_MANAGERS + 1]
    folded_ids = {id(e) for e in fold}
    merged: Node | None = None
    for entry in fold:
        merged = field_sets.union(merged, entry_set(entry))
    ancient = make_entry((ANCIENT_CHANGES, UPDATE, str(fold[-1].get("apiVersion") or ""), ""), merged or {}, time)
    return [e for e in entries if id(e) not in folded_ids] + [ancient]


def track_update(
    info: KindInfo,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    entries: list[Entry],
    manager: str,
    subresource: str | None,
    time: str,
) -> list[Entry]:
    """The managedFields after ``manager`` wrote ``new`` over ``old`` (None: a create) with an Update: it owns
    what it added or changed (taken from the others), what it removed leaves every set. ``entries`` is unchanged
    (returned as is) when nothing tracked changed."""
    shape = field_sets.root_shape(info)
    skip = untracked(info, subresource)
    changed, removed = field_sets.object_changes(_tracked_view(old, skip), _tracked_view(new, skip), shape)
    changed = field_sets.without_subtrees(changed, skip)
    removed = field_sets.without_subtrees(removed, skip)
    if changed is None and removed is None:
        return entries
    me: Identity = (manager, UPDATE, info.api_version, subresource or "")
    taken = field_sets.union(changed, removed)
    out: list[Entry] = []
    mine: Node | None = None
    for entry in entries:
        if identity(entry) == me:
            mine = field_sets.difference(entry_set(entry), removed)
            continue
        rest = field_sets.difference(entry_set(entry), taken)
        if rest is None:
            continue
        out.append(entry if rest is entry_set(entry) else {**entry, "fieldsV1": rest})
    mine = field_sets.union(mine, changed)
    if mine is not None:
        out.append(make_entry(me, mine, time))
    return sorted_entries(cap_update_managers(out, time))


def _tracked_view(obj: Mapping[str, Any] | None, skip: Node) -> dict[str, Any] | None:
    """``obj`` without the top-level fields ``skip`` drops whole and without managedFields (shallow copies): what
    an update is compared on, so a status write never walks the spec, nor the main resource the status."""
    if obj is None:
        return None
    view = {k: v for k, v in obj.items() if skip.get("f:" + k) != {}}
    meta = view.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        view["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return view


def same_ignoring_times(a: Any, b: Any) -> bool:
    """Whether two managedFields lists differ at most in their entries' times (a write that changes nothing else
    keeps the old times, as kube-apiserver's IgnoreManagedFieldsTimestampsTransformer does)."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return bool(a == b)
    for x, y in zip(a, b, strict=True):
        if not isinstance(x, dict) or not isinstance(y, dict):
            return False
        if {k: v for k, v in x.items() if k != "time"} != {k: v for k, v in y.items() if k != "time"}:
            return False
    return True
