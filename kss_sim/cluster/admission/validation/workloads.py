"""Validation of the workload kinds (apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet, batch/v1 Job, CronJob)
and coordination.k8s.io/v1 Lease as kube-apiserver v1.35 does it: what its typed decoder refuses (400) and the
field errors of pkg/apis/apps, batch and coordination validation and the REST strategies' update rules (422),
with upstream's field paths and messages. Pod templates are checked with the pod validator under
``spec.template.spec``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kss_sim.cluster.admission.cron import CronError, parse_standard
from kss_sim.cluster.admission.defaults.workloads import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
)
from kss_sim.cluster.admission.validation import core
from kss_sim.cluster.admission.validation.core import validate_pod
from kss_sim.cluster.admission.validation.decoding import check_decodable, type_error
from kss_sim.cluster.admission.validation.metadata import (
    qualified_name_errors,
    selector_errors,
    validate_labels,
    validate_metadata,
)
from kss_sim.cluster.errors import BadRequest, Cause, forbidden, invalid, not_supported, required
from kss_sim.kube.labels import SelectorError, label_selector_matches, validate_label_selector
from kss_sim.kube.objects import Obj

_INT32 = "int32"


# ---------------------------------------------------------------------------------------------- Go's %#v of values


def go_string_map(values: Any) -> str:
    """A ``map[string]string`` as Go's ``%#v`` prints it (keys sorted)."""
    if not values:
        return "map[string]string(nil)" if values is None else "map[string]string{}"
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(values.items()))
    return f"map[string]string{{{inner}}}"


def go_label_selector(selector: Any) -> str:
    """A ``metav1.LabelSelector`` (dereferenced) as Go's ``%#v`` prints it in a field error."""
    if not isinstance(selector, dict):
        return "null"
    exprs = selector.get("matchExpressions")
    if exprs:
        items = []
        for e in exprs:
            values = e.get("values")
            shown = "[]string(nil)" if not values else "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
            items.append(
                f'v1.LabelSelectorRequirement{{Key:"{e.get("key", "")}", Operator:"{e.get("operator", "")}", '
                f"Values:{shown}}}"
            )
        expr_text = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    else:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels'))}, MatchExpressions:{expr_text}}}"


def _invalid_raw(field: str, shown: str, detail: str) -> Cause:
    """``field.Invalid`` with a value already rendered as Go renders it."""
    return Cause(field, "FieldValueInvalid", f"Invalid value: {shown}: {detail}")


def _immutable(field: str, new: Any, old: Any, shown: str | None = None) -> list[Cause]:
    """``ValidateImmutableField``."""
    if new == old:
        return []
    if shown is None:
        shown = "null" if new is None else (f'"{new}"' if isinstance(new, str) else str(new).lower() if isinstance(
            new, bool) else str(new))  # fmt: skip
    return [_invalid_raw(field, shown, "field is immutable")]


# ---------------------------------------------------------------------------------------------- decoding (400)


def expect_type(kind: str, path: str, value: Any, want: type | tuple[type, ...], go_type: str, version: str) -> None:
    if value is None:
        return
    wanted = want if isinstance(want, tuple) else (want,)
    if (isinstance(value, bool) and bool not in wanted) or not isinstance(value, want):
        raise type_error(kind, path, go_type, value, version)


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


# ---------------------------------------------------------------------------------------------- shared rules (422)


