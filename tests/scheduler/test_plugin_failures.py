"""A plugin that raises or returns the wrong type fails its extension point with an Error status."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import pytest

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import (
    BindPlugin,
    Code,
    FilterPlugin,
    Handle,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
    success,
    unschedulable,
)
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import register
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.queue import QueuedPodInfo, SchedulingQueue
from tests.scheduler.factories import make_node, make_pod


class Flaky(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PermitPlugin,
    PreBindPlugin,
    BindPlugin,
    PostBindPlugin,
):
    """Behaves at every point, but at ``broken``'s point does what ``how`` says (``raise`` only on the first call
    with ``once``)."""

    name = "KssTestFlaky"
    broken: ClassVar[str] = ""
    how: ClassVar[str] = "raise"
    once: ClassVar[bool] = False
    calls: ClassVar[int] = 0

    def _at(self, point: str, good: Any) -> Any:
        if point != Flaky.broken:
            return good
        Flaky.calls += 1
        if Flaky.once and Flaky.calls > 1:
            return good
        if Flaky.how == "raise":
            raise RuntimeError(f"boom at {point}")
        if Flaky.how == "none":
            return None
        return "ok"

    def pre_enqueue(self, pod: PodInfo) -> Status:
        return self._at("PreEnqueue", success())  # type: ignore[no-any-return]

    def pre_filter(self, state: Any, pod: PodInfo, nodes: Any) -> Any:
        return self._at("PreFilter", (None, success()))

    def filter(self, state: Any, pod: PodInfo, node_info: Any) -> Status:
        return self._at("Filter", success())  # type: ignore[no-any-return]

    def post_filter(self, state: Any, pod: PodInfo, statuses: Any) -> Any:
        return self._at("PostFilter", (None, unschedulable("no luck")))

    def pre_score(self, state: Any, pod: PodInfo, nodes: Any) -> Status:
        return self._at("PreScore", success())  # type: ignore[no-any-return]

    def score(self, state: Any, pod: PodInfo, node_info: Any) -> Any:
        if Flaky.broken == "Score" and Flaky.how == "float":
            return 1.5, success()
        return self._at("Score", (10, success()))

    def has_normalize(self) -> bool:
        return Flaky.broken == "NormalizeScore"

    def normalize_score(self, state: Any, pod: PodInfo, scores: Any) -> Status:
        if Flaky.how == "range":
            for ns in scores:
                ns.score = 101
            return success()
        return self._at("NormalizeScore", success())  # type: ignore[no-any-return]

    def reserve(self, state: Any, pod: PodInfo, node_name: str) -> Status:
        return self._at("Reserve", success())  # type: ignore[no-any-return]

    def unreserve(self, state: Any, pod: PodInfo, node_name: str) -> None:
        self._at("Unreserve", None)

    def permit(self, state: Any, pod: PodInfo, node_name: str) -> Any:
        return self._at("Permit", (success(), 0))

    def pre_bind(self, state: Any, pod: PodInfo, node_name: str) -> Status:
        return self._at("PreBind", success())  # type: ignore[no-any-return]

    def bind(self, state: Any, pod: PodInfo, node_name: str) -> Status:
        return self._at("Bind", success())  # type: ignore[no-any-return]

    def post_bind(self, state: Any, pod: PodInfo, node_name: str) -> None:
        self._at("PostBind", None)


register(Flaky)

POINTS = ["preFilter", "filter", "postFilter", "preScore", "score", "reserve", "permit", "preBind", "bind", "postBind"]


@pytest.fixture(autouse=True)
def behaving() -> Any:
    yield
    Flaky.broken, Flaky.how, Flaky.once, Flaky.calls = "", "raise", False, 0


def scheduler() -> tuple[Scheduler, Any]:
    cache = SchedulerCache()
    for i in range(3):
        cache.add_node(make_node(name=f"n{i}"))
    enabled = {"enabled": [{"name": Flaky.name}]}
    plugins: dict[str, Any] = {point: enabled for point in POINTS}
    plugins["bind"] = {"enabled": [{"name": Flaky.name}], "disabled": [{"name": "DefaultBinder"}]}
    plugins["score"] = {"enabled": [{"name": Flaky.name, "weight": 1}]}
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {**plugins, "preEnqueue": enabled}}],
    }
    profile = parse_config(config).profiles[0]
    fwk = build_framework(profile, Handle(ClusterObjects()))
    return Scheduler({profile.scheduler_name: fwk}, cache.snapshot, cache=cache), fwk


def attempt(sched: Scheduler, *, batch: bool, cpu: str = "100m", record: bool = True) -> Any:
    opts = ScheduleOptions(record=record, tie_break="name", run_binding_cycle=True, batch=batch)
    return sched.schedule_one(PodInfo(make_pod(name="p", requests={"cpu": cpu})), 1, opts)


ERRORS = [
    ("PreFilter", 'running PreFilter plugin "KssTestFlaky": RuntimeError: boom at PreFilter'),
    ("Filter", 'running "KssTestFlaky" filter plugin: RuntimeError: boom at Filter'),
    ("PreScore", 'running PreScore plugin "KssTestFlaky": RuntimeError: boom at PreScore'),
    ("Score", 'running Score plugins: plugin "KssTestFlaky" failed with: RuntimeError: boom at Score'),
    (
        "NormalizeScore",
        'running Normalize on Score plugins: plugin "KssTestFlaky" failed with: RuntimeError: boom at NormalizeScore',
    ),
    ("Reserve", 'running Reserve plugin "KssTestFlaky": RuntimeError: boom at Reserve'),
    ("Permit", 'running Permit plugin "KssTestFlaky": RuntimeError: boom at Permit'),
    ("PreBind", 'running PreBind plugin "KssTestFlaky": RuntimeError: boom at PreBind'),
    ("Bind", 'running Bind plugin "KssTestFlaky": RuntimeError: boom at Bind'),
]


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize(("point", "message"), ERRORS)
def test_a_raising_plugin_errors_the_attempt_logs_once_and_the_next_attempt_schedules(
    point: str, message: str, batch: bool, caplog: pytest.LogCaptureFixture
) -> None:
    sched, _ = scheduler()
    Flaky.broken = point
    with caplog.at_level(logging.ERROR, "kss.scheduler"):
        att = attempt(sched, batch=batch)
    assert (att.result, att.message) == ("error", message)
    raised = [r for r in caplog.records if r.exc_info]
    assert len(raised) == 1 and "boom" in str(raised[0].exc_info[1])  # type: ignore[index]
    assert not any(ni.pods for ni in sched.snapshot.node_info_list), "nothing stays assumed"
    Flaky.broken = ""  # the plugin behaves again
    again = attempt(sched, batch=batch)
    assert again.result == "scheduled", again.message


WRONG = [
    ("PreFilter", "none", 'running PreFilter plugin "KssTestFlaky": pre_filter returned None, want a '),
    ("Filter", "none", 'running "KssTestFlaky" filter plugin: filter returned None, want a Status'),
    ("Filter", "str", "running \"KssTestFlaky\" filter plugin: filter returned str 'ok', want a Status"),
    ("PreScore", "str", "running PreScore plugin \"KssTestFlaky\": pre_score returned str 'ok', want a Status"),
    (
        "Score",
        "none",
        'running Score plugins: plugin "KssTestFlaky" failed with: '
        "score returned None, want an (int score, Status) pair",
    ),
    ("Score", "float", 'running Score plugins: plugin "KssTestFlaky" failed with: score returned tuple (1.5, '),
    (
        "NormalizeScore",
        "range",
        "applying score defaultWeights on Score plugins: "
        'plugin "KssTestFlaky" returns an invalid score 101, it should in the range of ',
    ),
    ("Reserve", "none", 'running Reserve plugin "KssTestFlaky": reserve returned None, want a Status'),
    ("Permit", "str", "running Permit plugin \"KssTestFlaky\": permit returned str 'ok', want a (Status, timeout"),
    ("PreBind", "none", 'running PreBind plugin "KssTestFlaky": pre_bind returned None, want a Status'),
    ("Bind", "str", "running Bind plugin \"KssTestFlaky\": bind returned str 'ok', want a Status"),
]


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize(("point", "how", "message"), WRONG)
def test_a_wrong_return_type_is_an_error_naming_plugin_and_value(
    point: str, how: str, message: str, batch: bool
) -> None:
    sched, _ = scheduler()
    Flaky.broken, Flaky.how = point, how
    att = attempt(sched, batch=batch)
    assert att.result == "error"
    assert att.message.startswith(message), att.message


def test_normalize_out_of_range_keeps_upstreams_words() -> None:
    sched, _ = scheduler()
    Flaky.broken, Flaky.how = "NormalizeScore", "range"
    att = attempt(sched, batch=True, record=False)
    assert att.message == (
        "applying score defaultWeights on Score plugins: "
        'plugin "KssTestFlaky" returns an invalid score 101, it should in the range of [0, 100] after normalizing'
    )


def test_post_filter_error_leaves_the_pod_unschedulable_with_the_error_as_its_post_filter_message() -> None:
    sched, _ = scheduler()
    Flaky.broken = "PostFilter"
    att = attempt(sched, batch=True, cpu="64")
    assert att.result == "unschedulable"
    assert att.message.endswith('running PostFilter plugin "KssTestFlaky": RuntimeError: boom at PostFilter')
    assert att.postfilter["code"] == "Error"


@pytest.mark.parametrize("point", ["PostBind", "Unreserve"])
def test_post_bind_and_unreserve_cannot_fail_the_attempt(point: str) -> None:
    sched, _ = scheduler()
    Flaky.broken = point
    assert attempt(sched, batch=True).result == "scheduled"


@pytest.mark.parametrize("how", ["raise", "none"])
def test_pre_enqueue_error_gates_the_pod(how: str) -> None:
    _, fwk = scheduler()
    Flaky.broken, Flaky.how = "PreEnqueue", how
    st = fwk.run_pre_enqueue_plugins(PodInfo(make_pod(name="p")))
    assert st.code == Code.ERROR and st.plugin == Flaky.name
    assert st.message().startswith('running PreEnqueue plugin "KssTestFlaky": ')


def test_a_queue_sort_less_that_raises_falls_back_to_priority_order() -> None:
    def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise RuntimeError("less is broken")

    queue = SchedulingQueue(less=less)
    for name, priority in [("low", 1), ("high", 10), ("mid", 5)]:
        queue.add(PodInfo(make_pod(name=name, priority=priority)))
    popped = [queue.pop(timeout=0) for _ in range(3)]
    assert [q.pod_info.name for q in popped if q is not None] == ["high", "mid", "low"]


RAISING_MODULE = """\
from kss_sim.scheduler.framework import FilterPlugin, success
from kss_sim.scheduler.plugins import register


@register
class RaisesInFilter(FilterPlugin):
    name = "RaisesInFilter"

    def filter(self, state, pod, node_info):
        raise ValueError("user bug")
"""


def test_simulate_completes_with_the_error_recorded(tmp_path: Any) -> None:
    import json
    import os
    import subprocess

    from tests.conftest import KSS
    from tests.plugin_sources import config_enabling, write_scenario

    (tmp_path / "kss_raising_plugin.py").write_text(RAISING_MODULE)
    scenario = write_scenario(tmp_path / "s.scenario.json", config_enabling(filters=["RaisesInFilter"]))
    proc = subprocess.run(
        [str(KSS), "simulate", "--plugin-module", "kss_raising_plugin", str(scenario)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    assert result["boundTo"] is None
    assert result["fitError"] == 'running "RaisesInFilter" filter plugin: ValueError: user bug'
    assert proc.stderr.count("Traceback") <= 1
