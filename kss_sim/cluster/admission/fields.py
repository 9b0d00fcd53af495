"""The fields of every served kind, for kube-apiserver's field validation (``fieldValidation``).

kube-apiserver decodes bodies into typed objects: a field the type does not have is reported (``Strict``: the
request fails with ``strict decoding error: unknown field "spec.nodeSelecter"``; ``Warn``, the default: a
``Warning`` header) and is not stored. For a scheduler simulator a silently kept typo in a scheduling field
(``nodeSelecter``, ``tolerations[0].efect``) would place pods where the real cluster never would.

The field tree comes from the official ``kubernetes`` client's models (the API types of a release at least as
new as v1.35) and is kept in ``field_schema.json``: ``python -m kss_sim.cluster.admission.fields`` regenerates it, and
``tests/cluster/test_fields.py`` checks it matches the installed client. What the client has no model for is
written here (``EXTRA_MODELS``, ``EXTRA_FIELDS``): the PodGroup CRD of scheduler-plugins, v1.35's alpha
scheduling.k8s.io/v1alpha1 Workload and the pod's ``spec.workloadRef``, v1.36's scheduling.k8s.io/v1alpha2 Workload
and PodGroup (later clients carry newer versions). Fields only some Kubernetes versions have are in
``VERSIONED_FIELDS``: the pod's ``spec.workloadRef`` (v1.35) gave way to ``spec.schedulingGroup`` (v1.36).
A field the client lacks is still known when the run's release has it: the walk follows that release's decoding
schema (``decode_types``, from its OpenAPI document) beside the client's tree, so a release newer than the client
(v1.36's ``bools`` of a device attribute) keeps its fields and decodes them.
"""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from kss_sim.cluster.admission import decode_types
from kss_sim.cluster.kinds.registry import minor_of

SCHEMA_FILE = Path(__file__).with_name("field_schema.json")

# Served kind -> the client's model of it.
ROOT_MODELS = {
    "Namespace": "V1Namespace",
    "Node": "V1Node",
    "Pod": "V1Pod",
    "PersistentVolume": "V1PersistentVolume",
    "PersistentVolumeClaim": "V1PersistentVolumeClaim",
    "Event": "CoreV1Event",
    "StorageClass": "V1StorageClass",
    "CSINode": "V1CSINode",
    "PriorityClass": "V1PriorityClass",
    "PodDisruptionBudget": "V1PodDisruptionBudget",
    "PodGroup": "scheduling.x-k8s.io/v1alpha1.PodGroup",
    "Workload": "scheduling.k8s.io/v1alpha1.Workload",
    "Workload.v1alpha2": "scheduling.k8s.io/v1alpha2.Workload",
    "PodGroup.v1alpha2": "scheduling.k8s.io/v1alpha2.PodGroup",
    "Deployment": "V1Deployment",
    "ReplicaSet": "V1ReplicaSet",
    "StatefulSet": "V1StatefulSet",
    "DaemonSet": "V1DaemonSet",
    "ControllerRevision": "V1ControllerRevision",
    "Job": "V1Job",
    "CronJob": "V1CronJob",
    "HorizontalPodAutoscaler": "V2HorizontalPodAutoscaler",
    "Lease": "V1Lease",
    "DeviceClass": "V1DeviceClass",
    "ResourceSlice": "V1ResourceSlice",
    "ResourceClaim": "ResourceV1ResourceClaim",
    "ResourceClaimTemplate": "V1ResourceClaimTemplate",
    "ConfigMap": "V1ConfigMap",
    "Secret": "V1Secret",
    "ServiceAccount": "V1ServiceAccount",
    "Service": "V1Service",
    "Endpoints": "V1Endpoints",
    "ReplicationController": "V1ReplicationController",
    "CSIDriver": "V1CSIDriver",
    "CSIStorageCapacity": "V1CSIStorageCapacity",
    "VolumeAttachment": "V1VolumeAttachment",
    "EndpointSlice": "V1EndpointSlice",
    "Role": "V1Role",
    "RoleBinding": "V1RoleBinding",
    "ClusterRole": "V1ClusterRole",
    "ClusterRoleBinding": "V1ClusterRoleBinding",
    "TokenReview": "V1TokenReview",
    "SubjectAccessReview": "V1SubjectAccessReview",
    "SelfSubjectAccessReview": "V1SelfSubjectAccessReview",
    "CustomResourceDefinition": "V1CustomResourceDefinition",
}

