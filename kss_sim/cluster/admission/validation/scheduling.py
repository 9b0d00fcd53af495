"""Validation of the scheduling kinds: PodGroup (scheduler-plugins' CRD, checked against its OpenAPI schema as
kube-apiserver checks a custom resource), Workload (scheduling.k8s.io/v1alpha1, v1.35's gang-scheduling alpha), and
v1.36's Workload and PodGroup (scheduling.k8s.io/v1alpha2)."""

from __future__ import annotations

import json
import re
from typing import Any

from kss_sim.cluster.admission.validation.metadata import name_errors, validate_metadata
from kss_sim.cluster.errors import Cause, duplicate, invalid, not_supported, required
from kss_sim.kube.labels import label_key_errors

# ---------------------------------------------------------------------------------------------- PodGroup (a CRD)

# The quantity pattern of the scheduler-plugins CRD (controller-gen's for resource.Quantity).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _go_value(value: Any) -> str:
    """A bad value as ``field.Error`` prints it (strings quoted, numbers and booleans bare)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _schema_type(path: str, value: Any, type_name: str) -> Cause:
    """kube-openapi's type failure as the CRD handler reports it (``field.TypeInvalid``)."""
    detail = f"{path} in body must be of type {type_name}"
    if isinstance(value, str):
        detail += f": {json.dumps(value)}"
    return Cause(path, "FieldValueTypeInvalid", f"Invalid value: {_go_value(value)}: {detail}")


def _schema_invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, "FieldValueInvalid", f"Invalid value: {_go_value(value)}: {path} in body {detail}")


def _schema_integer(path: str, value: Any, *, minimum: int | None = None) -> list[Cause]:
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int):
        return [_schema_type(path, value, "integer")]
    if minimum is not None and value < minimum:
        return [_schema_invalid(path, value, f"should be greater than or equal to {minimum}")]
    return []


def _schema_string(path: str, value: Any, *, date_time: bool = False) -> list[Cause]:
    if value is None:
        return []
    if not isinstance(value, str):
        return [_schema_type(path, value, "string")]
    if date_time and not _DATE_TIME.match(value):
        return [_schema_type(path, value, "date-time")]
    return []


def _schema_object(path: str, value: Any) -> dict[str, Any] | Cause:
    if value is None:
        return {}
    if not isinstance(value, dict):
        return _schema_type(path, value, "object")
    return value


def validate_pod_group(pg: dict[str, Any]) -> list[Cause]:
    """The PodGroup CRD's OpenAPI schema (scheduling.x-k8s.io/v1alpha1), as kube-apiserver checks a custom
    resource: minMember at least 1, minResources quantities (integers or the quantity pattern), integer counts."""
    causes = validate_metadata(pg, namespaced=True)
    spec = _schema_object("spec", pg.get("spec"))
    if isinstance(spec, Cause):
        causes.append(spec)
    else:
        causes += _schema_integer("spec.minMember", spec.get("minMember"), minimum=1)
        causes += _schema_integer("spec.scheduleTimeoutSeconds", spec.get("scheduleTimeoutSeconds"))
        resources = _schema_object("spec.minResources", spec.get("minResources"))
        if isinstance(resources, Cause):
            causes.append(resources)
        else:
            for name, quantity in resources.items():
                path = f"spec.minResources.{name}"
                if isinstance(quantity, str):
                    if not _QUANTITY.fullmatch(quantity):
                        causes.append(_schema_invalid(path, quantity, f"should match '{QUANTITY_PATTERN}'"))
                elif isinstance(quantity, bool) or not isinstance(quantity, int):
                    causes.append(_schema_type(path, quantity, "integer"))
    status = _schema_object("status", pg.get("status"))
    if isinstance(status, Cause):
        causes.append(status)
    else:
        for field in ("phase", "occupiedBy"):
            causes += _schema_string(f"status.{field}", status.get(field))
        for field in ("running", "succeeded", "failed"):
            causes += _schema_integer(f"status.{field}", status.get(field))
        causes += _schema_string("status.scheduleStartTime", status.get("scheduleStartTime"), date_time=True)
    return causes


# ---------------------------------------------------------------------------------------------- Workload (alpha)

WORKLOAD_MAX_POD_GROUPS = 8


