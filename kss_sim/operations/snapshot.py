"""Snapshot documents: kube-scheduler-simulator's export shape, kubectl multi-document YAML and ``v1 List``.

Parsing turns any of them into a flat list of :class:`Item` (kind, object, where it came from) plus an
optional scheduler configuration; nothing here touches the cluster.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from kss_sim.cluster.errors import BadRequest, Cause, Invalid, invalid
from kss_sim.cluster.kinds import workload_v1beta1
from kss_sim.cluster.kinds.registry import BY_KIND, POD_GROUP_V1ALPHA2, WORKLOAD_V1ALPHA2, info_for
from kss_sim.kube import go_yaml
from kss_sim.kube.objects import Obj

# kube-scheduler-simulator's ResourcesForSnap keys (and ours for kinds it does not carry). Leases are left out: a
# node's heartbeat is runtime state its kubelet renews, not part of what the cluster is.
SNAPSHOT_KINDS: dict[str, str] = {
    "pods": "Pod",
    "nodes": "Node",
    "pvs": "PersistentVolume",
    "pvcs": "PersistentVolumeClaim",
    "storageClasses": "StorageClass",
    "priorityClasses": "PriorityClass",
    "namespaces": "Namespace",
    "csiNodes": "CSINode",
    "podDisruptionBudgets": "PodDisruptionBudget",
    "podGroups": "PodGroup",
    "workloads": "Workload",
    # v1.36's scheduling.k8s.io/v1alpha2 kinds (a run serves either v1alpha1's Workload or these), and the same
    # kinds as v1.37 serves them, in v1beta1 (``EXPORTED_MINORS``).
    "workloadsV1alpha2": WORKLOAD_V1ALPHA2,
    "podGroupsV1alpha2": POD_GROUP_V1ALPHA2,
    "workloadsV1beta1": WORKLOAD_V1ALPHA2,
    "podGroupsV1beta1": POD_GROUP_V1ALPHA2,
    "deployments": "Deployment",
    "replicaSets": "ReplicaSet",
    "statefulSets": "StatefulSet",
    "daemonSets": "DaemonSet",
    "jobs": "Job",
    "cronJobs": "CronJob",
    "deviceClasses": "DeviceClass",
    "resourceSlices": "ResourceSlice",
    "resourceClaimTemplates": "ResourceClaimTemplate",
    "resourceClaims": "ResourceClaim",
    "customResourceDefinitions": "CustomResourceDefinition",
}
SCHEDULER_CONFIG_KEY = "schedulerConfig"
# Keys whose kind is stored in one form and served in another by version: the minor versions (first, last) that
# export under each (import reads every key at every version).
EXPORTED_MINORS: dict[str, tuple[int, int | None]] = {
    "workloadsV1alpha2": (0, 36),
    "podGroupsV1alpha2": (0, 36),
    "workloadsV1beta1": (37, None),
    "podGroupsV1beta1": (37, None),
}
_V1BETA1_WORKLOAD_API = "scheduling.k8s.io/v1beta1"
# The objects of every CRD's kind, whatever their kind (each carries its apiVersion and kind).
CUSTOM_RESOURCES_KEY = "customResources"
# Export key order as kube-scheduler-simulator writes it; our extra kinds last.
EXPORT_ORDER = (
    "pods",
    "nodes",
    "pvs",
    "pvcs",
    "storageClasses",
    "priorityClasses",
    SCHEDULER_CONFIG_KEY,
    "namespaces",
    "csiNodes",
    "podDisruptionBudgets",
    "podGroups",
    "workloads",
    "workloadsV1alpha2",
    "podGroupsV1alpha2",
    "workloadsV1beta1",
    "podGroupsV1beta1",
    "deployments",
    "replicaSets",
    "statefulSets",
    "daemonSets",
    "jobs",
    "cronJobs",
    "deviceClasses",
    "resourceSlices",
    "resourceClaimTemplates",
    "resourceClaims",
    "customResourceDefinitions",
    CUSTOM_RESOURCES_KEY,
)
# Creation order: what an object refers to exists before it (namespaces, classes, claims, nodes, owners before
# what they own: CronJob > Job > Pod, Deployment > ReplicaSet > Pod; device classes and slices before the pods that
# use them, ResourceClaims after the pods that own them so their ownerReferences point at the new pods).
CREATE_ORDER = (
    "Namespace",
    "CustomResourceDefinition",  # its kinds' objects (not listed here) come after every listed kind
    "ClusterRole",
    "ClusterRoleBinding",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "PriorityClass",
    "StorageClass",
    "CSIDriver",
    "CSIStorageCapacity",
    "DeviceClass",
    "PersistentVolumeClaim",
    "Node",
    "CSINode",
    "ResourceSlice",
    "ResourceClaimTemplate",
    "PersistentVolume",
    "VolumeAttachment",
    "Service",
    "Endpoints",
    "EndpointSlice",
    "PodDisruptionBudget",
    "PodGroup",
    "Workload",
    WORKLOAD_V1ALPHA2,
    POD_GROUP_V1ALPHA2,
    "CronJob",
    "Job",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "StatefulSet",
    "DaemonSet",
    "ControllerRevision",
    "HorizontalPodAutoscaler",
    "Pod",
    "ResourceClaim",
    "Event",
    "Lease",
)
SCHEDULER_CONFIG_KIND = "KubeSchedulerConfiguration"
# Fields the server sets; a snapshot's values for them would be refused or meaningless on another cluster.
SERVER_MANAGED = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")
# A Job's generated selector and template labels name its uid, which a new cluster gives anew.
JOB_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
RESULT_ANNOTATION_PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"


@dataclass(slots=True)
class Item:
    """One object to import: its kind, body (ours to change) and a path naming it in error messages."""

    path: str
    kind: str
    obj: Obj
    # The apiVersion the object came in when the store holds it in another (v1.37's scheduling.k8s.io/v1beta1).
    sent_api_version: str = ""

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace`` of a namespaced kind (default "default"), else None."""
        info = BY_KIND.get(self.kind)
        namespace = (self.obj.get("metadata") or {}).get("namespace")
        if info is None:  # a CRD's kind: its scope is the CRD's, so the object's own namespace (if any) stands
            return str(namespace) if namespace else None
        if not info.namespaced:
            return None
        return str(namespace or "default")

    @property
    def name(self) -> str:
        """``metadata.name`` ("" when missing)."""
        return str((self.obj.get("metadata") or {}).get("name") or "")

    @property
    def label(self) -> str:
        """``Kind namespace/name`` for messages."""
        ns = self.namespace
        name = self.name or "<no name>"
        return f"{self.kind} {ns}/{name}" if ns else f"{self.kind} {name}"