# Models the installed client lacks, in the schema's notation (see below); keys name the API type.
_OBJECT_ROOT = {"apiVersion": "", "kind": "", "metadata": "V1ObjectMeta"}
EXTRA_MODELS: dict[str, dict[str, str]] = {
    "scheduling.x-k8s.io/v1alpha1.PodGroup": {
        **_OBJECT_ROOT,
        "spec": "scheduling.x-k8s.io/v1alpha1.PodGroupSpec",
        "status": "scheduling.x-k8s.io/v1alpha1.PodGroupStatus",
    },
    "scheduling.x-k8s.io/v1alpha1.PodGroupSpec": {"minMember": "", "minResources": "", "scheduleTimeoutSeconds": ""},
    "scheduling.x-k8s.io/v1alpha1.PodGroupStatus": {
        "failed": "",
        "occupiedBy": "",
        "phase": "",
        "running": "",
        "scheduleStartTime": "",
        "succeeded": "",
    },
    "scheduling.k8s.io/v1alpha1.Workload": {**_OBJECT_ROOT, "spec": "scheduling.k8s.io/v1alpha1.WorkloadSpec"},
    "scheduling.k8s.io/v1alpha1.WorkloadSpec": {
        "controllerRef": "scheduling.k8s.io/v1alpha1.TypedLocalObjectReference",
        "podGroups": "[scheduling.k8s.io/v1alpha1.PodGroup",
    },
    "scheduling.k8s.io/v1alpha1.TypedLocalObjectReference": {"apiGroup": "", "kind": "", "name": ""},
    "scheduling.k8s.io/v1alpha1.PodGroup": {"name": "", "policy": "scheduling.k8s.io/v1alpha1.PodGroupPolicy"},
    "scheduling.k8s.io/v1alpha1.PodGroupPolicy": {
        "basic": "scheduling.k8s.io/v1alpha1.BasicSchedulingPolicy",
        "gang": "scheduling.k8s.io/v1alpha1.GangSchedulingPolicy",
    },
    "scheduling.k8s.io/v1alpha1.BasicSchedulingPolicy": {},
    "scheduling.k8s.io/v1alpha1.GangSchedulingPolicy": {"minCount": ""},
    "core/v1.WorkloadReference": {"name": "", "podGroup": "", "podGroupReplicaKey": ""},
    # v1.36 (k8s.io/api/scheduling/v1alpha2).
    "scheduling.k8s.io/v1alpha2.Workload": {**_OBJECT_ROOT, "spec": "scheduling.k8s.io/v1alpha2.WorkloadSpec"},
    "scheduling.k8s.io/v1alpha2.WorkloadSpec": {
        "controllerRef": "scheduling.k8s.io/v1alpha1.TypedLocalObjectReference",
        "podGroupTemplates": "[scheduling.k8s.io/v1alpha2.PodGroupTemplate",
    },
    "scheduling.k8s.io/v1alpha2.PodGroupTemplate": {
        "name": "",
        "schedulingPolicy": "scheduling.k8s.io/v1alpha2.PodGroupSchedulingPolicy",
        "schedulingConstraints": "scheduling.k8s.io/v1alpha2.PodGroupSchedulingConstraints",
        "resourceClaims": "[scheduling.k8s.io/v1alpha2.PodGroupResourceClaim",
        "disruptionMode": "",
        "priorityClassName": "",
        "priority": "",
    },
    "scheduling.k8s.io/v1alpha2.PodGroupSchedulingPolicy": {
        "basic": "scheduling.k8s.io/v1alpha1.BasicSchedulingPolicy",
        "gang": "scheduling.k8s.io/v1alpha1.GangSchedulingPolicy",
    },
    "scheduling.k8s.io/v1alpha2.PodGroupSchedulingConstraints": {
        "topology": "[scheduling.k8s.io/v1alpha2.TopologyConstraint"
    },
    "scheduling.k8s.io/v1alpha2.TopologyConstraint": {"key": ""},
    "scheduling.k8s.io/v1alpha2.PodGroupResourceClaim": {
        "name": "",
        "resourceClaimName": "",
        "resourceClaimTemplateName": "",
    },
    "scheduling.k8s.io/v1alpha2.PodGroup": {
        **_OBJECT_ROOT,
        "spec": "scheduling.k8s.io/v1alpha2.PodGroupSpec",
        "status": "scheduling.k8s.io/v1alpha2.PodGroupStatus",
    },
    "scheduling.k8s.io/v1alpha2.PodGroupSpec": {
        "podGroupTemplateRef": "scheduling.k8s.io/v1alpha2.PodGroupTemplateReference",
        "schedulingPolicy": "scheduling.k8s.io/v1alpha2.PodGroupSchedulingPolicy",
        "schedulingConstraints": "scheduling.k8s.io/v1alpha2.PodGroupSchedulingConstraints",
        "resourceClaims": "[scheduling.k8s.io/v1alpha2.PodGroupResourceClaim",
        "disruptionMode": "",
        "priorityClassName": "",
        "priority": "",
    },
    "scheduling.k8s.io/v1alpha2.PodGroupTemplateReference": {
        "workload": "scheduling.k8s.io/v1alpha2.WorkloadPodGroupTemplateReference"
    },
    "scheduling.k8s.io/v1alpha2.WorkloadPodGroupTemplateReference": {"workloadName": "", "podGroupTemplateName": ""},
    "scheduling.k8s.io/v1alpha2.PodGroupStatus": {
        "conditions": "[V1Condition",
        "resourceClaimStatuses": "[scheduling.k8s.io/v1alpha2.PodGroupResourceClaimStatus",
    },
    "scheduling.k8s.io/v1alpha2.PodGroupResourceClaimStatus": {"name": "", "resourceClaimName": ""},
}
# Fields of the client's models that v1.35 has and the installed client may not.
EXTRA_FIELDS: dict[str, dict[str, str]] = {"V1PodSpec": {"workloadRef": "core/v1.WorkloadReference"}}
# Fields that only some Kubernetes minor versions have (first, last; None: still there): unknown in the others.
VERSIONED_FIELDS: dict[str, dict[str, tuple[int, int | None]]] = {
    # v1.36 tombstoned workloadRef (protobuf 42) for schedulingGroup (43).
    "V1PodSpec": {"workloadRef": (35, 35), "schedulingGroup": (36, None)},
}
# Fields of the client's models that v1.35 does not have yet (a newer client's DRA additions): unknown there.
ABSENT_FIELDS: dict[str, tuple[str, ...]] = {
    "V1ExactDeviceRequest": ("derivedAttributes",),
    "V1DeviceSubRequest": ("derivedAttributes",),
    "V1Device": ("nodeAllocatableResources",),
    "V1ResourceSliceSpec": ("partitionTypeAttribute", "skipNodeOperations"),
    "V1DeviceAttribute": ("bools", "ints", "strings", "versions"),
    "V1DeviceRequestAllocationResult": ("skipNodeOperations",),
}

