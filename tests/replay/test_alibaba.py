"""The Alibaba 2023 GPU trace with its times: arrivals, run durations, withdrawals, the two forms."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kss_sim.replay.alibaba import load_trace_dir, load_trace_workload
from kss_sim.replay.workload import Event, TimedWorkload, WorkloadError
from kss_sim.simulation.alibaba_v2023 import EXTENDED_RESOURCE, MODEL_LABEL, NODE_LIST, POD_LISTS

REAL_TRACE = Path(__file__).resolve().parents[2].parent / "shared" / "workloads" / "alibaba-gpu-trace-v2023"
needs_trace = pytest.mark.skipif(not REAL_TRACE.exists(), reason="the shared Alibaba trace is not present")
FRACTION = "trace.kss.sigs.k8s.io/gpu-milli"

NODES_CSV = """sn,cpu_milli,memory_mib,gpu,model
cpu-node,32000,262144,0,
v100-node,96000,393216,4,V100M16
"""
# Out of creation order. The trace's last time is 900: "still" was running when the trace was cut.
PODS_CSV = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
still,8000,30517,4,1000,V100M16,LS,Running,500,900,510
failed,6000,12288,1,460,,BE,Failed,100,400,120
done,1500,5600,0,0,,BE,Succeeded,200,300,200
withdrawn,4000,8192,1,1000,,LS,Pending,300,800,
gone,4000,8192,1,1000,,LS,Running,300,700,310
"""


def _pods(workload: TimedWorkload) -> dict[str, Event]:
    return {e.name: e for e in workload.events if e.kind == "Pod"}


@pytest.fixture
def small_trace(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES_CSV)
    pods.write_text(PODS_CSV)
    return nodes, pods


def test_each_pod_arrives_at_its_creation_time_and_runs_as_long_as_it_ran_in_production(
    small_trace: tuple[Path, Path],
) -> None:
    w = load_trace_workload(*small_trace)
    assert [(e.name, e.at) for e in w.events] == [
        ("failed", 100.0),
        ("done", 200.0),
        ("withdrawn", 300.0),
        ("gone", 300.0),
        ("still", 500.0),
    ]
    pods = _pods(w)
    assert pods["failed"].run_for == 280.0 and pods["failed"].end_at is None  # 400 - 120, though it failed
    assert pods["done"].run_for == 100.0
    assert pods["gone"].run_for == 390.0  # Running, but deleted before the trace ends
    assert pods["still"].run_for is None and pods["still"].end_at is None  # running when the trace was cut
    assert pods["withdrawn"].run_for is None and pods["withdrawn"].end_at == 800.0  # never ran: deleted then
    assert w.name == "alibaba-v2023-pods-extended"
    assert [o["kind"] for o in w.start] == ["Namespace", "Node", "Node"]


def test_the_limit_keeps_the_first_pods_with_times_decided_over_the_whole_list(
    small_trace: tuple[Path, Path],
) -> None:
    w = load_trace_workload(*small_trace, limit=4)
    assert [e.name for e in w.events] == ["failed", "done", "withdrawn", "gone"]
    assert _pods(w)["gone"].run_for == 390.0  # 700 is not the last time of the whole list
    assert load_trace_workload(*small_trace, limit=0).events == []


def test_dra_form_starts_with_the_device_class_slices_and_templates(small_trace: tuple[Path, Path]) -> None:
    w = load_trace_workload(*small_trace, form="dra")
    kinds = [o["kind"] for o in w.start]
    assert kinds == ["Namespace", "DeviceClass", "Node", "Node", "ResourceSlice", "ResourceClaimTemplate",
                     "ResourceClaimTemplate"]  # fmt: skip
    still = _pods(w)["still"].obj
    assert still is not None
    assert still["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-4-v100m16"}]
    assert "claims" not in {o["kind"] for o in w.start}


def test_a_bad_row_or_form_is_one_error_naming_the_file_and_line(small_trace: tuple[Path, Path]) -> None:
    nodes, pods = small_trace
    pods.write_text(PODS_CSV.replace("done,1500,5600,0,0,,BE,Succeeded,200", "done,1500,5600,0,0,,BE,Succeeded,soon"))
    with pytest.raises(WorkloadError) as err:
        load_trace_workload(nodes, pods)
    assert err.value.problems == [f"{pods}:4: creation_time must be an integer, not 'soon'"]
    with pytest.raises(WorkloadError, match="unknown form 'gpu'"):
        load_trace_workload(nodes, pods, form="gpu")


