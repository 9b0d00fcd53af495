"""DefaultPreemption: evict lower-priority pods so that an unschedulable pod fits (``defaultpreemption``, v1.35).

PostFilter runs the generic :class:`~kss_sim.scheduler.preemption.Evaluator` with this plugin's rules:
who may preempt, how many candidate nodes to dry-run, and the minimal victim set per node
(remove every lower-priority pod, then reprieve the most important ones that still let the pod fit,
PDB-violating ones first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from kss_sim.kube.labels import SelectorError, label_selector_matches, validate_label_selector
from kss_sim.scheduler.framework import (
    Code,
    CycleState,
    Handle,
    NodeToStatus,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    Status,
    error,
    success,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, NodeWithout, PodInfo
from kss_sim.scheduler.preemption import Candidate, Evaluator, importance_key

NAME = "DefaultPreemption"
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_NOT_ELIGIBLE_PLACEMENT = "preemption: not eligible due to placement-based pod group scheduling limitation"
MSG_NOT_ELIGIBLE_WORKLOAD_AWARE = "preemption: not eligible due to workload aware preemption enabled"
POD_GROUP_V1ALPHA2 = "PodGroup.v1alpha2"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def pod_terminating_by_preemption(pod: PodInfo) -> bool:
    """Being deleted, with a DisruptionTarget=True condition whose reason is PreemptionByScheduler."""
    if not (pod.pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for cond in (pod.pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "DisruptionTarget":
            return bool(cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler")
    return False


def _pdb_matches(pdb: dict[str, Any], pod: PodInfo) -> bool:
    """Same namespace and a non-empty, valid selector that selects the pod's labels."""
    meta = pdb.get("metadata") or {}
    if (meta.get("namespace") or "default") != pod.namespace:
        return False
    selector = (pdb.get("spec") or {}).get("selector")
    # A nil selector matches nothing; an empty one is labels.Everything(), which PDBs treat as nothing.
    if selector is None or (not selector.get("matchLabels") and not selector.get("matchExpressions")):
        return False
    try:
        validate_label_selector(selector)
    except SelectorError:
        return False
    return label_selector_matches(selector, pod.labels)


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[dict[str, Any]]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: split ``pods`` (order kept) into PDB-violating and non-violating.

    Each matching PDB's ``status.disruptionsAllowed`` is spent pod by pod; a pod already listed in
    ``status.disruptedPods`` does not spend it. A pod violates when some matching budget drops below 0.
    """
    allowed = [int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        (violating if pdb_violated_by(pod, pdbs, allowed) else non_violating).append(pod)
    return violating, non_violating


def pdb_violated_by(
    pod: PodInfo, pdbs: Sequence[dict[str, Any]], allowed: list[int], *, stop_at_first: bool = False
) -> bool:
    """Whether evicting ``pod`` breaks a budget, spending ``allowed`` (each PDB's disruptions left) as it goes; a
    pod listed in ``status.disruptedPods`` spends nothing. ``stop_at_first``: the budgets after the first broken one
    are not spent (workload-aware preemption's ``podIsViolating``)."""
    violated = False
    if pod.labels:
        for i, pdb in enumerate(pdbs):
            if not _pdb_matches(pdb, pod):
                continue
            if pod.name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
                if stop_at_first:
                    break
    return violated


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin):
    """Preempts lower-priority pods for a pod that fits nowhere."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, self.defaulted_args(args or {}))
        self.min_candidate_nodes_percentage = int(self.args["minCandidateNodesPercentage"])
        self.min_candidate_nodes_absolute = int(self.args["minCandidateNodesAbsolute"])
        self.evaluator = Evaluator(NAME, handle, self)
        # v1.36 (TopologyAwareWorkloadScheduling): no pod-by-pod preemption for a PodGroup with constraints.
        gates = handle.kube_version.effective_gates(handle.feature_gates)
        self.topology_aware_workloads = gates.get("TopologyAwareWorkloadScheduling", False)
        self.workload_aware_preemption = gates.get("WorkloadAwarePreemption", False)
        # Node name -> (its NodeInfo, generation, lowest priority of its pods or None): ``nodes_without_victims``.
        self._lowest_by_node: dict[str, tuple[NodeInfo, int, int | None]] = {}

    # --- args ---------------------------------------------------------------------------------
    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """v1 defaults: minCandidateNodesPercentage 10, minCandidateNodesAbsolute 100."""
        out = dict(args)
        if out.get("minCandidateNodesPercentage") is None:
            out["minCandidateNodesPercentage"] = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
        if out.get("minCandidateNodesAbsolute") is None:
            out["minCandidateNodesAbsolute"] = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidateDefaultPreemptionArgs``."""
        pct = args.get("minCandidateNodesPercentage")
        absolute = args.get("minCandidateNodesAbsolute")
        errs: list[tuple[str, str]] = []
        for key, value in (("minCandidateNodesPercentage", pct), ("minCandidateNodesAbsolute", absolute)):
            if not _is_int(value):
                errs.append((key, f"Invalid value: {value!r}: must be an integer"))
        if errs:
            return errs
        assert isinstance(pct, int) and isinstance(absolute, int)
        if pct < 0 or pct > 100:
            errs.append(("minCandidateNodesPercentage", f"Invalid value: {pct}: not in valid range [0, 100]"))
        if absolute < 0:
            errs.append(("minCandidateNodesAbsolute", f"Invalid value: {absolute}: not in valid range [0, inf)"))
        if pct == 0 and absolute == 0:
            errs.append(
                (
                    "minCandidateNodesPercentage",
                    f"Invalid value: {pct}: cannot be zero at the same time as minCandidateNodesAbsolute",
                )
            )
            errs.append(
                (
                    "minCandidateNodesAbsolute",
                    f"Invalid value: {absolute}: cannot be zero at the same time as minCandidateNodesPercentage",
                )
            )
        return errs

    # --- PreEnqueue ---------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status:
        """Upstream gates pods whose asynchronous preemption is in flight; ours completes synchronously."""
        return success()

    # --- PostFilter ---------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Run the evaluator; messages get the ``preemption: `` prefix. On success the pod is nominated."""
        refused = self._placement_refusal(pod)
        if refused is not None:
            return None, refused
        if self.workload_aware_preemption and pod.spec.get("schedulingGroup") is not None:
            # The group preempts as one (preemption_podgroup.py), not its pods one by one.
            return None, Status(Code.UNSCHEDULABLE, MSG_NOT_ELIGIBLE_WORKLOAD_AWARE)
        result, st = self.evaluator.preempt(state, pod, statuses)
        actions = self.handle.actions
        if st.is_success() and result is not None and result.nominated_node_name and actions is not None:
            actions.set_nominated_node(pod, result.nominated_node_name)
        msg = st.message()
        if msg:
            return result, Status(st.code, "preemption: " + msg)
        return result, st

    def _placement_refusal(self, pod: PodInfo) -> Status | None:
        """With TopologyAwareWorkloadScheduling, a member of a PodGroup that has scheduling constraints is not
        preempted for pod by pod: that would preempt once per topology placement tried (upstream leaves it to
        workload-aware preemption)."""
        group_name = (pod.spec.get("schedulingGroup") or {}).get("podGroupName")
        if not self.topology_aware_workloads or group_name is None:
            return None
        group = self.handle.cluster.get_object(POD_GROUP_V1ALPHA2, pod.namespace, str(group_name))
        if group is None:
            return Status(Code.UNSCHEDULABLE, "preemption: pod group for pod not found")
        if (group.get("spec") or {}).get("schedulingConstraints") is not None:
            return Status(Code.UNSCHEDULABLE, MSG_NOT_ELIGIBLE_PLACEMENT)
        return None

    # --- preemption.Interface -----------------------------------------------------------------
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """At least minCandidateNodesAbsolute, or minCandidateNodesPercentage % of the nodes, never above all."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Upstream starts at a random offset; golden runs (FORMAT.md rule 5) start at 0."""
        return 0, self.calculate_num_candidates(num_nodes)

    def is_preemption_allowed(self, node_info: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        """A victim must have lower priority than the preemptor (IsEligiblePod allows everything by default)."""
        return victim.priority < preemptor.priority

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status) -> tuple[bool, str]:
        """Not with preemptionPolicy Never, nor while lower-priority pods on its nominated node are being
        preempted (unless that node is now UnschedulableAndUnresolvable)."""
        if pod.spec.get("preemptionPolicy") == "Never":
            return False, MSG_NOT_ELIGIBLE_NEVER
        nominated = str((pod.pod.get("status") or {}).get("nominatedNodeName") or "")
        if nominated:
            if nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node_info = self.handle.snapshot.get(nominated)
            if node_info is not None:
                for p in node_info.pods:
                    if self.is_preemption_allowed(node_info, p, pod) and pod_terminating_by_preemption(p):
                        return False, MSG_NOT_ELIGIBLE_TERMINATING
        return True, ""

    def nodes_without_victims(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[bool], Status] | None:
        """For the dry run: which ``nodes`` hold no pod that ``pod`` may preempt, and ``select_victims_on_node``'s
        answer for them, found without copying the nodes and the cycle state (None: no shortcut, a subclass chooses
        its victims its own way). On a full cluster of pods of one priority every node is such a node, and copying
        each one was most of a failed attempt."""
        cls = type(self)
        if cls.select_victims_on_node is not DefaultPreemption.select_victims_on_node:
            return None
        no_victims = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NO_VICTIMS)  # shared: only read (fit error)
        if cls.is_preemption_allowed is not DefaultPreemption.is_preemption_allowed:
            allowed = self.is_preemption_allowed
            return [not any(allowed(ni, p, pod) for p in ni.pods) for ni in nodes], no_victims
        priority, lowest_by_node = pod.priority, self._lowest_by_node
        without: list[bool] = []
        for ni in nodes:
            entry = lowest_by_node.get(ni.name)
            if entry is None or entry[0] is not ni or entry[1] != ni.generation:
                lowest = min((p.priority for p in ni.pods), default=None)
                entry = lowest_by_node[ni.name] = (ni, ni.generation, lowest)
            without.append(entry[2] is None or entry[2] >= priority)
        return without, no_victims

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Candidate]) -> list[Callable[[str], int]] | None:
        """None: the evaluator's default criteria apply."""
        return None

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo, pdbs: Sequence[dict[str, Any]]
    ) -> tuple[list[PodInfo], int, Status]:
        """The fewest pods to evict from ``node_info`` (a copy, as is ``state``) so that ``pod`` fits.

        Returns the victims (most important first), how many of them violate a PDB, and a status.
        """
        fwk = self.handle.framework
        if fwk is None:
            return [], 0, error("no framework")

        def remove(p: PodInfo) -> Status:
            node_info.remove_pod(p)
            return fwk.run_pre_filter_extension_remove_pod(state, pod, p, node_info)

        def add(p: PodInfo) -> Status:
            node_info.add_pod(p)
            return fwk.run_pre_filter_extension_add_pod(state, pod, p, node_info)

        # Remove every pod that may be preempted and see whether the pod fits without them.
        potential: list[PodInfo] = []
        for p in list(node_info.pods):
            if self.is_preemption_allowed(node_info, p, pod):
                potential.append(p)
                st = remove(p)
                if not st.is_success():
                    return [], 0, error(st.message())
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NO_VICTIMS)
        st = fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if not st.is_success():
            return [], 0, st

        def reprieve(p: PodInfo) -> tuple[bool, Status]:
            st = add(p)
            if not st.is_success():
                return False, st
            fits = fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info).is_success()
            if not fits:
                st = remove(p)
                if not st.is_success():
                    return False, st
            return fits, success()

        return _reprieve_most_important(potential, pdbs, reprieve)

    def victims_without_copies(
        self, state: CycleState, pod: PodInfo
    ) -> Callable[[NodeInfo, Sequence[dict[str, Any]]], tuple[list[PodInfo], int, Status] | None] | None:
        """For the dry run: ``select_victims_on_node``'s answer on a node without copying the node and ``state``
        (None for a node that needs the copies), when this cycle's filters allow it
        (``Framework.filter_without_copy``: no PreFilter extension in play, every filter reading no pod or
        answering from a ``NodeWithout``); None when they do not, or a subclass chooses its victims its own way.

        Same victims, count and status as the copying run, on a node that no nominated pod of ``pod``'s priority
        or higher is added to: the pods are taken off and put back in the same order on a ``NodeWithout``, whose
        count and ``requested`` equal the copy's at each step; the filters that read no pod are asked once, on the
        node itself, with everything else, and not again as pods come back (their verdict reads nothing that
        changes: it passed, or the node was answered then); the others are asked at every step, as upstream asks
        every filter.
        """
        cls = type(self)
        if (
            cls.select_victims_on_node is not DefaultPreemption.select_victims_on_node
            or cls.is_preemption_allowed is not DefaultPreemption.is_preemption_allowed
        ):
            return None
        fwk = self.handle.framework
        plan = fwk.filter_without_copy(state) if fwk is not None else None
        if fwk is None or plan is None:
            return None
        run, fits_without_copy = fwk.run_filter_plugins_without_copy, fwk.fits_without_copy
        everything, pod_readers = plan.plugins, plan.pod_readers
        # The only plugin reading pods may answer the reprieve walk with plain sums (no status per pod put back).
        only_reader = pod_readers[0][0] if len(pod_readers) == 1 else None
        priority, uid = pod.priority, pod.uid
        nominated_pods_for_node = self.handle.nominated_pods_for_node

        def select(node_info: NodeInfo, pdbs: Sequence[dict[str, Any]]) -> tuple[list[PodInfo], int, Status] | None:
            if any(p.priority >= priority and p.uid != uid for p in nominated_pods_for_node(node_info.name)):
                return None  # the filters would run twice, with these pods added: the copying run does that
            potential = [p for p in node_info.pods if p.priority < priority]  # is_preemption_allowed
            if not potential:
                return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NO_VICTIMS)
            node = NodeWithout(node_info, potential)
            st = run(state, pod, node, everything)
            if not st.is_success():
                return [], 0, st

            put_back_fits = only_reader.reprieve_without(state, pod, node) if only_reader is not None else None
            if put_back_fits is not None:
                return _reprieve_by_sums(potential, pdbs, put_back_fits)

            def reprieve(p: PodInfo) -> tuple[bool, Status]:
                node.put_back(p)
                fits = fits_without_copy(state, pod, node, pod_readers)
                if not fits:
                    node.take_off(p)
                return fits, success()

            return _reprieve_most_important(potential, pdbs, reprieve)

        return select


