"""The scheduler's writes to pods, as kube-scheduler makes them through the API: the binding (``pods/binding``),
the status (``pods/status``) and core/v1 Events. Each can carry the scheduler's result annotations in the same
change, so one attempt is one write.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

import orjson

from kss_sim.cluster.admission import managed_fields, uids
from kss_sim.cluster.admission.pipeline import AdmissionPipeline
from kss_sim.cluster.errors import STALE, AlreadyExists, BadRequest, Conflict, NamespaceTerminating
from kss_sim.cluster.kinds.registry import BY_KIND, info_for
from kss_sim.cluster.kinds.stored import Change
from kss_sim.cluster.storage.committer import Committer
from kss_sim.cluster.storage.event_series import RecentEvents, event_key, repeated
from kss_sim.cluster.storage.versions import Versions, merge_annotations
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

# kube-scheduler's User-Agent prefix: the manager of its status writes and Events in managedFields (a binding
# records none, as kube-apiserver's binding subresource writes without the field manager).
SCHEDULER_MANAGER = "kube-scheduler"
# Binders kept (pod uid -> the Binding's manager) until the recorder of external bindings takes them: a bound, a
# cap for a server nobody reads them from (kss's own scheduler on, nothing recording).
BINDERS_KEPT = 10000


def _bound_version(stored: Obj, node_name: str, timestamp: str, *, clear_nominated: bool) -> Obj:
    """The next version of the stored pod ``stored`` (read-only) bound to ``node_name``: new dicts only where it
    changes (metadata, spec, status and its conditions), the rest shared with the stored version, which is never
    changed (a full copy of a pod with its result annotations was most of a binding's cost)."""
    status = dict(stored.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": timestamp}
    )
    status["conditions"] = conditions
    if clear_nominated:  # the nomination is spent once the pod is bound (ClearingNominatedNodeNameAfterBinding)
        status.pop("nominatedNodeName", None)
    pod = dict(stored)
    pod["metadata"] = dict(stored["metadata"])
    pod["spec"] = {**(stored.get("spec") or {}), "nodeName": node_name}
    pod["status"] = status
    return pod


# The managedFields of a created Event per (manager, shape of its keys): a create's field set depends only on which
# keys the object has, and every Event the server records has one of a few shapes (tracking them was ~60 % of an
# Event's cost).
_EVENT_MANAGED: dict[tuple[str, Any], managed_fields.Entries] = {}
_EVENT_MANAGED_LIMIT = 256


def _key_shape(event: Obj) -> Any:
    """The keys of ``event`` and of its maps: what a create's managedFields depend on; None (not cached) when its
    shape is deeper, has a list or a null (the field set may depend on values then)."""
    shape: list[Any] = []
    for key, child in event.items():
        if isinstance(child, dict):
            for leaf in child.values():
                if leaf is None or isinstance(leaf, (dict, list)):
                    return None
            shape.append((key, tuple(child)))
        elif child is None or isinstance(child, list):
            return None
        else:
            shape.append(key)
    return tuple(shape)


def created_event_managed_fields(event: Obj, manager: str, time: str) -> managed_fields.Entries:
    """The managedFields ``create`` gives the new Event ``event`` written by ``manager`` at ``time``."""
    shape = _key_shape(event)
    cached = _EVENT_MANAGED.get((manager, shape)) if shape is not None else None
    if cached is None:
        cached = managed_fields.track_update(BY_KIND["Event"], None, event, [], manager, None, time)
        if shape is not None:
            if len(_EVENT_MANAGED) >= _EVENT_MANAGED_LIMIT:
                _EVENT_MANAGED.clear()
            _EVENT_MANAGED[(manager, shape)] = cached
    # New entry dicts (the time differs); the field sets are read-only and shared.
    return [{**entry, "time": time} for entry in cached]


def _merged(target: Any, patch: Any) -> Any:
    """RFC 7386's merge of ``patch`` (owned by the caller) into ``target`` (read-only): new dicts only along the
    patched paths, ``patch``'s values taken as they are (``json_merge_patch`` deep-copies them)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merged(result.get(key), value)
    return result


def _with_status(stored: Obj, status: Obj, resource_version: str | None) -> Obj:
    """``stored`` (read-only) with ``status`` and, when given, ``resource_version``: the body of a status update,
    sharing the rest with ``stored`` (what ``admission.decode`` copies anyway)."""
    body = {**stored, "status": status}
    if resource_version is not None:
        body["metadata"] = {**stored["metadata"], "resourceVersion": resource_version}
    return body


class StoreVerbs(Protocol):
    """The store's public verbs the pod writes use: a status write to a pod being deleted is a patch."""

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = ...,
        *,
        subresource: str | None = ...,
        manager: str = ...,
    ) -> Obj: ...