def _path_segment_errors(value: str) -> list[str]:
    """``path.IsValidPathSegmentName``."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def _controller_ref_errors(path: str, ref: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    group = ref.get("apiGroup") or ""
    if group:
        causes += name_errors(f"{path}.apiGroup", group)
    for field in ("kind", "name"):
        value = ref.get(field) or ""
        if not value:
            causes.append(required(f"{path}.{field}"))
        else:
            causes += [invalid(f"{path}.{field}", value, msg) for msg in _path_segment_errors(value)]
    return causes


def _pod_group_policy_errors(path: str, policy: dict[str, Any]) -> list[Cause]:
    chosen = [f"`{name}`" for name in ("basic", "gang") if policy.get(name) is not None]
    if not chosen:
        return [required(path, "exactly one of `basic`, `gang` is required")]
    if len(chosen) > 1:
        detail = "exactly one of `basic`, `gang` is required, but multiple fields are set"
        return [invalid(path, "{" + ", ".join(chosen) + "}", detail)]
    gang = policy.get("gang")
    if isinstance(gang, dict):
        count = gang.get("minCount") or 0
        if count <= 0:
            return [invalid(f"{path}.gang.minCount", count, "must be greater than zero")]
    return []


def validate_workload(workload: dict[str, Any]) -> list[Cause]:
    """ValidateWorkload (v1.35): a controllerRef that names its object, one to eight pod groups with unique
    DNS-label names, each with exactly one policy (``basic``, or ``gang`` with a positive minCount)."""
    causes = validate_metadata(workload, namespaced=True)
    spec = workload.get("spec") or {}
    if isinstance(spec.get("controllerRef"), dict):
        causes += _controller_ref_errors("spec.controllerRef", spec["controllerRef"])
    groups = spec.get("podGroups") or []
    if not groups:
        causes.append(required("spec.podGroups", "must have at least one item"))
    elif len(groups) > WORKLOAD_MAX_POD_GROUPS:
        causes.append(
            Cause(
                "spec.podGroups",
                "FieldValueTooMany",
                f"Too many: {len(groups)}: must have at most {WORKLOAD_MAX_POD_GROUPS} items",
            )
        )
    else:
        seen: set[str] = set()
        for i, group in enumerate(groups):
            path = f"spec.podGroups[{i}]"
            name = str(group.get("name") or "")
            causes += name_errors(f"{path}.name", name, label=True)
            if name in seen:
                causes.append(duplicate(f"{path}.name", name))
            seen.add(name)
            causes += _pod_group_policy_errors(f"{path}.policy", group.get("policy") or {})
    return causes


def validate_workload_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """ValidateWorkloadUpdate (v1.35): the create rules, a controllerRef fixed once set, podGroups immutable
    (reported at ``controllerRef`` and ``podGroups``, the paths v1.35 uses)."""
    causes = validate_workload(new)
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    for field in ("controllerRef", "podGroups"):
        if field == "controllerRef" and old_spec.get(field) is None:
            continue  # may be set later, then never changed
        if new_spec.get(field) != old_spec.get(field):
            shown = _go_value(new_spec.get(field))
            causes.append(Cause(field, "FieldValueInvalid", f"Invalid value: {shown}: field is immutable"))
    return causes


# ------------------------------------------------------------------------------ Workload and PodGroup (v1alpha2)

DISRUPTION_MODES = ["Pod", "PodGroup"]
# v1.36 takes one topology constraint per group (``+k8s:maxItems=1``; "this may change in the future").
MAX_TOPOLOGY_CONSTRAINTS = 1


def _scheduling_policy_errors(path: str, policy: dict[str, Any]) -> list[Cause]:
    """validatePodGroupSchedulingPolicy (v1.36): exactly one of ``basic`` and ``gang``; a gang's minCount set
    and positive."""
    chosen = [f"`{name}`" for name in ("basic", "gang") if policy.get(name) is not None]
    if not chosen:
        return [invalid(path, "", "must specify one of: `basic`, `gang`")]
    if len(chosen) > 1:
        detail = "exactly one of `basic`, `gang` is required, but multiple fields are set"
        return [invalid(path, "{" + ", ".join(chosen) + "}", detail)]
    gang = policy.get("gang")
    if isinstance(gang, dict):
        count = gang.get("minCount") or 0
        if count == 0:
            return [required(f"{path}.gang.minCount")]
        if count < 0:
            return [invalid(f"{path}.gang.minCount", count, "must be greater than zero")]
    return []


def _short_name_errors(path: str, value: Any) -> list[Cause]:
    """A required DNS label (ValidatePodGroupName): Required when empty, as declarative validation says it."""
    text = str(value or "")
    return [required(path)] if not text else name_errors(path, text, label=True)


def _scheduling_constraints_errors(path: str, constraints: dict[str, Any]) -> list[Cause]:
    """PodGroupSchedulingConstraints' declarative rules (v1.36): at most one topology constraint (too many stops
    there, as ``maxItems`` short-circuits the items' checks), each with a required label-key ``key``."""
    topology = constraints.get("topology") or []
    at = f"{path}.topology"
    if len(topology) > MAX_TOPOLOGY_CONSTRAINTS:
        item = "item" if MAX_TOPOLOGY_CONSTRAINTS == 1 else "items"
        detail = f"Too many: {len(topology)}: must have at most {MAX_TOPOLOGY_CONSTRAINTS} {item}"
        return [Cause(at, "FieldValueTooMany", detail)]
    causes: list[Cause] = []
    for i, constraint in enumerate(topology):
        key = str((constraint or {}).get("key") or "")
        if not key:
            causes.append(required(f"{at}[{i}].key"))
        else:
            causes += [invalid(f"{at}[{i}].key", key, msg) for msg in label_key_errors(key)]
    return causes