@needs_trace
def test_hand_picked_rows_of_the_default_list() -> None:
    w = load_trace_dir(REAL_TRACE, pods="default", form="extended")
    pods = _pods(w)
    first = pods["openb-pod-0000"]  # Running, created 0, scheduled 0, deleted 12537496
    assert (first.at, first.run_for, first.end_at) == (0.0, 12537496.0, None)
    assert first.obj is not None and first.obj["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "12",
        "memory": "16Gi",
        EXTENDED_RESOURCE: "1",
    }
    cut = pods["openb-pod-0001"]  # Running, deletion_time 12902960: the trace's last time
    assert (cut.at, cut.run_for, cut.end_at) == (427061.0, None, None)
    withdrawn = pods["openb-pod-0061"]  # Pending,10001278,10001403,(none)
    assert (withdrawn.at, withdrawn.run_for, withdrawn.end_at) == (10001278.0, None, 10001403.0)
    failed = pods["openb-pod-0033"]  # Failed,9965463,9965645,9965463
    assert (failed.at, failed.run_for) == (9965463.0, 182.0)
    eight = pods["openb-pod-0017"]  # 8 GPUs, Succeeded,9437497,10769854,9437497
    assert eight.run_for == 10769854.0 - 9437497.0
    assert eight.obj is not None and eight.obj["spec"]["containers"][0]["resources"]["limits"] == {
        EXTENDED_RESOURCE: "8"
    }


@needs_trace
def test_gpu_models_and_shares_in_the_gpuspec33_list() -> None:
    pods = _pods(load_trace_dir(REAL_TRACE, pods="gpuspec33"))
    shared = pods["openb-pod-0021"]  # 1 GPU at 440 milli, G2|P100|T4|V100M16|V100M32
    assert shared.obj is not None
    assert shared.obj["metadata"]["annotations"][FRACTION] == "440"
    assert shared.obj["spec"]["containers"][0]["resources"]["requests"][EXTENDED_RESOURCE] == "1"  # a whole GPU
    term = shared.obj["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": MODEL_LABEL, "operator": "In", "values": ["G2", "P100", "T4", "V100M16", "V100M32"]}
    ]


@needs_trace
@pytest.mark.parametrize("pod_list", ["default", "gpuspec33"])
def test_the_whole_list_loads_with_as_many_pods_and_nodes_as_the_csvs_have(pod_list: str) -> None:
    with (REAL_TRACE / NODE_LIST).open() as f:
        node_rows = list(csv.DictReader(f))
    with (REAL_TRACE / POD_LISTS[pod_list]).open() as f:
        pod_rows = list(csv.DictReader(f))
    w = load_trace_dir(REAL_TRACE, pods=pod_list)
    assert sum(o["kind"] == "Node" for o in w.start) == len(node_rows) == 1523
    assert len(w.events) == len(pod_rows) == 8152
    assert [e.at for e in w.events] == sorted(float(r["creation_time"]) for r in pod_rows)
    assert w.end == max(float(r["creation_time"]) for r in pod_rows)
    never_ran = [r for r in pod_rows if not r["scheduled_time"]]
    assert sum(e.end_at is not None for e in w.events) == len(never_ran) == 897
    last = max(int(r["deletion_time"]) for r in pod_rows)
    cut = [r for r in pod_rows if r["pod_phase"] == "Running" and int(r["deletion_time"]) == last]
    assert sum(e.run_for is None and e.end_at is None for e in w.events) == len(cut)
    runs = {r["name"]: int(r["deletion_time"]) - int(r["scheduled_time"]) for r in pod_rows if r["scheduled_time"]}
    assert all(e.run_for == runs[e.name] for e in w.events if e.run_for is not None)


@needs_trace
def test_the_untimed_multigpu50_list_arrives_one_pod_a_second_in_file_order() -> None:
    w = load_trace_dir(REAL_TRACE, pods="multigpu50", form="dra", limit=None)
    assert len(w.events) == 9061
    assert [e.at for e in w.events[:3]] == [0.0, 1.0, 2.0] and w.end == 9060.0
    assert [e.name for e in w.events[:2]] == ["openb-pod-0000", "openb-pod-0001"]
    assert all(e.run_for is None and e.end_at is None for e in w.events)
