"""Validation of apps/v1 Deployments, ReplicaSets, StatefulSets, DaemonSets and ControllerRevisions as
kube-apiserver v1.35 does it: the field errors of pkg/apis/apps/validation (their specs, status counters, update
rules), with upstream's field paths and messages; pod templates are checked with the pod validator under
``spec.template.spec``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

from kss_sim.cluster.admission.validation import core
from kss_sim.cluster.admission.validation.metadata import (
    qualified_name_errors,
    selector_errors,
    validate_labels,
    validate_metadata,
)
from kss_sim.cluster.admission.validation.workloads import (
    go_label_selector,
    immutable,
    int_or_percent,
    int_or_percent_value,
    invalid_raw,
    nonnegative,
    pod_template_errors,
    restart_always,
    selector_matches_template,
    selector_required_errors,
    selector_valid,
    validate_status,
)
from kss_sim.cluster.errors import Cause, forbidden, invalid, not_supported, required
from kss_sim.kube.objects import Obj

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
        causes = int_or_percent(f"{path}.maxUnavailable", rolling.get("maxUnavailable"))
        causes += int_or_percent(f"{path}.maxSurge", rolling.get("maxSurge"))
        if (
            int_or_percent_value(rolling.get("maxUnavailable")) == 0
            and int_or_percent_value(rolling.get("maxSurge")) == 0
        ):
            causes.append(
                invalid(f"{path}.maxUnavailable", rolling.get("maxUnavailable"), "may not be 0 when `maxSurge` is 0")
            )
        return causes
    return [not_supported("spec.strategy", kind, ["Recreate", "RollingUpdate"])]


def _replica_set_like(spec: Obj, kind: str, what: str) -> list[Cause]:
    """ValidateReplicaSetSpec / the shared part of ValidateDeploymentSpec."""
    causes = nonnegative("spec.replicas", spec.get("replicas"))
    causes += selector_required_errors(spec, what)
    if not selector_valid(spec.get("selector")):
        causes.append(invalid_raw("spec.selector", go_label_selector(spec.get("selector")), "invalid label selector"))
    else:
        causes += selector_matches_template(spec)
        causes += pod_template_errors(spec.get("template"), "spec.template")
        causes += restart_always(spec, kind)
    return causes


def validate_deployment(obj: Obj) -> list[Cause]:
    """ValidateDeployment."""
    causes = validate_metadata(obj, namespaced=True)
    spec = obj.get("spec") or {}
    causes += _replica_set_like(spec, "ReplicaSet", "deployment")
    causes += _deployment_strategy(spec.get("strategy") or {})
    causes += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    causes += nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        causes += nonnegative("spec.progressDeadlineSeconds", deadline)
        if deadline <= (spec.get("minReadySeconds") or 0):
            causes.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return causes


def validate_replica_set(obj: Obj) -> list[Cause]:
    """ValidateReplicaSet (its selector message says "deployment", as upstream's does)."""
    causes = validate_metadata(obj, namespaced=True)
    spec = obj.get("spec") or {}
    causes += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
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
            causes.append(invalid_raw("spec.updateStrategy.rollingUpdate", str(rolling),
                                       "only allowed for updateStrategy 'RollingUpdate'"))  # fmt: skip
    elif kind == "RollingUpdate":
        if isinstance(rolling, dict):
            causes += nonnegative("spec.updateStrategy.rollingUpdate.partition", rolling.get("partition"))
            unavailable = rolling.get("maxUnavailable")
            if unavailable is not None:
                path = "spec.updateStrategy.rollingUpdate.maxUnavailable"
                causes += int_or_percent(path, unavailable)
                if int_or_percent_value(unavailable) == 0:
                    causes.append(invalid(path, unavailable, "cannot be 0"))
    else:
        causes.append(invalid_raw("spec.updateStrategy", str(strategy), "must be 'RollingUpdate' or 'OnDelete'"))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for field in ("whenDeleted", "whenScaled"):
            if retention.get(field) not in ("Retain", "Delete"):
                causes.append(not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{field}",
                                            retention.get(field), ["Retain", "Delete"]))  # fmt: skip
    causes += nonnegative("spec.replicas", spec.get("replicas"))
    causes += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        causes += nonnegative("spec.ordinals.start", ordinals.get("start"))
    causes += selector_required_errors(spec, "statefulset")
    if not selector_valid(spec.get("selector")):
        causes.append(invalid_raw("spec.selector", go_label_selector(spec.get("selector")), ""))
    else:
        causes += selector_matches_template(spec)
        meta = (spec.get("template") or {}).get("metadata") or {}
        causes += validate_labels("spec.template.labels", meta.get("labels"))
        for key in meta.get("annotations") or {}:
            causes += qualified_name_errors("spec.template.annotations", key.lower())
    return causes + restart_always(spec, "StatefulSet")


