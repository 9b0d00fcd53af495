"""Day-to-day operations on the whole simulator: export, import, reset.

An import is tried in full on a scratch copy of the store first, so a bad document changes nothing and
every bad object is reported at once; only then is it carried out on the real store (and so through
the scheduler, the watches and the database like any other write). Its writes are staged inside
``store.deferred()`` and awaited once at the end: one group commit for the whole document instead of a commit
per write, the import reading what it already wrote (owners) from the store's working state.

``create_objects`` is the bulk create a client sends page by page (``kss import``, ``mode=create``): each object
is created as a ``POST`` would create it (no trial run; one that exists or is refused is reported by itself and
the others go on), with its status as sent, in one write, and the page answered once it is committed.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from kss_sim.cluster.errors import ApiError, BadRequest, Cause, Conflict, Invalid, NotFound, required
from kss_sim.cluster.kinds.registry import BY_KIND, KINDS, info_for
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.engine_host.control import SchedulerControl
from kss_sim.kube.objects import Obj
from kss_sim.operations import snapshot
from kss_sim.operations.snapshot import Item
from kss_sim.results.attempts import ResultsService
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError

log = logging.getLogger(__name__)

# Kinds whose status the server resets on create, so an import carries the snapshot's over (a Pod's only
# while it stays bound); on replacing an existing object, a Node's status too (capacity, allocatable).
# The workload kinds' status is their controllers' account of their pods: carried over, then kept current by them.
_WORKLOAD_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"})
# A ResourceClaim's status (allocation, reservedFor) too, its consumers pointed at the pods as they are here.
# Writes of an imported object's status raced by another writer before the import gives up (each from a fresh read).
_STATUS_WRITE_TRIES = 5
_CREATE_STATUS_KINDS = frozenset(
    {"Pod", "PersistentVolume", "PersistentVolumeClaim", "PodGroup", "ResourceClaim", *_WORKLOAD_KINDS}
)
_UPDATE_STATUS_KINDS = frozenset(
    {
        "Node",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "PodGroup",
        "ResourceClaim",
        *_WORKLOAD_KINDS,
    }
)
# Replace deletes dependents first so the scheduler never sees a pod outlive its node or namespace.
_DELETE_ORDER = (*reversed(snapshot.CREATE_ORDER),)
# The state a reset returns to leaves out Events (they describe what happened, not what is) and Leases (node
# heartbeats, renewed by the simulated kubelet).
_STATE_KINDS = tuple(k.kind for k in KINDS if k.kind not in ("Event", "Lease"))


class InvalidSnapshot(Invalid):
    """422: objects of the snapshot would be refused; ``causes`` name each one and its field."""

    def __init__(self, causes: list[Cause]) -> None:
        super().__init__("Snapshot", "", causes)
        parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
        self.message = f"the snapshot is invalid, nothing was imported: {'; '.join(parts)}"


class ImportFailed(ApiError):
    """500: the import passed its trial run but the store refused part of it (a concurrent change)."""


@dataclass(slots=True)
class ImportReport:
    """What an import did."""

    created: int = 0
    updated: int = 0
    deleted: int = 0
    scheduler_config: bool = False
    errors: list[Cause] = field(default_factory=list)

    def to_dict(self) -> Obj:
        """The JSON answer of ``POST /simulator/v1/import``."""
        return {
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "schedulerConfigApplied": self.scheduler_config,
        }


class OperationsService:
    """Export, import and reset over the store, the scheduler and the results."""

    def __init__(
        self,
        store: ClusterStore,
        scheduler: SchedulerControl,
        results: ResultsService | None,
        settings: Settings,
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.results = results
        self.settings = settings
        self._lock = threading.Lock()  # one import or reset at a time
        self._initial_items: list[Item] = []
        self._initial_config: Obj = scheduler.config_document()

    # --- export ---------------------------------------------------------------------------------
    def snapshot(self) -> Obj:
        """The whole virtual cluster and the scheduler configuration in kube-scheduler-simulator's shape."""
        objects: dict[str, list[Obj]] = {}
        minor = self.settings.version.minor
        for key, kind in snapshot.SNAPSHOT_KINDS.items():
            # A kind the feature gates do not serve (Workload without GenericWorkload) is left out, as on export
            # from a cluster without it; one served in another version than stored, in the version's form.
            if self.store.serves(kind) and snapshot.exported_at(key, minor):
                # Without managedFields, as ``kubectl get -o yaml`` shows objects: who wrote which field here
                # means nothing on the cluster a snapshot is loaded into (import drops them too).
                objects[key] = [
                    snapshot.exported_object(kind, _without_managed_fields(o), minor) for o in self.store.list(kind)[0]
                ]
        if self.store.serves("CustomResourceDefinition"):
            objects[snapshot.CUSTOM_RESOURCES_KEY] = [
                _without_managed_fields(o) for key in self._custom_keys() for o in self.store.list(key)[0]
            ]
        config = self.scheduler.config_document()
        return {
            key: (config if key == snapshot.SCHEDULER_CONFIG_KEY else objects[key])
            for key in snapshot.EXPORT_ORDER
            if key == snapshot.SCHEDULER_CONFIG_KEY or key in objects
        }

    def _custom_keys(self) -> list[str]:
        """Where the store keeps each CRD's kind (``Kind.group``), in a stable order."""
        return sorted(info.key for info in self.store.custom_kinds().storage_kinds())

    def export(self, fmt: str = "json") -> str:
        """:meth:`snapshot` as JSON or YAML text."""
        return snapshot.dump(self.snapshot(), fmt)

    # --- import ---------------------------------------------------------------------------------
    def import_text(self, text: str, *, replace: bool = False, unbind: bool = False) -> Obj:
        """Load a snapshot, a multi-document kubectl YAML file or a ``List``.

        ``replace`` first deletes every object that is not built-in; otherwise objects are merged (created,
        or replacing the object of the same kind, namespace and name). ``unbind`` clears pods' node and
        status so the scheduler places them again. Raises ``BadRequest`` (unreadable) or ``Invalid`` naming
        every bad object and field; then nothing was changed.
        """
        parsed = snapshot.parse(text)
        # Documents that could not be read are reported together with what the trial run finds in the rest.
        report = self._import(
            parsed.items, parsed.scheduler_config, replace=replace, unbind=unbind, parse_errors=parsed.errors
        )
        return report.to_dict()

    def _import(
        self,
        items: list[Item],
        config_doc: Obj | None,
        *,
        replace: bool,
        unbind: bool,
        before_create: Callable[[], None] | None = None,
        parse_errors: list[Cause] | None = None,
    ) -> ImportReport:
        for item in items:
            snapshot.clean(item, unbind=unbind)
        items = snapshot.ordered(items)
        causes: list[Cause] = list(parse_errors or [])
        config = None
        if config_doc is not None:
            try:
                config = self.scheduler.check_config(copy.deepcopy(config_doc))
            except ConfigError as exc:
                causes.append(Cause(f"schedulerConfig.{exc.field}", "FieldValueInvalid", exc.detail))
        with self._lock:
            trial = self.store.scratch_copy()
            causes += _apply(trial, copy.deepcopy(items), replace=replace, keep_going=True).errors
            if causes:
                raise InvalidSnapshot(causes)
            report = ImportReport()
            # Held, the scheduler takes the pods in queue order once all are in: placements are reproducible.
            with self.scheduler.held():
                if replace:
                    report.deleted = _delete_all(self.store)
                if before_create is not None:
                    before_create()
                if config is not None:
                    self.scheduler.update_config(copy.deepcopy(config_doc) if config_doc is not None else {})
                    report.scheduler_config = True
                # One group commit for the whole import instead of one per write.
                with self.store.deferred() as pending:
                    done = _apply(self.store, items, replace=False, keep_going=True)
                pending.wait()
            report.created, report.updated = done.created, done.updated
            if done.errors:
                log.error("import partly failed after a clean trial: %s", [c.to_dict() for c in done.errors])
                raise ImportFailed(
                    "the import was only partly applied (the cluster changed meanwhile)",
                    details={"causes": [c.to_dict() for c in done.errors]},
                )
            return report

    def create_objects(self, text: str) -> Obj:
        """Create every object of a multi-document YAML file or a ``List`` (``mode=create``), each on its own.

        An object is created as a ``POST`` creates it, but with the status it carries (a running pod: one write,
        and the kubelet finds it Running); owners it names are pointed at the objects of those names here. One
        that exists already is left as it is and answered ``AlreadyExists``; one refused is answered with why;
        the others go on. Answers once every object it says it created is committed: ``{"created", "failed",
        "items"}`` with, for each object in the order sent, its kind, namespace, name and either its ``uid`` or
        the ``status`` (a ``metav1.Status``) of its refusal. A document that cannot be read changes nothing.
        """
        parsed = snapshot.parse(text)
        if parsed.errors:
            raise InvalidSnapshot(parsed.errors)
        if parsed.scheduler_config is not None:
            raise BadRequest("mode=create takes objects only: send the scheduler configuration with mode=merge")
        for item in parsed.items:
            snapshot.clean(item, unbind=False)
        rank = {kind: i for i, kind in enumerate(snapshot.CREATE_ORDER)}
        order = sorted(range(len(parsed.items)), key=lambda i: rank.get(parsed.items[i].kind, len(rank)))
        answers: list[Obj] = [{} for _ in parsed.items]
        created = 0
        # Held, the scheduler takes the page's pods in queue order once they are in.
        with self.scheduler.held():
            with self._lock, self.store.deferred() as pending:
                for index in order:
                    item = parsed.items[index]
                    answer: Obj = {"kind": item.kind, "namespace": item.namespace or "", "name": item.name}
                    try:
                        answer["uid"] = _create_one(self.store, item, owned=parsed.from_json)["metadata"]["uid"]
                        created += 1
                    except ApiError as exc:
                        answer["status"] = exc.to_status()
                    answers[index] = answer
            # Outside the lock: the next page is staged while this one commits. A failed commit raises
            # InternalError (500): nothing of this page after the failure was made visible.
            pending.wait()
        return {"created": created, "failed": len(answers) - created, "items": answers}

    # --- reset ----------------------------------------------------------------------------------
    def capture_initial(self) -> None:
        """Remember the current objects and scheduler configuration as what :meth:`reset` returns to."""
        items: list[Item] = []
        for kind in (*_STATE_KINDS, *self._custom_keys()):
            for obj in self.store.list(kind)[0]:
                items.append(Item(f"initial.{kind}", kind, obj))
        self._initial_items = items
        self._initial_config = self.scheduler.config_document()

    def reset(self, *, empty: bool = False) -> Obj:
        """Back to the state the simulator started with (objects and configuration), or with ``empty`` to an
        empty cluster (built-in namespaces and priority classes only) with that configuration; results cleared.
        """

        def clear_results() -> None:
            if self.settings.scheduler_enabled:
                # Let an attempt that was under way finish, so its result is cleared with the rest.
                self.scheduler.wait_idle(timeout=5.0)
            if self.results is not None:
                self.results.clear_all()
            self.scheduler.results_cleared()

        report = self._import(
            [] if empty else copy.deepcopy(self._initial_items),
            copy.deepcopy(self._initial_config),
            replace=True,
            unbind=False,
            before_create=clear_results,
        )
        return report.to_dict()