@dataclass(slots=True)
class Parsed:
    """What a document holds: objects, the scheduler configuration (if any), and what could not be read."""

    items: list[Item]
    scheduler_config: Obj | None
    errors: list[Cause]
    # Read as JSON: the items are plain JSON values no one else holds (YAML may hold dates, say), which a create
    # may then take as they are instead of copying them first.
    from_json: bool = False


def exported_at(key: str, minor: int) -> bool:
    """Whether an export at Kubernetes 1.``minor`` writes the snapshot key ``key`` (when its kind is served)."""
    first, last = EXPORTED_MINORS.get(key, (0, None))
    return first <= minor and (last is None or minor <= last)


def exported_object(kind: str, obj: Obj, minor: int) -> Obj:
    """A stored object of the registry's ``kind`` as an export at Kubernetes 1.``minor`` writes it: v1.37's
    Workload API in v1beta1, as its API serves it; any other as stored."""
    if kind not in (WORKLOAD_V1ALPHA2, POD_GROUP_V1ALPHA2) or minor < 37:
        return obj
    return workload_v1beta1.in_served_version(kind, obj, minor)


def load_documents(text: str, what: str = "the snapshot") -> list[Any]:
    """Every document in ``text`` (JSON, or YAML with ``---`` separators), parsed safely; ``BadRequest`` naming
    ``what`` when it is neither."""
    return _load(text, what)[0]


def _load(text: str, what: str) -> tuple[list[Any], bool]:
    """``load_documents`` and whether ``text`` was JSON."""
    if text.lstrip().startswith(("{", "[")):
        try:
            return [orjson.loads(text)], True
        except orjson.JSONDecodeError:
            pass  # YAML flow style also starts with "{"
    try:
        return [d for d in go_yaml.load_all(text) if d is not None], False
    except yaml.YAMLError as exc:
        raise BadRequest(f"{what} is neither JSON nor YAML: {exc}") from None
    except RecursionError:  # PyYAML's constructor recurses once per level of nesting
        raise BadRequest(f"{what} nests too deep: exceeded max depth") from None


def is_snapshot(doc: Any) -> bool:
    """Whether ``doc`` has kube-scheduler-simulator's snapshot shape (no ``kind``, resource lists by key)."""
    return (
        isinstance(doc, dict)
        and "kind" not in doc
        and any(k in doc for k in (*SNAPSHOT_KINDS, SCHEDULER_CONFIG_KEY, CUSTOM_RESOURCES_KEY))
    )


