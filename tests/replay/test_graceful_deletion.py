"""Deletions in a replay end as on a cluster: a bound pod deleted (by its controller, the garbage collector, a delete
event, its ``endAt``, a preemption) gets ``deletionTimestamp`` and terminates for its grace period on the virtual
clock, holding its node, while its controller counts it gone; a pod that runs its time Succeeds and holds nothing."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.objects import Obj
from kss_sim.replay.engine import Replay
from kss_sim.replay.model import DELETED, PREEMPTED, RUNNING
from kss_sim.replay.workload import WorkloadError, event_document
from tests.replay.test_engine import node, pod, workload


def _deployment(name: str, replicas: int, cpu: str, **template_spec: Any) -> Obj:
    template = {"metadata": {"labels": {"app": name}}, "spec": pod("x", cpu, **template_spec)["spec"]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template},
    }


def _owned(pods: list[Any], prefix: str) -> list[Any]:
    return sorted((p for p in pods if p.owner.startswith(prefix)), key=lambda p: (p.arrival, p.key))


def test_a_scaled_down_deployments_pod_holds_its_node_for_its_grace_period() -> None:
    w = workload(
        [
            {"at": 0, "create": _deployment("web", 2, "2", terminationGracePeriodSeconds=45)},
            {"at": 10, "update": _deployment("web", 1, "2", terminationGracePeriodSeconds=45)},
            {"at": 10, "create": pod("next", "2")},
        ]
    )
    run = Replay(w)
    pods = run.run().pods
    web = _owned(pods, "ReplicaSet/")
    assert sorted((p.outcome, p.terminating_at, p.finished_at) for p in web) == [
        (DELETED, 10.0, 55.0),
        (RUNNING, None, None),
    ]
    (nxt,) = [p for p in pods if p.key == "default/next"]
    assert nxt.bound_at == 55.0  # 4 CPUs: room for it only once the deleted pod's kubelet ended it
    assert run.controllers is not None
    assert sorted(p["metadata"]["name"].startswith("web-") for p in run.controllers.store.list("Pod")[0]) == [
        False,
        True,
    ]  # next, and the one web pod left: the deleted one left the store when its kubelet ended it


def test_a_deleted_deployments_pods_terminate_after_the_garbage_collector_deletes_them() -> None:
    w = workload(
        [
            {"at": 0, "create": _deployment("web", 2, "2")},
            {"at": 10, "delete": {"kind": "Deployment", "name": "web"}},
            {"at": 10, "create": pod("next", "4")},
        ]
    )
    run = Replay(w)
    pods = run.run().pods
    web = _owned(pods, "ReplicaSet/")
    assert [(p.terminating_at, p.finished_at, p.outcome) for p in web] == [(10.0, 40.0, DELETED)] * 2
    assert [p.bound_at for p in pods if p.key == "default/next"] == [40.0]
    assert run.controllers is not None
    assert [p["metadata"]["name"] for p in run.controllers.store.list("Pod")[0]] == ["next"]


def test_a_preempted_deployment_pod_is_replaced_at_once_and_holds_its_node_until_its_grace_ends() -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 9}
    w = workload(
        [
            {"at": 0, "create": _deployment("web", 1, "3", terminationGracePeriodSeconds=20)},
            {"at": 10, "create": pod("urgent", "3", priorityClassName="high")},
        ],
        start=[node("n1"), high],
    )
    run = Replay(w)
    assert run.controllers is not None
    deleting: list[Obj] = []
    run.controllers.store.add_listener(
        lambda _event, _kind, obj: deleting.append(obj) if obj["metadata"].get("deletionTimestamp") else None, ("Pod",)
    )
    pods = run.run().pods
    victim, replacement = _owned(pods, "ReplicaSet/")
    assert (victim.preemptions, victim.terminating_at, victim.finished_at, victim.outcome) == (1, 10.0, 30.0, PREEMPTED)
    assert (replacement.arrival, replacement.bound_at) == (10.0, None)  # made at once, as the victim is counted gone
    assert [p.bound_at for p in pods if p.key == "default/urgent"] == [30.0]
    conditions = {c["type"]: c for c in deleting[0]["status"]["conditions"]}
    assert conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
    assert deleting[0]["metadata"]["deletionGracePeriodSeconds"] == 20


def test_a_pod_deleted_on_a_node_without_a_kubelet_stays_terminating_until_the_node_is_ready() -> None:
    w = workload(
        [
            {"at": 0, "create": pod("p", "3")},
            {"at": 10, "failNode": {"node": "n1", "notReady": True}},
            {"at": 20, "delete": {"kind": "Pod", "name": "p"}},
            {"at": 100, "healNode": "n1"},
        ]
    )
    (p,) = Replay(w).run().pods
    assert (p.terminating_at, p.finished_at, p.outcome) == (20.0, 100.0, DELETED)


def test_a_pod_bound_to_a_node_that_does_not_exist_is_collected_after_the_pod_gc_quarantine() -> None:
    w = workload(
        [
            {"at": 0, "create": pod("ghost", nodeName="no-such-node")},
            {"at": 0, "create": pod("early", nodeName="late-node")},
            {"at": 30, "create": node("late-node")},  # within the quarantine: its pod stays
        ]
    )
    pods = {p.key: p for p in Replay(w, until=120).run().pods}
    ghost, early = pods["default/ghost"], pods["default/early"]
    assert (ghost.terminating_at, ghost.finished_at, ghost.outcome) == (None, 40.0, DELETED)
    assert (early.finished_at, early.outcome) == (None, RUNNING)


def test_a_delete_event_may_give_its_own_grace_period_as_kubectl_delete_does() -> None:
    """``gracePeriodSeconds`` on a delete event: 0 takes the pod away at once (a recorded departure, whose grace ran
    in the source), 5 shortens the pod's own 30 s, and it survives the workload file's round trip."""
    events: list[dict[str, Any]] = [
        {"at": 0, "create": pod("gone", "1")},
        {"at": 0, "create": pod("short", "1")},
        {"at": 0, "create": pod("own", "1")},
        {"at": 10, "delete": {"kind": "Pod", "name": "gone", "gracePeriodSeconds": 0}},
        {"at": 10, "delete": {"kind": "Pod", "name": "short", "gracePeriodSeconds": 5}},
        {"at": 10, "delete": {"kind": "Pod", "name": "own"}},
    ]
    w = workload(events)
    pods = {p.key.split("/")[1]: p for p in Replay(w).run().pods}
    assert [(n, pods[n].terminating_at, pods[n].finished_at) for n in ("gone", "short", "own")] == [
        ("gone", None, 10.0),
        ("short", 10.0, 15.0),
        ("own", 10.0, 40.0),
    ]
    deletes = [event_document(e)["delete"] for e in w.events if e.action == "delete"]
    assert [d.get("gracePeriodSeconds") for d in deletes] == [0, 5, None]


def test_a_delete_events_grace_period_must_be_seconds() -> None:
    with pytest.raises(WorkloadError, match="gracePeriodSeconds must be a number of seconds >= 0"):
        workload([{"at": 10, "delete": {"kind": "Pod", "name": "p", "gracePeriodSeconds": -1}}])