@dataclass(slots=True)
class _Applied:
    created: int = 0
    updated: int = 0
    errors: list[Cause] = field(default_factory=list)


def _delete_all(store: ClusterStore) -> int:
    """Delete every object that is not built-in; the built-in namespaces and classes are then ensured. What a
    finalizer holds (a claim's delete protection, whose controller would let it go only later) goes too: left
    marked for deletion, it would refuse the snapshot's object of its name."""
    deleted = 0
    for kind in _DELETE_ORDER:
        deleted += len(store.delete_collection(kind))
        # Those marked by this delete and those marked before it (a claim whose pod went).
        for held in store.list(kind)[0]:
            meta = held.get("metadata") or {}
            if meta.get("deletionTimestamp") and meta.get("finalizers"):
                try:
                    store.update(kind, {**held, "metadata": {**meta, "finalizers": []}})
                except (NotFound, Conflict):  # its controller let it go meanwhile (kss serve's run alongside)
                    continue
    store.ensure_builtins()
    return deleted


def _apply(store: ClusterStore, items: list[Item], *, replace: bool, keep_going: bool) -> _Applied:
    """Create (or replace) each item on ``store``; errors are collected per item."""
    applied = _Applied()
    if replace:
        _delete_all(store)
    for item in items:
        try:
            if _apply_one(store, item):
                applied.created += 1
            else:
                applied.updated += 1
        except Invalid as exc:
            applied.errors += [
                Cause(f"{item.path}.{c.field}" if c.field else item.path, c.reason, f"{item.label}: {c.message}")
                for c in exc.causes
            ]
        except ApiError as exc:
            applied.errors.append(Cause(item.path, "FieldValueInvalid", f"{item.label}: {exc.message}"))
            if not keep_going:
                break
    return applied


