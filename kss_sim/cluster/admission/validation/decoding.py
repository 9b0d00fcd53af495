"""Decoding errors (400) as kube-apiserver's typed JSON decoder reports them.

``check_decodable`` mirrors what the decoder rejects (wrong types, unparsable quantities), so such bodies get
``BadRequest`` before any field validation; ``expect`` and ``type_error`` are the shared pieces other kinds' decode
checks (DRA, apps/batch) build on.
"""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.admission.go_values import quantity_text
from kss_sim.cluster.errors import BadRequest
from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import QuantityError, parse_quantity


def type_error(kind: str, path: str, want: str, value: Any, version: str = "v1") -> BadRequest:
    got = {str: "string", int: "number", float: "number", bool: "bool", list: "array", dict: "object"}.get(
        type(value), "null"
    )
    return BadRequest(
        f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot unmarshal {got} into Go struct '
        f"field {path} of type {want}"
    )


def expect_type(
    kind: str, path: str, value: Any, want: type | tuple[type, ...], go_type: str, version: str = "v1"
) -> None:
    if value is None:
        return
    if isinstance(value, bool) and bool not in (want if isinstance(want, tuple) else (want,)):
        raise type_error(kind, path, go_type, value, version)
    if not isinstance(value, want):
        raise type_error(kind, path, go_type, value, version)


def _string_map(kind: str, path: str, value: Any) -> None:
    expect_type(kind, path, value, dict, "map[string]string")
    for v in (value or {}).values():
        if not isinstance(v, str):
            raise type_error(kind, path, "string", v)


def _quantity_map(kind: str, path: str, value: Any) -> None:
    expect_type(kind, path, value, dict, "v1.ResourceList")
    for v in (value or {}).values():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise type_error(kind, path, "resource.Quantity", v)
        try:
            parse_quantity(quantity_text(v))
        except QuantityError as exc:
            raise BadRequest(f'{kind} in version "v1" cannot be handled as a {kind}: {exc}') from None


def check_decodable(kind: str, obj: dict[str, Any], *, version: str = "v1", custom: bool = False) -> None:
    """Raise ``BadRequest`` where the typed decoder of kube-apiserver would fail (``version``: the kind's API
    version; a ``custom`` kind is decoded as unstructured, so only its metadata can fail here)."""
    meta = obj.get("metadata")
    expect_type(kind, "metadata", meta, dict, "v1.ObjectMeta", version)
    meta = meta or {}
    for field in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        expect_type(kind, f"metadata.{field}", meta.get(field), str, "string", version)
    _string_map(kind, "metadata.labels", meta.get("labels"))
    _string_map(kind, "metadata.annotations", meta.get("annotations"))
    expect_type(kind, "metadata.finalizers", meta.get("finalizers"), list, "[]string", version)
    if custom:
        return  # the schema says what is wrong with the rest, as a 422 (validate_pod_group)
    spec = obj.get("spec")
    expect_type(kind, "spec", spec, dict, f"{version}.{kind}Spec", version)
    expect_type(kind, "status", obj.get("status"), dict, f"{version}.{kind}Status", version)
    spec = spec or {}
    if kind == "Workload" and version == "v1alpha1":
        _check_workload_decodable(spec)
    elif kind in ("Workload", "PodGroup") and version == "v1alpha2":
        _check_v1alpha2_decodable(kind, spec)
    if kind == "Pod":
        for field in ("containers", "initContainers", "tolerations", "volumes", "topologySpreadConstraints"):
            expect_type(kind, f"spec.{field}", spec.get(field), list, "[]v1.Container")
        _string_map(kind, "spec.nodeSelector", spec.get("nodeSelector"))
        for field in ("nodeName", "schedulerName", "priorityClassName", "restartPolicy"):
            expect_type(kind, f"spec.{field}", spec.get(field), str, "string")
        expect_type(kind, "spec.priority", spec.get("priority"), int, "int32")
        for field in ("containers", "initContainers"):
            for c in spec.get(field) or []:
                expect_type(kind, f"spec.{field}", c, dict, "v1.Container")
                resources = c.get("resources")
                expect_type(kind, f"spec.{field}.resources", resources, dict, "v1.ResourceRequirements")
                for part in ("requests", "limits"):
                    _quantity_map(kind, f"spec.{field}.resources.{part}", (resources or {}).get(part))
        pod_resources = spec.get("resources")
        if isinstance(pod_resources, dict):
            for part in ("requests", "limits"):
                _quantity_map(kind, f"spec.resources.{part}", pod_resources.get(part))
        _quantity_map(kind, "spec.overhead", spec.get("overhead"))
        ref = spec.get("workloadRef")
        expect_type(kind, "spec.workloadRef", ref, dict, "v1.WorkloadReference")
        for field in ("name", "podGroup", "podGroupReplicaKey"):
            expect_type(kind, f"spec.workloadRef.{field}", (ref or {}).get(field), str, "string")
    elif kind == "Node":
        status = obj.get("status") or {}
        for part in ("capacity", "allocatable"):
            _quantity_map(kind, f"status.{part}", status.get(part))
        expect_type(kind, "spec.taints", spec.get("taints"), list, "[]v1.Taint")
        expect_type(kind, "spec.unschedulable", spec.get("unschedulable"), bool, "bool")
    elif kind == "PersistentVolume":
        _quantity_map(kind, "spec.capacity", spec.get("capacity"))
    elif kind == "PersistentVolumeClaim":
        _quantity_map(kind, "spec.resources.requests", (spec.get("resources") or {}).get("requests"))
    elif kind == "PriorityClass":
        value = obj.get("value")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise type_error(kind, "value", "int32", value)


