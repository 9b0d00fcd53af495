"""What the store holds and hands out: each object as a read-only dict with its JSON (an Event as its JSON only),
and a change of one object."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from kss_sim.kube import raw_numbers
from kss_sim.kube.objects import Obj


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

    @property
    def uid(self) -> str:
        """``metadata.uid`` ("" when missing)."""
        return str(self.obj["metadata"].get("uid") or "")

    @property
    def decoded(self) -> Obj | None:
        """The dict when it is held (None for a ``PackedObject``: decoding is left to whoever needs it)."""
        return self.obj

    def copy(self) -> Obj:
        """A deep copy the caller owns."""
        result: Obj = raw_numbers.loads(self.raw)
        return result


# Kinds held as their JSON only. Events are most of a busy cluster's objects (one or more per pod scheduled, kept
# for an hour, up to KSS_EVENT_LIMIT), read rarely (a describe, a list) and never by the scheduler: their dict was
# two thirds of what each cost (~2.1 of ~3.2 kB held, tracemalloc; docs/performance.md).
PACKED_KINDS = frozenset({"Event"})


class PackedObject(StoredObject):
    """An object held as its JSON only: ``obj`` decodes it on each access (read-only; hold on to what you read).
    What the store reads on every write (namespace, name, uid, resourceVersion) is kept beside it."""

    __slots__ = ("_name", "_namespace", "_resource_version", "_uid")
    _name: str
    _namespace: str
    _resource_version: int
    _uid: str

    def __init__(self, entry: StoredObject) -> None:
        """The packed form of ``entry``."""
        object.__setattr__(self, "raw", entry.raw)
        object.__setattr__(self, "_namespace", entry.namespace)
        object.__setattr__(self, "_name", entry.name)
        object.__setattr__(self, "_uid", entry.uid)
        object.__setattr__(self, "_resource_version", entry.resource_version)

    @property
    def obj(self) -> Obj:
        result: Obj = orjson.loads(self.raw)
        return result

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def name(self) -> str:
        return self._name

    @property
    def uid(self) -> str:
        return self._uid

    @property
    def resource_version(self) -> int:
        return self._resource_version

    @property
    def decoded(self) -> Obj | None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoredObject) and self.raw == other.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __repr__(self) -> str:
        return f"PackedObject({self._namespace!r}, {self._name!r}, rv={self._resource_version})"


def held(kind: str, entry: StoredObject) -> StoredObject:
    """What the store keeps of ``entry``: packed for the ``PACKED_KINDS``, else ``entry`` itself."""
    return PackedObject(entry) if kind in PACKED_KINDS else entry


@dataclass(slots=True)
class Change:
    """One change of one object: staged by a write, written through by the committer, then published."""

    type: str
    kind: str
    key: tuple[str, str]
    new: StoredObject | None  # None for deletions
    old: StoredObject | None
    event_obj: StoredObject  # what the watch event carries
