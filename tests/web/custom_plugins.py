"""NotOnTainted and LikesB, users' plugins of the tests loaded as users' plugins are (``KSS_PLUGIN_MODULES``), so
the scheduler's own process imports them too: test_custom_plugins.py."""

from __future__ import annotations

from kss_sim.scheduler.framework import CycleState, FilterPlugin, ScorePlugin, Status, success, unschedulable
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo


class NotOnTainted(FilterPlugin):
    name = "NotOnTainted"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        return unschedulable("node(s) marked tainted") if "kss.test/tainted" in node_info.labels else success()


class LikesB(ScorePlugin):
    name = "LikesB"

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        return (100 if node_info.name == "b" else 10), success()


# Listed rather than decorated: registered again whenever a test's fresh registry loads the module.
PLUGINS = [NotOnTainted, LikesB]
