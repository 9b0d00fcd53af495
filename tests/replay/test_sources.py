"""``load_source``: every shape ``kss replay WORKLOAD...`` takes, ``write_workload``, and ``.jsonl`` streams."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kss_sim.replay.engine import Replay
from kss_sim.replay.sources import load_source, write_workload
from kss_sim.replay.workload import (
    TimedWorkload,
    WorkloadError,
    load_workload,
    parse_event_stream,
    parse_workload,
    to_document,
)
from tests.conftest import Server

KSS = Path(sys.executable).with_name("kss")
NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn1,32000,262144,2,T4\n"
PODS_CSV = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p1,1000,1024,1,1000,T4,LS,Running,5,100,10
p2,1000,1024,0,0,,LS,Running,3,50,3
p3,1000,1024,0,0,,LS,Succeeded,7,60,8
"""


def _node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity}}


def _pod(name: str) -> dict[str, Any]:
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


WORKLOAD: dict[str, Any] = {
    "apiVersion": "kss.sigs.k8s.io/v1alpha1",
    "kind": "TimedWorkload",
    "metadata": {"name": "small"},
    "spec": {
        "epoch": "2024-03-01T00:00:00Z",
        "start": [_node("a")],
        "events": [
            {"at": "1m", "create": _pod("late"), "runFor": "30s"},
            {"at": 0, "create": _pod("early"), "endAt": 90},
            {"at": 30, "cordon": "a"},
            {"at": 40, "taint": {"node": "a", "key": "k", "value": "v", "effect": "NoSchedule"}},
            {"at": 70, "delete": {"kind": "Pod", "name": "late"}},
        ],
    },
}


def _summary(w: TimedWorkload) -> list[tuple[float, str, str, float | None, float | None]]:
    return [(e.at, e.action, e.name, e.run_for, e.end_at) for e in w.events]


@pytest.fixture
def trace_files(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "n.csv", tmp_path / "p.csv"
    nodes.write_text(NODES_CSV)
    pods.write_text(PODS_CSV)
    return nodes, pods


def test_a_workload_file_in_yaml_json_and_jsonl_reads_the_same(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(WORKLOAD))
    original = load_source([tmp_path / "w.yaml"])
    assert _summary(original) == [
        (0.0, "create", "early", None, 90.0),
        (30.0, "cordon", "a", None, None),
        (40.0, "taint", "a", None, None),
        (60.0, "create", "late", 30.0, None),
        (70.0, "delete", "late", None, None),
    ]
    for suffix in (".json", ".jsonl", ".yml"):
        path = tmp_path / f"copy{suffix}"
        write_workload(original, path)
        again = load_source([path])
        assert to_document(again) == to_document(original), suffix
        assert again.epoch == original.epoch and again.start == original.start
    lines = (tmp_path / "copy.jsonl").read_text().splitlines()
    assert len(lines) == 6 and "events" not in json.loads(lines[0])["spec"]
    assert json.loads(lines[1]) == {"at": 0.0, "create": _pod("early"), "endAt": 90.0}


def test_an_event_stream_may_be_out_of_order_and_names_the_line_of_each_problem() -> None:
    header = json.dumps(
        {"kind": "TimedWorkload", "metadata": {"name": "rec"}, "spec": {"epoch": "2024-01-01T00:00:00Z"}}
    )
    later, earlier = json.dumps({"at": 5, "create": _pod("b")}), json.dumps({"at": 1, "create": _pod("a")})
    w = parse_event_stream("\n".join([header, later, "", earlier]) + "\n")
    assert [(e.name, e.at) for e in w.events] == [("a", 1.0), ("b", 5.0)]
    with pytest.raises(WorkloadError) as err:
        parse_event_stream("\n".join([header, later, "{not json", json.dumps({"at": 2, "reboot": "a"})]))
    assert sorted({p.split(":")[0] for p in err.value.problems}) == ["line 3", "line 4"]
    assert any("needs exactly one of create" in p for p in err.value.problems)
    with pytest.raises(WorkloadError, match="line 1: the first line must be a TimedWorkload"):
        parse_event_stream(later)
    with pytest.raises(WorkloadError, match=r"line 1: spec\.events: the header holds no events"):
        parse_event_stream(json.dumps({"kind": "TimedWorkload", "spec": {"events": [{"at": 1, "cordon": "a"}]}}))


def test_several_files_merge_in_time_order_earlier_file_first(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([_node("a"), _node("b")]))
    pods = _pod("p")
    pods["metadata"]["annotations"] = {"replay.kss.sigs.k8s.io/at": "0"}
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(pods))
    w = load_source([tmp_path / "nodes.yaml", tmp_path / "pods.yaml"])
    assert [(e.at, e.kind, e.name) for e in w.events] == [(0.0, "Node", "a"), (0.0, "Node", "b"), (0.0, "Pod", "p")]
    assert w.name == "nodes+pods"


