"""Jobs on the virtual clock, as kube-controller-manager's Job controller runs them (v1.35 defaults).

- ``min(parallelism, completions - succeeded)`` pods active (without completions: ``parallelism`` until one
  succeeds); NonIndexed pods ``<job>-<5 chars>``, Indexed ones ``<job>-<index>-<5 chars>`` with the completion
  index as annotation and label and hostname ``<job>-<index>``, lowest missing index first; labels
  ``batch.kubernetes.io/job-name`` / ``controller-uid`` (and the legacy ``job-name`` / ``controller-uid``) as the
  generated selector puts them;
- each pod runs the create event's ``runFor`` and then succeeds; a pod deleted, preempted or evicted before that
  counts as failed (podReplacementPolicy TerminatingOrFailed: it is replaced at once, after the pod-failure backoff
  of 10 s doubling per failure since the last success, at most 10 minutes);
- ``failed > backoffLimit`` (default 6) fails the Job (BackoffLimitExceeded), ``activeDeadlineSeconds`` after the
  start fails it (DeadlineExceeded), reaching the completions completes it; either way the pods still active are
  deleted; ``suspend`` deletes the active pods and starts nothing (the deadline counts from the resume).
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from kss_sim.controllers import job_parts as jp
from kss_sim.controllers.owned import pod_from_template
from kss_sim.kube.objects import Obj
from kss_sim.replay.controllers.base import Hub, Owner, TrackedPod

COMPLETE = jp.COMPLETE
FAILED = jp.FAILED


class JobOwner(Owner):
    """One Job (made by a create event or by a CronJob, its ``parent``)."""

    kind = "Job"
    api_version = "batch/v1"

    def __init__(self, hub: Hub, obj: Obj, run_for: float | None, *, parent: Owner | None = None) -> None:
        super().__init__(hub, obj, run_for, parent=parent)
        self.succeeded = 0
        self.failed = 0
        self.completed_indexes: set[int] = set()
        self.start_time: float | None = None
        self.finished: str | None = None  # Complete / Failed
        self.finished_at: float | None = None
        self.reason = ""
        self.backoff = jp.BackoffRecord()
        self._deadline_timer: float | None = None
        self._resume(obj.get("status") or {})

    def _resume(self, status: Obj) -> None:
        """A snapshot's Job goes on from its status: the pods it counted, the indexes done, finished or not (a
        workload's own Job has no status: it starts afresh)."""
        self.succeeded = int(status.get("succeeded") or 0)
        self.failed = int(status.get("failed") or 0)
        if self.job_spec.indexed:
            self.completed_indexes = jp.parse_indexes(status.get("completedIndexes"), self.job_spec.completions or 0)
        started = jp.parse_time(status.get("startTime"))
        if started is not None:
            self.start_time = self.hub.virtual(started)
        for kind in (COMPLETE, FAILED):
            condition = jp.condition(status, kind)
            if condition is not None and condition.get("status") == "True":
                self.finished, self.reason = kind, str(condition.get("reason") or "")
                when = jp.parse_time(condition.get("lastTransitionTime"))
                self.finished_at = self.hub.virtual(when) if when is not None else self.hub.now

    # --- adoption ---------------------------------------------------------------------------------------------
    def selector(self) -> Obj | None:
        """``spec.selector``, or the one the API server generates (the Job's uid) when it has none."""
        return super().selector() or {"matchLabels": {jp.CONTROLLER_UID_LABEL: str(self.obj["metadata"]["uid"])}}

    def adoption_facts(self, pod: Obj) -> dict[str, Any]:
        return {"index": jp.completion_index(pod)} if self.job_spec.indexed else {}

    @property
    def job_spec(self) -> jp.JobSpec:
        return jp.JobSpec.of(self.obj)

    def sync(self) -> None:
        if self.finished is not None:
            return
        spec = self.job_spec
        now = self.hub.now
        if spec.suspend:
            for pod in self._active():
                self.hub.delete_pod(pod)
            self.start_time = None
            return
        if self.start_time is None:
            self.start_time = now
        if spec.active_deadline_seconds is not None:
            deadline = self.start_time + spec.active_deadline_seconds
            if now >= deadline:
                self._finish(FAILED, jp.DEADLINE_EXCEEDED[0])
                return
            if self._deadline_timer != deadline:
                self._deadline_timer = deadline
                self.hub.wake(self, deadline)
        if self.failed > spec.backoff_limit:
            self._finish(FAILED, jp.BACKOFF_LIMIT_EXCEEDED[0])
            return
        active = self._active()
        if spec.indexed:
            completions = spec.completions or 0
            if len(self.completed_indexes) >= completions:
                self._finish(COMPLETE, jp.COMPLETIONS_REACHED[0])
                return
            want = max(0, min(spec.parallelism, completions - len(self.completed_indexes)))
        elif spec.completions is not None:
            if self.succeeded >= spec.completions:
                self._finish(COMPLETE, jp.COMPLETIONS_REACHED[0])
                return
            want = max(0, min(spec.parallelism, spec.completions - self.succeeded))
        else:
            if self.succeeded > 0 and not active:
                self._finish(COMPLETE, jp.COMPLETIONS_REACHED[0])
                return
            want = len(active) if self.succeeded > 0 else spec.parallelism
        if len(active) > want:
            # controller.ActivePods order: unscheduled first, then not ready, newest first
            surplus = sorted(active, key=lambda p: (p.bound_at is not None, -p.created, p.name))
            for pod in surplus[: len(active) - want]:
                self.hub.delete_pod(pod)
            return
        if len(active) == want:
            return
        wait = self.backoff.remaining(self.hub.at(now))
        if wait > timedelta(0):
            self.hub.wake(self, now + wait.total_seconds())
            return
        if spec.indexed:
            taken = self.completed_indexes | {p.index for p in active if p.index is not None}
            free = [i for i in range(spec.completions or 0) if i not in taken]
            for index in free[: want - len(active)]:
                self._create(index)
        else:
            for _ in range(want - len(active)):
                self._create(None)

    def _active(self) -> list[TrackedPod]:
        return sorted(self.pods.values(), key=lambda p: p.name)

    def _create(self, index: int | None) -> None:
        template = copy.deepcopy(self.spec.get("template") or {})
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = jp.pod_labels(self.obj)
        prefix = f"{self.name}-"
        if index is not None:
            template_meta["labels"][jp.COMPLETION_INDEX] = str(index)
            template_meta.setdefault("annotations", {})[jp.COMPLETION_INDEX] = str(index)
            pod_spec = template.setdefault("spec", {})
            pod_spec.setdefault("hostname", f"{self.name}-{index}")
            prefix = f"{self.name}-{index}-"
        pod = pod_from_template(self.obj, template, name=self.hub.generate_name(self.namespace, prefix))
        self.hub.create_pod(self, pod, index=index)

    def pod_gone(self, pod: TrackedPod, *, succeeded: bool) -> None:
        now = self.hub.at(self.hub.now)
        if succeeded:
            if pod.index is None:
                self.succeeded += 1
            elif pod.index not in self.completed_indexes:
                self.completed_indexes.add(pod.index)
                self.succeeded += 1
            self.backoff = jp.BackoffRecord()
        else:
            self.failed += 1
            self.backoff = jp.BackoffRecord(self.backoff.failures + 1, now)
        self.hub.mark(self)

    def _finish(self, kind: str, reason: str) -> None:
        for pod in self._active():
            self.hub.delete_pod(pod)
        self.finished, self.reason, self.finished_at = kind, reason, self.hub.now
        if self.parent is not None:
            self.hub.mark(self.parent)

    @property
    def is_active(self) -> bool:
        return self.alive and self.finished is None

    def status(self) -> Obj:
        status: Obj = {"active": len(self.pods), "succeeded": self.succeeded, "failed": self.failed}
        if self.start_time is not None:
            status["startTime"] = self.hub.stamp(self.start_time)
        if self.job_spec.indexed:
            status["completedIndexes"] = jp.format_indexes(self.completed_indexes)
        if self.finished is not None and self.finished_at is not None:
            stamp = self.hub.stamp(self.finished_at)
            status["conditions"] = [
                {"type": self.finished, "status": "True", "reason": self.reason, "lastTransitionTime": stamp}
            ]
            if self.finished == COMPLETE:
                status["completionTime"] = stamp
        self.obj["status"] = status
        return self.obj