def validate_daemon_set(obj: Obj) -> list[Cause]:
    """ValidateDaemonSet."""
    causes = validate_metadata(obj, namespaced=True)
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    causes += selector_errors("spec.selector", selector) if selector is not None else []
    if selector is None:
        causes.append(required("spec.selector"))
    causes += selector_matches_template(spec)
    if isinstance(selector, dict) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(
            invalid_raw("spec.selector", go_label_selector(selector), "empty selector is invalid for daemonset")
        )
    causes += pod_template_errors(spec.get("template"), "spec.template")
    causes += restart_always(spec, "DaemonSet")
    causes += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    strategy = spec.get("updateStrategy") or {}
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if kind == "RollingUpdate":
        if not isinstance(rolling, dict):
            causes.append(required("spec.updateStrategy.rollingUpdate"))
        else:
            path = "spec.updateStrategy.rollingUpdate"
            unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
            causes += int_or_percent(f"{path}.maxUnavailable", unavailable)
            causes += int_or_percent(f"{path}.maxSurge", surge)
            has_unavailable = int_or_percent_value(unavailable) != 0
            has_surge = int_or_percent_value(surge) != 0
            if has_unavailable and has_surge:
                causes.append(invalid(f"{path}.maxSurge", surge, "may not be set when maxUnavailable is non-zero"))
            elif not has_unavailable and not has_surge:
                causes.append(required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    elif kind != "OnDelete":
        causes.append(not_supported("spec.updateStrategy", kind, ["RollingUpdate", "OnDelete"]))
    causes += nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    return causes


def _apps_update(kind: str, validate: Callable[[Obj], list[Cause]]) -> Callable[[Obj, Obj], list[Cause]]:
    """Deployment, ReplicaSet and DaemonSet updates through apps/v1: the create rules, the status rules, and
    a selector that never changes."""

    def validate_update(new: Obj, old: Obj) -> list[Cause]:
        causes = validate(new)
        selector, old_selector = (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
        causes += immutable("spec.selector", selector, old_selector, go_label_selector(selector))
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


def validate_controller_revision(revision: Obj) -> list[Cause]:
    """ValidateControllerRevisionCreate: the metadata, ``data`` present, ``revision`` not negative."""
    causes = validate_metadata(revision, namespaced=True)
    if revision.get("data") is None:
        causes.append(required("data", "data is mandatory"))
    return causes + nonnegative("revision", revision.get("revision"))


def validate_controller_revision_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateControllerRevisionUpdate: the create rules and ``data`` unchanged (``revision`` may change: a
    controller rolling back to an old template bumps its revision number)."""
    data, old_data = new.get("data"), old.get("data")
    if data != old_data and _canonical(data) == _canonical(old_data):
        old_data = data  # the same bytes: a number beyond float64 is held as its text, equal only to itself
    try:
        shown = json.dumps(data, separators=(",", ":"), sort_keys=True)
    except TypeError:  # a number beyond float64 held as its text, which only orjson writes
        shown = _canonical(data)
    return validate_controller_revision(new) + immutable("data", data, old_data, shown)


def _canonical(data: Any) -> str:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()


VALIDATORS: dict[str, Callable[[Obj], list[Cause]]] = {
    "ControllerRevision": validate_controller_revision,
    "Deployment": lambda obj: validate_deployment(obj) + validate_status("Deployment", obj),
    "ReplicaSet": lambda obj: validate_replica_set(obj) + validate_status("ReplicaSet", obj),
    "StatefulSet": lambda obj: validate_stateful_set(obj) + validate_status("StatefulSet", obj),
    "DaemonSet": lambda obj: validate_daemon_set(obj) + validate_status("DaemonSet", obj),
}
UPDATE_VALIDATORS: dict[str, Callable[[Obj, Obj], list[Cause]]] = {
    "Deployment": _apps_update("Deployment", validate_deployment),
    "ReplicaSet": _apps_update("ReplicaSet", validate_replica_set),
    "DaemonSet": _apps_update("DaemonSet", validate_daemon_set),
    "StatefulSet": validate_stateful_set_update,
    "ControllerRevision": validate_controller_revision_update,
}

# The write paths look validators up in core's tables.
core.VALIDATORS.update(VALIDATORS)
core.UPDATE_VALIDATORS.update(UPDATE_VALIDATORS)
