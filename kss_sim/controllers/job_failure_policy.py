"""A Job's ``spec.podFailurePolicy`` matched against a failed pod (pkg/controller/job's ``matchPodFailurePolicy``).

The rules are tried in order; the first that matches decides: ``FailJob`` fails the Job (its FailureTarget
condition's reason ``PodFailurePolicy`` and upstream's message naming the pod and the rule), ``Ignore`` leaves the
failure out of ``status.failed`` and so out of the ``backoffLimit`` count, ``Count`` (and ``FailIndex``: kss does not
run ``backoffLimitPerIndex``, so the index is not failed on its own) counts it as usual. No rule matching counts it.

- ``onExitCodes``: a terminated container (the regular ones, then the init ones; ``containerName`` narrows it) whose
  non-zero exit code is ``In`` / ``NotIn`` the values;
- ``onPodConditions``: a pod condition of the pattern's type and status (the DisruptionTarget condition an evicted,
  preempted or pod-GC'd pod carries, for instance).

The controller only asks about the pods it counts as failed (with a podFailurePolicy: phase Failed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kss_sim.controllers.owned import meta

POD_FAILURE_POLICY = "PodFailurePolicy"  # the FailureTarget / Failed condition's reason (JobReasonPodFailurePolicy)
FAIL_JOB = "FailJob"
IGNORE = "Ignore"
COUNT = "Count"
FAIL_INDEX = "FailIndex"


@dataclass(frozen=True, slots=True)
class PolicyMatch:
    """What the first matching rule says of a failed pod: the Job's failure message (``FailJob``), whether the
    failure counts towards ``backoffLimit``, and the rule's action (None: no rule matched)."""

    fail_job_message: str | None = None
    counts: bool = True
    action: str | None = None


NO_MATCH = PolicyMatch()


def _exit_code_matches(code: int, requirement: Mapping[str, Any]) -> bool:
    values = requirement.get("values") or []
    operator = requirement.get("operator")
    if operator == "In":
        return code in values
    if operator == "NotIn":
        return code not in values
    return False


def _matching_container(statuses: Iterable[Any], requirement: Mapping[str, Any]) -> tuple[str, int] | None:
    """The first terminated container with a non-zero exit code the requirement matches: (name, exit code)."""
    wanted = requirement.get("containerName")
    for cs in statuses:
        if not isinstance(cs, Mapping):
            continue
        terminated = (cs.get("state") or {}).get("terminated")
        if not isinstance(terminated, Mapping):
            continue  # still running or terminating: no exit code to match
        code = terminated.get("exitCode")
        if not isinstance(code, int) or isinstance(code, bool) or code == 0:
            continue
        if wanted is not None and wanted != cs.get("name"):
            continue
        if _exit_code_matches(code, requirement):
            return str(cs.get("name") or ""), code
    return None


def _matching_condition(conditions: Iterable[Any], patterns: Iterable[Any]) -> str | None:
    """The type of the first pod condition some pattern matches (type and status)."""
    wanted = [p for p in patterns if isinstance(p, Mapping)]
    for cond in conditions:
        if not isinstance(cond, Mapping):
            continue
        for pattern in wanted:
            if cond.get("type") == pattern.get("type") and cond.get("status") == (pattern.get("status") or "True"):
                return str(cond.get("type"))
    return None


def _outcome(action: Any, message: str) -> PolicyMatch | None:
    if action == IGNORE:
        return PolicyMatch(counts=False, action=IGNORE)
    if action in (COUNT, FAIL_INDEX):
        return PolicyMatch(action=str(action))
    if action == FAIL_JOB:
        return PolicyMatch(fail_job_message=message, action=FAIL_JOB)
    return None  # an action this version does not know: upstream's switch falls through to the next rule


def match_pod_failure_policy(policy: Any, pod: Mapping[str, Any]) -> PolicyMatch:
    """``matchPodFailurePolicy``: what ``policy`` (the Job's ``spec.podFailurePolicy``, None for none) says of the
    failed ``pod``."""
    if not isinstance(policy, Mapping):
        return NO_MATCH
    status = pod.get("status") or {}
    m = meta(pod)
    pod_key = f"{m.get('namespace') or ''}/{m.get('name') or ''}"
    for index, rule in enumerate(policy.get("rules") or []):
        if not isinstance(rule, Mapping):
            continue
        action = rule.get("action")
        on_exit_codes = rule.get("onExitCodes")
        on_conditions = rule.get("onPodConditions")
        if isinstance(on_exit_codes, Mapping):
            found = _matching_container(status.get("containerStatuses") or [], on_exit_codes) or _matching_container(
                status.get("initContainerStatuses") or [], on_exit_codes
            )
            if found is None:
                continue
            name, code = found
            message = (
                f"Container {name} for pod {pod_key} failed with exit code {code} matching {action} rule at index "
                f"{index}"
            )
        elif on_conditions is not None:
            kind = _matching_condition(status.get("conditions") or [], on_conditions or [])
            if kind is None:
                continue
            message = f"Pod {pod_key} has condition {kind} matching {action} rule at index {index}"
        else:
            continue
        outcome = _outcome(action, message)
        if outcome is not None:
            return outcome
    return NO_MATCH


def fail_job_message(policy: Any, failed_pods: Iterable[Mapping[str, Any]]) -> str | None:
    """``getFailJobMessage``: the message of the first failed pod a ``FailJob`` rule matches, or None."""
    if not isinstance(policy, Mapping):
        return None
    for pod in failed_pods:
        message = match_pod_failure_policy(policy, pod).fail_job_message
        if message is not None:
            return message
    return None
