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
others with their own FitError. The outcome is the PodGroup's ``PodGroupScheduled`` condition
(``PodGroupInitiallyScheduled`` from v1.37 on).

A pod that fits only by preemption is assumed on its nominated node, so the pods after it see it there; a group that
is feasible that way waits for the preemption ("pod group is waiting for preemption to complete").

With TopologyAwareWorkloadScheduling the group is tried on each placement the first PlacementGenerate plugin offers
(TopologyPlacementGenerator: one per topology domain), the snapshot narrowed to its nodes, and the best feasible one
is kept (PlacementScore plugins: PodGroupPodsCount); none feasible is "0/N placements are available, ...".

With WorkloadAwarePreemption an unschedulable group then preempts as one (``preemption_podgroup.py``); a group
that fits that way waits for the preemption.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Code,
    CycleState,
    Placement,
    PodGroupAssignments,
    Status,
)
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.preemption_podgroup import GATE as WORKLOAD_AWARE_PREEMPTION
from kss_sim.scheduler.preemption_podgroup import PodGroupPreemption, preempt_pod_group
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.runtime import SKIP_ALL_POST_FILTER_PLUGINS, Framework
from kss_sim.scheduler.snapshot import Snapshot

if TYPE_CHECKING:
    from kss_sim.scheduler.cycle import ScheduleOptions

# errPodGroupUnschedulable: the error of every unschedulable group's status, first of its reasons.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"
POD_GROUP_PREEMPTION_ERROR = "pod group preemption: "
# The PodGroup's condition and its reasons (scheduling.k8s.io/v1alpha2). v1.37 renamed the condition
# PodGroupInitiallyScheduled (kubernetes/kubernetes#139743): it says the group was once scheduled, never undone.
POD_GROUP_SCHEDULED = "PodGroupScheduled"
POD_GROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
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
    # Not tried: the group's status is the pod's.
    group_failure: bool = False


@dataclass
class _Result:
    """``podGroupAlgorithmResult``: each pod tried, the group's code (Success, Unschedulable, Error) and message."""

    tries: list[_Try]
    code: str
    message: str
    waiting_on_preemption: bool = False
    placement: str | None = None  # the placement it was found on (TopologyAwareWorkloadScheduling)


# The attempt result of a pod that takes the group's status.
_RESULT_OF = {"Unschedulable": "unschedulable", "Error": "error", "Success": "unschedulable"}


