"""DefaultBinder: delegates to the cluster's pod actions."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import Code, CycleState, Handle, PodActions, Status, success, unschedulable
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.default_binder import DefaultBinder
from tests.scheduler.factories import make_pod, pod_info


class _Actions(PodActions):
    def __init__(self, result: Status) -> None:
        self.result = result
        self.bound: list[tuple[str, str]] = []

    def bind(self, pod: PodInfo, node_name: str) -> Status:
        self.bound.append((pod.key, node_name))
        return self.result

    def delete_victim(self, victim: PodInfo, preemptor: PodInfo, preempting_group: Any = None) -> Status:
        raise AssertionError("not used")

    def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        raise AssertionError("not used")


def test_bind_asks_the_cluster_and_returns_its_status() -> None:
    actions = _Actions(success())
    st = DefaultBinder(Handle(ClusterObjects(), actions), {}).bind(CycleState(), pod_info(make_pod(name="p")), "n1")
    assert st.code == Code.SUCCESS
    assert actions.bound == [("default/p", "n1")]
    failing = _Actions(unschedulable("conflict"))
    st = DefaultBinder(Handle(ClusterObjects(), failing), {}).bind(CycleState(), pod_info(make_pod()), "n1")
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE, "conflict")


def test_bind_without_cluster_actions_is_an_error() -> None:
    st = DefaultBinder(Handle(ClusterObjects()), {}).bind(CycleState(), pod_info(make_pod()), "n1")
    assert st.code == Code.ERROR
