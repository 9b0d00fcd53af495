"""The API's writes of objects: create, update, patch, server-side apply, delete and deletecollection, each
run through admission's pipeline (``kss_sim.cluster.admission.pipeline``: decoded, admitted, defaulted, validated
as kube-apiserver does), then staged through the committer (the next versions built by
``kss_sim.cluster.storage.versions``). ``ClusterStore`` hands these out as its own verbs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kss_sim.cluster.admission import admit, deletion, managed_fields, uids
from kss_sim.cluster.admission.apply import apply as apply_configuration
from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.admission.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)
from kss_sim.cluster.admission.pipeline import AdmissionPipeline, meta_of
from kss_sim.cluster.crd.definition import KIND as CRD_KIND
from kss_sim.cluster.errors import (
    STALE,
    AlreadyExists,
    BadRequest,
    Conflict,
    Invalid,
    NotFound,
    invalid,
)
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.cluster.kinds.stored import Change, StoredObject, held
from kss_sim.cluster.storage.change_log import MODIFIED
from kss_sim.cluster.storage.committer import Committer
from kss_sim.cluster.storage.listing import page
from kss_sim.cluster.storage.selectors import make_selector
from kss_sim.cluster.storage.versions import DEFAULT_MANAGER, GENERATION_KINDS, Versions, encode
from kss_sim.kube.objects import Obj

_NO_OPTIONS = deletion.DeleteOptions()

PATCH_TYPES = {
    "merge": MERGE_PATCH,
    "json": JSON_PATCH,
    "strategic": STRATEGIC_MERGE_PATCH,
    MERGE_PATCH: MERGE_PATCH,
    JSON_PATCH: JSON_PATCH,
    STRATEGIC_MERGE_PATCH: STRATEGIC_MERGE_PATCH,
}

_Changes = list[Change]
_Objs = list[Obj]


class ObjectWrites:
    """The store's write verbs over its ``committer`` and ``versions``, under ``lock`` (the store's); every object
    written goes through ``admission`` (creates, updates and patches only of the kinds it serves)."""

    def __init__(
        self,
        lock: threading.RLock,
        committer: Committer,
        versions: Versions,
        admission: AdmissionPipeline,
    ):
        self._lock = lock
        self._committer = committer
        self._versions = versions
        self._admission = admission

    def _info(self, kind: str) -> KindInfo:
        with self._lock:  # a CRD's kind may be looked up (and its kinds rebuilt) only under the lock
            return self._versions.kind_info(kind)

    def _writable(self, kind: str) -> KindInfo:
        info = self._info(kind)
        self._admission.check_served(info)
        return info

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
        created = self._create(kind, obj, namespace, dry_run, manager, managed, keep_status, owned)
        if not isinstance(created, StoredObject):
            return created  # a dry run's: the caller's already
        return created.copy() if copy else created.obj

    def create_json(
        self, kind: str, obj: Obj, namespace: str | None = None, *, manager: str = DEFAULT_MANAGER, owned: bool = False
    ) -> bytes:
        """``create`` answering the stored object's JSON: the API's answer to a create is the encoding made when it
        was stored, not a second one."""
        created = self._create(kind, obj, namespace, False, manager, None, False, owned)
        assert isinstance(created, StoredObject)
        return created.raw

    def _create(
        self,
        kind: str,
        obj: Obj,
        namespace: str | None,
        dry_run: bool,
        manager: str,
        managed: managed_fields.Entries | None,
        keep_status: bool,
        owned: bool,
    ) -> StoredObject | Obj:
        """``create``'s work: the stored object, or a dry run's object (a copy of its own)."""
        info = self._writable(kind)
        admission = self._admission
        body = admission.create_request(info, obj, namespace, owned=owned)
        # The same dict the gated fields were dropped from: kept as sent but for them.
        sent_status = body.get("status") if keep_status and info.has_status else None
        meta = body["metadata"]
        # Drawn before the lock: a block's refill (os.urandom) lets go of the GIL, and the store lock is not held
        # while this thread waits to win the GIL back (every writer would wait too).
        new_uid = uids.new_uid()
        with self._lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._versions.generate_name(kind, meta.get("namespace", ""), str(meta["generateName"]))
            changes: _Changes = []
            rv = self._committer.rv
            if info.namespaced and meta.get("name"):
                ns_change = self._versions.require_namespace(info, str(meta["name"]), str(meta["namespace"]), rv)
                if ns_change is not None:
                    changes.append(ns_change)
                    rv += 1
            # Fields are owned as the client sent them (defaults included), before admission adds its own.
            if managed is None:
                managed = admission.created_fields(info, body, manager, self._versions.timestamp())
            admission.admit_create(info, body, self._committer.objects, self._versions.timestamp)
            if isinstance(sent_status, dict) and sent_status:
                body["status"] = sent_status
            if managed:
                meta["managedFields"] = managed
            if info.kind == CRD_KIND:
                body["status"] = self._versions.crd_status(body)
            admission.validate_create(info, body)
            key = (str(meta.get("namespace") or ""), str(meta["name"]))
            if key in self._committer.objects[kind]:
                raise AlreadyExists(info.plural, key[1], group=info.group)
            meta.setdefault("uid", new_uid)  # a Job's is chosen in admission, for its selector
            meta["creationTimestamp"] = self._versions.timestamp()
            if kind in GENERATION_KINDS or info.from_definition:
                meta["generation"] = 1
            if dry_run:
                return admit.own(body)
            change = self._versions.added(kind, body, rv + 1)
            changes.append(change)
            batch = self._committer.stage(changes)
        self._committer.acknowledge(batch)
        return change.event_obj

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
        body = self._admission.decode(info, obj)
        meta = meta_of(body)
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or ("default" if info.namespaced else ""))
        if not name:
            raise Invalid(info.api_kind, "", [invalid("metadata.name", "", "name is required")], group=info.group)
        with self._lock:
            current = self._versions.current(kind, namespace, name)
            result, batch = self._versions.stage_update(info, current, body, subresource, dry_run, manager=manager)
        self._committer.acknowledge(batch)
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
            current = self._versions.current(kind, namespace, name)
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
                raise Invalid(info.api_kind, name, [invalid("patch", "", str(exc))], group=info.group) from None
            if not isinstance(patched, dict):
                raise BadRequest("the patch did not produce an object")
            if check is not None:
                check(patched)
            pmeta = meta_of(patched)
            if pmeta.get("name") != name:
                raise BadRequest(
                    f"the name of the object ({pmeta.get('name')}) does not match the name on the URL ({name})"
                )
            if info.namespaced and pmeta.get("namespace") != current.namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            body = self._admission.decode(info, patched)
            result, batch = self._versions.stage_update(info, current, body, subresource, dry_run, manager=manager)
        self._committer.acknowledge(batch)
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
        """Server-side apply of ``configuration`` by ``manager`` (``kss_sim.cluster.admission.apply``): merged into the
        object, or creating it when there is none; returns the result and whether it was created. ``ApplyConflict``
        (409) when it would change fields other managers own, unless ``force``.
        """
        info = self._writable(kind)
        namespace = (namespace or "default") if info.namespaced else None
        config = self._admission.decode_configuration(info, configuration, namespace, name)
        for _ in range(2):  # a create that lost a race with another becomes an apply to what it created
            with self._lock:
                current = self._committer.objects[kind].get((namespace or "", name))
                if current is not None:
                    merged = apply_configuration(
                        info,
                        current.copy(),
                        config,
                        manager=manager,
                        force=force,
                        subresource=subresource,
                        time=self._versions.timestamp(),
                    )
                    managed = merged["metadata"]["managedFields"]
                    body = self._admission.decode(info, merged)
                    result, batch = self._versions.stage_update(
                        info, current, body, subresource, dry_run, managed=managed
                    )
            if current is not None:
                self._committer.acknowledge(batch)
                return result, False
            if subresource is not None:
                raise NotFound(info.plural, name, group=info.group)
            merged = apply_configuration(
                info, None, config, manager=manager, force=force, subresource=None, time=self._versions.timestamp()
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
        """Delete one object (and, for a Namespace its contents, for a Node its pods unless a client's DeleteOptions
        came: kube-apiserver leaves them to the pod GC); returns its last state.

        An object left with finalizers after ``options`` (``kss_sim.cluster.admission.deletion``) is only marked as
        being deleted and returned as it now is; it goes when an update removes its last finalizer.
        """
        info = self._info(kind)
        with self._lock:
            current = self._versions.current(kind, namespace, name)
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
            self._admission.check_deletable(info, current)
            marked = current.copy()
            if kind == "Namespace" and options is not None and options.graceful and deletion.namespace_held(marked):
                # A client's delete of a namespace: Terminating until the namespace controller has emptied it.
                if deletion.is_deleting(marked):
                    raise Conflict(info.plural, name, deletion.NAMESPACE_BEING_EMPTIED, group=info.group)
                deletion.mark_terminating(marked, self._versions.timestamp())
                if dry_run:
                    return marked
                result, batch = self._versions.stage_modified(kind, current, marked)
                self._committer.acknowledge(batch)
                return result
            decision, period = deletion.before_delete(kind, marked, options, self._versions.now())
            if decision == deletion.PENDING:
                return marked  # a graceful deletion runs: nothing changes, the finalizers neither
            finalizers = deletion.finalizers_on_delete(kind, list(meta.get("finalizers") or []), options or _NO_OPTIONS)
            if dry_run:
                return current.copy() if decision == deletion.NOT_GRACEFUL else marked
            if decision == deletion.GRACEFUL and (finalizers or period > 0):
                if finalizers or "finalizers" in marked["metadata"]:
                    marked["metadata"]["finalizers"] = list(finalizers)
                result, batch = self._versions.stage_modified(kind, current, marked)
            elif finalizers:
                deletion.mark_deleting(marked, finalizers, self._versions.timestamp())
                if marked == current.obj:
                    return marked
                result, batch = self._versions.stage_modified(kind, current, marked)
            else:
                changes: _Changes = []
                self._versions.delete_changes(
                    info, current, changes, self._committer.rv, node_pods=not (options and options.graceful)
                )
                batch = self._committer.stage(changes)
                result = changes[-1].event_obj.copy()
        self._committer.acknowledge(batch)
        return result

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
        info = self._info(kind)
        selector = make_selector(kind, label_selector, field_selector)
        with self._lock:
            working = self._committer.objects[kind]
            targets = page(info, working, self._committer.rv, namespace, selector, limit=None, start=None).items
            targets = [t for t in targets if self._admission.deletable(info, t)]
            if dry_run:
                return [t.copy() for t in targets]
            changes: _Changes = []
            for target in targets:
                if working.get((target.namespace, target.name)) is target and not any(
                    c.kind == kind and c.key == (target.namespace, target.name) for c in changes
                ):
                    marked = target.copy()
                    decision, period = deletion.before_delete(kind, marked, options, self._versions.now())
                    if decision == deletion.PENDING:
                        continue
                    finalizers = deletion.finalizers_on_delete(
                        kind, list(target.obj["metadata"].get("finalizers") or []), options or _NO_OPTIONS
                    )
                    graceful = decision == deletion.GRACEFUL and (bool(finalizers) or period > 0)
                    if graceful or finalizers:
                        if graceful:
                            if finalizers or "finalizers" in marked["metadata"]:
                                marked["metadata"]["finalizers"] = list(finalizers)
                        else:
                            deletion.mark_deleting(marked, finalizers, self._versions.timestamp())
                        if marked != target.obj:
                            marked["metadata"]["resourceVersion"] = str(self._committer.rv + len(changes) + 1)
                            entry = StoredObject(marked, encode(marked))
                            key = (target.namespace, target.name)
                            changes.append(Change(MODIFIED, kind, key, held(kind, entry), target, entry))
                        continue
                    self._versions.delete_changes(
                        info,
                        target,
                        changes,
                        self._committer.rv + len(changes),
                        node_pods=not (options and options.graceful),
                    )
            batch = self._committer.stage(changes) if changes else None
        self._committer.acknowledge(batch)
        return [c.event_obj.copy() for c in changes if c.kind == kind]
