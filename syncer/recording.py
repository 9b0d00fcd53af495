"""``kss sync --record FILE``: what the syncer sees in the source, written as a timed workload that ``kss replay``
replays (production's arrivals and departures; docs/replay.md, "Recording a cluster").

The file is a ``.jsonl`` event stream of kss's TimedWorkload format (``app/replay/workload.py`` reads it; the syncer
never imports ``app``, so the few shapes it writes are spelt out here): the first line is the header, a
TimedWorkload whose ``spec.epoch`` is the wall time the recording started; every further line is one event at
``at`` = seconds since then, appended and flushed as it is seen (a reader may follow the file; a stopped recording
is complete up to its last line).

- Objects the first list finds are created at 0, in the syncer's apply order (namespaces first, pods last).
- Later additions are ``create`` events; deletions (and objects a re-list no longer finds) ``delete`` events.
- A pod that finishes in the source (phase Succeeded or Failed) leaves then: a ``delete`` event, its departure.
- Pods are recorded without ``nodeName`` and status: the replay's scheduler places them again. Other changes to a
  pod are not recorded (the source's scheduler binding it, its status).
- A node's cordon and taint changes are ``cordon``/``uncordon``/``taint``/``untaint`` events; any other change of
  what the scheduler reads (labels, capacity, allocatable, the rest of its spec) an ``update`` of the whole node.
  Other kinds: an ``update`` when anything but their status changed.
- Objects whose controller is itself recorded (a ReplicaSet's pods with ``--workloads``, a pod's ResourceClaims)
  are left out: the replay's controllers make them.
- Pods already finished when first seen are left out: they hold nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

from syncer import translate
from syncer.kinds import Kind
from syncer.objects import Obj
from syncer.sink import ADDED, DELETED, MODIFIED, SYNCED, Event

log = logging.getLogger("kss.syncer")

API_VERSION = "kss.sigs.k8s.io/v1alpha1"  # kss_sim.replay.workload.API_VERSION
KIND = "TimedWorkload"
FINISHED_PHASES = ("Succeeded", "Failed")
_NODE_SPEC_EVENTS = ("unschedulable", "taints")  # recorded as cordon/taint events, not updates


class RecordingError(Exception):
    """The recording cannot start: the file exists (a recording is never overwritten nor continued), or its name
    does not end in ``.jsonl`` (how ``kss replay`` knows an event stream)."""


def _taint_key(taint: Obj) -> tuple[str, str]:
    return str(taint.get("key") or ""), str(taint.get("effect") or "")


def _taints(node: Obj) -> dict[tuple[str, str], Obj]:
    taints = (node.get("spec") or {}).get("taints") or []
    return {_taint_key(t): t for t in taints if isinstance(t, dict)}


def _node_rest(node: Obj) -> Obj:
    """What of a node the scheduler reads, cordon and taints aside (so heartbeats record nothing)."""
    status = node.get("status") or {}
    return {
        "labels": translate.meta(node).get("labels") or {},
        "spec": {k: v for k, v in (node.get("spec") or {}).items() if k not in _NODE_SPEC_EVENTS},
        "capacity": status.get("capacity"),
        "allocatable": status.get("allocatable"),
    }


class Recorder:
    """Writes what the syncer sees to ``path`` (see the module docstring). Thread-safe: watchers call
    :meth:`record` from their own threads; each line is written whole and flushed."""

    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.path = path
        self._clock = clock
        self._now = now
        self._lock = threading.Lock()
        self._file: IO[bytes] | None = None
        self._started = 0.0
        # The kinds this run records (set once discovery has answered): objects they control are left out.
        self.kinds: frozenset[str] = frozenset()
        # source uid -> (kind, namespace, name) of every object recorded and not yet gone
        self._objects: dict[str, tuple[str, str, str]] = {}
        # source uid -> the last recorded form (for diffs): a node's rest/taints/cordon, other kinds sans status
        self._last: dict[str, Any] = {}
        self.events = 0

    def check(self) -> None:
        """Raise :class:`RecordingError` if the recording cannot start (before anything else is set up)."""
        if self.path.suffix != ".jsonl":
            raise RecordingError(f"{self.path}: a recording is an event stream; name it *.jsonl")
        if self.path.exists():
            raise RecordingError(f"{self.path} exists: record to a new file")

    def open(self) -> None:
        """Create the file (refusing an existing one) and write the header; virtual time 0 is now."""
        self.check()
        try:
            self._file = self.path.open("xb")
        except FileExistsError:
            raise RecordingError(f"{self.path} exists: record to a new file") from None
        epoch = self._now().astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._started = self._clock()
        header = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": self.path.stem},
            "spec": {"epoch": epoch},
        }
        self._write(header)
        log.info("recording to %s from %s", self.path, epoch)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
                log.info("recorded %d events to %s", self.events, self.path)

    def _write(self, line: Obj) -> None:
        assert self._file is not None, "open() the recorder first"
        self._file.write(orjson.dumps(line) + b"\n")
        self._file.flush()

    def _emit(self, at: float, action: str, body: Any) -> None:
        self._write({"at": at, action: body})
        self.events += 1

    # ------------------------------------------------------------------------------------------ events

    def record(self, event: Event) -> None:
        """Record one source event (called before the sink applies it)."""
        with self._lock:
            if self._file is None:
                return
            at = 0.0 if event.initial else round(max(self._clock() - self._started, 0.0), 3)
            if event.type == SYNCED:
                self._vanished(event, at)
            elif event.type == DELETED:
                self._gone(translate.source_uid(event.obj), at)
            elif event.type in (ADDED, MODIFIED):
                uid = translate.source_uid(event.obj)
                if uid in self._objects:
                    self._changed(event.kind, uid, event.obj, at)
                else:
                    self._added(event.kind, uid, event.obj, at)

    def _left_out(self, kind: Kind, obj: Obj) -> bool:
        controller = translate.controller_of(obj)
        if controller is not None and controller[1] in self.kinds:
            return True
        return kind.name == "Pod" and (obj.get("status") or {}).get("phase") in FINISHED_PHASES

    def _added(self, kind: Kind, uid: str, obj: Obj, at: float) -> None:
        if not uid or self._left_out(kind, obj):
            return
        self._objects[uid] = (kind.name, *translate.key(obj))
        self._last[uid] = self._form(kind, obj)
        self._emit(at, "create", self._manifest(kind, obj))

    @staticmethod
    def _manifest(kind: Kind, obj: Obj) -> Obj:
        """The object as the replay creates it: the syncer's create body, without the source's traces."""
        manifest = translate.desired(kind, obj, keep_binding=False, pvc_uid=lambda _ns, _name: None)
        meta = translate.meta(manifest)
        annotations = meta.get("annotations") or {}
        annotations.pop(translate.SOURCE_UID_ANNOTATION, None)
        if not annotations:
            meta.pop("annotations", None)
        if kind.name == "Node" and isinstance(manifest.get("status"), dict):
            manifest["status"].pop("conditions", None)  # heartbeats; the replay's nodes are Ready
        elif kind.name == "PersistentVolume" and isinstance(manifest.get("spec"), dict):
            manifest["spec"].pop("claimRef", None)  # names the source's claim uid; the replay binds anew
        return manifest

    def _form(self, kind: Kind, obj: Obj) -> Any:
        if kind.name == "Node":
            return (_node_rest(obj), _taints(obj), bool((obj.get("spec") or {}).get("unschedulable")))
        if kind.name == "Pod":
            return None
        return translate.without_status(translate.desired(kind, obj, keep_binding=False, pvc_uid=lambda _n, _m: None))

    def _changed(self, kind: Kind, uid: str, obj: Obj, at: float) -> None:
        if kind.name == "Pod":
            if (obj.get("status") or {}).get("phase") in FINISHED_PHASES:
                self._gone(uid, at)  # it ran to its end in the source: its departure
            return
        before, after = self._last[uid], self._form(kind, obj)
        if before == after:
            return
        self._last[uid] = after
        if kind.name != "Node" or before[0] != after[0]:
            self._emit(at, "update", self._manifest(kind, obj))  # the whole object, cordon and taints included
            return
        name = translate.key(obj)[1]
        _, old_taints, old_cordon = before
        _, new_taints, new_cordon = after
        if old_cordon != new_cordon:
            self._emit(at, "cordon" if new_cordon else "uncordon", name)
        for key, taint in old_taints.items():
            if key not in new_taints or new_taints[key] != taint:
                self._emit(at, "untaint", {"node": name, "key": key[0], "effect": key[1]})
        for key, taint in new_taints.items():
            if old_taints.get(key) != taint:
                body = {"node": name, "key": key[0], "effect": key[1]}
                if taint.get("value"):
                    body["value"] = taint["value"]
                self._emit(at, "taint", body)

    def _gone(self, uid: str, at: float) -> None:
        recorded = self._objects.pop(uid, None)
        self._last.pop(uid, None)
        if recorded is None:
            return  # never recorded (left out), or already gone
        kind, namespace, name = recorded
        target: dict[str, Any] = {"kind": kind, "name": name}
        if namespace:
            target["namespace"] = namespace
        if kind == "Pod":
            # The pod left the source now, its grace period (if any) already spent there: gone at once in the replay.
            target["gracePeriodSeconds"] = 0
        self._emit(at, "delete", target)

    def _vanished(self, event: Event, at: float) -> None:
        """A (re)list ended: what it did not return is gone (deleted while the watch was down)."""
        for uid, (kind, namespace, _name) in list(self._objects.items()):
            if kind != event.kind.name or uid in event.present:
                continue
            if event.namespace is not None and namespace != event.namespace:
                continue
            self._gone(uid, at)
