"""CronJobs on the virtual clock: Jobs from ``jobTemplate`` at the schedule's times, counted from the workload's
epoch (virtual time 0), as kube-controller-manager's CronJob controller (v1.35) makes them.

- the schedule is robfig/cron's standard syntax (``app/cluster/admission/cron.py``) in ``spec.timeZone`` (UTC
  without one); the first time is the first after the CronJob's creation; a sync happens exactly at each scheduled
  time (upstream waits 100 ms more against clock skew; a virtual clock has none);
- the Job is ``<cronjob>-<scheduled time in minutes since the Unix epoch>``, controlled by the CronJob, annotated
  ``batch.kubernetes.io/cronjob-scheduled-timestamp``; its pods run the create event's ``runFor``;
- concurrencyPolicy Allow starts Jobs side by side; Forbid skips a time while a Job runs (the most recent missed
  time starts when it finishes, within ``startingDeadlineSeconds`` if set, as upstream's next sync finds it);
  Replace deletes the running Jobs (and their pods) first; ``suspend`` starts nothing;
- finished Jobs beyond ``successfulJobsHistoryLimit`` (3) / ``failedJobsHistoryLimit`` (1) are forgotten.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kss_sim.cluster.admission.cron import CronError, parse_standard
from kss_sim.controllers.cronjob import SCHEDULED_TIMESTAMP, Schedule, job_name, most_recent_schedule_time
from kss_sim.controllers.job_parts import parse_time, rfc3339
from kss_sim.kube.objects import Obj
from kss_sim.replay.controllers.base import Hub, Owner, WorkloadError, int_spec
from kss_sim.replay.controllers.job import COMPLETE, JobOwner


def parse_schedule(cronjob: Obj) -> tuple[Schedule, ZoneInfo | None]:
    """The CronJob's schedule and its time zone (None: UTC); :class:`WorkloadError` for a bad one."""
    spec = cronjob.get("spec") or {}
    zone_name = spec.get("timeZone")
    zone: ZoneInfo | None = None
    if zone_name:
        try:
            zone = ZoneInfo(str(zone_name))
        except (ZoneInfoNotFoundError, ValueError):
            raise WorkloadError([f"spec.timeZone: Invalid value: {zone_name!r}: unknown time zone"]) from None
    try:
        return Schedule(parse_standard(str(spec.get("schedule") or "")), zone), zone
    except CronError as exc:
        raise WorkloadError([f"spec.schedule: Invalid value: {spec.get('schedule')!r}: {exc}"]) from None


class CronJobOwner(Owner):
    """One CronJob and the Jobs it started (oldest first)."""

    kind = "CronJob"
    api_version = "batch/v1"

    def __init__(self, hub: Hub, obj: Obj, run_for: float | None) -> None:
        self.schedule, self.zone = parse_schedule(obj)
        super().__init__(hub, obj, run_for)
        self.jobs: list[JobOwner] = []
        # A snapshot's CronJob goes on from its last scheduled time, not from its creation.
        self.last_schedule: datetime | None = parse_time((obj.get("status") or {}).get("lastScheduleTime"))
        self.started: list[tuple[float, str]] = []  # (virtual time, Job name): every Job it made

    def update(self, obj: Obj) -> None:
        self.schedule, self.zone = parse_schedule(obj)
        super().update(obj)

    def _as_object(self) -> Obj:
        """The CronJob as ``most_recent_schedule_time`` reads it (creation and lastScheduleTime)."""
        view = dict(self.obj)
        view["status"] = {"lastScheduleTime": rfc3339(self.last_schedule)} if self.last_schedule else {}
        return view

    def sync(self) -> None:
        # A millisecond of slack: a timer set for a scheduled time may land a float's rounding before it.
        now = self.hub.at(self.hub.now + 0.001)
        self._cleanup()
        if self.spec.get("suspend") is True:
            return
        try:
            _, recent, _ = most_recent_schedule_time(self._as_object(), now, self.schedule, with_deadline=True)
        except ValueError:
            return  # a schedule that never repeats: upstream records an event and waits for an update
        active = [job for job in self.jobs if job.is_active]
        if recent is not None and not self._already_started(recent):
            policy = self.spec.get("concurrencyPolicy") or "Allow"
            if policy == "Forbid" and active:
                recent = None  # JobAlreadyActive: the Job's end syncs the CronJob again
            else:
                if policy == "Replace":
                    for job in active:
                        job.delete()
                    self.jobs = [job for job in self.jobs if job.alive]
                self._start(recent)
        try:
            following = self.schedule.next(now)
        except CronError:
            return
        self.hub.wake(self, self.hub.virtual(following), holds_run=False)

    def _already_started(self, scheduled: datetime) -> bool:
        name = job_name(self.obj, scheduled)
        return any(job.name == name for job in self.jobs)

    def _start(self, scheduled: datetime) -> None:
        template = copy.deepcopy(self.spec.get("jobTemplate") or {})
        template_meta = template.get("metadata") or {}
        stamp = scheduled.astimezone(self.zone or UTC).isoformat().replace("+00:00", "Z")
        job_obj: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": job_name(self.obj, scheduled),
                "namespace": self.namespace,
                "labels": dict(template_meta.get("labels") or {}),
                "annotations": {**(template_meta.get("annotations") or {}), SCHEDULED_TIMESTAMP: stamp},
                "ownerReferences": [self.owner_reference()],
            },
            "spec": template.get("spec") or {},
        }
        job = JobOwner(self.hub, job_obj, self.run_for, parent=self)
        self.jobs.append(job)
        self.started.append((self.hub.now, job.name))
        self.last_schedule = scheduled
        self.hub.register(job)
        self.hub.mark(job)

    def adopt_job(self, job: JobOwner) -> None:
        """A Job this CronJob started before the replay (a start snapshot's): it joins, oldest first, and counts
        for concurrencyPolicy and the history limits."""
        job.parent = self
        self.jobs.append(job)
        self.jobs.sort(key=lambda j: str(j.obj["metadata"].get("creationTimestamp") or ""))
        self.hub.register(job)
        self.hub.mark(job)
        self.hub.mark(self)

    def _cleanup(self) -> None:
        """``cleanupFinishedJobs``: the oldest finished Jobs beyond the history limits are deleted."""
        for outcome, limit in (
            (COMPLETE, int_spec(self.spec, "successfulJobsHistoryLimit", 3)),
            ("Failed", int_spec(self.spec, "failedJobsHistoryLimit", 1)),
        ):
            finished = [job for job in self.jobs if job.finished == outcome]
            for job in finished[: max(0, len(finished) - limit)]:
                job.delete()
                self.jobs.remove(job)

    def delete(self) -> None:
        self.alive = False
        for job in self.jobs:
            job.delete()

    def status(self) -> Obj:
        status: Obj = {"active": [{"kind": "Job", "name": job.name} for job in self.jobs if job.is_active]}
        if self.last_schedule is not None:
            status["lastScheduleTime"] = rfc3339(self.last_schedule)
        successes = [job.finished_at for job in self.jobs if job.finished == COMPLETE and job.finished_at]
        if successes:
            status["lastSuccessfulTime"] = self.hub.stamp(max(successes))
        self.obj["status"] = status
        return self.obj
