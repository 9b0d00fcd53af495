"""The mirroring rules as pure functions: what to create in the simulator, and what an update changes.

- Create: server-owned metadata (``uid``, ``resourceVersion``, ``generation``, timestamps, ``managedFields``),
  finalizers and ``ownerReferences`` (they name source uids; the simulator's garbage collector would delete an
  object whose owners it cannot find) are cleared, the source's uid is kept in an annotation; pods lose their
  service account fields and token volume, and their ``nodeName`` unless they arrive as the existing load. A bound
  PV's ``claimRef.uid`` names the simulator's PVC. Workloads (Deployments, Jobs, ...) lose their status (the
  simulator's controllers write it), and a Job its generated selector and the source uid in its template's
  labels (the simulator generates them again for the new uid).
- Update: a JSON merge patch of what the source changed. Updates of pods already scheduled in the source are
  ignored, so the source scheduler's decision never overwrites the simulator's own; annotations the
  simulator writes (scheduling results) are never copied from the source nor removed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson

from syncer.kinds import Kind
from syncer.objects import Obj

# Looks up the simulator's uid of a PVC by namespace and name (None if the simulator has no such PVC).
PvcUid = Callable[[str, str], str | None]

SOURCE_UID_ANNOTATION = "syncer.kss.dev/source-uid"
SIMULATOR_ANNOTATION_PREFIXES = ("kube-scheduler-simulator.sigs.k8s.io/",)
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "generateName",
    # Nothing in the simulator would ever remove them; its deletions are immediate.
    "finalizers",
)
_SERVICE_ACCOUNT_FIELDS = ("serviceAccountName", "serviceAccount", "automountServiceAccountToken")
_TOKEN_VOLUME_PREFIX = "kube-api-access-"
# What kube-apiserver's Job strategy (generateSelector) adds to a Job without a manual selector: the selector on
# the Job's uid and these labels on its template. A new Job may not carry them (the selector is refused unless
# manualSelector is true), and the uid is the source Job's.
_JOB_GENERATED_LABELS = (
    "batch.kubernetes.io/controller-uid",
    "controller-uid",
    "batch.kubernetes.io/job-name",
    "job-name",
)
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def meta(obj: Obj) -> Obj:
    """``metadata`` of an object (an empty dict if absent)."""
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def source_uid(obj: Obj) -> str:
    """The uid of a source object: the identity the syncer tracks it by."""
    return str(meta(obj).get("uid") or "")


def key(obj: Obj) -> tuple[str, str]:
    """(namespace, name); namespace is "" for cluster-scoped objects."""
    m = meta(obj)
    return str(m.get("namespace") or ""), str(m.get("name") or "")


def describe(kind: Kind, obj: Obj) -> str:
    """``Pod ns/name`` or ``Node name`` for log lines."""
    namespace, name = key(obj)
    return f"{kind.name} {namespace}/{name}" if namespace else f"{kind.name} {name}"


def is_scheduled(pod: Obj) -> bool:
    """Whether the pod is bound to a node."""
    spec = pod.get("spec")
    return isinstance(spec, dict) and bool(spec.get("nodeName"))


def is_simulator_annotation(name: str) -> bool:
    """Annotations the simulator itself writes (scheduling results): never copied from a source, never removed."""
    return name.startswith(SIMULATOR_ANNOTATION_PREFIXES)


def _is_token_volume(volume: Any) -> bool:
    if not isinstance(volume, dict) or not str(volume.get("name", "")).startswith(_TOKEN_VOLUME_PREFIX):
        return False
    sources = (volume.get("projected") or {}).get("sources") or []
    return any(isinstance(s, dict) and "serviceAccountToken" in s for s in sources)


def _clear_service_account(spec: Obj) -> None:
    for field in _SERVICE_ACCOUNT_FIELDS:
        spec.pop(field, None)
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        return
    dropped = {v["name"] for v in volumes if _is_token_volume(v)}
    if not dropped:
        return
    spec["volumes"] = [v for v in volumes if not (isinstance(v, dict) and v.get("name") in dropped)]
    if not spec["volumes"]:
        del spec["volumes"]
    for field in _CONTAINER_LISTS:
        for container in spec.get(field) or []:
            mounts = container.get("volumeMounts") if isinstance(container, dict) else None
            if isinstance(mounts, list):
                kept = [m for m in mounts if not (isinstance(m, dict) and m.get("name") in dropped)]
                if kept:
                    container["volumeMounts"] = kept
                else:
                    container.pop("volumeMounts", None)


def controller_of(obj: Obj) -> tuple[str, str, str] | None:
    """(apiVersion, kind, uid) of the object's controller (the ownerReference with ``controller: true``), or None."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""), str(ref.get("uid") or "")
    return None


