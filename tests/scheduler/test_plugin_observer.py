"""The framework's plugin observer: each plugin's run at the per-cycle extension points, timed and reported."""

from __future__ import annotations

import random
import time

import pytest

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import CycleState, FilterPlugin, Handle, Status, success, unschedulable
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins import out_of_tree, register
from kss_sim.scheduler.profiles import build_framework
from tests.scheduler.factories import make_node, make_pod

Observed = list[tuple[str, str, str, float]]


def schedule(*, batch: bool, observe: Observed | None, pod_cpu: str = "100m") -> str:
    cache = SchedulerCache()
    for i in range(3):
        cache.add_node(make_node(name=f"n{i}"))
    handle = Handle(ClusterObjects())

    def observer(plugin: str, point: str, status: str, seconds: float) -> None:
        assert observe is not None
        observe.append((plugin, point, status, seconds))

    profile = parse_config(None).profiles[0]
    fwk = build_framework(profile, handle, plugin_observer=observer if observe is not None else None)
    scheduler = Scheduler({profile.scheduler_name: fwk}, cache.snapshot, cache=cache)
    opts = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=False, batch=batch)
    att = scheduler.schedule_one(PodInfo(make_pod(name="p", requests={"cpu": pod_cpu})), 1, opts)
    return att.result


@pytest.mark.parametrize("batch", [True, False])
def test_every_per_cycle_plugin_run_is_reported_but_filter_is_not(batch: bool) -> None:
    observed: Observed = []
    assert schedule(batch=batch, observe=observed) == "scheduled"
    points = {(plugin, point) for plugin, point, _, _ in observed}
    fwk = build_framework(parse_config(None).profiles[0], Handle(ClusterObjects()))
    assert {(p.name, "PreFilter") for p in fwk.pre_filter} <= points
    skipped = {plugin for plugin, point, status, _ in observed if (point, status) == ("PreScore", "Skip")}
    scored = {p.name for p in fwk.score} - skipped
    assert {(name, "Score") for name in scored} == {(plugin, point) for plugin, point in points if point == "Score"}
    assert "TaintToleration" in scored, "a plugin with a vectorised Score is timed as well"
    assert {(p.name, "Reserve") for p in fwk.reserve} <= points
    assert not any(point == "Filter" for _, point in points)
    assert all(seconds >= 0 for *_, seconds in observed)
    fit = [status for plugin, point, status, _ in observed if (plugin, point) == ("NodeResourcesFit", "PreFilter")]
    assert fit == ["Success"]


def test_the_status_label_is_the_plugins_code_and_no_observer_changes_nothing() -> None:
    observed: Observed = []
    assert schedule(batch=True, observe=observed, pod_cpu="640") == "unschedulable"
    post = [status for plugin, point, status, _ in observed if (plugin, point) == ("DefaultPreemption", "PostFilter")]
    assert post == ["Unschedulable"], "DefaultPreemption found no victims"
    assert schedule(batch=True, observe=None, pod_cpu="640") == "unschedulable"


def test_an_observer_that_raises_does_not_break_scheduling() -> None:
    def broken(plugin: str, point: str, status: str, seconds: float) -> None:
        raise RuntimeError("metrics down")

    cache = SchedulerCache()
    cache.add_node(make_node(name="n0"))
    profile = parse_config(None).profiles[0]
    fwk = build_framework(profile, Handle(ClusterObjects()), plugin_observer=broken)
    scheduler = Scheduler({profile.scheduler_name: fwk}, cache.snapshot, cache=cache)
    att = scheduler.schedule_one(PodInfo(make_pod(name="p")), 1, ScheduleOptions(run_binding_cycle=False))
    assert att.result == "scheduled"


class SlowFilter(FilterPlugin):
    """A user's Filter plugin (defined outside kss_sim.scheduler.plugins): rejects n0, takes a moment per node."""

    name = "SlowFilter"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        time.sleep(0.002)
        return unschedulable("too slow for n0") if node_info.name == "n0" else success()