def _check_v1alpha2_decodable(kind: str, spec: dict[str, Any]) -> None:
    """The typed decoder's view of a v1alpha2 WorkloadSpec or PodGroupSpec (v1.36)."""

    def expect(path: str, value: Any, want: type | tuple[type, ...], go_type: str) -> None:
        expect_type(kind, path, value, want, go_type, "v1alpha2")

    def group_fields(path: str, group: dict[str, Any]) -> None:
        policy = group.get("schedulingPolicy")
        expect(f"{path}.schedulingPolicy", policy, dict, "v1alpha2.PodGroupSchedulingPolicy")
        gang = (policy or {}).get("gang")
        expect(f"{path}.schedulingPolicy.gang", gang, dict, "v1alpha2.GangSchedulingPolicy")
        expect(f"{path}.schedulingPolicy.gang.minCount", (gang or {}).get("minCount"), int, "int32")
        expect(f"{path}.priority", group.get("priority"), int, "int32")
        for field in ("disruptionMode", "priorityClassName"):
            expect(f"{path}.{field}", group.get(field), str, "string")

    if kind == "PodGroup":
        group_fields("spec", spec)
        return
    templates = spec.get("podGroupTemplates")
    expect("spec.podGroupTemplates", templates, list, "[]v1alpha2.PodGroupTemplate")
    for template in templates or []:
        expect("spec.podGroupTemplates", template, dict, "v1alpha2.PodGroupTemplate")
        expect("spec.podGroupTemplates.name", template.get("name"), str, "string")
        group_fields("spec.podGroupTemplates", template)


def _check_workload_decodable(spec: dict[str, Any]) -> None:
    """The typed decoder's view of a v1alpha1 WorkloadSpec."""

    def expect(path: str, value: Any, want: type | tuple[type, ...], go_type: str) -> None:
        expect_type("Workload", path, value, want, go_type, "v1alpha1")

    ref = spec.get("controllerRef")
    expect("spec.controllerRef", ref, dict, "v1alpha1.TypedLocalObjectReference")
    for field in ("apiGroup", "kind", "name"):
        expect(f"spec.controllerRef.{field}", (ref or {}).get(field), str, "string")
    groups = spec.get("podGroups")
    expect("spec.podGroups", groups, list, "[]v1alpha1.PodGroup")
    for group in groups or []:
        expect("spec.podGroups", group, dict, "v1alpha1.PodGroup")
        expect("spec.podGroups.name", group.get("name"), str, "string")
        policy = group.get("policy")
        expect("spec.podGroups.policy", policy, dict, "v1alpha1.PodGroupPolicy")
        expect("spec.podGroups.policy.basic", (policy or {}).get("basic"), dict, "v1alpha1.BasicSchedulingPolicy")
        gang = (policy or {}).get("gang")
        expect("spec.podGroups.policy.gang", gang, dict, "v1alpha1.GangSchedulingPolicy")
        expect("spec.podGroups.policy.gang.minCount", (gang or {}).get("minCount"), int, "int32")


# ---------------------------------------------------------------------------------------------- apps/v1, batch/v1

_INT32 = "int32"


