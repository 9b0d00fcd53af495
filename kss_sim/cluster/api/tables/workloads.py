"""Table columns of the workload kinds, ControllerRevisions and Leases, as kube-apiserver's printers
(pkg/printers/internalversion) render them for ``kubectl get`` (``-o wide`` shows the priority-1 columns). Registered
into ``tables``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from kss_sim.cluster.api.scale import selector_string
from kss_sim.cluster.api.tables import core as tables
from kss_sim.cluster.api.tables.core import NONE, Column, _age, _name, _since
from kss_sim.kube.objects import Obj
from kss_sim.kube.times import parse_time

_NAME: Column = ("Name", "string", 0, "Name must be unique within a namespace.")
_AGE: Column = ("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object "
                "was created.")  # fmt: skip
_CONTAINERS: Column = ("Containers", "string", 1, "Names of each container in the template.")
_IMAGES: Column = ("Images", "string", 1, "Images referenced by each container in the template.")
_SELECTOR: Column = ("Selector", "string", 1, "A label query over pods that should match the replica count.")


def _section(obj: Any, *path: str) -> Obj:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else {}


def _count(obj: Obj, *path: str) -> int:
    *parents, key = path
    value = _section(obj, *parents).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _containers(template: Obj) -> list[str]:
    """``layoutContainerCells``: the template's container names and images, comma-joined."""
    containers = [c for c in _section(template, "spec").get("containers") or [] if isinstance(c, dict)]
    return [",".join(str(c.get("name", "")) for c in containers), ",".join(str(c.get("image", "")) for c in containers)]


def format_label_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: the selector string, ``<none>`` when it selects by nothing."""
    return selector_string(selector) or NONE


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``k=v`` sorted by key, ``<none>`` when empty."""
    if not isinstance(labels, dict) or not labels:
        return NONE
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _controller_revision_row(revision: Obj, now: datetime) -> list[Any]:
    """``printControllerRevision``: the controller as ``<kind>.<group>/<name>`` in lower case (``formatResourceName``
    of its GroupKind)."""
    controller = NONE
    for ref in _section(revision, "metadata").get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            kind = f"{ref.get('kind')}.{group}" if group else str(ref.get("kind"))
            controller = f"{kind.lower()}/{ref.get('name')}"
            break
    number = revision.get("revision")
    return [_name(revision), controller, number if isinstance(number, int) else 0, _age(revision, now)]


def _wide(template: Obj, selector: Any) -> list[Any]:
    return [*_containers(template), format_label_selector(selector)]


def _deployment_row(d: Obj, now: datetime) -> list[Any]:
    spec = _section(d, "spec")
    ready = f"{_count(d, 'status', 'readyReplicas')}/{_count(d, 'spec', 'replicas')}"
    return [
        _name(d),
        ready,
        _count(d, "status", "updatedReplicas"),
        _count(d, "status", "availableReplicas"),
        _age(d, now),
        *_wide(_section(spec, "template"), spec.get("selector")),
    ]


def _replica_set_row(rs: Obj, now: datetime) -> list[Any]:
    spec = _section(rs, "spec")
    return [
        _name(rs),
        _count(rs, "spec", "replicas"),
        _count(rs, "status", "replicas"),
        _count(rs, "status", "readyReplicas"),
        _age(rs, now),
        *_wide(_section(spec, "template"), spec.get("selector")),
    ]


def _stateful_set_row(sts: Obj, now: datetime) -> list[Any]:
    ready = f"{_count(sts, 'status', 'readyReplicas')}/{_count(sts, 'spec', 'replicas')}"
    return [_name(sts), ready, _age(sts, now), *_containers(_section(sts, "spec", "template"))]


def _daemon_set_row(ds: Obj, now: datetime) -> list[Any]:
    spec = _section(ds, "spec")
    template = _section(spec, "template")
    return [
        _name(ds),
        _count(ds, "status", "desiredNumberScheduled"),
        _count(ds, "status", "currentNumberScheduled"),
        _count(ds, "status", "numberReady"),
        _count(ds, "status", "updatedNumberScheduled"),
        _count(ds, "status", "numberAvailable"),
        format_labels(_section(template, "spec").get("nodeSelector")),
        _age(ds, now),
        *_wide(template, spec.get("selector")),
    ]


def _has_condition(job: Obj, kind: str) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
        for c in _section(job, "status").get("conditions") or []
    )


