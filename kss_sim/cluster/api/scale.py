"""The ``scale`` subresource of Deployments, ReplicaSets and StatefulSets: an autoscaling/v1 ``Scale`` read from
the object (``spec.replicas``, ``status.replicas`` and the selector as a string) and written back to its
``spec.replicas``, as kube-apiserver's ScaleREST does (``kubectl scale``, HorizontalPodAutoscalers). A CRD's kind
with a scale subresource reads and writes the paths its CRD names instead (``specReplicasPath``, ...).
"""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.admission.patch import JSON_PATCH, MERGE_PATCH, PatchError, json_merge_patch, json_patch
from kss_sim.cluster.crd.kinds import CustomKindInfo, ScalePaths
from kss_sim.cluster.errors import BadRequest, Invalid, invalid
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube.objects import Obj

SCALE_API_VERSION = "autoscaling/v1"


def selector_string(selector: Any) -> str:
    """``metav1.LabelSelectorAsSelector(selector).String()``: requirements sorted by key (``app=web,tier in (a,b)``)."""
    if not isinstance(selector, dict):
        return ""
    parts: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(op), key)
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts, key=lambda p: p[0]))


def scale_of(obj: Obj) -> Obj:
    """The Scale of a Deployment, ReplicaSet or StatefulSet (``spec.replicas`` omitted when 0, as Go renders it)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    scale_meta = {
        key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if key in meta
    }
    replicas = int(spec.get("replicas") or 0)
    scale_status: Obj = {"replicas": int(status.get("replicas") or 0)}
    selector = selector_string(spec.get("selector"))
    if selector:
        scale_status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": scale_meta,
        "spec": {"replicas": replicas} if replicas else {},
        "status": scale_status,
    }


def _at(obj: Any, path: str) -> Any:
    for part in path.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def custom_scale_of(obj: Obj, paths: ScalePaths) -> Obj:
    """The Scale of a custom object, read at its CRD's scale paths."""
    meta = obj.get("metadata") or {}
    scale_meta = {
        key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if key in meta
    }
    replicas = _at(obj, paths.spec_replicas)
    status: Obj = {"replicas": _at(obj, paths.status_replicas) or 0}
    if paths.label_selector:
        selector = _at(obj, paths.label_selector)
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": scale_meta,
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


def _scale(info: KindInfo, obj: Obj) -> Obj:
    if isinstance(info, CustomKindInfo) and info.scale is not None:
        return custom_scale_of(obj, info.scale)
    return scale_of(obj)


def read_scale(store: ClusterStore, info: KindInfo, namespace: str | None, name: str) -> Obj:
    """``GET .../{name}/scale``."""
    return _scale(info, store.read(info.key, namespace, name).obj)


def _replicas(info: KindInfo, name: str, scale: Any) -> tuple[int, str | None]:
    """The wanted replicas and resourceVersion precondition of a Scale body; ``Invalid`` as ValidateScale."""
    if not isinstance(scale, dict):
        raise BadRequest("the object provided is unrecognized (must be of type Scale)")
    if scale.get("kind") not in (None, "Scale"):
        raise BadRequest(f"the object provided is unrecognized (must be of type Scale): kind {scale.get('kind')!r}")
    meta = scale.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise BadRequest(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise BadRequest(
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            f"{type(replicas).__name__} into Go struct field ScaleSpec.spec.replicas of type int32"
        )
    if replicas < 0:
        raise Invalid(
            "Scale",
            name,
            [invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
            group="autoscaling",
        )
    rv = meta.get("resourceVersion")
    return replicas, str(rv) if rv else None


def write_scale(
    store: ClusterStore, info: KindInfo, namespace: str | None, name: str, scale: Any, *, dry_run: bool = False
) -> Obj:
    """``PUT .../{name}/scale``: ``spec.replicas`` of the object set (a stale resourceVersion is a 409)."""
    replicas, rv = _replicas(info, name, scale)
    patch: Obj = {"spec": {"replicas": replicas}}
    if isinstance(info, CustomKindInfo) and info.scale is not None:
        patch = {}
        node = patch
        parts = info.scale.spec_replicas.strip(".").split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = replicas
    if rv:
        patch["metadata"] = {"resourceVersion": rv}
    updated = store.patch(info.key, namespace, name, patch, MERGE_PATCH, dry_run=dry_run)
    return _scale(info, updated)


def patch_scale(
    store: ClusterStore,
    info: KindInfo,
    namespace: str | None,
    name: str,
    patch: Any,
    content_type: str,
    *,
    dry_run: bool = False,
) -> Obj:
    """``PATCH .../{name}/scale``: the patch applied to the current Scale, then written as ``write_scale``."""
    current = read_scale(store, info, namespace, name)
    try:
        if content_type == JSON_PATCH:
            patched = json_patch(current, patch)
        elif not isinstance(patch, dict):
            raise BadRequest("a merge patch must be a JSON object")
        else:
            # A Scale has no lists, so a strategic merge patch merges as a JSON merge patch does.
            patched = json_merge_patch(current, patch)
    except PatchError as exc:
        raise Invalid("Scale", name, [invalid("patch", "", str(exc))], group="autoscaling") from None
    return write_scale(store, info, namespace, name, patched, dry_run=dry_run)
