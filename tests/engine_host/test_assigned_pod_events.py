"""A bound pod's update wakes only the plugins that registered that kind of change (PodSchedulingPropertiesChange):
the simulated kubelet's status writes must not requeue pods NodeResourcesFit rejected."""

from __future__ import annotations

import copy
from typing import Any

from kss_sim.scheduler.cluster_events import POD_UPDATE, POD_UPDATE_OTHER, assigned_pod_update_event
from kss_sim.scheduler.nodeinfo import PodInfo
from tests.scheduler.test_queue import VirtualClock, fail, make_pod, new_queue


def bound(cpu: str = "1", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "b", "namespace": "default", "uid": "b", "labels": labels or {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": "Pending"},
    }


def test_a_status_write_is_an_other_update() -> None:
    old = bound()
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Running", "podIP": "10.0.0.5", "conditions": [{"type": "Ready", "status": "True"}]}
    assert assigned_pod_update_event(PodInfo(old), PodInfo(new)) == POD_UPDATE_OTHER


def test_a_label_change_or_smaller_requests_are_the_updates_plugins_register() -> None:
    assert assigned_pod_update_event(PodInfo(bound()), PodInfo(bound(labels={"app": "db"}))) == POD_UPDATE
    assert assigned_pod_update_event(PodInfo(bound(cpu="2")), PodInfo(bound(cpu="1"))) == POD_UPDATE
    assert assigned_pod_update_event(PodInfo(bound(cpu="1")), PodInfo(bound(cpu="2"))) == POD_UPDATE_OTHER


def test_only_plugins_registering_every_pod_update_wake_on_an_other_update() -> None:
    clock = VirtualClock()
    queue = new_queue(clock=clock)  # the default profile's registrations
    queue.register_plugin_events({"Custom": ["Pod/Update"]})
    queue.add(make_pod("fit"))
    fail(queue, {"NodeResourcesFit"})
    queue.add(make_pod("custom"))
    fail(queue, {"Custom"})
    clock.advance(20)
    old, new = PodInfo(bound(cpu="2")), PodInfo(bound(cpu="2"))
    new.pod["status"] = {"phase": "Running"}
    assert queue.move_all_to_active_or_backoff(POD_UPDATE_OTHER, old=old, new=new) == 1  # the custom plugin's pod
    assert queue.pending_counts()["unschedulable"] == 1
    # The bound pod gives back cpu, which the pending pod asks for: NodeResourcesFit's hint queues it.
    fit = queue.unschedulable["default/fit"]
    fit.pod_info = PodInfo(
        {**fit.pod_info.pod, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    )
    assert queue.move_all_to_active_or_backoff(POD_UPDATE, old=old, new=PodInfo(bound(cpu="1"))) == 1
    assert queue.pending_counts()["unschedulable"] == 0
