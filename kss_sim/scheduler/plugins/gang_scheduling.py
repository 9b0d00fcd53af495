"""GangScheduling (KEP-4671, alpha in v1.35): all-or-nothing scheduling of a Workload's gang pod groups.

A pod whose ``spec.workloadRef`` names a pod group with a ``gang`` policy is held in PreEnqueue until its Workload
exists and ``minCount`` pods of the group are known, then waits in Permit (holding its reservation) until
``minCount`` pods of the group are assumed or bound; the pod that completes the quorum allows the waiting others.

v1.36 (scheduling.k8s.io/v1alpha2) keys the same rules by the pod's ``spec.schedulingGroup.podGroupName``: the
group is a standalone PodGroup object (``PodGroup.v1alpha2``) whose ``spec.schedulingPolicy.gang`` holds minCount,
its state is the scheduler cache's, a pod waits in Permit a fixed five minutes (no group deadline), and the words
change. v1.36's PodGroup scheduling cycle (``podgroup_cycle.py``) runs these rules for a group's queued pods
together (kss serve, kss replay, kss simulate).

kube-scheduler keeps each pod group's state in its WorkloadManager, fed by the pod event handlers. Here the pod
lister (``ClusterObjects.pods_of_workload``) gives the group's pods and which are bound, and :class:`PodGroups`, the
plugin's own part of that manager, keeps what the lister cannot know: the pods Reserve assumed and the group's
scheduling deadline. A new configuration builds a new plugin, so the assumed set also counts the pods this plugin
holds in Permit (the scheduler's waiting pods survive a configuration swap) and a group's deadline is taken back
from them.

Queueing hints: upstream requeues a rejected pod on Pod/Add and Workload/Add only when the added object matches its
workload reference; kss's queue has no per-event hints, so any pod or Workload added wakes the pods it rejected.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kss_sim.kube.objects import Obj
from kss_sim.scheduler.cluster_objects import scheduling_group_key, workload_key
from kss_sim.scheduler.framework import (
    QUEUE,
    QUEUE_SKIP,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    PermitPlugin,
    PreEnqueuePlugin,
    QueueingHint,
    ReservePlugin,
    Status,
    error,
    success,
    unresolvable,
)
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.waiting import WaitingPod

NAME = "GangScheduling"

# How long a gang's pods wait in Permit for the quorum (workloadmanager.DefaultSchedulingTimeoutDuration).
DEFAULT_SCHEDULING_TIMEOUT = 5 * 60.0

# v1.35: namespace, workload, pod group, replica key; v1.36: namespace, PodGroup name.
PodGroupKey = tuple[str, ...]
# v1.36's PodGroup kind, as the scheduler's informers name it (the cluster registry's name: kss_sim.cluster.kinds).
POD_GROUP_V1ALPHA2 = "PodGroup.v1alpha2"
# v1.36's permitTimeoutDuration: every Permit wait of a gang's pod, counted from its own Permit.
PERMIT_TIMEOUT_V1_36 = 5 * 60.0

GROUP_STATE_MISSING = "internal pod group state doesn't exist for a pod's workload"


def _q(value: str) -> str:
    """Go's ``%q`` of a name."""
    return json.dumps(value, ensure_ascii=False)


def _uid(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}")


@dataclass
class PodGroupInfo:
    """One pod group as the plugin sees it (``fwk.PodGroupInfo``): its pods split into unscheduled, assumed and
    assigned (bound)."""

    all_pods: dict[str, dict[str, Any]]
    assumed: set[str]
    assigned: set[str]
    unscheduled: list[dict[str, Any]] = field(default_factory=list)


def group_key(pod: dict[str, Any], minor: int) -> PodGroupKey | None:
    """The gang a pod belongs to as Kubernetes 1.``minor`` reads it: its ``spec.schedulingGroup`` from v1.36, its
    ``spec.workloadRef`` before; None for a pod of none."""
    return scheduling_group_key(pod) if minor >= 36 else workload_key(pod)


