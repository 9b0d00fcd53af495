"""Validation of batch/v1 Jobs and CronJobs as kube-apiserver v1.35 does it: the field errors of
pkg/apis/batch/validation and the Job strategy's update rules (selectors generated from the controller uid, what a
suspended Job may change, schedules and time zones), with upstream's field paths and messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from kss_sim.cluster.admission.cron import CronError, parse_standard
from kss_sim.cluster.admission.defaults.workloads import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
)
from kss_sim.cluster.admission.validation import core
from kss_sim.cluster.admission.validation.dra_rules import too_many
from kss_sim.cluster.admission.validation.metadata import qualified_name_errors, selector_errors, validate_metadata
from kss_sim.cluster.admission.validation.workloads import (
    go_label_selector,
    go_string_map,
    immutable,
    invalid_raw,
    nonnegative,
    pod_template_errors,
    selector_valid,
    template_labels,
    validate_status,
)
from kss_sim.cluster.errors import Cause, invalid, not_supported, required
from kss_sim.kube.labels import label_selector_matches
from kss_sim.kube.objects import Obj

_COMPLETION_MODES = ["NonIndexed", "Indexed"]
_MAX_PARALLELISM_INDEXED = 100_000


def _job_spec_errors(spec: Obj, path: str) -> list[Cause]:
    """validateJobSpec at ``path`` (``spec`` or a CronJob's ``spec.jobTemplate.spec``)."""
    causes: list[Cause] = []
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                  "backoffLimitPerIndex", "maxFailedIndexes"):  # fmt: skip
        causes += nonnegative(f"{path}.{field}", spec.get(field))
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
    if policy is not None:
        causes += _pod_failure_policy_errors(spec, f"{path}.podFailurePolicy")
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


_MAX_POLICY_RULES = 20  # maxPodFailurePolicyRules
_MAX_EXIT_CODES = 255  # maxPodFailurePolicyOnExitCodesValues
_MAX_CONDITION_PATTERNS = 20  # maxPodFailurePolicyOnPodConditionsPatterns
_POLICY_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
_EXIT_CODE_OPERATORS = ["In", "NotIn"]
_CONDITION_STATUSES = ["False", "True", "Unknown"]


def go_quoted_list(values: list[str]) -> str:
    """A string list as Go's ``%q`` prints it: ``["a" "b"]``."""
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


def _omitted(field: str, detail: str) -> Cause:
    """``field.Invalid`` with ``field.OmitValueType{}``: no value shown."""
    return Cause(field, "FieldValueInvalid", f"Invalid value: {detail}")