def parse(text: str) -> Parsed:
    """Read a snapshot, a multi-document kubectl YAML file or a ``List``; ``BadRequest`` if unreadable."""
    docs, from_json = _load(text, "the snapshot")
    if len(docs) == 1 and isinstance(docs[0], list):  # a bare JSON/YAML array of objects
        docs = docs[0]
    if not docs:
        raise BadRequest("the snapshot is empty")
    parsed = Parsed([], None, [], from_json)
    for index, doc in enumerate(docs):
        path = f"[{index}]" if len(docs) > 1 else ""
        if is_snapshot(doc):
            _add_snapshot(parsed, doc, path)
        else:
            _add_object(parsed, doc, path or "[0]", None)
    return parsed


def _add_snapshot(parsed: Parsed, doc: Obj, path: str) -> None:
    prefix = f"{path}." if path else ""
    for key, value in doc.items():
        if key == SCHEDULER_CONFIG_KEY:
            if value is None:
                continue
            if not isinstance(value, dict):
                parsed.errors.append(invalid(prefix + key, type(value).__name__, "must be an object"))
            else:
                _set_config(parsed, value, prefix + key)
            continue
        kind = SNAPSHOT_KINDS.get(key)
        if kind is None and key != CUSTOM_RESOURCES_KEY:
            parsed.errors.append(Cause(prefix + key, "FieldValueNotSupported", "unknown field in the snapshot"))
            continue
        if value is None:
            continue
        if not isinstance(value, list):
            parsed.errors.append(invalid(prefix + key, type(value).__name__, "must be a list"))
            continue
        for i, obj in enumerate(value):
            _add_object(parsed, obj, f"{prefix}{key}[{i}]", kind)


def _set_config(parsed: Parsed, config: Obj, path: str) -> None:
    if parsed.scheduler_config is not None:
        parsed.errors.append(Cause(path, "FieldValueDuplicate", "more than one scheduler configuration"))
    parsed.scheduler_config = config


def _add_object(parsed: Parsed, obj: Any, path: str, kind: str | None) -> None:
    if not isinstance(obj, dict):
        parsed.errors.append(invalid(path, type(obj).__name__, "must be a Kubernetes object"))
        return
    given = obj.get("kind")
    if isinstance(given, str) and given.endswith("List") and isinstance(obj.get("items"), list):
        item_kind = _registry_kind(given[: -len("List")], obj.get("apiVersion"), None)
        for i, item in enumerate(obj["items"]):
            if obj.get("apiVersion") == _V1BETA1_WORKLOAD_API and isinstance(item, dict):
                # Typed Go exports omit an item's apiVersion: the list's says which form the item is in.
                item = {"apiVersion": _V1BETA1_WORKLOAD_API, "kind": given[: -len("List")], **item}
            _add_object(parsed, item, f"{path}.items[{i}]", item_kind if item_kind in BY_KIND else None)
        return
    sent_api_version = str(obj.get("apiVersion") or "")
    if sent_api_version == _V1BETA1_WORKLOAD_API and given in ("Workload", "PodGroup"):
        try:
            obj = workload_v1beta1.in_stored_version(obj)  # v1.37's form, held as v1.36's, whose kind it then has
        except Invalid as exc:
            parsed.errors += [Cause(f"{path}.{c.field}", c.reason, c.message) for c in exc.causes]
            return
    if given == SCHEDULER_CONFIG_KIND:
        _set_config(parsed, obj, path)
        return
    kind = _registry_kind(given, obj.get("apiVersion"), kind)
    if kind is None:
        parsed.errors.append(Cause(f"{path}.kind", "FieldValueRequired", "Required value: the object has no kind"))
        return
    info = BY_KIND.get(kind)
    if info is None:
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        if "." in group:  # a CRD's kind, stored as Kind.group: the import finds out whether its CRD is there
            parsed.items.append(Item(path, f"{kind}.{group}", dict(obj)))
            return
        parsed.errors.append(
            Cause(f"{path}.kind", "FieldValueNotSupported", f"kind {kind!r} is not served by the virtual cluster")
        )
        return
    # Typed Go exports omit apiVersion/kind on list elements; fill them in from where the object came from.
    body = {"apiVersion": obj.get("apiVersion") or info.api_version, "kind": info.api_kind, **obj}
    body["apiVersion"] = body["apiVersion"] or info.api_version
    if str(body["apiVersion"]).startswith("resource.k8s.io/v1beta"):
        # Imported here: the conversions live with the API's views, which the commands reading files do not load.
        from kss_sim.cluster.api.dra_versions import in_stored_version

        body = in_stored_version(body)
    parsed.items.append(Item(path, kind, body, sent_api_version))


