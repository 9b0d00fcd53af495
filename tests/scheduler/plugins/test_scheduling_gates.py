"""SchedulingGates: gated pods wait with upstream's message."""

from __future__ import annotations

from kss_sim.scheduler.framework import Code
from kss_sim.scheduler.plugins.scheduling_gates import SchedulingGates
from tests.scheduler.factories import make_handle, make_pod, pod_info


def test_ungated_pod_is_admitted() -> None:
    assert SchedulingGates(make_handle(), {}).pre_enqueue(pod_info(make_pod())).code == Code.SUCCESS


def test_gates_are_listed_like_go_prints_a_string_slice() -> None:
    pod = pod_info(make_pod(spec={"schedulingGates": [{"name": "example.com/a"}, {"name": "b"}]}))
    st = SchedulingGates(make_handle(), {}).pre_enqueue(pod)
    assert (st.code, st.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "waiting for scheduling gates: [example.com/a b]",
    )
