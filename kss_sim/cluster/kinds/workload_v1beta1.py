"""scheduling.k8s.io/v1beta1 (Kubernetes v1.37): the Workload API's beta and the v1alpha2 form the store holds it in.

v1.37 promoted v1.36's Workload and PodGroup to v1beta1 and dropped v1alpha2 (kubernetes/kubernetes#138572). kss
keeps storing them in v1.36's form (``Workload.v1alpha2``, ``PodGroup.v1alpha2``: what the scheduler, the store's
validation and defaults read) and converts where objects come in or go out, as kube-apiserver converts its one
stored resource to the version a request names. The two forms differ in three places
(k8s.io/api/scheduling/v1beta1/types.go):

- ``disruptionMode`` is a union struct, ``{"single": {}}`` or ``{"all": {}}``, where v1alpha2 said ``Pod`` or
  ``PodGroup``; a PodGroup's defaults to ``single`` as v1alpha2's to ``Pod``;
- a PodGroup names its template in ``spec.workloadRef`` (``workloadName``, ``templateName``), v1alpha2 in
  ``spec.podGroupTemplateRef.workload`` (``workloadName``, ``podGroupTemplateName``);
- fields of alpha gates kss does not know, off by default in v1.37 (CompositePodGroup: ``compositePodGroupTemplates``,
  ``parentCompositePodGroupName``; PodGroupPreemptionPolicy: ``preemptionPolicy``), which kube-apiserver drops from a
  write while their gate is off (``dropDisabled...Fields``): dropped here too.

The API serves the kinds with these conversions (``kss_sim.cluster.api.workload_v1beta1``); the commands that read
objects without the API (simulate, import, replay) store v1beta1 objects in the stored form (``in_stored_version``)
and export writes them in v1beta1 at 1.37 (``in_served_version``).
"""

from __future__ import annotations

import copy
from typing import Any

from kss_sim.cluster.errors import BadRequest, Cause, Invalid, invalid
from kss_sim.cluster.kinds.registry import BY_KIND, POD_GROUP_V1BETA1, WORKLOAD_V1BETA1, KindInfo
from kss_sim.kube.go_json import json_kind

# v1alpha2's DisruptionMode values and the v1beta1 union member each became.
_MODE_TO_MEMBER = {"Pod": "single", "PodGroup": "all"}
_MEMBER_TO_MODE = {member: mode for mode, member in _MODE_TO_MEMBER.items()}
# Fields of alpha gates (CompositePodGroup, PodGroupPreemptionPolicy) that v1.37 drops while they are off.
DROPPED_WORKLOAD_SPEC = ("compositePodGroupTemplates",)
DROPPED_GROUP_FIELDS = ("preemptionPolicy",)
DROPPED_POD_GROUP_SPEC = ("parentCompositePodGroupName", "preemptionPolicy")
VIEWS = (WORKLOAD_V1BETA1, POD_GROUP_V1BETA1)


def _dict(obj: Any, key: str) -> dict[str, Any] | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else None


