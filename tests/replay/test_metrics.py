"""The replay's metrics on a real small cluster state (NodeInfos with pods, ClusterObjects with DRA objects), and
the summary's arithmetic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from kss_sim.replay.fragmentation import MILLI, TargetTask, TargetWorkload, TaskShape
from kss_sim.replay.metrics import Metrics, nearest_rank, summarize, time_weighted, workload_shapes
from kss_sim.replay.model import PENDING, RUNNING, PodRecord, ReplayResult
from kss_sim.replay.workload import parse_workload
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.record import Attempt

GI = 1024**3
DRIVER = "gpu.kss.sigs.k8s.io"


def node(name: str, *, cpu: str, memory: str, pods: str = "110", labels: dict[str, str] | None = None,
         extended: dict[str, str] | None = None) -> NodeInfo:  # fmt: skip
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extended or {})}
    return NodeInfo({"metadata": {"name": name, "labels": labels or {}}, "status": {"allocatable": alloc}})


def pod(name: str, *, cpu: str, memory: str = "1Gi", gpus: int = 0, claim: str = "") -> PodInfo:
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    resources: dict[str, Any] = {"requests": requests}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": resources}]}
    if claim:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    return PodInfo({"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec})


class State:
    """A ReplayState over real scheduler objects."""

    def __init__(self, nodes: list[NodeInfo], cluster: ClusterObjects) -> None:
        self.now = 0.0
        self.node_list = nodes
        self.cluster = cluster
        self.pods: dict[str, PodRecord] = {}
        self.queues = {"active": 0, "backoff": 1, "unschedulable": 2, "gated": 0}
        self.pending = 3
        self.running = 5

    @property
    def nodes(self) -> Iterable[NodeInfo]:
        return self.node_list

    def queue_counts(self) -> dict[str, int]:
        return dict(self.queues)

    def pending_pods(self) -> int:
        return self.pending

    def running_pods(self) -> int:
        return self.running


def dra_cluster() -> ClusterObjects:
    cluster = ClusterObjects()
    devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "T4"}}} for i in range(2)]
    cluster.put_object("ResourceSlice", {
        "metadata": {"name": "dra-d-gpu"},
        "spec": {"driver": DRIVER, "nodeName": "dra-d", "pool": {"name": "dra-d", "generation": 1,
                 "resourceSliceCount": 1}, "devices": devices},
    })  # fmt: skip
    cluster.put_object("ResourceClaim", {
        "metadata": {"name": "p3-gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 1}}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": "dra-d", "device": "gpu-0"}]}}},
    })  # fmt: skip
    return cluster


# Target: a whole-GPU task needing 4 CPUs (half the pods) and a CPU-only task (the other half).
ONE_GPU = TaskShape(milli_cpu=4000, memory=GI, gpus=1, milli_gpu=MILLI)
CPU_ONLY = TaskShape(milli_cpu=1000, memory=GI)
TARGET = TargetWorkload([TargetTask(ONE_GPU, 0.5), TargetTask(CPU_ONLY, 0.5)])


def cluster_state() -> tuple[State, dict[str, NodeInfo], dict[str, PodInfo]]:
    nodes = {
        "gpu-a": node(
            "gpu-a",
            cpu="8",
            memory="32Gi",
            labels={"nvidia.com/gpu.product": "V100M32"},
            extended={"nvidia.com/gpu": "4"},
        ),
        "cpu-b": node("cpu-b", cpu="4", memory="8Gi", pods="2"),
        "empty-c": node("empty-c", cpu="4", memory="8Gi"),
        "dra-d": node("dra-d", cpu="16", memory="64Gi"),
    }
    pods = {
        "p1": pod("p1", cpu="2", memory="4Gi", gpus=1),
        "p2": pod("p2", cpu="1", gpus=2),
        "b1": pod("b1", cpu="1"),
        "b2": pod("b2", cpu="1"),
        "p3": pod("p3", cpu="1", claim="p3-gpu"),
    }
    for name, where in (("p1", "gpu-a"), ("p2", "gpu-a"), ("b1", "cpu-b"), ("b2", "cpu-b"), ("p3", "dra-d")):
        nodes[where].add_pod(pods[name])
    return State(list(nodes.values()), dra_cluster()), nodes, pods


def test_a_sample_sums_nodes_and_measures_gpus_both_ways() -> None:
    state, _, _ = cluster_state()
    metrics = Metrics(3600, target=TARGET)
    metrics.on_start(state)
    state.pods = {"u1": PodRecord(key="default/x", uid="u1", arrival=0.0)}
    metrics.on_attempt(state, Attempt(pod="default/x", attempt=1, priority=0, profile="default-scheduler"),
                       PodInfo({"metadata": {"name": "x", "uid": "u1"}}))  # fmt: skip
    metrics.on_sample(state)

    row = metrics.table()[0]
    assert row["t"] == 0
    assert (row["cpu_requested"], row["cpu_allocatable"]) == (6, 32)  # 2+1 + 1+1 + 0 + 1 of 8+4+4+16 cores
    assert (row["memory_requested"], row["memory_allocatable"]) == (8 * GI, 112 * GI)
    assert (row["pods_requested"], row["pods_allocatable"]) == (5, 110 + 2 + 110 + 110)
    assert (row["nvidia.com/gpu_requested"], row["nvidia.com/gpu_allocatable"]) == (3, 4)
    # gpu: 3 of gpu-a's 4 extended GPUs, and 1 of dra-d's 2 devices (the claim holds gpu-0).
    assert (row["gpu_requested"], row["gpu_allocatable"]) == (4, 6)
    # FGD against TARGET, each node with one free GPU:
    #   gpu-a: 5 CPUs free: ONE_GPU fits, no partly free GPU (0); CPU_ONLY cannot use the GPU (1000): 0.5*1000 = 500
    #   dra-d: 15 CPUs free: the same, 500.   Total 1000 milli-GPUs = 1 GPU, of 2 free GPUs.
    assert row["gpu_fragmentation"] == 1
    assert row["gpu_fragmentation_ratio"] == 0.5
    # empty-c has no pods; cpu-b holds its 2 pods of 2 (full); gpu-a and dra-d have room left.
    assert (row["nodes_empty"], row["nodes_partial"], row["nodes_full"]) == (1, 2, 1)
    assert (row["pods_pending"], row["pods_running"], row["pods_unschedulable"]) == (3, 5, 1)
    assert [row[f"queue_{q}"] for q in ("active", "backoff", "unschedulable", "gated")] == [0, 1, 2, 0]
    assert list(row) == metrics.columns()


def test_later_samples_follow_pods_leaving_and_nodes_going() -> None:
    state, nodes, pods = cluster_state()
    metrics = Metrics(3600, target=TARGET)
    metrics.on_start(state)
    metrics.on_sample(state)

    state.now = 3600.0
    nodes["gpu-a"].remove_pod(pods["p2"])  # frees 2 GPUs and a CPU on gpu-a
    state.node_list = [n for n in state.node_list if n.name != "empty-c"]
    state.cluster.put_object("ResourceClaim", {"metadata": {"name": "p3-gpu", "namespace": "default"}, "status": {}})
    nodes["dra-d"].remove_pod(pods["p3"])
    metrics.on_sample(state)

    row = metrics.table()[1]
    assert row["t"] == 3600
    assert (row["cpu_requested"], row["cpu_allocatable"]) == (4, 28)
    assert (row["gpu_requested"], row["gpu_allocatable"]) == (1, 6)
    # gpu-a: 3 free GPUs, 6 CPUs: CPU_ONLY 0.5*3000 = 1500; dra-d: 2 free T4s, empty: 0.5*2000 = 1000.
    assert row["gpu_fragmentation"] == 2.5
    assert row["gpu_fragmentation_ratio"] == 0.5
    assert (row["nodes_empty"], row["nodes_partial"], row["nodes_full"]) == (1, 1, 1)  # dra-d now empty
    # The unschedulable pod was bound meanwhile: no longer counted.
    state.pods = {"u1": PodRecord(key="default/x", uid="u1", arrival=0.0, bound_at=10.0, outcome=RUNNING)}
    metrics.on_sample(state)  # same time: the end of the run replaces the sample
    assert len(metrics.rows) == 2 and metrics.rows[-1]["pods_unschedulable"] == 0


def test_target_workload_from_the_workload_counts_replicas() -> None:
    workload = parse_workload("""
