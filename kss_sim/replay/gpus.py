"""Whole GPUs, whichever way a cluster offers them, for the replay's metrics and the FGD fragmentation measure.

A GPU is
- a unit of an extended resource named ``*/gpu`` (``nvidia.com/gpu``, ``amd.com/gpu``, ...), or
- a DRA device published in a ResourceSlice whose driver name contains ``gpu`` (``gpu.kss.sigs.k8s.io``, the
  trace's driver; ``gpu.nvidia.com``); it is taken while an allocated ResourceClaim holds it.

A device is allocated whole as ``kss convert`` publishes it (shares need DRAConsumableCapacity or
DRAPartitionableDevices, on by default from v1.36, and devices published for them), so a GPU's free share is 0 or
1000 and a GPU-sharing pod of the trace (``trace.kss.sigs.k8s.io/gpu-milli`` below 1000) takes a whole GPU, in both
of ``kss convert``'s forms.

A pod's GPU model constraint is read from the trace's ``trace.kss.sigs.k8s.io/gpu-spec`` annotation
(``V100M16|V100M32``), else from a required node-affinity ``In`` on a GPU model label; a node's model from that
label, else from its first GPU device's ``model`` attribute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.replay.fragmentation import MILLI, TaskShape
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.dra.allocated import DeviceID
from kss_sim.scheduler.dra.dra_manager import RESOURCE_SLICE, dra_manager_for
from kss_sim.scheduler.resources import calculate_pod_resource

MODEL_LABELS = ("nvidia.com/gpu.product", "alibabacloud.com/gpu-card-model")
GPU_SPEC_ANNOTATION = "trace.kss.sigs.k8s.io/gpu-spec"
CLAIM_TEMPLATE = "ResourceClaimTemplate"
CLAIM = "ResourceClaim"


def is_gpu_resource(name: str) -> bool:
    """An extended resource counted in whole GPUs."""
    return name.endswith("/gpu")


def is_gpu_driver(driver: str) -> bool:
    return "gpu" in driver


def _is_gpu_class(name: str) -> bool:
    return "gpu" in name


class DeviceIndex:
    """The GPU devices of the cluster's ResourceSlices: each device's node, and each node's devices and model.

    Rebuilt when the slices change (compared by identity: the engine replaces an object when it changes)."""

    def __init__(self) -> None:
        self._seen: list[int] = []
        self.node_of: dict[DeviceID, str] = {}
        self.devices: dict[str, int] = {}
        self.model: dict[str, str] = {}

    def refresh(self, cluster: ClusterObjects) -> None:
        slices = cluster.list_objects(RESOURCE_SLICE)
        ids = [id(s) for s in slices]
        if ids == self._seen:
            return
        self._seen = ids
        self.node_of, self.devices, self.model = {}, {}, {}
        for obj in slices:
            spec = obj.get("spec") or {}
            driver = str(spec.get("driver") or "")
            node = spec.get("nodeName")
            if not node or not is_gpu_driver(driver):
                continue
            pool = str((spec.get("pool") or {}).get("name") or "")
            for device in spec.get("devices") or []:
                self.node_of[DeviceID(driver, pool, str(device.get("name") or ""))] = node
                self.devices[node] = self.devices.get(node, 0) + 1
                model = ((device.get("attributes") or {}).get("model") or {}).get("string")
                if model and node not in self.model:
                    self.model[node] = str(model)

    def allocated_per_node(self, cluster: ClusterObjects) -> dict[str, int]:
        """How many of each node's GPU devices allocated claims (or allocations in flight) hold."""
        if not self.node_of:
            return {}
        counts: dict[str, int] = {}
        for device in dra_manager_for(cluster).list_all_allocated_devices():
            node = self.node_of.get(device)
            if node is not None:
                counts[node] = counts.get(node, 0) + 1
        return counts


def node_model(node: Mapping[str, Any], index: DeviceIndex, name: str) -> str:
    labels = (node.get("metadata") or {}).get("labels") or {}
    for label in MODEL_LABELS:
        if labels.get(label):
            return str(labels[label])
    return index.model.get(name, "")


def pod_models(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """The GPU models a pod accepts (empty: any)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    spec_value = annotations.get(GPU_SPEC_ANNOTATION)
    if spec_value:
        return tuple(sorted({m for m in str(spec_value).split("|") if m}))
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") in MODEL_LABELS and expr.get("operator") == "In":
                return tuple(sorted({str(v) for v in expr.get("values") or []}))
    return ()


def _claim_gpus(claim_spec: Mapping[str, Any]) -> int:
    """GPU devices an ExactCount claim asks for (requests of a GPU device class; firstAvailable: its first choice)."""
    count = 0
    for request in (claim_spec.get("devices") or {}).get("requests") or []:
        exactly = request.get("exactly") or ((request.get("firstAvailable") or [None])[0]) or request
        if not _is_gpu_class(str(exactly.get("deviceClassName") or "")):
            continue
        if (exactly.get("allocationMode") or "ExactCount") == "ExactCount":
            count += int(exactly.get("count") or 1)
    return count


def pod_gpus(pod: Mapping[str, Any], objects: Mapping[str, Mapping[str, Obj]]) -> int:
    """Whole GPUs a pod asks for: ``*/gpu`` extended resources plus GPU devices of its claims (found by
    ``namespace/name`` in ``objects[kind]``)."""
    resource, _, _ = calculate_pod_resource(pod)
    gpus = sum(v for k, v in resource.scalar_resources.items() if is_gpu_resource(k))
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        if ref.get("resourceClaimTemplateName"):
            template = objects.get(CLAIM_TEMPLATE, {}).get(f"{namespace}/{ref['resourceClaimTemplateName']}")
            claim_spec = ((template or {}).get("spec") or {}).get("spec") or {}
        else:
            claim = objects.get(CLAIM, {}).get(f"{namespace}/{ref.get('resourceClaimName')}")
            claim_spec = (claim or {}).get("spec") or {}
        gpus += _claim_gpus(claim_spec)
    return gpus


def task_shape(pod: Mapping[str, Any], objects: Mapping[str, Mapping[str, Obj]]) -> TaskShape:
    """The FGD task shape of a pod: its CPU and memory requests, whole GPUs, models."""
    resource, _, _ = calculate_pod_resource(pod)
    gpus = pod_gpus(pod, objects)
    return TaskShape(
        milli_cpu=resource.milli_cpu,
        memory=resource.memory,
        gpus=gpus,
        milli_gpu=MILLI if gpus else 0,
        models=pod_models(pod) if gpus else (),
    )


def objects_by_kind(objs: Iterable[Obj]) -> dict[str, dict[str, Obj]]:
    """``kind -> namespace/name -> object`` for the claim templates and claims pods refer to."""
    out: dict[str, dict[str, Obj]] = {}
    for obj in objs:
        kind = str(obj.get("kind") or "")
        if kind in (CLAIM_TEMPLATE, CLAIM):
            meta = obj.get("metadata") or {}
            out.setdefault(kind, {})[f"{meta.get('namespace') or 'default'}/{meta.get('name')}"] = obj
    return out
