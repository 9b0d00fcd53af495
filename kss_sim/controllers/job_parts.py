"""The Job controller's pure parts (pkg/controller/job's helpers): the spec as defaulted, completed indexes as
the API writes them ("1,3-5"), conditions, when a pod finished, and the pod-failure backoff.

Kept apart from ``job.py``, which reads and writes the store, so each can be read (and tested) on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.controllers.owned import meta

JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # annotation and label
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"

DEFAULT_POD_FAILURE_BACKOFF = timedelta(seconds=10)  # DefaultJobPodFailureBackOff
MAX_POD_FAILURE_BACKOFF = timedelta(minutes=10)  # MaxJobPodFailureBackOff (v1.35's code; the docs say 6 minutes)

# Condition types, reasons and messages as v1.35 writes them.
COMPLETE = "Complete"
FAILED = "Failed"
FAILURE_TARGET = "FailureTarget"
SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
SUSPENDED = "Suspended"
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
JOB_SUSPENDED = ("JobSuspended", "Job suspended")
JOB_RESUMED = ("JobResumed", "Job resumed")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def rfc3339(when: datetime) -> str:
    """``when`` as the API writes timestamps."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _int(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True, slots=True)
class JobSpec:
    """The fields the controller reads, with SetDefaults_Job's defaults for any a client left out."""

    parallelism: int
    completions: int | None
    backoff_limit: int
    indexed: bool
    suspend: bool
    active_deadline_seconds: int | None
    only_replace_failed: bool  # podReplacementPolicy Failed (or a podFailurePolicy)
    pod_failure_policy: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, job: Mapping[str, Any]) -> JobSpec:
        """The spec of ``job`` as the API server would have defaulted it."""
        spec = job.get("spec") or {}
        completions = _int(spec.get("completions"), None)
        parallelism = _int(spec.get("parallelism"), None)
        if completions is None and parallelism is None:
            completions = 1
        failure_policy = spec.get("podFailurePolicy")
        policy = spec.get("podReplacementPolicy") or ("Failed" if failure_policy else "")
        return cls(
            parallelism=max(0, parallelism if parallelism is not None else 1),
            completions=completions,
            backoff_limit=_int(spec.get("backoffLimit"), 6) or 0,
            indexed=spec.get("completionMode") == "Indexed",
            suspend=spec.get("suspend") is True,
            active_deadline_seconds=_int(spec.get("activeDeadlineSeconds"), None),
            only_replace_failed=policy == "Failed",
            pod_failure_policy=failure_policy if isinstance(failure_policy, Mapping) else None,
        )