class PodGroupCycle:
    """The PodGroup side of ``cycle.Scheduler`` (a mixin, as ``BindingCycle``)."""

    frameworks: dict[str, Framework]
    snapshot: Snapshot
    rng: random.Random

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
        pods = [pod for pod, _ in members]
        problem = self._framework_problem(pods)
        fwk = self.framework_for(pods[0])
        if problem is not None or fwk is None:
            return PodGroupOutcome([_failed_attempt(pod, n, problem or "", "error") for pod, n in members])
        gates = fwk.handle.kube_version.effective_gates(fwk.handle.feature_gates)
        if gates.get("TopologyAwareWorkloadScheduling"):
            result = self._placement_algorithm(fwk, members, opts, namespace, name)
        else:
            result = self._default_algorithm(members, opts)
        preemption = None
        if gates.get(WORKLOAD_AWARE_PREEMPTION) and result.code == "Unschedulable":
            preemption = self._preempt_as_group(fwk, members, opts, namespace, name, result)
        outcome = PodGroupOutcome([])
        tried = {t.pod.uid for t in result.tries}
        untried = [
            _Try(pod, _failed_attempt(pod, n, result.message, _RESULT_OF[result.code]), None, group_failure=True)
            for pod, n in members
            if pod.uid not in tried
        ]
        for t in [*result.tries, *untried]:
            self._submit(t, result, opts, outcome)
        outcome.condition = _condition(result.code, result.message, fwk.handle.kube_version.minor)
        record: dict[str, Any] = {
            "podGroup": f"{namespace}/{name}",
            "pods": [pod.key for pod in pods],
            "outcome": outcome.condition["reason"],
            "message": outcome.condition["message"],
            "placement": result.placement,
        }
        if preemption is not None:
            record["preemption"] = preemption.record()
            if preemption.victims:
                record["preemptionVictims"] = preemption.victims_record()
        for t in [*result.tries, *untried]:
            t.att.pod_group = {**record, "rejectedByGroup": t.pod.uid in outcome.rejected_by_group}
            if result.waiting_on_preemption and t.held is not None:
                # Back to the queue nominated where the group's try put it, waiting for the preemption.
                t.att.pod_group["nominatedNode"] = t.held.node_name
        return outcome

    def _preempt_as_group(
        self,
        fwk: Framework,
        members: Sequence[tuple[PodInfo, int]],
        opts: ScheduleOptions,
        namespace: str,
        name: str,
        result: _Result,
    ) -> PodGroupPreemption:
        """``runWorkloadAwarePreemption`` after an unschedulable group cycle; on success the group waits for it, an
        error is the group's, otherwise its reason joins the group's message."""
        gates = fwk.handle.kube_version.effective_gates(fwk.handle.feature_gates)

        def feasible() -> Status:
            if gates.get("TopologyAwareWorkloadScheduling"):
                check = self._placement_algorithm(fwk, members, opts, namespace, name, post_filters=False)
            else:
                check = self._default_algorithm(members, opts, post_filters=False)
            if check.code == "Success":
                return Status()
            return Status(Code.ERROR if check.code == "Error" else Code.UNSCHEDULABLE, check.message)

        preemption = preempt_pod_group(fwk, self.snapshot, namespace, name, [pod for pod, _ in members], feasible)
        st = preemption.status
        if st.is_success():
            result.waiting_on_preemption = True
        elif st.code == Code.ERROR:
            # v1.37 names where the error came from, as pod-by-pod preemption does (kubernetes/kubernetes#139218).
            prefix = POD_GROUP_PREEMPTION_ERROR if fwk.handle.kube_version.minor >= 37 else ""
            result.code, result.message = "Error", prefix + st.message()
        else:
            result.message = f"{result.message}, {st.message()}"
        return preemption

    def _default_algorithm(
        self, members: Sequence[tuple[PodInfo, int]], opts: ScheduleOptions, post_filters: bool = True
    ) -> _Result:
        """``podGroupSchedulingDefaultAlgorithm``: every pod tried in turn, each seeing the ones before it assumed;
        all taken back before it returns. Without ``post_filters`` no pod runs PostFilter (no preemption)."""
        trial = PodGroupTrial()
        result = _Result([], "Unschedulable", POD_GROUP_UNSCHEDULABLE)
        requires_preemption = False
        try:
            for pod, attempt_no in members:
                state = CycleState()
                state.pod_group_cycle = trial
                if not post_filters:
                    state.write(SKIP_ALL_POST_FILTER_PLUGINS, True)
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
                result.tries.append(_Try(pod, att, held, needs_preemption))
                if held is None:
                    if att.result == "unschedulable":
                        continue  # the group may still be schedulable without it
                    result.code = "Error"
                    result.message = f"failed to schedule other pod from a pod group: {att.message}"
                    result.waiting_on_preemption = False
                    break
                requires_preemption = requires_preemption or needs_preemption
                if held.permit.is_success():
                    if requires_preemption:
                        result.message = f"{POD_GROUP_UNSCHEDULABLE}, {WAITING_ON_PREEMPTION}"
                        result.waiting_on_preemption = True
                    else:
                        result.code, result.message = "Success", ""
        finally:
            # Every pod tried is taken back (the trial's deferred reverts, last first).
            for t in reversed(result.tries):
                if t.held is not None:
                    self._forget(t.held.fwk, t.held.state, t.held.assumed, t.held.node_name)
        return result

    def _placement_algorithm(
        self,
        fwk: Framework,
        members: Sequence[tuple[PodInfo, int]],
        opts: ScheduleOptions,
        namespace: str,
        name: str,
        post_filters: bool = True,
    ) -> _Result:
        """``podGroupSchedulingPlacementAlgorithm`` (TopologyAwareWorkloadScheduling): the default algorithm on
        each placement the first PlacementGenerate plugin offers, the best feasible one by the PlacementScore
        plugins."""
        placements, st = _generate_placements(fwk, namespace, name, Placement("", list(self.snapshot.node_info_list)))
        if not st.is_success():
            return _Result([], "Error" if st.code == Code.ERROR else "Unschedulable", st.message())
        first: _Result | None = None
        feasible: list[tuple[Placement, _Result]] = []
        for placement in placements:
            self.snapshot.assume_placement(placement.nodes)
            try:
                result = self._default_algorithm(members, opts, post_filters)
            finally:
                self.snapshot.forget_placement()
            result.placement = placement.name
            if result.code == "Error":
                return result
            first = first or result
            if result.code == "Success" or result.waiting_on_preemption:
                feasible.append((placement, result))
        if not feasible:
            assert first is not None  # a plugin offers at least one placement or fails
            first.message = (
                f"0/{len(placements)} placements are available, first placement status: {POD_GROUP_UNSCHEDULABLE}"
            )
            return first
        if len(feasible) == 1:
            return feasible[0][1]
        best, st = self._best_placement(fwk, namespace, name, feasible, opts)
        if best is None:
            return _Result([], "Error", st.message())
        return best

    def _best_placement(
        self,
        fwk: Framework,
        namespace: str,
        name: str,
        feasible: list[tuple[Placement, _Result]],
        opts: ScheduleOptions,
    ) -> tuple[_Result | None, Status]:
        """``findBestPlacement``: the highest total of the PlacementScore plugins' weighted, normalized scores; a tie
        broken at random as upstream (by placement name with the "name" tie-break)."""
        assignments = [
            PodGroupAssignments(placement, {t.pod.key: t.held.node_name for t in result.tries if t.held is not None})
            for placement, result in feasible
        ]
        totals, st = _score_placements(fwk, namespace, name, assignments)
        if totals is None:
            return None, st
        top = max(totals)
        candidates = [i for i, total in enumerate(totals) if total == top]
        if opts.tie_break == "name":
            chosen = min(candidates, key=lambda i: feasible[i][0].name)
        else:
            chosen = candidates[self.rng.randrange(len(candidates))]
        return feasible[chosen][1], st

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

    def _submit(self, t: _Try, result: _Result, opts: ScheduleOptions, outcome: PodGroupOutcome) -> None:
        """``submitPodGroupAlgorithmResult`` for one pod: to binding, or its failure."""
        att, held = t.att, t.held
        outcome.attempts.append(att)
        if t.group_failure:
            if result.code != "Error":
                outcome.rejected_by_group.add(t.pod.uid)  # the group's status, not a FitError
            return
        if result.code == "Error":
            if att.result != "error":
                att.result, att.message = "error", result.message
            return
        if held is not None and not t.requires_preemption:
            if result.code == "Success":
                held.state.pod_group_cycle = None
                self._assume_and_bind(held.fwk, held.state, t.pod, held.node_name, att, opts)
                return
            att.result = "unschedulable"
            outcome.rejected_by_group.add(t.pod.uid)
            if result.waiting_on_preemption:
                att.message = result.message
                att.nominated_node = held.node_name
            else:
                att.message = f"{POD_GROUP_UNSCHEDULABLE}, {held.permit.message()}"
                att.clears_nomination = True
            return
        if t.requires_preemption and held is not None and not result.waiting_on_preemption:
            # Its preemption no longer helps: the group's failure, its nomination cleared.
            att.message = f"{POD_GROUP_UNSCHEDULABLE}, {held.permit.message()}"
            att.nominated_node = None
            att.clears_nomination = True
            outcome.rejected_by_group.add(t.pod.uid)
        # Otherwise the pod's own failure (its FitError, its nomination) stands.


