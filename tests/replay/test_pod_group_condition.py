"""v1.36's PodGroup cycle in a replay (``--kube-version 1.36`` with GenericWorkload and GangScheduling): the
scheduling.k8s.io/v1alpha2 PodGroup is the scheduler's own kind, and each cycle's outcome is written on its
``PodGroupScheduled`` condition as kss serve writes it, the transition time on the virtual clock. At v1.37 (ported)
the same with a v1beta1 PodGroup, under the condition's v1.37 name."""

from __future__ import annotations

from typing import Any

import orjson

from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import kube_version
from kss_sim.replay.engine import Replay
from kss_sim.replay.workload import parse_workload
from kss_sim.scheduler.plugins.gang_scheduling import POD_GROUP_V1ALPHA2
from tests.replay.test_engine import by_name, node, pod

GATES = {"GenericWorkload": True, "GangScheduling": True}
EPOCH = "2026-04-22T00:00:00Z"


def _pod_group(name: str, min_count: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "generation": 1},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def _member(name: str, cpu: str, group: str = "gang") -> Obj:
    body = pod(name, cpu)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


def _replay(events: list[dict[str, Any]], start: list[Obj]) -> Replay:
    spec = {"epoch": EPOCH, "start": start, "events": events}
    doc = {"apiVersion": "kss.sigs.k8s.io/v1alpha1", "kind": "TimedWorkload", "metadata": {"name": "t"}, "spec": spec}
    return Replay(parse_workload(orjson.dumps(doc).decode()), feature_gates=GATES, kube_version=kube_version("1.36"))


def _conditions(run: Replay, name: str) -> list[dict[str, Any]]:
    group = run.cluster.get_object(POD_GROUP_V1ALPHA2, "default", name)
    assert group is not None
    return list((group.get("status") or {}).get("conditions") or [])


def test_a_gang_that_fits_is_bound_together_and_its_condition_says_scheduled_at_that_virtual_time() -> None:
    run = _replay(
        [{"at": 10, "create": _member("a", "1")}, {"at": 25, "create": _member("b", "1")}],
        [node("n1"), _pod_group("gang", 2)],
    )
    result = run.run()
    # One member short of minCount: no cycle until the second comes, then both bind at once.
    assert by_name(result)["a"].bound_at == 25.0 and by_name(result)["b"].bound_at == 25.0
    assert _conditions(run, "gang") == [
        {
            "type": "PodGroupScheduled",
            "status": "True",
            "reason": "Scheduled",
            "message": "",
            "observedGeneration": 1,
            "lastTransitionTime": "2026-04-22T00:00:25Z",
        }
    ]


def test_a_gang_that_cannot_fit_binds_none_and_its_condition_says_unschedulable() -> None:
    run = _replay(
        [{"at": 5, "create": _member("a", "3")}, {"at": 7, "create": _member("b", "3")}],
        [node("n1"), _pod_group("gang", 2)],
    )
    run.until = 60
    result = run.run()
    assert by_name(result)["a"].bound_at is None and by_name(result)["b"].bound_at is None
    (condition,) = _conditions(run, "gang")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["lastTransitionTime"] == "2026-04-22T00:00:07Z"  # the first cycle; later ones do not move it
    assert condition["message"] == "pod group is unschedulable"  # as kss serve says it (the members say why)


def test_a_scheduled_gang_is_not_turned_back_by_a_later_cycle() -> None:
    run = _replay(
        [
            {"at": 1, "create": _member("a", "1")},
            {"at": 2, "create": _member("b", "1")},
            {"at": 30, "create": _member("c", "9")},  # a third member that never fits
        ],
        [node("n1"), _pod_group("gang", 2)],
    )
    run.until = 40
    result = run.run()
    assert by_name(result)["c"].bound_at is None
    (condition,) = _conditions(run, "gang")
    assert (condition["status"], condition["lastTransitionTime"]) == ("True", "2026-04-22T00:00:02Z")


def test_at_v1_37_a_v1beta1_gang_is_the_same_and_its_condition_is_named_initially_scheduled() -> None:
    group = {**_pod_group("gang", 2), "apiVersion": "scheduling.k8s.io/v1beta1"}
    group["spec"] = {**group["spec"], "disruptionMode": {"all": {}}}
    spec = {
        "epoch": EPOCH,
        "start": [node("n1"), group],
        "events": [{"at": 10, "create": _member("a", "1")}, {"at": 25, "create": _member("b", "1")}],
    }
    doc = {"apiVersion": "kss.sigs.k8s.io/v1alpha1", "kind": "TimedWorkload", "metadata": {"name": "t"}, "spec": spec}
    run = Replay(
        parse_workload(orjson.dumps(doc).decode()),
        feature_gates={"GenericWorkload": True},  # GangScheduling went into it at v1.37
        kube_version=kube_version("1.37"),
    )
    result = run.run()
    assert by_name(result)["a"].bound_at == 25.0 and by_name(result)["b"].bound_at == 25.0
    stored = run.cluster.get_object(POD_GROUP_V1ALPHA2, "default", "gang")
    assert stored is not None and stored["spec"]["disruptionMode"] == "PodGroup"  # held in v1.36's form
    assert [(c["type"], c["status"]) for c in _conditions(run, "gang")] == [("PodGroupInitiallyScheduled", "True")]
