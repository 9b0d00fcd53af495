"""Equal read-only parts of stored objects held once (issue #20, memory).

A pod's dicts were ~2.5x its JSON, much of it in parts every pod of a template repeats (containers, tolerations,
managedFields' field sets, conditions). The store's dicts are read-only (no writer mutates them), so an equal part
can be one object in every version that has it.

Where a part is new as a whole, its pieces often are not: a kubelet's status and its managedFields entry are unique
to each pod (its IP, its container's id) but, below that, the same as every other pod's started in the same second
(``state``, ``resources``, the conditions' field sets). So a part not found whole is looked into (``_share_pieces``),
and each piece found is shared; a piece is held for later only when everything in it was found already, which keeps
the table from holding what is unique to one version (a string is held from its first sighting, a container from
the sighting where every string in it has been seen before: the second, for a part that repeats).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

from kss_sim.kube.objects import Obj

# Parts of an object whose children repeat across objects (pods of one template, nodes of one type) and that
# writes replace whole: each child is held once per distinct value. Annotations are not shared as a whole (often
# unique: results), nor the rest of metadata (names, uids, times), but each annotation value is held once (the
# scheduler's results per extension point repeat from pod to pod).
_SHARED_PARTS = ("spec", "status")
_SHARED_METADATA = ("labels", "ownerReferences", "finalizers", "namespace")  # the namespace: one string for all
# Values met at least twice are held in generations of this many: when one is full it becomes the older generation
# and the one before is forgotten, less the values met again meanwhile (moved to the newer), so a value still met
# stays and one no new version has (a status piece of a second long past, a deleted pod's) goes within two
# generations. Values already shared stay shared. Under churn (pods created and deleted, statuses of each second)
# a single table of 100,000 that started again when full grew by ~0.8 values per pod created for 120,000 pods.
SHARED_VALUES_LIMIT = 10_000
# Values held but not met a second time yet, the oldest forgotten first: most are unique to one version (a status
# with its pod's IP, a managedFields entry of its second), and a server churning pods would otherwise fill the
# table with them (and keep them alive) up to SHARED_VALUES_LIMIT.
UNMATCHED_VALUES_LIMIT = 10_000
# Distinct annotation values remembered; past this the table starts again.
SHARED_ANNOTATIONS_LIMIT = 100_000
# Distinct strings met inside parts looked into (times of a second, images, reasons); unique ones (a container's id,
# an IP) pass through, so a smaller table that starts again sooner.
SHARED_STRINGS_LIMIT = 20_000
SHARED_STRING_LENGTH = 256  # longer ones are rarely met twice


class SharedValues:
    """Holds equal read-only subtrees of stored objects once (see the module).

    ``share(obj)`` replaces, in the new version ``obj`` about to be stored, each such part equal to one already
    held by the one held (it may assign into dicts shared with the stored version it replaces only an equal
    value, which readers cannot tell apart). Values are found by their JSON's hash and compared before sharing.
    Not thread-safe: the store calls it with its lock held.
    """

    __slots__ = ("_held", "_ids", "_limit", "_older", "_pieces", "_strings", "_unmatched")

    def __init__(self, limit: int | None = None) -> None:
        """An empty table holding at most ``limit`` (``SHARED_VALUES_LIMIT``) values met more than once in each of
        its two generations."""
        self._held: dict[int, Any] = {}  # values met at least twice, this generation
        self._older: dict[int, Any] = {}  # the generation before: forgotten when this one fills, less those met again
        self._unmatched: OrderedDict[int, Any] = OrderedDict()  # values met once so far, oldest first
        self._ids: set[int] = set()  # ids of the values held (alive while held): what is already shared
        self._strings: dict[str, str] = {}  # annotation values
        self._pieces: dict[str, str] = {}  # strings inside parts looked into
        self._limit = SHARED_VALUES_LIMIT if limit is None else limit

    def __len__(self) -> int:
        return len(self._held) + len(self._older) + len(self._unmatched)

    def counts(self) -> dict[str, int]:
        """Each table's size (a memory census's figures, ``ClusterStore.memory_counts``)."""
        return {
            "shared_held": len(self._held),
            "shared_older": len(self._older),
            "shared_unmatched": len(self._unmatched),
            "shared_strings": len(self._strings),
            "shared_pieces": len(self._pieces),
        }

    def value(self, value: Any) -> Any:
        """The held value equal to ``value``, or ``value`` itself (now held) when none is."""
        return self._held_or_new(value, pieces=False)

    def part(self, value: Any) -> Any:
        """``value`` as ``value`` shares it; when it is new, its pieces are shared first (``_share_pieces``)."""
        return self._held_or_new(value, pieces=True)

    def _held_or_new(self, value: Any, *, pieces: bool) -> Any:
        key, held = self._lookup(value)
        if held is not None:
            return held
        if pieces and (type(value) is dict or type(value) is list):
            self._share_pieces(value)  # equal pieces replaced by equal ones: its JSON, so its key, does not change
        self._hold(key, value)
        return value

    def share(self, obj: Obj) -> None:
        """Share the repeated parts of ``obj`` (see the class)."""
        for part in _SHARED_PARTS:
            children = obj.get(part)
            if isinstance(children, dict):
                # Strings too: phase, qosClass, hostIP, policies, times of a second, held once each.
                self._share_children(children, children, strings=True)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return
        self._share_children(meta, _SHARED_METADATA, strings=True)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            # Most values repeat from pod to pod (the scheduler's results per extension point), a few do not.
            for key, text in annotations.items():
                if isinstance(text, str):
                    held = self._strings.setdefault(text, text)
                    if held is not text:
                        annotations[key] = held
            if len(self._strings) >= SHARED_ANNOTATIONS_LIMIT:
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
                    held = self.part(fields)
                    if held is not fields:
                        entry["fieldsV1"] = held
                held = self.value(entry)
                if held is not entry:
                    entries[i] = held

    def _share_children(self, parent: Obj, names: Any, strings: bool = False) -> None:
        """Share each container of ``parent`` named in ``names`` as a part, and (``strings``) each string."""
        ids = self._ids
        for name in list(names):
            child = parent.get(name)
            kind = type(child)
            if kind is dict or kind is list:
                if id(child) not in ids:
                    held = self.part(child)
                    if held is not child:
                        parent[name] = held
            elif strings and isinstance(child, str):
                held, _ = self._text(child)
                if held is not child:
                    parent[name] = held

    def _lookup(self, value: Any) -> tuple[int, Any]:
        """(``value``'s key, the held value equal to it or None); a value already held is its own (key unused)."""
        if id(value) in self._ids:
            return 0, value
        key = hash(orjson.dumps(value))
        return key, self._found(key, value)

    def _found(self, key: int, value: Any) -> Any:
        held = self._held.get(key)
        if held is not None:
            return held if held == value else None  # unequal: a hash collision, not shared
        for table in (self._older, self._unmatched):
            held = table.get(key)
            if held is not None:
                if held != value:
                    return None
                del table[key]  # met again: kept in this generation of the values that repeat
                self._keep(key, held)
                return held
        return None

    def _hold(self, key: int, value: Any) -> None:
        if key in self._held or key in self._older or key in self._unmatched:
            return  # a collision: the first stays
        self._unmatched[key] = value
        self._ids.add(id(value))
        if len(self._unmatched) > UNMATCHED_VALUES_LIMIT:
            _, oldest = self._unmatched.popitem(last=False)
            self._ids.discard(id(oldest))

    def _keep(self, key: int, value: Any) -> None:
        if len(self._held) >= self._limit:
            ids = self._ids
            for forgotten in self._older.values():
                ids.discard(id(forgotten))
            self._older = self._held
            self._held = {}
        self._held[key] = value

    def _text(self, text: str) -> tuple[str, bool]:
        """(the held string equal to ``text`` or ``text`` itself, now held; whether it was found)."""
        if len(text) > SHARED_STRING_LENGTH:
            return text, False
        pieces = self._pieces
        held = pieces.get(text)
        if held is not None:
            return held, True
        if len(pieces) >= SHARED_STRINGS_LIMIT:
            pieces.clear()
        pieces[text] = text
        return text, False

    def _container(self, value: Any) -> tuple[Any, bool]:
        """(the held container equal to ``value`` or ``value`` itself; whether it is held now). One not found has
        its pieces shared, and is held for later only if each of them is: one with a string seen for the first time
        is most likely unique to this version (an IP, a container id)."""
        key, held = self._lookup(value)
        if held is not None:
            return held, True
        if self._share_pieces(value):
            self._hold(key, value)
            return value, True
        return value, False

    def _share_pieces(self, value: Any) -> bool:
        """Replace each piece of the container ``value`` by the held one equal to it; whether each is held now."""
        every_found = True
        pairs: Any = value.items() if type(value) is dict else enumerate(value)
        ids = self._ids
        for name, child in pairs:
            kind = type(child)
            if kind is str:
                held, found = self._text(child)
            elif kind is dict or kind is list:
                if id(child) in ids:
                    continue
                held, found = self._container(child)
            else:
                continue
            if not found:
                every_found = False
            if held is not child:
                value[name] = held
        return every_found
