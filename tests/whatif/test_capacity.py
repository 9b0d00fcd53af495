"""``kss capacity``: copies of a pod counted against the engine, checked against counts worked by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kss_sim.cli import main
from kss_sim.replay.workload import WorkloadError, parse_workload
from kss_sim.whatif.capacity import (
    LIMIT_REACHED,
    UNSCHEDULABLE,
    count_replicas,
    nodes_for_replicas,
    nodes_for_workload,
    prepare_pod,
    read_node_template,
    smallest_enough,
)
from tests.scheduler.factories import make_node, make_pod
from tests.whatif.workloads import node as wl_node
from tests.whatif.workloads import queue_behind

# kube-scheduler v1.35's default profile ends every FitError with its two PostFilter plugins' words.
POSTFILTER_TAIL = (
    "no new claims to deallocate, preemption: 0/{n} nodes are available: {n} No preemption victims found for "
    "incoming pod."
)


def three_nodes(**extra: Any) -> list[dict[str, Any]]:
    return [make_node(name=f"node-{c}", **extra) for c in "abc"]


def capacity_pod(cpu: str = "1500m", memory: str = "1Gi", **kw: Any) -> dict[str, Any]:
    pod = make_pod(name="small", requests={"cpu": cpu, "memory": memory}, **kw)
    pod["metadata"].pop("uid")
    return pod


def count(pod: dict[str, Any], objects: list[dict[str, Any]], **kw: Any) -> Any:
    return count_replicas(prepare_pod(pod, objects), objects, **kw)


def test_cpu_bound_copies_two_per_node_then_insufficient_cpu_everywhere() -> None:
    # 4 CPU / 1.5 CPU = 2 per node (memory: 8 per node), 3 nodes.
    report = count(capacity_pod(), three_nodes())
    assert report.count == 6
    assert report.per_node == {"node-a": 2, "node-b": 2, "node-c": 2}
    assert report.stop_type == UNSCHEDULABLE
    assert report.stop_message == "0/3 nodes are available: 3 Insufficient cpu. " + POSTFILTER_TAIL.format(n=3)


def test_memory_bound_copies_stop_on_insufficient_memory() -> None:
    # 8 Gi / 3 Gi = 2 per node while CPU would take 8.
    report = count(capacity_pod(cpu="500m", memory="3Gi"), three_nodes())
    assert (report.count, report.per_node) == (6, {"node-a": 2, "node-b": 2, "node-c": 2})
    assert report.stop_message.startswith("0/3 nodes are available: 3 Insufficient memory. ")


def test_a_tainted_node_takes_none_and_is_counted_in_the_reason() -> None:
    nodes = three_nodes()
    nodes[1]["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    report = count(capacity_pod(), nodes)
    assert report.per_node == {"node-a": 2, "node-c": 2}
    assert report.stop_message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to "
        "deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No "
        "preemption victims found for incoming pod."
    )
    tolerant = capacity_pod(spec={"tolerations": [{"key": "dedicated", "operator": "Exists"}]})
    assert count(tolerant, nodes).count == 6


def test_required_node_affinity_limits_the_copies_to_matching_nodes() -> None:
    nodes = three_nodes()
    nodes[0]["metadata"]["labels"]["zone"] = "a"
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
            }
        }
    }
    report = count(capacity_pod(affinity=affinity), nodes)
    assert (report.count, report.per_node) == (2, {"node-a": 2})
    assert report.stop_message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector. "
    )


def test_pods_bound_in_the_snapshot_take_their_room_and_pending_ones_do_not() -> None:
    objects = [
        *three_nodes(),
        make_pod(name="busy", node_name="node-a", requests={"cpu": "3"}),  # 1 CPU left on node-a: no copy
        make_pod(name="half", node_name="node-b", requests={"cpu": "1"}),  # 3 CPU left: 2 copies
        make_pod(name="waiting", requests={"cpu": "4"}),  # pending: not in the way
    ]
    report = count(capacity_pod(), objects)
    assert (report.count, report.per_node) == (4, {"node-b": 2, "node-c": 2})


def test_max_stops_with_limit_reached() -> None:
    report = count(capacity_pod(), three_nodes(), limit=4)
    assert report.count == 4 and sum(report.per_node.values()) == 4
    assert report.stop_reason == f"{LIMIT_REACHED}: Maximum number of pods simulated: 4"


def test_a_pod_too_big_for_every_node_gets_none() -> None:
    report = count(capacity_pod(cpu="5"), three_nodes())
    assert (report.count, report.per_node) == (0, {})
    assert report.stop_message.startswith("0/3 nodes are available: 3 Insufficient cpu. ")


def test_nothing_is_evicted_when_only_preemption_would_make_room() -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    low = make_pod(name="low", node_name="node-a", priority=0, requests={"cpu": "3"})
    objects = [make_node(name="node-a"), low, high]
    report = count(capacity_pod(spec={"priorityClassName": "high"}), objects)
    assert report.count == 0
    assert report.victims == ["default/low"]
    assert "it would fit on node-a by preempting default/low" in report.stop_message


def test_same_seed_same_spread_across_equal_nodes() -> None:
    nodes = [make_node(name=f"n{i}", allocatable={"cpu": "8"}) for i in range(6)]
    pod = capacity_pod(cpu="1")
    first = count(pod, nodes, limit=10, seed=7)
    assert first.per_node == count(pod, nodes, limit=10, seed=7).per_node
    assert first.count == 10


def test_nodes_for_replicas_finds_the_smallest_count_of_the_shape() -> None:
    # 6 copies fit now; each 8-CPU node takes 5 more: 20 need ceil(14 / 5) = 3 nodes.
    template = read_node_template(make_node(name="big", allocatable={"cpu": "8", "memory": "16Gi"}))
    pod = prepare_pod(capacity_pod(), [])
    search, report = nodes_for_replicas(pod, three_nodes(), template, 20)
    assert search.nodes == 3
    assert search.tried[2] is False and search.tried[3] is True
    assert search.detail[2] == {"fit": 16}
    assert report.count == 20
    assert {n: c for n, c in report.per_node.items() if n.startswith("big-added-")} and set(report.per_node) <= {
        "node-a", "node-b", "node-c", "big-added-1", "big-added-2", "big-added-3",
    }  # fmt: skip


def test_nodes_for_replicas_reports_when_no_count_is_enough() -> None:
    template = read_node_template(make_node(name="tiny", allocatable={"cpu": "1"}))
    search, report = nodes_for_replicas(prepare_pod(capacity_pod(), []), three_nodes(), template, 8, max_nodes=4)
    assert search.nodes is None
    assert report.count == 6  # at 4 tiny nodes: still only the 6 on the big ones


@pytest.mark.parametrize(
    ("threshold", "limit", "expected"), [(0, 10, 0), (1, 10, 1), (5, 10, 5), (9, 10, 9), (10, 10, 10), (11, 10, None)]
)
def test_smallest_enough_doubles_then_bisects(threshold: int, limit: int, expected: int | None) -> None:
    calls: list[int] = []

    def enough(k: int) -> bool:
        calls.append(k)
        return k >= threshold

    found, tried = smallest_enough(enough, limit)
    assert found == expected
    assert len(calls) == len(set(calls)) == len(tried)
    assert len(calls) <= 2 * limit.bit_length() + 2


def test_a_pod_admission_refuses_is_an_input_error() -> None:
    with pytest.raises(WorkloadError, match="no PriorityClass with name nope was found"):
        prepare_pod(capacity_pod(spec={"priorityClassName": "nope"}), [])
    with pytest.raises(WorkloadError, match="one Pod manifest"):
        prepare_pod(make_node(), [])


# ---- the command --------------------------------------------------------------------------------------------


def write(path: Path, doc: Any) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def test_cli_prints_cluster_capacitys_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A kube-scheduler-simulator-shaped snapshot, as `kss export` writes it.
    snapshot = write(tmp_path / "snap.yaml", {"nodes": three_nodes(), "pods": []})
    pod = write(tmp_path / "pod.yaml", capacity_pod())
    assert main(["capacity", str(pod), "--snapshot", str(snapshot)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "The cluster can schedule 6 instance(s) of the pod small.\n\nTermination reason: Unschedulable: 0/3 nodes"
    )
    assert "\t- node-b: 2 instance(s)\n" in out
    assert main(["capacity", str(pod), "--snapshot", str(snapshot), "--max", "5", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["count"], doc["stopType"]) == (5, "LimitReached")


def test_cli_add_nodes_with_replicas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = write(tmp_path / "snap.yaml", {"kind": "List", "apiVersion": "v1", "items": three_nodes()})
    pod = write(tmp_path / "pod.yaml", capacity_pod())
    shape = write(tmp_path / "shape.yaml", make_node(name="big", allocatable={"cpu": "8", "memory": "16Gi"}))
    args = ["capacity", str(pod), "--snapshot", str(snapshot), "--add-nodes", str(shape), "--replicas", "20"]
    assert main([*args, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == 3 and doc["capacity"]["count"] == 20
    assert main([*args[:-1], "200", "--max-nodes", "2"]) == 1
    assert "Even 2 added node(s) of the shape big are not enough" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("files", "flags", "message"),
    [
        ({"pod.yaml": "kind: Pod\nmetadata: {name: x\n"}, [], "pod.yaml: neither JSON nor YAML"),
        ({"pod.yaml": "kind: Node\nmetadata: {name: x}\n"}, [], "the pod file must hold one Pod manifest"),
        ({}, ["--snapshot", "missing.yaml"], "missing.yaml: No such file or directory"),
        ({}, ["--add-nodes", "shape.yaml"], "--add-nodes needs --replicas N"),
        ({"shape.yaml": "kind: Node\nmetadata: {name: s}\n"}, ["--add-nodes", "shape.yaml", "--replicas", "3"],
         "status.allocatable: Required value"),
        ({"cfg.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                      "- schedulerName: default-scheduler\n  plugins: {filter: {enabled: [{name: NoSuchPlugin}]}}\n"},
         ["--scheduler-config", "cfg.yaml"], "NoSuchPlugin"),
        ({}, ["--feature-gates", "Bogus=true"], "unrecognized feature gate: Bogus"),
        ({}, ["--max", "0"], "--max: must be 1 or more"),
    ],
)  # fmt: skip
def test_cli_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], flags: list[str], message: str
) -> None:
    write(tmp_path / "pod.yaml", capacity_pod())
    write(tmp_path / "cluster.yaml", {"nodes": three_nodes(), "pods": []})
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    if "--snapshot" not in flags:
        flags = [*flags, "--snapshot", "cluster.yaml"]
    flags = [str(tmp_path / f) if f.endswith(".yaml") else f for f in flags]
    assert main(["capacity", str(tmp_path / "pod.yaml"), *flags]) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("kss capacity:")]
    assert len(lines) == 1 and message in lines[0], captured.err
    assert "Traceback" not in captured.err and captured.out == ""


# ---- nodes for a timed workload (replays) -------------------------------------------------------------------


def test_nodes_for_a_workload_whose_last_pod_never_fits() -> None:
    # queue_behind without run times: the third 3-CPU pod never finds room on two 4-CPU nodes; one node more does.
    doc = queue_behind()
    for event in doc["spec"]["events"]:
        event.pop("runFor")
    search = nodes_for_workload(parse_workload(json.dumps(doc)), read_node_template(wl_node("big")))
    assert search.nodes == 1
    assert search.detail[0] == {"pods": 3, "neverScheduled": 1, "waitP95": None}
    assert search.detail[1] == {"pods": 3, "neverScheduled": 0, "waitP95": 0.0}


def test_cli_nodes_for_a_workloads_p95_wait(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Every pod of queue_behind is placed without help, but the third waits 480 s (p95 of three = the largest).
    workload, shape = write(tmp_path / "q.yaml", queue_behind()), write(tmp_path / "s.yaml", wl_node("big"))
    args = ["capacity", "--add-nodes", str(shape), "--for-workload", str(workload)]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("No node needs to be added for every pod of queue-behind scheduled.")
    assert main([*args, "--p95-wait-under", "1m", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == 1
    assert [(t["nodes"], t["enough"], t["waitP95"]) for t in doc["tried"]] == [(0, False, 480.0), (1, True, 0.0)]


def test_cli_takes_the_cluster_from_a_workloads_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # queue_behind starts with two empty 4-CPU nodes (its pods arrive later): two 1.5-CPU copies on each.
    workload, pod = write(tmp_path / "q.yaml", queue_behind()), write(tmp_path / "pod.yaml", capacity_pod())
    assert main(["capacity", str(pod), "--workload", str(workload), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["perNode"] == {"n1": 2, "n2": 2}
