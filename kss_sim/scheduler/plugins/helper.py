"""Helpers shared by plugins (upstream's ``pkg/scheduler/framework/plugins/helper``): score normalization, and
what the queueing hints read of an event's objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kss_sim.scheduler.columns import IntArray, filled
from kss_sim.scheduler.framework import NodeScore
from kss_sim.scheduler.nodeinfo import PodInfo


def node_labels(node: Mapping[str, Any]) -> dict[str, str]:
    """A Node object's labels (a queueing hint's node)."""
    labels: dict[str, str] = (node.get("metadata") or {}).get("labels") or {}
    return labels


def node_taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    taints: list[dict[str, Any]] = (node.get("spec") or {}).get("taints") or []
    return taints


def assigned_or_nominated(pod: PodInfo) -> bool:
    """The pod is bound or nominated to a node (an unscheduled pod's deletion frees nothing)."""
    return bool(pod.node_name or (pod.pod.get("status") or {}).get("nominatedNodeName"))


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """``helper.DefaultNormalizeScore``: scale to ``max_priority`` by the highest score, optionally reversed."""
    # The maximum starts at 0, so all-negative scores (NodeAffinity's negative added weights) stay as they are.
    max_count = max((s.score for s in scores), default=0)
    max_count = max(max_count, 0)
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        product = max_priority * s.score
        # Go's int64 division truncates toward zero (floor division differs for negative scores).
        v = product // max_count if product >= 0 else -(-product // max_count)
        s.score = max_priority - v if reverse else v


def default_normalize_batch(max_priority: int, reverse: bool, scores: IntArray) -> IntArray | None:
    """``default_normalize_score`` on an array (non-negative scores; None otherwise)."""
    if not len(scores):
        return scores.copy()
    if not np.count_nonzero(scores):
        # Every score 0 (a common case, decided in one pass): max_count is 0.
        return filled(len(scores), max_priority, np.int64) if reverse else np.zeros(len(scores), np.int64)
    if int(scores.min()) < 0:
        return None
    max_count = int(scores.max())
    if max_count == 0:
        return np.full(len(scores), max_priority, np.int64) if reverse else scores.copy()
    v = max_priority * scores // max_count
    out: IntArray = max_priority - v if reverse else v
    return out
