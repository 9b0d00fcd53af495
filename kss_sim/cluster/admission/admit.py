"""What kube-apiserver does to a request's object around validation: decode it into the kind's canonical form
(kind and apiVersion checked, keys in order, decodable, defaults applied) and the admission the virtual cluster
implements (on create: priority, default storage class, a new object's status; on delete: built-in objects stay).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from kss_sim.cluster.admission import go_values
from kss_sim.cluster.admission.decode_types import check_types, first_beyond_float64
from kss_sim.cluster.admission.defaults import autoscaling as defaults_autoscaling
from kss_sim.cluster.admission.defaults import core as defaults
from kss_sim.cluster.admission.defaults import dra as defaults_dra
from kss_sim.cluster.admission.defaults import stored as defaults_stored
from kss_sim.cluster.admission.defaults import workloads as defaults_workloads
from kss_sim.cluster.admission.go_values import json_copy
from kss_sim.cluster.admission.quantities import canonicalize_quantities

# Importing them registers their kinds' validators in core's tables.
from kss_sim.cluster.admission.validation import apps, autoscaling, batch, coordination, stored  # noqa: F401
from kss_sim.cluster.admission.validation.decoding import check_decodable, check_workload_decodable
from kss_sim.cluster.admission.validation.dra import check_dra_decodable
from kss_sim.cluster.errors import BadRequest, Forbidden
from kss_sim.cluster.kinds.registry import POD_GROUP_V1ALPHA2, WORKLOAD_V1ALPHA2, Gates, KindInfo
from kss_sim.cluster.kinds.stored import StoredObject
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import gate_enabled

_KINDS_WITH_SPEC = frozenset(
    {
        WORKLOAD_V1ALPHA2,
        POD_GROUP_V1ALPHA2,
        "Namespace",
        "Node",
        "Pod",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "CSINode",
        "PodDisruptionBudget",
        "Workload",
        *defaults_workloads.DEFAULTERS,
        *defaults_dra.DEFAULTERS,
        *defaults_stored.WITH_SPEC,
        *defaults_autoscaling.DEFAULTERS,
    }
)
_PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
NAMESPACE_FINALIZER = "kubernetes"  # v1.FinalizerKubernetes: the namespace controller's


def own(obj: Any) -> Obj:
    """A private deep copy of a JSON-like object (and proof that it is JSON)."""
    if not isinstance(obj, dict):
        raise BadRequest("the body of the request must be a JSON object")
    try:
        result: Obj = json_copy(obj)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise BadRequest(f"the object is not valid JSON: {exc}") from None
    return result


def decode(
    info: KindInfo, obj: Any, *, owned: bool = False, status_only: bool = False, kube_version: str | None = None
) -> Obj:
    """A private copy of a request's ``obj`` in ``info``'s canonical form, defaults applied; ``BadRequest`` if it
    is not one of that kind. ``owned``: ``obj`` is plain JSON (just parsed) that the caller gives away, so it is
    taken as it is, not copied first (its top level is rebuilt anyway). ``status_only``: ``obj`` is a stored object
    with a new status (the scheduler's and the kubelet's status writes): only the status's types are checked, so an
    object stored before the type check (an older database) can still be told why it does not schedule.
    ``kube_version``: the release whose schema decodes the body (None: the default)."""
    body = obj if owned and isinstance(obj, dict) else own(obj)
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if kind is not None and kind != info.api_kind:
        raise BadRequest(f"the object provided is unrecognized (must be of type {info.api_kind}): kind {kind!r}")
    if api_version is not None and api_version != info.api_version:
        raise BadRequest(
            f"the API version in the data ({api_version}) does not match the expected API version ({info.api_version})"
        )
    body.pop("apiVersion", None)
    body.pop("kind", None)
    # Field order as kube-apiserver prints it: apiVersion, kind, metadata first.
    metadata = body.pop("metadata", None)  # null: no metadata, as Go decodes it
    body = {"apiVersion": info.api_version, "kind": info.api_kind, "metadata": {} if metadata is None else metadata,
            **body}  # fmt: skip
    if not info.custom:  # a custom resource is decoded as unstructured: its schema judges it (422)
        checked = {"status": body.get("status")} if status_only else body
        check_types(info.kind, checked, version=info.version, kube_version=kube_version, api_kind=info.api_kind)
    elif (problem := first_beyond_float64(body)) is not None:  # the one number unstructured decoding refuses
        kind = info.api_kind
        raise BadRequest(f'{kind} in version "{info.version}" cannot be handled as a {kind}: {problem}')
    check_decodable(info.api_kind, body, version=info.version, custom=info.custom)
    if info.kind == "ControllerRevision" and "data" in body and go_values.read_beyond_float64():
        body["data"] = go_values.keep_beyond_float64(body["data"])  # RAW_KEPT_AS_SENT: stored as it was sent
    if info.kind in defaults_workloads.DEFAULTERS:
        check_workload_decodable(info.kind, info.version, body)
    elif info.kind in defaults_dra.DRA_KINDS:
        check_dra_decodable(info.kind, body)
    # Go renders non-pointer structs even when empty, so these keys are always present in kube's JSON (not in a
    # custom resource's: it is kept as sent).
    if info.kind in _KINDS_WITH_SPEC:
        body.setdefault("spec", {})
    if info.has_status and not info.custom:
        body.setdefault("status", {})
    defaulter = (
        defaults.DEFAULTERS.get(info.kind)
        or defaults_workloads.DEFAULTERS.get(info.kind)
        or defaults_dra.DEFAULTERS.get(info.kind)
        or defaults_stored.DEFAULTERS.get(info.kind)
        or defaults_autoscaling.DEFAULTERS.get(info.kind)
    )
    if defaulter is not None:
        defaulter(body)
    # Quantities are stored as Quantity.String() renders them (64000m -> 64), as kube-apiserver re-encodes them.
    canonicalize_quantities(info.kind, body)
    return body


def prepare_create(
    info: KindInfo,
    body: Obj,
    objects: Mapping[str, Mapping[tuple[str, str], StoredObject]],
    timestamp: Callable[[], str],
    gates: Gates,
) -> None:
    """Admission on create, in place: what the API server's plugins and controllers set on a new object (``objects``
    is the working state, ``timestamp`` gives the time now, ``gates`` the feature gates); ``Forbidden`` when
    admission refuses it."""
    if info.kind == "Pod":
        defaults.prepare_pod_create(body, [e.obj for e in objects["PriorityClass"].values()])
    elif info.kind == "PersistentVolumeClaim":
        defaults.prepare_pvc_create(body, [e.obj for e in objects["StorageClass"].values()])
    elif info.kind == "PodDisruptionBudget":
        defaults.prepare_pdb_create(body)
    elif info.kind == "HorizontalPodAutoscaler":
        defaults_autoscaling.prepare_create(body)
    elif info.kind == "PersistentVolume":
        # No PV controller runs here: a new volume is Available at once, as the controller would make it
        # (left Pending, no static volume could ever be chosen by VolumeBinding).
        body["status"] = {"phase": "Available"}
    elif info.kind == "Namespace":
        body["status"] = {"phase": "Active"}
        # namespaceStrategy.PrepareForCreate: ``kubernetes`` is required on create, whatever else was asked for.
        spec = body.setdefault("spec", {})
        finalizers = list(spec.get("finalizers") or [])
        if NAMESPACE_FINALIZER not in finalizers:
            spec["finalizers"] = [*finalizers, NAMESPACE_FINALIZER]
    elif info.kind == POD_GROUP_V1ALPHA2:
        if gate_enabled(dict(gates), "WorkloadAwarePreemption"):
            defaults.admit_pod_group_priority(body, [e.obj for e in objects["PriorityClass"].values()])
        body["status"] = {}  # set by the scheduler alone (its status subresource)
    elif info.kind in defaults_workloads.WORKLOAD_KINDS:
        defaults_workloads.prepare_workload_create(info.kind, body)
    elif info.kind in defaults_dra.DRA_KINDS:
        defaults_dra.prepare_create(info.kind, body)
    elif info.custom and "status" in info.subresources:
        # A custom resource with a status subresource ignores the status sent on create.
        body.pop("status", None)
    elif info.kind == "Node":
        status = body.setdefault("status", {})
        if not status.get("conditions"):
            # Simulated nodes have no kubelet; they report Ready so tools show them as usable.
            now = timestamp()
            status["conditions"] = [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                    "reason": "KubeletReady",
                    "message": "simulated node is ready",
                }
            ]
    elif info.kind == "PriorityClass" and body.get("globalDefault"):
        for pc in objects["PriorityClass"].values():
            if pc.obj.get("globalDefault"):
                raise Forbidden(
                    "priorityclasses",
                    str(body["metadata"].get("name", "")),
                    f"PriorityClass {pc.name} is already marked as default. Only one default can exist",
                    group="scheduling.k8s.io",
                )


# v1.36's gated fields of a pod group (template or PodGroup spec) and their gates; DRAWorkloadResourceClaims is a
# gate kss does not know, so always off.
_GROUP_FIELD_GATES = {
    "schedulingConstraints": "TopologyAwareWorkloadScheduling",
    "resourceClaims": "DRAWorkloadResourceClaims",
    "disruptionMode": "WorkloadAwarePreemption",
    "priorityClassName": "WorkloadAwarePreemption",
    "priority": "WorkloadAwarePreemption",
}


def _drop_disabled_group_fields(group: Obj, old: Obj | None, gates: Gates, *, template: bool) -> None:
    """dropDisabledPodGroupSpecFields (v1.36): a gated field goes unless its gate is on or ``old`` uses it."""
    for field, gate in _GROUP_FIELD_GATES.items():
        if field in group and not gate_enabled(dict(gates), gate) and not (old or {}).get(field):
            if template and field == "schedulingConstraints":
                group[field] = None  # a template renders it (no omitempty)
            else:
                del group[field]


# The pod's reference to its gang: ``workloadRef`` in v1.35, ``schedulingGroup`` from v1.36 (a version has one).
_POD_GROUP_REFERENCES = ("workloadRef", "schedulingGroup")


def drop_disabled_fields(info: KindInfo, body: Obj, old: Obj | None, gates: Gates) -> None:
    """kube-apiserver's dropDisabledFields, in place: a pod's ``spec.workloadRef`` (v1.35) or
    ``spec.schedulingGroup`` (v1.36) is kept only while the GenericWorkload gate is on, or when the pod being
    updated already has one; the DRA kinds' gated fields as their strategies drop them (defaults_dra)."""
    if info.kind in defaults_dra.DRA_KINDS:
        defaults_dra.drop_disabled_fields(info.kind, body, old, gates)
        return
    if info.kind == WORKLOAD_V1ALPHA2:
        olds = {str(t.get("name")): t for t in ((old or {}).get("spec") or {}).get("podGroupTemplates") or []}
        for template in (body.get("spec") or {}).get("podGroupTemplates") or []:
            if isinstance(template, dict):
                _drop_disabled_group_fields(template, olds.get(str(template.get("name"))), gates, template=True)
        return
    if info.kind == POD_GROUP_V1ALPHA2:
        spec, old_spec = body.get("spec"), (old or {}).get("spec")
        if isinstance(spec, dict):
            _drop_disabled_group_fields(spec, old_spec, gates, template=False)
        status = body.get("status")
        if isinstance(status, dict) and not (old_spec or {}).get("resourceClaims"):
            status.pop("resourceClaimStatuses", None)
        return
    if info.kind != "Pod" or gate_enabled(dict(gates), "GenericWorkload"):
        return
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return
    for field in _POD_GROUP_REFERENCES:
        if field in spec and (old is None or (old.get("spec") or {}).get(field) is None):
            del spec[field]


