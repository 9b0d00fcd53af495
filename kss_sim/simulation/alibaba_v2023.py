"""Alibaba's 2023 GPU trace (``cluster-trace-gpu-v2023``) as Kubernetes objects, in two forms of the same demand.

- ``extended``: nodes advertise ``nvidia.com/gpu`` (a device plugin's extended resource) and carry their GPU model
  in the ``nvidia.com/gpu.product`` label; a pod requests ``nvidia.com/gpu: num_gpu`` and its ``gpu_spec`` (``V100M16|
  V100M32``) becomes a required node-affinity term ``nvidia.com/gpu.product In [V100M16, V100M32]``.
- ``dra``: Dynamic Resource Allocation (``resource.k8s.io/v1``): one DeviceClass selecting the driver, one node-local
  ResourceSlice per GPU node (pool = node name, devices ``gpu-0``… with a ``model`` string attribute and a
  ``memory`` capacity where the model names it), and pods referencing a ResourceClaimTemplate whose single request
  asks for ``exactly: {deviceClassName, count: num_gpu}`` with a CEL selector on ``model`` for ``gpu_spec``.

GPU sharing: a pod with ``gpu_milli`` < 1000 (always ``num_gpu`` = 1 in the trace) takes one whole GPU in both forms,
because neither can share one in v1.35 by default (extended resources are integers; DRA's consumable capacity and
partitionable devices are alpha/beta gates that are off). The share is kept in the ``trace.kss.sigs.k8s.io/gpu-milli``
annotation, with the trace's other columns (docs/alibaba-v2023.md).

``Workload.manifests()`` is what a user applies (templates, no claims); ``Workload.scenario()`` is the golden format
``kss simulate`` runs, with the claims the resourceclaim controller would create for each pod already there.
"""

from __future__ import annotations

import copy
import csv
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kss_sim.cluster.admission.defaults.core import default_pod
from kss_sim.cluster.admission.quantities import canonical_quantity, canonicalize_quantities

FORMS = ("dra", "extended")
NODE_LIST = "openb_node_list_all_node.csv"
POD_LISTS = {
    "default": "openb_pod_list_default.csv",
    "gpuspec33": "openb_pod_list_gpuspec33.csv",
    "multigpu50": "openb_pod_list_multigpu50.csv",
}
NAMESPACE = "paib-gpu"
EXTENDED_RESOURCE = "nvidia.com/gpu"
MODEL_LABEL = "nvidia.com/gpu.product"  # GPU feature discovery's label; the value is the trace's model code
DRIVER = "gpu.kss.sigs.k8s.io"
DEVICE_CLASS = DRIVER
POD_CLAIM_NAME = "gpu"
ANNOTATION_PREFIX = "trace.kss.sigs.k8s.io/"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
IMAGE = "registry.k8s.io/pause:3.10"
MAX_PODS_PER_NODE = "110"  # the kubelet's default maxPods; the trace does not say

# GPU memory where the model code fixes it: V100M16/V100M32 name it, T4 and A10 exist in one size only. P100
# (12 or 16 GB) and Alibaba's G2/G3 codes do not say, so those devices carry no memory capacity.
GPU_MEMORY = {"V100M16": "16Gi", "V100M32": "32Gi", "T4": "16Gi", "A10": "24Gi"}

# The characters of apiserver's generateName suffix (k8s.io/apimachinery/pkg/util/rand: no vowels, no 0/1/3).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_GENERATE_NAME_BASE = 57  # the resourceclaim controller keeps names to 63: base + 5 random characters + a hyphen


class TraceError(ValueError):
    """A row of the trace that cannot be read (file and line named)."""