def _check_served(store: ClusterStore, item: Item) -> None:
    """``Invalid`` at the item's ``kind`` when it is of a CRD's kind that no established CRD serves here;
    ``BadRequest`` for a Workload API object in a version this release does not serve (stored alike)."""
    if item.kind not in BY_KIND and not store.serves(item.kind):
        kind = item.obj.get("kind")
        cause = Cause("kind", "FieldValueNotSupported", f"kind {kind!r} is not served by the virtual cluster")
        raise Invalid(item.kind, item.name, [cause])
    refusal = snapshot.workload_api_refusal(item, store.kube_minor)
    if refusal is not None:
        raise BadRequest(refusal)


def _apply_one(store: ClusterStore, item: Item) -> bool:
    """Write one item; True when it was created, False when it replaced an existing object."""
    _check_served(store, item)
    body = copy.deepcopy(item.obj)
    namespace = item.namespace
    if not item.name and not (body.get("metadata") or {}).get("generateName"):
        raise Invalid(item.kind, "", [required("metadata.name", "name or generateName is required")])
    _relink_owners(store, body, namespace)
    _relink_claim(store, body, item.kind)
    existing = store.get(item.kind, namespace, item.name, working=True) if item.name else None
    if existing is not None and item.kind != "Pod":
        if namespace is not None:
            body["metadata"]["namespace"] = namespace
        if item.kind == "Job":
            snapshot.keep_generated_selector(body, existing)
        store.update(item.kind, body)
        _restore_status(store, item, store.get(item.kind, namespace, item.name, working=True), created=False)
        return False
    if existing is not None:
        # A pod's spec is immutable: replacing it means deleting and creating it again.
        store.delete("Pod", namespace, item.name)
    created = store.create(item.kind, body, namespace)
    _restore_status(store, item, created, created=True)
    return existing is None


