"""An evicted pod on the Runs pages: its outcome, reason and time in the pod's line, the run's eviction figure."""

from __future__ import annotations

from kss_sim.web.views.runs import OUTCOMES, pod_line, summary_facts


def test_an_evicted_pods_line_has_its_reason_and_time_and_the_run_its_evictions_by_reason() -> None:
    row = {"pod": "default/p", "outcome": "evicted", "reason": "drain", "evicted": 70, "finished": 100, "node": "n1"}
    line = pod_line(row)
    assert (line.outcome, line.reason, line.evicted) == ("evicted", "drain", "00:01:10")
    assert (pod_line({"pod": "default/q", "outcome": "running"}).reason, pod_line({"pod": "default/q"}).evicted) == (
        "",
        "",
    )
    assert "evicted" in OUTCOMES
    facts = {
        f.label: f.value for f in summary_facts({"evictions": {"total": 3, "taint": 1, "drain": 2, "nodeFailure": 0}})
    }
    assert facts["Evictions"] == "3 (taint 1, drain 2)"
    assert "Evictions" not in {f.label for f in summary_facts({"evictions": {"total": 0}})}
