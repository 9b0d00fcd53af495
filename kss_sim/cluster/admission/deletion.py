"""Deletion with finalizers and DeleteOptions, as kube-apiserver's generic registry does it (store.go's Delete,
``deletionFinalizersForGarbageCollection``, ``markAsDeleting``, ``shouldDeleteDuringUpdate``).

A DELETE first decides the object's garbage-collection finalizers from the options: ``propagationPolicy``
(``Orphan`` adds ``orphan``, ``Foreground`` adds ``foregroundDeletion``, ``Background`` neither), else the deprecated
``orphanDependents``, else a GC finalizer already on the object, else the kind's default (``Orphan`` for batch/v1
Jobs, kept for backward compatibility, ``Background`` for every other kind). An object left with any finalizer is
not removed: it gets ``deletionTimestamp`` (once), ``deletionGracePeriodSeconds: 0`` and a generation bump, and is
removed later when an update takes its last finalizer away. The garbage collector
(``kss_sim/controllers/garbage_collector.py``) does what the GC finalizers ask and then removes them.

Pods end gracefully (``rest.BeforeDelete`` with the pod strategy's ``CheckGracefulDelete``) when a client's
DeleteOptions came with the delete (the API's DELETE, an Eviction, the scheduler's preemption, the taint manager):
a bound, unfinished pod gets ``deletionTimestamp`` = now + its grace period (``gracePeriodSeconds``, else
``spec.terminationGracePeriodSeconds``; a negative one is 1 s) and ``deletionGracePeriodSeconds``, and stays until
its kubelet deletes it again with a grace period of 0 (``kss_sim/controllers/kubelet.py``); a later delete may only
shorten the period. An unbound or finished pod, or a grace period of 0, goes at once. An update that takes a
terminating pod's last finalizer away leaves it to its kubelet while its grace period runs. The store's own
deletes without options (a Namespace's contents; a Node's pods, except when a client deletes the Node: then they are
the pod GC's, force-deleted once the node has been missing 40 s) stay immediate, as a nil DeleteOptions is upstream;
the workload controllers (ReplicaSet, Job, StatefulSet, DaemonSet) delete with DeleteOptions, as
kube-controller-manager's pod control does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.cluster.errors import BadRequest, Cause, Invalid, forbidden, invalid, not_supported
from kss_sim.kube.times import parse_time

ORPHAN_FINALIZER = "orphan"  # metav1.FinalizerOrphanDependents
FOREGROUND_FINALIZER = "foregroundDeletion"  # metav1.FinalizerDeleteDependents
GC_FINALIZERS = (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)

BACKGROUND = "Background"
FOREGROUND = "Foreground"
ORPHAN = "Orphan"
POLICIES = (FOREGROUND, BACKGROUND, ORPHAN)  # the order of ValidateDeleteOptions' message

# pkg/registry/batch/job/storage: batch/v1 Jobs orphan their pods by default, and say so when a client did not choose.
JOB_DELETE_WARNING = (
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them "
    "or set propagationPolicy=Orphan to suppress this warning"
)


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    """What a DELETE asks about dependents (``propagationPolicy`` or the deprecated ``orphanDependents``) and, when
    ``graceful`` (a client's DeleteOptions, not the store's own deletes), about a pod's grace period."""

    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    grace_period_seconds: int | None = None
    graceful: bool = False

    @property
    def chosen(self) -> bool:
        """Whether the client said anything about dependents."""
        return self.propagation_policy is not None or self.orphan_dependents is not None


