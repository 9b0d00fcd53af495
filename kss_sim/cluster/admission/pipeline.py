"""The one admission pipeline every write of the store runs its object through, in kube-apiserver's order:

    decode (kind and apiVersion, types, defaults; a custom resource pruned and defaulted by its schema)
    -> admit (the kind served; on create the request's namespace, the fields no client sets, the admission
       plugins' changes and refusals; on update the strategy's PrepareForUpdate)
    -> validate (create, update, status and finalize variants; finalizers of an object being deleted)
    -> managed fields (the writer's Update entry, or an apply's entries).

Storage holds the objects and builds their versions (``kss_sim.cluster.storage``); it asks this pipeline, and only
this pipeline, what a write's object becomes and whether it may be stored. The pieces stay where they were
(``admit``, ``defaults/``, ``validation/``, ``managed_fields``, ``deletion``): this module is their one order.
A CustomResourceDefinition's kinds are admitted by rules from ``kss_sim.cluster.crd``, a room above this one, so
they come in as a ``CustomResources`` the store gives the pipeline.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kss_sim.cluster.admission import admit, deletion, managed_fields
from kss_sim.cluster.admission.apply import check_configuration
from kss_sim.cluster.admission.defaults import core as defaults
from kss_sim.cluster.admission.validation.core import (
    VALIDATORS,
    validate_event,
    validate_namespace_finalize,
    validate_update,
)
from kss_sim.cluster.admission.validation.metadata import TOTAL_ANNOTATION_BYTES, qualified_name_errors
from kss_sim.cluster.admission.validation.pod_status import PodStatusRules, validate_pod_status_update
from kss_sim.cluster.errors import BadRequest, Cause, Invalid, NamespaceTerminating, NotFound, invalid
from kss_sim.cluster.kinds.registry import BY_KIND, KindInfo, minor_of, served
from kss_sim.cluster.kinds.stored import StoredObject
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import kube_version as version_named

# What no client sets on create: the server's own metadata, dropped from the request's object (rest.BeforeCreate).
_SERVER_SET_ON_CREATE = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
)


class CustomResources(Protocol):
    """What apiextensions-apiserver does to a custom resource (``kss_sim.cluster.crd.objects``): called for the
    kinds served from a CustomResourceDefinition (``KindInfo.from_definition``) instead of the built-in tables."""

    def admit(self, info: KindInfo, body: Obj) -> None:
        """Prune ``body``'s unknown fields and apply its schema's defaults, in place."""

    def validate(self, info: KindInfo, body: Obj, old: Obj | None) -> list[Cause]:
        """Every cause ``body`` (``old``: the stored object, on an update) is invalid for."""


def meta_of(obj: Obj) -> Obj:
    """``obj``'s ``metadata``, made a dict when it is not one."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


@functools.lru_cache(maxsize=4096)
def _annotation_key_errors(key: str) -> tuple[Cause, ...]:
    """What ``validate_metadata`` says of one annotation key. Kept per key: every binding brings the scheduler's
    same few result keys, and checking them was a quarter of a binding's cost."""
    return tuple(qualified_name_errors("metadata.annotations", key.lower()))


def annotation_causes(obj: Obj, changed: Mapping[str, str | None]) -> list[Cause]:
    """What ``validate_metadata`` says of ``obj``'s annotations when only the ``changed`` keys are new: those keys
    (the others were validated when they were written) and the size of them all."""
    annotations = obj["metadata"].get("annotations") or {}
    causes: list[Cause] = []
    for key in annotations:
        if key in changed:
            causes += _annotation_key_errors(key)
    if sum(len(k) + len(v) for k, v in annotations.items()) > TOTAL_ANNOTATION_BYTES:
        causes.append(Cause("metadata.annotations", "FieldValueTooLong", "Too long: must have at most 262144 bytes"))
    return causes