@pytest.mark.parametrize(("batch", "record"), [(True, True), (True, False), (False, True), (False, False)])
def test_a_users_filter_plugin_is_timed_on_every_node(
    batch: bool, record: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(out_of_tree, "_registered", {})
    register(SlowFilter)
    cache = SchedulerCache()
    for i in range(3):
        cache.add_node(make_node(name=f"n{i}"))
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": "SlowFilter"}]}}}
        ],
    }
    profile = parse_config(config).profiles[0]
    observed: Observed = []
    fwk = build_framework(profile, Handle(ClusterObjects()), plugin_observer=lambda *o: observed.append(o))
    scheduler = Scheduler({profile.scheduler_name: fwk}, cache.snapshot, cache=cache)
    opts = ScheduleOptions(record=record, tie_break="name", run_binding_cycle=False, batch=batch)
    att = scheduler.schedule_one(PodInfo(make_pod(name="p")), 1, opts)
    assert att.result == "scheduled" and att.bound_to != "n0"
    filters = [(status, seconds) for plugin, point, status, seconds in observed if point == "Filter"]
    assert {plugin for plugin, point, *_ in observed if point == "Filter"} == {"SlowFilter"}, "in-tree Filter untimed"
    assert sorted(status for status, _ in filters)[:1] == ["Success"]
    assert "Unschedulable" in {status for status, _ in filters}
    assert len(filters) >= 3 and all(seconds >= 0.002 for _, seconds in filters)
    # Without an observer the plugin runs as it is (no timing wrapper in the framework's Filter list).
    plain = build_framework(profile, Handle(ClusterObjects()))
    assert any(type(p) is SlowFilter for p in plain.filter)


def test_plugin_runs_are_observed_in_the_sampled_cycles_only_and_placements_do_not_depend_on_it() -> None:
    """kube-scheduler times its plugins in 10 % of the cycles (``pluginMetricsSamplePercent``), decided once per
    cycle from a random source of its own: the seeded one that breaks ties must not see those draws."""

    def run(percent: int, sample_seed: int) -> tuple[list[str | None], list[int], int]:
        cache = SchedulerCache()
        for i in range(6):
            cache.add_node(make_node(name=f"n{i}", allocatable={"cpu": "100", "memory": "400Gi", "pods": "500"}))
        observed: Observed = []
        profile = parse_config(None).profiles[0]
        fwk = build_framework(profile, Handle(ClusterObjects()), plugin_observer=lambda *o: observed.append(o))
        fwk.plugin_metrics_sample_percent = percent
        fwk.plugin_metrics_random = random.Random(sample_seed)
        scheduler = Scheduler({profile.scheduler_name: fwk}, cache.snapshot, cache=cache, seed=3)
        opts = ScheduleOptions(record=True, tie_break="random", run_binding_cycle=False)
        placed: list[str | None] = []
        sampled: list[int] = []
        for cycle in range(200):
            before = len(observed)
            att = scheduler.schedule_one(PodInfo(make_pod(name=f"p{cycle}", requests={"cpu": "100m"})), 1, opts)
            placed.append(att.bound_to)
            points = {(plugin, point) for plugin, point, *_ in observed[before:]}
            if points:
                assert ("NodeResourcesFit", "PreFilter") in points and ("NodeResourcesFit", "Score") in points
                sampled.append(cycle)
        return placed, sampled, len(observed)

    every_placed, every_sampled, _ = run(100, 0)
    assert every_sampled == list(range(200))
    placed, sampled, _ = run(10, 42)
    draws = random.Random(42)
    assert sampled == [cycle for cycle in range(200) if draws.randrange(100) < 10]
    assert 8 <= len(sampled) <= 40, "about one cycle in ten"
    assert placed == every_placed, "ties are broken the same whichever cycles are timed"
    assert len(set(placed)) > 1, "pods spread over the nodes (the check above compares something)"
    _, none_sampled, none_observed = run(0, 42)
    assert none_sampled == [] and none_observed == 0
