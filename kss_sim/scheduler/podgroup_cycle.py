"""v1.36's PodGroup scheduling cycle (upstream ``schedule_one_podgroup.go``): a group's queued pods tried together,
all or nothing.

With GenericWorkload on at Kubernetes v1.36, a popped pod that names a PodGroup (``spec.schedulingGroup``) brings the
group's other queued pods with it (the loop's ``pop_pod_group``), by priority, then by when each first entered
activeQ. :meth:`PodGroupCycle.schedule_pod_group` tries them in turn on the same snapshot: Filter and Score (PostFilter
for a pod that fits nowhere), then the pod is assumed on its node, reserved and put through Permit with its cycle
state marked as a pod group cycle, so the pods tried after it see it there and GangScheduling's Permit counts it. Once
every pod was tried, all are taken back (Unreserve, forgotten). The group is schedulable when some pod's Permit said
Success (for a gang: its quorum met); each pod that fitted is then assumed, reserved and permitted again and goes on
to binding as a pod-by-pod cycle's would, the others fail with their own reasons. Otherwise no pod is bound: a pod
that fitted fails with "pod group is unschedulable, <its Permit message>" and no rejecting plugin (backoffQ), the
others with their own FitError. The outcome is the PodGroup's ``PodGroupScheduled`` condition.

A pod that fits only by preemption is assumed on its nominated node, so the pods after it see it there; a group that
is feasible that way waits for the preemption ("pod group is waiting for preemption to complete").

Not ported: TopologyAware's placements (gate TopologyAwareWorkloadScheduling) and workload-aware preemption (gate
WorkloadAwarePreemption); with those gates a v1.36 kube-scheduler tries placements and preempts for the whole group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kss_sim.scheduler.framework import CycleState, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.runtime import Framework

if TYPE_CHECKING:
    from kss_sim.scheduler.cycle import ScheduleOptions

# errPodGroupUnschedulable: the error of every unschedulable group's status, first of its reasons.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"
# The PodGroup's condition and its reasons (scheduling.k8s.io/v1alpha2).
POD_GROUP_SCHEDULED = "PodGroupScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


def scheduling_group_name(pod: PodInfo) -> str:
    """The PodGroup a pod names in ``spec.schedulingGroup`` ("" for none)."""
    return str((pod.spec.get("schedulingGroup") or {}).get("podGroupName") or "")


@dataclass
class _Held:
    """A pod the group's try assumed and reserved: what taking it back, or binding it, needs."""

    fwk: Framework
    state: CycleState
    assumed: PodInfo
    node_name: str
    permit: Status


class PodGroupTrial:
    """The pods one group cycle holds assumed, in the order they were tried (``CycleState.pod_group_cycle``)."""

    def __init__(self) -> None:
        self.held: dict[str, _Held] = {}

    def hold(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        assumed: PodInfo,
        node_name: str,
        att: Attempt,
        st: Status,
    ) -> None:
        """Called by the binding side when the pod passed Reserve and its Permit said Success or Wait."""
        self.held[pod.uid] = _Held(fwk, state, assumed, node_name, st)


@dataclass
class PodGroupOutcome:
    """One group cycle: every pod's attempt (in the order tried) and the group's ``PodGroupScheduled`` condition
    (None when the cycle did not run: the pods disagree on their scheduler)."""

    attempts: list[Attempt]
    condition: dict[str, str] | None = None
    # Pods whose failure is the group's, not their own (errPodGroupUnschedulable): no plugin rejected them.
    rejected_by_group: set[str] = field(default_factory=set)


@dataclass
class _Try:
    pod: PodInfo
    att: Attempt
    held: _Held | None
    requires_preemption: bool = False