class AdmissionPipeline:
    """The admission of one store's writes: the kinds ``gates`` serve at Kubernetes ``kube_version`` (None: the
    default), decoded by that release's schema; ``custom`` admits the CRDs' kinds."""

    def __init__(self, gates: Mapping[str, bool], *, kube_version: str | None, custom: CustomResources) -> None:
        self._gates = gates
        self._kube_version = kube_version
        self._minor = minor_of(kube_version)
        self._custom = custom
        # The gate as set, else at this release's default (not the default release's).
        gate = "ClearingNominatedNodeNameAfterBinding"
        clearing_nominated = gates.get(gate, version_named(kube_version).gate_defaults().get(gate, False))
        self._pod_status_rules = PodStatusRules.of(self._minor, clearing_nominated=clearing_nominated)

    # ------------------------------------------------------------------------------------------ decode

    def decode(self, info: KindInfo, obj: Any, *, owned: bool = False, status_only: bool = False) -> Obj:
        """``admit.decode`` at the store's Kubernetes version (``status_only``: only the status's types checked, a
        status write to a stored object), then, for a CRD's kind, its unknown fields pruned and its schema's
        defaults applied."""
        body = admit.decode(info, obj, owned=owned, status_only=status_only, kube_version=self._kube_version)
        if info.from_definition:
            self._custom.admit(info, body)
        return body

    def decode_configuration(self, info: KindInfo, configuration: Any, namespace: str | None, name: str) -> Obj:
        """A server-side apply's configuration (a private copy) checked as kube-apiserver checks it before merging
        (``apply.check_configuration``: 400 for a wrong type, before any conflict is reported)."""
        return check_configuration(info, admit.own(configuration), namespace, name, kube_version=self._kube_version)

    # ------------------------------------------------------------------------------------------ admit

    def check_served(self, info: KindInfo) -> None:
        """``BadRequest`` unless the kind is served (its versions, its feature gate): creates, updates and patches
        only of those; reads and deletes work for every kind (objects may remain from a run with the gate on)."""
        if served(info, self._gates, self._minor):
            return
        first, last = info.minors
        if self._minor < first or (last is not None and self._minor > last):
            why = f"Kubernetes v1.{self._minor} does not have it"
        else:
            why = f"feature gate {info.feature_gate} is off"
        raise BadRequest(f"the kind {info.api_kind} ({info.api_version}) is not served: {why}")

    def create_request(self, info: KindInfo, obj: Any, namespace: str | None, *, owned: bool = False) -> Obj:
        """A create's object as the request made it, before anything the store holds is read: decoded, gated fields
        dropped, its namespace the request's (``BadRequest`` when they differ; ``default`` when neither says), and
        the metadata only the server sets removed."""
        body = self.decode(info, obj, owned=owned)
        admit.drop_disabled_fields(info, body, None, self._gates)
        meta = meta_of(body)
        if info.namespaced:
            if namespace and meta.get("namespace") and meta["namespace"] != namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        for field in _SERVER_SET_ON_CREATE:
            meta.pop(field, None)
        return body

    def admit_namespace(
        self,
        info: KindInfo,
        name: str,
        namespace: str,
        entry: StoredObject | None,
        *,
        auto_create: bool,
    ) -> Obj | None:
        """NamespaceLifecycle on the create of ``name`` in ``namespace``, whose stored Namespace is ``entry``: None
        when it may go there; the Namespace to create first when there is none and ``auto_create`` (the
        simulator's namespaces made on demand), else ``NotFound``; ``NamespaceTerminating`` when it is being
        deleted, for every kind, Events included (the plugin exempts only access reviews, which kss does not
        serve)."""
        if entry is None:
            if not auto_create:
                raise NotFound("namespaces", namespace)
            return self.new_namespace(namespace)
        if entry.obj["metadata"].get("deletionTimestamp"):
            raise NamespaceTerminating(info.plural, name, namespace, group=info.group)
        return None

    def admit_subresource_create(self, info: KindInfo, name: str, namespace: str, entry: StoredObject | None) -> None:
        """NamespaceLifecycle on a subresource's create (``pods/binding``, ``pods/eviction``: a create to the
        plugin, which exempts neither), before anything else is read: ``NotFound`` for the namespace when there is
        none (none is made on demand for it), ``NamespaceTerminating`` when it is being deleted."""
        self.admit_namespace(info, name, namespace, entry, auto_create=False)

    def admit_create(
        self,
        info: KindInfo,
        body: Obj,
        objects: Mapping[str, Mapping[tuple[str, str], StoredObject]],
        timestamp: Callable[[], str],
    ) -> None:
        """The admission plugins and the strategy's PrepareForCreate, in place (``admit.prepare_create``: ``objects``
        the working state, ``timestamp`` the time now); ``Forbidden`` when admission refuses the object."""
        admit.prepare_create(info, body, objects, timestamp, self._gates)

    def admit_update(self, info: KindInfo, body: Obj, old: Obj) -> None:
        """An update's object as the request made it, in place: the gated fields ``old`` does not use dropped."""
        admit.drop_disabled_fields(info, body, old, self._gates)

    def prepare_update(self, info: KindInfo, new: Obj, old: Obj, subresource: str | None) -> None:
        """The strategy's PrepareForUpdate, in place: of a write through the main resource (the status it keeps
        from ``old`` is storage's: every kind with a status keeps it), or of a pod's through ``status`` (the spec it
        keeps is storage's too; its ownerReferences are reset here)."""
        if info.kind == "Namespace":
            admit.prepare_namespace_update(new, old, subresource)
        elif info.kind == "Pod" and subresource == "status":
            admit.prepare_pod_status_update(new, old)

    def check_deletable(self, info: KindInfo, entry: StoredObject) -> None:
        """``Forbidden`` if ``entry`` is a built-in object that may not be deleted."""
        admit.check_deletable(info, entry)

    def deletable(self, info: KindInfo, entry: StoredObject) -> bool:
        """Whether a deletecollection takes ``entry`` (the built-in objects it leaves)."""
        return not admit.protected(info, entry)

    # ------------------------------------------------------------------------------------------ validate

    def validate_create(self, info: KindInfo, body: Obj) -> None:
        """``Invalid`` with every cause when the new object ``body`` may not be stored."""
        causes = self._custom.validate(info, body, None) if info.from_definition else VALIDATORS[info.kind](body)
        if causes:
            raise Invalid(info.api_kind, str(meta_of(body).get("name") or ""), causes, group=info.group)

    def validate_update(self, info: KindInfo, new: Obj, old: Obj, subresource: str | None) -> None:
        """``Invalid`` with every cause when ``new`` may not replace ``old`` through ``subresource`` (None: the main
        resource; ``status``: the same rules, the status strategy keeping the rest, but a pod's status has its own
        (ValidatePodStatusUpdate); ``finalize``: a namespace's finalizers): the kind's update rules, then the
        finalizers an object being deleted may not gain."""
        if info.from_definition:
            causes = self._custom.validate(info, new, old)
        elif subresource == "finalize":
            causes = validate_namespace_finalize(new)
        elif subresource == "status" and info.kind == "Pod":
            causes = validate_pod_status_update(new, old, self._pod_status_rules)
        else:
            causes = validate_update(info.kind, new, old)
        causes += deletion.update_causes(old, new)
        if causes:
            raise Invalid(info.api_kind, str(old["metadata"].get("name") or ""), causes, group=info.group)

    def validate_annotations(self, info: KindInfo, obj: Obj, changed: Mapping[str, str | None]) -> None:
        """``Invalid`` when the annotations ``changed`` in ``obj`` (merged into a stored, validated object by a
        binding or a status write) are not valid ones."""
        causes = annotation_causes(obj, changed)
        if causes:
            raise Invalid(info.api_kind, str(obj["metadata"].get("name") or ""), causes, group=info.group)

    def validate_binding(self, name: str, node_name: str) -> None:
        """``Invalid`` when a Binding of the pod ``name`` names no node (ValidatePodBinding)."""
        if not node_name:
            raise Invalid("Binding", name, [invalid("target.name", node_name, "must not be empty")])

    def validate_event(self, event: Obj) -> None:
        """``Invalid`` when an Event the server records itself (its fields taken from stored objects, so neither
        decoded nor admitted: an Event has no defaults and no admission) may not be stored."""
        causes = validate_event(event)
        if causes:
            raise Invalid("Event", str(event["metadata"]["name"]), causes)

    # ------------------------------------------------------------------------------------------ managed fields

    def created_fields(self, info: KindInfo, body: Obj, manager: str, time: str) -> managed_fields.Entries:
        """The managedFields of a new object: ``manager`` owns every field it sent (defaults included, before
        admission adds its own)."""
        return managed_fields.track_update(info, None, body, [], manager, None, time)

    def track_fields(
        self,
        info: KindInfo,
        old: Obj,
        new: Obj,
        subresource: str | None,
        manager: str,
        managed: managed_fields.Entries | None,
        sent_managed: Any,
        time: str,
    ) -> None:
        """Set ``new``'s managedFields: ``managed`` as given (an apply), else ``manager``'s update at ``time``
        tracked over the entries the client sent (through the main resource only) or, without any, the stored
        ones."""
        old_managed = old["metadata"].get("managedFields") or []
        if managed is None:
            base = managed_fields.decoded(sent_managed) if subresource is None else None
            managed = managed_fields.track_update(
                info, old, new, old_managed if base is None else base, manager, subresource, time
            )
        elif managed != old_managed and managed_fields.same_ignoring_times(managed, old_managed):
            managed = old_managed  # an apply that changes nothing keeps the old times, so nothing is written
        if managed:
            new["metadata"]["managedFields"] = managed
        else:
            new["metadata"].pop("managedFields", None)

    # ------------------------------------------------------------------------------------------ the server's own

    def new_namespace(self, name: str) -> Obj:
        """The Namespace a write into the missing namespace ``name`` creates (the store's auto-creation), defaulted
        and validated as a client's would be."""
        obj: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        defaults.default_namespace(obj)
        causes = VALIDATORS["Namespace"](obj)
        if causes:
            raise Invalid("Namespace", name, causes)
        return obj

    def builtin_objects(self) -> list[tuple[KindInfo, Obj]]:
        """The namespaces and priority classes every cluster starts with, defaulted (known valid)."""
        objects: list[tuple[KindInfo, Obj]] = []
        for name in defaults.SYSTEM_NAMESPACES:
            namespace: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            defaults.default_namespace(namespace)
            objects.append((BY_KIND["Namespace"], namespace))
        for class_ in defaults.SYSTEM_PRIORITY_CLASSES:
            priority_class = admit.own(class_)
            defaults.default_priority_class(priority_class)
            objects.append((BY_KIND["PriorityClass"], priority_class))
        return objects