def _generate_placements(
    fwk: Framework, namespace: str, name: str, parent: Placement
) -> tuple[list[Placement], Status]:
    """``RunPlacementGeneratePlugins``: the first PlacementGenerate plugin's placements (the parent alone when the
    profile has none); none offered is Unschedulable."""
    if not fwk.placement_generate:
        return [parent], Status()
    plugin = fwk.placement_generate[0]
    try:
        placements, st = plugin.generate_placements(namespace, name, parent)
    except Exception as exc:
        st = fwk.failure("PlacementGenerate", plugin, exc)
        return [], Status(Code.ERROR, st.message(), plugin=plugin.name)
    if not st.is_success():
        return [], st.with_plugin(plugin.name)
    if not placements:
        return [], Status(Code.UNSCHEDULABLE, "no feasible placements found", plugin=plugin.name)
    return placements, st


def _score_placements(
    fwk: Framework, namespace: str, name: str, assignments: list[PodGroupAssignments]
) -> tuple[list[int] | None, Status]:
    """``RunPlacementScorePlugins``: each plugin's scores, normalized, checked to be 0..100 and weighted; the totals
    per placement (None and the error status when a plugin failed)."""
    totals = [0] * len(assignments)
    for plugin in fwk.placement_score:
        scores: list[int] = []
        for assignment in assignments:
            score, st = plugin.score_placement(namespace, name, assignment)
            if not st.is_success():
                return None, Status(Code.ERROR, f"running PlacementScore plugins: {st.message()}")
            scores.append(score)
        st = plugin.normalize_placement_scores(namespace, name, scores)
        if not st.is_success():
            message = f'plugin "{plugin.name}" failed with: {st.message()}'
            return None, Status(Code.ERROR, f"running NormalizePlacementScore on PlacementScore plugins: {message}")
        weight = fwk.weights.get(plugin.name, 1)
        for i, score in enumerate(scores):
            if not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
                problem = (
                    f'plugin "{plugin.name}" returns an invalid score {score}, it should in the range of '
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
                return None, Status(Code.ERROR, f"applying score defaultWeights on PlacementScore plugins: {problem}")
            totals[i] += score * weight
    return totals, Status()


def condition_type(minor: int) -> str:
    """The PodGroup condition a group cycle sets at Kubernetes 1.``minor``."""
    return POD_GROUP_INITIALLY_SCHEDULED if minor >= 37 else POD_GROUP_SCHEDULED


def _condition(code: str, message: str, minor: int) -> dict[str, str]:
    kind = condition_type(minor)
    if code == "Success":
        return {"type": kind, "status": "True", "reason": REASON_SCHEDULED, "message": message}
    reason = REASON_SCHEDULER_ERROR if code == "Error" else REASON_UNSCHEDULABLE
    return {"type": kind, "status": "False", "reason": reason, "message": message}


def _failed_attempt(pod: PodInfo, attempt_no: int, message: str, result: str) -> Attempt:
    """The attempt of a pod the group's cycle did not try (the group failed before it, or as a whole)."""
    return Attempt(pod=pod.key, attempt=attempt_no, priority=pod.priority, profile="", result=result, message=message)


def _q(value: str) -> str:
    """Go's ``%q`` of a name."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def pod_group_conditions_after(
    group: dict[str, Any], condition: dict[str, str], now: Callable[[], str]
) -> list[dict[str, Any]] | None:
    """``updatePodGroupCondition``: the PodGroup's conditions once a cycle's ``condition`` is set on them (its
    observedGeneration the group's), or None when nothing changes: a group once scheduled is not turned back to
    False by a later cycle for more pods. kss serve and the replay write the result each their way."""
    conditions = list((group.get("status") or {}).get("conditions") or [])
    existing = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if existing is not None and existing.get("status") == "True" and condition["status"] != "True":
        return None
    wanted = {**condition, "observedGeneration": (group.get("metadata") or {}).get("generation") or 0}
    return set_status_condition(conditions, wanted, now)


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
