"""The virtual cluster's state: objects in memory, written through to SQL, with one resourceVersion sequence.

``ClusterStore`` is the in-process service API that the Kubernetes router, the scheduler loop, the results
recorder and the web UI all use. It is thread-safe: one re-entrant lock guards memory, and is never held while
the database works. Objects handed out are fresh copies; the store's own dicts are never mutated in place.

Writes use group commit (``app.cluster.storage.committer``): a write returns once durable and visible; reads see
committed state only. The change log (``app.cluster.storage.change_log``) replays committed changes to watches and
tells listeners. The scheduler's own writes to pods are in ``app.cluster.storage.pod_writes``.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Engine

from app.cluster.admission import admit as admission
from app.cluster.admission import deletion, managed_fields, uids
from app.cluster.admission.apply import apply as apply_configuration
from app.cluster.admission.apply import check_configuration
from app.cluster.admission.defaults import core as defaults
from app.cluster.admission.deletion import DeleteOptions
from app.cluster.admission.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)
from app.cluster.admission.validation.core import VALIDATORS, validate_update
from app.cluster.errors import (
    STALE,
    AlreadyExists,
    BadRequest,
    Conflict,
    Invalid,
    NotFound,
    invalid,
)
from app.cluster.errors import InternalError as InternalError
from app.cluster.kinds.registry import BY_KIND, KINDS, KindInfo, served
from app.cluster.kinds.stored import Change
from app.cluster.kinds.stored import Obj as Obj
from app.cluster.kinds.stored import StoredObject as StoredObject
from app.cluster.storage import repository
from app.cluster.storage.change_log import ADDED, DELETED, MODIFIED, ChangeLog, Listener, WatchEvent
from app.cluster.storage.committer import Batch, GroupCommit
from app.cluster.storage.committer import PendingWrites as PendingWrites
from app.cluster.storage.event_series import RecentEvents
from app.cluster.storage.pod_writes import PodWrites, merge_annotations
from app.cluster.storage.selectors import Selector, make_selector
from app.cluster.storage.shared_values import SharedValues

_NO_OPTIONS = deletion.DeleteOptions()

log = logging.getLogger(__name__)

PATCH_TYPES = {
    "merge": MERGE_PATCH,
    "json": JSON_PATCH,
    "strategic": STRATEGIC_MERGE_PATCH,
    MERGE_PATCH: MERGE_PATCH,
    JSON_PATCH: JSON_PATCH,
    STRATEGIC_MERGE_PATCH: STRATEGIC_MERGE_PATCH,
}
# Kinds whose metadata.generation tracks spec changes (custom resources always have one).
_GENERATION_KINDS = frozenset(
    {"Pod", "PodDisruptionBudget", "PodGroup", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}
    | {"DeviceClass", "ResourceSlice"}  # their strategies set generation 1 and bump it on spec changes
)
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # utilrand.String's alphabet: no vowels, no look-alikes
# The managedFields manager of writes made in-process without one (the web UI's editor, imports).
DEFAULT_MANAGER = "kss"


@dataclass(frozen=True, slots=True)
class ListResult:
    """One page of a list: entries in (namespace, name) order, the list's resourceVersion, paging state."""

    items: list[StoredObject]
    resource_version: int
    continue_token: str
    remaining: int | None


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _encode(obj: Obj) -> bytes:
    # orjson hands back its whole output buffer, grown as it wrote (a pod of 7 kB held 16 kB); the store keeps
    # every version it stores, so it keeps an exact copy (bench/memory_census.py: ~90 MB at the trace's end).
    return bytes(memoryview(orjson.dumps(obj)))


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _info(kind: str) -> KindInfo:
    info = BY_KIND.get(kind)
    if info is None:
        raise BadRequest(f"no kind {kind!r} is registered in the virtual cluster")
    return info


def _encode_continue(resource_version: int, namespace: str, name: str) -> str:
    token = orjson.dumps({"v": "meta.k8s.io/v1", "rv": resource_version, "start": [namespace, name]})
    return base64.urlsafe_b64encode(token).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = data["start"]
        return str(namespace), str(name)
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ) from None


