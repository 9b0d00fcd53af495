"""What the store holds and hands out: each object as a read-only dict with its JSON, and a change of one object."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

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
