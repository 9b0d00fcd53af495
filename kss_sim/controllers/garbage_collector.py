"""The garbage collector: kube-controller-manager's ``pkg/controller/garbagecollector`` over the virtual cluster.

It keeps the ownership graph of every object but Events (upstream's ignored resources), as an index from an owner's
uid to its dependents, and acts on three things, as upstream's ``attemptToDeleteItem`` and ``attemptToOrphan`` do:

- a dependent some of whose owners are gone (a dangling reference: no object of that kind and name, or one with
  another uid): with an owner left ("solid") it only loses the dead references; with none it is deleted, with the
  propagation its own finalizers ask for (``orphan``: Orphan, ``foregroundDeletion``: Foreground, else
  Background), preconditioned on the uid and resourceVersion it was judged at, with DeleteOptions as upstream's
  ``deleteObject`` sends them (a pod is deleted gracefully: it terminates over its own grace period);
- an owner being deleted in the foreground (``deletionTimestamp`` and the ``foregroundDeletion`` finalizer): its
  dependents are deleted (Foreground themselves when they have dependents, so the wait goes down the tree); a
  dependent with a solid owner besides only loses its reference; once no dependent blocks it
  (``blockOwnerDeletion: true``), the finalizer is removed and the API server removes the owner;
- an owner being deleted with the ``orphan`` finalizer: its reference is taken out of every dependent, then the
  finalizer is removed.

The API server's side (finalizers decided from DeleteOptions, removal when the last finalizer goes) is
``app/cluster/admission/deletion.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kss_sim.cluster.admission.deletion import (
    BACKGROUND,
    FOREGROUND,
    FOREGROUND_FINALIZER,
    GC_FINALIZERS,
    ORPHAN,
    ORPHAN_FINALIZER,
    DeleteOptions,
)
from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.kinds.registry import BY_KIND, KINDS, info_for
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

Ident = tuple[str, str, str]  # (kind, namespace, name)

_SOLID = "solid"
_DANGLING = "dangling"
_WAITING = "waiting"  # the owner is being deleted in the foreground
_CONFLICT_RETRIES = 5
# What upstream's graph builder never watches (``DefaultIgnoredResources``: core and events.k8s.io Events): an Event
# is never an owner, and one naming an owner is not collected with it. Watching them cost a listener call and a
# graph update per Event (one per binding, among others).
IGNORED_KINDS = frozenset({"Event"})


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def _owner_refs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in _meta(obj).get("ownerReferences") or [] if isinstance(r, Mapping)]


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in _meta(obj).get("finalizers") or []]


def _deleting(obj: Mapping[str, Any]) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def _ident(kind: str, obj: Mapping[str, Any]) -> Ident:
    meta = _meta(obj)
    return kind, str(meta.get("namespace") or ""), str(meta.get("name") or "")


class GarbageCollector(ReconcileLoop[Ident]):
    """Deletes dependents whose owners are gone and carries out foreground and orphan deletion (module docstring)."""

    name = "garbage-collector"
    watched_kinds = tuple(info.kind for info in KINDS if info.kind not in IGNORED_KINDS)

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now) -> None:
        """A stopped garbage collector over ``store``."""
        super().__init__(store, clock=clock)
        self._live: dict[str, Ident] = {}  # uid -> object, every object seen
        self._owners_of: dict[Ident, frozenset[str]] = {}  # dependent -> its owners' uids
        self._dependents: dict[str, set[Ident]] = {}  # owner uid -> dependents naming it

    def reset(self) -> None:
        self._live.clear()
        self._owners_of.clear()
        self._dependents.clear()

    # --- the graph ------------------------------------------------------------------------------------------
    def _index(self, ident: Ident, owners: frozenset[str]) -> frozenset[str]:
        """Record ``ident``'s owners' uids; returns the ones it had."""
        before = self._owners_of.get(ident, frozenset())
        if before == owners:
            return before
        for uid in before - owners:
            dependents = self._dependents.get(uid)
            if dependents is not None:
                dependents.discard(ident)
                if not dependents:
                    del self._dependents[uid]
        for uid in owners - before:
            self._dependents.setdefault(uid, set()).add(ident)
        if owners:
            self._owners_of[ident] = owners
        else:
            self._owners_of.pop(ident, None)
        return before

    def _take_in(self, kind: str, obj: Mapping[str, Any]) -> list[Ident]:
        """Index one live object; the keys its state asks to look at."""
        ident = _ident(kind, obj)
        uid = str(_meta(obj).get("uid") or "")
        if uid:
            self._live[uid] = ident
        owners = frozenset(str(r.get("uid")) for r in _owner_refs(obj) if r.get("uid"))
        before = self._index(ident, owners)
        keys: list[Ident] = []
        # An owner whose reference went away may have been waiting for this dependent.
        keys += [self._live[o] for o in before - owners if o in self._live]
        if any(o not in self._live for o in owners):
            keys.append(ident)  # an owner never seen: maybe dangling
        if _deleting(obj) and any(f in GC_FINALIZERS for f in _finalizers(obj)):
            keys.append(ident)
        return keys

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Ident]:
        if event_type != DELETED:
            return self._take_in(kind, obj)
        ident = _ident(kind, obj)
        uid = str(_meta(obj).get("uid") or "")
        if self._live.get(uid) == ident:
            del self._live[uid]
        before = self._index(ident, frozenset())
        # Its dependents may now be dangling; its owners may have been waiting for it.
        keys = sorted(self._dependents.get(uid, ()))
        keys += [self._live[o] for o in before if o in self._live]
        return keys

    def resync(self) -> list[Ident]:
        """Index every object, then queue those with an unknown owner or a pending GC finalizer."""
        everything: list[tuple[str, Obj]] = []
        for info in KINDS:
            if info.kind in IGNORED_KINDS:
                continue
            for entry in self.store.select(info.kind).items:
                uid = entry.obj["metadata"].get("uid")
                if uid:
                    self._live[str(uid)] = (info.kind, entry.namespace, entry.name)
                everything.append((info.kind, entry.obj))
        keys: dict[Ident, None] = {}
        for kind, obj in everything:
            for key in self._take_in(kind, obj):
                keys[key] = None
        return list(keys)

    # --- reconcile ------------------------------------------------------------------------------------------
    def reconcile(self, key: Ident) -> None:
        kind, namespace, name = key
        try:
            obj = self.store.read(kind, namespace or None, name).obj
        except NotFound:
            return
        if _deleting(obj):
            finalizers = _finalizers(obj)
            if ORPHAN_FINALIZER in finalizers:
                self._orphan_dependents(key, obj)
            elif FOREGROUND_FINALIZER in finalizers:
                self._delete_dependents(key, obj)
            return  # otherwise it waits for its other finalizers: a one-way trip
        self._collect(key, obj)

    def _classify(self, namespace: str, ref: Mapping[str, Any]) -> str:
        """Whether the owner ``ref`` names exists (solid), is gone (dangling) or is being deleted in the
        foreground (waiting)."""
        kind = str(ref.get("kind") or "")
        info = info_for(str(ref.get("apiVersion") or ""), kind) or BY_KIND.get(kind)
        if info is None:
            return _SOLID  # a kind this cluster does not know: never collect on its account
        try:
            owner = self.store.read(info.kind, namespace if info.namespaced else None, str(ref.get("name") or "")).obj
        except NotFound:
            return _DANGLING
        if _meta(owner).get("uid") != ref.get("uid"):
            return _DANGLING  # another object of that name now
        if _deleting(owner) and FOREGROUND_FINALIZER in _finalizers(owner):
            return _WAITING
        return _SOLID

    def _collect(self, key: Ident, obj: Obj) -> None:
        """``attemptToDeleteItem`` for an object not being deleted."""
        refs = _owner_refs(obj)
        if not refs:
            return
        verdicts = {str(ref.get("uid")): self._classify(key[1], ref) for ref in refs}
        doomed = {uid for uid, verdict in verdicts.items() if verdict != _SOLID}
        if _SOLID in verdicts.values():
            if doomed:
                self._drop_references(key, doomed)
            return
        uid = str(_meta(obj).get("uid") or "")
        finalizers = _finalizers(obj)
        if _WAITING in verdicts.values() and self._dependents.get(uid):
            policy = FOREGROUND  # its own dependents must go first, so its owners keep waiting
        elif ORPHAN_FINALIZER in finalizers:
            policy = ORPHAN
        elif FOREGROUND_FINALIZER in finalizers:
            policy = FOREGROUND
        else:
            policy = BACKGROUND
        log.debug("garbage collector: deleting %s %s/%s (%s)", *key, policy)
        try:
            self.store.delete(
                key[0],
                key[1] or None,
                key[2],
                uid=uid,
                resource_version=str(_meta(obj).get("resourceVersion") or "") or None,
                # A client's DeleteOptions (no grace period): a pod ends gracefully, over its own grace period.
                options=DeleteOptions(propagation_policy=policy, graceful=True),
            )
        except NotFound:
            return

    def _delete_dependents(self, key: Ident, owner: Obj) -> None:
        """``processDeletingDependentsItem``: collect the dependents; the finalizer goes once none blocks."""
        uid = str(_meta(owner).get("uid") or "")
        blocking = False
        for dep_key in sorted(self._dependents.get(uid, ())):
            try:
                dep = self.store.read(dep_key[0], dep_key[1] or None, dep_key[2]).obj
            except NotFound:
                continue
            ref = next((r for r in _owner_refs(dep) if r.get("uid") == uid), None)
            if ref is None:
                continue
            blocking = blocking or ref.get("blockOwnerDeletion") is True
            if not _deleting(dep):
                self._collect(dep_key, dep)
        if not blocking:
            self._remove_finalizer(key, FOREGROUND_FINALIZER)

    def _orphan_dependents(self, key: Ident, owner: Obj) -> None:
        """``orphanDependents`` then ``removeFinalizer(orphan)``."""
        uid = str(_meta(owner).get("uid") or "")
        for dep_key in sorted(self._dependents.get(uid, ())):
            self._drop_references(dep_key, {uid})
        self._remove_finalizer(key, ORPHAN_FINALIZER)

    # --- writes, each recomputed from the object as it is on a conflict -----------------------------------------
    def _drop_references(self, key: Ident, uids: set[str]) -> None:
        """Take the ownerReferences to ``uids`` out of ``key``'s object."""
        for _ in range(_CONFLICT_RETRIES):
            try:
                obj = self.store.read(key[0], key[1] or None, key[2]).obj
            except NotFound:
                return
            refs = _owner_refs(obj)
            kept = [dict(r) for r in refs if str(r.get("uid")) not in uids]
            if len(kept) == len(refs):
                return
            patch = {"metadata": {"ownerReferences": kept or None, "resourceVersion": _meta(obj)["resourceVersion"]}}
            if self._patch(key, patch):
                return
        raise Conflict(BY_KIND[key[0]].plural, key[2], "the object keeps changing", group=BY_KIND[key[0]].group)

    def _remove_finalizer(self, key: Ident, finalizer: str) -> None:
        for _ in range(_CONFLICT_RETRIES):
            try:
                obj = self.store.read(key[0], key[1] or None, key[2]).obj
            except NotFound:
                return
            finalizers = _finalizers(obj)
            if finalizer not in finalizers:
                return
            kept = [f for f in finalizers if f != finalizer]
            patch = {"metadata": {"finalizers": kept or None, "resourceVersion": _meta(obj)["resourceVersion"]}}
            if self._patch(key, patch):
                log.debug("garbage collector: removed the %s finalizer of %s %s/%s", finalizer, *key)
                return
        raise Conflict(BY_KIND[key[0]].plural, key[2], "the object keeps changing", group=BY_KIND[key[0]].group)

    def _patch(self, key: Ident, patch: Obj) -> bool:
        """A merge patch; False on a conflict (the caller reads again), True when written or the object is gone."""
        try:
            self.store.patch(key[0], key[1] or None, key[2], patch, "merge")
        except Conflict:
            return False
        except NotFound:
            return True
        return True

    def dependents_of(self, uid: str) -> Iterable[Ident]:
        """The objects naming ``uid`` as an owner (worker thread's view; for tests and tools)."""
        return sorted(self._dependents.get(uid, ()))
