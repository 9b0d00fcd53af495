"""Objects entering a replay as the API server would store them: pods defaulted and admitted, uids derived from
names, claims made from templates, nodes edited by cordon and taint events.

Everything here is deterministic (no clock, no randomness): a uid is derived from the object's name and its arrival
sequence number, so the same workload gives the same objects on every run.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta

import orjson

from kss_sim.cluster.admission.defaults.core import (
    default_node,
    default_persistent_volume,
    default_persistent_volume_claim,
    default_pod,
    default_storage_class,
    prepare_pod_create,
    prepare_pvc_create,
)
from kss_sim.kube.objects import Obj
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.simulation.alibaba_v2023 import generated_claim_name

_UID_NAMESPACE = uuid.UUID("6f1c1c52-5b8e-4c4e-9d35-8a2d8e1b7a10")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet (no vowels, no 0/1/3)
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def copy_object(obj: Obj) -> Obj:
    """A deep copy of a plain JSON-like object (the engine writes into what it is given; the workload stays as is)."""
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


def derived_uid(kind: str, namespace: str, name: str, seq: int) -> str:
    """A uid for an object the workload did not give one: a UUID derived from what it is and when it arrived."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}/{seq}"))


def generated_suffix(base: str, seq: int) -> str:
    """Five characters for a ``generateName`` (deterministic, from the base and the arrival sequence)."""
    digest = hashlib.sha256(f"{base}/{seq}".encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def rfc3339(epoch: datetime, seconds: float) -> str:
    """``epoch + seconds`` as Kubernetes writes a timestamp (whole seconds, Z)."""
    return (epoch + timedelta(seconds=int(seconds))).strftime("%Y-%m-%dT%H:%M:%SZ")


def ensure_name(obj: Obj, kind: str, seq: int) -> None:
    """``metadata.generateName`` -> ``metadata.name`` as the API server generates it (deterministically here)."""
    meta = obj.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = str(meta["generateName"]) + generated_suffix(f"{kind}/{meta['generateName']}", seq)


def admit_pod(pod: Obj, cluster: ClusterObjects, *, bound: bool) -> None:
    """kube-apiserver's defaulting and admission of a created pod (priority from its PriorityClass or the global
    default, default tolerations, matchLabelKeys); a pod already bound (a snapshot's) keeps its status.
    Raises ``kss_sim.cluster.errors.Forbidden`` for a missing PriorityClass, as the admission plugin refuses it."""
    default_pod(pod)
    status = pod.get("status")
    prepare_pod_create(pod, list(cluster.priority_classes.values()))
    if bound and isinstance(status, dict):
        pod["status"] = {**status, "phase": status.get("phase") or "Running"}


def admit_storage(kind: str, obj: Obj, cluster: ClusterObjects) -> None:
    """The API server's defaults for a new PV, claim or StorageClass (a claim without a class gets the default
    class); a PV without a phase is Available, as the PV controller makes a new volume (``kss serve`` does the
    same at create): without it no static volume could ever be chosen by VolumeBinding."""
    if kind == "PersistentVolume":
        obj.setdefault("status", {}).setdefault("phase", "Available")
        default_persistent_volume(obj)
    elif kind == "PersistentVolumeClaim":
        prepare_pvc_create(obj, list(cluster.storage_classes.values()))
        default_persistent_volume_claim(obj)
    elif kind == "StorageClass":
        default_storage_class(obj)


def stamp(obj: Obj, *, kind: str, seq: int, epoch: datetime, now: float) -> None:
    """uid, creationTimestamp and namespace of a new object (a given uid is kept)."""
    meta = obj.setdefault("metadata", {})
    if kind not in CLUSTER_SCOPED:
        meta["namespace"] = meta.get("namespace") or "default"
    meta.setdefault("uid", derived_uid(kind, meta.get("namespace") or "", str(meta.get("name") or ""), seq))
    meta.setdefault("creationTimestamp", rfc3339(epoch, now))
    meta.setdefault("resourceVersion", "1")


CLUSTER_SCOPED = frozenset(
    (
        "Node",
        "PersistentVolume",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "Namespace",
        "PriorityClass",
        "DeviceClass",
        "ResourceSlice",
    )
)


def claims_from_templates(pod: Obj, cluster: ClusterObjects) -> tuple[list[Obj], list[str]]:
    """What the resourceclaim controller does for a new pod: a ResourceClaim per ``resourceClaimTemplateName``
    entry (owned by the pod), named in ``status.resourceClaimStatuses``. Returns the claims and the names of the
    templates that do not exist (the pod then waits, as it would for the controller)."""
    spec = pod.get("spec") or {}
    meta = pod["metadata"]
    claims: list[Obj] = []
    missing: list[str] = []
    statuses: list[Obj] = []
    for ref in spec.get("resourceClaims") or []:
        template_name = ref.get("resourceClaimTemplateName")
        if not template_name:
            continue
        template = cluster.get_object("ResourceClaimTemplate", meta["namespace"], str(template_name))
        if template is None:
            missing.append(str(template_name))
            continue
        template_meta = (template.get("spec") or {}).get("metadata") or {}
        name = generated_claim_name(meta["name"], ref["name"])
        claim_meta: Obj = {
            "name": name,
            "namespace": meta["namespace"],
            "uid": derived_uid("ResourceClaim", meta["namespace"], name, 0),
            "resourceVersion": "1",
            "creationTimestamp": meta.get("creationTimestamp"),
            "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: ref["name"]},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"], "controller": True,
                 "blockOwnerDeletion": True}
            ],
        }  # fmt: skip
        if template_meta.get("labels"):
            claim_meta["labels"] = dict(template_meta["labels"])
        claims.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": claim_meta,
                "spec": copy_object((template.get("spec") or {}).get("spec") or {}),
                "status": {},
            }
        )
        statuses.append({"name": ref["name"], "resourceClaimName": name})
    if statuses:
        pod.setdefault("status", {})["resourceClaimStatuses"] = statuses
    return claims, missing


