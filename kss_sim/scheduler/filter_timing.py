"""Filter timing for plugins that are not kss's own: a slow user Filter shows in the plugin-duration metric.

The framework times every extension point through its plugin observer, but not Filter: it runs once per node
(or as one NumPy pass for in-tree plugins), and kube-scheduler itself samples it. A user's plugin is the one
whose Filter cost is unknown, so the framework puts a ``TimedFilter`` in its Filter list in place of each
out-of-tree Filter plugin when an observer is set: each ``filter`` call, and each batch hook, is reported as
(plugin, "Filter", status, seconds). The plugin object itself is left as it is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch
from kss_sim.scheduler.framework import CycleState, FilterPlugin, Status
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

# (plugin, extension point, status code label, seconds): what the framework reports of each timed plugin call.
PluginObserver = Callable[[str, str, str, float], None]

log = logging.getLogger("kss.scheduler")


class TimedFilter(FilterPlugin):
    """``plugin``'s Filter, each call timed and reported to ``observe``."""

    def __init__(self, plugin: FilterPlugin, observe: PluginObserver) -> None:
        super().__init__(plugin.handle, plugin.args)
        self.plugin = plugin
        self.name = plugin.name  # type: ignore[misc]  # an instance's name: the plugin it stands for
        self._observe = observe

    def _report(self, started: float, code: str) -> None:
        try:
            self._observe(self.name, "Filter", code, time.perf_counter() - started)
        except Exception:  # metrics must never break scheduling
            log.exception("plugin observer failed")

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        started = time.perf_counter()
        try:
            st = self.plugin.filter(state, pod, node_info)
        except Exception:
            self._report(started, "Error")
            raise
        self._report(started, st.code.label if isinstance(st, Status) else "Error")
        return st

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        started = time.perf_counter()
        mask = self.plugin.filter_nodes(state, pod, batch)
        if mask is not None:
            self._report(started, "Success")
        return mask

    def filter_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        started = time.perf_counter()
        keys = self.plugin.filter_keys(state, pod, batch)
        if keys is not None:
            self._report(started, "Success")
        return keys

    def filter_status_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        return self.plugin.filter_status_keys(state, pod, batch)

    def filter_status_of_key(self, state: CycleState, pod: PodInfo, key: int) -> Status | None:
        return self.plugin.filter_status_of_key(state, pod, key)
