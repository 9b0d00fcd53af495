"""A small timed workload replayed by the engine with the metrics, and the four files it writes."""

from __future__ import annotations

import csv
from pathlib import Path

import orjson

from kss_sim import figures
from kss_sim.replay.cli import summary_lines
from kss_sim.replay.engine import Replay
from kss_sim.replay.metrics import Metrics
from kss_sim.replay.outputs import FILES, POD_COLUMNS, write_outputs
from kss_sim.replay.workload import parse_workload

WORKLOAD = """
apiVersion: kss.sigs.k8s.io/v1alpha1
kind: TimedWorkload
metadata: {name: small-gpu}
spec:
  start:
  - {apiVersion: v1, kind: Node, metadata: {name: gpu-a, labels: {nvidia.com/gpu.product: V100M32}},
     status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: gpu-b, labels: {nvidia.com/gpu.product: T4}},
     status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "2"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: cpu-c}, status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}}
  events:
  - at: 0
    runFor: 2h
    create: {apiVersion: v1, kind: Pod, metadata: {name: train-1}, spec: {containers: [{name: main, resources: {
             requests: {cpu: "2", memory: 4Gi, nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}}]}}
  - at: 10m
    runFor: 5h
    create: {apiVersion: v1, kind: Pod, metadata: {name: train-2}, spec: {containers: [{name: main, resources: {
             requests: {cpu: "2", memory: 4Gi, nvidia.com/gpu: "3"}, limits: {nvidia.com/gpu: "3"}}}]}}
  - at: 30m
    runFor: 1h
    create: {apiVersion: v1, kind: Pod, metadata: {name: web-1}, spec: {containers: [{name: main, resources: {
             requests: {cpu: "6", memory: 8Gi}}}]}}
  - at: 1h
    create: {apiVersion: v1, kind: Pod, metadata: {name: huge}, spec: {containers: [{name: main, resources: {
             requests: {cpu: "64"}}}]}}
  - at: 3h
    runFor: 1h
    create: {apiVersion: v1, kind: Pod, metadata: {name: infer-1}, spec: {containers: [{name: main, resources: {
             requests: {cpu: "1", memory: 2Gi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}}
"""


def replay_into(out: Path) -> dict[str, Path]:
    workload = parse_workload(WORKLOAD)
    metrics = Metrics(1800, workload=workload)
    result = Replay(workload, sample_interval=1800, observers=[metrics], seed=4).run()
    return write_outputs(result, metrics, out)


def test_replay_writes_summary_pods_and_samples(tmp_path: Path) -> None:
    paths = replay_into(tmp_path / "run")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == sorted(FILES)

    summary = orjson.loads(paths["summary.json"].read_bytes())
    assert (summary["pods"], summary["scheduled"], summary["neverScheduled"]) == (5, 4, 1)
    assert summary["virtualSeconds"] == 25200  # train-2 bound at 2 h runs 5 h
    # train-2 (3 GPUs) waits from 10 min until train-1 leaves gpu-a at 2 h: 6600 s; the others bind at once.
    assert summary["waitSeconds"] == {"p50": 0, "p95": 6600, "p99": 6600, "max": 6600, "mean": 1650}
    assert summary["allocation"]["gpu"]["peak"] == round(4 / 6, 6)
    assert summary["seed"] == 4 and summary["workload"] == "small-gpu"

    with paths["pods.csv"].open(newline="") as f:
        pods = {row["pod"]: row for row in csv.DictReader(f)}
    assert list(next(iter(pods.values()))) == list(POD_COLUMNS)
    assert (pods["default/train-2"]["node"], pods["default/train-2"]["wait"]) == ("gpu-a", "6600")
    assert pods["default/train-1"]["finished"] == "7200" and pods["default/train-1"]["outcome"] == "succeeded"
    assert pods["default/huge"]["bound"] == "" and "Insufficient cpu" in pods["default/huge"]["lastMessage"]

    with paths["timeseries.csv"].open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["t"]) for r in rows] == list(range(0, 25201, 1800))
    first = rows[0]
    assert (first["gpu_requested"], first["gpu_allocatable"]) == ("2", "6")
    # FGD at t=0, the target being the workload's 5 pods (one shape each, 0.2 apiece), each GPU node with 2 free
    # GPUs: train-1 and infer-1 fit on both (0); train-2 (3 GPUs) lacks GPUs, web-1 and huge use none (2000 each):
    # 0.6 * 2000 per node, 2400 milli-GPUs in all = 2.4 GPUs, of the 4 free.
    assert (first["gpu_fragmentation"], first["gpu_fragmentation_ratio"]) == ("2.4", "0.6")
    at_1h = rows[2]  # huge arrived and failed: pending and unschedulable, in the unschedulable queue
    assert (at_1h["pods_pending"], at_1h["pods_unschedulable"], at_1h["queue_unschedulable"]) == ("2", "2", "2")
    assert rows[-1]["pods_running"] == "0" and rows[-1]["nodes_empty"] == "3"

    html = paths["report.html"].read_text()
    assert "Replay report: small-gpu" in html and "kssReplayCharts.render" in html