def _by_importance(potential: list[PodInfo], pdbs: Sequence[dict[str, Any]]) -> tuple[list[PodInfo], list[PodInfo]]:
    """``potential`` sorted most important first, split into PDB-violating and non-violating pods (order kept)."""
    potential.sort(key=importance_key)
    if not pdbs:  # no budget to break: every pod is non-violating (``filter_pods_with_pdb_violation``'s answer)
        return [], potential
    return filter_pods_with_pdb_violation(potential, pdbs)


def _reprieve_by_sums(
    potential: list[PodInfo], pdbs: Sequence[dict[str, Any]], put_back_fits: Callable[[PodInfo], bool]
) -> tuple[list[PodInfo], int, Status]:
    """``_reprieve_most_important`` with a reprieve that cannot fail (``FilterPlugin.reprieve_without``'s)."""
    violating, non_violating = _by_importance(potential, pdbs)
    victims = [p for p in violating if not put_back_fits(p)]
    num_violating = len(victims)
    victims += [p for p in non_violating if not put_back_fits(p)]
    if violating and non_violating:
        victims.sort(key=importance_key)
    return victims, num_violating, success()


def _reprieve_most_important(
    potential: list[PodInfo],
    pdbs: Sequence[dict[str, Any]],
    reprieve: Callable[[PodInfo], tuple[bool, Status]],
) -> tuple[list[PodInfo], int, Status]:
    """The victims among ``potential`` (all taken off, and the pod fits without them): each put back in turn, most
    important first, PDB-violating ones before the others, and kept if the pod still fits (``reprieve``: whether
    it does, and the status of putting it back and taking it off again)."""
    violating, non_violating = _by_importance(potential, pdbs)
    victims: list[PodInfo] = []
    num_violating = 0
    for p in violating:
        fits, st = reprieve(p)
        if not st.is_success():
            return [], 0, error(st.message())
        if not fits:
            victims.append(p)
            num_violating += 1
    for p in non_violating:
        fits, st = reprieve(p)
        if not st.is_success():
            return [], 0, error(st.message())
        if not fits:
            victims.append(p)
    if violating and non_violating:
        victims.sort(key=importance_key)
    return victims, num_violating, success()
