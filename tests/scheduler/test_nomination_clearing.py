"""A failed attempt's nomination as kube-scheduler's handleSchedulingFailure is given it (its NominatingInfo): kept
when PostFilter changed nothing, cleared (``clearNominatedNode``) after an error, a Reserve or Permit failure, a
preemption that found no candidate, and, from v1.35, when the profile has no PostFilter plugin. The loop driven
directly, its pods' status written as the offline hosts write it."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.cycle import ScheduleOptions
from kss_sim.scheduler.framework import Code, CycleState, PermitPlugin, ReservePlugin, Status
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.loop import LoopWriter, SchedulingLoop, failure_nomination
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import register
from kss_sim.scheduler.record import Attempt
from tests.scheduler.factories import make_node, make_pod


@register
class KssTestRefuseReserve(ReservePlugin):
    """Rejects at Reserve every pod labelled ``refuse-reserve``."""

    name = "KssTestRefuseReserve"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if "refuse-reserve" in pod.labels:
            return Status(Code.UNSCHEDULABLE, "refused at Reserve")
        return Status()


@register
class KssTestRefusePermit(PermitPlugin):
    """Rejects at Permit every pod labelled ``refuse-permit``."""

    name = "KssTestRefusePermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if "refuse-permit" in pod.labels:
            return Status(Code.UNSCHEDULABLE, "refused at Permit"), 0
        return Status(), 0


class PodWriter(LoopWriter):
    """An offline host's writer: nominations written into the pod, bindings refused while ``refuse`` is set."""

    def __init__(self) -> None:
        self.refuse: str | None = None

    def write_binding(self, pod: PodInfo, att: Attempt, current: dict[str, Any]) -> str | None:
        return self.refuse

    def scheduled(self, pod: PodInfo, att: Attempt) -> None:
        pass

    def unschedulable(self, pod: PodInfo, att: Attempt) -> None:
        pass

    def pod_after_wait(self, pod: PodInfo) -> dict[str, Any] | None:
        return pod.pod

    def record_nomination(self, pod: PodInfo, node_name: str) -> None:
        pod.pod.setdefault("status", {})["nominatedNodeName"] = node_name

    def bind(self, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def delete_victim(self, victim: PodInfo, preemptor: PodInfo, preempting_group: Any = None) -> Status:
        return Status()  # the victim stays (terminating, as without a kubelet)


def _loop(
    config: dict[str, Any] | None = None, version: str = "1.35", gates: dict[str, bool] | None = None
) -> tuple[SchedulingLoop, PodWriter]:
    writer = PodWriter()
    parsed = parse_config(config, gates, version=kube_version(version))
    loop = SchedulingLoop(
        parsed, writer, clock=lambda: 0.0, options=ScheduleOptions(tie_break="name"), seed=1, feature_gates=gates
    )
    return loop, writer


def _schedule(loop: SchedulingLoop, pod: PodInfo) -> Attempt:
    """``pod`` (added to the queue or already there) popped and tried once."""
    qpi = loop.queue.pop_specific(pod.key)
    if qpi is None:
        loop.add_unscheduled_pod(pod)
        qpi = loop.queue.pop_specific(pod.key)
    assert qpi is not None
    return loop.schedule(qpi, pod, qpi.attempts)


def _nominated(loop: SchedulingLoop, node: str) -> list[str]:
    return [p.key for p in loop.handles[0].nominated_pods_for_node(node)]


def _nominate(loop: SchedulingLoop, pod: PodInfo, node: str) -> None:
    """The pod nominated to ``node`` by an earlier cycle (its status and the nominator)."""
    loop.nominate(pod, node)
    assert pod.pod["status"]["nominatedNodeName"] == node and _nominated(loop, node) == [pod.key]


def test_a_preemptor_that_no_longer_finds_candidates_loses_its_nomination() -> None:
    """DefaultPreemption's PostFilter returns a result with no node when it finds no candidate
    (NewPostFilterResultWithNominatedNode("")): the pod's status and the nominator lose its old nomination."""
    loop, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    loop.add_assigned_pod(PodInfo(make_pod(name="victim", node_name="n1", priority=0, requests={"cpu": "2"})))
    preemptor = PodInfo(make_pod(name="preemptor", priority=10, requests={"cpu": "2"}))

    first = _schedule(loop, preemptor)
    assert first.result == "unschedulable" and first.nominated_node == "n1"
    assert preemptor.pod["status"]["nominatedNodeName"] == "n1" and _nominated(loop, "n1") == ["default/preemptor"]

    # The node is tainted meanwhile: no node can be made to fit by preemption any more.
    loop.handle("MODIFIED", "Node", make_node(name="n1", allocatable={"cpu": "2"},
                                              taints=[{"key": "k", "effect": "NoSchedule"}]))  # fmt: skip
    second = _schedule(loop, preemptor)

    assert second.result == "unschedulable" and second.nominated_node is None
    assert second.postfilter_clears_nomination and failure_nomination(second) == ""
    assert "nominatedNodeName" not in preemptor.pod["status"]
    assert _nominated(loop, "n1") == []


def test_a_postfilter_that_changes_nothing_keeps_the_nomination() -> None:
    """A pod not eligible to preempt (preemptionPolicy Never) gets no PostFilter result (ModeNoop): an earlier
    nomination stays in its status and the nominator."""
    loop, _ = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    loop.add_assigned_pod(PodInfo(make_pod(name="other", node_name="n1", priority=0, requests={"cpu": "2"})))
    pod = PodInfo(make_pod(name="never", priority=10, requests={"cpu": "2"}, spec={"preemptionPolicy": "Never"}))
    _nominate(loop, pod, "n1")

    att = _schedule(loop, pod)

    assert att.result == "unschedulable" and failure_nomination(att) is None
    assert pod.pod["status"]["nominatedNodeName"] == "n1" and _nominated(loop, "n1") == ["default/never"]


@pytest.mark.parametrize(
    ("plugin", "point", "label"),
    [("KssTestRefuseReserve", "reserve", "refuse-reserve"), ("KssTestRefusePermit", "permit", "refuse-permit")],
)
def test_a_reserve_or_permit_failure_clears_the_nomination(plugin: str, point: str, label: str) -> None:
    config = {"profiles": [{"schedulerName": "default-scheduler", "plugins": {point: {"enabled": [{"name": plugin}]}}}]}
    loop, _ = _loop(config)
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    pod = PodInfo(make_pod(name="p", requests={"cpu": "1"}, labels={label: ""}))
    _nominate(loop, pod, "n1")

    att = _schedule(loop, pod)

    assert att.result == "unschedulable" and att.suggested_host == "n1"
    assert failure_nomination(att) == ""
    assert "nominatedNodeName" not in pod.pod["status"] and _nominated(loop, "n1") == []


@pytest.mark.parametrize(("version", "kept"), [("1.34", True), ("1.35", False)])
def test_with_nominated_node_name_for_expectation_v1_34_keeps_the_nomination_on_failure(
    version: str, kept: bool
) -> None:
    """v1.34's alpha NominatedNodeNameForExpectation: newFailureNominatingInfo is nil, so a Reserve failure (or an
    error, a refused binding) leaves the nomination; v1.35, where the gate is beta, clears it again."""
    plugins = {"reserve": {"enabled": [{"name": "KssTestRefuseReserve"}]}}
    config = {"profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]}
    loop, _ = _loop(config, version, {"NominatedNodeNameForExpectation": True})
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    pod = PodInfo(make_pod(name="p", requests={"cpu": "1"}, labels={"refuse-reserve": ""}))
    _nominate(loop, pod, "n1")

    att = _schedule(loop, pod)

    assert att.result == "unschedulable" and failure_nomination(att) == (None if kept else "")
    assert ("nominatedNodeName" in pod.pod["status"]) is kept
    assert _nominated(loop, "n1") == (["default/p"] if kept else [])


def test_with_nominated_node_name_for_expectation_v1_34_preemption_without_candidate_still_clears() -> None:
    """PostFilter's own clearing (no candidate) is its result's NominatingInfo, not newFailureNominatingInfo."""
    loop, _ = _loop(version="1.34", gates={"NominatedNodeNameForExpectation": True})
    loop.handle(
        "ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}, taints=[{"key": "k", "effect": "NoSchedule"}])
    )
    pod = PodInfo(make_pod(name="p", priority=10, requests={"cpu": "1"}))
    _nominate(loop, pod, "n1")

    att = _schedule(loop, pod)

    assert att.result == "unschedulable" and att.keeps_nomination and failure_nomination(att) == ""
    assert "nominatedNodeName" not in pod.pod["status"] and _nominated(loop, "n1") == []


def test_a_refused_binding_clears_the_nomination() -> None:
    """A failed binding cycle hands the failure handler clearNominatedNode (handleBindingCycleError)."""
    loop, writer = _loop()
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    pod = PodInfo(make_pod(name="p", requests={"cpu": "1"}))
    _nominate(loop, pod, "n1")
    writer.refuse = "the pod is being deleted"

    att = _schedule(loop, pod)

    assert att.result == "error"
    assert "nominatedNodeName" not in pod.pod["status"] and _nominated(loop, "n1") == []


@pytest.mark.parametrize(("version", "kept"), [("1.33", True), ("1.34", True), ("1.35", False), ("1.36", False)])
def test_without_postfilter_plugins_the_nomination_is_cleared_from_v1_35(version: str, kept: bool) -> None:
    """No PostFilter plugin: v1.33 and v1.34 return an empty ScheduleResult (the nomination kept), v1.35 on
    clearNominatedNode."""
    config = {"profiles": [{"schedulerName": "default-scheduler",
                            "plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}]}  # fmt: skip
    loop, _ = _loop(config, version)
    loop.handle("ADDED", "Node", make_node(name="n1", allocatable={"cpu": "2"}))
    loop.add_assigned_pod(PodInfo(make_pod(name="other", node_name="n1", requests={"cpu": "2"})))
    pod = PodInfo(make_pod(name="p", priority=10, requests={"cpu": "2"}))
    _nominate(loop, pod, "n1")

    att = _schedule(loop, pod)

    assert att.result == "unschedulable" and att.postfilter is None
    assert ("nominatedNodeName" in pod.pod["status"]) is kept
    assert _nominated(loop, "n1") == (["default/p"] if kept else [])