# A field's type in the schema: "" any value (scalars, maps of scalars, free-form JSON), "T" an object of model T,
# "[T" a list of them, "{T" a map of them.
_LIST = re.compile(r"^List\[(\w+)\]$")
_MAP = re.compile(r"^Dict\[str, (\w+)\]$")


def client_version() -> str:
    """The installed ``kubernetes`` client's version (the schema file says which one it was generated from)."""
    import kubernetes

    return str(kubernetes.__version__)


def generate() -> dict[str, dict[str, str]]:
    """The field tree of every model reachable from ``ROOT_MODELS``, from the installed ``kubernetes`` client."""
    import kubernetes.client as models

    out: dict[str, dict[str, str]] = {}
    todo = [m for m in ROOT_MODELS.values() if m not in EXTRA_MODELS]
    while todo:
        name = todo.pop()
        if name in out:
            continue
        model = getattr(models, name)
        fields: dict[str, str] = {}
        for attr, type_name in model.openapi_types.items():
            ref = ""
            for pattern, prefix in ((_LIST, "["), (_MAP, "{")):
                m = pattern.match(type_name)
                if m and hasattr(models, m.group(1)):
                    ref = prefix + m.group(1)
                    todo.append(m.group(1))
            if not ref and hasattr(models, type_name):
                ref = type_name
                todo.append(type_name)
            fields[model.attribute_map[attr]] = ref
        out[name] = dict(sorted(fields.items()))
    return dict(sorted(out.items()))


@cache
def _schema() -> dict[str, dict[str, str]]:
    schema: dict[str, dict[str, str]] = json.loads(SCHEMA_FILE.read_text())["models"]
    for model, extra in EXTRA_FIELDS.items():
        schema[model] = {**schema[model], **extra}
    for model, spans in VERSIONED_FIELDS.items():
        schema[model] = {**schema[model], **{f: schema[model].get(f, "") for f in spans}}
    for model, absent in ABSENT_FIELDS.items():
        schema[model] = {k: v for k, v in schema[model].items() if k not in absent}
    schema.update(EXTRA_MODELS)
    return schema


def models() -> dict[str, dict[str, str]]:
    """The field tree: model -> field -> its type in the notation above (shared, not to be changed)."""
    return _schema()


@cache
def _schema_at(minor: int | None) -> dict[str, dict[str, str]]:
    """The field tree as Kubernetes 1.``minor`` has it (None: every versioned field, whatever the version)."""
    schema = _schema()
    if minor is None:
        return schema
    out = dict(schema)
    for model, spans in VERSIONED_FIELDS.items():
        absent = {f for f, (first, last) in spans.items() if minor < first or (last is not None and minor > last)}
        out[model] = {k: v for k, v in schema[model].items() if k not in absent}
    return out


