"""The Job controller: kube-controller-manager's ``pkg/controller/job`` (v1.35) over the virtual cluster.

One sync of a Job, in upstream's order:

- its pods are those it controls (controller ownerReference to its uid); each carries the
  ``batch.kubernetes.io/job-tracking`` finalizer from creation, so a finished pod is counted exactly once: its uid
  goes to ``status.uncountedTerminatedPods`` first, then the finalizer is removed, then it moves into
  ``succeeded``/``failed`` (Indexed Jobs count ``completedIndexes`` instead of succeeded uids). A pod being deleted
  that had not succeeded counts as failed (podReplacementPolicy TerminatingOrFailed, the default);
- a failed pod a ``FailJob`` rule of ``spec.podFailurePolicy`` matches adds ``FailureTarget`` (PodFailurePolicy,
  job_failure_policy.py), a failure an ``Ignore`` rule matches is left out of ``failed``;
- ``failed > backoffLimit`` adds ``FailureTarget`` (BackoffLimitExceeded), running longer than
  ``activeDeadlineSeconds`` since ``startTime`` adds it with DeadlineExceeded; otherwise ``manageJob`` keeps
  ``min(parallelism, completions - succeeded)`` pods active (work-queue Jobs without completions: parallelism until
  one succeeds), creating them from the template (``<job>-`` names; Indexed: ``<job>-<index>-``, hostname
  ``<job>-<index>``, the completion index as annotation, label and ``JOB_COMPLETION_INDEX``) once the pod-failure
  backoff (10s doubling per failure since the last success, capped at 10 minutes) has passed on the controller's
  clock, and deleting the extra ones; a suspended Job has none (``Suspended`` condition, ``startTime`` reset on
  resume);
- reaching the completions adds ``SuccessCriteriaMet`` (CompletionsReached); a Job with either target condition
  has its remaining pods deleted, and gets ``Complete`` (with ``completionTime``) or ``Failed`` once no pod is
  uncounted or terminating, with the Events upstream records.

Pods are deleted with DeleteOptions, as ``podControl.DeletePod`` does: a bound pod ends gracefully and stays, not
active, in ``status.terminating`` (JobPodReplacementPolicy, GA) until its kubelet removes it. The default
podReplacementPolicy (TerminatingOrFailed) replaces it at once; ``Failed`` (or a podFailurePolicy) creates the
replacement only once it has gone (``manageJob``'s ``wantActive - terminating - active``; Indexed Jobs also leave
the terminating pods' indexes alone). Pods this sync deleted that still terminate are counted at once, as
upstream's ``terminating += removed``.

Pods that lost their Job (deleted, or finished) have their finalizer removed, as ``syncOrphanPod`` does. The status
is written as a merge patch of the status subresource carrying the resourceVersion read (a conflict re-syncs).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.job_failure_policy import POD_FAILURE_POLICY, fail_job_message, match_pod_failure_policy
from kss_sim.controllers.job_parts import (
    BACKOFF_LIMIT_EXCEEDED,
    COMPLETE,
    COMPLETION_INDEX,
    COMPLETIONS_REACHED,
    DEADLINE_EXCEEDED,
    FAILED,
    FAILURE_TARGET,
    JOB_RESUMED,
    JOB_SUSPENDED,
    JOB_TRACKING_FINALIZER,
    SUCCESS_CRITERIA_MET,
    SUSPENDED,
    BackoffRecord,
    JobSpec,
    completion_index,
    condition,
    format_indexes,
    has_true,
    is_finished,
    parse_indexes,
    parse_time,
    phase,
    pod_labels,
    rfc3339,
    set_condition,
)
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import (
    OwnedIndex,
    controller_ref,
    is_active,
    is_deleting,
    is_ready,
    is_terminated,
    key_of,
    meta,
    pod_from_template,
)
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "job-controller"
WATCHED_KINDS = ("Job", "Pod")
GRACEFUL = DeleteOptions(graceful=True)  # podControl's DeleteOptions{}: the pod's own grace period

# Status fields JobStatus encodes with omitempty (ready, terminating and uncountedTerminatedPods always appear).
_OMIT_EMPTY = frozenset({"active", "succeeded", "failed", "conditions", "completedIndexes", "startTime"})

Key = tuple[str, str, str]  # ("Job" | "Pod", namespace, name)
_Finish = tuple[str, tuple[str, str]]  # terminal condition type, (reason, message)


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in meta(obj).get("finalizers") or []]


def _uid(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def _merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch turning ``old`` into ``new`` (nested objects diffed, removed keys null)."""
    patch: dict[str, Any] = {}
    for key in set(old) | set(new):
        before, after = old.get(key), new.get(key)
        if before == after and (key in old) == (key in new):
            continue
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            patch[key] = _merge_diff(before, after)
        else:
            patch[key] = after
    return patch