def pod_labels(job: Mapping[str, Any]) -> dict[str, str]:
    """The labels of the Job's pods: the template's, plus the generated selector's labels when the Job came
    without a selector (what the Job strategy's generateSelector puts on the template at create)."""
    spec = job.get("spec") or {}
    labels = dict(((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
    if not spec.get("selector") and not spec.get("manualSelector"):
        m = meta(job)
        for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
            labels.setdefault(key, str(m.get("name") or ""))
        for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
            labels.setdefault(key, str(m.get("uid") or ""))
    return labels


# --- completed indexes -----------------------------------------------------------------------------------------
def parse_indexes(text: Any, completions: int) -> set[int]:
    """``status.completedIndexes`` ("1,3-5") as a set, indexes outside [0, completions) dropped."""
    found: set[int] = set()
    if not isinstance(text, str):
        return found
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        try:
            lo = int(first)
            hi = int(last) if last else lo
        except ValueError:
            continue
        found.update(i for i in range(lo, hi + 1) if 0 <= i < completions)
    return found


def format_indexes(indexes: Iterable[int]) -> str:
    """Sorted indexes as intervals: {0,1,2,4} -> "0-2,4" (an empty set is "")."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    start = prev = None
    for i in [*ordered, None]:
        if i is not None and prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = i
    return ",".join(parts)


def completion_index(pod: Mapping[str, Any]) -> int | None:
    """The pod's completion index (annotation first, then label), or None."""
    m = meta(pod)
    for source in (m.get("annotations") or {}, m.get("labels") or {}):
        value = source.get(COMPLETION_INDEX)
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


# --- conditions ------------------------------------------------------------------------------------------------
def condition(status: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """The status condition of type ``kind`` (any status), or None."""
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def has_true(status: Mapping[str, Any], kind: str) -> bool:
    """Whether condition ``kind`` is True."""
    cond = condition(status, kind)
    return cond is not None and cond.get("status") == "True"


def is_finished(job: Mapping[str, Any]) -> bool:
    """``IsJobFinished``: Complete or Failed is True."""
    status = job.get("status") or {}
    return has_true(status, COMPLETE) or has_true(status, FAILED)


def finish_time(job: Mapping[str, Any]) -> datetime | None:
    """When the Job finished: the terminal condition's transition time."""
    status = job.get("status") or {}
    for kind in (COMPLETE, FAILED):
        cond = condition(status, kind)
        if cond is not None and cond.get("status") == "True":
            return parse_time(cond.get("lastTransitionTime"))
    return None


def set_condition(
    conditions: list[dict[str, Any]], kind: str, status: str, reason_message: tuple[str, str], now: str
) -> bool:
    """``ensureJobConditionStatus``: add or update condition ``kind``; the transition time moves only when the
    status changes. Returns whether anything changed."""
    reason, message = reason_message
    for cond in conditions:
        if cond.get("type") != kind:
            continue
        if cond.get("status") == status and cond.get("reason") == reason and cond.get("message") == message:
            return False
        if cond.get("status") != status:
            cond["lastTransitionTime"] = now
        cond.update(status=status, reason=reason, message=message, lastProbeTime=now)
        return True
    conditions.append(
        {
            "type": kind,
            "status": status,
            "lastProbeTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
    )
    return True


# --- pods ------------------------------------------------------------------------------------------------------
def phase(pod: Mapping[str, Any]) -> str:
    """``status.phase``."""
    return str((pod.get("status") or {}).get("phase") or "")


def pod_finished_at(pod: Mapping[str, Any]) -> datetime:
    """``getFinishedTime``: the containers' last finish, else the Ready=False transition, else the deletion
    time, else the pod's creation."""
    status = pod.get("status") or {}
    finished: list[datetime] = []
    statuses = status.get("containerStatuses") or []
    for cs in statuses:
        at = parse_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        if at is None:
            finished = []
            break
        finished.append(at)
    if statuses and finished:
        return max(finished)
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "False":
            at = parse_time(cond.get("lastTransitionTime"))
            if at is not None:
                return at
    m = meta(pod)
    deleted = parse_time(m.get("deletionTimestamp"))
    if deleted is not None:
        return deleted - timedelta(seconds=int(m.get("deletionGracePeriodSeconds") or 0))
    return parse_time(m.get("creationTimestamp")) or datetime.fromtimestamp(0, UTC)


@dataclass(slots=True)
class BackoffRecord:
    """``backoffRecord``: failures since the last success and when the last of them finished."""

    failures: int = 0
    last_failure: datetime | None = None

    def after(self, succeeded: Sequence[Mapping[str, Any]], failed: Sequence[Mapping[str, Any]]) -> BackoffRecord:
        """The record once newly succeeded and failed pods are taken in (``newBackoffRecord``)."""
        failed_at = sorted(pod_finished_at(p) for p in failed)
        if not succeeded:
            if not failed_at:
                return BackoffRecord(self.failures, self.last_failure)
            return BackoffRecord(self.failures + len(failed_at), failed_at[-1])
        last_success = max(pod_finished_at(p) for p in succeeded)
        later = [t for t in failed_at if t > last_success]
        return BackoffRecord(len(later), later[-1] if later else None)

    def remaining(self, now: datetime) -> timedelta:
        """How long pod creation still waits (``getRemainingTimeForFailuresCount``): 10s doubling per failure
        after the first, capped, counted from the last failure."""
        if self.failures == 0 or self.last_failure is None:
            return timedelta(0)
        delay = DEFAULT_POD_FAILURE_BACKOFF
        for _ in range(1, self.failures):
            delay *= 2
            if delay >= MAX_POD_FAILURE_BACKOFF:
                delay = MAX_POD_FAILURE_BACKOFF
                break
        elapsed = now - self.last_failure
        return timedelta(0) if delay < elapsed else delay - elapsed