_Changes = list[Change]
_Events = list[WatchEvent]
_Objs = list[Obj]
_Entries = list[StoredObject]


class ClusterStore(GroupCommit, PodWrites):
    """Kubernetes objects in memory, written through to SQL; see the module docstring for the guarantees."""

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        watch_window: int = 10000,
        auto_create_namespaces: bool = True,
        clock: Callable[[], datetime] = _utcnow,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        """An empty store; ``engine=None`` keeps everything in memory only (tests, offline simulation).

        ``feature_gates`` (``Settings.feature_gates``) decide what is served as on kube-apiserver: the Workload
        kind and a pod's ``spec.workloadRef`` only with GenericWorkload on.
        """
        self._lock = threading.RLock()
        self._engine = engine
        self._auto_create_namespaces = auto_create_namespaces
        self._clock = clock
        self._gates: dict[str, bool] = dict(feature_gates or {})
        self._objects: dict[str, dict[tuple[str, str], StoredObject]] = {k.kind: {} for k in KINDS}
        self._shared = SharedValues()  # equal parts of stored objects held once
        self._rv = 0
        self._changes = ChangeLog(self._lock, watch_window)
        self._event_seq = 0
        self._recent_events = RecentEvents()
        self._second_text: tuple[int | None, str] = (None, "")  # the last timestamp written, by its second
        # ``_rv`` is the last version handed out (staged changes included); ``_committed_rv`` the last visible one.
        self._committed_rv = 0
        self._init_group_commit()

    # ------------------------------------------------------------------------------------------ lifecycle

    @classmethod
    def open(
        cls,
        engine: Engine | None,
        *,
        watch_window: int = 10000,
        auto_create_namespaces: bool = True,
        clock: Callable[[], datetime] = _utcnow,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> ClusterStore:
        """Load every object from ``engine``'s database (already migrated) and add the built-in objects."""
        store = cls(
            engine,
            watch_window=watch_window,
            auto_create_namespaces=auto_create_namespaces,
            clock=clock,
            feature_gates=feature_gates,
        )
        store.load()
        store.ensure_builtins()
        return store

    def load(self) -> None:
        """Replace memory with the database's content; the watch log starts empty at the stored version."""
        if self._engine is None:
            return
        with self._lock, self._engine.connect() as conn:
            objects: dict[str, dict[tuple[str, str], StoredObject]] = {k.kind: {} for k in KINDS}
            for row in repository.load_rows(conn):
                if row.kind not in objects:
                    log.warning("ignoring stored object of unknown kind %s", row.kind)
                    continue
                raw = row.body.encode()
                obj = orjson.loads(raw)
                self._shared.share(obj)
                objects[row.kind][(row.namespace, row.name)] = StoredObject(obj, raw)
            self._objects = objects
            self._rv = repository.load_resource_version(conn)
            self._committed_rv = self._rv
            self._changes.reset(self._rv)

    def scratch_copy(self) -> ClusterStore:
        """An in-memory store holding the same objects (no database, no listeners): a place to try a
        batch of writes, such as an import, before doing them for real."""
        with self._lock:
            copy = ClusterStore(
                None,
                watch_window=self._changes.window,
                auto_create_namespaces=self._auto_create_namespaces,
                clock=self._clock,
                feature_gates=self._gates,
            )
            # StoredObjects are immutable, so sharing them is safe. Only committed state is copied.
            copy._objects = {kind: dict(self._view(kind)) for kind in self._objects}
            copy._rv = copy._committed_rv = self._committed_rv
            copy._changes.reset(self._committed_rv)
            return copy

    def ensure_builtins(self) -> None:
        """Create the namespaces and priority classes every cluster starts with, when missing."""
        with self._lock:
            changes: _Changes = []
            rv = self._rv
            for ns in defaults.SYSTEM_NAMESPACES:
                if ("", ns) not in self._objects["Namespace"]:
                    obj: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                    defaults.default_namespace(obj)
                    rv += 1
                    changes.append(self._new_object_change("Namespace", obj, rv))
            for pc in defaults.SYSTEM_PRIORITY_CLASSES:
                if ("", pc["metadata"]["name"]) not in self._objects["PriorityClass"]:
                    obj = admission.own(pc)
                    defaults.default_priority_class(obj)
                    rv += 1
                    changes.append(self._new_object_change("PriorityClass", obj, rv))
            batch = self._stage(changes) if changes else None
        self._await(batch)

    # ------------------------------------------------------------------------------------------ reads

    @property
    def feature_gates(self) -> dict[str, bool]:
        """The feature gates the store was opened with (a copy)."""
        return dict(self._gates)

    def serves(self, kind: str) -> bool:
        """Whether the API serves ``kind`` with these feature gates. Reads and deletes work for every registered
        kind (objects may remain from a run with the gate on); creates, updates and patches only for served ones.
        """
        info = BY_KIND.get(kind)
        return info is not None and served(info, self._gates)

    def _writable(self, kind: str) -> KindInfo:
        info = _info(kind)
        if not served(info, self._gates):
            raise BadRequest(
                f"the kind {kind} ({info.api_version}) is not served: feature gate {info.feature_gate} is off"
            )
        return info

    @property
    def clock(self) -> Callable[[], datetime]:
        """The store's clock (timestamps it writes; what Event expiry counts on)."""
        return self._clock

    @property
    def resource_version(self) -> int:
        """The latest committed (visible) resourceVersion."""
        with self._lock:
            return self._committed_rv

    def get(self, kind: str, namespace: str | None, name: str, *, working: bool = False) -> Obj | None:
        """A copy of one object, or None. ``working``: staged writes included, so a bulk write inside
        ``deferred()`` (an import) sees the objects it wrote before they are committed."""
        info = _info(kind)
        key = ((namespace or "") if info.namespaced else "", name)
        with self._lock:
            entry = self._objects[kind].get(key) if working else self._committed_entry(kind, key)
        return entry.copy() if entry is not None else None

    def read(self, kind: str, namespace: str | None, name: str) -> StoredObject:
        """The stored entry of one object (read-only), or ``NotFound``."""
        info = _info(kind)
        with self._lock:
            entry = self._committed_entry(kind, ((namespace or "") if info.namespaced else "", name))
        if entry is None:
            raise NotFound(info.plural, name, group=info.group)
        return entry

    def _current(self, kind: str, namespace: str | None, name: str) -> StoredObject:
        """The working entry of one object (staged changes included; lock held), or ``NotFound``."""
        info = _info(kind)
        entry = self._objects[kind].get(((namespace or "") if info.namespaced else "", name))
        if entry is None:
            raise NotFound(info.plural, name, group=info.group)
        return entry

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[_Objs, int]:
        """Copies of the matching objects in (namespace, name) order, and the list's resourceVersion."""
        result = self.select(kind, namespace, make_selector(kind, label_selector, field_selector))
        return [e.copy() for e in result.items], result.resource_version

    def select(
        self,
        kind: str,
        namespace: str | None = None,
        selector: Selector | None = None,
        *,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ListResult:
        """Stored entries (read-only) matching ``selector``, optionally one page of ``limit`` items."""
        return self._select(kind, namespace, selector, limit=limit, continue_token=continue_token, working=False)

    def _select(
        self,
        kind: str,
        namespace: str | None,
        selector: Selector | None,
        *,
        limit: int | None = None,
        continue_token: str | None = None,
        working: bool,
    ) -> ListResult:
        info = _info(kind)
        start: tuple[str, str] | None = _decode_continue(continue_token) if continue_token else None
        items: _Entries = []
        remaining = 0
        more_key: tuple[str, str] | None = None
        with self._lock:
            rv = self._rv if working else self._committed_rv
            entries = self._objects[kind] if working else self._view(kind)
            for key in sorted(entries):
                if info.namespaced and namespace and key[0] != namespace:
                    continue
                if start is not None and key <= start:
                    continue
                entry = entries[key]
                if selector is not None and not selector.empty and not selector.matches(entry.obj):
                    continue
                if limit is not None and len(items) >= limit:
                    if more_key is None:
                        more_key = (items[-1].namespace, items[-1].name)
                    remaining += 1
                    continue
                items.append(entry)
        token = _encode_continue(rv, *more_key) if more_key is not None else ""
        return ListResult(items, rv, token, remaining if more_key is not None else None)

    def events_since(self, resource_version: int) -> _Events:
        """Every change after ``resource_version``, oldest first; ``Expired`` if some were already dropped."""
        return self._changes.since(resource_version)

    # ------------------------------------------------------------------------------------------ change log

    def add_listener(self, callback: Listener, kinds: Iterable[str] | None = None, *, copy: bool = True) -> None:
        """Call ``callback(event_type, kind, obj)`` after each committed change (of ``kinds`` only, when
        given), in resourceVersion order: see ``ChangeLog.add_listener`` for what it may do there, and what
        ``copy=False`` (the store's read-only dict instead of a copy) asks of it."""
        self._changes.add_listener(callback, kinds, copy=copy)

    def remove_listener(self, callback: Listener) -> None:
        """Stop calling ``callback``."""
        self._changes.remove_listener(callback)

    def add_waker(self, wake: Callable[[], None]) -> None:
        """Call ``wake()`` (no arguments, no copies) after each commit; the watch hub uses this."""
        self._changes.add_waker(wake)

    def remove_waker(self, wake: Callable[[], None]) -> None:
        """Stop calling ``wake``."""
        self._changes.remove_waker(wake)

    def compact(self) -> None:
        """Drop the whole watch log (as etcd compaction does): watches from older versions get 410."""
        with self._lock:
            self._changes.reset(self._committed_rv)

    # ------------------------------------------------------------------------------------------ writes

    def create(
        self,
        kind: str,
        obj: Obj,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        manager: str = DEFAULT_MANAGER,
        managed: managed_fields.Entries | None = None,
        keep_status: bool = False,
        copy: bool = True,
        owned: bool = False,
    ) -> Obj:
        """Create ``obj`` (defaults and admission applied, then validated); returns the stored copy.

        ``manager`` owns the fields it set (an Update entry in managedFields) unless ``managed`` gives the entries
        (a server-side apply that creates). ``keep_status``: a non-empty ``status`` sent is stored as sent instead
        of the one admission sets (an import of a running pod: one write instead of a create and a status
        update). ``copy=False`` returns the stored, read-only dict instead of a copy of it (a caller that only reads
        it). ``owned``: ``obj`` is freshly parsed JSON the caller gives away (``admission.decode``): not copied.
        Raises ``BadRequest``, ``Invalid``, ``AlreadyExists``, ``NotFound`` (namespace), ``Forbidden``.
        """
        info = self._writable(kind)
        body = admission.decode(info, obj, owned=owned)
        sent_status = body.get("status") if keep_status and info.has_status else None
        admission.drop_disabled_fields(info, body, None, self._gates)
        meta = _meta(body)
        if info.namespaced:
            if namespace and meta.get("namespace") and meta["namespace"] != namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        for field in (
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
        ):
            meta.pop(field, None)
        # Drawn before the lock: a block's refill (os.urandom) lets go of the GIL, and the store lock is not held
        # while this thread waits to win the GIL back (every writer would wait too).
        new_uid = uids.new_uid()
        with self._lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._generate_name(kind, meta.get("namespace", ""), str(meta["generateName"]))
            changes: _Changes = []
            rv = self._rv
            if info.namespaced and meta.get("name"):
                ns_change = self._require_namespace(str(meta["namespace"]), rv)
                if ns_change is not None:
                    changes.append(ns_change)
                    rv += 1
            # Fields are owned as the client sent them (defaults included), before admission adds its own.
            if managed is None:
                managed = managed_fields.track_update(info, None, body, [], manager, None, self._timestamp())
            admission.prepare_create(info, body, self._objects, self._timestamp)
            if isinstance(sent_status, dict) and sent_status:
                body["status"] = sent_status
            if managed:
                meta["managedFields"] = managed
            causes = VALIDATORS[kind](body)
            if causes:
                raise Invalid(kind, str(meta.get("name") or ""), causes, group=info.group)
            key = (str(meta.get("namespace") or ""), str(meta["name"]))
            if key in self._objects[kind]:
                raise AlreadyExists(info.plural, key[1], group=info.group)
            meta.setdefault("uid", new_uid)  # a Job's is chosen in admission, for its selector
            meta["creationTimestamp"] = self._timestamp()
            if kind in _GENERATION_KINDS:
                meta["generation"] = 1
            if dry_run:
                return admission.own(body)
            change = self._new_object_change(kind, body, rv + 1)
            changes.append(change)
            batch = self._stage(changes)
        self._await(batch)
        assert change.new is not None
        return change.new.copy() if copy else change.new.obj

    def update(
        self,
        kind: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        manager: str = DEFAULT_MANAGER,
    ) -> Obj:
        """Replace an object (``PUT``); a stale ``metadata.resourceVersion`` raises ``Conflict``.

        ``subresource="status"`` replaces only the status; otherwise the status is kept as stored. ``manager``
        takes the fields the update changes (managedFields).
        """
        info = self._writable(kind)
        body = admission.decode(info, obj)
        meta = _meta(body)
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or ("default" if info.namespaced else ""))
        if not name:
            raise Invalid(kind, "", [invalid("metadata.name", "", "name is required")], group=info.group)
        with self._lock:
            current = self._current(kind, namespace, name)
            result, batch = self._update_locked(info, current, body, subresource, dry_run, manager=manager)
        self._await(batch)
        return result

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "merge",
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        check: Callable[[Obj], None] | None = None,
        manager: str = DEFAULT_MANAGER,
    ) -> Obj:
        """Apply a patch (``patch_type``: "merge", "json", "strategic" or their content types).

        ``check`` sees (and may amend, or refuse by raising) the patched object before it is validated.
        ``manager`` takes the fields the patch changes (managedFields); for server-side apply see ``apply``.
        """
        info = self._writable(kind)
        content_type = PATCH_TYPES.get(patch_type)
        if content_type is None:
            raise BadRequest(f"unsupported patch type {patch_type!r}")
        with self._lock:
            current = self._current(kind, namespace, name)
            # The patch functions never change their target (a JSON or strategic patch works on a deep copy, a merge
            # patch makes new dicts along the patched paths): only ``check``, which may amend a merge-patched object
            # in place, needs one the stored version does not share.
            base = current.copy() if check is not None and content_type == MERGE_PATCH else current.obj
            try:
                if content_type == JSON_PATCH:
                    patched = json_patch(base, patch)
                elif not isinstance(patch, dict):
                    raise BadRequest("a merge patch must be a JSON object")
                elif content_type == MERGE_PATCH:
                    patched = json_merge_patch(base, patch)
                else:
                    patched = strategic_merge_patch(base, patch)
            except PatchError as exc:
                raise Invalid(kind, name, [invalid("patch", "", str(exc))], group=info.group) from None
            if not isinstance(patched, dict):
                raise BadRequest("the patch did not produce an object")
            if check is not None:
                check(patched)
            pmeta = _meta(patched)
            if pmeta.get("name") != name:
                raise BadRequest(
                    f"the name of the object ({pmeta.get('name')}) does not match the name on the URL ({name})"
                )
            if info.namespaced and pmeta.get("namespace") != current.namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            body = admission.decode(info, patched)
            result, batch = self._update_locked(info, current, body, subresource, dry_run, manager=manager)
        self._await(batch)
        return result

    def apply(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        configuration: Any,
        *,
        manager: str,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> tuple[Obj, bool]:
        """Server-side apply of ``configuration`` by ``manager`` (``app.cluster.admission.apply``): merged into the
        object, or creating it when there is none; returns the result and whether it was created. ``ApplyConflict``
        (409) when it would change fields other managers own, unless ``force``.
        """
        info = self._writable(kind)
        namespace = (namespace or "default") if info.namespaced else None
        config = check_configuration(info, admission.own(configuration), namespace, name)
        for _ in range(2):  # a create that lost a race with another becomes an apply to what it created
            with self._lock:
                current = self._objects[kind].get((namespace or "", name))
                if current is not None:
                    merged = apply_configuration(
                        info,
                        current.copy(),
                        config,
                        manager=manager,
                        force=force,
                        subresource=subresource,
                        time=self._timestamp(),
                    )
                    managed = merged["metadata"]["managedFields"]
                    body = admission.decode(info, merged)
                    result, batch = self._update_locked(info, current, body, subresource, dry_run, managed=managed)
            if current is not None:
                self._await(batch)
                return result, False
            if subresource is not None:
                raise NotFound(info.plural, name, group=info.group)
            merged = apply_configuration(
                info, None, config, manager=manager, force=force, subresource=None, time=self._timestamp()
            )
            managed = merged["metadata"].pop("managedFields")
            try:
                return self.create(kind, merged, namespace, dry_run=dry_run, managed=managed), True
            except AlreadyExists:
                continue
        raise Conflict(info.plural, name, STALE, group=info.group)

    def delete(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        dry_run: bool = False,
        options: DeleteOptions | None = None,
    ) -> Obj:
        """Delete one object (and, for a Namespace its contents, for a Node its pods); returns its last state.

        An object left with finalizers after ``options`` (``app.cluster.admission.deletion``) is only marked as being
        deleted and returned as it now is; it goes when an update removes its last finalizer.
        """
        info = _info(kind)
        with self._lock:
            current = self._current(kind, namespace, name)
            meta = current.obj["metadata"]
            if uid and uid != meta.get("uid"):
                raise Conflict(
                    info.plural,
                    name,
                    f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
                    group=info.group,
                )
            if resource_version and resource_version != meta.get("resourceVersion"):
                raise Conflict(
                    info.plural,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                    f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
                    group=info.group,
                )
            admission.check_deletable(info, current)
            finalizers = deletion.finalizers_on_delete(kind, list(meta.get("finalizers") or []), options or _NO_OPTIONS)
            if dry_run:
                return current.copy()
            marked: Obj | None = None
            if finalizers:
                marked = current.copy()
                deletion.mark_deleting(marked, finalizers, self._timestamp())
                if marked == current.obj:
                    return current.copy()
                result, batch = self._write_modified(kind, current, marked)
            else:
                changes: _Changes = []
                self._delete_changes(info, current, changes, self._rv)
                batch = self._stage(changes)
        self._await(batch)
        return result if marked is not None else changes[-1].event_obj.copy()

    def delete_collection(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        *,
        dry_run: bool = False,
        options: DeleteOptions | None = None,
    ) -> _Objs:
        """Delete every matching object in one transaction; returns their last states (as ``delete``, one left
        with finalizers is only marked as being deleted)."""
        info = _info(kind)
        selector = make_selector(kind, label_selector, field_selector)
        with self._lock:
            targets = self._select(kind, namespace, selector, working=True).items
            targets = [t for t in targets if not admission.protected(info, t)]
            if dry_run:
                return [t.copy() for t in targets]
            changes: _Changes = []
            for target in targets:
                if self._objects[kind].get((target.namespace, target.name)) is target and not any(
                    c.kind == kind and c.key == (target.namespace, target.name) for c in changes
                ):
                    finalizers = deletion.finalizers_on_delete(
                        kind, list(target.obj["metadata"].get("finalizers") or []), options or _NO_OPTIONS
                    )
                    if finalizers:
                        marked = target.copy()
                        deletion.mark_deleting(marked, finalizers, self._timestamp())
                        if marked != target.obj:
                            marked["metadata"]["resourceVersion"] = str(self._rv + len(changes) + 1)
                            entry = StoredObject(marked, _encode(marked))
                            key = (target.namespace, target.name)
                            changes.append(Change(MODIFIED, kind, key, entry, target, entry))
                        continue
                    self._delete_changes(info, target, changes, self._rv + len(changes))
            batch = self._stage(changes) if changes else None
        self._await(batch)
        return [c.event_obj.copy() for c in changes if c.kind == kind]

    # ------------------------------------------------------------------------------------------ internals

    def _update_locked(
        self,
        info: KindInfo,
        current: StoredObject,
        body: Obj,
        subresource: str | None,
        dry_run: bool,
        annotations: Mapping[str, str | None] | None = None,
        *,
        manager: str = DEFAULT_MANAGER,
        managed: managed_fields.Entries | None = None,
    ) -> tuple[Obj, Batch | None]:
        """Validate and stage an update of ``current``; returns the result and the batch to await.

        ``manager`` takes the fields the update changes (an Update entry in managedFields), unless ``managed``
        gives the entries (a server-side apply).
        """
        admission.drop_disabled_fields(info, body, current.obj, self._gates)
        meta = _meta(body)
        old = current.obj
        old_meta = old["metadata"]
        name = current.name
        if meta.get("name") != name:
            raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})")
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv and wanted_rv != old_meta.get("resourceVersion"):
            raise Conflict(info.plural, name, STALE, group=info.group)
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            raise Conflict(
                info.plural,
                name,
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: {old_meta.get('uid')}",
                group=info.group,
            )
        # The new version shares the parts it takes unchanged from ``old`` (read-only; never changed in place).
        if subresource == "status":
            new = {**old, "metadata": dict(old_meta)}
            if "status" in body:
                new["status"] = body["status"]
            else:
                new.pop("status", None)
        else:
            new = body
            if info.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
        new_meta = _meta(new)
        if annotations:
            merge_annotations(new, annotations)
        for field in (
            "uid",
            "creationTimestamp",
            "namespace",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if field in old_meta:
                new_meta[field] = old_meta[field]
            else:
                new_meta.pop(field, None)
        sent_managed = new_meta.pop("managedFields", None)
        if info.kind in _GENERATION_KINDS and (
            new.get("spec") != old.get("spec")
            # A Deployment's annotations are copied to its ReplicaSets, so changing them is a new generation too
            # (not through the status subresource: the Deployment controller's UpdateStatus carries its revision).
            or (
                info.kind == "Deployment"
                and subresource != "status"
                and new_meta.get("annotations") != old_meta.get("annotations")
            )
        ):
            new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
        self._track_fields(info, old, new, subresource, manager, managed, sent_managed)
        causes = validate_update(info.kind, new, old) + deletion.update_causes(old, new)
        if causes:
            raise Invalid(info.kind, name, causes, group=info.group)
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        if new == old or dry_run:
            return (admission.own(new) if dry_run else current.copy()), None
        if deletion.deletes_on_update(old, new):
            # The last finalizer of an object being deleted is gone: it is removed now, in its updated state.
            changes: _Changes = []
            self._delete_changes(info, StoredObject(new, _encode(new)), changes, self._rv)
            return changes[-1].event_obj.copy(), self._stage(changes)
        return self._write_modified(info.kind, current, new)

    def _track_fields(
        self,
        info: KindInfo,
        old: Obj,
        new: Obj,
        subresource: str | None,
        manager: str,
        managed: managed_fields.Entries | None,
        sent_managed: Any,
    ) -> None:
        """Set ``new``'s managedFields: ``managed`` as given (an apply), else ``manager``'s update tracked over
        the entries the client sent (through the main resource only) or, without any, the stored ones."""
        old_managed = old["metadata"].get("managedFields") or []
        if managed is None:
            base = managed_fields.decoded(sent_managed) if subresource is None else None
            managed = managed_fields.track_update(
                info, old, new, old_managed if base is None else base, manager, subresource, self._timestamp()
            )
        elif managed != old_managed and managed_fields.same_ignoring_times(managed, old_managed):
            managed = old_managed  # an apply that changes nothing keeps the old times, so nothing is written
        if managed:
            new["metadata"]["managedFields"] = managed
        else:
            new["metadata"].pop("managedFields", None)

    def _write_modified(
        self, kind: str, current: StoredObject, new: Obj, *, copy: bool = True
    ) -> tuple[Obj, Batch | None]:
        """Stage ``new`` as the next version of ``current``; returns a copy of it (``copy=False``: the stored,
        read-only dict) and the batch to await."""
        rv = self._rv + 1
        new["metadata"]["resourceVersion"] = str(rv)
        self._shared.share(new)
        entry = StoredObject(new, _encode(new))
        change = Change(MODIFIED, kind, (current.namespace, current.name), entry, current, entry)
        return (entry.copy() if copy else entry.obj), self._stage([change])

    def _new_object_change(self, kind: str, obj: Obj, rv: int) -> Change:
        meta = obj["metadata"]
        # Not setdefault: its default would be computed (a uid taken) when unused.
        if "uid" not in meta:
            meta["uid"] = uids.new_uid()
        if "creationTimestamp" not in meta:
            meta["creationTimestamp"] = self._timestamp()
        meta["resourceVersion"] = str(rv)
        self._shared.share(obj)
        entry = StoredObject(obj, _encode(obj))
        return Change(ADDED, kind, (entry.namespace, entry.name), entry, None, entry)

    def _require_namespace(self, namespace: str, rv: int) -> Change | None:
        if ("", namespace) in self._objects["Namespace"]:
            return None
        if not self._auto_create_namespaces:
            raise NotFound("namespaces", namespace)
        obj: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        defaults.default_namespace(obj)
        causes = VALIDATORS["Namespace"](obj)
        if causes:
            raise Invalid("Namespace", namespace, causes)
        return self._new_object_change("Namespace", obj, rv + 1)

    def _delete_changes(self, info: KindInfo, entry: StoredObject, changes: _Changes, base_rv: int) -> None:
        """Append the deletions of ``entry`` and of what depends on it (resourceVersions after ``base_rv``)."""
        dependents: list[tuple[KindInfo, StoredObject]] = []
        if info.kind == "Namespace":
            for other in KINDS:
                if other.namespaced:
                    dependents += [
                        (other, e) for (ns, _), e in sorted(self._objects[other.kind].items()) if ns == entry.name
                    ]
        elif info.kind == "Node":
            dependents += [
                (BY_KIND["Pod"], e)
                for _, e in sorted(self._objects["Pod"].items())
                if (e.obj.get("spec") or {}).get("nodeName") == entry.name
            ]
        deleted = {(c.kind, c.key) for c in changes if c.type == DELETED}
        rv = base_rv
        for dep_info, dep in [*dependents, (info, entry)]:
            key = (dep.namespace, dep.name)
            if (dep_info.kind, key) in deleted:
                continue
            rv += 1
            last = dep.copy()
            last["metadata"]["resourceVersion"] = str(rv)
            last_entry = StoredObject(last, _encode(last))
            changes.append(Change(DELETED, dep_info.kind, key, None, dep, last_entry))

    def _generate_name(self, kind: str, namespace: str, prefix: str) -> str:
        import random

        for _ in range(100):
            name = prefix[:58] + "".join(random.choices(_NAME_CHARS, k=5))
            if (namespace if BY_KIND[kind].namespaced else "", name) not in self._objects[kind]:
                return name
        raise AlreadyExists(BY_KIND[kind].plural, prefix)

    def _timestamp(self) -> str:
        now = self._clock()
        second = int(now.timestamp())
        # Formatted once per second (strftime was ~9 % of a binding): one tuple, so threads never mix two seconds.
        cached = self._second_text
        if cached[0] != second:
            cached = (second, now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            self._second_text = cached
        return cached[1]