apiVersion: kss.sigs.k8s.io/v1alpha1
kind: TimedWorkload
metadata: {name: shapes}
spec:
  events:
  - at: 0
    create:
      apiVersion: v1
      kind: Pod
      metadata: {name: one, annotations: {trace.kss.sigs.k8s.io/gpu-spec: "V100M32|V100M16|V100M32"}}
      spec:
        containers:
        - name: main
          resources: {requests: {cpu: "2", nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
  - at: 10
    create:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: shop}
      spec:
        replicas: 3
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec: {containers: [{name: main, resources: {requests: {cpu: 500m, memory: 1Gi}}}]}
""")
    shapes = workload_shapes(workload)
    gpu_shape = TaskShape(milli_cpu=2000, gpus=1, milli_gpu=MILLI, models=("V100M16", "V100M32"))
    web_shape = TaskShape(milli_cpu=500, memory=GI)
    assert shapes == [gpu_shape, web_shape, web_shape, web_shape]
    target = Metrics(workload=workload).target
    assert target is not None
    assert [(t.shape, t.weight) for t in target.tasks] == [(web_shape, 0.75), (gpu_shape, 0.25)]


def test_percentiles_are_nearest_rank_and_means_time_weighted() -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert nearest_rank(values, 50) == 10  # ceil(0.50*20) = 10th value
    assert nearest_rank(values, 95) == 19  # ceil(0.95*20) = 19th
    assert nearest_rank(values, 99) == 20  # ceil(19.8) = 20th
    assert nearest_rank([7.0], 50) == 7 and nearest_rank([], 50) == 0
    # 0.2 for 10 s, then 0.8 for 30 s (the last sample has no width): (0.2*10 + 0.8*30) / 40 = 0.65
    assert time_weighted([0, 10, 40], [0.2, 0.8, 1.0]) == pytest.approx(0.65)
    assert time_weighted([5], [0.3]) == 0.3


def test_summary_from_records_and_samples() -> None:
    state, _, _ = cluster_state()
    metrics = Metrics(3600, target=TARGET)
    metrics.on_start(state)
    metrics.on_sample(state)  # cpu 6/32 at t=0
    state.now = 7200.0
    state.node_list[0].add_pod(pod("p9", cpu="4"))  # cpu 10/32 from t=7200
    metrics.on_sample(state)
    state.now = 10800.0
    metrics.on_sample(state)

    records = [PodRecord(key=f"default/p{i}", uid=f"u{i}", arrival=0.0, bound_at=float(i), outcome=RUNNING)
               for i in range(1, 11)]  # fmt: skip
    records.append(PodRecord(key="default/never", uid="un", arrival=5.0, outcome=PENDING, preemptions=2))
    result = ReplayResult(workload="w", pods=records, virtual_seconds=10800.0, attempts=14, wall_seconds=0.5,
                          config={}, seed=7)  # fmt: skip
    summary = summarize(result, metrics)

    assert (summary["pods"], summary["scheduled"], summary["neverScheduled"]) == (11, 10, 1)
    assert summary["waitSeconds"] == {"p50": 5, "p95": 10, "p99": 10, "max": 10, "mean": 5.5}
    assert summary["preemptions"] == 2
    assert summary["outcomes"] == {"pending": 1, "running": 10}
    assert summary["config"]["profiles"] == ["default-scheduler"]
    cpu: Mapping[str, float] = summary["allocation"]["cpu"]
    # 6/32 held 7200 s, then 10/32 for 3600 s (the last sample has no width): (0.1875*7200 + 0.3125*3600) / 10800
    assert cpu["peak"] == 0.3125
    assert cpu["mean"] == pytest.approx((0.1875 * 7200 + 0.3125 * 3600) / 10800, abs=1e-6)
    assert "gpu" in summary["allocation"] and "ephemeral-storage" not in summary["allocation"]
    assert summary["fragmentation"]["end"] == metrics.rows[-1]["gpu_fragmentation"]
