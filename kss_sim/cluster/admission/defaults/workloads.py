"""Defaulting and create-time preparation of the workload kinds (apps/v1, batch/v1) and Leases, as kube-apiserver's
SetDefaults_* and REST strategies' PrepareForCreate do it.

Defaulters run on every create and update body (decoding); ``prepare_workload_create`` runs once on create: the
status the client sent is dropped for the kind's empty status, and a Job gets its uid early so its generated
selector and template labels can name it (the Job strategy's generateSelector).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kss_sim.cluster.admission import uids
from kss_sim.cluster.admission.defaults.core import default_persistent_volume_claim, default_pod_spec
from kss_sim.kube.objects import Obj

# Labels the Job strategy puts on a Job's pod template (the legacy names first, as generateSelector adds them).
LEGACY_JOB_NAME_LABEL = "job-name"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"

# What an empty status renders as: the fields whose JSON tag has no omitempty are always there.
_EMPTY_STATUS: dict[str, Obj] = {
    "Deployment": {},
    "ReplicaSet": {"replicas": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "DaemonSet": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0},
    "Job": {},
    "CronJob": {},
}
WORKLOAD_KINDS = frozenset(_EMPTY_STATUS)


def _dict(parent: Obj, key: str) -> Obj:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _default(parent: Obj, key: str, value: Any) -> None:
    """Set ``key`` unless it has a value (a JSON ``null`` is no value, as a nil pointer)."""
    if parent.get(key) is None:
        parent[key] = value


def _template(spec: Obj) -> None:
    """A PodTemplateSpec: metadata and spec always rendered, the spec defaulted as a pod's (SetDefaults_PodSpec)."""
    template = _dict(spec, "template")
    _dict(template, "metadata")
    default_pod_spec(_dict(template, "spec"))


def _status_shape(kind: str, obj: Obj) -> None:
    status = obj.get("status")
    if isinstance(status, dict):
        for key, value in _EMPTY_STATUS[kind].items():
            status.setdefault(key, value)