def test_same_workload_and_seed_write_the_same_bytes(tmp_path: Path) -> None:
    first, second = replay_into(tmp_path / "a"), replay_into(tmp_path / "b")
    for name in ("summary.json", "pods.csv", "timeseries.csv", "report.html"):
        assert first[name].read_bytes() == second[name].read_bytes(), name


EVICTIONS = """
apiVersion: kss.sigs.k8s.io/v1alpha1
kind: TimedWorkload
metadata: {name: evictions}
spec:
  start:
  - {apiVersion: v1, kind: Node, metadata: {name: a}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: b}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: c}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Pod, metadata: {name: on-a}, spec: {nodeName: a, containers: [{name: m, image: x}]}}
  - {apiVersion: v1, kind: Pod, metadata: {name: on-b}, spec: {nodeName: b, containers: [{name: m, image: x}]}}
  - {apiVersion: v1, kind: Pod, metadata: {name: on-c}, spec: {nodeName: c, containers: [{name: m, image: x}]}}
  events:
  - {at: 10, taint: {node: a, key: k, effect: NoExecute}}
  - {at: 10, drain: b}
  - {at: 10, failNode: c}
"""


def test_evicted_pods_are_written_with_their_reason_counted_in_the_summary_and_listed_in_the_report(
    tmp_path: Path,
) -> None:
    workload = parse_workload(EVICTIONS)
    metrics = Metrics()
    result = Replay(workload, observers=[metrics]).run()
    paths = write_outputs(result, metrics, tmp_path)
    with paths["pods.csv"].open(newline="") as f:
        pods = {
            row["pod"]: (row["evicted"], row["finished"], row["outcome"], row["reason"]) for row in csv.DictReader(f)
        }
    assert pods == {
        "default/on-a": ("10", "40", "evicted", "taint"),
        "default/on-b": ("10", "40", "evicted", "drain"),
        # c stopped: unreachable at 60, evicted 300 s on, Terminating for good (no kubelet to end it)
        "default/on-c": ("360", "", "evicted", "nodeFailure"),
    }
    summary = orjson.loads(paths["summary.json"].read_bytes())
    assert summary["outcomes"] == {"evicted": 3}
    assert summary["evictions"] == {"total": 3, "taint": 1, "drain": 1, "nodeFailure": 1}
    lines = summary_lines(result, summary, None, None, wall_seconds=1.0)
    assert lines[1].endswith(", evictions 3 (taint 1, drain 1, nodeFailure 1)")
    # The peaks in amounts too, in each resource's unit, read from the same summary the report reads.
    peaks = next(line for line in lines if line.startswith("peak allocation: "))
    cpu = summary["allocation"]["cpu"]
    assert (
        f"({figures.run_quantity('cpu', cpu['peakRequested'])} of {figures.run_quantity('cpu', cpu['allocatable'])})"
        in peaks
    )
    assert "cpu " in peaks and "memory " in peaks and "Gi" in peaks, peaks
    html = paths["report.html"].read_text()
    assert "Evicted (3)" in html and "still terminating" in html and 'data-fact="evictions">3' in html


DELETIONS = """
apiVersion: kss.sigs.k8s.io/v1alpha1
kind: TimedWorkload
metadata: {name: deletions}
spec:
  start:
  - {apiVersion: v1, kind: Node, metadata: {name: a}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 100}
  events:
  - at: 0
    create: {apiVersion: v1, kind: Pod, metadata: {name: done}, spec: {containers: [{name: m, image: x, resources: {requests: {cpu: "1"}}}]}}
    runFor: 5
  - at: 0
    create: {apiVersion: v1, kind: Pod, metadata: {name: deleted}, spec: {terminationGracePeriodSeconds: 10, containers: [{name: m, image: x, resources: {requests: {cpu: "1"}}}]}}
    endAt: 20
  - at: 0
    create: {apiVersion: v1, kind: Pod, metadata: {name: victim}, spec: {containers: [{name: m, image: x, resources: {requests: {cpu: "3"}}}]}}
  - at: 30
    create: {apiVersion: v1, kind: Pod, metadata: {name: urgent}, spec: {priorityClassName: high, containers: [{name: m, image: x, resources: {requests: {cpu: "4"}}}]}}
"""  # noqa: E501


def test_graceful_deletions_are_written_with_when_they_began_terminating_and_when_they_were_gone(
    tmp_path: Path,
) -> None:
    result = Replay(parse_workload(DELETIONS)).run()
    paths = write_outputs(result, None, tmp_path)
    with paths["pods.csv"].open(newline="") as f:
        pods = {row["pod"]: (row["terminating"], row["finished"], row["outcome"]) for row in csv.DictReader(f)}
    assert pods == {
        "default/done": ("", "5", "succeeded"),  # ran its time: Succeeded, nothing held after
        "default/deleted": ("20", "30", "deleted"),
        "default/victim": ("30", "60", "preempted"),
        "default/urgent": ("", "", "running"),
    }
    summary = orjson.loads(paths["summary.json"].read_bytes())
    assert summary["outcomes"] == {"deleted": 1, "preempted": 1, "running": 1, "succeeded": 1}