def unknown_fields(
    kind: str, obj: dict[str, Any], *, prune: bool, patch: bool = False, kube_version: str | None = None
) -> list[str]:
    """The paths of fields ``kind`` does not have (``spec.containers[0].imagePullPolicyy``), in document order;
    with ``prune`` they are removed from ``obj`` as kube-apiserver's decoder drops them. ``patch``: ``obj`` is a
    merge or strategic merge patch, whose ``$``-directives (``$patch``, ``$setElementOrder/...``) are not fields.
    A field the client's models lack is still known when ``kube_version``'s own OpenAPI types have it (the
    decoding schema's native fields: a release newer than the client, v1.36's ``bools`` of a device attribute).
    Then the fields ``kube_version`` (None: the default one) lacks that other releases have
    (``decode_types.absent_fields``). Kinds without a model are not checked."""
    root = ROOT_MODELS.get(kind)
    if root is None:
        return []
    out: list[str] = []
    decoding = decode_types.schema(kube_version)
    walk = _Walk(_schema_at(minor_of(kube_version)), _native_tree(decoding.version), out, prune, patch)
    walk.object(obj, root, decoding.roots.get(kind), "")
    absent = decode_types.absent_fields(kind, obj, kube_version=kube_version, prune=prune)
    return out + [path for path in absent if path not in out]


# A field of the version's decoding tree: its shape (``[`` a list, ``{`` a map, else one value) and its struct.
_Native = tuple[str, str | None]


@cache
def _native_tree(version: str) -> dict[str, dict[str, _Native]]:
    """``version``'s decoding structs with only the fields that release itself has (not borrowed from another),
    each as its shape and the struct it holds (None: a scalar or free-form value)."""
    decoding = decode_types.schema(version)
    tree: dict[str, dict[str, _Native]] = {}
    for struct, fields in decoding.structs.items():
        borrowed = decoding.borrowed.get(struct, frozenset())
        tree[struct] = {field: _shape(code) for field, code in fields.items() if field not in borrowed}
    return tree


def _shape(code: str) -> _Native:
    inner = code.lstrip("[{")
    head = code[0] if code and code[0] in "[{" else ""
    return head, inner[1:] if inner.startswith("@") else None


_NO_FIELDS: dict[str, _Native] = {}


class _Walk:
    """One walk of an object down the client's field tree and, beside it, the version's own decoding structs."""

    def __init__(
        self,
        schema: dict[str, dict[str, str]],
        native: dict[str, dict[str, _Native]],
        out: list[str],
        prune: bool,
        patch: bool,
    ) -> None:
        self.schema, self.native = schema, native
        self.out, self.prune, self.patch = out, prune, patch

    def object(self, obj: dict[str, Any], model: str | None, struct: str | None, path: str) -> None:
        """Walk ``obj``, a ``model`` of the client's tree (None: one only the version's types have) and the
        decoding ``struct`` (None: one the version's types do not have)."""
        fields = self.schema[model] if model is not None else {}
        native = self.native.get(struct, _NO_FIELDS) if struct is not None else _NO_FIELDS
        unknown: list[str] = []
        for key, value in obj.items():
            ref = fields.get(key)
            if ref is None:  # not in the client's tree: known only if the version's own types have it
                found = native.get(key)
                if found is None:
                    if self.patch and key.startswith("$"):
                        continue
                    self.out.append(path + key)
                    unknown.append(key)
                    continue
                head, child_struct = found
                if child_struct is None or value is None:
                    continue
                child_model = None
            else:
                if not ref or value is None:
                    continue  # any value (""): nothing inside it is checked
                head, child_model = ref[0], ref.lstrip("[{")
                found = native.get(key)
                child_struct = found[1] if found is not None else None
            if head == "[":
                if isinstance(value, list):
                    for i, item in enumerate(value):
                        if isinstance(item, dict):
                            self.object(item, child_model, child_struct, f"{path}{key}[{i}].")
            elif head == "{":
                if isinstance(value, dict):
                    for name, item in value.items():
                        if isinstance(item, dict):
                            self.object(item, child_model, child_struct, f"{path}{key}[{name}].")
            elif isinstance(value, dict):
                self.object(value, child_model, child_struct, f"{path}{key}.")
        if self.prune:
            for key in unknown:
                del obj[key]


if __name__ == "__main__":
    doc = {"client": client_version(), "models": generate()}
    SCHEMA_FILE.write_text(json.dumps(doc, indent=0, separators=(",", ":")) + "\n")
    print(f"wrote {SCHEMA_FILE}", file=sys.stderr)