def default_deployment(obj: Obj) -> None:
    """SetDefaults_Deployment: one replica, RollingUpdate 25%/25%, 10 revisions kept, a 600s progress deadline."""
    spec = _dict(obj, "spec")
    _default(spec, "replicas", 1)
    strategy = _dict(spec, "strategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _default(rolling, "maxUnavailable", "25%")
        _default(rolling, "maxSurge", "25%")
    _default(spec, "revisionHistoryLimit", 10)
    _default(spec, "progressDeadlineSeconds", 600)
    _template(spec)
    _status_shape("Deployment", obj)


def default_replica_set(obj: Obj) -> None:
    """SetDefaults_ReplicaSet: one replica."""
    spec = _dict(obj, "spec")
    _default(spec, "replicas", 1)
    _template(spec)
    _status_shape("ReplicaSet", obj)


def default_stateful_set(obj: Obj) -> None:
    """SetDefaults_StatefulSet: OrderedReady, RollingUpdate from partition 0, claims retained, one replica, 10
    revisions kept; each volumeClaimTemplate is a PersistentVolumeClaim with a claim's defaults."""
    spec = _dict(obj, "spec")
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = _dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        _dict(strategy, "rollingUpdate")
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
        _default(rolling, "partition", 0)
    retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    for field in ("whenDeleted", "whenScaled"):
        if not retention.get(field):
            retention[field] = "Retain"
    _default(spec, "replicas", 1)
    _default(spec, "revisionHistoryLimit", 10)
    _template(spec)
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            claim.setdefault("apiVersion", "v1")
            claim.setdefault("kind", "PersistentVolumeClaim")
            _dict(claim, "metadata")
            default_persistent_volume_claim(claim)
    _status_shape("StatefulSet", obj)


def default_daemon_set(obj: Obj) -> None:
    """SetDefaults_DaemonSet: RollingUpdate with maxUnavailable 1 and maxSurge 0, 10 revisions kept."""
    spec = _dict(obj, "spec")
    strategy = _dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _default(rolling, "maxUnavailable", 1)
        _default(rolling, "maxSurge", 0)
    _default(spec, "revisionHistoryLimit", 10)
    _template(spec)
    _status_shape("DaemonSet", obj)


def _default_job_spec(spec: Obj) -> None:
    """SetDefaults_Job's spec part (v1.35, JobPodReplacementPolicy on)."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    _default(spec, "parallelism", 1)
    _default(spec, "backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6)
    _default(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in policy.get("rules") or []:
            for pattern in (rule.get("onPodConditions") or []) if isinstance(rule, dict) else []:
                if isinstance(pattern, dict) and not pattern.get("status"):
                    pattern["status"] = "True"
    _default(spec, "podReplacementPolicy", "Failed" if policy is not None else "TerminatingOrFailed")
    _default(spec, "manualSelector", False)
    _template(spec)


def default_job(obj: Obj) -> None:
    """SetDefaults_Job: one completion at a time, 6 retries, NonIndexed, not suspended, TerminatingOrFailed
    replacement, no manual selector; a Job without labels takes its template's."""
    spec = _dict(obj, "spec")
    template = spec.get("template")
    template_meta = template.get("metadata") if isinstance(template, dict) else None
    template_labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
    meta = _dict(obj, "metadata")
    if template_labels is not None and not meta.get("labels"):
        meta["labels"] = dict(template_labels)
    _default_job_spec(spec)
    _status_shape("Job", obj)


def default_cron_job(obj: Obj) -> None:
    """SetDefaults_CronJob (Allow, not suspended, 3 successful and 1 failed Job kept) and the job template's
    Job defaults."""
    spec = _dict(obj, "spec")
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    _default(spec, "suspend", False)
    _default(spec, "successfulJobsHistoryLimit", 3)
    _default(spec, "failedJobsHistoryLimit", 1)
    spec.setdefault("schedule", "")
    job_template = _dict(spec, "jobTemplate")
    _dict(job_template, "metadata")
    _default_job_spec(_dict(job_template, "spec"))
    _status_shape("CronJob", obj)


def default_lease(obj: Obj) -> None:
    """A Lease's spec is a struct: always rendered."""
    _dict(obj, "spec")


DEFAULTERS: dict[str, Callable[[Obj], None]] = {
    "Deployment": default_deployment,
    "ReplicaSet": default_replica_set,
    "StatefulSet": default_stateful_set,
    "DaemonSet": default_daemon_set,
    "Job": default_job,
    "CronJob": default_cron_job,
    "Lease": default_lease,
}


def generate_job_selector(job: Obj) -> None:
    """The Job strategy's generateSelector: the template is labelled with the Job's name and uid (legacy and
    ``batch.kubernetes.io/`` keys, a label already there is kept for validation to judge) and the selector matches
    ``batch.kubernetes.io/controller-uid``."""
    meta = job["metadata"]
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    spec = _dict(job, "spec")
    labels = _dict(_dict(_dict(spec, "template"), "metadata"), "labels")
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, name)
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, uid)
    match_labels = _dict(_dict(spec, "selector"), "matchLabels")
    match_labels.setdefault(CONTROLLER_UID_LABEL, uid)


def prepare_workload_create(kind: str, obj: Obj) -> None:
    """PrepareForCreate of the workload kinds: the status starts empty; a Job without ``manualSelector`` gets its
    uid now and the selector and template labels generated from it."""
    obj["status"] = dict(_EMPTY_STATUS[kind])
    if kind == "Job" and not (obj.get("spec") or {}).get("manualSelector"):
        obj["metadata"]["uid"] = uids.new_uid()
        generate_job_selector(obj)
    if kind == "Job" and not obj["metadata"].get("labels"):
        # kube-apiserver defaults every read from storage, so SetDefaults_Job copies the labels generated just now
        # onto the Job itself: what a client reads back, from the create's answer on.
        labels = ((obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels")
        if labels:
            obj["metadata"]["labels"] = dict(labels)