def test_node_and_pod_csv_in_either_order_and_a_trace_directory(tmp_path: Path, trace_files: tuple[Path, Path]) -> None:
    nodes, pods = trace_files
    forward, backward = load_source([nodes, pods]), load_source([pods, nodes], form="dra")
    assert [(e.name, e.at, e.run_for) for e in forward.events] == [
        ("p2", 3.0, 47.0),
        ("p1", 5.0, None),  # Running at the trace's last time (100): runs to the end
        ("p3", 7.0, 52.0),
    ]
    assert [e.name for e in backward.events] == ["p2", "p1", "p3"]
    assert "ResourceSlice" in {o["kind"] for o in backward.start}
    directory = tmp_path / "trace"
    directory.mkdir()
    (directory / "openb_node_list_all_node.csv").write_text(NODES_CSV)
    (directory / "openb_pod_list_gpuspec33.csv").write_text(PODS_CSV)
    w = load_source([directory], pods="gpuspec33", limit=2)
    assert [e.name for e in w.events] == ["p2", "p1"] and w.name == "alibaba-v2023-gpuspec33-extended"
    with pytest.raises(WorkloadError, match=r"openb_pod_list_default\.csv: No such file"):
        load_source([directory])


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d, n, p: [n, n], "both nodes lists"),
        (lambda d, n, p: [n], "the trace's CSVs come in twos"),
        (lambda d, n, p: [d / "w.txt"], "not a workload"),
        (lambda d, n, p: [d, n], "a trace directory is the only workload argument"),
        (lambda d, n, p: [d / "nope.yaml"], "nope.yaml: No such file or directory"),
        (lambda d, n, p: [], "no workload given"),
    ],
)
def test_wrong_source_shapes_are_one_clear_error(
    tmp_path: Path, trace_files: tuple[Path, Path], setup: Any, message: str
) -> None:
    (tmp_path / "w.txt").write_text("hello")
    with pytest.raises(WorkloadError, match=message):
        load_source(setup(tmp_path, *trace_files))


def test_a_bad_csv_names_its_file_and_line(trace_files: tuple[Path, Path]) -> None:
    nodes, pods = trace_files
    nodes.write_text(NODES_CSV + "n2,32000,lots,0,\n")
    with pytest.raises(WorkloadError) as err:
        load_source([nodes, pods])
    assert err.value.problems == [f"{nodes}:3: memory_mib must be an integer, not 'lots'"]
    pods.write_text("who,what\n1,2\n")
    with pytest.raises(WorkloadError, match=rf"{pods}:1: neither a node list"):
        load_source([nodes, pods])
    nodes.write_text(NODES_CSV)
    pods.write_text(PODS_CSV.replace("p2,1000,1024,0,0", "p2,1000,1024,-1,0"))
    with pytest.raises(WorkloadError, match=rf"{pods}:3: num_gpu must not be negative"):
        load_source([nodes, pods])
    with pytest.raises(WorkloadError, match="--pods default: names a pod list of a trace directory"):
        load_source([nodes, pods], pods="default")