def _nonnegative(path: str, value: Any) -> list[Cause]:
    """``ValidateNonnegativeField``."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []


def pod_template_errors(template: Any, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpec`` at ``path``: its labels and annotations, and its spec as the pod validator checks
    a pod's (paths ``{path}.spec...``); ephemeral containers are not allowed in a template."""
    if not isinstance(template, dict):
        return [required(path)]
    meta = template.get("metadata") or {}
    causes = validate_labels(f"{path}.labels", meta.get("labels"))
    for key in meta.get("annotations") or {}:
        causes += qualified_name_errors(f"{path}.annotations", key.lower())
    spec = template.get("spec") or {}
    pod = {"metadata": {"name": "template", "namespace": "template"}, "spec": spec}
    causes += [Cause(f"{path}.{c.field}", c.reason, c.message) for c in validate_pod(pod) if c.field.startswith("spec")]
    if spec.get("ephemeralContainers"):
        causes.append(forbidden(f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return causes


def _selector_valid(selector: Any) -> bool:
    """Whether ``LabelSelectorAsSelector`` succeeds."""
    if not isinstance(selector, dict):
        return selector is None
    try:
        validate_label_selector(selector)
    except SelectorError:
        return False
    return True


def _template_labels(template: Any) -> dict[str, str]:
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _selector_required_errors(spec: Obj, what: str) -> list[Cause]:
    """The apps kinds' selector: required, a valid label selector, not empty."""
    selector = spec.get("selector")
    if selector is None:
        return [required("spec.selector")]
    causes = selector_errors("spec.selector", selector)
    if isinstance(selector, dict) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(
            _invalid_raw("spec.selector", go_label_selector(selector), f"empty selector is invalid for {what}")
        )
    return causes


def _selector_matches_template(spec: Obj, path: str = "spec") -> list[Cause]:
    """ "`selector` does not match template `labels`" (a nil or empty selector matches nothing to compare)."""
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not _selector_valid(selector):
        return []
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return []
    labels = _template_labels(spec.get("template"))
    if label_selector_matches(selector, labels):
        return []
    shown = go_string_map(_template_labels(spec.get("template")) or None)
    return [_invalid_raw(f"{path}.template.metadata.labels", shown, "`selector` does not match template `labels`")]


def _restart_always(spec: Obj, kind: str) -> list[Cause]:
    template_spec = (spec.get("template") or {}).get("spec") or {}
    causes: list[Cause] = []
    if template_spec.get("restartPolicy") != "Always":
        causes.append(not_supported("spec.template.spec.restartPolicy", template_spec.get("restartPolicy"), ["Always"]))
    if template_spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            forbidden("spec.template.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {kind} is not Supported")
        )
    return causes


_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent(path: str, value: Any) -> list[Cause]:
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``."""
    if value is None:
        return []
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [
                invalid(path, value, "a valid percent string must be a numeric string followed by an ending '%' "
                        "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")
            ]  # fmt: skip
        if int(value[:-1]) > 100:
            return [invalid(path, value, "must not be greater than 100%")]
        return []
    if isinstance(value, int) and not isinstance(value, bool):
        return _nonnegative(path, value)
    return [invalid(path, str(value), "must be an integer or percentage (e.g '5%')")]


def _int_or_percent_value(value: Any) -> int:
    if isinstance(value, str) and _PERCENT.match(value):
        return int(value[:-1])
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ---------------------------------------------------------------------------------------------- apps/v1


def _deployment_strategy(strategy: Obj) -> list[Cause]:
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        if not isinstance(rolling, dict):
            return [required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil")]
        path = "spec.strategy.rollingUpdate"
        causes = _int_or_percent(f"{path}.maxUnavailable", rolling.get("maxUnavailable"))
        causes += _int_or_percent(f"{path}.maxSurge", rolling.get("maxSurge"))
        if (
            _int_or_percent_value(rolling.get("maxUnavailable")) == 0
            and _int_or_percent_value(rolling.get("maxSurge")) == 0
        ):
            causes.append(
                invalid(f"{path}.maxUnavailable", rolling.get("maxUnavailable"), "may not be 0 when `maxSurge` is 0")
            )
        return causes
    return [not_supported("spec.strategy", kind, ["Recreate", "RollingUpdate"])]


def _replica_set_like(spec: Obj, kind: str, what: str) -> list[Cause]:
    """ValidateReplicaSetSpec / the shared part of ValidateDeploymentSpec."""
    causes = _nonnegative("spec.replicas", spec.get("replicas"))
    causes += _selector_required_errors(spec, what)
    if not _selector_valid(spec.get("selector")):
        causes.append(_invalid_raw("spec.selector", go_label_selector(spec.get("selector")), "invalid label selector"))
    else:
        causes += _selector_matches_template(spec)
        causes += pod_template_errors(spec.get("template"), "spec.template")
        causes += _restart_always(spec, kind)
    return causes


def validate_deployment(obj: Obj) -> list[Cause]:
    """ValidateDeployment."""
    causes = validate_metadata(obj, namespaced=True)
    spec = obj.get("spec") or {}
    causes += _replica_set_like(spec, "ReplicaSet", "deployment")
    causes += _deployment_strategy(spec.get("strategy") or {})
    causes += _nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    causes += _nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        causes += _nonnegative("spec.progressDeadlineSeconds", deadline)
        if deadline <= (spec.get("minReadySeconds") or 0):
            causes.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return causes


def validate_replica_set(obj: Obj) -> list[Cause]:
    """ValidateReplicaSet (its selector message says "deployment", as upstream's does)."""
    causes = validate_metadata(obj, namespaced=True)
    spec = obj.get("spec") or {}
    causes += _nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    return causes + _replica_set_like(spec, "ReplicaSet", "deployment")


def validate_stateful_set(obj: Obj) -> list[Cause]:
    """ValidateStatefulSet: a DNS-label name; its template's labels, annotations and restart policy (v1.35 leaves
    the rest of the pod spec to the pods)."""
    causes = validate_metadata(obj, namespaced=True, label_name=True)
    spec = obj.get("spec") or {}
    policy = spec.get("podManagementPolicy")
    if not policy:
        causes.append(required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        causes.append(invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = spec.get("updateStrategy") or {}
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if not kind:
        causes.append(required("spec.updateStrategy"))
    elif kind == "OnDelete":
        if rolling is not None:
            causes.append(_invalid_raw("spec.updateStrategy.rollingUpdate", str(rolling),
                                       "only allowed for updateStrategy 'RollingUpdate'"))  # fmt: skip
    elif kind == "RollingUpdate":
        if isinstance(rolling, dict):
            causes += _nonnegative("spec.updateStrategy.rollingUpdate.partition", rolling.get("partition"))
            unavailable = rolling.get("maxUnavailable")
            if unavailable is not None:
                path = "spec.updateStrategy.rollingUpdate.maxUnavailable"
                causes += _int_or_percent(path, unavailable)
                if _int_or_percent_value(unavailable) == 0:
                    causes.append(invalid(path, unavailable, "cannot be 0"))
    else:
        causes.append(_invalid_raw("spec.updateStrategy", str(strategy), "must be 'RollingUpdate' or 'OnDelete'"))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for field in ("whenDeleted", "whenScaled"):
            if retention.get(field) not in ("Retain", "Delete"):
                causes.append(not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{field}",
                                            retention.get(field), ["Retain", "Delete"]))  # fmt: skip
    causes += _nonnegative("spec.replicas", spec.get("replicas"))
    causes += _nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        causes += _nonnegative("spec.ordinals.start", ordinals.get("start"))
    causes += _selector_required_errors(spec, "statefulset")
    if not _selector_valid(spec.get("selector")):
        causes.append(_invalid_raw("spec.selector", go_label_selector(spec.get("selector")), ""))
    else:
        causes += _selector_matches_template(spec)
        meta = (spec.get("template") or {}).get("metadata") or {}
        causes += validate_labels("spec.template.labels", meta.get("labels"))
        for key in meta.get("annotations") or {}:
            causes += qualified_name_errors("spec.template.annotations", key.lower())
    return causes + _restart_always(spec, "StatefulSet")


def validate_daemon_set(obj: Obj) -> list[Cause]:
    """ValidateDaemonSet."""
    causes = validate_metadata(obj, namespaced=True)
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    causes += selector_errors("spec.selector", selector) if selector is not None else []
    if selector is None:
        causes.append(required("spec.selector"))
    causes += _selector_matches_template(spec)
    if isinstance(selector, dict) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(
            _invalid_raw("spec.selector", go_label_selector(selector), "empty selector is invalid for daemonset")
        )
    causes += pod_template_errors(spec.get("template"), "spec.template")
    causes += _restart_always(spec, "DaemonSet")
    causes += _nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    strategy = spec.get("updateStrategy") or {}
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if kind == "RollingUpdate":
        if not isinstance(rolling, dict):
            causes.append(required("spec.updateStrategy.rollingUpdate"))
        else:
            path = "spec.updateStrategy.rollingUpdate"
            unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
            causes += _int_or_percent(f"{path}.maxUnavailable", unavailable)
            causes += _int_or_percent(f"{path}.maxSurge", surge)
            has_unavailable = _int_or_percent_value(unavailable) != 0
            has_surge = _int_or_percent_value(surge) != 0
            if has_unavailable and has_surge:
                causes.append(invalid(f"{path}.maxSurge", surge, "may not be set when maxUnavailable is non-zero"))
            elif not has_unavailable and not has_surge:
                causes.append(required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    elif kind != "OnDelete":
        causes.append(not_supported("spec.updateStrategy", kind, ["RollingUpdate", "OnDelete"]))
    causes += _nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    return causes


_STATUS_COUNTERS = {
    "Deployment": ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                   "unavailableReplicas", "collisionCount"),
    "ReplicaSet": ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"),
    "StatefulSet": ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
                    "observedGeneration", "collisionCount"),
    "DaemonSet": ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                  "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
                  "collisionCount"),
    "Job": ("active", "succeeded", "failed"),
}  # fmt: skip
_NOT_ABOVE_REPLICAS = {
    "Deployment": ("updatedReplicas", "readyReplicas", "availableReplicas"),
    "ReplicaSet": ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
    "StatefulSet": ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"),
}


def validate_status(kind: str, obj: Obj, old: Obj | None = None) -> list[Cause]:
    """The status rules of Validate<Kind>StatusUpdate: counters never negative nor above ``status.replicas``, no
    more available than ready, a collision count never decremented."""
    raw_status = obj.get("status")
    status: Obj = raw_status if isinstance(raw_status, dict) else {}
    causes: list[Cause] = []
    for field in _STATUS_COUNTERS.get(kind, ()):
        causes += _nonnegative(f"status.{field}", status.get(field))
    replicas = status.get("replicas") or 0
    for field in _NOT_ABOVE_REPLICAS.get(kind, ()):
        value = status.get(field) or 0
        if isinstance(value, int) and isinstance(replicas, int) and value > replicas:
            causes.append(invalid(f"status.{field}", value, "cannot be greater than status.replicas"))
    if kind in _NOT_ABOVE_REPLICAS:
        available, ready = status.get("availableReplicas") or 0, status.get("readyReplicas") or 0
        if isinstance(available, int) and isinstance(ready, int) and available > ready:
            detail = "cannot be greater than status.readyReplicas" if kind == "StatefulSet" else (
                "cannot be greater than readyReplicas")  # fmt: skip
            causes.append(invalid("status.availableReplicas", available, detail))
    if old is not None:
        new_count = status.get("collisionCount")
        old_count = (old.get("status") or {}).get("collisionCount")
        if isinstance(old_count, int) and (new_count is None or (isinstance(new_count, int) and new_count < old_count)):
            causes.append(invalid("status.collisionCount", new_count or 0, "cannot be decremented"))
    return causes


# ---------------------------------------------------------------------------------------------- batch/v1

_COMPLETION_MODES = ["NonIndexed", "Indexed"]
_MAX_PARALLELISM_INDEXED = 100_000


def _job_spec_errors(spec: Obj, path: str) -> list[Cause]:
    """validateJobSpec at ``path`` (``spec`` or a CronJob's ``spec.jobTemplate.spec``)."""
    causes: list[Cause] = []
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                  "backoffLimitPerIndex", "maxFailedIndexes"):  # fmt: skip
        causes += _nonnegative(f"{path}.{field}", spec.get(field))
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        causes.append(required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    mode = spec.get("completionMode")
    if mode is not None and mode not in _COMPLETION_MODES:
        causes.append(not_supported(f"{path}.completionMode", mode, _COMPLETION_MODES))
    if mode == "Indexed":
        if spec.get("completions") is None:
            causes.append(required(f"{path}.completions", "when completion mode is Indexed"))
        parallelism = spec.get("parallelism")
        if isinstance(parallelism, int) and parallelism > _MAX_PARALLELISM_INDEXED:
            causes.append(invalid(f"{path}.parallelism", parallelism,
                                  f"must be less than or equal to {_MAX_PARALLELISM_INDEXED} when completion mode is "
                                  "Indexed"))  # fmt: skip
    elif mode in (None, "NonIndexed"):
        for field in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(field) is not None:
                causes.append(invalid(f"{path}.{field}", spec[field], "requires indexed completion mode"))
    policy = spec.get("podFailurePolicy")
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = ["Failed"] if policy is not None else ["Failed", "TerminatingOrFailed"]
        if replacement not in allowed:
            causes.append(not_supported(f"{path}.podReplacementPolicy", replacement, allowed))
    causes += pod_template_errors(spec.get("template"), f"{path}.template")
    restart = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    restart_path = f"{path}.template.spec.restartPolicy"
    if restart in ("Always", "", None):
        causes.append(required(restart_path, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        causes.append(not_supported(restart_path, restart, ["OnFailure", "Never"]))
    elif policy is not None and restart != "Never":
        causes.append(invalid(restart_path, restart, 'only "Never" is supported when podFailurePolicy is specified'))
    return causes


def _has_label(labels: dict[str, str], key: str, expected: str) -> list[Cause]:
    """``ValidateHasLabel`` on the Job's template metadata."""
    path = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        return [required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [_invalid_raw(path, go_string_map(labels), f"must be '{expected}'")]
    return []


def _generated_selector_errors(job: Obj, require_prefixed: bool) -> list[Cause]:
    """validateGeneratedSelector: without ``manualSelector`` the template carries the Job's name and uid and the
    selector matches them."""
    spec = job.get("spec") or {}
    if spec.get("manualSelector") or spec.get("selector") is None:
        return []
    meta = job.get("metadata") or {}
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    causes: list[Cause] = [] if uid else [required("metadata.uid")]
    labels = _template_labels(spec.get("template"))
    causes += _has_label(labels, LEGACY_CONTROLLER_UID_LABEL, uid)
    causes += _has_label(labels, LEGACY_JOB_NAME_LABEL, name)
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if require_prefixed:
        causes += _has_label(labels, CONTROLLER_UID_LABEL, uid)
        causes += _has_label(labels, JOB_NAME_LABEL, name)
        expected.update({CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name})
    selector = spec.get("selector")
    if _selector_valid(selector) and not label_selector_matches(selector, expected):
        causes.append(_invalid_raw("spec.selector", go_label_selector(selector), "`selector` not auto-generated"))
    return causes


def _validate_job(job: Obj, *, require_prefixed: bool) -> list[Cause]:
    causes = validate_metadata(job, namespaced=True)
    causes += _generated_selector_errors(job, require_prefixed)
    spec = job.get("spec") or {}
    causes += _job_spec_errors(spec, "spec")
    selector = spec.get("selector")
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        causes += selector_errors("spec.selector", selector)
    if (
        _selector_valid(selector)
        and selector is not None
        and not label_selector_matches(selector, _template_labels(spec.get("template")))
    ):
        shown = go_string_map(_template_labels(spec.get("template")) or None)
        causes.append(
            _invalid_raw("spec.template.metadata.labels", shown, "`selector` does not match template `labels`")
        )
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 0:
        hostname = f"{(job.get('metadata') or {}).get('name', '')}-{completions - 1}"
        if len(hostname) > 63 or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", hostname):
            name = (job.get("metadata") or {}).get("name", "")
            causes.append(
                invalid("metadata.name", name, f"will not able to create pod with invalid DNS label: {hostname}")
            )
    return causes


def validate_job(job: Obj) -> list[Cause]:
    """ValidateJob (on create the ``batch.kubernetes.io/`` labels are required too)."""
    return _validate_job(job, require_prefixed=True)


_SCHEDULING_FIELDS = ("nodeSelector", "tolerations", "schedulingGates")


def _job_template_update_errors(new_spec: Obj, old_spec: Obj, old_status: Obj) -> list[Cause]:
    """validatePodTemplateUpdate: the template is immutable, except its scheduling directives, labels and
    annotations while the Job is suspended and has never started."""
    template, old_template = new_spec.get("template"), old_spec.get("template")
    if template == old_template:
        return []
    if old_spec.get("suspend") and not old_status.get("startTime") and isinstance(template, dict):
        relaxed = dict(old_template or {})
        relaxed_spec = dict(relaxed.get("spec") or {})
        new_template_spec = template.get("spec") or {}
        for field in _SCHEDULING_FIELDS:
            relaxed_spec.pop(field, None)
            if field in new_template_spec:
                relaxed_spec[field] = new_template_spec[field]
        affinity = dict(relaxed_spec.get("affinity") or {})
        new_affinity = new_template_spec.get("affinity") or {}
        affinity.pop("nodeAffinity", None)
        if "nodeAffinity" in new_affinity:
            affinity["nodeAffinity"] = new_affinity["nodeAffinity"]
        if affinity or "affinity" in new_template_spec:
            relaxed_spec["affinity"] = affinity
        else:
            relaxed_spec.pop("affinity", None)
        relaxed["spec"] = relaxed_spec
        relaxed["metadata"] = {**(relaxed.get("metadata") or {})}
        for field in ("labels", "annotations"):
            relaxed["metadata"].pop(field, None)
            if field in (template.get("metadata") or {}):
                relaxed["metadata"][field] = template["metadata"][field]
        if relaxed == template:
            return []
    return [_invalid_raw("spec.template", "core.PodTemplateSpec{...}", "field is immutable")]


def validate_job_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateJobUpdate (v1.35): the Job rules, and completions (but for an Indexed Job scaled in tandem with
    parallelism), selector, template, completionMode, podFailurePolicy and backoffLimitPerIndex immutable."""
    old_labels = _template_labels((old.get("spec") or {}).get("template"))
    require_prefixed = JOB_NAME_LABEL in old_labels and CONTROLLER_UID_LABEL in old_labels
    causes = _validate_job(new, require_prefixed=require_prefixed)
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed":
        if (
            completions != old_spec.get("completions")
            and completions is not None
            and completions != spec.get("parallelism")
        ):
            causes.append(
                invalid("spec.completions", completions, "can only be modified in tandem with spec.parallelism")
            )
    else:
        causes += _immutable("spec.completions", completions, old_spec.get("completions"))
    causes += _immutable("spec.selector", spec.get("selector"), old_spec.get("selector"),
                         go_label_selector(spec.get("selector")))  # fmt: skip
    causes += _job_template_update_errors(spec, old_spec, old.get("status") or {})
    causes += _immutable("spec.completionMode", spec.get("completionMode"), old_spec.get("completionMode"))
    causes += _immutable("spec.podFailurePolicy", spec.get("podFailurePolicy"), old_spec.get("podFailurePolicy"),
                         "batch.PodFailurePolicy{...}")  # fmt: skip
    causes += _immutable("spec.backoffLimitPerIndex", spec.get("backoffLimitPerIndex"),
                         old_spec.get("backoffLimitPerIndex"))  # fmt: skip
    return causes + validate_status("Job", new)


_TIME_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _time_zone_errors(zone: Any) -> list[Cause]:
    if zone is None:
        return []
    path = "spec.timeZone"
    if zone == "":
        return [invalid(path, zone, "timeZone must be nil or non-empty string")]
    for part in str(zone).split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.match(part):
            return [invalid(path, zone, f"unknown time zone {zone}")]
    if str(zone).lower() == "local":
        return [
            invalid(path, zone, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")
        ]
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(str(zone))
    except (KeyError, ValueError, OSError):
        return [invalid(path, zone, f"unknown time zone {zone}")]
    return []


def _cron_job_errors(cron_job: Obj, old_spec: Obj | None) -> list[Cause]:
    spec = cron_job.get("spec") or {}
    causes: list[Cause] = []
    schedule = spec.get("schedule") or ""
    if not schedule:
        causes.append(required("spec.schedule"))
    else:
        try:
            parse_standard(schedule)
        except CronError as exc:
            causes.append(invalid("spec.schedule", schedule, str(exc)))
        allow_tz = old_spec is not None and "TZ" in (old_spec.get("schedule") or "")
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            causes.append(
                invalid("spec.schedule", schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule")
            )
        elif not allow_tz and "TZ" in schedule:
            causes.append(
                invalid("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
            )
    causes += _nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        causes += _time_zone_errors(spec.get("timeZone"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        causes.append(required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        causes.append(not_supported("spec.concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"]))
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    causes += _job_spec_errors(job_spec, "spec.jobTemplate.spec")
    if job_spec.get("selector") is not None:
        causes.append(_invalid_raw("spec.jobTemplate.spec.selector", go_label_selector(job_spec["selector"]),
                                   "`selector` will be auto-generated"))  # fmt: skip
    if job_spec.get("manualSelector"):
        causes.append(not_supported("spec.jobTemplate.spec.manualSelector", "true", ["nil", "false"]))
    causes += _nonnegative("spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit"))
    causes += _nonnegative("spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit"))
    return causes


def validate_cron_job(cron_job: Obj) -> list[Cause]:
    """ValidateCronJobCreate: the schedule parses (robfig/cron's standard parser), a known time zone, the Job
    template valid, and a name of at most 52 characters (the controller appends an 11-character suffix)."""
    causes = validate_metadata(cron_job, namespaced=True)
    causes += _cron_job_errors(cron_job, None)
    name = str((cron_job.get("metadata") or {}).get("name") or "")
    if len(name) > 52:
        causes.append(invalid("metadata.name", name, "must be no more than 52 characters"))
    return causes


def validate_cron_job_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateCronJobUpdate: the create rules but the name length."""
    return validate_metadata(new, namespaced=True) + _cron_job_errors(new, old.get("spec") or {})


# ---------------------------------------------------------------------------------------------- coordination.k8s.io


def validate_lease(lease: Obj) -> list[Cause]:
    """ValidateLease: a positive duration, non-negative transitions, a preferred holder only with a strategy."""
    causes = validate_metadata(lease, namespaced=True)
    spec = lease.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    causes += _nonnegative("spec.leaseTransitions", spec.get("leaseTransitions"))
    strategy = spec.get("strategy")
    if strategy is not None and strategy != "OldestEmulationVersion":
        causes.append(not_supported("spec.strategy", strategy, ["OldestEmulationVersion"]))
    if spec.get("preferredHolder") and not strategy:
        causes.append(forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
    return causes


# ---------------------------------------------------------------------------------------------- updates


def _apps_update(kind: str, validate: Callable[[Obj], list[Cause]]) -> Callable[[Obj, Obj], list[Cause]]:
    """Deployment, ReplicaSet and DaemonSet updates through apps/v1: the create rules, the status rules, and
    a selector that never changes."""

    def validate_update(new: Obj, old: Obj) -> list[Cause]:
        causes = validate(new)
        selector, old_selector = (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
        causes += _immutable("spec.selector", selector, old_selector, go_label_selector(selector))
        return causes + validate_status(kind, new, old)

    return validate_update


_STATEFUL_SET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                         "minReadySeconds")  # fmt: skip


def validate_stateful_set_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateStatefulSetUpdate: only replicas, ordinals, template, updateStrategy, the claim retention policy and
    minReadySeconds may change (the name is not checked again)."""
    causes = [c for c in validate_stateful_set(new) if c.field != "metadata.name"]
    new_spec = {k: v for k, v in (new.get("spec") or {}).items() if k not in _STATEFUL_SET_MUTABLE}
    old_spec = {k: v for k, v in (old.get("spec") or {}).items() if k not in _STATEFUL_SET_MUTABLE}
    if new_spec != old_spec:
        causes.append(
            forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            )
        )
    return causes + validate_status("StatefulSet", new, old)


VALIDATORS: dict[str, Callable[[Obj], list[Cause]]] = {
    "Deployment": lambda obj: validate_deployment(obj) + validate_status("Deployment", obj),
    "ReplicaSet": lambda obj: validate_replica_set(obj) + validate_status("ReplicaSet", obj),
    "StatefulSet": lambda obj: validate_stateful_set(obj) + validate_status("StatefulSet", obj),
    "DaemonSet": lambda obj: validate_daemon_set(obj) + validate_status("DaemonSet", obj),
    "Job": validate_job,
    "CronJob": validate_cron_job,
    "Lease": validate_lease,
}
UPDATE_VALIDATORS: dict[str, Callable[[Obj, Obj], list[Cause]]] = {
    "Deployment": _apps_update("Deployment", validate_deployment),
    "ReplicaSet": _apps_update("ReplicaSet", validate_replica_set),
    "DaemonSet": _apps_update("DaemonSet", validate_daemon_set),
    "StatefulSet": validate_stateful_set_update,
    "Job": validate_job_update,
    "CronJob": validate_cron_job_update,
    "Lease": lambda new, old: validate_lease(new),
}

# The store looks validators up in validation.py's tables.
core.VALIDATORS.update(VALIDATORS)
core.UPDATE_VALIDATORS.update(UPDATE_VALIDATORS)