def templates(spec: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A Workload spec's pod group templates, those that are objects."""
    found = spec.get("podGroupTemplates") if spec else None
    return [t for t in found if isinstance(t, dict)] if isinstance(found, list) else []


# --- stored (v1alpha2) -> v1beta1 ------------------------------------------------------------------------------


def _mode_to_v1beta1(group: dict[str, Any]) -> None:
    mode = group.get("disruptionMode")
    if isinstance(mode, str) and mode in _MODE_TO_MEMBER:
        group["disruptionMode"] = {_MODE_TO_MEMBER[mode]: {}}


def _to_v1beta1(obj: dict[str, Any], kind: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    if kind == "Workload":
        for template in templates(spec):
            _mode_to_v1beta1(template)
        return
    ref = spec.pop("podGroupTemplateRef", None)
    workload = _dict(ref, "workload")
    if workload is not None:  # omitempty in v1beta1: no reference, no field
        ref_out: dict[str, Any] = {"workloadName": workload.get("workloadName", "")}
        ref_out["templateName"] = workload.get("podGroupTemplateName", "")
        spec["workloadRef"] = ref_out
    _mode_to_v1beta1(spec)


# --- v1beta1 -> stored (v1alpha2) ------------------------------------------------------------------------------


def _not_a_struct(value: Any, struct: str, path: str, go_type: str) -> str | None:
    """encoding/json's error for ``value`` decoded into the struct ``go_type`` (None: an object, or null)."""
    if value is None or isinstance(value, dict):
        return None
    return f"json: cannot unmarshal {json_kind(value)} into Go struct field {struct}.{path} of type v1beta1.{go_type}"


_MEMBER_TYPES = {"single": "SingleDisruptionMode", "all": "AllDisruptionMode"}


def _mode_problem(group: dict[str, Any], struct: str, path: str) -> str | None:
    """A disruption mode that is not an object, or a member of it that is not (the first in the body's order)."""
    mode, at = group.get("disruptionMode"), f"{path}.disruptionMode"
    problem = _not_a_struct(mode, struct, at, "DisruptionMode")
    if problem is not None or not isinstance(mode, dict):
        return problem
    for member, value in mode.items():
        go_type = _MEMBER_TYPES.get(member)
        if go_type is not None and (problem := _not_a_struct(value, "DisruptionMode", f"{at}.{member}", go_type)):
            return problem
    return None


def _decode_problem(obj: dict[str, Any], kind: str) -> str | None:
    """The decoder's error for the parts v1beta1 types otherwise than v1alpha2 (``disruptionMode`` a union struct,
    ``workloadRef``), which conversion would otherwise pass on (v1alpha2's string mode) or drop; the rest decodes as
    the stored kind's (its errors reworded by the API, ``kss_sim.cluster.api.workload_v1beta1``)."""
    spec = _dict(obj, "spec")
    if spec is None:
        return None
    if kind == "Workload":
        for template in templates(spec):
            if (problem := _mode_problem(template, "PodGroupTemplate", "spec.podGroupTemplates")) is not None:
                return problem
        return None
    ref = spec.get("workloadRef")
    problem = _not_a_struct(ref, "PodGroupSpec", "spec.workloadRef", "WorkloadReference")
    if problem is None and isinstance(ref, dict):
        for key in ("workloadName", "templateName"):
            value = ref.get(key)
            if value is not None and not isinstance(value, str):
                where = f"WorkloadReference.spec.workloadRef.{key}"
                return f"json: cannot unmarshal {json_kind(value)} into Go struct field {where} of type string"
    return problem or _mode_problem(spec, "PodGroupSpec", "spec")


def _mode_to_stored(group: dict[str, Any], path: str, causes: list[Cause]) -> None:
    """v1beta1's union, exactly one member set, as v1alpha2's value; the union's errors are collected."""
    mode = group.get("disruptionMode")
    if not isinstance(mode, dict):
        return  # absent, or a type error the stored kind's decoder words
    chosen = [member for member in ("single", "all") if mode.get(member) is not None]
    if not chosen:
        causes.append(invalid(path, "", "must specify one of: `single`, `all`"))
    elif len(chosen) > 1:
        detail = "exactly one of `single`, `all` is required, but multiple fields are set"
        causes.append(invalid(path, "{" + ", ".join(f"`{m}`" for m in chosen) + "}", detail))
    else:
        group["disruptionMode"] = _MEMBER_TO_MODE[chosen[0]]


def _to_stored(obj: dict[str, Any], kind: str) -> list[Cause]:
    spec = _dict(obj, "spec")
    causes: list[Cause] = []
    if spec is None:
        return causes
    if kind == "Workload":
        for key in DROPPED_WORKLOAD_SPEC:
            spec.pop(key, None)
        for i, template in enumerate(templates(spec)):
            for key in DROPPED_GROUP_FIELDS:
                template.pop(key, None)
            _mode_to_stored(template, f"spec.podGroupTemplates[{i}].disruptionMode", causes)
        return causes
    for key in DROPPED_POD_GROUP_SPEC:
        spec.pop(key, None)
    ref = spec.pop("workloadRef", None)
    if isinstance(ref, dict):
        reference = {"workloadName": ref.get("workloadName", ""), "podGroupTemplateName": ref.get("templateName", "")}
        spec["podGroupTemplateRef"] = {"workload": reference}
    _mode_to_stored(spec, "spec.disruptionMode", causes)
    return causes


def to_view(view: KindInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object (or list item) in ``view``'s v1beta1 form."""
    stored = BY_KIND[view.kind]
    out = copy.deepcopy(obj)
    if obj.get("apiVersion") == stored.api_version:
        out["apiVersion"] = view.api_version
    _to_v1beta1(out, view.api_kind)
    return out


def to_stored(view: KindInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """A v1beta1 object, or apply configuration, of ``view`` in the stored form; ``BadRequest`` for a part the
    decoder cannot decode into its v1beta1 type, ``Invalid`` for a disruption mode that is not one member of its
    union (nothing stored)."""
    stored = BY_KIND[view.kind]
    problem = _decode_problem(obj, view.api_kind)
    if problem is not None:
        kind = view.api_kind
        raise BadRequest(f'{kind} in version "{view.version}" cannot be handled as a {kind}: {problem}')
    out = copy.deepcopy(obj)
    if obj.get("apiVersion") == view.api_version:
        out["apiVersion"] = stored.api_version
    causes = _to_stored(out, view.api_kind)
    if causes:
        name = str((out.get("metadata") or {}).get("name") or "")
        raise Invalid(stored.api_kind, name, causes, group=stored.group)
    return out


_BY_API_TYPE = {(v.api_version, v.api_kind): v for v in VIEWS}
_BY_STORED = {v.kind: v for v in VIEWS}


def in_stored_version(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` in the stored (v1alpha2) form when it is a v1beta1 Workload or PodGroup (a file written for a v1.37
    cluster), else itself."""
    view = _BY_API_TYPE.get((obj.get("apiVersion"), obj.get("kind")))  # type: ignore[arg-type]
    return to_stored(view, obj) if view is not None else obj


def in_served_version(stored_kind: str, obj: dict[str, Any], minor: int) -> dict[str, Any]:
    """A stored object (registry kind ``stored_kind``) as Kubernetes 1.``minor`` serves it: v1beta1 from 1.37 on,
    else itself."""
    view = _BY_STORED.get(stored_kind)
    if view is None or minor < view.minors[0]:
        return obj
    return to_view(view, obj)
