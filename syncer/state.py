"""What the syncer has mirrored: source uid -> the simulator's object, and which of those the simulator deleted.

An object deleted on the simulator side (by a user, or by preemption) stays here as a tombstone
(``deleted_in_simulator``) until the source deletes it too, so it is never recreated and later source
updates of it are ignored. The syncer notices such deletions by remembering what it created and seeing it
gone (``NotFound`` when it applies an update).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from syncer.objects import Obj


@dataclass(slots=True)
class Mirror:
    """One source object and its copy in the simulator."""

    kind: str
    namespace: str
    name: str
    simulator_uid: str | None
    # The desired object last applied (see translate.desired), the base of the next update's diff;
    # None when unknown (adopted after AlreadyExists or found by annotation after a restart).
    applied: Obj | None = None
    deleted_in_simulator: bool = False
    # The source object's controller when it was mirrored, (apiVersion, kind, source uid), as a ReplicaSet for its
    # pods: once that controller is mirrored too, the simulator's copy of it decides about this object.
    controller: tuple[str, str, str] | None = None


class MirrorState:
    """Thread-safe map of source uid -> Mirror, with a (kind, namespace, name) index.

    With ``tombstone_file`` the tombstones survive a restart of the syncer: objects the simulator deleted
    stay deleted (the rest of the state is rebuilt from the simulator's ``source-uid`` annotations).
    """

    def __init__(self, tombstone_file: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._by_uid: dict[str, Mirror] = {}
        self._by_key: dict[tuple[str, str, str], str] = {}
        self._tombstone_file = tombstone_file
        if tombstone_file is not None and tombstone_file.exists():
            for uid, (kind, namespace, name) in json.loads(tombstone_file.read_text()).items():
                self._by_uid[uid] = Mirror(kind, namespace, name, None, deleted_in_simulator=True)

    def _save_tombstones(self) -> None:
        """Write the tombstones atomically (called with the lock held, only when they change)."""
        if self._tombstone_file is None:
            return
        doc = {uid: [m.kind, m.namespace, m.name] for uid, m in self._by_uid.items() if m.deleted_in_simulator}
        tmp = self._tombstone_file.with_name(self._tombstone_file.name + ".tmp")
        tmp.write_text(json.dumps(doc, sort_keys=True))
        os.replace(tmp, self._tombstone_file)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_uid)

    def get(self, uid: str) -> Mirror | None:
        """The mirror of a source object, if any."""
        with self._lock:
            return self._by_uid.get(uid)

    def put(self, uid: str, mirror: Mirror) -> None:
        """Record (or replace) the mirror of a source object."""
        with self._lock:
            old = self._by_uid.get(uid)
            if old is not None:
                self._by_key.pop((old.kind, old.namespace, old.name), None)
            self._by_uid[uid] = mirror
            self._by_key[(mirror.kind, mirror.namespace, mirror.name)] = uid

    def remove(self, uid: str) -> Mirror | None:
        """Forget a source object (it was deleted in the source); returns what was recorded."""
        with self._lock:
            mirror = self._by_uid.pop(uid, None)
            if mirror is not None and self._by_key.get((mirror.kind, mirror.namespace, mirror.name)) == uid:
                del self._by_key[(mirror.kind, mirror.namespace, mirror.name)]
            if mirror is not None and mirror.deleted_in_simulator:
                self._save_tombstones()
            return mirror

    def mark_deleted_in_simulator(self, uid: str) -> None:
        """Turn a mirror into a tombstone: the simulator deleted it, so it is neither recreated nor updated."""
        with self._lock:
            mirror = self._by_uid.get(uid)
            if mirror is not None:
                mirror.deleted_in_simulator = True
                mirror.applied = None
                self._save_tombstones()

    def _live(self, kind: str, namespace: str, name: str) -> tuple[str, Mirror] | None:
        """The source uid and live (not tombstoned) mirror holding that simulator name (called with the lock held)."""
        uid = self._by_key.get((kind, namespace, name))
        mirror = self._by_uid.get(uid) if uid is not None else None
        return (uid, mirror) if uid is not None and mirror is not None and not mirror.deleted_in_simulator else None

    def find(self, kind: str, namespace: str, name: str) -> Mirror | None:
        """The live (not tombstoned) mirror holding that simulator name, if any."""
        with self._lock:
            live = self._live(kind, namespace, name)
            return live[1] if live is not None else None

    def holder(self, kind: str, namespace: str, name: str) -> str | None:
        """The source uid whose live mirror holds that simulator name, if any."""
        with self._lock:
            live = self._live(kind, namespace, name)
            return live[0] if live is not None else None

    def uids(self, kind: str, namespace: str | None = None) -> list[str]:
        """Source uids recorded for ``kind`` (only those in ``namespace`` when given), tombstones included."""
        with self._lock:
            return [
                uid
                for uid, m in self._by_uid.items()
                if m.kind == kind and (namespace is None or m.namespace == namespace)
            ]