@dataclass(frozen=True)
class TraceNode:
    """One row of ``openb_node_list_all_node.csv``."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True)
class TracePod:
    """One row of a pod list. ``gpu_spec`` is the allowed GPU models (deduplicated, in the trace's order); the
    time columns are absent from ``multigpu50``."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: tuple[str, ...] = ()
    qos: str = ""
    pod_phase: str = ""
    creation_time: int | None = None
    deletion_time: int | None = None
    scheduled_time: int | None = None


@dataclass(frozen=True)
class Trace:
    nodes: list[TraceNode]
    pods: list[TracePod]  # in creation_time order (file order among equal times)


def _int(row: dict[str, str], column: str, where: str, *, optional: bool = False) -> int | None:
    text = (row.get(column) or "").strip()
    if not text and optional:
        return None
    try:
        number = int(text)
    except ValueError:
        raise TraceError(f"{where}: {column} must be an integer, not {text!r}") from None
    if number < 0:
        raise TraceError(f"{where}: {column} must not be negative ({number})")
    return number


def _rows(path: Path, required: Iterable[str]) -> Iterable[tuple[str, dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceError(f"{path}: missing column(s) {', '.join(missing)}")
        for row in reader:
            yield f"{path}:{reader.line_num}", row


def read_nodes(path: Path) -> list[TraceNode]:
    """The node list, in file order."""
    nodes = []
    for where, row in _rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        gpus = _int(row, "gpu", where) or 0
        model = (row.get("model") or "").strip()
        if gpus and not model:
            raise TraceError(f"{where}: a node with {gpus} GPUs needs a model")
        nodes.append(
            TraceNode(
                name=row["sn"].strip(),
                cpu_milli=_int(row, "cpu_milli", where) or 0,
                memory_mib=_int(row, "memory_mib", where) or 0,
                gpus=gpus,
                model=model,
            )
        )
    return nodes


def read_pods(path: Path) -> list[TracePod]:
    """A pod list, in creation_time order (stable: file order among equal times and when there are no times)."""
    pods = []
    for where, row in _rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")):
        spec = tuple(dict.fromkeys(m.strip() for m in (row.get("gpu_spec") or "").split("|") if m.strip()))
        pods.append(
            TracePod(
                name=row["name"].strip(),
                cpu_milli=_int(row, "cpu_milli", where) or 0,
                memory_mib=_int(row, "memory_mib", where) or 0,
                num_gpu=_int(row, "num_gpu", where) or 0,
                gpu_milli=_int(row, "gpu_milli", where) or 0,
                gpu_spec=spec,
                qos=(row.get("qos") or "").strip(),
                pod_phase=(row.get("pod_phase") or "").strip(),
                creation_time=_int(row, "creation_time", where, optional=True),
                deletion_time=_int(row, "deletion_time", where, optional=True),
                scheduled_time=_int(row, "scheduled_time", where, optional=True),
            )
        )
    pods.sort(key=lambda p: p.creation_time or 0)
    return pods


def load_trace(trace_dir: Path, pod_list: str = "default", limit: int | None = None) -> Trace:
    """Every node and the first ``limit`` pods (creation order) of ``pod_list`` (default, gpuspec33, multigpu50)."""
    if pod_list not in POD_LISTS:
        raise TraceError(f"unknown pod list {pod_list!r}: choose one of {', '.join(POD_LISTS)}")
    pods = read_pods(trace_dir / POD_LISTS[pod_list])
    return Trace(nodes=read_nodes(trace_dir / NODE_LIST), pods=pods if limit is None else pods[:limit])


def model_selector(models: Iterable[str]) -> str:
    """The CEL selector accepting devices of these models."""
    listed = ", ".join(f'"{m}"' for m in models)
    return f'device.attributes["{DRIVER}"].model in [{listed}]'


def claim_template_name(pod: TracePod) -> str:
    """One template per distinct demand (GPU count and allowed models): ``gpu-1``, ``gpu-4-v100m16-v100m32``."""
    return "-".join(["gpu", str(pod.num_gpu), *(m.lower() for m in pod.gpu_spec)])


def generated_claim_name(pod_name: str, pod_claim_name: str) -> str:
    """The name the resourceclaim controller gives a pod's claim: ``<pod>-<podClaimName>-<5 chars>``, both parts
    cut in proportion past 57 characters as the controller does; the suffix is derived from the names so a
    scenario is the same on every run."""
    base = f"{pod_name}-{pod_claim_name}-"
    if len(base) > _GENERATE_NAME_BASE:
        base = (
            pod_name[: len(pod_name) * _GENERATE_NAME_BASE // len(base)]
            + "-"
            + pod_claim_name[: len(pod_claim_name) * _GENERATE_NAME_BASE // len(base)]
        )
    digest = hashlib.sha256(f"{pod_name}/{pod_claim_name}".encode()).digest()
    return base + "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update({k: v for k, v in extra.items() if v})
    return meta


def _node(node: TraceNode, form: str) -> dict[str, Any]:
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux"}
    capacity = {
        "cpu": canonical_quantity(f"{node.cpu_milli}m"),
        "memory": canonical_quantity(f"{node.memory_mib}Mi"),
        "pods": MAX_PODS_PER_NODE,
    }
    if form == "extended" and node.gpus:
        labels[MODEL_LABEL] = node.model
        capacity[EXTENDED_RESOURCE] = str(node.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(node.name, labels=labels),
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def _device(index: int, model: str) -> dict[str, Any]:
    device: dict[str, Any] = {"name": f"gpu-{index}", "attributes": {"model": {"string": model}}}
    if model in GPU_MEMORY:
        device["capacity"] = {"memory": {"value": GPU_MEMORY[model]}}
    return device


def resource_slice(node: TraceNode) -> dict[str, Any]:
    """The node-local slice a DRA driver's kubelet plugin would publish for this node's GPUs."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": _meta(f"{node.name}-{DRIVER}"),
        "spec": {
            "driver": DRIVER,
            "nodeName": node.name,
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
            "devices": [_device(i, node.model) for i in range(node.gpus)],
        },
    }


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": _meta(DEVICE_CLASS),
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def claim_spec(pod: TracePod) -> dict[str, Any]:
    """The ResourceClaimSpec of a GPU pod's demand, with kube-apiserver's defaults (ExactCount) written out."""
    exactly: dict[str, Any] = {"deviceClassName": DEVICE_CLASS, "allocationMode": "ExactCount", "count": pod.num_gpu}
    if pod.gpu_spec:
        exactly["selectors"] = [{"cel": {"expression": model_selector(pod.gpu_spec)}}]
    return {"devices": {"requests": [{"name": POD_CLAIM_NAME, "exactly": exactly}]}}


def claim_template(pod: TracePod) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": _meta(claim_template_name(pod), NAMESPACE),
        "spec": {"spec": claim_spec(pod)},
    }


def _annotations(pod: TracePod) -> dict[str, str]:
    """The trace's columns that no Kubernetes field holds (the GPU share above all)."""
    values: dict[str, object] = {
        "gpu-milli": pod.gpu_milli if pod.num_gpu else None,
        "gpu-spec": "|".join(pod.gpu_spec),
        "qos": pod.qos,
        "pod-phase": pod.pod_phase,
        "creation-time": pod.creation_time,
        "deletion-time": pod.deletion_time,
        "scheduled-time": pod.scheduled_time,
    }
    return {ANNOTATION_PREFIX + k: str(v) for k, v in values.items() if v is not None and v != ""}


def _pod(pod: TracePod, form: str) -> dict[str, Any]:
    requests = {"cpu": canonical_quantity(f"{pod.cpu_milli}m"), "memory": canonical_quantity(f"{pod.memory_mib}Mi")}
    resources: dict[str, Any] = {"requests": requests}
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": IMAGE, "resources": resources}]}
    if pod.num_gpu and form == "extended":
        # An extended resource must have a limit equal to its request (ValidateResourceRequirements).
        requests[EXTENDED_RESOURCE] = str(pod.num_gpu)
        resources["limits"] = {EXTENDED_RESOURCE: str(pod.num_gpu)}
        if pod.gpu_spec:
            requirement = {"key": MODEL_LABEL, "operator": "In", "values": list(pod.gpu_spec)}
            term = {"matchExpressions": [requirement]}
            spec["affinity"] = {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
            }
    elif pod.num_gpu:
        resources["claims"] = [{"name": POD_CLAIM_NAME}]
        spec["resourceClaims"] = [{"name": POD_CLAIM_NAME, "resourceClaimTemplateName": claim_template_name(pod)}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(pod.name, NAMESPACE, annotations=_annotations(pod)),
        "spec": spec,
    }


@dataclass
class Workload:
    """One form of a trace: the objects a user applies, in an order ``kubectl apply -f`` can create them."""

    form: str
    pod_list: str
    namespace: dict[str, Any]
    device_classes: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    resource_slices: list[dict[str, Any]] = field(default_factory=list)
    claim_templates: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)

    def manifests(self) -> list[dict[str, Any]]:
        """Namespace, DeviceClass, Nodes, ResourceSlices, ResourceClaimTemplates, then Pods in creation order."""
        return [
            self.namespace,
            *self.device_classes,
            *self.nodes,
            *self.resource_slices,
            *self.claim_templates,
            *self.pods,
        ]

    def scenario(self) -> dict[str, Any]:
        """The golden-format scenario: objects in stored form, every pod pending in creation order, and for each
        pod with a claim template the claim the resourceclaim controller creates (``resourceClaims``) named in
        the pod's ``status.resourceClaimStatuses``."""
        templates = {t["metadata"]["name"]: t for t in self.claim_templates}
        claims: list[dict[str, Any]] = []
        pending = []
        for manifest in self.pods:
            pod = _stored(manifest, "pod")
            default_pod(pod)
            canonicalize_quantities("Pod", pod)
            pod["spec"].setdefault("priority", 0)
            pod["spec"].setdefault("preemptionPolicy", "PreemptLowerPriority")
            pod["status"] = {"phase": "Pending"}
            statuses = []
            for ref in pod["spec"].get("resourceClaims") or []:
                claim = _claim_from_template(pod, ref["name"], templates[ref["resourceClaimTemplateName"]])
                claims.append(claim)
                statuses.append({"name": ref["name"], "resourceClaimName": claim["metadata"]["name"]})
            if statuses:
                pod["status"]["resourceClaimStatuses"] = statuses
            pending.append(pod)
        namespace = _stored(self.namespace, "ns")
        namespace["metadata"]["labels"] = {"kubernetes.io/metadata.name": NAMESPACE}
        namespace.update({"spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        scenario: dict[str, Any] = {
            "meta": {
                "name": f"alibaba-v2023-{self.pod_list}-{self.form}",
                "family": "trace",
                "description": f"Alibaba GPU trace v2023, {self.pod_list} pod list, {self.form} form (kss convert)",
            },
            "nodes": [_stored(n, "node") for n in self.nodes],
            "pods": [],
            "pending": pending,
            "namespaces": [namespace],
        }
        if self.form == "dra":
            scenario["deviceClasses"] = [_stored(c, "deviceclass") for c in self.device_classes]
            scenario["resourceSlices"] = [_stored(s, "resourceslice") for s in self.resource_slices]
            scenario["resourceClaimTemplates"] = [_stored(t, "resourceclaimtemplate") for t in self.claim_templates]
            scenario["resourceClaims"] = claims
        return scenario


def _stored(manifest: dict[str, Any], kind: str) -> dict[str, Any]:
    """A copy with the deterministic uid and resourceVersion of the golden format (``uid-<kind>-<ns>-<name>``)."""
    obj = copy.deepcopy(manifest)
    meta = obj["metadata"]
    scope = f"{meta['namespace']}-" if "namespace" in meta else ""
    meta["uid"] = f"uid-{kind}-{scope}{meta['name']}"
    meta["resourceVersion"] = "1"
    return obj


def _claim_from_template(pod: dict[str, Any], pod_claim_name: str, template: dict[str, Any]) -> dict[str, Any]:
    """What the resourceclaim controller creates for the pod: the template's spec, owned by the pod."""
    pod_meta = pod["metadata"]
    template_meta = template["spec"].get("metadata") or {}
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": generated_claim_name(pod_meta["name"], pod_claim_name),
            "namespace": pod_meta["namespace"],
            "labels": dict(template_meta.get("labels") or {}),
            "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: pod_claim_name},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod_meta["name"],
                    "uid": pod_meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": copy.deepcopy(template["spec"]["spec"]),
        "status": {},
    }
    if not claim["metadata"]["labels"]:
        del claim["metadata"]["labels"]
    return _stored(claim, "resourceclaim")


def convert(trace: Trace, form: str, pod_list: str = "default") -> Workload:
    """The trace in one form (``dra`` or ``extended``)."""
    if form not in FORMS:
        raise TraceError(f"unknown form {form!r}: choose one of {', '.join(FORMS)}")
    workload = Workload(
        form=form,
        pod_list=pod_list,
        namespace={"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(NAMESPACE)},
        nodes=[_node(n, form) for n in trace.nodes],
        pods=[_pod(p, form) for p in trace.pods],
    )
    if form == "dra":
        workload.device_classes = [device_class()]
        workload.resource_slices = [resource_slice(n) for n in trace.nodes if n.gpus]
        templates: dict[str, dict[str, Any]] = {}
        for p in trace.pods:
            if p.num_gpu:
                templates.setdefault(claim_template_name(p), claim_template(p))
        workload.claim_templates = list(templates.values())
    return workload