def _check_template_decodable(kind: str, version: str, struct: str, path: str, template: Any) -> None:
    expect_type(kind, f"{struct}.{path}", template, dict, "v1.PodTemplateSpec", version)
    if not isinstance(template, dict):
        return
    expect_type(kind, f"PodTemplateSpec.{path}.metadata", template.get("metadata"), dict, "v1.ObjectMeta", version)
    expect_type(kind, f"PodTemplateSpec.{path}.spec", template.get("spec"), dict, "v1.PodSpec", version)
    meta = template.get("metadata") or {}
    for part in ("labels", "annotations"):
        values = meta.get(part)
        expect_type(kind, f"ObjectMeta.{path}.metadata.{part}", values, dict, "map[string]string", version)
        for value in (values or {}).values():
            expect_type(kind, f"ObjectMeta.{path}.metadata.{part}", value, str, "string", version)
    try:
        check_decodable("Pod", {"spec": template.get("spec")})
    except BadRequest as exc:
        # The pod decoder's words, told of this kind and this place.
        message = exc.message.replace('Pod in version "v1" cannot be handled as a Pod', "", 1)
        message = message.replace("Go struct field spec.", f"Go struct field {path}.spec.")
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}{message}') from None


_INT_FIELDS: dict[str, tuple[str, ...]] = {
    "Deployment": ("replicas", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"),
    "ReplicaSet": ("replicas", "minReadySeconds"),
    "StatefulSet": ("replicas", "minReadySeconds", "revisionHistoryLimit"),
    "DaemonSet": ("minReadySeconds", "revisionHistoryLimit"),
    "Job": ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
            "backoffLimitPerIndex", "maxFailedIndexes"),
    "CronJob": ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"),
    "Lease": ("leaseDurationSeconds", "leaseTransitions"),
}  # fmt: skip
_BOOL_FIELDS: dict[str, tuple[str, ...]] = {
    "Deployment": ("paused",),
    "Job": ("suspend", "manualSelector"),
    "CronJob": ("suspend",),
}
_STRING_FIELDS: dict[str, tuple[str, ...]] = {
    "StatefulSet": ("serviceName", "podManagementPolicy"),
    "Job": ("completionMode", "podReplacementPolicy", "managedBy"),
    "CronJob": ("schedule", "timeZone", "concurrencyPolicy"),
    "Lease": ("holderIdentity", "strategy", "preferredHolder"),
}


def check_workload_decodable(kind: str, version: str, obj: Obj) -> None:
    """``BadRequest`` where kube-apiserver's typed decoder fails on a workload kind or a Lease (wrong JSON types in
    the spec, its selector and its pod template); the metadata is checked by ``check_decodable``."""
    spec = obj.get("spec")
    expect_type(kind, "spec", spec, dict, f"{version}.{kind}Spec", version)
    expect_type(kind, "status", obj.get("status"), dict, f"{version}.{kind}Status", version)
    if not isinstance(spec, dict):
        return
    struct = f"{kind}Spec"
    for field in _INT_FIELDS.get(kind, ()):
        expect_type(kind, f"{struct}.spec.{field}", spec.get(field), int, _INT32, version)
    for field in _BOOL_FIELDS.get(kind, ()):
        expect_type(kind, f"{struct}.spec.{field}", spec.get(field), bool, "bool", version)
    for field in _STRING_FIELDS.get(kind, ()):
        expect_type(kind, f"{struct}.spec.{field}", spec.get(field), str, "string", version)
    if kind == "Lease":
        return
    selector = spec.get("selector")
    expect_type(kind, f"{struct}.spec.selector", selector, dict, "v1.LabelSelector", version)
    if isinstance(selector, dict):
        expect_type(kind, "LabelSelector.spec.selector.matchLabels", selector.get("matchLabels"), dict,
                "map[string]string", version)  # fmt: skip
        expect_type(kind, "LabelSelector.spec.selector.matchExpressions", selector.get("matchExpressions"), list,
                "[]v1.LabelSelectorRequirement", version)  # fmt: skip
    for field in ("strategy", "updateStrategy"):
        expect_type(kind, f"{struct}.spec.{field}", spec.get(field), dict, f"{version}.{kind}Strategy", version)
    if kind == "CronJob":
        job_template = spec.get("jobTemplate")
        expect_type(kind, f"{struct}.spec.jobTemplate", job_template, dict, "v1.JobTemplateSpec", version)
        job_spec = (job_template or {}).get("spec")
        expect_type(kind, "JobTemplateSpec.spec.jobTemplate.spec", job_spec, dict, "v1.JobSpec", version)
        if isinstance(job_spec, dict):
            for field in _INT_FIELDS["Job"]:
                expect_type(kind, f"JobSpec.spec.jobTemplate.spec.{field}", job_spec.get(field), int, _INT32, version)
            _check_template_decodable(kind, version, "JobSpec", "spec.jobTemplate.spec.template",
                                      job_spec.get("template"))  # fmt: skip
        return
    _check_template_decodable(kind, version, struct, "spec.template", spec.get("template"))