class PodGroups:
    """The plugin's part of kube-scheduler's WorkloadManager (v1.35) or cache (v1.36): assumed pods and the
    scheduling deadline per group."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.minor = handle.kube_version.minor
        self._assumed: dict[PodGroupKey, set[str]] = {}
        self._deadlines: dict[PodGroupKey, float] = {}

    def _pods(self, key: PodGroupKey) -> list[dict[str, Any]]:
        if self.minor >= 36:
            namespace, name = key
            return self.handle.cluster.pods_of_scheduling_group(namespace, name)
        namespace, workload, group, replica = key
        ref = {"name": workload, "podGroup": group, "podGroupReplicaKey": replica}
        return self.handle.cluster.pods_of_workload(namespace, ref)

    def info(self, key: PodGroupKey) -> PodGroupInfo | None:
        """``PodGroupInfo``: None when the scheduler knows no pod of the group (its state is then gone)."""
        pods = self._pods(key)
        if not pods:
            self._assumed.pop(key, None)
            self._deadlines.pop(key, None)
            return None
        all_pods = {_uid(p): p for p in pods}
        assigned = {uid for uid, p in all_pods.items() if (p.get("spec") or {}).get("nodeName")}
        tracked = self._assumed.get(key)
        if tracked is not None:
            tracked &= all_pods.keys() - assigned  # a pod bound or deleted is no longer assumed
            if not tracked:
                del self._assumed[key]
        assumed = (set(tracked or ()) | {wp.pod.uid for wp in self._waiting(key)}) & (all_pods.keys() - assigned)
        unscheduled = [p for uid, p in all_pods.items() if uid not in assumed and uid not in assigned]
        return PodGroupInfo(all_pods, assumed, assigned, unscheduled)

    def assume(self, key: PodGroupKey, uid: str) -> None:
        """``AssumePod``: the pod passed Reserve."""
        self._assumed.setdefault(key, set()).add(uid)

    def forget(self, key: PodGroupKey, uid: str) -> None:
        """``ForgetPod``: the pod was unreserved."""
        tracked = self._assumed.get(key)
        if tracked is not None:
            tracked.discard(uid)
            if not tracked:
                del self._assumed[key]

    def scheduling_timeout(self, key: PodGroupKey) -> float:
        """``SchedulingTimeout``: seconds left until the group's deadline, a new one (5 minutes from now, on the
        scheduler's clock) when it has none or the last one passed."""
        now = self.handle.now()
        deadline = self._deadlines.get(key)
        if deadline is None:
            # After a configuration swap: the deadline the group's waiting pods were given.
            held = [wp.deadlines[NAME] for wp in self._waiting(key) if NAME in wp.deadlines]
            deadline = max(held) if held else None
        if deadline is None or deadline < now:
            deadline = now + DEFAULT_SCHEDULING_TIMEOUT
        self._deadlines[key] = deadline
        return deadline - now

    def _waiting(self, key: PodGroupKey) -> list[WaitingPod]:
        """The group's pods this plugin holds in Permit (they passed its Reserve)."""
        return [
            wp for wp in self.handle.waiting_pods if NAME in wp.timeouts and group_key(wp.pod.pod, self.minor) == key
        ]


