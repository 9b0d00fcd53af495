"""A judge-only cycle (kss serve's shadow of another scheduler's binding) says where the pod would go and changes
nothing: no pod assumed, no Reserve or Bind, no preemption planned."""

from __future__ import annotations

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import Handle
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_framework
from tests.scheduler.factories import make_node, make_pod

JUDGE = ScheduleOptions(record=True, tie_break="name", judge_only=True)


def _scheduler() -> tuple[Scheduler, SchedulerCache]:
    cache = SchedulerCache()
    cache.add_node(make_node(name="big", allocatable={"cpu": "8", "memory": "32Gi"}))
    cache.add_node(make_node(name="small", allocatable={"cpu": "4", "memory": "32Gi"}))
    cache.add_pod(PodInfo(make_pod(name="low", node_name="small", requests={"cpu": "2"}, priority=0)))
    handle = Handle(ClusterObjects())
    frameworks = {"default-scheduler": build_framework(parse_config(None).profiles[0], handle)}
    return Scheduler(frameworks, cache.snapshot, seed=1, cache=cache), cache


def test_judging_places_nothing() -> None:
    scheduler, cache = _scheduler()
    pod = PodInfo(make_pod(name="web", requests={"cpu": "1"}))
    att = scheduler.schedule_one(pod, 0, JUDGE)
    assert att.result == "scheduled" and att.suggested_host == "big" and att.selected == ["big"]
    assert att.bound_to is None and att.reserve == {} and att.bind == {}
    assert cache.get_pod(pod.uid) is None and cache.pod_count() == 1
    assert att.total is not None and att.total["big"] > att.total["small"]


def test_judging_a_pod_that_fits_nowhere_plans_no_preemption() -> None:
    scheduler, cache = _scheduler()
    pod = PodInfo(make_pod(name="huge", requests={"cpu": "3"}, priority=1000))
    scheduler.cache.add_pod(PodInfo(make_pod(name="hog", node_name="big", requests={"cpu": "6"}, priority=0)))
    att = scheduler.schedule_one(pod, 0, JUDGE)
    assert att.result == "unschedulable"
    assert att.postfilter is None and att.nominated_node is None and att.victims == []
    # The same pod in a real cycle runs PostFilter (DefaultPreemption).
    real = scheduler.schedule_one(pod, 1, ScheduleOptions(record=True, run_binding_cycle=False))
    assert real.postfilter is not None
    assert cache.pod_count() == 2
