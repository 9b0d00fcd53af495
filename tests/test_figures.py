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


def test_cpu_reads_as_kubectl_writes_it() -> None:
    amounts = (0, 250, 1000, 1500, 4000, 99_999, 116_448_000, 116_448_500, 0.4, None)
    assert [figures.cpu(m) for m in amounts] == [
        "0", "250m", "1", "1500m", "4", "99999m", "116448", "116448.5", "0", "–",
    ]  # fmt: skip


def test_bytes_read_in_the_largest_binary_unit_they_reach() -> None:
    gi, mi, ki = 2**30, 2**20, 2**10
    amounts = (0, 512, 1024, 512 * ki, 1000 * mi, 32 * gi, int(31.5 * gi), 10**9, 3 * 2**50, 1025, None)
    assert [figures.byte_size(b) for b in amounts] == [
        "0", "512", "1Ki", "512Ki", "1000Mi", "32Gi", "31.5Gi", "953.7Mi", "3Pi", "1.0Ki", "–",
    ]  # fmt: skip
    # Used and total on one scale: not kubectl's exact "1536Mi" or "24478092Mi" beside a total in Gi.
    assert [figures.byte_size(n * mi) for n in (1536, 24478092)] == ["1.5Gi", "23.3Ti"]


def test_a_quantity_is_written_in_its_resources_unit() -> None:
    assert figures.quantity("cpu", 3500) == "3500m"
    assert figures.quantity("memory", 2 * 2**30) == "2Gi"
    assert figures.quantity("ephemeral-storage", 10 * 2**30) == "10Gi"
    assert figures.quantity("hugepages-2Mi", 4 * 2**20) == "4Mi"
    assert figures.quantity("pods", 110) == "110"
    assert figures.quantity("nvidia.com/gpu", 8) == "8"


def test_a_runs_amount_is_read_in_the_units_its_summary_holds() -> None:
    # summary.json and timeseries.csv hold cpu in cores; the rest as the API counts them.
    assert figures.run_quantity("cpu", 14) == "14"
    assert figures.run_quantity("cpu", 1.5) == "1500m"
    assert figures.run_quantity("memory", 45097156608) == "42Gi"
    assert figures.run_quantity("gpu", 8) == "8"
    assert figures.run_quantity("cpu", None) == figures.MISSING  # a run recorded before the amounts were kept