class GangScheduling(PreEnqueuePlugin, ReservePlugin, PermitPlugin):
    """``gangscheduling.GangScheduling``."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        self.pod_groups = PodGroups(handle)
        self.v1_36 = handle.kube_version.minor >= 36

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A pod added may complete a gang; a Workload (v1.35) or a PodGroup (v1.36) added may let a gang in (both
        # immutable where it matters).
        return [
            ClusterEventWithHint("Pod/Add", self.is_schedulable_after_pod_added),
            ClusterEventWithHint(
                "PodGroup/Add" if self.v1_36 else "Workload/Add", self.is_schedulable_after_group_added
            ),
        ]

    def _group_ref(self, pod: PodInfo) -> Any:
        """``spec.schedulingGroup``'s podGroupName (v1.36) or the whole ``spec.workloadRef`` (v1.35), or None."""
        if self.v1_36:
            return (pod.spec.get("schedulingGroup") or {}).get("podGroupName")
        return pod.spec.get("workloadRef") or None

    def is_schedulable_after_pod_added(self, pod: PodInfo, old: object, new: PodInfo | None) -> QueueingHint:
        """``MatchingSchedulingGroup`` (v1.36) / ``matchingWorkloadReference`` (v1.35): the added pod is of the same
        gang."""
        if new is None:
            return QUEUE
        ref = self._group_ref(pod)
        same = ref is not None and new.namespace == pod.namespace and self._group_ref(new) == ref
        return QUEUE if same else QUEUE_SKIP

    def is_schedulable_after_group_added(self, pod: PodInfo, old: object, new: Obj | None) -> QueueingHint:
        """The added PodGroup (v1.36) or Workload (v1.35) is the one the pod names."""
        if new is None:
            return QUEUE
        meta = new.get("metadata") or {}
        ref = self._group_ref(pod)
        name = ref if self.v1_36 else (ref or {}).get("name")
        if not name or (meta.get("namespace") or "default") != pod.namespace or meta.get("name") != name:
            return QUEUE_SKIP
        return QUEUE

    def _of_group(self, pod: PodInfo) -> bool:
        return bool(pod.spec.get("schedulingGroup" if self.v1_36 else "workloadRef"))

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if self.v1_36:
            return self._pre_enqueue_v1_36(pod)
        ref = pod.spec.get("workloadRef")
        if not ref:
            return success()
        name = str(ref.get("name") or "")
        workload = self.handle.cluster.get_object("Workload", pod.namespace, name)
        if workload is None:
            return unresolvable(f"waiting for pods's workload {_q(name)} to appear in scheduling queue")
        group = str(ref.get("podGroup") or "")
        found, gang = _gang_policy(workload, group)
        if not found:
            return unresolvable(f"pod group {_q(group)} doesn't exist for a workload {_q(name)}")
        if gang is None:
            return success()
        info = self.pod_groups.info(_key(pod, self.v1_36))
        if info is None:
            return error(GROUP_STATE_MISSING)
        if len(info.all_pods) < _min_count(gang):
            return unresolvable("waiting for minCount pods from a gang to appear in scheduling queue")
        return success()

    def _pre_enqueue_v1_36(self, pod: PodInfo) -> Status:
        name = str((pod.spec.get("schedulingGroup") or {}).get("podGroupName") or "")
        if not name:
            return success()
        group = self.handle.cluster.get_object(POD_GROUP_V1ALPHA2, pod.namespace, name)
        if group is None:
            return unresolvable(f"waiting for pods's pod group {_q(name)} to appear in scheduling queue")
        gang = _gang_of_pod_group(group)
        if gang is None:
            return success()
        info = self.pod_groups.info(_key(pod, self.v1_36))
        if info is None:
            return error(f"pod group state not found for pod group {pod.namespace}/{name}")
        if len(info.all_pods) < _min_count(gang):
            return unresolvable("waiting for minCount pods from a gang to appear in scheduling queue")
        return success()

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self._of_group(pod):
            return success()
        key = _key(pod, self.v1_36)
        if self.pod_groups.info(key) is None:
            return error(GROUP_STATE_MISSING)
        self.pod_groups.assume(key, pod.uid)
        return success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        if not self._of_group(pod):
            return
        self.pod_groups.forget(_key(pod, self.v1_36), pod.uid)

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if self.v1_36:
            return self._permit_v1_36(pod)
        ref = pod.spec.get("workloadRef")
        if not ref:
            return success(), 0
        name = str(ref.get("name") or "")
        workload = self.handle.cluster.get_object("Workload", pod.namespace, name)
        if workload is None:
            # The Workload went away: an error, so the pod is retried once it is back.
            not_found = f"workload.scheduling.k8s.io {_q(name)} not found"
            return error(f"failed to get workload {pod.namespace}/{name}: {not_found}"), 0
        group = str(ref.get("podGroup") or "")
        found, gang = _gang_policy(workload, group)
        if not found:
            return error(f"pod group {_q(group)} doesn't exist for a workload {_q(name)}"), 0
        if gang is None:
            return success(), 0
        key = _key(pod, self.v1_36)
        info = self.pod_groups.info(key)
        if info is None:
            return error(GROUP_STATE_MISSING), 0
        if len(info.assumed | info.assigned) < _min_count(gang):
            # Siblings that were waiting for this pod to be scheduled get another try now.
            self.handle.activate(PodInfo(p) for p in info.unscheduled)
            return (
                Status(Code.WAIT, "waiting for minCount pods from a gang to be waiting on permit"),
                self.pod_groups.scheduling_timeout(key),
            )
        for uid in sorted(info.assumed):
            waiting = self.handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return success(), 0

    def _permit_v1_36(self, pod: PodInfo) -> tuple[Status, float]:
        name = str((pod.spec.get("schedulingGroup") or {}).get("podGroupName") or "")
        if not name:
            return success(), 0
        group = self.handle.cluster.get_object(POD_GROUP_V1ALPHA2, pod.namespace, name)
        if group is None:
            not_found = f"podgroups.scheduling.k8s.io {_q(name)} not found"
            return error(f"failed to get podGroup {pod.namespace}/{name}: {not_found}"), 0
        gang = _gang_of_pod_group(group)
        if gang is None:
            return success(), 0
        info = self.pod_groups.info(_key(pod, self.v1_36))
        if info is None:
            return error(f"pod group state not found for pod group {pod.namespace}/{name}"), 0
        if len(info.assumed | info.assigned) < _min_count(gang):
            self.handle.activate(PodInfo(p) for p in info.unscheduled)
            return Status(Code.WAIT, "waiting for minCount pods from a gang to be scheduled"), PERMIT_TIMEOUT_V1_36
        for uid in sorted(info.assumed):
            waiting = self.handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return success(), 0


def _key(pod: PodInfo, v1_36: bool) -> PodGroupKey:
    key = group_key(pod.pod, 36 if v1_36 else 35)
    assert key is not None  # callers checked the pod's reference
    return key


def _gang_of_pod_group(group: dict[str, Any]) -> dict[str, Any] | None:
    """A v1alpha2 PodGroup's gang policy (None: basic)."""
    gang = ((group.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
    return gang if isinstance(gang, dict) else None


def _gang_policy(workload: dict[str, Any], group: str) -> tuple[bool, dict[str, Any] | None]:
    """``podGroupPolicy``: whether the Workload has the pod group, and its gang policy (None: not a gang)."""
    for pod_group in (workload.get("spec") or {}).get("podGroups") or []:
        if pod_group.get("name") == group:
            gang = (pod_group.get("policy") or {}).get("gang")
            return True, gang if isinstance(gang, dict) else None
    return False, None


def _min_count(gang: dict[str, Any]) -> int:
    return int(gang.get("minCount") or 0)