def _group_fields_errors(path: str, group: dict[str, Any]) -> list[Cause]:
    """The fields a pod group template and a PodGroup's spec share: the scheduling policy, the scheduling
    constraints, a disruption mode."""
    causes = _scheduling_policy_errors(f"{path}.schedulingPolicy", group.get("schedulingPolicy") or {})
    constraints = group.get("schedulingConstraints")
    if isinstance(constraints, dict):
        causes += _scheduling_constraints_errors(f"{path}.schedulingConstraints", constraints)
    mode = group.get("disruptionMode")
    if mode is not None and mode not in DISRUPTION_MODES:
        causes.append(not_supported(f"{path}.disruptionMode", mode, DISRUPTION_MODES))
    return causes


def validate_workload_v1alpha2(workload: dict[str, Any]) -> list[Cause]:
    """ValidateWorkload (v1.36): a controllerRef that names its object, one to eight pod group templates with
    unique DNS-label names, each with exactly one scheduling policy."""
    causes = validate_metadata(workload, namespaced=True)
    spec = workload.get("spec") or {}
    if isinstance(spec.get("controllerRef"), dict):
        causes += _controller_ref_errors("spec.controllerRef", spec["controllerRef"])
    causes += _templates_errors(spec, check_each=True)
    return causes


def _templates_errors(spec: dict[str, Any], *, check_each: bool) -> list[Cause]:
    templates = spec.get("podGroupTemplates") or []
    path = "spec.podGroupTemplates"
    if not templates:
        return [required(path, "must have at least one item")]
    if len(templates) > WORKLOAD_MAX_POD_GROUPS:
        detail = f"Too many: {len(templates)}: must have at most {WORKLOAD_MAX_POD_GROUPS} items"
        return [Cause(path, "FieldValueTooMany", detail)]
    causes: list[Cause] = []
    if not check_each:  # immutable after create: the update checks only that they did not change
        return causes
    seen: set[str] = set()
    for i, template in enumerate(templates):
        at = f"{path}[{i}]"
        name = str(template.get("name") or "")
        causes += _short_name_errors(f"{at}.name", name)
        if name in seen:
            causes.append(duplicate(at, name))
        seen.add(name)
        causes += _group_fields_errors(at, template)
    return causes


def _immutable(path: str, new: Any, old: Any) -> list[Cause]:
    if new == old:
        return []
    return [Cause(path, "FieldValueInvalid", f"Invalid value: {_go_value(new)}: field is immutable")]


def validate_workload_v1alpha2_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """ValidateWorkloadUpdate (v1.36): a controllerRef fixed once set, the pod group templates immutable."""
    causes = validate_metadata(new, namespaced=True)
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if old_spec.get("controllerRef") is not None:
        causes += _immutable("spec.controllerRef", new_spec.get("controllerRef"), old_spec.get("controllerRef"))
    elif isinstance(new_spec.get("controllerRef"), dict):
        causes += _controller_ref_errors("spec.controllerRef", new_spec["controllerRef"])
    causes += _immutable("spec.podGroupTemplates", new_spec.get("podGroupTemplates"), old_spec.get("podGroupTemplates"))
    causes += _templates_errors(new_spec, check_each=False)
    return causes


def validate_pod_group_v1alpha2(group: dict[str, Any]) -> list[Cause]:
    """ValidatePodGroup (v1.36): a template reference naming its Workload and template, and the fields it shares
    with a template."""
    causes = validate_metadata(group, namespaced=True)
    spec = group.get("spec") or {}
    ref = (spec.get("podGroupTemplateRef") or {}).get("workload")
    if isinstance(ref, dict):
        at = "spec.podGroupTemplateRef.workload"
        causes += _short_name_errors(f"{at}.workloadName", ref.get("workloadName"))
        causes += _short_name_errors(f"{at}.podGroupTemplateName", ref.get("podGroupTemplateName"))
    causes += _group_fields_errors("spec", spec)
    return causes


# The PodGroup's spec fields fixed at create (the scheduler reads them once per group).
_POD_GROUP_IMMUTABLE = ("podGroupTemplateRef", "schedulingPolicy", "schedulingConstraints")


def validate_pod_group_v1alpha2_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """ValidatePodGroupUpdate (v1.36): the template reference and the scheduling policy and constraints are
    immutable."""
    causes = validate_metadata(new, namespaced=True)
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    for field in _POD_GROUP_IMMUTABLE:
        causes += _immutable(f"spec.{field}", new_spec.get(field), old_spec.get(field))
    return causes
