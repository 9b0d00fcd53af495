"""examples/replay/gpu-day.yaml through `kss replay`, as docs/replay.md runs it: each pod's times worked by hand
from the workload (pods.csv), and the report written."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "replay" / "gpu-day.yaml"
HOUR = 3600


def test_the_gpu_day_example_replays_as_its_comments_say(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kss_sim.cli", "replay", str(EXAMPLE), "--out", str(tmp_path), "--quiet"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pods = {row["pod"].split("/", 1)[1]: row for row in csv.DictReader((tmp_path / "pods.csv").open())}

    def at(name: str, column: str) -> float:
        return float(pods[name][column])

    # train-1 and train-2 take all 8 GPUs; train-3 (arrived at 3 min) binds the moment train-1 ends: 1 min + 2 h.
    assert at("train-3", "bound") == 60 + 2 * HOUR
    assert at("train-3", "wait") == 60 + 2 * HOUR - 180
    assert pods["train-3"]["node"] == pods["train-1"]["node"]
    assert "Insufficient nvidia.com/gpu" in pods["train-3"]["lastMessage"]
    # The Job: 4 completions, 2 at a time, 10 min each, from 1 h: waves at 1 h and 1 h 10 min, done at 1 h 20 min.
    evals = [row for name, row in pods.items() if name.startswith("eval-")]
    assert sorted(float(r["bound"]) for r in evals) == [HOUR, HOUR, HOUR + 600, HOUR + 600]
    assert max(float(r["finished"]) for r in evals) == HOUR + 1200
    assert all(r["outcome"] == "succeeded" and r["owner"] == "Job/default/eval" for r in evals)
    # gpu-a is cordoned from 3 h to 4 h: train-4 (3 h 30 min) can only go to gpu-b.
    assert pods["train-4"]["node"] == "gpu-b"
    # The urgent pod (5 h 10 min) preempts the filler on its node, which leaves after its 30 s grace period.
    victim = next(row for name, row in pods.items() if name.startswith("filler-") and row["outcome"] == "preempted")
    assert int(victim["preemptions"]) == 1
    assert at(victim["pod"].split("/")[1], "finished") == 5 * HOUR + 600 + 30
    assert at("urgent", "bound") == 5 * HOUR + 600 + 30
    assert pods["urgent"]["node"] == victim["node"]
    # The Deployment's two replicas run throughout.
    assert sorted(r["outcome"] for n, r in pods.items() if n.startswith("web-")) == ["running", "running"]
    report = (tmp_path / "report.html").read_text()
    assert "kssReplayCharts.render" in report and 'data-fact="neverScheduled">0<' in report


def test_the_sweep_example_shows_a_third_gpu_node_ends_the_wait(tmp_path: Path) -> None:
    # 2 configurations x 2 node shapes x 2 seeds on a real 2-worker Dask cluster. On its own nodes the workload's
    # train-3 waits 7,080 s for train-1's GPUs (the p95 of 13 waits is that wait); with a third 4-GPU node it
    # finds GPUs at once, whatever the scoring: every pod binds on arrival.
    sweep = EXAMPLE.parent / "sweep.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "kss_sim.cli", "sweep", str(sweep), "--workers", "2", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((tmp_path / "sweep.csv").open()))
    assert len(rows) == 8 and all(r["status"] == "done" for r in rows)
    for row in rows:
        expected = 0.0 if row["nodeShape"] == "plus-gpu-node" else 60 + 2 * HOUR - 180
        assert float(row["waitSeconds.p95"]) == expected, row["cell"]