def test_the_limit_keeps_the_first_pod_arrivals_and_their_later_events(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(WORKLOAD))
    w = load_source([tmp_path / "w.yaml"], limit=1)
    assert [(e.action, e.name) for e in w.events] == [("create", "early"), ("cordon", "a"), ("taint", "a")]


def _bind(server: Server, namespace: str, pod: str, node: str) -> None:
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}, "target": {"kind": "Node", "name": node}}
    r = httpx.post(f"{server.url}/api/v1/namespaces/{namespace}/pods/{pod}/binding", json=body, timeout=10)
    assert r.status_code == 201, r.text


def test_a_kss_export_snapshot_with_bound_and_pending_pods_is_the_start(server: Server, tmp_path: Path) -> None:
    ns = "replay-start"
    httpx.post(f"{server.url}/api/v1/namespaces", json={"metadata": {"name": ns}}, timeout=10)
    node = _node("replay-start-node")
    assert httpx.post(f"{server.url}/api/v1/nodes", json=node, timeout=10).status_code == 201
    for name in ("bound", "waiting"):
        r = httpx.post(f"{server.url}/api/v1/namespaces/{ns}/pods", json=_pod(name), timeout=10)
        assert r.status_code == 201, r.text
    _bind(server, ns, "bound", "replay-start-node")
    snapshot = tmp_path / "snap.yaml"
    proc = subprocess.run(
        [str(KSS), "export", "--server", server.url, "-o", str(snapshot)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr

    def mine(w: TimedWorkload) -> dict[str, dict[str, Any]]:
        return {
            o["metadata"]["name"]: o
            for o in w.start
            if (o["kind"] == "Pod" and o["metadata"].get("namespace") == ns)
            or o["metadata"]["name"] == node["metadata"]["name"]
        }

    (tmp_path / "w.yaml").write_text(yaml.safe_dump({**WORKLOAD, "spec": {**WORKLOAD["spec"], "start": "snap.yaml"}}))
    by_spec = load_workload(tmp_path / "w.yaml")
    by_flag = load_source([tmp_path / "w.yaml"], start=snapshot)
    for w in (by_spec, by_flag):
        objects = mine(w)
        assert set(objects) == {"bound", "waiting", "replay-start-node"}
        assert objects["bound"]["spec"]["nodeName"] == "replay-start-node"
        assert "nodeName" not in objects["waiting"]["spec"]
        assert w.scheduler_config is not None and w.scheduler_config["kind"] == "KubeSchedulerConfiguration"
        assert len(w.events) == 5
    assert by_spec.start == by_flag.start

    # The snapshot replays: the bound pod keeps running where it is, the pending one and a later arrival get placed.
    later = _pod("later")
    later["metadata"]["namespace"] = ns
    timed = {"kind": "TimedWorkload", "spec": {"start": "snap.yaml", "events": [{"at": "10s", "create": later}]}}
    (tmp_path / "later.yaml").write_text(yaml.safe_dump(timed))
    result = Replay(load_source([tmp_path / "later.yaml"])).run()
    records = {r.key: r for r in result.pods if r.key.startswith(f"{ns}/")}
    assert {k: (r.arrival, r.outcome, r.node) for k, r in records.items()} == {
        f"{ns}/bound": (0.0, "running", "replay-start-node"),
        f"{ns}/waiting": (0.0, "running", records[f"{ns}/waiting"].node),
        f"{ns}/later": (10.0, "running", records[f"{ns}/later"].node),
    }
    assert records[f"{ns}/bound"].attempts == 0, "already bound in the snapshot: never scheduled again"
    assert records[f"{ns}/waiting"].node is not None and records[f"{ns}/later"].bound_at == 10.0


def test_node_failure_events_read_back_as_written_and_bad_ones_are_named() -> None:
    spec = {
        "start": [_node("n1")],
        "events": [
            {"at": 1, "failNode": "n1"},
            {"at": 2, "failNode": {"node": "n1", "notReady": True}},
            {"at": 3, "healNode": "n1"},
            {"at": 4, "drain": "n1"},
        ],
    }
    doc = {"apiVersion": "kss.sigs.k8s.io/v1alpha1", "kind": "TimedWorkload", "metadata": {"name": "w"}, "spec": spec}
    workload = parse_workload(json.dumps(doc))
    assert [(e.action, e.name, e.report) for e in workload.events] == [
        ("failNode", "n1", "unreachable"),  # the node stops: its lease lapses
        ("failNode", "n1", "fail"),  # its kubelet reports NotReady
        ("healNode", "n1", "heal"),
        ("drain", "n1", ""),
    ]
    assert to_document(workload)["spec"]["events"] == [{**e, "at": float(e["at"])} for e in spec["events"]]
    # The older spellings: unreachable true is the plain form, false the NotReady one.
    spec["events"] = [
        {"at": 1, "failNode": {"node": "n1", "unreachable": True}},
        {"at": 2, "failNode": {"node": "n1", "unreachable": False}},
    ]
    assert [e.report for e in parse_workload(json.dumps(doc)).events] == ["unreachable", "fail"]
    spec["events"] = [
        {"at": 1, "failNode": {"node": "n1", "unreachable": "yes"}},
        {"at": 2, "healNode": {"node": "n1"}},
        {"at": 3, "failNode": {"node": "n1", "unreachable": True, "notReady": True}},
    ]
    with pytest.raises(WorkloadError) as failed:
        parse_workload(json.dumps(doc))
    message = "must be a node name or {node, notReady: true} (or unreachable: true|false)"
    assert failed.value.problems == [
        f"spec.events[0].failNode: {message}",
        "spec.events[1].healNode: must be a node name",
        f"spec.events[2].failNode: {message}",
    ]


def test_a_usage_curve_reads_back_as_written_and_bad_ones_are_named() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}},
    }
    spec: dict[str, Any] = {
        "start": [_node("n1")],
        "events": [
            {
                "at": 0,
                "create": deployment,
                "usage": {"cpu": [[0, "200m"], ["1m", "900m"]], "memory": [{"at": 5, "value": "1Gi"}]},
            }
        ],
    }
    doc = {"apiVersion": "kss.sigs.k8s.io/v1alpha1", "kind": "TimedWorkload", "metadata": {"name": "w"}, "spec": spec}
    workload = parse_workload(json.dumps(doc))
    assert workload.events[0].usage == {"cpu": [(0.0, "200m"), (60.0, "900m")], "memory": [(5.0, "1Gi")]}
    assert to_document(workload)["spec"]["events"][0]["usage"] == {
        "cpu": [[0.0, "200m"], [60.0, "900m"]],
        "memory": [[5.0, "1Gi"]],
    }
    assert (
        parse_workload(json.dumps({**doc, "spec": to_document(workload)["spec"]})).events[0].usage
        == workload.events[0].usage
    )
    spec["events"] = [
        {
            "at": 0,
            "create": deployment,
            "usage": {"cpu": [[0, "lots"], ["2m", "1"], ["1m", "2"]], "Bad Name": [[0, 1]]},
        },
        {"at": 0, "create": _node("n2"), "usage": {"cpu": [[0, "1"]]}},
        {"at": 0, "create": deployment, "usage": {"cpu": []}},
    ]
    with pytest.raises(WorkloadError) as failed:
        parse_workload(json.dumps(doc))
    assert failed.value.problems == [
        "spec.events[0].usage.cpu[0]: 'lots' is not a quantity (as in [at, quantity])",
        "spec.events[0].usage.cpu[2].at: 60 s is before the point before it (120 s)",
        "spec.events[0].usage.Bad Name: not a resource name",
        "spec.events[1].usage: only the create or update of a Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, "
        "CronJob has usage",
        "spec.events[2].usage.cpu: must be a list of [at, quantity] points",
    ]
