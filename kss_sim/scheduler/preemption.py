"""The generic preemption evaluator (``pkg/scheduler/framework/preemption``, v1.35).

A PostFilter plugin hands the evaluator an implementation of :class:`PreemptionInterface` (how to
shortlist nodes, who may preempt, which victims to pick on a node) and gets back the nominated node
and its victims. Golden runs fix upstream's randomness: candidate nodes are walked in name order
from offset 0, and the last tie between equally good nodes goes to the smallest name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, Protocol

from kss_sim.scheduler.extender import PREEMPT_ANSWERS_STATE_KEY, PREEMPT_CALLS_STATE_KEY, ExtenderError, Victims
from kss_sim.scheduler.framework import (
    Code,
    CycleState,
    Handle,
    NodeToStatus,
    PostFilterResult,
    Status,
    error,
    success,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

# A pod without status.startTime counts as started "now", i.e. after every recorded start.
NOW_NS = 2**63 - 1
MAX_INT32 = 2**31 - 1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"


@dataclass(slots=True)
class Candidate:
    """A node where the preemptor fits once ``victims`` are gone (``preemption.candidate``)."""

    name: str
    victims: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0
    # The victims are sorted by ``importance_key`` (DefaultPreemption's own dry run sorts them so): the first
    # one then has the earliest start among the highest-priority ones.
    by_importance: bool = False


class PreemptionInterface(Protocol):
    """What a preemption plugin decides (``preemption.Interface``)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo, pdbs: Sequence[dict[str, Any]]
    ) -> tuple[list[PodInfo], int, Status]: ...

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Candidate]) -> list[Callable[[str], int]] | None: ...


def pod_start_time_ns(pod: PodInfo) -> int:
    """``util.GetPodStartTime`` in nanoseconds; a missing start time is "now" (later than any recorded one)."""
    raw = (pod.pod.get("status") or {}).get("startTime")
    if not raw:
        return NOW_NS
    # A dry run orders each node's pods by it, and many pods share a start time (whole seconds): parsed once each.
    try:
        return _start_ns_by_text[raw]
    except (KeyError, TypeError):
        ns = _parse_start_time_ns(raw)
    if isinstance(raw, str):
        if len(_start_ns_by_text) >= _START_TIMES_KEPT:
            _start_ns_by_text.clear()
        _start_ns_by_text[raw] = ns
    return ns


_START_TIMES_KEPT = 65_536
_start_ns_by_text: dict[str, int] = {}


def _parse_start_time_ns(raw: Any) -> int:
    try:
        dt = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return NOW_NS
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def importance_key(pod: PodInfo) -> tuple[int, int]:
    """Sort key for ``util.MoreImportantPod``: higher priority first, then the earlier start."""
    # A dry run sorts every candidate node's pods by it: a start time met before is read without the call.
    raw = (pod.pod.get("status") or {}).get("startTime")
    ns = _start_ns_by_text.get(raw) if raw.__class__ is str else None
    return (-pod.priority, pod_start_time_ns(pod) if ns is None else ns)