def owned_claims(pod: Obj) -> list[tuple[str, str]]:
    """(namespace, name) of the claims made for the pod from templates (garbage-collected with it)."""
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    return [
        (namespace, str(s["resourceClaimName"]))
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if s.get("resourceClaimName")
    ]


def requests_of(pod: PodInfo) -> dict[str, float]:
    """A pod's requests for its record: cpu in cores, memory and ephemeral-storage in bytes, scalars as counted."""
    r = pod.requests
    out: dict[str, float] = {}
    if r.milli_cpu:
        out["cpu"] = r.milli_cpu / 1000
    if r.memory:
        out["memory"] = float(r.memory)
    if r.ephemeral_storage:
        out["ephemeral-storage"] = float(r.ephemeral_storage)
    for name, amount in sorted(r.scalar_resources.items()):
        if amount:
            out[name] = float(amount)
    return out


def owner_of(pod: Obj) -> str:
    """``Kind/namespace/name`` of the pod's controller (ownerReferences with controller: true), else ""."""
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return f"{ref.get('kind')}/{meta.get('namespace') or 'default'}/{ref.get('name')}"
    return ""


# --- nodes -----------------------------------------------------------------------------------------------------
def new_node(node: Obj) -> Obj:
    default_node(node)
    return node


def cordoned(node: Obj, unschedulable: bool) -> Obj:
    """The node after ``kubectl cordon`` / ``uncordon`` (a new object; the old one is left as it was)."""
    out = copy_object(node)
    spec = out.setdefault("spec", {})
    if unschedulable:
        spec["unschedulable"] = True
    else:
        spec.pop("unschedulable", None)
    return out


def tainted(node: Obj, taint: Obj, *, add: bool, epoch: datetime, now: float) -> Obj:
    """The node with ``taint`` added (replacing one of the same key and effect) or removed (every effect unless one
    is named), as ``kubectl taint`` does."""
    out = copy_object(node)
    spec = out.setdefault("spec", {})
    key, effect = taint.get("key"), taint.get("effect")
    kept = [
        t
        for t in spec.get("taints") or []
        if not (t.get("key") == key and (effect is None or t.get("effect") == effect))
    ]
    if add:
        entry: Obj = {"key": key, "effect": effect}
        if taint.get("value") is not None:
            entry["value"] = str(taint["value"])
        if effect == "NoExecute":
            entry["timeAdded"] = rfc3339(epoch, now)
        kept.append(entry)
    if kept:
        spec["taints"] = kept
    else:
        spec.pop("taints", None)
    return out
