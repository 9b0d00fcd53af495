"""``kss_sim.figures``: one way to write a run's figures, so report.html, compare.html, the UI and the CLI agree."""

from __future__ import annotations

from kss_sim import figures


def test_durations_round_to_the_second_past_a_minute_and_keep_three_figures_under_it() -> None:
    spans = (0, 0.25, 4.567, 52, 59.6, 119.6, 546.6, 3600, 7080, 54000, 90061, None, float("nan"))
    assert [figures.duration(s) for s in spans] == [
        "0 s", "0.25 s", "4.57 s", "52 s", "59.6 s", "2 min", "9 min 7 s", "1 h", "1 h 58 min", "15 h", "1 d 1 h",
        "–", "–",
    ]  # fmt: skip


def test_percentages_numbers_and_counts() -> None:
    assert [figures.percent(r) for r in (0, 0.35, 0.5674, 1, None)] == ["0.0 %", "35.0 %", "56.7 %", "100.0 %", "–"]
    assert [figures.number(v) for v in (3.6923076, 1.6, 3, 0.005, -0.001, None)] == [
        "3.69",
        "1.6",
        "3",
        "0.01",
        "0",
        "–",
    ]
    assert [figures.count(v) for v in (13, 13.0, None)] == ["13", "13", "–"]


def test_gpu_beside_an_extended_gpu_resource_is_explained_once() -> None:
    assert figures.resource_notes(["cpu", "memory"]) == []
    (note,) = figures.resource_notes(["cpu", "nvidia.com/gpu", "gpu"])
    assert note.startswith("gpu: every GPU of the cluster, whichever way it is offered (here nvidia.com/gpu, ")
    (dra,) = figures.resource_notes(["cpu", "gpu"])
    assert "(DRA devices of GPU drivers)" in dra