class PodGroupCycle:
    """The PodGroup side of ``cycle.Scheduler`` (a mixin, as ``BindingCycle``)."""

    frameworks: dict[str, Framework]

    if TYPE_CHECKING:

        def schedule_one(
            self,
            pod: PodInfo,
            attempt_no: int = 1,
            opts: ScheduleOptions | None = None,
            state: CycleState | None = None,
        ) -> Attempt: ...

        def framework_for(self, pod: PodInfo) -> Framework | None: ...

        def _assume_and_bind(
            self, fwk: Framework, state: CycleState, pod: PodInfo, node_name: str, att: Attempt, opts: ScheduleOptions
        ) -> None: ...

        def _forget(self, fwk: Framework, state: CycleState, assumed: PodInfo, node_name: str) -> None: ...

    def schedule_pod_group(
        self, members: Sequence[tuple[PodInfo, int]], opts: ScheduleOptions, namespace: str, name: str
    ) -> PodGroupOutcome:
        """``scheduleOnePodGroup`` for ``members`` (pod, attempt number), in the order to try them: each pod's
        attempt is final (scheduled, unschedulable, error) or ``waiting`` in Permit, as a pod-by-pod cycle's."""
        problem = self._framework_problem([pod for pod, _ in members])
        if problem is not None:
            return PodGroupOutcome([_error_attempt(pod, n, problem) for pod, n in members])
        trial = PodGroupTrial()
        tries: list[_Try] = []
        group_code, group_message, waiting_on_preemption = "Unschedulable", POD_GROUP_UNSCHEDULABLE, False
        requires_preemption = False
        for pod, attempt_no in members:
            state = CycleState()
            state.pod_group_cycle = trial
            att = self.schedule_one(pod, attempt_no, opts, state)
            held = trial.held.get(pod.uid)
            needs_preemption = False
            fwk = self.framework_for(pod)
            if held is None and att.result == "unschedulable" and att.nominated_node and fwk is not None:
                # Fits by preemption: assumed on its nominated node so the pods after it see it there.
                failure = att.message
                self._assume_and_bind(fwk, state, pod, att.nominated_node, att, opts)
                held = trial.held.get(pod.uid)
                needs_preemption = held is not None
                att.result, att.message = "unschedulable", failure
            tries.append(_Try(pod, att, held, needs_preemption))
            if held is None:
                if att.result == "unschedulable":
                    continue  # the group may still be schedulable without it
                group_code = "Error"
                group_message = f"failed to schedule other pod from a pod group: {att.message}"
                waiting_on_preemption = False
                break
            requires_preemption = requires_preemption or needs_preemption
            if held.permit.is_success():
                if requires_preemption:
                    group_message = f"{POD_GROUP_UNSCHEDULABLE}, {WAITING_ON_PREEMPTION}"
                    waiting_on_preemption = True
                else:
                    group_code, group_message = "Success", ""
        # Every pod tried is taken back (the trial's deferred reverts, last first).
        for t in reversed(tries):
            if t.held is not None:
                self._forget(t.held.fwk, t.held.state, t.held.assumed, t.held.node_name)
        outcome = PodGroupOutcome([])
        tried = {t.pod.uid for t in tries}
        untried = [_Try(pod, _error_attempt(pod, n, group_message), None) for pod, n in members if pod.uid not in tried]
        for t in [*tries, *untried]:
            self._submit(t, group_code, group_message, waiting_on_preemption, opts, outcome)
        outcome.condition = _condition(group_code, group_message)
        record = {
            "podGroup": f"{namespace}/{name}",
            "pods": [pod.key for pod, _ in members],
            "outcome": outcome.condition["reason"],
            "message": outcome.condition["message"],
        }
        for pod_info, att in zip([t.pod for t in [*tries, *untried]], outcome.attempts, strict=True):
            att.pod_group = {**record, "rejectedByGroup": pod_info.uid in outcome.rejected_by_group}
        return outcome

    def _framework_problem(self, pods: list[PodInfo]) -> str | None:
        """``frameworkForPodGroup``: every pod of the group names the same profile, and it exists."""
        first = ""
        for pod in pods:
            name = str(pod.spec.get("schedulerName") or "default-scheduler")
            if not first:
                first = name
            elif name != first:
                return (
                    "all pods in a single pod group should have the same .spec.schedulerName set, "
                    f"got: {_q(name)} and {_q(first)}"
                )
        if first not in self.frameworks:
            return f"profile not found for scheduler name {_q(first)}"
        return None

    def _submit(
        self,
        t: _Try,
        group_code: str,
        group_message: str,
        waiting_on_preemption: bool,
        opts: ScheduleOptions,
        outcome: PodGroupOutcome,
    ) -> None:
        """``submitPodGroupAlgorithmResult`` for one pod: to binding, or its failure."""
        att, held = t.att, t.held
        outcome.attempts.append(att)
        if group_code == "Error":
            if att.result != "error":
                att.result, att.message = "error", group_message
            return
        if held is not None and not t.requires_preemption:
            if group_code == "Success":
                held.state.pod_group_cycle = None
                self._assume_and_bind(held.fwk, held.state, t.pod, held.node_name, att, opts)
                return
            att.result = "unschedulable"
            outcome.rejected_by_group.add(t.pod.uid)
            if waiting_on_preemption:
                att.message = group_message
                att.nominated_node = held.node_name
            else:
                att.message = f"{POD_GROUP_UNSCHEDULABLE}, {held.permit.message()}"
            return
        if t.requires_preemption and held is not None and not waiting_on_preemption:
            # Its preemption no longer helps: the group's failure, its nomination cleared.
            att.message = f"{POD_GROUP_UNSCHEDULABLE}, {held.permit.message()}"
            att.nominated_node = None
            outcome.rejected_by_group.add(t.pod.uid)
        # Otherwise the pod's own failure (its FitError, its nomination) stands.


def _condition(code: str, message: str) -> dict[str, str]:
    if code == "Success":
        return {"type": POD_GROUP_SCHEDULED, "status": "True", "reason": REASON_SCHEDULED, "message": message}
    reason = REASON_SCHEDULER_ERROR if code == "Error" else REASON_UNSCHEDULABLE
    return {"type": POD_GROUP_SCHEDULED, "status": "False", "reason": reason, "message": message}


def _error_attempt(pod: PodInfo, attempt_no: int, message: str) -> Attempt:
    return Attempt(pod=pod.key, attempt=attempt_no, priority=pod.priority, profile="", result="error", message=message)


def _q(value: str) -> str:
    """Go's ``%q`` of a name."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def set_status_condition(
    conditions: list[dict[str, Any]], condition: dict[str, Any], now: Callable[[], str]
) -> list[dict[str, Any]] | None:
    """``apimeta.SetStatusCondition`` on a copy: the new list, or None when nothing changed (the transition time
    moves only when the status does)."""
    out = [dict(c) for c in conditions]
    for existing in out:
        if existing.get("type") != condition["type"]:
            continue
        changed = False
        if existing.get("status") != condition["status"]:
            existing["status"] = condition["status"]
            existing["lastTransitionTime"] = now()
            changed = True
        for key in ("reason", "message", "observedGeneration"):
            if existing.get(key) != condition.get(key):
                existing[key] = condition.get(key)
                changed = True
        return out if changed else None
    out.append({**condition, "lastTransitionTime": now()})
    return out
