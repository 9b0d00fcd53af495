"""Workload-aware preemption (v1.36, KEP-5710, gate WorkloadAwarePreemption): a PodGroup that its scheduling cycle
found unschedulable preempts as one, over the whole cluster (upstream ``podgrouppreemption.go`` and the cycle's
``runWorkloadAwarePreemption``).

Each running pod is a victim on its own, except the pods of a PodGroup whose ``disruptionMode`` is ``PodGroup``: they
are one victim, at the group's priority. Every victim of lower priority than the preemptor's PodGroup is taken out
of the snapshot (on copies of the nodes, restored at the end); if the group's algorithm, run without PostFilter,
then finds the group schedulable, victims are given back one at a time, the most important first and those whose
eviction would break a PodDisruptionBudget before the others, each kept out only if the group no longer fits with
it. The victims left are deleted and the group waits for the preemption to complete.

With the gate on, DefaultPreemption's own PostFilter stands aside for a pod of a PodGroup
(``MSG_NOT_ELIGIBLE_WORKLOAD_AWARE``): the group preempts, not its pods one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kss_sim.scheduler.framework import Code, Status
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.default_preemption import MSG_NOT_ELIGIBLE_NEVER, pdb_violated_by
from kss_sim.scheduler.preemption import pod_start_time_ns
from kss_sim.scheduler.runtime import Framework
from kss_sim.scheduler.snapshot import Snapshot

POD_GROUP_V1ALPHA2 = "PodGroup.v1alpha2"
GATE = "WorkloadAwarePreemption"
MSG_NO_VICTIMS = "No preemption victims found for incoming preemptor"
MSG_NOT_REGISTERED = "default preemption plugin is not registered, workload aware preemption is disabled"
MSG_WITH_CONSTRAINTS = "workload aware preemption is not supported for pod groups with scheduling constraints"
DISRUPTION_MODE_POD_GROUP = "PodGroup"


def pod_group_priority(group: dict[str, Any]) -> int:
    """``util.PodGroupPriority``: ``spec.priority`` as admission resolved it, else 0."""
    return int((group.get("spec") or {}).get("priority") or 0)


@dataclass
class Victim:
    """One unit of eviction: a pod, or every running pod of a PodGroup with disruptionMode PodGroup."""

    pods: list[PodInfo]
    priority: int
    earliest_start: int = 0
    nodes: set[str] = field(default_factory=set)

    @property
    def is_pod_group(self) -> bool:
        # Upstream asks the first pod whether it names a group (a pod of a group in Pod mode counts too).
        return bool(self.pods[0].spec.get("schedulingGroup"))

    def importance(self) -> tuple[int, int, int, int]:
        """``moreImportantVictim`` as a sort key (smallest first = most important): higher priority, then a
        PodGroup before a pod, then (pods) the earlier start, (groups) more pods, then the earlier start."""
        if self.is_pod_group:
            return (-self.priority, 0, -len(self.pods), self.earliest_start)
        return (-self.priority, 1, 0, self.earliest_start)


def victims_of(nodes: Sequence[NodeInfo], group_of: Callable[[PodInfo], dict[str, Any] | None]) -> list[Victim]:
    """``newDomainForWorkloadPreemption``: the running pods as victims, a disruptable-as-one PodGroup's together."""
    units: dict[str, Victim] = {}
    for ni in nodes:
        for pi in ni.pods:
            group = group_of(pi)
            mode = ((group or {}).get("spec") or {}).get("disruptionMode")
            if group is None or mode != DISRUPTION_MODE_POD_GROUP:
                units[pi.uid] = Victim([pi], pi.priority, pod_start_time_ns(pi), {ni.name})
                continue
            uid = str((group.get("metadata") or {}).get("uid") or "")
            unit = units.get(uid)
            if unit is None:
                units[uid] = Victim([pi], pod_group_priority(group), pod_start_time_ns(pi), {ni.name})
            else:
                unit.pods.append(pi)
                unit.nodes.add(ni.name)
                unit.earliest_start = min(unit.earliest_start, pod_start_time_ns(pi))
    return list(units.values())


def split_by_pdb_violation(
    victims: Sequence[Victim], pdbs: Sequence[dict[str, Any]]
) -> tuple[list[Victim], list[Victim]]:
    """``filterVictimsWithPDBViolation``: a victim violates when any of its pods does (budgets spent in order)."""
    allowed = [int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) for pdb in pdbs]
    violating: list[Victim] = []
    non_violating: list[Victim] = []
    for victim in victims:
        if any(pdb_violated_by(pi, pdbs, allowed, stop_at_first=True) for pi in victim.pods):
            violating.append(victim)
        else:
            non_violating.append(victim)
    return violating, non_violating


@contextmanager
def backed_up(snapshot: Snapshot) -> Iterator[None]:
    """``BackupSnapshot``: the nodes replaced by copies that preemption may change, the originals put back after."""
    infos, by_name = snapshot.node_info_list, snapshot.node_info_map
    copies = [ni.clone() for ni in infos]
    snapshot.node_info_list = copies
    snapshot.node_info_map = {ni.name: ni for ni in copies}
    snapshot.generation += 1
    try:
        yield
    finally:
        snapshot.node_info_list, snapshot.node_info_map = infos, by_name
        snapshot.generation += 1


