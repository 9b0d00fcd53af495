"""The Score extension point of the framework runtime (Score, NormalizeScore, weights): per node list and on a batch
of nodes.

``ScoreRunners`` is a mixin of ``runtime.Framework``, which defines the state and methods declared here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from kss_sim.scheduler.columns import IntArray, NodeBatch
from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    CycleState,
    NodeScore,
    Plugin,
    ScorePlugin,
    Status,
    error,
    success,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

_R = TypeVar("_R")


def _within_node_score(scores: IntArray) -> bool:
    """Every score within [MIN_NODE_SCORE, MAX_NODE_SCORE] (0..100), in one pass for int64 scores: read as
    unsigned, negative ones are huge. False also when unsure (other dtypes, empty): the caller checks in full."""
    if scores.dtype.type is not np.int64 or not len(scores) or MIN_NODE_SCORE != 0:
        return False
    return int(np.maximum.reduce(scores.view(np.uint64))) <= MAX_NODE_SCORE


def _batch_scores(pl: ScorePlugin, state: CycleState, pod: PodInfo, batch: NodeBatch) -> tuple[IntArray, Status | None]:
    """A plugin's Score on a batch: ``score_batch``, else ``score_nodes`` (then with its status; None: success)."""
    scores = pl.score_batch(state, pod, batch)
    if scores is not None:
        return scores, None
    listed, st = pl.score_nodes(state, pod, batch.nodes)
    return np.array(listed, dtype=np.int64), st


class ScoreRunners:
    """The Score side of ``Framework``."""

    score: list[ScorePlugin]
    weights: dict[str, int]
    record_plugin_metrics: bool

    if TYPE_CHECKING:

        def failure(self, point: str, pl: Plugin, exc: Exception) -> Status: ...

        def _observed(self, point: str, pl: Plugin, run: Callable[..., _R], *args: Any) -> _R: ...

    def run_score_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[dict[str, list[int]], dict[str, list[int]], dict[str, list[int]], Status]:
        """Raw, normalized and weighted scores per plugin (lists aligned with ``nodes``)."""
        raw: dict[str, list[int]] = {}
        normalized: dict[str, list[int]] = {}
        weighted: dict[str, list[int]] = {}
        for pl in self.score:
            if pl.name in state.skip_score_plugins:
                continue
            try:
                if self.record_plugin_metrics:
                    scores, st = self._observed("Score", pl, pl.score_nodes, state, pod, nodes)
                else:
                    scores, st = pl.score_nodes(state, pod, nodes)
                passed = st.is_success()
                if passed:
                    node_scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, scores, strict=True)]
            except Exception as exc:
                st, passed = self.failure("Score", pl, exc), False
            if not passed:
                return (
                    raw,
                    normalized,
                    weighted,
                    error(f'running Score plugins: plugin "{pl.name}" failed with: {st.message()}'),
                )
            raw[pl.name] = list(scores)
            if pl.has_normalize():
                try:
                    st = pl.normalize_score(state, pod, node_scores)
                    passed = st.is_success()
                except Exception as exc:
                    st, passed = self.failure("NormalizeScore", pl, exc), False
                if not passed:
                    return (
                        raw,
                        normalized,
                        weighted,
                        error(f'running Normalize on Score plugins: plugin "{pl.name}" failed with: {st.message()}'),
                    )
            weight = self.weights.get(pl.name, 1)
            norm: list[int] = []
            for ns in node_scores:
                if ns.score > MAX_NODE_SCORE or ns.score < MIN_NODE_SCORE:
                    return (
                        raw,
                        normalized,
                        weighted,
                        error(
                            "applying score defaultWeights on Score plugins: "
                            f'plugin "{pl.name}" returns an invalid score {ns.score}, it should in the range of '
                            f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                        ),
                    )
                norm.append(ns.score)
            normalized[pl.name] = norm
            weighted[pl.name] = [s * weight for s in norm]
        return raw, normalized, weighted, success()

    def run_score_plugins_batch(
        self, state: CycleState, pod: PodInfo, batch: NodeBatch, rows: npt.NDArray[np.uint8] | None = None
    ) -> tuple[dict[str, IntArray], dict[str, IntArray], dict[str, IntArray], Status]:
        """``run_score_plugins`` on a batch: raw, normalized and weighted scores per plugin as int64 arrays.

        With ``rows`` (recording; one row per score plugin, one column per node): each plugin that ran writes its
        normalized scores (validated to be within [0, 100]) to the next row instead of weighted scores.
        """
        raw: dict[str, IntArray] = {}
        normalized: dict[str, IntArray] = {}
        weighted: dict[str, IntArray] = {}
        for pl in self.score:
            if pl.name in state.skip_score_plugins:
                continue
            try:
                if self.record_plugin_metrics:
                    scores, failed = self._observed("Score", pl, _batch_scores, pl, state, pod, batch)
                else:
                    scores, failed = _batch_scores(pl, state, pod, batch)
                passed = failed is None or failed.is_success()
            except Exception as exc:
                failed, passed = self.failure("Score", pl, exc), False
            if not passed and failed is not None:
                return (
                    raw,
                    normalized,
                    weighted,
                    error(f'running Score plugins: plugin "{pl.name}" failed with: {failed.message()}'),
                )
            raw[pl.name] = scores
            norm = scores
            if pl.has_normalize():
                try:
                    batch_norm = pl.normalize_batch(state, pod, scores)
                    if batch_norm is None:
                        node_scores = [
                            NodeScore(name, int(s)) for name, s in zip(batch.names(), scores.tolist(), strict=True)
                        ]
                        st = pl.normalize_score(state, pod, node_scores)
                        if st.is_success():
                            batch_norm = np.array([ns.score for ns in node_scores], dtype=np.int64)
                except Exception as exc:
                    st, batch_norm = self.failure("NormalizeScore", pl, exc), None
                if batch_norm is None:
                    return (
                        raw,
                        normalized,
                        weighted,
                        error(f'running Normalize on Score plugins: plugin "{pl.name}" failed with: {st.message()}'),
                    )
                norm = batch_norm
            if _within_node_score(norm):
                if rows is not None:
                    rows[len(normalized)] = norm
                    normalized[pl.name] = norm
                    continue
                normalized[pl.name] = norm
                weight = self.weights.get(pl.name, 1)
                # Weight 1: the normalized array itself (no caller writes into the score arrays it gets).
                weighted[pl.name] = norm if weight == 1 else norm * weight
                continue
            bad = (norm > MAX_NODE_SCORE) | (norm < MIN_NODE_SCORE)
            if bad.any():
                value = int(norm[int(np.argmax(bad))])
                return (
                    raw,
                    normalized,
                    weighted,
                    error(
                        "applying score defaultWeights on Score plugins: "
                        f'plugin "{pl.name}" returns an invalid score {value}, it should in the range of '
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                    ),
                )
            if rows is not None:
                rows[len(normalized)] = norm
            else:
                weighted[pl.name] = norm * self.weights.get(pl.name, 1)
            normalized[pl.name] = norm
        return raw, normalized, weighted, success()

    def has_score_plugins(self) -> bool:
        return bool(self.score)
