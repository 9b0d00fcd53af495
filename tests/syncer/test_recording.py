"""``kss sync --record``: what the syncer sees, written as a ``.jsonl`` timed workload that replays."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kss_sim.replay.engine import Replay
from kss_sim.replay.workload import TimedWorkload, load_workload
from syncer.kinds import NAMESPACE, NODE, POD, REPLICA_SET
from syncer.recording import Recorder, RecordingError
from syncer.sink import ADDED, DELETED, MODIFIED, SYNCED, Event
from tests.conftest import Server, launch_server, start_servers
from tests.syncer.fakes import node, pod
from tests.syncer.test_e2e import core, eventually, node_body

REPO = Path(__file__).resolve().parents[2]
EPOCH = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _recorder(path: Path, clock: Clock) -> Recorder:
    recorder = Recorder(path, clock=clock, now=lambda: EPOCH)
    recorder.open()
    recorder.kinds = frozenset({"Namespace", "Node", "Pod"})
    return recorder


def _changed(obj: dict[str, Any], rv: str, **spec: Any) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = rv
    new["spec"].update(spec)
    return new


def _events(w: TimedWorkload) -> list[tuple[float, str, str]]:
    return [(e.at, e.action, e.name) for e in w.events]


def test_the_first_list_is_time_zero_and_later_changes_keep_their_times(tmp_path: Path) -> None:
    clock = Clock()
    rec = _recorder(tmp_path / "rec.jsonl", clock)
    a = node("a")
    a["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2025-01-01T00:00:00Z"}]
    running = pod("running", node="a", serviceAccountName="default")
    clock.t = 103.0  # the first list takes a while: still time 0
    rec.record(Event(ADDED, NODE, a, initial=True))
    rec.record(Event(ADDED, POD, running, initial=True))
    rec.record(Event(ADDED, POD, pod("finished", node="a") | {"status": {"phase": "Succeeded"}}, initial=True))
    clock.t = 110.5
    rec.record(Event(ADDED, POD, pod("web")))
    heartbeat = copy.deepcopy(a)
    heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = "2025-01-01T00:00:10Z"
    rec.record(Event(MODIFIED, NODE, heartbeat))  # nothing the scheduler reads: not recorded
    clock.t = 112.0
    rec.record(Event(MODIFIED, POD, pod("web", node="a", rv="2")))  # bound by the source: not recorded
    tainted = _changed(a, "3", unschedulable=True, taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}])
    rec.record(Event(MODIFIED, NODE, tainted))
    clock.t = 120.0
    rec.record(Event(MODIFIED, POD, pod("web", node="a", rv="3") | {"status": {"phase": "Succeeded"}}))
    rec.record(Event(DELETED, POD, pod("web", node="a", rv="4")))  # already gone: once only
    relabelled = _changed(tainted, "4", unschedulable=False, taints=[])
    relabelled["metadata"]["labels"] = {"zone": "z1"}
    rec.record(Event(MODIFIED, NODE, relabelled))
    clock.t = 130.25
    rec.record(Event(SYNCED, POD, namespace=None, present=frozenset()))  # a re-list no longer finds "running"
    rec.close()

    lines = [json.loads(line) for line in (tmp_path / "rec.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "rec"},
        "spec": {"epoch": "2025-03-01T12:00:00.000Z"},
    }
    w = load_workload(tmp_path / "rec.jsonl")
    assert w.epoch == EPOCH
    assert _events(w) == [
        (0.0, "create", "a"),
        (0.0, "create", "running"),
        (10.5, "create", "web"),
        (12.0, "cordon", "a"),
        (12.0, "taint", "a"),
        (20.0, "delete", "web"),
        (20.0, "update", "a"),
        (30.25, "delete", "running"),
    ]
    created = {e.name: e.obj for e in w.events if e.action == "create"}
    assert created["running"] is not None and "nodeName" not in created["running"]["spec"]
    assert "status" not in created["running"] and "serviceAccountName" not in created["running"]["spec"]
    assert "uid" not in created["running"]["metadata"] and "annotations" not in created["running"]["metadata"]
    assert created["a"] is not None and "conditions" not in created["a"]["status"]
    taint = next(e for e in w.events if e.action == "taint")
    assert taint.taint == {"key": "gpu", "value": "x", "effect": "NoSchedule"}
    update = next(e for e in w.events if e.action == "update")
    assert update.obj is not None and update.obj["metadata"]["labels"] == {"zone": "z1"}
    assert update.obj["spec"].get("unschedulable") is False and update.obj["spec"]["taints"] == []


def test_taints_changed_and_removed_become_untaint_and_taint_events(tmp_path: Path) -> None:
    clock = Clock()
    rec = _recorder(tmp_path / "t.jsonl", clock)
    a = _changed(node("a"), "1", unschedulable=True, taints=[{"key": "k", "value": "1", "effect": "NoExecute"}])
    rec.record(Event(ADDED, NODE, a, initial=True))
    clock.t = 101.0
    b = _changed(a, "2", unschedulable=False, taints=[{"key": "k", "value": "2", "effect": "NoExecute"}])
    rec.record(Event(MODIFIED, NODE, b))
    clock.t = 102.0
    rec.record(Event(MODIFIED, NODE, _changed(b, "3", taints=[])))
    clock.t = 103.0
    rec.record(Event(DELETED, NODE, b))
    rec.close()
    w = load_workload(tmp_path / "t.jsonl")
    assert [(e.at, e.action, e.taint) for e in w.events] == [
        (0.0, "create", None),
        (1.0, "uncordon", None),
        (1.0, "untaint", {"key": "k", "effect": "NoExecute"}),
        (1.0, "taint", {"key": "k", "value": "2", "effect": "NoExecute"}),
        (2.0, "untaint", {"key": "k", "effect": "NoExecute"}),
        (3.0, "delete", None),
    ]


def test_objects_a_recorded_controller_makes_are_left_out(tmp_path: Path) -> None:
    rec = _recorder(tmp_path / "c.jsonl", Clock())
    owned = pod("web-x")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "uid": "rs", "controller": True}
    ]
    rec.record(Event(ADDED, POD, owned, initial=True))  # ReplicaSets not recorded: the pod is
    rec.kinds = rec.kinds | {REPLICA_SET.name}
    rec.record(
        Event(ADDED, POD, copy.deepcopy(owned) | {"metadata": {**owned["metadata"], "uid": "2", "name": "web-y"}})
    )
    rec.record(Event(ADDED, NAMESPACE, {"metadata": {"name": "default", "uid": "ns"}}, initial=True))
    rec.close()
    assert [(e.kind, e.name) for e in load_workload(tmp_path / "c.jsonl").events] == [
        ("Pod", "web-x"),
        ("Namespace", "default"),
    ]


def test_a_recording_never_overwrites_a_file_and_is_named_jsonl(tmp_path: Path) -> None:
    (tmp_path / "old.jsonl").write_text("precious\n")
    with pytest.raises(RecordingError, match="exists"):
        Recorder(tmp_path / "old.jsonl").open()
    assert (tmp_path / "old.jsonl").read_text() == "precious\n"
    with pytest.raises(RecordingError, match=r"name it \*\.jsonl"):
        Recorder(tmp_path / "rec.yaml").open()
    proc = subprocess.run(
        [sys.executable, "-m", "syncer", "--source-kubeconfig", "x", "--target-url", "http://127.0.0.1:1",
         "--record", str(tmp_path / "old.jsonl")],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and "kss sync: --record:" in proc.stderr and "exists" in proc.stderr


# ---------------------------------------------------------------------------------------------- end to end


@pytest.fixture
def source_and_simulator(tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    # The source plays production with nobody scheduling there: the test binds and finishes pods itself.
    source, simulator = start_servers(
        launch_server(
            tmp_path,
            f"sqlite:///{tmp_path / 'source.db'}",
            env={"KSS_SCHEDULER_ENABLED": "false", "KSS_CONTROLLERS": "false", "KSS_KUBELET": "false"},
        ),
        launch_server(tmp_path, f"sqlite:///{tmp_path / 'simulator.db'}"),
    )
    try:
        yield source, simulator
    finally:
        source.stop()
        simulator.stop()


def _pod_body(name: str, cpu: str = "1") -> dict[str, Any]:
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def test_a_recording_of_a_live_source_replays_to_the_same_arrivals(
    source_and_simulator: tuple[Server, Server], tmp_path: Path
) -> None:
    source, simulator = source_and_simulator
    src = core(source.url)
    src.create_node(node_body("node-a", cpu="4"))
    src.create_node(node_body("node-b", cpu="4"))
    src.create_namespaced_pod("default", _pod_body("early"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "early"},
               "target": {"kind": "Node", "name": "node-a"}}  # fmt: skip
    src.create_namespaced_pod_binding("early", "default", binding, _preload_content=False)

    recording = tmp_path / "prod.jsonl"
    log = (tmp_path / "syncer.log").open("wb")
    syncer = subprocess.Popen(
        [sys.executable, "-m", "syncer", "--source-kubeconfig", str(source.kubeconfig),
         "--target-url", simulator.url, "--watch-timeout", "5", "--record", str(recording)],
        stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        eventually(
            lambda: any(
                line.get("create", {}).get("metadata", {}).get("name") == "early" for line in _lines(recording)
            ),
            what="the first list recorded",
        )
        time.sleep(1.0)  # the watches are up
        made: dict[str, float] = {}
        for i in range(4):
            src.create_namespaced_pod("default", _pod_body(f"p{i}"))
            made[f"p{i}"] = time.time()
            time.sleep(0.7)
        src.delete_namespaced_pod("p1", "default")
        deleted_at = time.time()
        src.patch_node("node-b", {"spec": {"unschedulable": True}})
        cordoned_at = time.time()
        src.patch_namespaced_pod_status("p2", "default", {"status": {"phase": "Succeeded"}})
        eventually(lambda: sum("delete" in line for line in _lines(recording)) == 2, what="both departures recorded")
        eventually(lambda: any("cordon" in line for line in _lines(recording)), what="the cordon recorded")
    finally:
        syncer.send_signal(signal.SIGTERM)
        syncer.wait(timeout=30)
        log.close()
    assert syncer.returncode == 0, (tmp_path / "syncer.log").read_text()

    w = load_workload(recording)
    epoch = w.epoch.timestamp()
    pods = [(e.at, e.name) for e in w.events if e.kind == "Pod" and e.action == "create"]
    assert [name for _, name in pods] == ["early", "p0", "p1", "p2", "p3"], "the same pods in the same order"
    assert pods[0][0] == 0.0
    for at, name in pods[1:]:
        assert abs(at - (made[name] - epoch)) < 2.0, (name, at, made[name] - epoch)
    assert [at for at, _ in pods] == sorted(at for at, _ in pods)
    early = next(e for e in w.events if e.name == "early")
    assert early.obj is not None and "nodeName" not in early.obj["spec"], "scheduled again in the replay"
    deletes = {e.name: e.at for e in w.events if e.action == "delete"}
    # A departure is recorded when the pod left the source, its grace period spent there: gone at once in a replay.
    assert {e.name: e.grace for e in w.events if e.action == "delete"} == {"p1": 0.0, "p2": 0.0}
    assert set(deletes) == {"p1", "p2"} and abs(deletes["p1"] - (deleted_at - epoch)) < 2.0
    cordon = next(e for e in w.events if e.action == "cordon")
    assert cordon.name == "node-b" and abs(cordon.at - (cordoned_at - epoch)) < 2.0

    result = Replay(w).run()
    records = {r.key.split("/")[1]: r for r in result.pods}
    assert [(records[name].arrival, name) for _, name in pods] == pods, "the replay's arrivals are the recording's"
    assert records["p1"].outcome == "deleted" and records["p2"].outcome == "deleted"
    assert records["p1"].finished_at == deletes["p1"] and records["p2"].finished_at == deletes["p2"]
    assert {records[n].outcome for n in ("early", "p0", "p3")} == {"running"}
    assert all(r.bound_at == r.arrival for r in records.values()), "room for every pod: bound on arrival"
