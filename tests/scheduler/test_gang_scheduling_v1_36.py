"""GangScheduling as v1.36 has it, through the real engine: pods join a standalone PodGroup (scheduling.k8s.io/v1alpha2)
by ``spec.schedulingGroup``; PreEnqueue and Permit with v1.36's words and its fixed five-minute Permit wait."""

from __future__ import annotations

from typing import Any

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import Code, Handle
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.gang_scheduling import POD_GROUP_V1ALPHA2
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.runtime import Framework
from kss_sim.scheduler.snapshot import Snapshot
from tests.scheduler.factories import make_node, make_pod

GATES_ON = {"GenericWorkload": True, "GangScheduling": True}
OPTS = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=False)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Engine:
    """A scheduler at Kubernetes ``version`` with the default profile and the gang gates on."""

    def __init__(self, version: str = "1.36") -> None:
        self.clock = Clock()
        self.cluster = ClusterObjects()
        self.config = parse_config(None, feature_gates=GATES_ON, version=kube_version(version))
        self.activated: list[str] = []
        nodes = [make_node(name=f"n{i}", allocatable={"cpu": "1"}) for i in range(3)]
        self.snapshot = Snapshot.build(nodes, [])
        self.fwk = self.framework()
        self.sched = Scheduler({"default-scheduler": self.fwk}, self.snapshot, clock=self.clock)

    def framework(self) -> Framework:
        handle = Handle(self.cluster)
        handle.activator = lambda pods: self.activated.extend(p.name for p in pods)
        handle.kube_version = self.config.kube_version  # as the host's build_frameworks sets it
        handle.feature_gates = dict(GATES_ON)
        return build_framework(self.config.profiles[0], handle)

    def pod(self, name: str, *, group: str | None = "job-workers", **spec: Any) -> PodInfo:
        if group is not None:
            spec["schedulingGroup"] = {"podGroupName": group}
        pod = make_pod(name=name, requests={"cpu": "600m"}, spec=spec)
        self.cluster.put_pod(pod)
        return PodInfo(pod)

    def pod_group(self, policy: dict[str, Any], name: str = "job-workers") -> None:
        self.cluster.put_object(
            POD_GROUP_V1ALPHA2,
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"schedulingPolicy": policy},
            },
        )

    def gate(self, pod: PodInfo) -> tuple[Code, str, str]:
        st = self.fwk.run_pre_enqueue_plugins(pod)
        return st.code, st.plugin, st.message()


def gang(min_count: int) -> dict[str, Any]:
    return {"gang": {"minCount": min_count}}


def test_pre_enqueue_holds_a_member_until_its_pod_group_and_min_count_pods_exist() -> None:
    e = Engine()
    p0 = e.pod("p0")
    assert e.gate(p0) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "GangScheduling",
        'waiting for pods\'s pod group "job-workers" to appear in scheduling queue',
    )
    e.pod_group(gang(2))
    assert e.gate(p0) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "GangScheduling",
        "waiting for minCount pods from a gang to appear in scheduling queue",
    )
    p1 = e.pod("p1")
    assert e.gate(p0)[0] == e.gate(p1)[0] == Code.SUCCESS
    e.pod_group({"basic": {}}, name="loose")
    assert e.gate(e.pod("solo", group="loose"))[0] == Code.SUCCESS
    # A member the scheduler's cache has no pod of its group for: the cache's error.
    e.pod_group(gang(1), name="empty")
    unknown = PodInfo(make_pod(name="unknown", spec={"schedulingGroup": {"podGroupName": "empty"}}))
    assert e.gate(unknown) == (Code.ERROR, "GangScheduling", "pod group state not found for pod group default/empty")


def test_members_wait_five_minutes_each_in_permit_until_the_min_count_th_then_all_bind() -> None:
    e = Engine()
    e.pod_group(gang(3))
    pods = [e.pod(f"p{i}") for i in range(3)]
    first = e.sched.schedule_one(pods[0], 1, OPTS)
    assert first.result == "waiting" and first.permit_timeout == {"GangScheduling": 300.0}
    assert e.activated == ["p1", "p2"]
    e.clock.now += 10
    # v1.36 has no group deadline: each member waits its own five minutes.
    second = e.sched.schedule_one(pods[1], 1, OPTS)
    assert second.result == "waiting" and second.permit_timeout == {"GangScheduling": 300.0}
    third = e.sched.schedule_one(pods[2], 1, OPTS)
    assert third.result == "scheduled" and third.permit == {"GangScheduling": "success"}
    settled = e.sched.resolve_waiting()
    assert [(s.attempt.pod, s.attempt.result) for s in settled] == [
        ("default/p0", "scheduled"),
        ("default/p1", "scheduled"),
    ]
    assert {ni.name: len(ni.pods) for ni in e.snapshot.node_info_list} == {"n0": 1, "n1": 1, "n2": 1}


def test_permit_errors_when_the_pod_group_is_gone() -> None:
    e = Engine()
    orphan = e.sched.schedule_one(e.pod("orphan", group="gone"), 1, OPTS)
    assert orphan.result == "error"
    assert orphan.message.endswith(
        ': failed to get podGroup default/gone: podgroups.scheduling.k8s.io "gone" not found'
    )


def test_each_version_reads_only_its_own_reference() -> None:
    # v1.36 has no workloadRef: a pod naming a v1alpha1 Workload is no gang member there.
    v136 = Engine("1.36")
    legacy = v136.pod("legacy", group=None, workloadRef={"name": "job", "podGroup": "workers"})
    assert v136.gate(legacy)[0] == Code.SUCCESS
    assert v136.sched.schedule_one(legacy, 1, OPTS).result == "scheduled"
    # v1.35 has no schedulingGroup: its GangScheduling reads workloadRef alone.
    v135 = Engine("1.35")
    newer = v135.pod("newer")
    assert v135.gate(newer)[0] == Code.SUCCESS
    assert v135.sched.schedule_one(newer, 1, OPTS).result == "scheduled"