def workload_api_refusal(item: Item, minor: int) -> str | None:
    """Why Kubernetes 1.``minor`` does not take ``item``, a v1.36 or v1.37 Workload API object (both stored in
    v1.36's form) in a version that release does not serve, as its API would not; None when it does."""
    if item.kind not in (WORKLOAD_V1ALPHA2, POD_GROUP_V1ALPHA2):
        return None
    sent = item.sent_api_version or str(item.obj.get("apiVersion") or "")
    served = _V1BETA1_WORKLOAD_API if minor >= 37 else "scheduling.k8s.io/v1alpha2"
    if sent == served:
        return None
    kind = str(item.obj.get("kind") or "")
    has = f" (it has {served})" if minor >= 36 else ""  # v1.35 has neither: the store words that refusal itself
    return f"the kind {kind} ({sent}) is not served: Kubernetes v1.{minor} does not have it{has}"


def _registry_kind(given: Any, api_version: Any, fallback: str | None) -> str | None:
    """The registry's name for an object saying ``kind: given`` (and maybe ``apiVersion``), found where it came
    from as ``fallback``: its apiVersion tells v1.35's Workload from v1.36's, else where it was found does."""
    if not isinstance(given, str) or not given:
        return fallback
    if isinstance(api_version, str) and api_version:
        typed = info_for(api_version, given)
        if typed is not None:
            return typed.kind
    if fallback is not None and fallback in BY_KIND and BY_KIND[fallback].api_kind == given:
        return fallback
    return given


def clean(item: Item, *, unbind: bool) -> None:
    """Drop server-managed fields; with ``unbind``, a pod loses its node, status and result annotations, and a
    ResourceClaim its allocation."""
    meta = item.obj.get("metadata")
    if not isinstance(meta, dict):
        return
    for field in SERVER_MANAGED:
        meta.pop(field, None)
    if meta.get("deletionTimestamp") is not None:
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
    if item.kind == "Job":
        _forget_job_uid(item.obj)
    if unbind and item.kind == "ResourceClaim":
        # Its allocation names devices on the node its pods left: allocated again when they are placed.
        item.obj.pop("status", None)
    if unbind and item.kind == "Pod":
        spec = item.obj.get("spec")
        if isinstance(spec, dict):
            spec.pop("nodeName", None)
        item.obj.pop("status", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            kept = {k: v for k, v in annotations.items() if not str(k).startswith(RESULT_ANNOTATION_PREFIX)}
            if kept:
                meta["annotations"] = kept
            else:
                meta.pop("annotations", None)


def _without_uid_labels(labels: Any) -> Any:
    if not isinstance(labels, dict):
        return labels
    return {k: v for k, v in labels.items() if k not in JOB_UID_LABELS}


def _forget_job_uid(job: Obj) -> None:
    """A Job whose selector was generated loses the uid labels of its old self, so the server generates them for
    the uid it gets now (kept, they would contradict it and be refused)."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector"):
        return
    meta = job.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("labels"), dict):
        meta["labels"] = _without_uid_labels(meta["labels"])
    template_meta = (spec.get("template") or {}).get("metadata") if isinstance(spec.get("template"), dict) else None
    if isinstance(template_meta, dict) and isinstance(template_meta.get("labels"), dict):
        template_meta["labels"] = _without_uid_labels(template_meta["labels"])
    selector = spec.get("selector")
    if isinstance(selector, dict):
        match_labels = _without_uid_labels(selector.get("matchLabels"))
        if match_labels or selector.get("matchExpressions"):
            selector["matchLabels"] = match_labels
        else:
            spec.pop("selector")


def keep_generated_selector(job: Obj, stored: Obj) -> None:
    """A Job replacing the stored Job of its name keeps the selector and template labels the API generated at the
    stored one's create (``_forget_job_uid`` took them off the snapshot; both are immutable, so the update without
    them was refused), as ``kubectl apply`` keeps fields it did not set."""
    spec, stored_spec = job.get("spec"), stored.get("spec") or {}
    if not isinstance(spec, dict) or spec.get("manualSelector") or stored_spec.get("manualSelector"):
        return
    if isinstance(stored_spec.get("selector"), dict):
        spec.setdefault("selector", copy.deepcopy(stored_spec["selector"]))
    stored_labels = ((stored_spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    for label in (*JOB_UID_LABELS, "job-name", "batch.kubernetes.io/job-name"):
        if label in stored_labels:
            labels.setdefault(label, stored_labels[label])


def ordered(items: list[Item]) -> list[Item]:
    """``items`` in creation order (stable within a kind)."""
    rank = {kind: i for i, kind in enumerate(CREATE_ORDER)}
    return sorted(items, key=lambda it: rank.get(it.kind, len(rank)))


def dump(snapshot: Obj, fmt: str) -> str:
    """``snapshot`` as JSON (indented) or YAML."""
    if fmt == "yaml":
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return yaml.dump(snapshot, Dumper=dumper, sort_keys=False, allow_unicode=True)
    if fmt == "json":
        return orjson.dumps(snapshot, option=orjson.OPT_INDENT_2).decode()
    raise BadRequest(f"unsupported format {fmt!r}: supported values: json, yaml")