def _pod_failure_policy_errors(spec: Obj, path: str) -> list[Cause]:
    """``validatePodFailurePolicy``: at most 20 rules, each with a known action (FailIndex only with
    backoffLimitPerIndex) and exactly one of onExitCodes and onPodConditions."""
    policy = spec.get("podFailurePolicy")
    rules = (policy.get("rules") if isinstance(policy, dict) else None) or []
    causes: list[Cause] = []
    if len(rules) > _MAX_POLICY_RULES:
        causes.append(too_many(f"{path}.rules", len(rules), _MAX_POLICY_RULES))
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    containers = [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
    names = {c.get("name") for c in containers if isinstance(c, dict)}
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        rule_path = f"{path}.rules[{i}]"
        action = rule.get("action")
        if not action:
            causes.append(required(f"{rule_path}.action", f"valid values: {go_quoted_list(_POLICY_ACTIONS)}"))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                causes.append(invalid(f"{rule_path}.action", action, "requires the backoffLimitPerIndex to be set"))
        elif action not in _POLICY_ACTIONS:
            causes.append(not_supported(f"{rule_path}.action", action, _POLICY_ACTIONS))
        on_exit_codes = rule.get("onExitCodes")
        on_conditions = rule.get("onPodConditions") or []
        if isinstance(on_exit_codes, dict):
            causes += _on_exit_codes_errors(on_exit_codes, f"{rule_path}.onExitCodes", names)
        if on_conditions:
            causes += _on_pod_conditions_errors(on_conditions, f"{rule_path}.onPodConditions")
        if on_exit_codes is not None and on_conditions:
            causes.append(_omitted(rule_path, "specifying both OnExitCodes and OnPodConditions is not supported"))
        if on_exit_codes is None and not on_conditions:
            causes.append(_omitted(rule_path, "specifying one of OnExitCodes and OnPodConditions is required"))
    return causes


def _on_pod_conditions_errors(patterns: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if len(patterns) > _MAX_CONDITION_PATTERNS:
        causes.append(too_many(path, len(patterns), _MAX_CONDITION_PATTERNS))
    for j, pattern in enumerate(patterns):
        if not isinstance(pattern, dict):
            continue
        causes += qualified_name_errors(f"{path}[{j}].type", str(pattern.get("type") or ""))
        status = pattern.get("status")
        if not status:
            causes.append(required(f"{path}[{j}].status", f"valid values: {go_quoted_list(_CONDITION_STATUSES)}"))
        elif status not in _CONDITION_STATUSES:
            causes.append(not_supported(f"{path}[{j}].status", status, _CONDITION_STATUSES))
    return causes


def _on_exit_codes_errors(requirement: Obj, path: str, container_names: set[Any]) -> list[Cause]:
    causes: list[Cause] = []
    operator = requirement.get("operator")
    if not operator:
        causes.append(required(f"{path}.operator", f"valid values: {go_quoted_list(_EXIT_CODE_OPERATORS)}"))
    elif operator not in _EXIT_CODE_OPERATORS:
        causes.append(not_supported(f"{path}.operator", operator, _EXIT_CODE_OPERATORS))
    container = requirement.get("containerName")
    if container is not None and container not in container_names:
        causes.append(
            invalid(
                f"{path}.containerName",
                container,
                "must be one of the container or initContainer names in the pod template",
            )
        )
    raw = requirement.get("values")
    values = [v for v in raw if isinstance(v, int)] if isinstance(raw, list) else []
    shown = json.dumps(raw, separators=(",", ":")) if isinstance(raw, list) else "null"
    if not values:
        causes.append(invalid_raw(f"{path}.values", shown, "at least one value is required"))
    elif len(values) > _MAX_EXIT_CODES:
        causes.append(too_many(f"{path}.values", len(values), _MAX_EXIT_CODES))
    seen: set[int] = set()
    for j, value in enumerate(values):
        if operator == "In" and value == 0:
            causes.append(invalid(f"{path}.values[{j}]", value, "must not be 0 for the In operator"))
        if value in seen:
            causes.append(Cause(f"{path}.values[{j}]", "FieldValueDuplicate", f"Duplicate value: {value}"))
        seen.add(value)
    if any(earlier > later for earlier, later in pairwise(values)):
        causes.append(invalid_raw(f"{path}.values", shown, "must be ordered"))
    return causes


def _has_label(labels: dict[str, str], key: str, expected: str) -> list[Cause]:
    """``ValidateHasLabel`` on the Job's template metadata."""
    path = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        return [required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [invalid_raw(path, go_string_map(labels), f"must be '{expected}'")]
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
    labels = template_labels(spec.get("template"))
    causes += _has_label(labels, LEGACY_CONTROLLER_UID_LABEL, uid)
    causes += _has_label(labels, LEGACY_JOB_NAME_LABEL, name)
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if require_prefixed:
        causes += _has_label(labels, CONTROLLER_UID_LABEL, uid)
        causes += _has_label(labels, JOB_NAME_LABEL, name)
        expected.update({CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name})
    selector = spec.get("selector")
    if selector_valid(selector) and not label_selector_matches(selector, expected):
        causes.append(invalid_raw("spec.selector", go_label_selector(selector), "`selector` not auto-generated"))
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
        selector_valid(selector)
        and selector is not None
        and not label_selector_matches(selector, template_labels(spec.get("template")))
    ):
        shown = go_string_map(template_labels(spec.get("template")) or None)
        causes.append(
            invalid_raw("spec.template.metadata.labels", shown, "`selector` does not match template `labels`")
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
    return [invalid_raw("spec.template", "core.PodTemplateSpec{...}", "field is immutable")]


def validate_job_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateJobUpdate (v1.35): the Job rules, and completions (but for an Indexed Job scaled in tandem with
    parallelism), selector, template, completionMode, podFailurePolicy and backoffLimitPerIndex immutable."""
    old_labels = template_labels((old.get("spec") or {}).get("template"))
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
        causes += immutable("spec.completions", completions, old_spec.get("completions"))
    causes += immutable("spec.selector", spec.get("selector"), old_spec.get("selector"),
                         go_label_selector(spec.get("selector")))  # fmt: skip
    causes += _job_template_update_errors(spec, old_spec, old.get("status") or {})
    causes += immutable("spec.completionMode", spec.get("completionMode"), old_spec.get("completionMode"))
    causes += immutable("spec.podFailurePolicy", spec.get("podFailurePolicy"), old_spec.get("podFailurePolicy"),
                         "batch.PodFailurePolicy{...}")  # fmt: skip
    causes += immutable("spec.backoffLimitPerIndex", spec.get("backoffLimitPerIndex"),
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
    causes += nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
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
        causes.append(invalid_raw("spec.jobTemplate.spec.selector", go_label_selector(job_spec["selector"]),
                                   "`selector` will be auto-generated"))  # fmt: skip
    if job_spec.get("manualSelector"):
        causes.append(not_supported("spec.jobTemplate.spec.manualSelector", "true", ["nil", "false"]))
    causes += nonnegative("spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit"))
    causes += nonnegative("spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit"))
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


VALIDATORS: dict[str, Callable[[Obj], list[Cause]]] = {"Job": validate_job, "CronJob": validate_cron_job}
UPDATE_VALIDATORS: dict[str, Callable[[Obj, Obj], list[Cause]]] = {
    "Job": validate_job_update,
    "CronJob": validate_cron_job_update,
}

# The write paths look validators up in core's tables.
core.VALIDATORS.update(VALIDATORS)
core.UPDATE_VALIDATORS.update(UPDATE_VALIDATORS)