def _job_status(job: Obj) -> str:
    """printJob's STATUS: Complete, Failed, Terminating, Suspended, FailureTarget or Running."""
    if _has_condition(job, "Complete"):
        return "Complete"
    if _has_condition(job, "Failed"):
        return "Failed"
    if _section(job, "metadata").get("deletionTimestamp"):
        return "Terminating"
    if _has_condition(job, "Suspended"):
        return "Suspended"
    if _has_condition(job, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def _job_row(job: Obj, now: datetime) -> list[Any]:
    spec, status = _section(job, "spec"), _section(job, "status")
    succeeded = _count(job, "status", "succeeded")
    completions = spec.get("completions")
    if isinstance(completions, int):
        done = f"{succeeded}/{completions}"
    else:
        parallelism = _count(job, "spec", "parallelism")
        done = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = ""
    if start is not None:
        duration = tables.human_duration(((end or now) - start).total_seconds())
    return [
        _name(job),
        _job_status(job),
        done,
        duration,
        _age(job, now),
        *_wide(_section(spec, "template"), spec.get("selector")),
    ]


def _cron_job_row(cj: Obj, now: datetime) -> list[Any]:
    spec, status = _section(cj, "spec"), _section(cj, "status")
    last = status.get("lastScheduleTime")
    suspend = spec.get("suspend")
    job_spec = _section(spec, "jobTemplate", "spec")
    return [
        _name(cj),
        str(spec.get("schedule") or ""),
        str(spec["timeZone"]) if spec.get("timeZone") is not None else NONE,
        ("True" if suspend else "False") if isinstance(suspend, bool) else "<unset>",
        len(status.get("active") or []),
        _since(last, now) if last else NONE,
        _age(cj, now),
        *_wide(_section(job_spec, "template"), job_spec.get("selector")),
    ]


def _lease_row(lease: Obj, now: datetime) -> list[Any]:
    holder = _section(lease, "spec").get("holderIdentity")
    return [_name(lease), str(holder) if holder is not None else "<unknown>", _age(lease, now)]


COLUMNS: dict[str, tuple[list[Column], Callable[[Obj, datetime], list[Any]]]] = {
    "Deployment": (
        [
            _NAME,
            ("Ready", "string", 0, "Number of the pod with ready state"),
            ("Up-to-date", "string", 0, "Total number of non-terminating pods targeted by this deployment that have "
             "the desired template spec."),
            ("Available", "string", 0, "Total number of available non-terminating pods (ready for at least "
             "minReadySeconds) targeted by this deployment."),
            _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
        ],
        _deployment_row,
    ),
    "ReplicaSet": (
        [
            _NAME,
            ("Desired", "integer", 0, "Replicas is the number of desired pods."),
            ("Current", "integer", 0, "Replicas is the most recently observed number of non-terminating pods."),
            ("Ready", "integer", 0, "The number of non-terminating pods targeted by this ReplicaSet with a Ready "
             "Condition."),
            _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
        ],
        _replica_set_row,
    ),
    "StatefulSet": (
        [_NAME, ("Ready", "string", 0, "Number of the pod with ready state"), _AGE, _CONTAINERS, _IMAGES],
        _stateful_set_row,
    ),
    "DaemonSet": (
        [
            _NAME,
            ("Desired", "integer", 0, "The total number of nodes that should be running the daemon pod."),
            ("Current", "integer", 0, "The number of nodes that are running at least 1 daemon pod and are supposed "
             "to run the daemon pod."),
            ("Ready", "integer", 0, "The number of nodes that should be running the daemon pod and have one or more "
             "of the daemon pod running with a Ready Condition."),
            ("Up-to-date", "integer", 0, "The total number of nodes that are running updated daemon pod"),
            ("Available", "integer", 0, "The number of nodes that should be running the daemon pod and have one or "
             "more of the daemon pod running and available (ready for at least spec.minReadySeconds)"),
            ("Node Selector", "string", 0, "NodeSelector is a selector which must be true for the pod to fit on a "
             "node."),
            _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
        ],
        _daemon_set_row,
    ),
    "Job": (
        [
            _NAME,
            ("Status", "string", 0, "Status of the job."),
            ("Completions", "string", 0, "The number of pods which reached phase Succeeded."),
            ("Duration", "string", 0, "Time required to complete the job."),
            _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
        ],
        _job_row,
    ),
    "CronJob": (
        [
            _NAME,
            ("Schedule", "string", 0, "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
            ("Timezone", "string", 0, "The time zone name for the given schedule."),
            ("Suspend", "boolean", 0, "This flag tells the controller to suspend subsequent executions, it does not "
             "apply to already started executions.  Defaults to false."),
            ("Active", "integer", 0, "A list of pointers to currently running jobs."),
            ("Last Schedule", "string", 0, "Information when was the last time the job was successfully scheduled."),
            _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
        ],
        _cron_job_row,
    ),
    "ControllerRevision": (
        [_NAME, ("Controller", "string", 0, "Controller of the object"),
         ("Revision", "string", 0, "Revision indicates the revision of the state represented by Data."), _AGE],
        _controller_revision_row,
    ),
    "Lease": (
        [_NAME, ("Holder", "string", 0, "holderIdentity contains the identity of the holder of a current lease."),
         _AGE],
        _lease_row,
    ),
}  # fmt: skip

tables.register(COLUMNS)