def is_finished_job(job: Obj) -> bool:
    """Whether a Job has its ``Complete`` or ``Failed`` condition (it runs no more pods)."""
    return any(
        isinstance(c, dict) and c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def _drop_generated_job_selector(job: Obj) -> None:
    """Remove what the Job strategy generated from the source Job's uid (nothing with a manual selector)."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    spec.pop("selector", None)
    template_meta = (spec.get("template") or {}).get("metadata")
    if not isinstance(template_meta, dict) or not isinstance(template_meta.get("labels"), dict):
        return
    labels = template_meta["labels"]
    for label in _JOB_GENERATED_LABELS:
        labels.pop(label, None)
    if not labels:
        del template_meta["labels"]


def desired(kind: Kind, source: Obj, *, keep_binding: bool, pvc_uid: PvcUid) -> Obj:
    """The object the simulator should hold for ``source``: the create body, and the base of update diffs.

    ``keep_binding`` keeps a pod's ``nodeName`` (a pod already running when the syncer starts is existing
    load); otherwise a pod arrives unscheduled and the simulator's scheduler places it. The result carries
    the source's ``status`` (the sink decides whether to mirror it).
    """
    obj = json_copy(source)
    obj["kind"] = kind.object_kind
    obj["apiVersion"] = kind.api_version
    m = obj.setdefault("metadata", {})
    for field in _SERVER_METADATA:
        m.pop(field, None)
    annotations = {k: v for k, v in (m.get("annotations") or {}).items() if not is_simulator_annotation(k)}
    annotations[SOURCE_UID_ANNOTATION] = source_uid(source)
    m["annotations"] = annotations
    m.pop("ownerReferences", None)
    if kind.workload or kind.name in ("ResourceClaim", "CustomResourceDefinition"):
        obj.pop("status", None)  # a controller's or the scheduler's account of the source, not the simulator
    if kind.name == "Job":
        _drop_generated_job_selector(obj)
    if kind.name == "Pod":
        spec = obj.setdefault("spec", {})
        _clear_service_account(spec)
        if not keep_binding:
            spec.pop("nodeName", None)
            obj.pop("status", None)
    elif kind.name == "PersistentVolume":
        claim = (obj.get("spec") or {}).get("claimRef")
        if isinstance(claim, dict):
            claim.pop("resourceVersion", None)
            uid = pvc_uid(str(claim.get("namespace") or ""), str(claim.get("name") or ""))
            if uid:
                claim["uid"] = uid
            else:
                claim.pop("uid", None)
    return obj


def json_copy(obj: Obj) -> Obj:
    """A deep copy of a JSON object; through orjson, several times faster than ``copy.deepcopy`` (most of the
    syncer's CPU per object in an import), which remains for what orjson refuses (integers beyond 64 bits)."""
    try:
        copied: Obj = orjson.loads(orjson.dumps(obj))
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return copy.deepcopy(obj)
    return copied


def without_status(obj: Obj) -> Obj:
    """A shallow copy without ``status`` (what a create or a main-resource patch carries)."""
    return {k: v for k, v in obj.items() if k != "status"}


def merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) turning ``old`` into ``new``; ``{}`` when they are equal.

    Lists are replaced whole, as merge patches do; a key only in ``old`` becomes ``null`` (removed).
    """
    if not isinstance(old, dict) or not isinstance(new, dict):
        return copy.deepcopy(new)
    patch: Obj = {}
    for k in old.keys() - new.keys():
        patch[k] = None
    for k, value in new.items():
        if k not in old:
            patch[k] = copy.deepcopy(value)
        elif old[k] != value:
            if isinstance(old[k], dict) and isinstance(value, dict):
                patch[k] = merge_patch(old[k], value)
            else:
                patch[k] = copy.deepcopy(value)
    return patch


def source_owned(kind: Kind, obj: Obj) -> Obj:
    """The part of an object the source decides: labels, annotations (not the simulator's), spec-like fields.

    Used to diff against the simulator's copy when the syncer has no earlier source version to diff from
    (after an ``AlreadyExists`` or a restart). For pods ``nodeName`` is the simulator's, never the source's.
    """
    m = meta(obj)
    owned: Obj = {
        "metadata": {
            "labels": dict(m.get("labels") or {}),
            "annotations": {k: v for k, v in (m.get("annotations") or {}).items() if not is_simulator_annotation(k)},
        }
    }
    for k, value in obj.items():
        if k not in ("apiVersion", "kind", "metadata", "status"):
            owned[k] = copy.deepcopy(value)
    if kind.name == "Pod":
        spec = owned.get("spec")
        if isinstance(spec, dict):
            spec.pop("nodeName", None)
    elif kind.name == "Job":
        _drop_generated_job_selector(owned)  # the simulator's copy carries its own
    return owned


def update_patch(kind: Kind, previous: Obj | None, new: Obj, current: Obj | None) -> Obj:
    """The merge patch that applies a source update (``new``, a ``desired`` object) to the simulator.

    With ``previous`` (the desired object the syncer last applied) the patch holds exactly what the source
    changed; without it, the difference between the simulator's ``current`` copy and ``new`` over the
    source-owned fields. Status is never part of it (see ``status_patch``).
    """
    patch: Obj
    if previous is not None:
        patch = merge_patch(without_status(previous), without_status(new))
    else:
        assert current is not None, "either the previous source version or the simulator's copy is needed"
        patch = merge_patch(source_owned(kind, current), source_owned(kind, new))
    m = patch.get("metadata")
    if isinstance(m, dict) and isinstance(m.get("annotations"), dict):
        # Simulator annotations are never touched, whatever the diff says.
        for name in [a for a in m["annotations"] if is_simulator_annotation(a)]:
            del m["annotations"][name]
        if not m["annotations"]:
            del m["annotations"]
    if isinstance(m, dict) and not m:
        del patch["metadata"]
    if kind.name == "Pod" and isinstance(patch.get("spec"), dict):
        patch["spec"].pop("nodeName", None)
        if not patch["spec"]:
            del patch["spec"]
    return patch


def status_patch(previous_status: Any, new_status: Any) -> Obj:
    """The ``status`` subresource patch that brings the simulator's status to the source's; ``{}`` if equal."""
    if previous_status == new_status:
        return {}
    if not isinstance(new_status, dict):
        return {"status": None}
    diff = merge_patch(previous_status if isinstance(previous_status, dict) else {}, new_status)
    return {"status": diff} if diff else {}
