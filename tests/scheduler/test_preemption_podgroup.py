"""Workload-aware preemption's own rules (preemption_podgroup.py): what a victim is, which is more important, how
PodDisruptionBudgets split them, and that the snapshot comes back as it was. The whole path is measured against
kube-scheduler v1.36 by the golden family v1.36/gangpreemption."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.preemption_podgroup import Victim, backed_up, split_by_pdb_violation, victims_of
from kss_sim.scheduler.snapshot import Snapshot
from tests.scheduler.factories import make_node, make_pdb, make_pod


def running(name: str, node: str, minute: int, *, group: str | None = None, priority: int = 0, **kw: Any) -> PodInfo:
    spec = {"schedulingGroup": {"podGroupName": group}} if group else {}
    pod = make_pod(name=name, node_name=node, priority=priority, requests={"cpu": "1"}, spec=spec, **kw)
    pod["status"] = {"phase": "Running", "startTime": f"2025-01-12T12:{minute:02d}:00Z"}
    return PodInfo(pod)


def pod_group(name: str, mode: str, priority: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-pg-{name}"},
        "spec": {"disruptionMode": mode, "priority": priority},
    }


def lookup(groups: dict[str, dict[str, Any]]) -> Callable[[PodInfo], dict[str, Any] | None]:
    """The PodGroup a pod names, from ``groups``."""
    return lambda pi: groups.get((pi.spec.get("schedulingGroup") or {}).get("podGroupName") or "")


def snapshot_of(pods: list[PodInfo]) -> Snapshot:
    return Snapshot.build([make_node(name=f"n{i}") for i in range(3)], [p.pod for p in pods])


def test_a_pod_group_disrupted_as_one_is_one_victim_at_its_groups_priority() -> None:
    pods = [running("a-0", "n0", 1, group="a"), running("a-1", "n1", 2, group="a"), running("solo", "n2", 3)]
    groups = {"a": pod_group("a", "PodGroup", priority=7)}
    victims = victims_of(snapshot_of(pods).node_info_list, lookup(groups))
    by_size = sorted(victims, key=lambda v: len(v.pods))
    assert [[p.name for p in v.pods] for v in by_size] == [["solo"], ["a-0", "a-1"]]
    assert by_size[1].priority == 7 and by_size[1].nodes == {"n0", "n1"}
    # In Pod mode each pod is its own victim, at its own priority.
    groups["a"] = pod_group("a", "Pod", priority=7)
    victims = victims_of(snapshot_of(pods).node_info_list, lookup(groups))
    assert sorted(len(v.pods) for v in victims) == [1, 1, 1]
    assert {v.priority for v in victims} == {0}


def test_more_important_victims_sort_first() -> None:
    old, young = running("old", "n0", 1), running("young", "n1", 2)
    big = Victim([running("g-0", "n0", 5, group="g"), running("g-1", "n1", 6, group="g")], 0, 5)
    small = Victim([running("h-0", "n2", 4, group="h")], 0, 4)
    high = Victim([running("high", "n2", 9, priority=5)], 5, 9)
    units = [Victim([young], 0, 2), Victim([old], 0, 1), small, big, high]
    order = sorted(units, key=Victim.importance)
    # Priority first, then a pod of a group before a plain pod, more pods first, then the earlier start.
    assert [v.pods[0].name for v in order] == ["high", "g-0", "h-0", "old", "young"]


def test_a_victim_breaks_a_budget_when_any_of_its_pods_does() -> None:
    guarded = {"app": "guarded"}
    first = Victim([running("g-0", "n0", 1, labels=guarded)], 0, 1)
    second = Victim([running("free", "n1", 2), running("g-1", "n1", 3, labels=guarded)], 0, 2)
    third = Victim([running("free-2", "n2", 4)], 0, 4)
    violating, fine = split_by_pdb_violation(
        [first, second, third], [make_pdb(match_labels=guarded, disruptions_allowed=1)]
    )
    # The budget allows one disruption: the first guarded pod spends it, the second breaks it.
    assert violating == [second] and fine == [first, third]


def test_the_snapshot_is_given_back_after_a_backup() -> None:
    pods = [running("a", "n0", 1)]
    snapshot = snapshot_of(pods)
    before = snapshot.node_info_map["n0"]
    with backed_up(snapshot):
        copy = snapshot.node_info_map["n0"]
        assert copy is not before
        copy.remove_pod(pods[0])
        assert not copy.pods
    assert snapshot.node_info_map["n0"] is before and [p.name for p in before.pods] == ["a"]