@dataclass
class PodGroupPreemption:
    """What workload-aware preemption decided: its status and the pods it deleted (``evicted_whole``: the PodGroups,
    ``namespace/name``, whose pods went as one victim)."""

    status: Status
    victims: list[PodInfo]
    evicted_whole: set[str] = field(default_factory=set)

    def record(self) -> dict[str, Any]:
        """The ``preemption`` key of the group's record (tests/golden/README.md)."""
        st = self.status
        return {
            "victims": sorted(pi.key for pi in self.victims),
            "status": "success" if st.is_success() else st.message(),
            "code": st.code.label,
        }

    def victims_record(self) -> list[dict[str, Any]]:
        """The victims as the gang's page shows them once they are gone (``podGroup`` record's
        ``preemptionVictims``, beside the golden-shaped ``preemption``): each pod, the node it ran on, its PodGroup
        and whether it went with the whole group (disruptionMode PodGroup)."""
        out = []
        for pi in sorted(self.victims, key=lambda p: p.key):
            group_name = str((pi.spec.get("schedulingGroup") or {}).get("podGroupName") or "")
            group = f"{pi.namespace}/{group_name}" if group_name else None
            out.append(
                {"pod": pi.key, "node": pi.node_name, "podGroup": group, "wholeGroup": group in self.evicted_whole}
            )
        return out


def preempt_pod_group(
    fwk: Framework,
    snapshot: Snapshot,
    namespace: str,
    name: str,
    pods: Sequence[PodInfo],
    group_feasible: Callable[[], Status],
) -> PodGroupPreemption:
    """``runWorkloadAwarePreemption`` for the group ``namespace/name`` whose queued ``pods`` were found
    unschedulable; ``group_feasible`` runs the group's algorithm (without PostFilter) on the snapshot as it is."""
    if not any(pl.name == "DefaultPreemption" for pl in fwk.post_filter):
        return PodGroupPreemption(Status(Code.UNSCHEDULABLE, MSG_NOT_REGISTERED), [])
    cluster = fwk.handle.cluster
    group = cluster.get_object(POD_GROUP_V1ALPHA2, namespace, name)
    if group is None:
        message = f'failed to get pod group object: podgroup.scheduling.k8s.io "{name}" not found'
        return PodGroupPreemption(Status(Code.ERROR, message), [])
    if ((group.get("spec") or {}).get("schedulingConstraints") or {}).get("topology"):
        return PodGroupPreemption(Status(Code.UNSCHEDULABLE, MSG_WITH_CONSTRAINTS), [])

    def group_of(pi: PodInfo) -> dict[str, Any] | None:
        group_name = (pi.spec.get("schedulingGroup") or {}).get("podGroupName")
        return cluster.get_object(POD_GROUP_V1ALPHA2, pi.namespace, str(group_name)) if group_name else None

    with backed_up(snapshot):
        st, chosen = _select_victims(snapshot, group, pods, group_of, cluster.pdbs, group_feasible)
    if not st.is_success():
        return PodGroupPreemption(st, [])
    whole = {
        f"{pi.namespace}/{(pi.spec.get('schedulingGroup') or {}).get('podGroupName')}"
        for pi in chosen
        if ((group_of(pi) or {}).get("spec") or {}).get("disruptionMode") == DISRUPTION_MODE_POD_GROUP
    }
    deleted: list[PodInfo] = []
    actions = fwk.handle.actions
    for victim in chosen:
        if (victim.pod.get("metadata") or {}).get("deletionTimestamp"):
            continue  # already being deleted
        deleted.append(victim)
        if actions is not None:
            done = actions.delete_victim(victim, pods[0], group)
            if not done.is_success():
                return PodGroupPreemption(Status(Code.ERROR, done.message()), deleted, whole)
    return PodGroupPreemption(Status(), deleted, whole)


def _select_victims(
    snapshot: Snapshot,
    group: dict[str, Any],
    pods: Sequence[PodInfo],
    group_of: Callable[[PodInfo], dict[str, Any] | None],
    pdbs: Sequence[dict[str, Any]],
    group_feasible: Callable[[], Status],
) -> tuple[Status, list[PodInfo]]:
    """``selectVictimsOnDomain`` on the (backed-up) snapshot: the pods to delete, most important first."""
    if any(pi.spec.get("preemptionPolicy") == "Never" for pi in pods):
        return Status(Code.UNSCHEDULABLE, MSG_NOT_ELIGIBLE_NEVER), []
    priority = pod_group_priority(group)
    potential = [v for v in victims_of(snapshot.node_info_list, group_of) if v.priority < priority]
    if not potential:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NO_VICTIMS), []
    by_name = snapshot.node_info_map

    def remove(victim: Victim) -> None:
        for pi in victim.pods:
            by_name[pi.node_name].remove_pod(pi)
        snapshot.generation += 1

    def add(victim: Victim) -> None:
        for pi in victim.pods:
            by_name[pi.node_name].add_pod(pi)
        snapshot.generation += 1

    for victim in potential:
        remove(victim)
    st = group_feasible()
    if not st.is_success():
        return st, []
    potential.sort(key=Victim.importance)
    violating, non_violating = split_by_pdb_violation(potential, pdbs)
    evicted: list[Victim] = []
    for victim in [*violating, *non_violating]:
        add(victim)
        if not group_feasible().is_success():
            remove(victim)
            evicted.append(victim)
    evicted.sort(key=Victim.importance)
    return Status(), [pi for victim in evicted for pi in victim.pods]
