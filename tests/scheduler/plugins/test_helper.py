"""``helper.DefaultNormalizeScore``, shared by TaintToleration, NodeAffinity and DynamicResources."""

from __future__ import annotations

import numpy as np
import pytest

from kss_sim.scheduler.framework import NodeScore
from kss_sim.scheduler.plugins.helper import default_normalize_batch, default_normalize_score


def normalized(scores: list[int], *, reverse: bool) -> list[int]:
    node_scores = [NodeScore(f"n{i}", s) for i, s in enumerate(scores)]
    default_normalize_score(100, reverse, node_scores)
    return [ns.score for ns in node_scores]


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        ([0, 1, 3], False, [0, 33, 100]),
        ([0, 1, 3], True, [100, 67, 0]),
        ([0, 0], False, [0, 0]),
        ([0, 0], True, [100, 100]),
        ([-5, -1], False, [-5, -1]),  # the maximum starts at 0: all-negative scores stay as they are
        ([-1, 3], False, [-33, 100]),  # Go's division truncates toward zero (floor would give -34)
    ],
)
def test_default_normalize_score_scales_by_the_maximum_as_go_does(
    scores: list[int], reverse: bool, expected: list[int]
) -> None:
    assert normalized(scores, reverse=reverse) == expected


@pytest.mark.parametrize("reverse", [False, True])
def test_the_array_form_agrees_with_the_list_form_on_non_negative_scores(reverse: bool) -> None:
    scores = [0, 7, 3, 10, 0]
    batch = default_normalize_batch(100, reverse, np.array(scores, np.int64))
    assert batch is not None and batch.tolist() == normalized(scores, reverse=reverse)
    assert default_normalize_batch(100, reverse, np.array([-1, 2], np.int64)) is None
