"""GangScheduling (KEP-4671) as v1.35 has it, through the real engine: PreEnqueue gating, waiting in Permit,
timeouts, the gates (v1.36's PodGroup form: test_gang_scheduling_v1_36.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler import queue as q
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import ClusterEventWithHint, Code, Handle
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, defaulted_document, parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_framework, plugins_in_effect
from kss_sim.scheduler.runtime import Framework
from kss_sim.scheduler.snapshot import Snapshot
from tests.scheduler.factories import make_node, make_pod

GATES_ON = {"GenericWorkload": True, "GangScheduling": True}
# v1.35's gangs: a Workload (scheduling.k8s.io/v1alpha1) and pods' spec.workloadRef, which v1.36 replaced.
V1_35 = kube_version("1.35")
OPTS = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=False)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Engine:
    """A scheduler with the default profile under ``gates``, its pod lister and the pods it activated."""

    def __init__(self, gates: dict[str, bool] | None = None, *, nodes: int = 3, config: Any = None) -> None:
        self.clock = Clock()
        self.cluster = ClusterObjects()
        self.config = parse_config(config, feature_gates=GATES_ON if gates is None else gates, version=V1_35)
        self.activated: list[str] = []
        self.snapshot = Snapshot.build([make_node(name=f"n{i}", allocatable={"cpu": "1"}) for i in range(nodes)], [])
        self.fwk = self.framework()
        self.sched = Scheduler({"default-scheduler": self.fwk}, self.snapshot, clock=self.clock)

    def framework(self) -> Framework:
        handle = Handle(self.cluster)
        handle.kube_version = V1_35
        handle.activator = lambda pods: self.activated.extend(p.name for p in pods)
        return build_framework(self.config.profiles[0], handle)

    def swap_config(self) -> None:
        """A new configuration: new plugins, the same waiting pods and snapshot (as the host rebuilds)."""
        self.fwk = self.framework()
        self.sched = Scheduler(
            {"default-scheduler": self.fwk}, self.snapshot, clock=self.clock, waiting_pods=self.sched.waiting_pods
        )

    def pod(self, name: str, *, workload: str | None = "job", group: str = "workers", cpu: str = "600m") -> PodInfo:
        spec = {"workloadRef": {"name": workload, "podGroup": group}} if workload else {}
        pod = make_pod(name=name, requests={"cpu": cpu}, spec=spec)
        self.cluster.put_pod(pod)
        return PodInfo(pod)

    def bound(self, pod: PodInfo, node: str) -> None:
        """The pod's binding as the host's lister sees it."""
        self.cluster.put_pod({**pod.pod, "spec": {**pod.spec, "nodeName": node}})

    def workload(self, *groups: dict[str, Any], name: str = "job") -> None:
        self.cluster.put_object(
            "Workload",
            {
                "apiVersion": "scheduling.k8s.io/v1alpha1",
                "kind": "Workload",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"podGroups": list(groups)},
            },
        )

    def node_pods(self) -> dict[str, int]:
        return {ni.name: len(ni.pods) for ni in self.snapshot.node_info_list}


def gang(min_count: int, name: str = "workers") -> dict[str, Any]:
    return {"name": name, "policy": {"gang": {"minCount": min_count}}}


def basic(name: str = "workers") -> dict[str, Any]:
    return {"name": name, "policy": {"basic": {}}}


# --- waiting in Permit --------------------------------------------------------------------------------------------


def test_a_gang_waits_in_permit_until_its_min_count_th_pod_then_all_bind() -> None:
    e = Engine()
    e.workload(gang(3))
    pods = [e.pod(f"p{i}") for i in range(3)]
    first = e.sched.schedule_one(pods[0], 1, OPTS)
    assert first.result == "waiting"
    # RunPermitPlugins' own message, as upstream: the plugin's reason is not kept with a Wait.
    assert first.message == 'one or more plugins asked to wait and no plugin rejected pod "p0"'
    assert first.permit == {"GangScheduling": "wait"} and first.permit_timeout == {"GangScheduling": 300.0}
    # The siblings that may have been waiting for this pod are activated.
    assert e.activated == ["p1", "p2"]
    e.clock.now += 10
    second = e.sched.schedule_one(pods[1], 1, OPTS)
    assert second.result == "waiting"
    # The group's deadline was set by the first pod: the second waits for what is left of it.
    assert second.permit_timeout == {"GangScheduling": 290.0}
    assert e.activated == ["p1", "p2", "p2"]
    assert e.sched.resolve_waiting() == []
    # Both hold their nodes (600m of 1 CPU each), so the third goes to the last node and completes the gang.
    third = e.sched.schedule_one(pods[2], 1, OPTS)
    assert third.result == "scheduled" and third.bound_to == "n2"
    assert third.permit == {"GangScheduling": "success"}
    settled = e.sched.resolve_waiting()
    assert [(s.attempt.pod, s.attempt.result, s.attempt.bound_to) for s in settled] == [
        ("default/p0", "scheduled", "n0"),
        ("default/p1", "scheduled", "n1"),
    ]
    assert e.sched.waiting() == []
    assert e.node_pods() == {"n0": 1, "n1": 1, "n2": 1}


def test_pods_already_bound_count_towards_the_quorum() -> None:
    e = Engine()
    e.workload(gang(2))
    p0, p1, p2 = (e.pod(f"p{i}") for i in range(3))
    assert e.sched.schedule_one(p0, 1, OPTS).result == "waiting"
    assert e.sched.schedule_one(p1, 1, OPTS).result == "scheduled"
    assert [s.attempt.result for s in e.sched.resolve_waiting()] == ["scheduled"]
    e.bound(p0, "n0")
    e.bound(p1, "n1")
    # A late member of a gang whose quorum is bound goes straight through.
    assert e.sched.schedule_one(p2, 1, OPTS).result == "scheduled"


def test_a_gang_that_misses_its_quorum_times_out_after_five_minutes_and_releases_its_nodes() -> None:
    e = Engine()
    e.workload(gang(3))
    p0, p1, p2 = (e.pod(f"p{i}") for i in range(3))
    assert e.sched.schedule_one(p0, 1, OPTS).result == "waiting"
    e.clock.now = 160.0
    late = e.sched.schedule_one(p1, 1, OPTS)
    assert late.result == "waiting" and late.permit_timeout == {"GangScheduling": 240.0}
    assert e.sched.next_permit_deadline() == 400.0
    e.clock.now = 399.9
    assert e.sched.resolve_waiting() == []
    assert e.node_pods() == {"n0": 1, "n1": 1, "n2": 0}
    e.clock.now = 400.0
    settled = e.sched.resolve_waiting()
    assert [(s.attempt.pod, s.attempt.result, s.attempt.message) for s in settled] == [
        ("default/p0", "unschedulable",
         "0/1 nodes are available: 1 rejected due to timeout after waiting 5m0s at plugin GangScheduling."),
        ("default/p1", "unschedulable",
         "0/1 nodes are available: 1 rejected due to timeout after waiting 4m0s at plugin GangScheduling."),
    ]  # fmt: skip
    assert e.node_pods() == {"n0": 0, "n1": 0, "n2": 0}
    # Unreserve forgot them, and the passed deadline gives the next attempt a fresh five minutes.
    e.clock.now = 410.0
    retry = e.sched.schedule_one(p2, 1, OPTS)
    assert retry.result == "waiting" and retry.permit_timeout == {"GangScheduling": 300.0}
    assert e.activated[-1:] == ["p1"] and sorted(e.activated[-2:]) == ["p0", "p1"]


def test_waiting_gang_pods_still_count_after_a_configuration_swap() -> None:
    e = Engine()
    e.workload(gang(3))
    p0, p1, p2 = (e.pod(f"p{i}") for i in range(3))
    e.sched.schedule_one(p0, 1, OPTS)
    e.clock.now += 30
    e.sched.schedule_one(p1, 1, OPTS)
    e.swap_config()
    done = e.sched.schedule_one(p2, 1, OPTS)
    assert done.result == "scheduled"
    assert [s.attempt.result for s in e.sched.resolve_waiting()] == ["scheduled", "scheduled"]


def test_the_group_deadline_is_taken_back_from_its_waiting_pods_after_a_configuration_swap() -> None:
    e = Engine()
    e.workload(gang(3))
    p0, p1, _ = (e.pod(f"p{i}") for i in range(3))
    e.sched.schedule_one(p0, 1, OPTS)
    e.swap_config()
    e.clock.now += 100
    assert e.sched.schedule_one(p1, 1, OPTS).permit_timeout == {"GangScheduling": 200.0}


def test_basic_policy_and_pods_without_a_workload_bind_in_their_cycle() -> None:
    e = Engine()
    e.workload(basic())
    att = e.sched.schedule_one(e.pod("basic"), 1, OPTS)
    assert att.result == "scheduled" and att.permit == {"GangScheduling": "success"}
    plain = e.sched.schedule_one(e.pod("plain", workload=None), 1, OPTS)
    assert plain.result == "scheduled"
    assert e.activated == []


def test_permit_errors_when_the_workload_or_its_pod_group_is_gone() -> None:
    e = Engine()
    orphan = e.sched.schedule_one(e.pod("orphan", workload="gone"), 1, OPTS)
    assert orphan.result == "error"
    assert orphan.message.endswith(': failed to get workload default/gone: workload.scheduling.k8s.io "gone" not found')
    e.workload(gang(1, name="other"))
    stray = e.sched.schedule_one(e.pod("stray"), 1, OPTS)
    assert stray.result == "error"
    assert stray.message.endswith(': pod group "workers" doesn\'t exist for a workload "job"')
    assert e.node_pods() == {"n0": 0, "n1": 0, "n2": 0}


# --- PreEnqueue ---------------------------------------------------------------------------------------------------


def _gate(e: Engine, pod: PodInfo) -> tuple[Code, str, str]:
    st = e.fwk.run_pre_enqueue_plugins(pod)
    return st.code, st.plugin, st.message()


def test_pre_enqueue_holds_a_gang_pod_until_its_workload_and_min_count_pods_exist() -> None:
    e = Engine()
    p0 = e.pod("p0")
    assert _gate(e, p0) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "GangScheduling",
        'waiting for pods\'s workload "job" to appear in scheduling queue',
    )
    e.workload(gang(2, name="leaders"))
    assert _gate(e, p0) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "GangScheduling",
        'pod group "workers" doesn\'t exist for a workload "job"',
    )
    e.workload(gang(2))
    assert _gate(e, p0) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "GangScheduling",
        "waiting for minCount pods from a gang to appear in scheduling queue",
    )
    p1 = e.pod("p1")
    assert _gate(e, p0)[0] == _gate(e, p1)[0] == Code.SUCCESS


def test_pre_enqueue_lets_basic_and_plain_pods_through() -> None:
    e = Engine()
    e.workload(basic())
    assert _gate(e, e.pod("basic"))[0] == Code.SUCCESS
    assert _gate(e, e.pod("plain", workload=None))[0] == Code.SUCCESS


def test_pre_enqueue_errors_when_the_scheduler_knows_no_pod_of_the_group() -> None:
    e = Engine()
    e.workload(gang(1))
    unknown = PodInfo(make_pod(name="unknown", spec={"workloadRef": {"name": "job", "podGroup": "workers"}}))
    assert _gate(e, unknown) == (
        Code.ERROR,
        "GangScheduling",
        "internal pod group state doesn't exist for a pod's workload",
    )


def test_a_gated_gang_pod_enters_the_queue_on_its_workload_and_siblings_events() -> None:
    e = Engine()
    queue = q.SchedulingQueue(pre_enqueue=e.fwk.run_pre_enqueue_plugins, clock=e.clock)
    queue.register_plugin_events(e.fwk.events_by_plugin())
    registered = e.fwk.events_by_plugin()["GangScheduling"]
    assert [r.event if isinstance(r, ClusterEventWithHint) else r for r in registered] == ["Pod/Add", "Workload/Add"]
    queue.add(e.pod("p0"))
    assert queue.pending_counts()["gated"] == 1
    e.workload(gang(2))
    queue.move_all_to_active_or_backoff("Workload/Add", new={"metadata": {"name": "other", "namespace": "default"}})
    queue.move_all_to_active_or_backoff("Workload/Add", new=e.cluster.get_object("Workload", "default", "job"))
    assert queue.pending_counts()["gated"] == 1  # the gang is one pod short
    queue.move_all_to_active_or_backoff(ev.NODE_ADD)
    assert queue.pending_counts()["gated"] == 1  # not an event GangScheduling registered
    stranger = PodInfo(make_pod(name="stranger", spec={"workloadRef": {"name": "other", "podGroup": "workers"}}))
    queue.move_all_to_active_or_backoff(ev.UNSCHEDULED_POD_ADD, new=stranger)
    assert queue.pending_counts()["gated"] == 1  # its hint: not a pod of this gang
    queue.move_all_to_active_or_backoff(ev.UNSCHEDULED_POD_ADD, new=e.pod("p1"))
    assert queue.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


# --- feature gates ------------------------------------------------------------------------------------------------


def _points(config_gates: dict[str, bool], config: Any = None) -> dict[str, list[str]]:
    profile = parse_config(config, feature_gates=config_gates, version=V1_35).profiles[0]
    return {point: [name for name, _ in plugins] for point, plugins in plugins_in_effect(profile)}


def test_with_the_gate_on_gang_scheduling_joins_the_default_multi_point_last() -> None:
    config = parse_config(None, feature_gates=GATES_ON, version=V1_35)
    assert config.feature_gates == GATES_ON
    doc = defaulted_document(config)
    multi = doc["profiles"][0]["plugins"]["multiPoint"]["enabled"]
    assert multi[-1] == {"name": "GangScheduling"} and multi[-2] == {"name": "DefaultBinder"}
    assert "GangScheduling" not in [pc["name"] for pc in doc["profiles"][0]["pluginConfig"]]  # no args kind
    points = _points(GATES_ON)
    assert points["preEnqueue"][-1] == "GangScheduling"
    assert points["reserve"][-1] == "GangScheduling"
    assert points["permit"] == ["GangScheduling"]
    assert "GangScheduling" not in points["filter"] + points["score"]


@pytest.mark.parametrize("gates", [{}, {"GenericWorkload": True}, {"GenericWorkload": True, "GangScheduling": False}])
def test_with_the_gate_off_gang_scheduling_is_not_a_default_plugin(gates: dict[str, bool]) -> None:
    points = _points(gates)
    assert all("GangScheduling" not in names for names in points.values())
    assert points["permit"] == []
    multi = defaulted_document(parse_config(None, feature_gates=gates, version=V1_35))["profiles"][0]["plugins"][
        "multiPoint"
    ]
    assert "GangScheduling" not in [p["name"] for p in multi["enabled"]]


def test_with_the_gate_off_a_configuration_may_still_name_gang_scheduling_as_upstream_registers_it() -> None:
    # v1.35's NewInTreeRegistry registers GangScheduling unconditionally; the gate only decides the defaults.
    named = {"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}}]}
    assert _points({}, named)["permit"] == ["GangScheduling"]
    e = Engine({}, config=named)
    e.workload(gang(2))
    p0, p1 = e.pod("p0"), e.pod("p1")
    assert e.sched.schedule_one(p0, 1, OPTS).result == "waiting"
    assert e.sched.schedule_one(p1, 1, OPTS).result == "scheduled"


def test_gang_scheduling_can_be_disabled_when_the_gate_put_it_in_the_defaults() -> None:
    disabled = {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "GangScheduling"}]}}}]}
    assert _points(GATES_ON, disabled)["permit"] == []


def test_gang_scheduling_takes_no_args_kind() -> None:
    typed = {
        "profiles": [
            {
                "pluginConfig": [
                    {
                        "name": "GangScheduling",
                        "args": {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeAffinityArgs"},
                    }
                ]
            }
        ]
    }
    with pytest.raises(ConfigError) as exc:
        parse_config(typed, feature_gates=GATES_ON, version=V1_35)
    assert exc.value.field == "profiles[0].pluginConfig[0].args"
