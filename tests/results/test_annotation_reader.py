"""kube-scheduler-simulator's result annotations read back: what annotations.py writes for kss's own attempts reads
into the same record, the legacy prefix is read too, and a value of the wrong shape is a warning on that key alone."""

from __future__ import annotations

import json

from kss_sim.results import annotations as keys
from kss_sim.results.annotation_reader import fill_attempt, read_result_annotations
from kss_sim.scheduler.record import Attempt
from tests.results.test_recording import run_two_attempts


def test_what_kss_writes_reads_back_into_the_same_matrices() -> None:
    first, second, _ = run_two_attempts()
    for written in (first, second):
        read = read_result_annotations(keys.attempt_annotations(written))
        assert read.warnings == []
        att = Attempt(pod="default/web", attempt=1, priority=0, profile="external")
        fill_attempt(att, read)
        assert att.filter == written.filter
        # The annotations hold every verdict but not the plugins' order: a node two plugins rejected stops at the
        # first by name (kube-scheduler's loop stopped at the first in its framework's order).
        assert set(att.filter_fail) == set(written.filter_fail)
        assert att.feasible_count == written.feasible_count
        assert (att.score or {}) == (written.score or {})
        assert (att.final_score or {}) == (written.final_score or {})
        assert (att.total or {}) == (written.total or {})
        assert att.bind == written.bind and att.reserve == written.reserve
        assert read.selected_node == written.bound_to


def test_the_legacy_prefix_is_read() -> None:
    read = read_result_annotations(
        {
            "scheduler-simulator/filter-result": json.dumps({"n1": {"NodeName": "passed"}}),
            "scheduler-simulator/selected-node": "n1",
        }
    )
    assert read.filter == {"n1": {"NodeName": "passed"}}
    assert read.selected_node == "n1"
    assert read.found == [keys.FILTER_RESULT, keys.SELECTED_NODE]


def test_each_value_of_the_wrong_shape_is_a_warning_and_left_out() -> None:
    read = read_result_annotations(
        {
            keys.FILTER_RESULT: json.dumps(["n1"]),
            keys.SCORE_RESULT: json.dumps({"n1": {"ImageLocality": "12.5"}}),
            keys.FINALSCORE_RESULT: json.dumps({"n1": {"ImageLocality": "25"}}),
            keys.PREFILTER_RESULT: json.dumps({"NodeAffinity": "n1"}),
            keys.BIND_RESULT: "{",
            keys.RESERVE_RESULT: json.dumps({"VolumeBinding": 1}),
            keys.SELECTED_NODE: 7,
        }
    )
    assert read.warnings == [
        f"annotation {keys.PREFILTER_RESULT}: 'NodeAffinity' must be an array of node names; left out",
        f"annotation {keys.FILTER_RESULT}: the value must be a JSON object, not an array; left out",
        f"annotation {keys.SCORE_RESULT}: node 'n1', score '12.5' is not an integer; left out",
        f"annotation {keys.RESERVE_RESULT}: 'VolumeBinding' must be a string, not a number; left out",
        f"annotation {keys.BIND_RESULT}: not JSON (unexpected end of data: line 1 column 2 (char 1)); left out",
        f"annotation {keys.SELECTED_NODE}: the value must be a string, not a number; left out",
    ]
    assert read.filter == {} and read.score == {} and read.bind == {} and read.selected_node is None
    assert read.final_score == {"n1": {"ImageLocality": 25}}  # the good keys stand
    att = Attempt(pod="default/web", attempt=1, priority=0, profile="external")
    fill_attempt(att, read)
    assert att.total == {"n1": 25} and att.score == {"n1": {"ImageLocality": 25}}
