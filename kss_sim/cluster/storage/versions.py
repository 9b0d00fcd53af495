"""The next version of an object, built and staged under the store's lock: what every write does once its request
is decoded. An update's preconditions, the fields no write changes, ``metadata.generation``, with admission's
pipeline (``kss_sim.cluster.admission.pipeline``) asked for the managedFields and the validation; a new object's
uid, creation time and resourceVersion; the deletions a Namespace or a Node takes along. The store's API verbs and
the pod writes both build on these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import orjson

from kss_sim.cluster.admission import admit, deletion, managed_fields, uids
from kss_sim.cluster.admission.pipeline import AdmissionPipeline, meta_of
from kss_sim.cluster.crd import objects as custom_objects
from kss_sim.cluster.crd.definition import KIND as CRD_KIND
from kss_sim.cluster.crd.definition import established_status
from kss_sim.cluster.crd.kinds import CustomKinds, crd_key
from kss_sim.cluster.errors import STALE, AlreadyExists, BadRequest, Conflict, NotFound
from kss_sim.cluster.kinds.registry import BY_KIND, KINDS, POD_GROUP_V1ALPHA2, KindInfo
from kss_sim.cluster.kinds.stored import PACKED_KINDS, Change, StoredObject, held
from kss_sim.cluster.storage.change_log import ADDED, DELETED, MODIFIED
from kss_sim.cluster.storage.committer import Batch, Committer
from kss_sim.cluster.storage.shared_values import SharedValues
from kss_sim.kube.objects import Obj

# Kinds whose metadata.generation tracks spec changes (custom resources always have one).
GENERATION_KINDS = frozenset(
    {"Pod", "PodDisruptionBudget", "PodGroup", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}
    | {"DeviceClass", "ResourceSlice", "CustomResourceDefinition"}  # their strategies bump it on spec changes
    | {POD_GROUP_V1ALPHA2}
)
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # utilrand.String's alphabet: no vowels, no look-alikes
# The managedFields manager of writes made in-process without one (the web UI's editor, imports).
DEFAULT_MANAGER = "kss"

_Changes = list[Change]


def encode(obj: Obj) -> bytes:
    """The JSON bytes a version is stored in."""
    # orjson hands back its whole output buffer, grown as it wrote (a pod of 7 kB held 16 kB); the store keeps
    # every version it stores, so it keeps an exact copy (bench/memory_census.py: ~90 MB at the trace's end).
    return bytes(memoryview(orjson.dumps(obj)))


def merge_annotations(obj: Obj, annotations: Mapping[str, str | None]) -> None:
    """Merge-patch ``metadata.annotations`` of ``obj`` in place (None removes a key)."""
    meta = obj["metadata"]
    merged = dict(meta.get("annotations") or {})
    for key, value in annotations.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    if merged:
        meta["annotations"] = merged
    else:
        meta.pop("annotations", None)


class Versions:
    """Builds and stages the next versions of objects through ``committer``; every method is called with the
    store's lock held (the lock ``committer`` shares)."""

    def __init__(
        self,
        committer: Committer,
        *,
        clock: Callable[[], datetime],
        admission: AdmissionPipeline,
        auto_create_namespaces: bool,
    ) -> None:
        self._committer = committer
        self._clock = clock
        self._admission = admission
        self._auto_create_namespaces = auto_create_namespaces
        self.shared = SharedValues()  # equal parts of stored objects held once
        self.custom = CustomKinds()  # the kinds the CRDs serve
        self._second_text: tuple[int | None, str] = (None, "")  # the last timestamp written, by its second

    def custom_kinds(self) -> CustomKinds:
        """The kinds the established CRDs serve, as the working state has them, each with room in the store."""
        self.custom.refresh(self._committer.objects[CRD_KIND])
        for info in self.custom.storage_kinds():
            self._committer.ensure_bucket(info.key)
        return self.custom

    def kind_info(self, kind: str) -> KindInfo:
        """The kind stored under ``kind`` (a registered kind, or a CRD's ``Kind.group``); ``BadRequest`` if none."""
        info = BY_KIND.get(kind)
        if info is None and "." in kind:
            info = self.custom_kinds().by_key(kind)
        if info is None:
            raise BadRequest(f"no kind {kind!r} is registered in the virtual cluster")
        return info

    def all_kinds(self) -> list[KindInfo]:
        """Every registered kind, then every custom kind at its storage version."""
        return [*KINDS, *self.custom_kinds().storage_kinds()]

    def crd_status(self, crd: Obj) -> Obj:
        """``crd``'s status as the apiextensions controllers write it: its names checked against the other CRDs of
        its group (a plural, kind or short name already taken is a conflict: not established)."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        mine = {names.get("plural"), names.get("singular"), *(names.get("shortNames") or [])} - {None}
        conflicts: list[str] = []
        for entry in self._committer.objects[CRD_KIND].values():
            other = entry.obj
            if other["metadata"].get("name") == crd["metadata"].get("name"):
                continue
            other_spec = other.get("spec") or {}
            other_names = (other.get("status") or {}).get("acceptedNames") or {}
            if other_spec.get("group") != spec.get("group"):
                continue
            if names.get("plural") == other_names.get("plural"):
                conflicts.append(f'"{names.get("plural")}" is already in use')
            elif names.get("kind") == other_names.get("kind"):
                conflicts.append(f'"{names.get("kind")}" is already in use')
            else:
                taken = {other_names.get("singular"), *(other_names.get("shortNames") or [])} - {None}
                conflicts += [f'"{n}" is already in use' for n in sorted(mine & taken)]
        return established_status(crd, self.timestamp(), conflicts)

    def current(self, kind: str, namespace: str | None, name: str) -> StoredObject:
        """The working entry of one object (staged changes included), or ``NotFound``."""
        info = self.kind_info(kind)
        entry = self._committer.objects[kind].get(((namespace or "") if info.namespaced else "", name))
        if entry is None:
            raise NotFound(info.plural, name, group=info.group)
        return entry

    def stage_update(
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
        self._admission.admit_update(info, body, current.obj)
        meta = meta_of(body)
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
            # The status strategies keep the stored metadata, but a pod's (podStatusStrategy) keeps what the write
            # sent (labels, annotations, finalizers) but for the fields its PrepareForUpdate resets.
            new = {**old, "metadata": dict(meta) if info.kind == "Pod" else dict(old_meta)}
            if "status" in body:
                new["status"] = body["status"]
            else:
                new.pop("status", None)
            self._admission.prepare_update(info, new, old, subresource)
        else:
            new = body
            if info.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            self._admission.prepare_update(info, new, old, subresource)
        new_meta = meta_of(new)
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
        if info.kind == CRD_KIND and subresource is None:
            new["status"] = self.crd_status(new)
        if info.from_definition:
            if custom_objects.content_changed(new, old):
                new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
        elif info.kind in GENERATION_KINDS and (
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
        self._admission.track_fields(info, old, new, subresource, manager, managed, sent_managed, self.timestamp())
        self._admission.validate_update(info, new, old, subresource)
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        if new == old or dry_run:
            return (admit.own(new) if dry_run else current.copy()), None
        if deletion.deletes_on_update(old, new) or (
            info.kind == "Namespace" and deletion.namespace_finalized(old, new)
        ):
            # The last finalizer of an object being deleted is gone: it is removed now, in its updated state.
            changes: _Changes = []
            self.delete_changes(info, StoredObject(new, encode(new)), changes, self._committer.rv)
            return changes[-1].event_obj.copy(), self._committer.stage(changes)
        return self.stage_modified(info.key, current, new)

    def stage_modified(
        self, kind: str, current: StoredObject, new: Obj, *, copy: bool = True
    ) -> tuple[Obj, Batch | None]:
        """Stage ``new`` as the next version of ``current``; returns a copy of it (``copy=False``: the stored,
        read-only dict) and the batch to await."""
        rv = self._committer.rv + 1
        new["metadata"]["resourceVersion"] = str(rv)
        if kind not in PACKED_KINDS:  # a packed object's dict is not kept: nothing to share
            self.shared.share(new)
        entry = StoredObject(new, encode(new))
        change = Change(MODIFIED, kind, (current.namespace, current.name), held(kind, entry), current, entry)
        return (entry.copy() if copy else entry.obj), self._committer.stage([change])

    def added(self, kind: str, obj: Obj, rv: int) -> Change:
        """The change that adds ``obj`` (its uid and creation time set when missing) at version ``rv``."""
        meta = obj["metadata"]
        # Not setdefault: its default would be computed (a uid taken) when unused.
        if "uid" not in meta:
            meta["uid"] = uids.new_uid()
        if "creationTimestamp" not in meta:
            meta["creationTimestamp"] = self.timestamp()
        meta["resourceVersion"] = str(rv)
        if kind not in PACKED_KINDS:
            self.shared.share(obj)
        entry = StoredObject(obj, encode(obj))
        # The watch event carries the dict (listeners and the recent watch log read it); the store keeps what
        # ``held`` keeps.
        return Change(ADDED, kind, (entry.namespace, entry.name), held(kind, entry), None, entry)

    def require_namespace(self, info: KindInfo, name: str, namespace: str, rv: int) -> Change | None:
        """Admission's NamespaceLifecycle for a new ``name`` in ``namespace``
        (``AdmissionPipeline.admit_namespace``): None when the namespace is there, else the change that creates
        it at version ``rv + 1``."""
        entry = self._committer.objects["Namespace"].get(("", namespace))
        created = self._admission.admit_namespace(
            info, name, namespace, entry, auto_create=self._auto_create_namespaces
        )
        return None if created is None else self.added("Namespace", created, rv + 1)

    def admit_subresource_create(self, info: KindInfo, name: str, namespace: str) -> None:
        """Admission's NamespaceLifecycle for a subresource's create on ``name`` in ``namespace``
        (``AdmissionPipeline.admit_subresource_create``)."""
        entry = self._committer.objects["Namespace"].get(("", namespace))
        self._admission.admit_subresource_create(info, name, namespace, entry)

    def delete_changes(
        self, info: KindInfo, entry: StoredObject, changes: _Changes, base_rv: int, *, node_pods: bool = True
    ) -> None:
        """Append the deletions of ``entry`` and of what depends on it (resourceVersions after ``base_rv``); a
        Node's pods only with ``node_pods`` (the store's own deletes: a client's leave them to the pod GC)."""
        dependents: list[tuple[KindInfo, StoredObject]] = []
        if info.kind == "Namespace":
            for other in self.all_kinds():
                if other.namespaced:
                    dependents += [
                        (other, e)
                        for (ns, _), e in sorted(self._committer.objects[other.key].items())
                        if ns == entry.name
                    ]
        elif info.kind == CRD_KIND:
            # Deleting a CRD deletes its objects (kube's finalizer, customresourcecleanup, does it before the CRD).
            custom = self.custom_kinds().by_key(crd_key(entry.obj))
            if custom is not None:
                dependents += [(custom, e) for _, e in sorted(self._committer.objects[custom.key].items())]
        elif info.kind == "Node" and node_pods:
            dependents += [
                (BY_KIND["Pod"], e)
                for _, e in sorted(self._committer.objects["Pod"].items())
                if (e.obj.get("spec") or {}).get("nodeName") == entry.name
            ]
        deleted = {(c.kind, c.key) for c in changes if c.type == DELETED}
        rv = base_rv
        for dep_info, dep in [*dependents, (info, entry)]:
            key = (dep.namespace, dep.name)
            if (dep_info.key, key) in deleted:
                continue
            rv += 1
            last = dep.copy()
            last["metadata"]["resourceVersion"] = str(rv)
            last_entry = StoredObject(last, encode(last))
            changes.append(Change(DELETED, dep_info.key, key, None, dep, last_entry))

    def generate_name(self, kind: str, namespace: str, prefix: str) -> str:
        """A free name for ``generateName`` ``prefix``: five random characters after it."""
        for _ in range(100):
            name = prefix[:58] + uids.name_suffix(_NAME_CHARS, 5)
            if (namespace if self.kind_info(kind).namespaced else "", name) not in self._committer.objects[kind]:
                return name
        raise AlreadyExists(self.kind_info(kind).plural, prefix)

    def now(self) -> datetime:
        """Now, on the store's clock."""
        return self._clock()

    def timestamp(self) -> str:
        """Now, as metav1.Time writes it (whole seconds, UTC)."""
        now = self._clock()
        second = int(now.timestamp())
        # Formatted once per second (strftime was ~9 % of a binding): one tuple, so threads never mix two seconds.
        cached = self._second_text
        if cached[0] != second:
            cached = (second, now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            self._second_text = cached
        return cached[1]
