"""The CronJob controller: kube-controller-manager's ``pkg/controller/cronjob`` (ControllerV2, v1.35).

One sync of a CronJob, as upstream's ``syncCronJob`` then ``cleanupFinishedJobs``:

- its Jobs are those it controls; a finished one leaves ``status.active`` ("SawCompletedJob"), a succeeded one moves
  ``lastSuccessfulTime`` to its completionTime, an active one that went missing leaves ("MissingJob"), an
  unfinished one not in the list is reported ("UnexpectedJob");
- a CronJob being deleted or suspended starts nothing; otherwise the schedule (robfig/cron's standard parser,
  ``app/cluster/admission/cron.py``, in ``spec.timeZone``, UTC without one) gives the most recent unmet time since
  ``lastScheduleTime`` (or creation, or ``now - startingDeadlineSeconds`` when later); more than 100 missed ones
  record "TooManyMissedTimes"; one older than ``startingDeadlineSeconds`` is "MissSchedule"d; one already started
  is skipped; Forbid with an active Job waits ("JobAlreadyActive"), Replace deletes the active ones first;
- the Job is ``<cronjob>-<scheduled time in minutes since the epoch>`` from ``jobTemplate``, controlled by the
  CronJob, annotated with ``batch.kubernetes.io/cronjob-scheduled-timestamp`` (RFC 3339 in the time zone), and
  joins ``status.active`` with ``lastScheduleTime``;
- finished Jobs beyond ``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit`` are deleted oldest first.

The next sync is asked for on the controller's clock at the next schedule time (plus upstream's 100 ms).
Jobs are deleted with Background propagation, so their pods go through the garbage collector.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kss_sim.cluster.admission.cron import CronError, CronSchedule, parse_standard
from kss_sim.cluster.admission.deletion import BACKGROUND, DeleteOptions
from kss_sim.cluster.errors import AlreadyExists, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.job_parts import COMPLETE, FAILED, has_true, is_finished, parse_time, rfc3339
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import Key, OwnedIndex, controller_ref, is_deleting, key_of, meta, owner_reference
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "cronjob-controller"
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
TOO_MANY_MISSED = 100
NEXT_SCHEDULE_DELTA = timedelta(milliseconds=100)


class Schedule:
    """A cron schedule read in a time zone: the next activation after an instant, as an aware UTC datetime."""

    def __init__(self, cron: CronSchedule, zone: ZoneInfo | None) -> None:
        """``cron`` evaluated on the wall clock of ``zone`` (UTC when None)."""
        self._cron = cron
        self._zone = zone

    def next(self, after: datetime) -> datetime:
        """The first activation strictly after ``after``."""
        zone = self._zone or UTC
        local = after.astimezone(zone).replace(tzinfo=None)
        return self._cron.next_after(local).replace(tzinfo=zone).astimezone(UTC)


def most_recent_schedule_time(
    cronjob: Mapping[str, Any], now: datetime, schedule: Schedule, *, with_deadline: bool
) -> tuple[datetime, datetime | None, int]:
    """``mostRecentScheduleTime``: the earliest time considered, the most recent unmet activation (None when
    the next is still ahead) and how many were missed (upstream's approximation). ``ValueError`` for a schedule
    that never repeats (two activations less than a second apart, as "59 23 31 2 *")."""
    status = cronjob.get("status") or {}
    spec = cronjob.get("spec") or {}
    earliest = parse_time(status.get("lastScheduleTime")) or parse_time(meta(cronjob).get("creationTimestamp")) or now
    deadline = spec.get("startingDeadlineSeconds")
    if with_deadline and isinstance(deadline, int) and not isinstance(deadline, bool):
        earliest = max(earliest, now - timedelta(seconds=deadline))
    try:
        t1 = schedule.next(earliest)
        if now < t1:
            return earliest, None, 0
        t2 = schedule.next(t1)
    except CronError:  # robfig's Next gives the zero time for a schedule that never fires: no interval
        raise ValueError("time difference between two schedules is less than 1 second") from None
    if now < t2:
        return earliest, t1, 1
    between = round((t2 - t1).total_seconds())
    if between < 1:
        raise ValueError("time difference between two schedules is less than 1 second")
    missed = int((now - t1).total_seconds()) // between + 1
    recent: datetime | None = None
    t = schedule.next(t1 + timedelta(seconds=(missed - 2) * between))
    while t <= now:
        recent = t
        t = schedule.next(t)
    return earliest, recent, missed


def next_schedule_wait(cronjob: Mapping[str, Any], now: datetime, schedule: Schedule) -> datetime | None:
    """``nextScheduleTimeDuration`` as a clock time: the activation after the most recent one, plus 100 ms (None
    for a schedule that never fires)."""
    try:
        earliest, recent, _ = most_recent_schedule_time(cronjob, now, schedule, with_deadline=False)
        base = recent if recent is not None else earliest
    except ValueError:
        base = now
    try:
        return schedule.next(base) + NEXT_SCHEDULE_DELTA
    except CronError:
        return None


def job_name(cronjob: Mapping[str, Any], scheduled: datetime) -> str:
    """``getJobName``: the CronJob's name and the scheduled time in minutes since the epoch."""
    return f"{meta(cronjob).get('name')}-{int(scheduled.timestamp()) // 60}"


def _job_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    m = meta(job)
    return {
        "kind": "Job",
        "namespace": m.get("namespace"),
        "name": m.get("name"),
        "uid": m.get("uid"),
        "apiVersion": "batch/v1",
        "resourceVersion": m.get("resourceVersion"),
    }


def _start_order(job: Mapping[str, Any]) -> tuple[int, str, str]:
    """``byJobStartTime``: Jobs without a startTime last, then by startTime, then by name."""
    started = (job.get("status") or {}).get("startTime")
    return (0 if started else 1, str(started or ""), str(meta(job).get("name") or ""))


class CronJobController(ReconcileLoop[Key]):
    """Creates each CronJob's Jobs on schedule and keeps its status (module docstring)."""

    name = "cronjob-controller"
    watched_kinds = ("CronJob", "Job")

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now) -> None:
        """A stopped controller over ``store``; ``clock`` is the time schedules are compared with."""
        super().__init__(store, clock=clock)
        self._jobs = OwnedIndex()  # Job -> the uid of the CronJob controlling it
        self._cronjobs: dict[str, Key] = {}  # CronJob uid -> key

    def reset(self) -> None:
        self._jobs.clear()
        self._cronjobs.clear()

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        key = key_of(obj)
        if kind == "CronJob":
            uid = str(meta(obj).get("uid") or "")
            if event_type == DELETED:
                self._cronjobs.pop(uid, None)
                return []
            self._cronjobs[uid] = key
            return [key]
        ref = controller_ref(obj)
        owner = str(ref.get("uid")) if ref is not None and ref.get("kind") == "CronJob" else None
        before = self._jobs.update(key, None if event_type == DELETED else owner)
        return [self._cronjobs[u] for u in {before, owner} if u is not None and u in self._cronjobs]

    def resync(self) -> list[Key]:
        keys = [k for e in self.store.select("CronJob").items for k in self.observe("ADDED", "CronJob", e.obj)]
        for entry in self.store.select("Job").items:
            self.observe("ADDED", "Job", entry.obj)
        return keys

    def _event(self, cronjob: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        self.store.create_event(cronjob, reason, message, type="Warning" if warning else "Normal", component=COMPONENT)

    # --- one CronJob ------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        try:
            stored = self.store.read("CronJob", key[0], key[1]).obj
        except NotFound:
            return
        cronjob = copy.deepcopy(stored)
        uid = str(meta(cronjob).get("uid") or "")
        jobs: list[Obj] = []
        for job_key in self._jobs.owned_by(uid):
            try:
                jobs.append(self.store.read("Job", *job_key).obj)
            except NotFound:
                continue
        wake = self._sync(cronjob, jobs)
        self._cleanup_finished(cronjob, jobs)
        old_status = stored.get("status") or {}
        new_status = cronjob.get("status") or {}
        if new_status != old_status:
            patch = {
                k: new_status.get(k)
                for k in set(old_status) | set(new_status)
                if old_status.get(k) != new_status.get(k)
            }
            body = {"metadata": {"resourceVersion": meta(stored).get("resourceVersion")}, "status": patch}
            self.store.patch("CronJob", key[0], key[1], body, "merge", subresource="status")
        if wake is not None:
            self.requeue_at(key, wake)

    def _sync(self, cronjob: Obj, jobs: list[Obj]) -> datetime | None:
        """``syncCronJob`` on ``cronjob`` (its status edited in place); the clock time to look again, or None."""
        status: dict[str, Any] = cronjob.setdefault("status", {})
        active: list[dict[str, Any]] = list(status.get("active") or [])
        active_uids = {a.get("uid") for a in active}
        children = set()
        for job in jobs:
            juid = meta(job).get("uid")
            children.add(juid)
            if juid not in active_uids and not is_finished(job):
                self._event(
                    cronjob,
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {meta(job).get('name')}",
                    warning=True,
                )
            elif juid in active_uids and is_finished(job):
                kind = COMPLETE if has_true(job.get("status") or {}, COMPLETE) else FAILED
                active = [a for a in active if a.get("uid") != juid]
                self._event(
                    cronjob, "SawCompletedJob", f"Saw completed job: {meta(job).get('name')}, condition: {kind}"
                )
            elif has_true(job.get("status") or {}, COMPLETE):
                completed = parse_time((job.get("status") or {}).get("completionTime"))
                last = parse_time(status.get("lastSuccessfulTime"))
                if completed is not None and (last is None or completed > last):
                    status["lastSuccessfulTime"] = rfc3339(completed)
        for ref in list(active):
            if ref.get("uid") in children:
                continue
            try:
                self.store.read("Job", ref.get("namespace") or meta(cronjob).get("namespace"), str(ref.get("name")))
            except NotFound:
                self._event(cronjob, "MissingJob", f"Active job went missing: {ref.get('name')}")
                active = [a for a in active if a.get("uid") != ref.get("uid")]
        self._set_active(status, active)
        spec = cronjob.get("spec") or {}
        if is_deleting(cronjob):
            return None
        zone: ZoneInfo | None = None
        time_zone = spec.get("timeZone")
        if time_zone:
            try:
                zone = ZoneInfo(str(time_zone))
            except (ZoneInfoNotFoundError, ValueError) as exc:
                self._event(cronjob, "UnknownTimeZone", f'invalid timeZone: "{time_zone}": {exc}', warning=True)
                return None
        if spec.get("suspend") is True:
            return None
        try:
            schedule = Schedule(parse_standard(str(spec.get("schedule") or "")), zone)
        except CronError as exc:
            self._event(
                cronjob, "UnparseableSchedule", f'unparseable schedule: "{spec.get("schedule")}" : {exc}', warning=True
            )
            return None
        now = self.now()
        try:
            _, scheduled, missed = most_recent_schedule_time(cronjob, now, schedule, with_deadline=True)
        except ValueError as exc:
            self._event(cronjob, "InvalidSchedule", f"invalid schedule: {spec.get('schedule')} : {exc}", warning=True)
            return None
        if scheduled is not None and missed > TOO_MANY_MISSED:
            self._event(
                cronjob,
                "TooManyMissedTimes",
                f"too many missed start times: {missed}. "
                "Set or decrease .spec.startingDeadlineSeconds or check clock skew",
                warning=True,
            )
        wake = next_schedule_wait(cronjob, now, schedule)
        if scheduled is None:
            return wake
        deadline = spec.get("startingDeadlineSeconds")
        if isinstance(deadline, int) and scheduled + timedelta(seconds=deadline) < now:
            when = scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000")
            self._event(cronjob, "MissSchedule", f"Missed scheduled time to start a job: {when}", warning=True)
            return wake
        name = job_name(cronjob, scheduled)
        if any(a.get("name") == name for a in active) or parse_time(status.get("lastScheduleTime")) == scheduled:
            return wake
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and active:
            self._event(
                cronjob,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
            return wake
        if policy == "Replace":
            for ref in list(active):
                if self._delete_job(
                    cronjob, str(ref.get("namespace") or meta(cronjob).get("namespace")), str(ref.get("name"))
                ):
                    active = [a for a in active if a.get("uid") != ref.get("uid")]
            self._set_active(status, active)
        created = self._create_job(cronjob, scheduled, zone)
        if created is None:
            return wake
        self._set_active(status, [*active, _job_ref(created)])
        status["lastScheduleTime"] = rfc3339(scheduled)
        return next_schedule_wait(cronjob, now, schedule)

    @staticmethod
    def _set_active(status: dict[str, Any], active: list[dict[str, Any]]) -> None:
        if active:
            status["active"] = active
        else:
            status.pop("active", None)

    def _create_job(self, cronjob: Obj, scheduled: datetime, zone: ZoneInfo | None) -> Obj | None:
        """``getJobFromTemplate2`` and create it; None when a Job of that name exists that it does not control
        or already lists."""
        template = (cronjob.get("spec") or {}).get("jobTemplate") or {}
        template_meta = template.get("metadata") or {}
        annotations = dict(template_meta.get("annotations") or {})
        annotations[SCHEDULED_TIMESTAMP] = scheduled.astimezone(zone or UTC).isoformat().replace("+00:00", "Z")
        name = job_name(cronjob, scheduled)
        namespace = str(meta(cronjob).get("namespace") or "default")
        body: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": dict(template_meta.get("labels") or {}),
                "annotations": annotations,
                "ownerReferences": [owner_reference(cronjob)],
            },
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        try:
            created = self.store.create("Job", body, namespace)
        except AlreadyExists:
            try:
                existing = self.store.read("Job", namespace, name).obj
            except NotFound:
                return None
            ref = controller_ref(existing)
            active = (cronjob.get("status") or {}).get("active") or []
            if ref is None or ref.get("uid") != meta(cronjob).get("uid"):
                return None
            if any(a.get("uid") == meta(existing).get("uid") for a in active):
                return None
            return existing
        self._event(cronjob, "SuccessfulCreate", f"Created job {name}")
        return created

    def _delete_job(self, cronjob: Obj, namespace: str, name: str) -> bool:
        """``deleteJob``: Background propagation; False (and a Warning) when it failed."""
        try:
            self.store.delete("Job", namespace, name, options=DeleteOptions(propagation_policy=BACKGROUND))
        except NotFound as exc:
            self._event(cronjob, "FailedDelete", f"Deleted job: {exc.message}", warning=True)
            return False
        self._event(cronjob, "SuccessfulDelete", f"Deleted job {name}")
        return True

    def _cleanup_finished(self, cronjob: Obj, jobs: list[Obj]) -> None:
        """``cleanupFinishedJobs``: the oldest finished Jobs beyond the history limits go."""
        if is_deleting(cronjob):
            return
        spec = cronjob.get("spec") or {}
        for kind, limit in (
            (COMPLETE, spec.get("successfulJobsHistoryLimit")),
            (FAILED, spec.get("failedJobsHistoryLimit")),
        ):
            if not isinstance(limit, int) or isinstance(limit, bool):
                continue
            finished = sorted((j for j in jobs if has_true(j.get("status") or {}, kind)), key=_start_order)
            for job in finished[: max(0, len(finished) - limit)]:
                m = meta(job)
                if self._delete_job(cronjob, str(m.get("namespace")), str(m.get("name"))):
                    status = cronjob.setdefault("status", {})
                    self._set_active(status, [a for a in status.get("active") or [] if a.get("uid") != m.get("uid")])