def _deletion_order(pod: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """Which active pod goes first when there are too many (``controller.ActivePods`` in short): unscheduled,
    then pending, then not ready, newest first."""
    status = pod.get("status") or {}
    return (
        0 if not (pod.get("spec") or {}).get("nodeName") else 1,
        0 if status.get("phase") == "Pending" else 1,
        1 if is_ready(pod) else 0,
        "".join(chr(0x10FFFF - ord(c)) for c in str(meta(pod).get("creationTimestamp") or "")),
    )


class JobController(ReconcileLoop[Key]):
    """Runs each Job's pods to completion and keeps its status (module docstring); ``start``/``stop`` with the app."""

    name = "job-controller"
    watched_kinds = WATCHED_KINDS

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now) -> None:
        """A stopped controller over ``store``; ``clock`` times backoff, deadlines and status timestamps."""
        super().__init__(store, clock=clock)
        self._pods = OwnedIndex()  # pod -> the uid of the Job controlling it
        self._jobs: dict[str, tuple[str, str]] = {}  # Job uid -> (namespace, name)
        self._backoff: dict[str, BackoffRecord] = {}  # Job uid -> its pod-failure backoff

    def reset(self) -> None:
        self._pods.clear()
        self._jobs.clear()
        self._backoff.clear()

    # --- what changes concern ---------------------------------------------------------------------------
    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        namespace, name = key_of(obj)
        if kind == "Job":
            uid = _uid(obj)
            if event_type == DELETED:
                self._jobs.pop(uid, None)
                self._backoff.pop(uid, None)
                return [("Pod", *pod) for pod in self._pods.owned_by(uid)]  # their finalizers go
            self._jobs[uid] = (namespace, name)
            return [("Job", namespace, name)]
        ref = controller_ref(obj)
        owner = str(ref.get("uid")) if ref is not None and ref.get("kind") == "Job" and ref.get("uid") else None
        if event_type == DELETED:
            owner = None
        before = self._pods.update((namespace, name), owner)
        keys: list[Key] = [
            ("Job", *self._jobs[uid]) for uid in {before, owner} if uid is not None and uid in self._jobs
        ]
        if event_type != DELETED and JOB_TRACKING_FINALIZER in _finalizers(obj) and owner not in self._jobs:
            keys.append(("Pod", namespace, name))
        return keys

    def resync(self) -> list[Key]:
        """Index every Job and pod; queue every Job and every tracked pod without a Job."""
        keys: list[Key] = []
        for entry in self.store.select("Job").items:
            keys += self.observe("ADDED", "Job", entry.obj)
        for entry in self.store.select("Pod").items:
            keys += [k for k in self.observe("ADDED", "Pod", entry.obj) if k[0] == "Pod"]
        return keys

    def reconcile(self, key: Key) -> None:
        kind, namespace, name = key
        if kind == "Pod":
            self._sync_orphan_pod(namespace, name)
        else:
            self._sync_job(namespace, name)

    # --- orphans ----------------------------------------------------------------------------------------
    def _sync_orphan_pod(self, namespace: str, name: str) -> None:
        """``syncOrphanPod``: a tracked pod whose Job is gone or finished loses the finalizer."""
        try:
            pod = self.store.read("Pod", namespace, name).obj
        except NotFound:
            return
        if JOB_TRACKING_FINALIZER not in _finalizers(pod):
            return
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == "Job":
            try:
                job = self.store.read("Job", namespace, str(ref.get("name") or "")).obj
            except NotFound:
                job = None
            if job is not None and _uid(job) == ref.get("uid") and not is_finished(job):
                return  # its Job counts it
        self._release([pod])

    # --- one Job ----------------------------------------------------------------------------------------
    def _job_pods(self, uid: str) -> list[Obj]:
        pods: list[Obj] = []
        for namespace, name in self._pods.owned_by(uid):
            try:
                pods.append(self.store.read("Pod", namespace, name).obj)
            except NotFound:
                continue  # its deletion is in the inbox
        return pods

    def _sync_job(self, namespace: str, name: str) -> None:
        try:
            job = self.store.read("Job", namespace, name).obj
        except NotFound:
            return
        uid = _uid(job)
        pods = self._job_pods(uid)
        if is_finished(job):
            self._release([p for p in pods if JOB_TRACKING_FINALIZER in _finalizers(p)])
            self._backoff.pop(uid, None)
            return
        spec = JobSpec.of(job)
        now = self.now()
        stamp = rfc3339(now)
        old_status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        status: dict[str, Any] = copy.deepcopy(old_status)
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        uncounted = status.get("uncountedTerminatedPods") or {}
        unc_succeeded: list[str] = [str(u) for u in uncounted.get("succeeded") or []]
        unc_failed: list[str] = [str(u) for u in uncounted.get("failed") or []]
        completions = spec.completions
        completed = parse_indexes(status.get("completedIndexes"), completions or 0) if spec.indexed else set()

        def valid_index(pod: Mapping[str, Any]) -> int | None:
            index = completion_index(pod)
            return index if index is not None and completions is not None and 0 <= index < completions else None

        def considered_failed(pod: Mapping[str, Any]) -> bool:
            if phase(pod) == "Failed":
                return True
            return not spec.only_replace_failed and is_deleting(pod) and phase(pod) != "Succeeded"

        tracked = [p for p in pods if JOB_TRACKING_FINALIZER in _finalizers(p)]
        new_succeeded = [
            p
            for p in tracked
            if phase(p) == "Succeeded"
            and _uid(p) not in unc_succeeded
            and _uid(p) not in unc_failed
            and (not spec.indexed or (valid_index(p) is not None and valid_index(p) not in completed))
        ]
        new_failed = [
            p for p in tracked if phase(p) != "Succeeded" and considered_failed(p) and _uid(p) not in unc_failed
        ]
        backoff = self._backoff.get(uid, BackoffRecord()).after(new_succeeded, new_failed)
        if spec.indexed:
            succeeded_total = len(completed | {i for p in new_succeeded if (i := valid_index(p)) is not None})
        else:
            succeeded_total = int(status.get("succeeded") or 0) + len(unc_succeeded) + len(new_succeeded)
        policy = spec.pod_failure_policy

        def counts_as_failure(pod: Mapping[str, Any]) -> bool:
            """Not a failure an Ignore rule of the podFailurePolicy leaves out (``nonIgnoredFailedPodsCount``)."""
            return match_pod_failure_policy(policy, pod).counts

        failed_total = (
            int(status.get("failed") or 0) + len(unc_failed) + sum(1 for p in new_failed if counts_as_failure(p))
        )

        active = [p for p in pods if is_active(p)]
        if not spec.suspend and not status.get("startTime"):
            status["startTime"] = stamp
        finish = self._finish_target(status)
        if (
            finish is None
            and (message := fail_job_message(policy, [p for p in pods if considered_failed(p)])) is not None
        ):
            finish = (FAILED, (POD_FAILURE_POLICY, message))
            set_condition(conditions, FAILURE_TARGET, "True", finish[1], stamp)
        if finish is None:
            if failed_total > spec.backoff_limit:
                finish = (FAILED, BACKOFF_LIMIT_EXCEEDED)
            elif self._past_deadline(spec, status, now):
                finish = (FAILED, DEADLINE_EXCEEDED)
            if finish is not None:
                set_condition(conditions, FAILURE_TARGET, "True", finish[1], stamp)

        released_uncounted: list[Obj] = []  # pods leaving without being counted (suspension, excess)
        removed: list[Obj] = []  # active pods this sync deletes
        created = 0
        if finish is None and not is_deleting(job):
            if spec.suspend:
                if set_condition(conditions, SUSPENDED, "True", JOB_SUSPENDED, stamp):
                    self.store.create_event(job, "Suspended", JOB_SUSPENDED[1], component=COMPONENT)
                removed = active
                released_uncounted = active
            else:
                if has_true(status, SUSPENDED):
                    set_condition(conditions, SUSPENDED, "False", JOB_RESUMED, stamp)
                    status["startTime"] = stamp  # the deadline counts from the resume
                    self.store.create_event(job, "Resumed", JOB_RESUMED[1], component=COMPONENT)
                removed, created = self._manage(job, spec, pods, active, completed, succeeded_total, backoff, now)
                released_uncounted = removed
            active_after = len(active) - len(removed) + created
            if spec.indexed:
                complete = completions is not None and succeeded_total >= completions
            elif completions is None:
                complete = succeeded_total > 0 and active_after == 0
            else:
                complete = succeeded_total >= completions
            if complete:
                finish = (COMPLETE, COMPLETIONS_REACHED)
                set_condition(conditions, SUCCESS_CRITERIA_MET, "True", COMPLETIONS_REACHED, stamp)
        if finish is not None:
            removed = active  # deleteActivePods
            created = 0
        self._release(released_uncounted)
        gone = {_uid(p) for p in released_uncounted}

        # Count what finished, then let those pods go.
        release: list[Obj] = []
        for pod in tracked:
            if _uid(pod) in gone:
                continue
            failed_now = considered_failed(pod) or (
                finish is not None and finish[0] == FAILED and phase(pod) != "Succeeded"
            )
            if not (finish is not None or is_deleting(job) or phase(pod) == "Succeeded" or failed_now):
                continue
            release.append(pod)
            pod_uid = _uid(pod)
            if phase(pod) == "Succeeded" and pod_uid not in unc_failed:
                if spec.indexed:
                    if (index := valid_index(pod)) is not None:
                        completed.add(index)
                elif pod_uid not in unc_succeeded:
                    unc_succeeded.append(pod_uid)
            elif (
                failed_now
                and pod_uid not in unc_failed
                and (not spec.indexed or valid_index(pod) is not None)
                and counts_as_failure(pod)
            ):
                unc_failed.append(pod_uid)
        for pod in removed:
            self._delete_pod(job, pod)
        if spec.indexed:
            status["completedIndexes"] = format_indexes(completed)
        status["uncountedTerminatedPods"] = self._uncounted(unc_succeeded, unc_failed)
        if release and self._write_status(job, old_status, status):
            # The uids are recorded before the finalizers go, so a crash in between never loses a count.
            job = self.store.read("Job", namespace, name).obj
            old_status = copy.deepcopy(job.get("status") or {})
        self._release(release)
        released_uids = {_uid(p) for p in release} | gone
        still_tracked = {_uid(p) for p in tracked if _uid(p) not in released_uids}
        finalized = {u for u in unc_succeeded + unc_failed if u not in still_tracked}
        succeeded_count = int(status.get("succeeded") or 0) + sum(1 for u in unc_succeeded if u in finalized)
        failed_count = int(status.get("failed") or 0) + sum(1 for u in unc_failed if u in finalized)
        unc_succeeded = [u for u in unc_succeeded if u not in finalized]
        unc_failed = [u for u in unc_failed if u not in finalized]
        status["uncountedTerminatedPods"] = self._uncounted(unc_succeeded, unc_failed)
        if spec.indexed:
            succeeded_count = len(completed)
        removed_uids = {_uid(p) for p in removed}
        terminating = self._still_terminating(
            [p for p in pods if _uid(p) in removed_uids or (is_deleting(p) and not is_terminated(p))]
        )
        remaining_active = [p for p in active if _uid(p) not in removed_uids]
        status["active"] = len(remaining_active) + created
        status["ready"] = sum(1 for p in remaining_active if is_ready(p))
        status["terminating"] = terminating
        status["succeeded"] = succeeded_count
        status["failed"] = failed_count
        finished_now = False
        if finish is not None and not unc_succeeded and not unc_failed and terminating == 0:
            finished_now = set_condition(conditions, finish[0], "True", finish[1], stamp)
            if finish[0] == COMPLETE and finished_now:
                status["completionTime"] = stamp
        self._write_status(job, old_status, status)
        self._backoff[uid] = backoff
        if finished_now:
            if finish is not None and finish[0] == COMPLETE:
                self.store.create_event(job, "Completed", "Job completed", component=COMPONENT)
            elif finish is not None:
                self.store.create_event(job, finish[1][0], finish[1][1], type="Warning", component=COMPONENT)
        self._schedule_wakeups(namespace, name, spec, status, backoff, now, finish is not None)

    def _still_terminating(self, pods: list[Obj]) -> int:
        """How many of ``pods`` are, after this sync's writes, being deleted and not finished: a pod released or
        deleted before it was bound has gone, a bound one waits for its kubelet."""
        count = 0
        for pod in pods:
            current = self.store.get("Pod", *key_of(pod))
            if (
                current is not None
                and _uid(current) == _uid(pod)
                and is_deleting(current)
                and not is_terminated(current)
            ):
                count += 1
        return count

    @staticmethod
    def _uncounted(succeeded: list[str], failed: list[str]) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {}
        if succeeded:
            result["succeeded"] = succeeded
        if failed:
            result["failed"] = failed
        return result

    @staticmethod
    def _finish_target(status: Mapping[str, Any]) -> _Finish | None:
        """A target condition set by an earlier sync: the Job only waits for its pods to be finished with."""
        target = condition(status, FAILURE_TARGET)
        if target is not None and target.get("status") == "True":
            return FAILED, (str(target.get("reason") or ""), str(target.get("message") or ""))
        if has_true(status, SUCCESS_CRITERIA_MET):
            return COMPLETE, COMPLETIONS_REACHED
        return None

    @staticmethod
    def _past_deadline(spec: JobSpec, status: Mapping[str, Any], now: datetime) -> bool:
        started = parse_time(status.get("startTime"))
        if spec.active_deadline_seconds is None or started is None or spec.suspend:
            return False
        return now - started >= timedelta(seconds=spec.active_deadline_seconds)

    def _schedule_wakeups(
        self,
        namespace: str,
        name: str,
        spec: JobSpec,
        status: Mapping[str, Any],
        backoff: BackoffRecord,
        now: datetime,
        finishing: bool,
    ) -> None:
        key: Key = ("Job", namespace, name)
        if finishing:
            return
        wait = backoff.remaining(now)
        if wait > timedelta(0):
            self.requeue_at(key, now + wait)
        started = parse_time(status.get("startTime"))
        if spec.active_deadline_seconds is not None and started is not None and not spec.suspend:
            self.requeue_at(key, started + timedelta(seconds=spec.active_deadline_seconds))

    # --- manageJob --------------------------------------------------------------------------------------
    def _manage(
        self,
        job: Obj,
        spec: JobSpec,
        pods: list[Obj],
        active: list[Obj],
        completed: set[int],
        succeeded: int,
        backoff: BackoffRecord,
        now: datetime,
    ) -> tuple[list[Obj], int]:
        """The active pods to delete and how many pods were created."""
        completions = spec.completions
        terminating = [p for p in pods if is_deleting(p) and not is_terminated(p)]
        if spec.indexed and completions is not None:
            want = max(0, min(spec.parallelism, completions - len(completed)))
            by_index: dict[int, Obj] = {}
            excess: list[Obj] = []
            for pod in sorted(active, key=lambda p: str(meta(p).get("creationTimestamp") or "")):
                index = completion_index(pod)
                if index is None or not 0 <= index < completions or index in completed or index in by_index:
                    excess.append(pod)  # a duplicate, or an index already done
                else:
                    by_index[index] = pod
            if len(by_index) > want:
                excess += [by_index.pop(i) for i in sorted(by_index, reverse=True)[: len(by_index) - want]]
            need = want - len(by_index) - (len(terminating) if spec.only_replace_failed else 0)
            if need <= 0 or backoff.remaining(now) > timedelta(0):
                return excess, 0
            blocked = {completion_index(p) for p in terminating} if spec.only_replace_failed else set()
            indexes = [i for i in range(completions) if i not in completed and i not in by_index and i not in blocked]
            for index in indexes[:need]:
                self._create_pod(job, index)
            return excess, len(indexes[:need])
        if completions is None:
            want = len(active) if succeeded > 0 else spec.parallelism
        else:
            want = max(0, min(spec.parallelism, completions - succeeded))
        if len(active) > want:
            return sorted(active, key=_deletion_order)[: len(active) - want], 0
        need = want - len(active) - (len(terminating) if spec.only_replace_failed else 0)
        if need <= 0 or backoff.remaining(now) > timedelta(0):
            return [], 0
        for _ in range(need):
            self._create_pod(job, None)
        return [], need

    def _create_pod(self, job: Obj, index: int | None) -> None:
        name = str(meta(job).get("name") or "")
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        labels = pod_labels(job)
        if index is not None:
            labels[COMPLETION_INDEX] = str(index)
        pod = pod_from_template(
            job, template, generate_name=f"{name}-{index}-" if index is not None else f"{name}-", extra_labels=labels
        )
        pod["metadata"]["finalizers"] = [*(pod["metadata"].get("finalizers") or []), JOB_TRACKING_FINALIZER]
        if index is not None:
            pod["metadata"].setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
            pod["spec"].setdefault("hostname", f"{name}-{index}")
            env = {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}},
            }
            for group in ("initContainers", "containers"):
                for container in pod["spec"].get(group) or []:
                    if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in container.get("env") or []):
                        container.setdefault("env", []).append(dict(env))
        created = self.store.create("Pod", pod, str(meta(job).get("namespace") or "default"))
        self.store.create_event(
            job, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}", component=COMPONENT
        )

    def _delete_pod(self, job: Obj, pod: Obj) -> None:
        try:
            self.store.delete(
                "Pod", meta(pod).get("namespace"), str(meta(pod).get("name")), uid=_uid(pod), options=GRACEFUL
            )
        except (NotFound, Conflict):
            return
        self.store.create_event(job, "SuccessfulDelete", f"Deleted pod: {meta(pod).get('name')}", component=COMPONENT)

    # --- writes -----------------------------------------------------------------------------------------
    def _release(self, pods: list[Obj]) -> None:
        """Remove the tracking finalizer from ``pods`` (a pod being deleted then goes)."""
        for pod in pods:
            finalizers = _finalizers(pod)
            if JOB_TRACKING_FINALIZER not in finalizers:
                continue
            kept = [f for f in finalizers if f != JOB_TRACKING_FINALIZER]
            namespace, name = key_of(pod)
            for _ in range(5):
                try:
                    self.store.patch(
                        "Pod",
                        namespace,
                        name,
                        {"metadata": {"finalizers": kept or None, "uid": _uid(pod)}},
                        "merge",
                    )
                    break
                except NotFound:
                    break
                except Conflict:
                    try:
                        current = self.store.read("Pod", namespace, name).obj
                    except NotFound:
                        break
                    if _uid(current) != _uid(pod):
                        break
                    kept = [f for f in _finalizers(current) if f != JOB_TRACKING_FINALIZER]

    def _write_status(self, job: Obj, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """Write ``new`` over ``old`` (a merge patch of what differs, omitempty fields left out as the API's
        encoding does); whether anything was written. A stale resourceVersion raises ``Conflict``."""
        wanted = {k: v for k, v in new.items() if not (k in _OMIT_EMPTY and not v)}
        patch = _merge_diff(old, wanted)
        if not patch:
            return False
        body = {"metadata": {"resourceVersion": meta(job).get("resourceVersion")}, "status": patch}
        namespace, name = key_of(job)
        self.store.patch("Job", namespace, name, body, "merge", subresource="status")
        return True
