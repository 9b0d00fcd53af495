"""What the store holds and hands out: each object as a read-only dict with its JSON, and a change of one object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredObject:
    """An object as stored: its dict (read-only: never mutate) and its JSON encoding."""

    obj: Obj
    raw: bytes

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` or "" for cluster-scoped objects."""
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return str(self.obj["metadata"]["name"])

    @property
    def resource_version(self) -> int:
        """``metadata.resourceVersion`` as an integer."""
        return int(self.obj["metadata"]["resourceVersion"])

    def copy(self) -> Obj:
        """A deep copy the caller owns."""
        result: Obj = orjson.loads(self.raw)
        return result


@dataclass(slots=True)
class Change:
    """One change of one object: staged by a write, written through by the committer, then published."""

    type: str
    kind: str
    key: tuple[str, str]
    new: StoredObject | None  # None for deletions
    old: StoredObject | None
    event_obj: StoredObject  # what the watch event carries


# Parts of an object whose children repeat across objects (pods of one template, nodes of one type) and that
# writes replace whole: each child is held once per distinct value. Annotations are not shared as a whole (often
# unique: results), nor the rest of metadata (names, uids, times), but each annotation value is held once (the
# scheduler's results per extension point repeat from pod to pod).
_SHARED_PARTS = ("spec", "status")
_SHARED_METADATA = ("labels", "ownerReferences", "finalizers")
# Distinct values remembered; past this the table starts again (values already shared stay shared).
SHARED_VALUES_LIMIT = 100_000


class SharedValues:
    """Holds equal read-only subtrees of stored objects once: a pod's dicts were ~2.5x its JSON, much of it in
    parts every pod of a template repeats (containers, tolerations, managedFields' field sets, conditions).

    ``share(obj)`` replaces, in the new version ``obj`` about to be stored, each such part equal to one already
    held by the one held (it may assign into dicts shared with the stored version it replaces only an equal
    value, which readers cannot tell apart). Values are found by their JSON's hash and compared before sharing.
    Not thread-safe: the store calls it with its lock held.
    """

    __slots__ = ("_held", "_ids", "_limit", "_strings")

    def __init__(self, limit: int = SHARED_VALUES_LIMIT) -> None:
        """An empty table of at most ``limit`` values."""
        self._held: dict[int, Any] = {}
        self._ids: set[int] = set()  # ids of the values held (alive while held): what is already shared
        self._strings: dict[str, str] = {}  # annotation values
        self._limit = limit

    def __len__(self) -> int:
        return len(self._held)

    def value(self, value: Any) -> Any:
        """The held value equal to ``value``, or ``value`` itself (now held) when none is."""
        if id(value) in self._ids:
            return value
        key = hash(orjson.dumps(value))
        held = self._held.get(key)
        if held is not None:
            if held == value:
                return held
            return value  # a hash collision: not shared
        if len(self._held) >= self._limit:
            self._held.clear()
            self._ids.clear()
        self._held[key] = value
        self._ids.add(id(value))
        return value

    def share(self, obj: Obj) -> None:
        """Share the repeated parts of ``obj`` (see the class)."""
        for part in _SHARED_PARTS:
            children = obj.get(part)
            if isinstance(children, dict):
                self._share_children(children, children, items=part == "status")
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return
        self._share_children(meta, _SHARED_METADATA)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            # Most values repeat from pod to pod (the scheduler's results per extension point), a few do not.
            for key, text in annotations.items():
                if isinstance(text, str):
                    held = self._strings.setdefault(text, text)
                    if held is not text:
                        annotations[key] = held
            if len(self._strings) >= self._limit:
                self._strings.clear()
        entries = meta.get("managedFields")
        if isinstance(entries, list):
            # Each entry's field set, then the entry itself: entries written in the same second by the same
            # manager are equal (their time is to the second).
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict) or id(entry) in self._ids:
                    continue
                fields = entry.get("fieldsV1")
                if isinstance(fields, dict):
                    held = self.value(fields)
                    if held is not fields:
                        entry["fieldsV1"] = held
                held = self.value(entry)
                if held is not entry:
                    entries[i] = held

    def _share_children(self, parent: Obj, names: Any, items: bool = False) -> None:
        for name in list(names):
            child = parent.get(name)
            if not isinstance(child, (dict, list)) or id(child) in self._ids:
                continue
            held = self.value(child)
            if held is not child:
                parent[name] = held
            elif items and isinstance(child, list):
                # A list held for the first time: its items may still repeat those of other lists (a condition
                # set in the same second on many pods).
                for i, item in enumerate(child):
                    if isinstance(item, dict):
                        held_item = self.value(item)
                        if held_item is not item:
                            child[i] = held_item
