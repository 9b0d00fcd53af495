"""Two small plugins written only against ``kss.framework``, kss's public plugin API.

- ``MaxPodsPerNode`` (Filter): a node that already runs ``maxPods`` pods is rejected.
- ``PreferNodeLabel`` (Score): nodes carrying the label ``label`` (with ``value``, when given) score 100, others 0.
"""

from __future__ import annotations

from typing import Any

from kss.framework import (
    MAX_NODE_SCORE,
    CycleState,
    FilterPlugin,
    NodeInfo,
    PodInfo,
    ScorePlugin,
    Status,
    success,
    unschedulable,
)

DEFAULT_MAX_PODS = 10


class MaxPodsPerNode(FilterPlugin):
    """Reject nodes that already run ``maxPods`` pods (args: ``maxPods``, default 10)."""

    name = "MaxPodsPerNode"

    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        return {"maxPods": DEFAULT_MAX_PODS, **args}

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        value = args.get("maxPods")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return [("maxPods", f"must be a positive integer, got {value!r}")]
        return []

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if len(node_info.pods) >= self.args["maxPods"]:
            return unschedulable(f"node(s) already run {self.args['maxPods']} pods")
        return success()


class PreferNodeLabel(ScorePlugin):
    """Prefer nodes labelled ``label`` (=``value`` when ``value`` is given) (args: ``label``, ``value``)."""

    name = "PreferNodeLabel"

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        if not isinstance(args.get("label"), str) or not args["label"]:
            return [("label", "Required value: the node label to prefer")]
        if not isinstance(args.get("value", ""), str):
            return [("value", "must be a string")]
        return []

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        label, value = self.args["label"], self.args.get("value", "")
        if label in node_info.labels and (not value or node_info.labels[label] == value):
            return MAX_NODE_SCORE, success()
        return 0, success()
