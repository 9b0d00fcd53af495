"""The framework runtime: one profile's plugins, run extension point by extension point.

``Framework`` mirrors ``frameworkImpl`` in kube-scheduler's runtime package. Recording hooks let the
cycle keep every plugin's verdict without changing what kube-scheduler itself would decide. With a plugin
observer set, each plugin's run at the per-cycle extension points is timed and reported in the sampled cycles, as
kube-scheduler's metrics recorder observes ``plugin_execution_duration_seconds``.

Here are its construction and the extension points run once per pod; Filter and Score, run per node and on
batches of nodes, are ``runtime_filter.py``'s and ``runtime_score.py``'s (mixins of ``Framework``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kss_sim.scheduler.filter_timing import PluginObserver, TimedFilter
from kss_sim.scheduler.framework import (
    BindPlugin,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    NodeToStatus,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
    error,
    success,
)
from kss_sim.scheduler.guard import PluginResultError, describe, guard, is_in_tree
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.runtime_filter import FilterRunners, RaisedStatus
from kss_sim.scheduler.runtime_score import ScoreRunners
from kss_sim.scheduler.waiting import MAX_PERMIT_TIMEOUT
from kss_sim.scheduler.watchdog import WATCHDOG, PluginTimeout

log = logging.getLogger("kss.scheduler")

# One plugin's run at one extension point: (plugin, extension point, status code, seconds). Observed at PreFilter,
# PostFilter, PreScore, Score, Reserve, Permit, PreBind and Bind (kube-scheduler's labels); Filter runs once per
# node per plugin and is left out for kss's own plugins (a timer around every call would slow big clusters
# down); users' Filter plugins are timed (filter_timing.py).
_R = TypeVar("_R")
# kube-scheduler times and observes its plugins in this share of scheduling cycles only (``pluginMetricsSamplePercent``
# in pkg/scheduler/schedule_one.go): the timers and the histogram cost more than most plugins (~16 % of kss serve's
# cycle when every cycle was observed). ``kss serve`` samples as upstream; a framework built without a percentage
# observes every cycle.
PLUGIN_METRICS_SAMPLE_PERCENT = 10


# RunPermitPlugins' reason when some plugin asked to wait.
PERMIT_WAIT_REASON = "one or more plugins asked to wait and no plugin rejected pod"


def status_text(st: Status) -> str:
    """How the golden files and the results store render a plugin status."""
    return _STATUS_WORDS.get(st.code) or st.message()


_STATUS_WORDS = {Code.SUCCESS: "success", Code.SKIP: "skip"}
# A cycle state holding this key runs no PostFilter plugin (``SetSkipAllPostFilterPlugins``: the feasibility checks
# of workload-aware preemption).
SKIP_ALL_POST_FILTER_PLUGINS = "kss/skip-all-post-filter-plugins"
_SNAKE = {"AddPod": "add_pod", "RemovePod": "remove_pod"}


class PreFilterOutcome:
    """What PreFilter produced, plus the per-plugin record."""

    __slots__ = ("per_plugin", "per_plugin_nodes", "result", "status", "unscheduled_plugins")

    def __init__(self) -> None:
        self.result: PreFilterResult | None = None
        self.status: Status = success()
        self.unscheduled_plugins: set[str] = set()
        self.per_plugin: dict[str, str] = {}
        # Plugin -> the nodes its PreFilterResult allowed (only plugins that restricted nodes).
        self.per_plugin_nodes: dict[str, list[str]] = {}


class Framework(FilterRunners, ScoreRunners):
    """A scheduling profile: its plugins per extension point and their score weights.

    A plugin that raises, or (out-of-tree) returns a value of the wrong type, fails its extension point with an
    Error status, as a plugin returning ``Error`` would (kube-scheduler's plugins cannot raise; a panic would stop
    it): the cycle ends as upstream's does for that point's error, and the exception is logged once per cycle.
    Filter, run per node, is the exception: a raise there fails that node only (``node_failure``), so one node's
    data cannot stop every pod.
    """

    def __init__(
        self,
        profile_name: str,
        handle: Handle,
        plugins: dict[str, list[Plugin]],
        weights: dict[str, int],
        percentage_of_nodes_to_score: int | None = None,
        plugin_observer: PluginObserver | None = None,
    ) -> None:
        self.profile_name = profile_name
        self.plugin_observer = plugin_observer
        self.handle = handle
        handle.framework = self
        self._gates_asked: dict[str, bool] = {}
        self.points = plugins
        self.queue_sort: list[QueueSortPlugin] = [
            p for p in plugins.get("queueSort", []) if isinstance(p, QueueSortPlugin)
        ]
        self.pre_enqueue: list[PreEnqueuePlugin] = [
            p for p in plugins.get("preEnqueue", []) if isinstance(p, PreEnqueuePlugin)
        ]
        self.pre_filter: list[PreFilterPlugin] = [
            p for p in plugins.get("preFilter", []) if isinstance(p, PreFilterPlugin)
        ]
        self.filter: list[FilterPlugin] = [p for p in plugins.get("filter", []) if isinstance(p, FilterPlugin)]
        # Share of cycles whose plugin runs are timed and observed (upstream: PLUGIN_METRICS_SAMPLE_PERCENT), drawn
        # once per cycle by ``begin_cycle`` from its own random source: never the seeded one that breaks ties, so
        # placements do not depend on it.
        self.plugin_metrics_sample_percent = 100
        self.plugin_metrics_random = random.Random()
        # Whether this cycle's plugin runs are observed (``CycleState.ShouldRecordPluginMetrics``).
        self.record_plugin_metrics = plugin_observer is not None
        if plugin_observer is not None:  # users' Filter plugins timed too (see filter_timing.py)
            self.filter = [p if is_in_tree(p) else TimedFilter(p, self._observe_sampled) for p in self.filter]
        self.post_filter: list[PostFilterPlugin] = [
            p for p in plugins.get("postFilter", []) if isinstance(p, PostFilterPlugin)
        ]
        self.pre_score: list[PreScorePlugin] = [p for p in plugins.get("preScore", []) if isinstance(p, PreScorePlugin)]
        self.score: list[ScorePlugin] = [p for p in plugins.get("score", []) if isinstance(p, ScorePlugin)]
        self.reserve: list[ReservePlugin] = [p for p in plugins.get("reserve", []) if isinstance(p, ReservePlugin)]
        self.permit: list[PermitPlugin] = [p for p in plugins.get("permit", []) if isinstance(p, PermitPlugin)]
        self.pre_bind: list[PreBindPlugin] = [p for p in plugins.get("preBind", []) if isinstance(p, PreBindPlugin)]
        self.bind: list[BindPlugin] = [p for p in plugins.get("bind", []) if isinstance(p, BindPlugin)]
        self.post_bind: list[PostBindPlugin] = [p for p in plugins.get("postBind", []) if isinstance(p, PostBindPlugin)]
        # v1.36's PodGroup cycle (podgroup_cycle.py): placements to try and how to rank the feasible ones (filled
        # by build_framework from multiPoint; no configuration point lists them).
        self.placement_generate: list[PlacementGeneratePlugin] = []
        self.placement_score: list[PlacementScorePlugin] = []
        self.weights = weights
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.plugins_by_name: dict[str, Plugin] = {}
        for group in plugins.values():
            for p in group:
                guard(p)
                self.plugins_by_name[p.name] = p
        # (plugin, extension point) whose exception was logged this cycle (cleared by ``begin_cycle``).
        self.logged_failures: set[tuple[str, str]] = set()

    def begin_cycle(self) -> None:
        """A new scheduling cycle: a plugin's exception is logged again (with its traceback); whether its plugin
        runs are observed is drawn (``rand.Intn(100) < pluginMetricsSamplePercent``)."""
        if self.logged_failures:
            self.logged_failures.clear()
        WATCHDOG.begin_cycle()
        if self.plugin_observer is not None:
            percent = self.plugin_metrics_sample_percent
            self.record_plugin_metrics = percent >= 100 or self.plugin_metrics_random.randrange(100) < percent

    def _observe_sampled(self, plugin: str, point: str, status: str, seconds: float) -> None:
        """The plugin observer, for the cycles sampled (users' Filter plugins are timed by their wrapper)."""
        if self.record_plugin_metrics and self.plugin_observer is not None:
            self.plugin_observer(plugin, point, status, seconds)

    def failure(self, point: str, pl: Plugin, exc: Exception) -> Status:
        """An exception out of ``pl`` at ``point`` as a plain Error status (the caller wraps it as that point wraps
        a plugin's error). A wrong return type or a timeout is said as such (the watchdog logged the timeout); other
        exceptions are logged with their traceback."""
        if isinstance(exc, PluginResultError | PluginTimeout):
            return error(str(exc))
        key = (pl.name, point)
        if key not in self.logged_failures:
            self.logged_failures.add(key)
            log.error("%s plugin %r raised", point, pl.name, exc_info=exc)
        text = str(exc)
        return error(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)

    def node_failure(self, pl: Plugin, node_info: NodeInfo, exc: Exception) -> Status:
        """An exception out of ``pl``'s Filter on one node: that node fails (UnschedulableAndUnresolvable, with the
        error as its message: preemption cannot help) and the other nodes are still evaluated, so one node's data
        cannot stop every pod. Logged with its traceback once per cycle."""
        key = (pl.name, "Filter")
        if key not in self.logged_failures:
            self.logged_failures.add(key)
            log.error("Filter plugin %r raised on node %r", pl.name, node_info.name, exc_info=exc)
        text = str(exc)
        what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        message = f'running "{pl.name}" filter plugin: {what}'
        return RaisedStatus(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message, plugin=pl.name)

    def _observed(self, point: str, pl: Plugin, run: Callable[..., _R], *args: Any) -> _R:
        """``run(*args)``, ``pl``'s method at ``point``, timed and reported to the plugin observer."""
        t0 = time.perf_counter()
        result = run(*args)
        elapsed = time.perf_counter() - t0
        status: Status | None = None
        if isinstance(result, Status):
            status = result
        elif isinstance(result, tuple):  # (result, status), (status, timeout), (scores, status)
            status = next((r for r in result if isinstance(r, Status)), None)
        observe = self.plugin_observer
        if observe is not None:
            try:
                observe(pl.name, point, status.code.label if status is not None else "Success", elapsed)
            except Exception:  # metrics must never break scheduling
                log.exception("plugin observer failed")
        return result

    def events_by_plugin(self) -> dict[str, list[str | ClusterEventWithHint]]:
        """Each plugin's ``events_to_register()`` with their hints, for the plugins that declare theirs."""
        out: dict[str, list[str | ClusterEventWithHint]] = {}
        for name, pl in self.plugins_by_name.items():
            try:
                events = pl.events_to_register()
            except Exception:
                log.exception("events_to_register of plugin %r failed; it is woken by every event", name)
                continue
            if events is not None:
                out[name] = [e if isinstance(e, ClusterEventWithHint) else str(e) for e in events]
        return out

    def plugin_names(self) -> dict[str, list[str]]:
        """Enabled plugin names per extension point, in order."""
        return {point: [p.name for p in group] for point, group in self.points.items()}

    # --- PreEnqueue -------------------------------------------------------------------------------
    def run_pre_enqueue_plugins(self, pod: PodInfo) -> Status:
        for pl in self.pre_enqueue:
            try:
                st = pl.pre_enqueue(pod)
                if st.is_success():
                    continue
            except Exception as exc:
                st = self.failure("PreEnqueue", pl, exc)
                return error(f'running PreEnqueue plugin "{pl.name}": {st.message()}').with_plugin(pl.name)
            return st.with_plugin(pl.name)
        return success()

    # --- PreFilter --------------------------------------------------------------------------------
    def run_pre_filter_plugins(self, state: CycleState, pod: PodInfo, record: bool = False) -> PreFilterOutcome:
        """``RunPreFilterPlugins``; with ``record``, plugins after an early stop still run on a throwaway state."""
        out = PreFilterOutcome()
        nodes = self.handle.snapshot.node_info_list
        skip_plugins: set[str] = set()
        result: PreFilterResult | None = None
        plugins_with_nodes: set[str] = set()
        return_status = success()
        stopped_at: int | None = None
        per_plugin = out.per_plugin
        observed = self.record_plugin_metrics
        for i, pl in enumerate(self.pre_filter):
            try:
                if observed:
                    r, st = self._observed("PreFilter", pl, pl.pre_filter, state, pod, nodes)
                else:
                    r, st = pl.pre_filter(state, pod, nodes)
                code = st.code
            except Exception as exc:
                r, st = None, self.failure("PreFilter", pl, exc)
                code = st.code
            if record:
                per_plugin[pl.name] = _STATUS_WORDS.get(code) or st.message()  # status_text, without the call
                if r is not None and r.node_names is not None:
                    out.per_plugin_nodes[pl.name] = sorted(r.node_names)
            if code == Code.SKIP:
                skip_plugins.add(pl.name)
                continue
            if code == Code.SUCCESS and r is None:
                continue  # nothing to merge (the usual case)
            if code != Code.SUCCESS:
                st.plugin = pl.name
                if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    out.status = st
                    stopped_at = i
                    break
                if st.code == Code.UNSCHEDULABLE:
                    return_status = st
                    continue
                out.status = error(f'running PreFilter plugin "{pl.name}": {st.message()}').with_plugin(pl.name)
                stopped_at = i
                break
            if r is not None and not r.all_nodes():
                plugins_with_nodes.add(pl.name)
            result = r if result is None else result.merge(r)
            if result is not None and not result.all_nodes() and not result.node_names:
                names = sorted(plugins_with_nodes)
                msg = (
                    f"node(s) didn't satisfy plugin {names[0]}"
                    if len(names) == 1
                    else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                )
                out.result = result
                out.status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
                out.unscheduled_plugins = plugins_with_nodes
                stopped_at = i
                break
        if stopped_at is not None:
            if record:
                scratch = state.clone()
                for pl in self.pre_filter[stopped_at + 1 :]:
                    try:
                        if observed:
                            _, st = self._observed("PreFilter", pl, pl.pre_filter, scratch, pod, nodes)
                        else:
                            _, st = pl.pre_filter(scratch, pod, nodes)
                        text = status_text(st)
                    except Exception as exc:
                        text = self.failure("PreFilter", pl, exc).message()
                    out.per_plugin[pl.name] = text
            return out
        state.skip_filter_plugins = skip_plugins
        out.result = result
        out.status = return_status
        out.unscheduled_plugins = plugins_with_nodes
        return out

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension("AddPod", state, pod, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension("RemovePod", state, pod, pod_to_remove, node_info)

    def _run_pre_filter_extension(
        self, which: str, state: CycleState, pod: PodInfo, other: PodInfo, node_info: NodeInfo
    ) -> Status:
        """The PreFilter plugins' ``AddPod`` or ``RemovePod`` (``which``) for ``other`` on ``node_info``."""
        for pl in self.pre_filter:
            if pl.name in state.skip_filter_plugins:
                continue
            try:
                ext = pl.pre_filter_extensions()
                if ext is None:
                    continue
                if which == "AddPod":
                    st = ext.add_pod(state, pod, other, node_info)
                else:
                    st = ext.remove_pod(state, pod, other, node_info)
                if not isinstance(st, Status):
                    raise PluginResultError(f"{_SNAKE[which]} returned {describe(st)}, want a Status")
            except Exception as exc:
                st = self.failure("PreFilterExtensions", pl, exc)
            if not st.is_success():
                return error(f'running {which} on PreFilter plugin "{pl.name}": {st.message()}')
        return success()

    # --- PostFilter -------------------------------------------------------------------------------
    def run_post_filter_plugins(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        if state.get(SKIP_ALL_POST_FILTER_PLUGINS):
            return None, Status(Code.UNSCHEDULABLE, "All PostFilter plugins are skipped")
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for pl in self.post_filter:
            try:
                if self.record_plugin_metrics:
                    r, st = self._observed("PostFilter", pl, pl.post_filter, state, pod, statuses)
                else:
                    r, st = pl.post_filter(state, pod, statuses)
                passed = st.is_success()
            except Exception as exc:
                st = self.failure("PostFilter", pl, exc)
                return None, error(f'running PostFilter plugin "{pl.name}": {st.message()}').with_plugin(pl.name)
            if passed:
                return r, st
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, st.with_plugin(pl.name)
            if not st.is_rejected():
                return None, Status(Code.ERROR, st.message(), plugin=pl.name)
            if r is not None:  # every PostFilterResult is ModeOverride (an empty node clears the nomination)
                result = r
            reasons.extend(st.reasons)
            if not rejector:
                rejector = pl.name
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # --- PreScore ---------------------------------------------------------------------------------
    def run_pre_score_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], record: dict[str, str] | None = None
    ) -> Status:
        skip_plugins: set[str] = set()
        for pl in self.pre_score:
            try:
                if self.record_plugin_metrics:
                    st = self._observed("PreScore", pl, pl.pre_score, state, pod, nodes)
                else:
                    st = pl.pre_score(state, pod, nodes)
                code = st.code
            except Exception as exc:
                st = self.failure("PreScore", pl, exc)
                code = st.code
            if record is not None:
                record[pl.name] = status_text(st)
            if code == Code.SUCCESS:
                continue
            if code == Code.SKIP:
                skip_plugins.add(pl.name)
                continue
            return error(f'running PreScore plugin "{pl.name}": {st.message()}').with_plugin(pl.name)
        state.skip_score_plugins = skip_plugins
        return success()

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter)

    # --- Reserve / Permit / Bind ------------------------------------------------------------------
    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for pl in self.reserve:
            try:
                if self.record_plugin_metrics:
                    st = self._observed("Reserve", pl, pl.reserve, state, pod, node_name)
                else:
                    st = pl.reserve(state, pod, node_name)
                passed = st.is_success()
            except Exception as exc:
                st, passed = self.failure("Reserve", pl, exc), False
            if not passed:
                if st.is_rejected():
                    return st.with_plugin(pl.name)
                return error(f'running Reserve plugin "{pl.name}": {st.message()}').with_plugin(pl.name)
        return success()

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in reversed(self.reserve):
            try:
                pl.unreserve(state, pod, node_name)
            except Exception as exc:  # Unreserve cannot fail: the others still run
                self.failure("Unreserve", pl, exc)

    def run_permit_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, dict[str, float]]:
        """``RunPermitPlugins``: a rejection or error ends the run; plugins answering Wait give their timeouts
        (capped at 15 minutes), returned per plugin for the waiting pod."""
        waits: dict[str, float] = {}
        last_wait = Status(Code.WAIT)
        for pl in self.permit:
            try:
                if self.record_plugin_metrics:
                    st, timeout = self._observed("Permit", pl, pl.permit, state, pod, node_name)
                else:
                    st, timeout = pl.permit(state, pod, node_name)
                waiting = st.is_wait()
            except Exception as exc:
                st = self.failure("Permit", pl, exc)
                return error(f'running Permit plugin "{pl.name}": {st.message()}').with_plugin(pl.name), {}
            if waiting:
                waits[pl.name] = min(float(timeout), MAX_PERMIT_TIMEOUT)
                last_wait = st
                continue
            if not st.is_success():
                if st.is_rejected():
                    return st.with_plugin(pl.name), {}
                return error(f'running Permit plugin "{pl.name}": {st.message()}').with_plugin(pl.name), {}
        if waits:
            if self.handle.kube_version.minor >= 36:
                # v1.36 keeps the last waiting plugin's reasons and appends its own, without the pod's name.
                return Status(Code.WAIT, *last_wait.reasons, PERMIT_WAIT_REASON), waits
            msg = f'{PERMIT_WAIT_REASON} "{pod.name}"'
            return Status(Code.WAIT, msg), waits
        return success(), {}

    def gate_enabled(self, name: str) -> bool:
        """The scheduler's feature gate ``name``, asked of the handle once per framework (its gates never change: a
        new configuration builds new frameworks)."""
        on = self._gates_asked.get(name)
        if on is None:
            on = self._gates_asked[name] = self.handle.gate_enabled(name)
        return on

    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``RunPreBindPreFlights``: Success when a PreBind plugin has work for the pod, Skip when none has; the
        plugins that said Skip are kept on ``state`` and left out of PreBind; any other answer is an error."""
        skipped: set[str] = set()
        answer = Status(Code.SKIP)
        for pl in self.pre_bind:
            try:
                st = pl.pre_bind_pre_flight(state, pod, node_name)
            except Exception as exc:
                st = self.failure("PreBindPreFlight", pl, exc)
            if st.code == Code.ERROR:
                return error(f'running PreBindPreFlight "{pl.name}": {st.message()}').with_plugin(pl.name)
            if st.is_success():
                answer = success()
            elif st.is_skip():
                skipped.add(pl.name)
            else:
                return error(
                    f'PreBindPreFlight {pl.name} returned "{st.code.label}", which is unsupported. It is '
                    "supposed to return Success, Skip, or Error status"
                ).with_plugin(pl.name)
        state.skip_pre_bind_plugins = skipped
        return answer

    def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        # The pre-flights ran in the binding cycle (NominatedNodeNameForExpectation): the plugins they skipped stay
        # skipped; without them each plugin's pre-flight decides here.
        skipped = state.skip_pre_bind_plugins
        for pl in self.pre_bind:
            try:
                if skipped is not None:
                    if pl.name in skipped:
                        continue
                else:
                    st = pl.pre_bind_pre_flight(state, pod, node_name)
                    if st.is_skip():
                        continue
                    if not st.is_success():
                        return st.with_plugin(pl.name)
                if self.record_plugin_metrics:
                    st = self._observed("PreBind", pl, pl.pre_bind, state, pod, node_name)
                else:
                    st = pl.pre_bind(state, pod, node_name)
                if not st.is_success():
                    return st.with_plugin(pl.name)
            except Exception as exc:
                st = self.failure("PreBind", pl, exc)
                return error(f'running PreBind plugin "{pl.name}": {st.message()}').with_plugin(pl.name)
        return success()

    def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self.bind:
            return error("no bind plugin")
        st = success()
        for pl in self.bind:
            try:
                if self.record_plugin_metrics:
                    st = self._observed("Bind", pl, pl.bind, state, pod, node_name)
                else:
                    st = pl.bind(state, pod, node_name)
                skipped = st.is_skip()
            except Exception as exc:
                st = self.failure("Bind", pl, exc)
                return error(f'running Bind plugin "{pl.name}": {st.message()}').with_plugin(pl.name)
            if skipped:
                continue
            if not st.is_success():
                return st.with_plugin(pl.name)
            return st.with_plugin(pl.name)
        return st

    def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in self.post_bind:
            try:
                pl.post_bind(state, pod, node_name)
            except Exception as exc:  # PostBind cannot fail: the others still run
                self.failure("PostBind", pl, exc)

    def describe(self) -> dict[str, Any]:
        return {"profile": self.profile_name, "plugins": self.plugin_names(), "weights": dict(self.weights)}