def _create_one(store: ClusterStore, item: Item, *, owned: bool) -> Obj:
    """Create one item with the status it carries (``create_objects``); a pod not bound gets the server's.
    ``owned``: the item is plain JSON, which the store may take without copying it (it is parsed for this request
    only). Returns the stored object: read it, never change it."""
    _check_served(store, item)
    body = item.obj
    namespace = item.namespace
    _relink_owners(store, body, namespace)
    _relink_claim(store, body, item.kind)
    status = body.get("status")
    if item.kind == "ResourceClaim" and isinstance(status, dict):
        body["status"] = _relink_consumers(store, status, namespace)
    keep_status = not (item.kind == "Pod" and not (body.get("spec") or {}).get("nodeName"))
    return store.create(item.kind, body, namespace, keep_status=keep_status, copy=False, owned=owned)


def _without_managed_fields(obj: Obj) -> Obj:
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def _relink_owners(store: ClusterStore, body: Obj, namespace: str | None) -> None:
    """Point ``ownerReferences`` at the owners as they are here (created earlier in the import, with new uids), so
    controllers keep their pods; a pod of a Job also carries its Job's uid in the labels the Job selects by."""
    meta = body.get("metadata")
    if not isinstance(meta, dict) or namespace is None:
        return
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        owner_info = info_for(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
        owner_kind = owner_info.kind if owner_info is not None else str(ref.get("kind") or "")
        if not store.serves(owner_kind):
            continue
        owner = store.get(owner_kind, namespace, str(ref.get("name") or ""), working=True)
        if owner is None:
            continue
        uid = owner["metadata"]["uid"]
        ref["uid"] = uid
        labels = meta.get("labels")
        if ref.get("controller") and ref["kind"] == "Job" and isinstance(labels, dict):
            for key in snapshot.JOB_UID_LABELS:
                if key in labels:
                    labels[key] = uid


def _relink_claim(store: ClusterStore, body: Obj, kind: str) -> None:
    """A bound PV's ``claimRef`` names its claim by uid: point it at the claim of that name here (imported before
    the volume, with a new uid), or the PV controller would take the claim for deleted and release the volume. A
    claim that is not here leaves the reference as it is (the volume is then released, as on a cluster)."""
    ref = (body.get("spec") or {}).get("claimRef") if kind == "PersistentVolume" else None
    if not isinstance(ref, dict) or not ref.get("uid") or not ref.get("name"):
        return
    claim = store.get("PersistentVolumeClaim", str(ref.get("namespace") or "default"), str(ref["name"]), working=True)
    if claim is not None:
        ref["uid"] = claim["metadata"]["uid"]


def _relink_consumers(store: ClusterStore, status: Obj, namespace: str | None) -> Obj:
    """A claim's ``reservedFor`` names its pods by uid: point each at the pod of that name here (imported before the
    claim, with a new uid); a consumer that is not here is dropped, as the claim controller would drop it."""
    reserved = status.get("reservedFor")
    if not isinstance(reserved, list) or namespace is None:
        return status
    kept = []
    for ref in reserved:
        if not isinstance(ref, dict) or ref.get("resource") != "pods" or ref.get("apiGroup"):
            kept.append(ref)
            continue
        pod = store.get("Pod", namespace, str(ref.get("name") or ""), working=True)
        if pod is not None:
            kept.append({**ref, "uid": pod["metadata"]["uid"]})
    return {**status, "reservedFor": kept} if kept else {k: v for k, v in status.items() if k != "reservedFor"}


def _restore_status(store: ClusterStore, item: Item, current: Obj | None, *, created: bool) -> None:
    """Carry the snapshot's status over where the server would otherwise reset or keep its own."""
    status = item.obj.get("status")
    kinds = _CREATE_STATUS_KINDS if created else _UPDATE_STATUS_KINDS
    if current is None or not isinstance(status, dict) or not status or item.kind not in kinds:
        return
    if item.kind == "Pod" and not (item.obj.get("spec") or {}).get("nodeName"):
        return
    if item.kind == "ResourceClaim":
        status = _relink_consumers(store, status, item.namespace)
    meta = current.get("metadata") or {}
    namespace, name = meta.get("namespace"), str(meta.get("name") or "")
    for attempt in range(1, _STATUS_WRITE_TRIES + 1):
        # Fields the snapshot leaves out (a bare node's conditions, say) keep the server's values.
        merged = {**(current.get("status") or {}), **status}
        if current.get("status") == merged:
            return
        try:
            store.update(item.kind, {**current, "status": merged}, subresource="status")
            return
        except Conflict:
            if attempt == _STATUS_WRITE_TRIES:
                raise
            # Another writer changed the object since it was read (the PodGroup controller writes the status, and
            # its write may still be in the import's commit; a kubelet, a user): the snapshot's status is what the
            # import promises, so it goes over the object as it is now, whose metadata and other status fields
            # stay that writer's (a controller then recomputes its status from the pods, as on a cluster).
            fresh = store.get(item.kind, namespace, name, working=True)
            if fresh is None:
                return  # gone meanwhile: nothing to carry the status over to
            current = fresh


def scheduler_config_causes(exc: ConfigError) -> list[Cause]:
    """The Status causes of a refused scheduler configuration: the field and what is wrong with it."""
    return [Cause(exc.field, "FieldValueInvalid", exc.detail)]