def parse_delete_options(
    body: Mapping[str, Any], query: Mapping[str, str], *, query_grace_period: int | None = None
) -> DeleteOptions:
    """The DeleteOptions of a request (body fields win over query parameters; ``query_grace_period``: the query's
    ``gracePeriodSeconds``, parsed by the API), validated as ``ValidateDeleteOptions``: a policy outside
    Foreground/Background/Orphan, or both fields set, is a 422; a ``gracePeriodSeconds`` that is not an integer is
    the decoder's 400."""
    grace: Any = body.get("gracePeriodSeconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
        raise BadRequest(
            'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: json: cannot unmarshal '
            f"{_json_type(grace)} into Go struct field DeleteOptions.gracePeriodSeconds of type int64"
        )
    if grace is None:
        grace = query_grace_period
    policy: Any = body.get("propagationPolicy")
    if policy is None and "propagationPolicy" in query:
        policy = query["propagationPolicy"]
    orphan: Any = body.get("orphanDependents")
    if orphan is None and "orphanDependents" in query:
        orphan = {"true": True, "false": False}.get(query["orphanDependents"].lower(), query["orphanDependents"])
    causes: list[Cause] = []
    if orphan is not None and not isinstance(orphan, bool):
        causes.append(invalid("orphanDependents", orphan, "must be a boolean"))
    if policy is not None and orphan is not None:
        causes.append(
            invalid("propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set")
        )
    if policy is not None and policy not in POLICIES:
        causes.append(not_supported("propagationPolicy", policy, list(POLICIES)))
    if causes:
        raise Invalid("DeleteOptions", "", causes, group="meta.k8s.io")
    return DeleteOptions(
        policy if isinstance(policy, str) else None,
        orphan if isinstance(orphan, bool) else None,
        grace_period_seconds=grace,
        graceful=True,
    )


def _json_type(value: Any) -> str:
    """The JSON type encoding/json names in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# What rest.BeforeDelete decides of a delete.
NOT_GRACEFUL = "not graceful"  # removed now (or, with finalizers, marked as deleting with a grace period of 0)
GRACEFUL = "graceful"  # deletionTimestamp and deletionGracePeriodSeconds set (or shortened): removed now only at 0 s
PENDING = "pending"  # a graceful deletion runs already and is not shortened: nothing changes


def before_delete(kind: str, obj: dict[str, Any], options: DeleteOptions | None, now: datetime) -> tuple[str, int]:
    """``rest.BeforeDelete`` for a delete of ``obj`` (changed in place when graceful) at ``now``: what it decides
    and the grace period (seconds) of a graceful one. Only pods with a client's DeleteOptions end gracefully."""
    meta = obj["metadata"]
    period = options.grace_period_seconds if options is not None else None
    if period is not None and period < 0:
        period = 1  # "Negative values will be treated as the value `1s` on the delete path."
    given = meta.get("deletionGracePeriodSeconds")
    if isinstance(given, int) and given < 0:
        given = meta["deletionGracePeriodSeconds"] = 1
    if kind != "Pod" or options is None or not options.graceful:
        return NOT_GRACEFUL, 0
    if meta.get("deletionTimestamp"):
        if not given:
            return NOT_GRACEFUL, 0  # marked with no grace period (or by finalizers): it may go now
        if period is None or period >= given:
            return PENDING, int(given)
        was = parse_time(meta["deletionTimestamp"])
        base = (was if was is not None else now) - timedelta(seconds=int(given))
        meta["deletionTimestamp"] = _rfc3339(base + timedelta(seconds=period))
        meta["deletionGracePeriodSeconds"] = period
        return GRACEFUL, period
    period = pod_grace_period(obj, period)
    meta["deletionTimestamp"] = _rfc3339(now + timedelta(seconds=period))
    meta["deletionGracePeriodSeconds"] = period
    if int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    return GRACEFUL, period


def pod_grace_period(pod: Mapping[str, Any], asked: int | None) -> int:
    """The pod strategy's ``CheckGracefulDelete``: the period asked, else the pod's
    ``terminationGracePeriodSeconds``; 0 for a pod not bound to a node or already finished; 1 for a negative one."""
    spec = pod.get("spec") or {}
    period = asked if asked is not None else spec.get("terminationGracePeriodSeconds")
    period = period if isinstance(period, int) and not isinstance(period, bool) else 0
    if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        period = 0
    return 1 if period < 0 else period


def _rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_policy(kind: str) -> str:
    """The kind's ``DefaultGarbageCollectionPolicy`` when served at the version kss serves."""
    return ORPHAN if kind == "Job" else BACKGROUND


def finalizers_on_delete(kind: str, finalizers: list[str], options: DeleteOptions) -> list[str]:
    """The object's finalizers after a DELETE with ``options`` (``deletionFinalizersForGarbageCollection``): the
    GC finalizers taken out, then ``orphan`` or ``foregroundDeletion`` put back as the options, the object's own GC
    finalizers or the kind's default decide. Unchanged (same set) returns ``finalizers`` as they are."""
    orphan = _should_orphan(kind, finalizers, options)
    foreground = _should_delete_in_foreground(finalizers, options)
    kept = [f for f in finalizers if f not in GC_FINALIZERS]
    if orphan:
        kept.append(ORPHAN_FINALIZER)
    if foreground:
        kept.append(FOREGROUND_FINALIZER)
    return list(finalizers) if set(kept) == set(finalizers) else kept


def _should_orphan(kind: str, finalizers: list[str], options: DeleteOptions) -> bool:
    if options.orphan_dependents is not None:
        return options.orphan_dependents
    if options.propagation_policy is not None:
        return options.propagation_policy == ORPHAN
    for finalizer in finalizers:
        if finalizer == ORPHAN_FINALIZER:
            return True
        if finalizer == FOREGROUND_FINALIZER:
            return False
    return default_policy(kind) == ORPHAN


def _should_delete_in_foreground(finalizers: list[str], options: DeleteOptions) -> bool:
    if options.orphan_dependents is not None:
        return False
    if options.propagation_policy is not None:
        return options.propagation_policy == FOREGROUND
    return FOREGROUND_FINALIZER in finalizers


def mark_deleting(obj: dict[str, Any], finalizers: list[str], now: str) -> None:
    """Set ``obj``'s finalizers and mark it as being deleted (``markAsDeleting``): the generation moves on the
    first mark, ``deletionTimestamp`` is kept once set, ``deletionGracePeriodSeconds`` becomes 0."""
    meta = obj["metadata"]
    meta["finalizers"] = list(finalizers)
    if not meta.get("deletionTimestamp"):
        if int(meta.get("generation") or 0) > 0:
            meta["generation"] = int(meta["generation"]) + 1
        meta["deletionTimestamp"] = now
    meta["deletionGracePeriodSeconds"] = 0


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """Whether the object carries a ``deletionTimestamp``."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def deletes_on_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether an update of an object being deleted takes its last finalizer away, so that it is removed
    instead (``shouldDeleteDuringUpdate``): only once no grace period runs, so a terminating pod whose last
    finalizer goes (a Job's tracking one) still waits for its kubelet."""
    old_meta = old.get("metadata") or {}
    return (
        bool(old_meta.get("deletionTimestamp"))
        and bool(old_meta.get("finalizers"))
        and not ((new.get("metadata") or {}).get("finalizers"))
        and not old_meta.get("deletionGracePeriodSeconds")
    )


def update_causes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Cause]:
    """``ValidateObjectMetaUpdate``'s rule for objects being deleted: no finalizer may be added."""
    if not is_deleting(old):
        return []
    before = set((old.get("metadata") or {}).get("finalizers") or [])
    added = [f for f in (new.get("metadata") or {}).get("finalizers") or [] if f not in before]
    if not added:
        return []
    shown = "[]string{" + ", ".join(f'"{f}"' for f in added) + "}"
    return [
        forbidden(
            "metadata.finalizers",
            f"no new finalizers can be added if the object is being deleted, found new finalizers {shown}",
        )
    ]


# What a second delete of a namespace still being emptied answers (the namespace registry's 409).
NAMESPACE_BEING_EMPTIED = (
    "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will "
    "automatically be purged by the system."
)


def namespace_held(namespace: Mapping[str, Any]) -> bool:
    """Whether a namespace still has ``spec.finalizers`` (``kubernetes``: the namespace controller's), so that a
    client's delete only marks it Terminating (the namespace registry's Delete)."""
    return bool((namespace.get("spec") or {}).get("finalizers"))


def mark_terminating(namespace: dict[str, Any], now: str) -> None:
    """A namespace's first delete: ``deletionTimestamp`` and ``status.phase: Terminating``."""
    namespace["metadata"].setdefault("deletionTimestamp", now)
    namespace["status"] = {**(namespace.get("status") or {}), "phase": "Terminating"}


def namespace_finalized(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether an update of a terminating namespace takes its last ``spec.finalizers`` away with no metadata
    finalizer left, so that it is removed instead (``ShouldDeleteNamespaceDuringUpdate``)."""
    return (
        is_deleting(old)
        and namespace_held(old)
        and not namespace_held(new)
        and not ((new.get("metadata") or {}).get("finalizers"))
    )