def more_important_pod(a: PodInfo, b: PodInfo) -> bool:
    """``util.MoreImportantPod``: higher priority, or equal priority and an earlier start time."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return pod_start_time_ns(a) < pod_start_time_ns(b)


def earliest_start_of_highest_priority(victims: Sequence[PodInfo]) -> int | None:
    """``util.GetEarliestPodStartTime``: the earliest start among the highest-priority victims."""
    if not victims:
        return None
    earliest = importance_key(victims[0])[1]
    top = victims[0].priority
    for p in victims:
        if p.priority == top:
            earliest = min(earliest, importance_key(p)[1])
        elif p.priority > top:
            top = p.priority
            earliest = importance_key(p)[1]
    return earliest


def pick_one_node_for_preemption(
    nodes_to_victims: dict[str, Candidate], score_funcs: list[Callable[[str], int]] | None = None
) -> str:
    """``pickOneNodeForPreemption``: keep the best-scoring nodes criterion by criterion.

    Criteria (no ``score_funcs``): fewest PDB violations; lowest highest-victim priority; lowest sum of
    (priority + 2^31); fewest victims; latest earliest-start among the highest-priority victims. Upstream takes
    the first remaining node of a map walk (random); golden runs take the smallest name.
    """
    if not nodes_to_victims:
        return ""
    if not score_funcs:
        return _pick_by_default_criteria(nodes_to_victims)
    candidates = sorted(nodes_to_victims)
    for f in score_funcs:
        scores = [f(n) for n in candidates]
        best = max(scores)
        candidates = [n for n, s in zip(candidates, scores, strict=True) if s == best]
        if len(candidates) == 1:
            return candidates[0]
    return candidates[0]


def _pick_by_default_criteria(nodes_to_victims: dict[str, Candidate]) -> str:
    """``pick_one_node_for_preemption`` with the default criteria, each computed once per remaining node over
    the candidates themselves (a dry run at 5,000 nodes hands over 500 of them, often tied up to the last)."""
    names = sorted(nodes_to_victims)
    remaining = [nodes_to_victims[name] for name in names]
    criteria: list[Callable[[Candidate], int]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        # The sum of (priority + 2^31) over the victims, as one sum and a product.
        lambda c: -(sum([p.priority for p in c.victims]) + len(c.victims) * (MAX_INT32 + 1)),
        lambda c: -len(c.victims),
        _latest_start_score,
    ]
    for criterion in criteria:
        scores = [criterion(c) for c in remaining]
        best = max(scores)
        kept = [i for i, score in enumerate(scores) if score == best]
        names, remaining = [names[i] for i in kept], [remaining[i] for i in kept]
        if len(remaining) == 1:
            break
    return names[0]


def _latest_start_score(c: Candidate) -> int:
    if c.by_importance and c.victims:
        return importance_key(c.victims[0])[1]
    earliest = earliest_start_of_highest_priority(c.victims)
    return -(2**63) if earliest is None else earliest


def fit_error_message(num_all_nodes: int, statuses: NodeToStatus) -> str:
    """``FitError.Error()`` without PreFilter/PostFilter parts: "0/N nodes are available: <histogram>."."""
    counts: dict[str, int] = {}
    # Nodes often share a status object (the dry run's "no victims"): each object's reasons counted once.
    for st, times in Counter(statuses.statuses.values()).items():
        for reason in st.reasons:
            counts[reason] = counts.get(reason, 0) + times
    absent = num_all_nodes - len(statuses)
    if absent > 0:
        for reason in statuses.absent.reasons:
            counts[reason] = counts.get(reason, 0) + absent
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    if parts:
        msg += f" {', '.join(parts)}."
    return msg


def _aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


class Evaluator:
    """``preemption.Evaluator``: finds candidates, picks one, evicts its victims."""

    def __init__(self, plugin_name: str, handle: Handle, interface: PreemptionInterface) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.interface = interface

    # ------------------------------------------------------------------------------------------
    def preempt(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """``Evaluator.Preempt``: the nominated node and victims, or why preemption cannot help."""
        # 1) Is the preemptor allowed to preempt at all?
        nominated = str((pod.pod.get("status") or {}).get("nominatedNodeName") or "")
        ok, msg = self.interface.pod_eligible_to_preempt_others(pod, statuses.get(nominated))
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, msg)

        # 2) Dry-run preemption on the nodes where it might help.
        all_nodes = self.handle.snapshot.node_info_list
        if not all_nodes:
            return None, error("no nodes available")
        candidates, node_statuses, errs = self.find_candidates(state, pod, statuses)
        if errs and not candidates:
            return None, error(_aggregate(errs))
        if not candidates:
            node_statuses.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, PREEMPTION_NOT_HELPFUL)
            # An empty nomination clears any nominatedNodeName the pod had.
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, fit_error_message(len(all_nodes), node_statuses))

        # 3) Extenders that support preemption may drop candidate nodes or victims.
        candidates, st = self.call_extenders(state, pod, candidates)
        if not st.is_success():
            return None, st

        # 4) The best candidate.
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, "no candidate node for preemption")

        # 5) Evict the victims and drop lower-priority nominations on that node.
        st = self.prepare_candidate(best, pod)
        if not st.is_success():
            return None, st
        return PostFilterResult(best.name, [v.key for v in best.victims]), success()

    def find_candidates(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """``findCandidates``: dry-run on the Unschedulable nodes (UnschedulableAndUnresolvable ones cannot help)."""
        snapshot = self.handle.snapshot
        potential = statuses.nodes_for_codes(snapshot, Code.UNSCHEDULABLE)
        if not potential:
            return [], NodeToStatus(), []
        # Golden rule 5: candidates are walked in name order (upstream: node-list or map order).
        potential.sort(key=_node_name)
        pdbs = self.handle.cluster.pdbs
        offset, num_candidates = self.interface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num_candidates)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[dict[str, Any]],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """``DryRunPreemption``: select victims on copies of each node until enough candidates are found.

        Non-violating candidates come first. The walk stops once there is at least one
        non-violating candidate and ``num_candidates`` in all (each list holds at most that many).
        """
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses = NodeToStatus()
        errs: list[str] = []
        n = len(potential)
        start = offset % n if n else 0
        walk = [*potential[start:], *potential[:start]]
        # Optional in the interface (``nodes_without_victims``): the nodes where no victim can be found are answered
        # without copies (on a full cluster of equal priorities: every node, in every failed attempt).
        shortcut = getattr(self.interface, "nodes_without_victims", None)
        no_victims: Status | None = None  # their status, once the shortcut answered

        def to_try() -> Iterator[int]:
            """The walk's positions to dry-run: the shortcut is asked a stretch of nodes at a time, as the walk
            usually stops after ``num_candidates`` candidates, long before the last of thousands of nodes."""
            nonlocal no_victims
            stretch = max(num_candidates, 64)
            for begin in range(0, n, stretch):
                quick = shortcut(pod, walk[begin : begin + stretch]) if shortcut is not None else None
                if quick is None:  # no shortcut: every node is tried
                    yield from range(begin, n)
                    return
                if no_victims is None:
                    no_victims = quick[1]
                yield from [begin + j for j, without in enumerate(quick[0]) if not without]

        # Optional too (``victims_without_copies``): the same answer without copying the node and the cycle state,
        # on the nodes it can answer for (None: every node is copied).
        without_copies = getattr(self.interface, "victims_without_copies", None)
        select_in_place = without_copies(state, pod) if without_copies is not None else None
        statuses = node_statuses.statuses
        answered = 0  # the walk's nodes before this one without victims have their status

        def answer_up_to(end: int) -> None:
            # The nodes skipped before ``end`` are the shortcut's (``no_victims`` is set before one is skipped).
            if no_victims is not None and end > answered:
                statuses.update(dict.fromkeys([ni.name for ni in walk[answered:end]], no_victims))

        for i in to_try():
            answer_up_to(i)
            answered = i + 1
            node_info = walk[i]
            answer = select_in_place(node_info, pdbs) if select_in_place is not None else None
            by_importance = answer is not None  # victims_without_copies sorts them
            if answer is None:
                answer = self.interface.select_victims_on_node(state.clone(), pod, node_info.clone(), pdbs)
            victims, num_violations, st = answer
            if st.is_success() and victims:
                c = Candidate(node_info.name, victims, num_violations, by_importance)
                target = non_violating if num_violations == 0 else violating
                if len(target) < num_candidates:
                    target.append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    return non_violating + violating, node_statuses, errs
                continue
            if st.is_success():
                st = error(f'expected at least one victim pod on node "{node_info.name}"')
            if st.code == Code.ERROR:
                errs.append(st.message())
            node_statuses.set(node_info.name, st)
        answer_up_to(n)
        return non_violating + violating, node_statuses, errs

    def call_extenders(
        self, state: CycleState, pod: PodInfo, candidates: list[Candidate]
    ) -> tuple[list[Candidate], Status]:
        """``callExtenders``: each extender that supports preemption and is interested in the pod, in order, gets
        the victims per candidate node and answers with the nodes and victims it accepts, which the next one gets.

        An error fails preemption unless the extender is ignorable (then it is skipped); so does a node returned
        without victims (an ignorable extender's such node is dropped). An empty answer ends the loop: no
        preemption can happen. The candidates are rebuilt from the last answer. Each call's outcome is left in
        ``state`` for the attempt record.
        """
        extenders = self.handle.extenders
        if not extenders or not candidates:
            return candidates, success()
        victims_map = {c.name: Victims(list(c.victims), c.num_pdb_violations) for c in candidates}
        calls: dict[str, str] = {}
        answers: dict[str, Any] = {}
        called = False
        try:
            for ext in extenders:
                if not ext.supports_preemption() or not ext.is_interested(pod):
                    continue
                try:
                    returned = ext.process_preemption(pod, victims_map, self.handle.snapshot)
                except ExtenderError as exc:
                    if ext.is_ignorable():
                        calls[ext.record_name] = f"ignored error: {exc}"
                        continue
                    calls[ext.record_name] = f"error: {exc}"
                    return [], error(str(exc))
                for name, victims in list(returned.items()):
                    if victims.pods:
                        continue
                    if ext.is_ignorable():
                        del returned[name]
                        continue
                    msg = f'expected at least one victim pod on node "{name}"'
                    calls[ext.record_name] = f"error: {msg}"
                    return [], error(msg)
                calls[ext.record_name] = "success"
                answers[ext.name] = {"NodeNameToMetaVictims": _meta_victims(returned)}
                called = True
                victims_map = returned
                if not victims_map:
                    break
        finally:
            if calls:
                state.write(PREEMPT_CALLS_STATE_KEY, calls)
                state.write(PREEMPT_ANSWERS_STATE_KEY, answers)
        if not called:
            return candidates, success()
        return [Candidate(name, v.pods, v.num_pdb_violations) for name, v in victims_map.items()], success()

    def select_candidate(self, candidates: list[Candidate]) -> Candidate | None:
        """``SelectCandidate``: the only one, or the best by ``pickOneNodeForPreemption``."""
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        by_node = {c.name: c for c in candidates}
        funcs = self.interface.ordered_score_funcs(by_node)
        name = pick_one_node_for_preemption(by_node, funcs)
        return by_node.get(name, candidates[0])

    def prepare_candidate(self, c: Candidate, pod: PodInfo) -> Status:
        """``prepareCandidate``: delete the victims (not those already terminating), then clear the
        nominations of lower-priority pods nominated to the same node."""
        actions = self.handle.actions
        if actions is not None:
            for victim in c.victims:
                if (victim.pod.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                st = actions.delete_victim(victim, pod)
                if not st.is_success():
                    return error(st.message())
        # The nominator forgets them and their status loses the nomination (through the API, as upstream's
        # ClearNominatedNodeName: the update lets the pods it kept out of the node try again).
        for p in self.lower_priority_nominated_pods(pod, c.name):
            self.handle.delete_nominated_pod(p)
            if actions is not None:
                actions.clear_nominated_node(p)
        return success()

    def lower_priority_nominated_pods(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        """``getLowerPriorityNominatedPods``: pods nominated to ``node_name`` with lower priority."""
        return [p for p in self.handle.nominated_pods_for_node(node_name) if p.priority < pod.priority]


_node_name = attrgetter("name")


def _meta_victims(victims: dict[str, Victims]) -> dict[str, Any]:
    """An extender's accepted victims as ``MetaVictims`` (UIDs), how kube-scheduler-simulator shows its answer."""
    return {
        name: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
        for name, v in victims.items()
    }
