"""A user's plugin that runs past the timeout is reported and interrupted: an Error attempt for that pod, and the
scheduler carries on (issue #35, runaway plugins)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import FilterPlugin, Handle, PreScorePlugin, Status, success
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import register
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.watchdog import WATCHDOG, PluginTimeoutReport
from tests.scheduler.factories import make_node, make_pod

TIMEOUT = 0.3


class Spins(FilterPlugin, PreScorePlugin):
    """Loops forever at ``point`` for pods named ``victim``, swallowing ordinary exceptions as a careless plugin
    would; behaves for every other pod."""

    name = "KssTestSpins"
    point: ClassVar[str] = "Filter"
    calls: ClassVar[int] = 0

    def _spin(self, pod: PodInfo, point: str) -> None:
        if pod.name != "victim" or point != Spins.point:
            return
        Spins.calls += 1
        while True:
            try:  # noqa: SIM105  # a careless plugin's loop: it must not swallow the watchdog's interrupt
                sum(range(100))
            except Exception:
                pass

    def filter(self, state: Any, pod: PodInfo, node_info: Any) -> Status:
        self._spin(pod, "Filter")
        return success()

    def pre_score(self, state: Any, pod: PodInfo, nodes: Any) -> Status:
        self._spin(pod, "PreScore")
        return success()


register(Spins)


@pytest.fixture
def reports() -> Iterator[list[PluginTimeoutReport]]:
    got: list[PluginTimeoutReport] = []
    before = WATCHDOG.timeout
    WATCHDOG.timeout = TIMEOUT
    WATCHDOG.add_listener(got.append)
    try:
        yield got
    finally:
        WATCHDOG.remove_listener(got.append)
        WATCHDOG.timeout = before
        Spins.point, Spins.calls = "Filter", 0


def scheduler(nodes: int = 3) -> Scheduler:
    cache = SchedulerCache()
    for i in range(nodes):
        cache.add_node(make_node(name=f"n{i}"))
    enabled = {"enabled": [{"name": Spins.name}]}
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"filter": enabled, "preScore": enabled}}],
    }
    profile = parse_config(config).profiles[0]
    fwk = build_framework(profile, Handle(ClusterObjects()))
    return Scheduler({profile.scheduler_name: fwk}, cache.snapshot, cache=cache)


def attempt(sched: Scheduler, name: str, *, batch: bool) -> Any:
    opts = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=False, batch=batch)
    return sched.schedule_one(PodInfo(make_pod(name=name, requests={"cpu": "100m"})), 1, opts)


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize(
    ("point", "message"),
    [
        ("Filter", "running \"KssTestSpins\" filter plugin: plugin 'KssTestSpins' ran past its 0.3s timeout at Filter"),
        ("PreScore", "running PreScore plugin \"KssTestSpins\": plugin 'KssTestSpins' ran past its 0.3s timeout at"),
    ],
)
def test_a_looping_plugin_is_interrupted_once_per_cycle_and_the_next_pod_schedules(
    reports: list[PluginTimeoutReport], point: str, message: str, batch: bool
) -> None:
    Spins.point = point
    sched = scheduler()
    started = time.monotonic()
    att = attempt(sched, "victim", batch=batch)
    took = time.monotonic() - started
    assert att.result == "error"
    assert att.message.startswith(message), att.message
    assert att.message.endswith("and was interrupted (KSS_PLUGIN_TIMEOUT)"), att.message
    assert Spins.calls == 1, "a plugin that timed out is not run again in the same cycle (one per node otherwise)"
    assert took < TIMEOUT + 2, took
    # The watchdog's thread tells its listeners just after interrupting the call, so the attempt can end first.
    waited_until = time.monotonic() + 5
    while not reports and time.monotonic() < waited_until:
        time.sleep(0.01)
    (report,) = reports
    assert (report.plugin, report.extension_point, report.pod) == ("KssTestSpins", point, "default/victim")
    assert not any(ni.pods for ni in sched.snapshot.node_info_list), "nothing stays assumed"

    # The scheduler carries on: the next pod schedules at once, and the victim's next cycle runs the plugin again.
    other = attempt(sched, "other", batch=batch)
    assert other.result == "scheduled", other.message
    again = attempt(sched, "victim", batch=batch)
    assert again.result == "error" and Spins.calls == 2
    assert attempt(sched, "third", batch=batch).result == "scheduled"


def test_a_call_within_the_timeout_is_not_interrupted(reports: list[PluginTimeoutReport]) -> None:
    sched = scheduler()
    for i in range(20):
        assert attempt(sched, f"quick-{i}", batch=False).result == "scheduled"
    time.sleep(TIMEOUT * 2)  # nothing is left to fire once the calls ended
    assert reports == []


def test_a_zero_timeout_runs_plugins_unwatched(reports: list[PluginTimeoutReport]) -> None:
    WATCHDOG.timeout = 0
    assert WATCHDOG.call("p", "filter", lambda x: x + 1, (1,)) == 2