class PodWrites:
    """``bind_pod``, ``update_pod_status``, ``merge_pod_status``, ``update_status`` and ``create_event``: built by
    the store over its committer and versions (``lock`` held around their use, as by every write) and its verbs."""

    def __init__(
        self,
        lock: threading.RLock,
        committer: Committer,
        versions: Versions,
        admission: AdmissionPipeline,
        store: StoreVerbs,
        *,
        clock: Callable[[], datetime],
        clear_nominated_on_bind: bool = True,
    ) -> None:
        self._lock = lock
        self._clear_nominated_on_bind = clear_nominated_on_bind
        self._committer = committer
        self._versions = versions
        self._admission = admission
        self._clock = clock
        self._store = store
        self._event_seq = 0
        self._recent_events = RecentEvents()
        self._binders: OrderedDict[str, str] = OrderedDict()

    def bind_pod(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        uid: str | None = None,
        annotations: Mapping[str, str | None] | None = None,
        copy: bool = True,
        binder: str | None = None,
    ) -> Obj:
        """What ``POST pods/{name}/binding`` does: set ``spec.nodeName`` and the PodScheduled condition.

        ``annotations`` are merged in by the same change (a None value removes the key), so a scheduler can
        bind and record its result in one write. ``binder``: the Binding's field manager (its ``fieldManager``,
        else its client's User-Agent prefix), kept for ``take_binder``: the pod records none (kube-apiserver's
        binding writes the pod without managedFields), yet it is who bound it. ``Conflict`` if the pod is already
        bound (or being deleted, or ``uid`` does not match); ``Invalid`` if the annotations are (nothing is changed
        then). Returns the bound pod, a copy (``copy=False``: the stored, read-only dict, for a caller that does not
        keep it).
        """
        with self._lock:
            current = self._versions.current("Pod", namespace, name)
            meta = current.obj["metadata"]
            if uid and uid != meta.get("uid"):
                raise Conflict(
                    "pods/binding",
                    name,
                    f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
                )
            if meta.get("deletionTimestamp"):
                raise Conflict("pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host")
            bound = (current.obj.get("spec") or {}).get("nodeName")
            if bound:
                raise Conflict("pods/binding", name, f'pod {name} is already assigned to node "{bound}"')
            self._admission.validate_binding(name, node_name)
            pod = _bound_version(
                current.obj, node_name, self._versions.timestamp(), clear_nominated=self._clear_nominated_on_bind
            )
            if annotations:
                merge_annotations(pod, annotations)
                self._admission.validate_annotations(BY_KIND["Pod"], pod, annotations)
            result, batch = self._versions.stage_modified("Pod", current, pod, copy=copy)
            if binder:
                self._binders[str(meta.get("uid") or "")] = binder
                while len(self._binders) > BINDERS_KEPT:
                    self._binders.popitem(last=False)
        self._committer.acknowledge(batch)
        return result

    def take_binder(self, uid: str) -> str | None:
        """The field manager of the Binding that bound the pod ``uid`` (once: it is forgotten), None if unknown."""
        with self._lock:
            return self._binders.pop(uid, None)

    def update_pod_status(
        self,
        namespace: str,
        name: str,
        status: Obj,
        *,
        resource_version: str | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> Obj:
        """Replace a pod's ``status`` (the ``pods/{name}/status`` subresource); ``Conflict`` on a stale version.

        ``annotations`` are merged in by the same change, as in ``bind_pod``.
        """
        with self._lock:
            current = self._versions.current("Pod", namespace, name)
            body = self._admission.decode(
                BY_KIND["Pod"], _with_status(current.obj, status, resource_version), status_only=True
            )
            result, batch = self._versions.stage_update(
                BY_KIND["Pod"], current, body, "status", False, annotations, manager=SCHEDULER_MANAGER
            )
        self._committer.acknowledge(batch)
        return result

    def merge_pod_status(
        self,
        namespace: str,
        name: str,
        status: Obj,
        *,
        resource_version: str | None,
        manager: str,
    ) -> Obj:
        """What a merge patch of ``{"metadata": {"resourceVersion": ...}, "status": status}`` through the
        ``pods/{name}/status`` subresource by ``manager`` does (the kubelet's status write), in the same stored
        bytes, without decoding the whole pod: such a write changes only the status, the managedFields and the
        resourceVersion, and the pod's metadata and spec were checked when stored (the decode's defaults touch only
        the spec, which a status write does not take); the new status is validated as any status write's
        (``Invalid``). Returns the stored pod (read-only: the
        store's dict). ``Conflict`` on a stale ``resource_version``; ``NotFound``.
        """
        owned = orjson.loads(orjson.dumps(status))  # what the store keeps, the caller's no more
        if not isinstance(owned, dict):
            raise BadRequest("the status must be a JSON object")
        info = BY_KIND["Pod"]
        with self._lock:
            current = self._versions.current("Pod", namespace, name)
            old = current.obj
            old_meta = old["metadata"]
            if old_meta.get("deletionTimestamp"):
                deleting = True  # an update may remove it: the generic path decides
            else:
                deleting = False
                if resource_version and resource_version != old_meta.get("resourceVersion"):
                    raise Conflict(info.plural, name, STALE)
                new = dict(old)
                new["status"] = _merged(old.get("status"), owned)
                meta = dict(old_meta)
                sent_managed = meta.pop("managedFields", None)  # re-added last, as an update writes it
                new["metadata"] = meta
                self._admission.prepare_update(info, new, old, "status")
                self._admission.validate_update(info, new, old, "status")
                self._admission.track_fields(
                    info, old, new, "status", manager, None, sent_managed, self._versions.timestamp()
                )
                if new == old:
                    return old
                result, batch = self._versions.stage_modified("Pod", current, new, copy=False)
        if deleting:
            body = {"metadata": {"resourceVersion": resource_version}, "status": status}
            if resource_version is None:
                del body["metadata"]
            return self._store.patch("Pod", namespace, name, body, "merge", subresource="status", manager=manager)
        self._committer.acknowledge(batch)
        return result

    def update_status(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        status: Obj,
        *,
        resource_version: str | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> Obj:
        """Replace any object's ``status`` (its ``status`` subresource); ``Conflict`` on a stale version.

        ``annotations`` are merged in by the same change: a controller's UpdateStatus keeps the annotations it
        changed (the Deployment controller's revision), as the workload kinds' status strategies do.
        """
        info = BY_KIND[kind]
        with self._lock:
            current = self._versions.current(kind, namespace, name)
            body = self._admission.decode(info, _with_status(current.obj, status, resource_version), status_only=True)
            result, batch = self._versions.stage_update(info, current, body, "status", False, annotations)
        self._committer.acknowledge(batch)
        return result

    def create_event(
        self,
        involved: Obj,
        reason: str,
        message: str,
        *,
        type: str = "Normal",
        component: str = "default-scheduler",
        action: str = "",
    ) -> Obj | None:
        """Record a core/v1 Event about ``involved`` (what ``kubectl describe`` lists); a repeat of one recorded
        lately counts on it instead (``event_series``). Returns the stored Event (read-only: the store's dict), or
        None when a new Event is refused because its namespace is being deleted: dropped as client-go's recorder
        drops it (NamespaceLifecycle refuses Events too), so the work that recorded it goes on."""
        meta = involved.get("metadata") or {}
        involved_kind = str(involved.get("kind") or "")
        info = info_for(str(involved.get("apiVersion") or ""), involved_kind) or BY_KIND.get(involved_kind)
        namespace = str(meta.get("namespace") or "default")
        with self._lock:
            self._event_seq += 1
            suffix = f"{time.time_ns():x}{self._event_seq:04x}"
        now = self._versions.timestamp()
        event: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name', 'unknown')}.{suffix}", "namespace": namespace},
            "involvedObject": {
                "kind": involved.get("kind") or "",
                "namespace": meta.get("namespace") or "",
                "name": meta.get("name") or "",
                "uid": meta.get("uid") or "",
                "apiVersion": involved.get("apiVersion") or (info.api_version if info else "v1"),
                "resourceVersion": meta.get("resourceVersion") or "",
            },
            "reason": reason,
            "message": message,
            "type": type,
            "source": {"component": component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": component,
        }
        if action:
            event["action"] = action
        if not event["involvedObject"]["namespace"]:
            del event["involvedObject"]["namespace"]
        key = event_key(event)
        moment = self._clock()
        with self._lock:
            seen = self._recent_events.find(key, moment)
            current = self._committer.objects["Event"].get(seen) if seen is not None else None
            if current is not None:
                repeat = repeated(current.copy(), moment, now)
                result, batch = self._versions.stage_modified("Event", current, repeat, copy=False)
                self._recent_events.remember(key, current.namespace, current.name, moment)
        if current is not None:
            self._committer.acknowledge(batch)
            return result
        manager = SCHEDULER_MANAGER if component == "default-scheduler" else component
        try:
            created = self._create_built_event(event, manager, now)
        except NamespaceTerminating as refused:
            # client-go's recordToSink: a NamespaceTerminating refusal is logged at V(5) and not retried.
            log.debug("Server rejected event %s/%s (will not retry!): %s", namespace, reason, refused)
            return None
        with self._lock:
            self._recent_events.remember(key, namespace, created["metadata"]["name"], moment)
        return created

    def _create_built_event(self, event: Obj, manager: str, now: str) -> Obj:
        """Store ``event`` (built by ``create_event``, in its canonical form) as ``create`` would, in the same
        bytes and watch event, without what cannot change it: its fields are strings and numbers taken from stored
        objects, so the decode (a JSON round trip, type checks; an Event has no defaults) and admission (none for
        Events) are skipped. What can fail is kept: the name (a long pod name), its namespace (missing, or being
        deleted: NamespaceLifecycle), a name taken."""
        meta = event["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        managed = created_event_managed_fields(event, manager, now)
        if managed:
            meta["managedFields"] = managed
        self._admission.validate_event(event)
        new_uid = uids.new_uid()  # before the lock, as in ``create`` (a refill lets go of the GIL)
        with self._lock:
            changes: list[Change] = []
            rv = self._committer.rv
            namespace_change = self._versions.require_namespace(BY_KIND["Event"], name, namespace, rv)
            if namespace_change is not None:
                changes.append(namespace_change)
                rv += 1
            if (namespace, name) in self._committer.objects["Event"]:
                raise AlreadyExists("events", name)
            meta["uid"] = new_uid
            meta["creationTimestamp"] = now
            change = self._versions.added("Event", event, rv + 1)
            changes.append(change)
            batch = self._committer.stage(changes)
        self._committer.acknowledge(batch)
        stored: Obj = change.event_obj.obj  # the dict built here (the store keeps the Event packed)
        return stored
