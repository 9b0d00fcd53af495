"""The scheduling loop's writer in ``kss serve``: what the loop and its plugins write, through the cluster store.

``ClusterStoreLike`` is the part of the cluster's ``ClusterStore`` the host uses. ``StoreActions`` writes an
attempt's outcome (the binding with the result annotations, or PodScheduled=False with the nomination; the Scheduled
and FailedScheduling Events) and what plugins ask of the cluster outside the cycle (``PodActions``): the binding the
Bind plugin chose (noted, written with the outcome), victim deletions, VolumeBinding's PreBind writes and
DynamicResources' claim writes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Protocol

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict, Invalid, NotFound
from kss_sim.cluster.storage.pod_writes import SCHEDULER_MANAGER
from kss_sim.engine_host import volumes
from kss_sim.kube.pod_conditions import with_disruption_target
from kss_sim.results import annotations as result_annotations
from kss_sim.scheduler.dra.dra_manager import ClaimConflict
from kss_sim.scheduler.framework import Code, Status
from kss_sim.scheduler.loop import LoopWriter, failure_nomination
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.gang_scheduling import POD_GROUP_V1ALPHA2
from kss_sim.scheduler.podgroup_cycle import pod_group_conditions_after
from kss_sim.scheduler.record import Attempt

log = logging.getLogger("kss.scheduler")

PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"  # v1.PodReasonPreemptionByScheduler
CLIENT_DELETE = DeleteOptions(graceful=True)  # kube-scheduler's DeleteOptions{}: the victim's own grace period


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Pending(Protocol):
    """Writes staged inside ``ClusterStoreLike.deferred()`` (kss_sim.cluster.storage.store.PendingWrites)."""

    def done(self) -> bool: ...

    def wait(self) -> None: ...


class ClusterStoreLike(Protocol):
    """What the scheduler needs from the cluster store (kss_sim.cluster.storage.store.ClusterStore)."""

    def list(self, kind: str, namespace: str | None = None) -> Any: ...

    def select(self, kind: str, namespace: str | None = None) -> Any: ...  # stored entries (``.obj``: read-only)

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None: ...

    def read(self, kind: str, namespace: str | None, name: str) -> Any: ...  # the stored entry (``.obj``), or NotFound

    def bind_pod(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: dict[str, str] | None = None,
        copy: bool = True,
    ) -> dict[str, Any]: ...

    def take_binder(self, uid: str) -> str | None: ...  # the field manager of the Binding that bound a pod

    def delete(self, kind: str, namespace: str | None, name: str, *, options: DeleteOptions | None = None) -> Any: ...

    def add_listener(
        self,
        callback: Callable[[str, str, dict[str, Any]], None],
        kinds: Iterable[str] | None = None,
        *,
        copy: bool = True,
    ) -> None: ...

    def remove_listener(self, callback: Callable[[str, str, dict[str, Any]], None]) -> None: ...

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "merge",
        *,
        subresource: str | None = None,
        manager: str = ...,
    ) -> Any: ...

    def update_pod_status(
        self, namespace: str, name: str, status: dict[str, Any], *, annotations: dict[str, str] | None = None
    ) -> Any: ...

    def deferred(self) -> contextlib.AbstractContextManager[Pending]: ...

    def create_event(
        self, involved: dict[str, Any], reason: str, message: str, *, type: str = "Normal",
        component: str = "default-scheduler", action: str = "",
    ) -> Any: ...  # fmt: skip


class StoreActions(LoopWriter):
    """The scheduling loop's writer in ``kss serve``: an attempt's outcome and the plugins' pod actions, written
    through the cluster store as kube-scheduler writes them through kube-apiserver."""

    def __init__(
        self,
        store: ClusterStoreLike,
        *,
        write_annotations: bool = True,
        per_node_annotations: bool = True,
        per_node_annotations_max_nodes: int = 0,
    ) -> None:
        self.store = store
        self.write_annotations = write_annotations
        self.per_node_annotations = per_node_annotations
        self.per_node_annotations_max_nodes = per_node_annotations_max_nodes
        # pod uid -> (namespace, name, node) the Bind plugin chose: written when the attempt is concluded (the
        # binding and the result annotations in one change), or after the pod's wait in Permit ends.
        self.bindings: dict[str, tuple[str, str, str]] = {}

    # --- the attempt's outcome (LoopWriter) -----------------------------------------------------
    def write_binding(self, pod: PodInfo, att: Attempt, current: dict[str, Any]) -> str | None:
        """Write the binding the Bind plugin chose, with the result annotations; the store's refusal (the pod was
        deleted or bound meanwhile), or None."""
        binding = self.bindings.pop(pod.uid, None)
        if binding is None:
            return None
        namespace, name, node_name = binding
        values = self._annotations(att, current)
        try:
            try:
                self.store.bind_pod(namespace, name, node_name, annotations=values, copy=False)
            except Invalid:
                if values is None:
                    raise
                log.exception("annotating %s failed; binding without the result annotations", pod.key)
                self.store.bind_pod(namespace, name, node_name, copy=False)
        except Exception as exc:
            return str(exc)
        return None

    def scheduled(self, pod: PodInfo, att: Attempt) -> None:
        self.record_event(
            pod.pod, "Scheduled", f"Successfully assigned {pod.key} to {att.bound_to}", event_type="Normal"
        )

    def unschedulable(self, pod: PodInfo, att: Attempt) -> None:
        """PodScheduled=False with kube-scheduler's message, the nomination, the result annotations, and a
        FailedScheduling event."""
        self.bindings.pop(pod.uid, None)
        reason = "Unschedulable" if att.result == "unschedulable" else "SchedulerError"
        current = self.store.get("Pod", pod.namespace, pod.name)
        if current is None or (current.get("spec") or {}).get("nodeName"):
            return
        status: dict[str, Any] = dict(current.get("status") or {})
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": att.message,
            "lastProbeTime": None,
            "lastTransitionTime": _now_rfc3339(),
        }
        others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [*others, condition]
        nomination = failure_nomination(att)
        if nomination:
            status["nominatedNodeName"] = nomination
        elif nomination == "":  # clearNominatedNode, or preemption found no candidate
            status.pop("nominatedNodeName", None)
        values = self._annotations(att, current)
        try:
            try:
                self.store.update_pod_status(pod.namespace, pod.name, status, annotations=values)
            except Invalid:
                if values is None:
                    raise
                log.exception("annotating %s failed; updating its status without the result annotations", pod.key)
                self.store.update_pod_status(pod.namespace, pod.name, status)
        except Exception:
            log.exception("updating status of %s failed", pod.key)
        self.record_event(pod.pod, "FailedScheduling", att.message, event_type="Warning")

    def pod_after_wait(self, pod: PodInfo) -> dict[str, Any] | None:
        return self.store.get("Pod", pod.namespace, pod.name)

    def forget_waiting(self, pod: PodInfo, att: Attempt) -> None:
        self.bindings.pop(pod.uid, None)

    def pod_group_condition(self, namespace: str, name: str, condition: dict[str, str]) -> None:
        """``updatePodGroupCondition``: the condition on the PodGroup's status (its observedGeneration the group's),
        patched through the status subresource when it changes anything; a group once scheduled is not turned back
        to False by a later cycle for more pods."""
        group = self.store.get(POD_GROUP_V1ALPHA2, namespace, name)
        if group is None:
            return
        updated = pod_group_conditions_after(group, condition, _now_rfc3339)
        if updated is None:
            return
        try:
            self.store.patch(
                POD_GROUP_V1ALPHA2,
                namespace,
                name,
                {"status": {"conditions": updated}},
                "merge",
                subresource="status",
                manager=SCHEDULER_MANAGER,
            )
        except Exception:
            log.exception("updating the status of PodGroup %s/%s failed", namespace, name)

    def malformed_object(self, kind: str, namespace: str, name: str, problem: str) -> None:
        if (obj := self.store.get(kind, namespace, name)) is not None:
            self.record_event(obj, "MalformedObject", problem, event_type="Warning")

    def record_event(self, obj: dict[str, Any], reason: str, message: str, *, event_type: str) -> None:
        involved = obj if obj.get("kind") else {**obj, "kind": "Pod", "apiVersion": "v1"}
        try:
            self.store.create_event(involved, reason, message, type=event_type, component="default-scheduler",
                                    action="Scheduling" if reason != "Preempted" else "Preempting")  # fmt: skip
        except Exception:
            log.exception("recording event %s failed", reason)

    def _annotations(self, att: Attempt, current: dict[str, Any]) -> dict[str, str] | None:
        """The result annotations of ``att`` for the pod as it was read (``current``), or None when off."""
        if not self.write_annotations:
            return None
        existing = (current.get("metadata") or {}).get("annotations") or {}
        per_node = self.per_node_annotations and (
            self.per_node_annotations_max_nodes <= 0 or att.num_nodes <= self.per_node_annotations_max_nodes
        )
        return result_annotations.with_history(result_annotations.attempt_annotations(att, per_node=per_node), existing)

    # --- PodActions (the plugins' side) ---------------------------------------------------------
    def bind(self, pod: PodInfo, node_name: str) -> Status:
        # The binding is written when the attempt is concluded (write_binding), with the result annotations, in one
        # change; a refusal then is handled as a failed binding cycle.
        self.bindings[pod.uid] = (pod.namespace, pod.name, node_name)
        return Status()

    def clear_nominated_node(self, pod: PodInfo) -> None:
        """``ClearNominatedNodeName``: the pending pod's status without its nomination (its update comes back as the
        store's event, which requeues the pods its nomination kept out)."""
        try:
            current = self.store.get("Pod", pod.namespace, pod.name)
            if current is None or (current.get("spec") or {}).get("nodeName"):
                return
            status = dict(current.get("status") or {})
            if status.pop("nominatedNodeName", None) is not None:
                self.store.update_pod_status(pod.namespace, pod.name, status)
        except Exception:
            log.exception("clearing the nomination of %s failed", pod.key)

    def nominate_for_binding(self, pod: PodInfo, node_name: str) -> None:
        """``updatePod`` with ``ModeOverride``: a merge patch of the pending pod's status naming its node (none when
        it names it already); ClearingNominatedNodeNameAfterBinding takes it off with the binding."""
        try:
            current = self.store.get("Pod", pod.namespace, pod.name)
            if current is None or (current.get("spec") or {}).get("nodeName"):
                return
            if (current.get("status") or {}).get("nominatedNodeName") == node_name:
                return
            patch = {"status": {"nominatedNodeName": node_name}}
            self.store.patch("Pod", pod.namespace, pod.name, patch, "merge", subresource="status",
                             manager=SCHEDULER_MANAGER)  # fmt: skip
        except Exception:
            log.exception("nominating %s to %s failed", pod.key, node_name)

    def delete_victim(
        self, victim: PodInfo, preemptor: PodInfo, preempting_group: dict[str, Any] | None = None
    ) -> Status:
        """``PreemptPod``: the DisruptionTarget condition (PreemptionByScheduler) on the victim, then a delete with
        DeleteOptions, so the victim ends gracefully and holds its node until its kubelet finishes it. A PodGroup
        preempting as one is named as upstream's pod group preemptor names itself (its uid, "cluster" for the
        node)."""
        kind, uid, where = "pod", preemptor.uid, victim.node_name
        if preempting_group is not None:
            kind, uid, where = "podgroup", str((preempting_group.get("metadata") or {}).get("uid") or ""), "cluster"
        try:
            current = self.store.get("Pod", victim.namespace, victim.name)
            if current is not None:
                status = dict(current.get("status") or {})
                conditions = list(status.get("conditions") or [])
                scheduler = (preemptor.pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
                message = f"{scheduler}: preempting to accommodate a higher priority {kind}"
                updated = with_disruption_target(conditions, PREEMPTION_BY_SCHEDULER, message, _now_rfc3339())
                if updated != conditions:
                    self.store.update_pod_status(victim.namespace, victim.name, {**status, "conditions": updated})
            self.store.delete("Pod", victim.namespace, victim.name, options=CLIENT_DELETE)
        except Exception as exc:
            return Status(Code.ERROR, f"deleting victim {victim.key}: {exc}")
        self.record_event(
            victim.pod,
            "Preempted",
            f"Preempted by {kind} {uid} on node {where}",
            event_type="Normal",
        )
        return Status()

    def bind_volumes(
        self,
        pod: PodInfo,
        node_name: str,
        static: list[tuple[dict[str, Any], dict[str, Any]]],
        dynamic: list[dict[str, Any]],
    ) -> Status:
        """VolumeBinding's PreBind: bind the chosen PVs, provision the rest, as the cluster's controllers would."""
        store: Any = self.store
        try:
            volumes.bind_pod_volumes(store, pod.namespace, node_name, static, dynamic)
        except Exception as exc:  # a claim or volume changed meanwhile: the binding cycle fails and retries
            return Status(Code.ERROR, f"binding volumes: {exc}")
        return Status()

    def update_resource_claim(self, claim: dict[str, Any], *, status: bool) -> dict[str, Any]:
        """DynamicResources' claim writes (PreBind's allocation and reservedFor, Unreserve, PostFilter's
        deallocation) through the store, as kube-scheduler's client makes them; a stale resourceVersion is a
        ClaimConflict the plugin retries."""
        store: Any = self.store
        try:
            written: dict[str, Any] = store.update(
                "ResourceClaim", claim, subresource="status" if status else None, manager=SCHEDULER_MANAGER
            )
        except Conflict as exc:
            raise ClaimConflict(str(exc)) from exc
        return written

    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.store.get("ResourceClaim", namespace, name)

    def create_resource_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """DynamicResources' claim for a pod's extended resources (DRAExtendedResource), named by the store from its
        ``generateName``."""
        store: Any = self.store
        created: dict[str, Any] = store.create("ResourceClaim", claim, manager=SCHEDULER_MANAGER)
        return created

    def delete_resource_claim(self, namespace: str, name: str) -> bool:
        store: Any = self.store
        with contextlib.suppress(NotFound):
            store.delete("ResourceClaim", namespace, name)
        return True

    def update_extended_resource_claim_status(self, pod: PodInfo, value: dict[str, Any]) -> None:
        current = self.store.get("Pod", pod.namespace, pod.name)
        if current is None:
            raise LookupError(f"pod {pod.key} not found")
        status = {**(current.get("status") or {}), "extendedResourceClaimStatus": value}
        self.store.update_pod_status(pod.namespace, pod.name, status)