def prepare_namespace_update(new: Obj, old: Obj, subresource: str | None) -> None:
    """The namespace strategies' PrepareForUpdate, in place: a plain update keeps the stored ``spec.finalizers``
    (and status: the store keeps it for every kind with a status), so only the ``finalize`` subresource changes
    them; the ``status`` subresource keeps the whole spec (the store's status path already does)."""
    if subresource is not None:
        return
    old_spec = old.get("spec")
    if not isinstance(old_spec, dict):
        old_spec = {}
    spec = new.get("spec")
    if not isinstance(spec, dict):
        spec = new["spec"] = {}
    if "finalizers" in old_spec:
        spec["finalizers"] = old_spec["finalizers"]
    else:
        spec.pop("finalizers", None)


def prepare_pod_status_update(new: Obj, old: Obj) -> None:
    """The pod status strategy's PrepareForUpdate, in place, for what storage does not already keep from ``old``
    (the spec; the metadata fields every update keeps): the ownerReferences are ``old``'s (old kubelets corrupted
    them), and the QoS class, set on create and immutable, is taken from ``old`` when the write leaves it out (old
    kubelets dropped it)."""
    new_meta, old_meta = new.get("metadata"), old.get("metadata") or {}
    if isinstance(new_meta, dict):
        if "ownerReferences" in old_meta:
            new_meta["ownerReferences"] = old_meta["ownerReferences"]
        else:
            new_meta.pop("ownerReferences", None)
    old_qos = (old.get("status") or {}).get("qosClass")
    status = new.get("status")
    if not old_qos or (isinstance(status, dict) and status.get("qosClass")):
        return
    new["status"] = {**status, "qosClass": old_qos} if isinstance(status, dict) else {"qosClass": old_qos}


def protected(info: KindInfo, entry: StoredObject) -> bool:
    """True for the built-in namespaces and priority classes, which may not be deleted."""
    if info.kind == "Namespace":
        return entry.name in _PROTECTED_NAMESPACES
    return info.kind == "PriorityClass" and entry.name in {
        pc["metadata"]["name"] for pc in defaults.SYSTEM_PRIORITY_CLASSES
    }


def check_deletable(info: KindInfo, entry: StoredObject) -> None:
    """``Forbidden`` if ``entry`` is a built-in object that may not be deleted."""
    if not protected(info, entry):
        return
    detail = "this namespace may not be deleted" if info.kind == "Namespace" else "this is a built-in class"
    raise Forbidden(info.plural, entry.name, detail, group=info.group)
