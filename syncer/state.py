"""What the syncer has mirrored: source uid -> the simulator's object, and which of those the simulator deleted.

An object deleted on the simulator side (by a user, or by preemption) stays here as a tombstone
(``deleted_in_simulator``) until the source deletes it too, so it is never recreated and later source
updates of it are ignored. The syncer notices such deletions by remembering what it created and seeing it
gone: ``NotFound`` when it applies an update, or, for an object whose source copy never changes again (a pod
scheduled in the source), at its next start, when ``Sink.seed`` finds a mirror of the state file gone from the
simulator.

With a state file, every mirror is kept in it (source uid -> kind, name, the simulator's uid, tombstone, controller),
written atomically (a temporary file, fsync, rename, fsync of the folder): a tombstone at once, other changes at
most once a second (``SAVE_INTERVAL``; ``flush`` writes what is left, called by the sink when it is idle and when it
stops), so a large first list does not rewrite the file per object.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncer.objects import Obj

log = logging.getLogger("kss.syncer")

# The state file's format: 2 keeps every mirror; 1 (a plain map of source uid -> [kind, namespace, name]) only the
# tombstones, still read.
STATE_VERSION = 2
# The longest a change other than a tombstone waits to be written.
SAVE_INTERVAL = 1.0


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

    With ``state_file`` the mirrors survive a restart of the syncer: objects the simulator deleted stay deleted,
    including those deleted while the syncer was not looking (``Sink.seed`` compares the file with the simulator).
    """

    def __init__(self, state_file: Path | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._by_uid: dict[str, Mirror] = {}
        self._by_key: dict[tuple[str, str, str], str] = {}
        self._state_file = state_file
        self._clock = clock
        self._dirty = False
        self._saved_at = clock()
        if state_file is not None and state_file.exists():
            self._load(json.loads(state_file.read_text()))

    def _load(self, doc: Any) -> None:
        if isinstance(doc, dict) and doc.get("version") == STATE_VERSION:
            for uid, m in (doc.get("mirrors") or {}).items():
                controller = m.get("controller")
                mirror = Mirror(
                    m["kind"],
                    m.get("namespace") or "",
                    m["name"],
                    m.get("simulatorUid"),
                    deleted_in_simulator=bool(m.get("deletedInSimulator")),
                    controller=(controller[0], controller[1], controller[2]) if controller else None,
                )
                self._by_uid[uid] = mirror
                if not mirror.deleted_in_simulator:
                    self._by_key[(mirror.kind, mirror.namespace, mirror.name)] = uid
            return
        for uid, (kind, namespace, name) in doc.items():  # version 1: the tombstones alone
            self._by_uid[uid] = Mirror(kind, namespace, name, None, deleted_in_simulator=True)

    def _save(self) -> None:
        """Write every mirror atomically (called with the lock held)."""
        if self._state_file is None:
            return
        mirrors: dict[str, Obj] = {}
        for uid, m in self._by_uid.items():
            entry: Obj = {"kind": m.kind, "namespace": m.namespace, "name": m.name, "simulatorUid": m.simulator_uid}
            if m.deleted_in_simulator:
                entry["deletedInSimulator"] = True
            if m.controller is not None:
                entry["controller"] = list(m.controller)
            mirrors[uid] = entry
        path = self._state_file
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w") as f:
            json.dump({"version": STATE_VERSION, "mirrors": mirrors}, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        # The rename is durable once the folder is: without this a power loss could bring the old file back.
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
        self._dirty = False
        self._saved_at = self._clock()

    def _changed(self, *, now: bool = False) -> None:
        """Note a change (called with the lock held): written at once with ``now``, else within ``SAVE_INTERVAL``."""
        if self._state_file is None:
            return
        self._dirty = True
        if now or self._clock() - self._saved_at >= SAVE_INTERVAL:
            self._save()

    def flush(self) -> None:
        """Write the changes not written yet (the sink calls this when idle and when it stops)."""
        with self._lock:
            if self._dirty:
                self._save()

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
            self._changed()

    def remove(self, uid: str) -> Mirror | None:
        """Forget a source object (it was deleted in the source); returns what was recorded."""
        with self._lock:
            mirror = self._by_uid.pop(uid, None)
            if mirror is not None and self._by_key.get((mirror.kind, mirror.namespace, mirror.name)) == uid:
                del self._by_key[(mirror.kind, mirror.namespace, mirror.name)]
            if mirror is not None:
                self._changed(now=mirror.deleted_in_simulator)
            return mirror

    def mark_deleted_in_simulator(self, uid: str) -> None:
        """Turn a mirror into a tombstone: the simulator deleted it, so it is neither recreated nor updated."""
        with self._lock:
            mirror = self._by_uid.get(uid)
            if mirror is not None:
                mirror.deleted_in_simulator = True
                mirror.applied = None
                self._changed(now=True)

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

    def live(self) -> list[tuple[str, Mirror]]:
        """Every (source uid, mirror) that is not a tombstone."""
        with self._lock:
            return [(uid, m) for uid, m in self._by_uid.items() if not m.deleted_in_simulator]
