"""The engine survives any stored object (issue #35): a malformed node fails Filter for the plugin reading the wrong
field, a plugin raising on one node fails that node only, a malformed pod gets an Error attempt, and every other
node and pod schedules on."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import FilterPlugin, Handle, Status, success
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins import register
from kss_sim.scheduler.pod_shape import pod_defect
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.snapshot import Snapshot
from tests.scheduler.factories import make_node, make_pod


def scheduler_for(nodes: list[dict[str, Any]], config: dict[str, Any] | None = None) -> tuple[Scheduler, Any]:
    cache = SchedulerCache()
    for node in nodes:
        cache.add_node(node)
    cfg = parse_config(config)
    handle = Handle(ClusterObjects())
    fwks = {p.scheduler_name: build_framework(p, handle) for p in cfg.profiles}
    return Scheduler(fwks, cache.snapshot, cache=cache), cache


def schedule(sched: Scheduler, pod: dict[str, Any], *, batch: bool, record: bool) -> Any:
    opts = ScheduleOptions(record=record, tie_break="name", run_binding_cycle=False, batch=batch)
    return sched.schedule_one(PodInfo(pod), 1, opts)


def with_status(node: dict[str, Any], **status: Any) -> dict[str, Any]:
    node["status"].update(status)
    return node


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("record", [True, False])
@pytest.mark.parametrize("cpu", ["1e1000", "9223372036854775808", "9223372036854775807"])
def test_a_node_with_a_cpu_beyond_int64_has_go_s_millicores_and_others_schedule(
    cpu: str, batch: bool, record: bool
) -> None:
    # Pods with (anti-)affinity make InterPodAffinity's PreFilter read every node's columns (the issue's
    # OverflowError).
    sched, _ = scheduler_for([make_node(name="big", allocatable={"cpu": cpu}), make_node(name="good")])
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    for i in range(3):
        pod = make_pod(name=f"p{i}", labels={"app": f"a{i}"}, requests={"cpu": "100m"}, affinity=affinity)
        att = schedule(sched, pod, batch=batch, record=record)
        assert (att.result, att.selected) == ("scheduled", ["good"]), att.message
    # kube-scheduler's MilliValue of each is 0 (1e1000, 2^63) or -1000 (2^63-1): nothing requesting cpu fits.
    assert sched.snapshot.get("big").allocatable.milli_cpu in (0, -1000)  # type: ignore[union-attr]


MALFORMED = [
    ({"status": {"images": "x"}}, "ImageLocality", "status.images: must be an array, not string"),
    ({"status": {"images": [{"names": "x", "sizeBytes": 1}]}}, "ImageLocality", "status.images: [0].names"),
    ({"status": {"images": [5]}}, "ImageLocality", "status.images: [0]: must be an object, not number"),
    ({"status": {"images": [{"names": ["a"], "sizeBytes": "9"}]}}, "ImageLocality", "[0].sizeBytes"),
    ({"status": {"allocatable": "x"}}, "NodeResourcesFit", "status.allocatable: must be an object, not string"),
    ({"status": {"allocatable": {"cpu": "lots"}}}, "NodeResourcesFit", "status.allocatable: cpu: not a quantity"),
    ({"metadata": {"labels": {"zone": 5}}}, "NodeAffinity", "metadata.labels: zone: must be a string, not number"),
    ({"metadata": {"labels": ["a"]}}, "NodeAffinity", "metadata.labels: must be an object, not array"),
    ({"spec": {"taints": "x"}}, "TaintToleration", "spec.taints: must be an array, not string"),
    ({"spec": {"taints": [{"key": 1, "effect": "NoSchedule"}]}}, "TaintToleration", "spec.taints: [0].key"),
    ({"spec": {"unschedulable": "yes"}}, "NodeUnschedulable", "spec.unschedulable: must be a boolean, not string"),
    ({"spec": "x"}, "NodeUnschedulable", "spec: must be an object, not string"),
    ({"status": 7}, "NodeResourcesFit", "status: must be an object, not number"),
]


def malformed(patch: dict[str, Any]) -> dict[str, Any]:
    node = make_node(name="bad")
    for section, value in patch.items():
        if isinstance(value, dict) and isinstance(node.get(section), dict):
            node[section] = {**node[section], **value}
            if section == "metadata" and "labels" in value:
                node[section]["labels"] = value["labels"]
        else:
            node[section] = value
    return node


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("record", [True, False])
@pytest.mark.parametrize(("patch", "plugin", "problem"), MALFORMED)
def test_a_malformed_node_fails_for_the_plugin_reading_the_field_and_the_pod_schedules_elsewhere(
    patch: dict[str, Any], plugin: str, problem: str, batch: bool, record: bool
) -> None:
    good = with_status(make_node(name="good"), images=[{"names": ["img:1"], "sizeBytes": 10}])
    sched, cache = scheduler_for([malformed(patch), good, make_node(name="other")])
    att = schedule(sched, make_pod(name="p", requests={"cpu": "100m"}), batch=batch, record=record)
    assert att.result == "scheduled", att.message
    assert att.selected != ["bad"] and "bad" not in att.selected
    assert att.filter_fail["bad"].startswith(f"{plugin}: node(s) had a malformed object: ")
    assert problem in att.filter_fail["bad"]
    if record:
        assert problem in att.filter["bad"][plugin]
    # The stored node is untouched; the engine reads a copy without the wrong field.
    assert cache.snapshot.get("bad").defect is not None  # type: ignore[union-attr]
    # Reported for a Warning Event on the node once, not by every attempt.
    assert [(kind, name) for kind, _, name, _ in att.malformed_objects] == [("Node", "bad")]
    assert problem in att.malformed_objects[0][3]
    again = schedule(sched, make_pod(name="q", requests={"cpu": "100m"}), batch=batch, record=record)
    assert again.result == "scheduled" and again.malformed_objects == []
    cache.update_node(malformed(patch))  # a new version of the node is reported again
    third = schedule(sched, make_pod(name="r", requests={"cpu": "100m"}), batch=batch, record=record)
    assert [name for _, _, name, _ in third.malformed_objects] == ["bad"]


def test_a_malformed_node_alone_leaves_the_pod_unschedulable_with_the_problem_in_the_fit_error() -> None:
    sched, _ = scheduler_for([malformed({"status": {"images": "x"}})])
    att = schedule(sched, make_pod(name="p"), batch=True, record=False)
    assert att.result == "unschedulable"
    assert "1 node(s) had a malformed object: status.images: must be an array, not string" in att.message


def test_node_shape_returns_a_well_formed_node_itself_and_a_copy_otherwise() -> None:
    node = make_node(name="n")
    assert NodeInfo(node).node is node and NodeInfo(node).defect is None
    bad = malformed({"status": {"images": "x"}})
    ni = NodeInfo(bad)
    assert bad["status"]["images"] == "x" and "images" not in ni.node["status"]
    assert ni.clone().defect == ni.defect


def test_snapshot_build_and_image_states_skip_a_malformed_images_field() -> None:
    good = with_status(make_node(name="good"), images=[{"names": ["img:1"], "sizeBytes": 10}])
    snap = Snapshot.build([malformed({"status": {"images": "x"}}), good], [])
    assert snap.any_defective()
    assert snap.get("good").image_states["img:1"].num_nodes == 1  # type: ignore[union-attr]
    snap.refresh_image_states()


class RaisesOnOneNode(FilterPlugin):
    """Raises on the node named ``bad``, as a plugin meeting data it cannot read would."""

    name = "KssTestRaisesOnOneNode"

    def filter(self, state: Any, pod: PodInfo, node_info: Any) -> Status:
        if node_info.name == "bad":
            raise KeyError("spec")
        return success()


register(RaisesOnOneNode)


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("record", [True, False])
def test_a_filter_plugin_raising_on_one_node_fails_that_node_only(
    batch: bool, record: bool, caplog: pytest.LogCaptureFixture
) -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": RaisesOnOneNode.name}]}}}
        ],
    }
    sched, _ = scheduler_for([make_node(name="bad"), make_node(name="good")], config)
    with caplog.at_level(logging.ERROR, "kss.scheduler"):
        for i in range(2):
            att = schedule(sched, make_pod(name=f"p{i}"), batch=batch, record=record)
            assert (att.result, att.selected) == ("scheduled", ["good"]), att.message
            assert (
                att.filter_fail["bad"]
                == f"{RaisesOnOneNode.name}: running \"{RaisesOnOneNode.name}\" filter plugin: KeyError: 'spec'"
            )
    assert len([r for r in caplog.records if r.exc_info]) == 2  # once per cycle, not once per node


@pytest.mark.parametrize(
    ("patch", "problem"),
    [
        ({"metadata": {"ownerReferences": "x"}}, "metadata.ownerReferences: must be an array, not string"),
        ({"spec": {"tolerations": [{"key": 5}]}}, "spec.tolerations[0].key: must be a string, not number"),
        ({"spec": {"nodeSelector": "x"}}, "spec.nodeSelector: must be an object, not string"),
        ({"spec": {"containers": "x"}}, "spec.containers: must be an array, not string"),
        ({"spec": {"priority": "high"}}, "spec.priority: must be an integer, not string"),
        ({"status": {"conditions": ["x"]}}, "status.conditions[0]: must be an object, not string"),
    ],
)
def test_a_malformed_pod_gets_an_error_attempt_and_the_next_pod_schedules(patch: dict[str, Any], problem: str) -> None:
    sched, _ = scheduler_for([make_node(name="n1")])
    pod = make_pod(name="bad")
    for section, value in patch.items():
        pod.setdefault(section, {}).update(value)
    att = schedule(sched, pod, batch=True, record=False)
    assert (att.result, att.message) == ("error", f"pod has a malformed object: {problem}")
    good = schedule(sched, make_pod(name="good"), batch=True, record=False)
    assert good.result == "scheduled"


def test_of_two_malformed_fields_the_first_checked_is_reported_whatever_the_objects_order() -> None:
    # The object lists the fields in the reverse of the checks' order (priority, nodeSelector, containers; spec
    # after metadata): the check walks the fields set, then the checks in order.
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": 5}], "nodeSelector": "x", "priority": "high"}
    pod: dict[str, Any] = {"spec": spec, "metadata": {"uid": 7, "name": "p", "namespace": "default"}}
    assert pod_defect(pod) == "pod has a malformed object: metadata.uid: must be a string, not number"
    pod["metadata"]["uid"] = "u"
    assert pod_defect(pod) == "pod has a malformed object: spec.priority: must be an integer, not string"
    spec["priority"] = 1
    assert pod_defect(pod) == "pod has a malformed object: spec.nodeSelector: must be an object, not string"
    spec["nodeSelector"] = {"a": "b"}
    assert pod_defect(pod) == "pod has a malformed object: spec.containers[0].image: must be a string, not number"
    spec["containers"][0]["image"] = "i"
    assert pod_defect(pod) is None


def test_a_malformed_bound_pod_is_left_out_of_its_node() -> None:
    sched, cache = scheduler_for([make_node(name="n1")])
    bound = make_pod(name="bound", node_name="n1")
    bound["spec"]["containers"][0]["ports"] = "x"
    cache.add_pod(PodInfo(bound))
    assert cache.snapshot.get("n1").pods == []  # type: ignore[union-attr]
    assert schedule(sched, make_pod(name="p"), batch=True, record=False).result == "scheduled"


def test_snapshot_build_leaves_a_malformed_bound_pod_out() -> None:
    bound = make_pod(name="bound", node_name="n1")
    bound["spec"]["containers"][0]["resources"] = {"requests": {"cpu": ["1"]}}
    snap = Snapshot.build([make_node(name="n1")], [bound, make_pod(name="ok", node_name="n1")])
    assert [pi.name for pi in snap.get("n1").pods] == ["ok"]  # type: ignore[union-attr]


def test_a_cycle_that_raises_is_an_error_attempt_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sched, _ = scheduler_for([make_node(name="n1")])

    def broken(*args: Any) -> None:
        raise AttributeError("'str' object has no attribute 'get'")

    monkeypatch.setattr(sched, "_schedule", broken)
    with caplog.at_level(logging.ERROR, "kss.scheduler"):
        for i in range(3):
            att = schedule(sched, make_pod(name=f"p{i}"), batch=True, record=False)
            assert (att.result, att.message) == ("error", "AttributeError: 'str' object has no attribute 'get'")
    assert len([r for r in caplog.records if r.exc_info]) == 1
    monkeypatch.undo()
    assert schedule(sched, make_pod(name="later"), batch=True, record=False).result == "scheduled"
