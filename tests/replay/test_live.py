"""The live driver against a real ``kss serve`` (its scheduler, controllers and kubelet on): objects arrive at
virtual time / speed, the server places the pods, the driver ends them after runFor / speed; node events, the
scheduler configuration, refusals reported while the run goes on, Ctrl-C. A watch of the official ``kubernetes``
client records what the server did and when."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client, config, watch

from kss_sim.replay.live import KUBELET_RUN_DURATION, LiveReplay, go_duration
from kss_sim.replay.live_api import Connection, Target
from kss_sim.replay.live_summary import LiveSummary
from kss_sim.replay.workload import parse_workload
from tests.conftest import KSS, Server, eventually, start_server

SPEED = 60.0
# How late the server (and this 2-core machine) may be; nothing may happen early.
LATE = 1.5
EARLY = 0.15


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``kss serve`` with its scheduler, controllers and kubelet; namespaces are not made on first use, so the
    driver has to make them."""
    workdir = tmp_path_factory.mktemp("kss-live")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_AUTO_CREATE_NAMESPACES": "false"})
    yield srv
    srv.stop()


@pytest.fixture
def server(live_server: Server) -> Server:
    """The module's server, emptied (built-in objects only) and back to the default configuration."""
    assert httpx.post(f"{live_server.url}/simulator/v1/reset", params={"to": "empty"}, timeout=60).status_code == 200
    default = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    assert httpx.put(f"{live_server.url}/simulator/v1/schedulerconfiguration", json=default).status_code == 200
    return live_server


class Recorder:
    """Every pod and node event the server sends, with the wall time it arrived."""

    def __init__(self, kubeconfig: Path) -> None:
        api = config.new_client_from_config(str(kubeconfig))  # type: ignore[no-untyped-call]
        self.core: Any = client.CoreV1Api(api)
        self.batch: Any = client.BatchV1Api(api)
        self.seen: list[tuple[float, str, Any]] = []  # (time.time(), event type, object)
        self._watches: list[Any] = [watch.Watch(), watch.Watch()]  # type: ignore[no-untyped-call]
        self._lock = threading.Lock()
        for w, lister in zip(self._watches, (self.core.list_pod_for_all_namespaces, self.core.list_node), strict=True):
            threading.Thread(target=self._run, args=(w, lister), daemon=True).start()
        time.sleep(0.3)  # the watches are open before the run starts

    def _run(self, w: Any, lister: Any) -> None:
        try:
            for event in w.stream(lister, timeout_seconds=120):
                with self._lock:
                    self.seen.append((time.time(), event["type"], event["object"]))
        except Exception:  # the stream cut when the test stops it (or the server goes)
            return

    def stop(self) -> None:
        time.sleep(0.5)  # what the run did last is on its way
        for w in self._watches:
            w.stop()

    def times(self, kind: str, name: str) -> list[tuple[float, str, Any]]:
        with self._lock:
            return [(t, typ, o) for t, typ, o in self.seen if o.kind == kind and o.metadata.name == name]

    def added(self, name: str) -> float:
        return next(t for t, typ, _ in self.times("Pod", name) if typ == "ADDED")

    def bound(self, name: str) -> tuple[float, str]:
        return next((t, o.spec.node_name) for t, _, o in self.times("Pod", name) if o.spec.node_name)

    def deleted(self, name: str) -> float:
        return next(t for t, typ, _ in self.times("Pod", name) if typ == "DELETED")


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str = "1", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [container], **spec},
    }


def workload(start: list[dict[str, Any]], events: list[dict[str, Any]]) -> str:
    doc = {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "live"},
        "spec": {"start": start, "events": events},
    }
    return yaml.safe_dump(doc)


def replay(server: Server, text: str, *, speed: float = SPEED, **options: Any) -> LiveSummary:
    target = Target(Connection.from_options(server.url))
    try:
        return LiveReplay(parse_workload(text), target, speed=speed, **options).run()
    finally:
        target.close()


def near(actual: float, expected: float) -> bool:
    return expected - EARLY <= actual <= expected + LATE


def test_pods_arrive_on_time_are_placed_by_the_server_and_end_after_run_for(server: Server) -> None:
    recorder = Recorder(server.kubeconfig)
    text = workload(
        [node("n1")],
        [
            {"at": 0, "create": pod("first", cpu="3"), "runFor": "2m"},  # 2 s of wall time
            {"at": "30s", "create": pod("second", cpu="3", namespace="batch"), "runFor": 60},  # waits for room
        ],
    )
    summary = replay(server, text)
    recorder.stop()
    t0 = summary.started_at
    assert summary.errors == []
    assert summary.pods_finished == 2 and summary.events_applied == 2
    assert near(recorder.added("first"), t0) and near(recorder.added("second"), t0 + 30 / SPEED)
    first_bound, first_node = recorder.bound("first")
    assert first_node == "n1" and near(first_bound, t0)  # the server's scheduler bound it
    assert near(recorder.deleted("first"), first_bound + 120 / SPEED)
    second_bound, _ = recorder.bound("second")
    assert second_bound >= recorder.deleted("first")  # only then was there room
    assert near(recorder.deleted("second"), second_bound + 60 / SPEED)
    assert recorder.core.read_namespace("batch").metadata.name == "batch"  # the driver made it
    assert recorder.core.list_pod_for_all_namespaces().items == []


def test_a_deleted_pod_terminates_on_the_server_for_its_grace_period_on_the_replays_clock(server: Server) -> None:
    # 120 s of grace at 60x: 2 s on the server's wall clock, as the offline replay's 120 s virtual
    recorder = Recorder(server.kubeconfig)
    text = workload(
        [node("n1")],
        [
            {"at": 0, "create": pod("ended", cpu="2", terminationGracePeriodSeconds=120), "endAt": "30s"},
            {"at": 0, "create": pod("deleted", cpu="2", terminationGracePeriodSeconds=120)},
            {"at": "30s", "delete": {"kind": "Pod", "namespace": "default", "name": "deleted"}},
            {"at": "30s", "create": pod("next", cpu="4")},
        ],
    )
    summary = replay(server, text)
    assert summary.errors == [] and summary.objects_ended == 1
    deadline = time.monotonic() + 20
    while not any(o.spec.node_name for _, _, o in recorder.times("Pod", "next")):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    next_bound, _ = recorder.bound("next")
    recorder.stop()
    t0 = summary.started_at
    for name in ("ended", "deleted"):
        deleting = [(t, o) for t, _, o in recorder.times("Pod", name) if o.metadata.deletion_timestamp]
        began, first = deleting[0]
        assert near(began, t0 + 30 / SPEED) and first.metadata.deletion_grace_period_seconds == 2
        # the server's kubelet ends it at its deletionTimestamp (whole seconds: up to 1 s early), Failed then gone
        assert began + 1 - EARLY <= recorder.deleted(name) <= began + 2 + LATE
        assert next_bound >= began + 1 - EARLY  # no room while it terminated


def test_a_cordon_makes_the_node_unschedulable_on_the_server_at_its_time(server: Server) -> None:
    recorder = Recorder(server.kubeconfig)
    text = workload(
        [node("n1")],
        [
            {"at": "1m", "cordon": "n1"},
            {"at": "90s", "create": pod("late")},
            {"at": "3m", "uncordon": "n1"},
        ],
    )
    summary = replay(server, text)
    # The replay ends with the uncordon; the pod it lets through is bound after that, later on a loaded machine.
    eventually(lambda: any(o.spec.node_name for _, _, o in recorder.times("Pod", "late")), what="late to be bound")
    recorder.stop()
    t0 = summary.started_at
    assert summary.errors == []
    changes = [(t, o.spec.unschedulable) for t, typ, o in recorder.times("Node", "n1") if typ == "MODIFIED"]
    cordoned = next(t for t, unschedulable in changes if unschedulable)
    uncordoned = next(t for t, unschedulable in changes if t > cordoned and not unschedulable)
    assert near(cordoned, t0 + 60 / SPEED) and near(uncordoned, t0 + 180 / SPEED)
    late_bound, late_node = recorder.bound("late")
    assert late_node == "n1" and late_bound >= uncordoned  # pending while the only node was cordoned
    message = [
        c.message
        for t, _, o in recorder.times("Pod", "late")
        if t < uncordoned
        for c in (o.status.conditions or [])
        if c.type == "PodScheduled" and c.status == "False"
    ]
    assert message and "node(s) were unschedulable" in message[-1]


def test_a_job_runs_its_pods_through_the_servers_job_controller(server: Server) -> None:
    recorder = Recorder(server.kubeconfig)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "crunch", "namespace": "default"},
        "spec": {
            "completions": 2,
            "parallelism": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [pod("x")["spec"]["containers"][0]]}},
        },
    }
    summary = replay(server, workload([node("n1")], [{"at": 0, "create": job, "runFor": "3m"}]))
    assert summary.errors == []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        status = recorder.batch.read_namespaced_job("crunch", "default").status
        if status.succeeded == 2:
            break
        time.sleep(0.2)
    recorder.stop()
    assert status.succeeded == 2 and any(c.type == "Complete" for c in status.conditions or [])
    pods = recorder.core.list_namespaced_pod("default", label_selector="batch.kubernetes.io/job-name=crunch").items
    assert len(pods) == 2 and {p.status.phase for p in pods} == {"Succeeded"}
    assert {p.metadata.annotations[KUBELET_RUN_DURATION] for p in pods} == {go_duration(180 / SPEED)} == {"3s"}
    for p in pods:  # each ran runFor / speed after it started (the kubelet counts from whole-second startTime)
        bound, _ = recorder.bound(p.metadata.name)
        ended = next(
            t for t, _, o in recorder.times("Pod", p.metadata.name) if o.status and o.status.phase == "Succeeded"
        )
        assert near(ended, bound + 180 / SPEED - 1) or near(ended, bound + 180 / SPEED)


def test_node_updates_taints_deletes_and_configurations_happen_and_refusals_are_reported(server: Server) -> None:
    recorder = Recorder(server.kubeconfig)
    relabelled = node("n1")
    relabelled["metadata"]["labels"]["zone"] = "a"
    profile = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"score": {"disabled": [{"name": "*"}]}}}],
    }
    bad = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": "x"}
    text = workload(
        [node("n1"), pod("doomed", nodeName="n1")],
        [
            {"at": 0, "update": relabelled},  # the whole node as written: a later taint adds to it
            {"at": 6, "taint": {"node": "n1", "key": "gone", "value": "soon", "effect": "NoSchedule"}},
            {"at": 6, "taint": {"node": "n1", "key": "stays", "effect": "PreferNoSchedule"}},
            {"at": 12, "untaint": {"node": "n1", "key": "gone"}},
            {"at": 12, "untaint": {"node": "n1", "key": "never-there"}},
            {"at": 18, "delete": {"kind": "Pod", "namespace": "default", "name": "doomed"}},
            {"at": 24, "applyConfig": bad},
            {"at": 24, "applyConfig": profile},
        ],
    )
    summary = replay(server, text, speed=600)
    deadline = time.monotonic() + 20  # doomed's grace period: 30 s / 600, at least 1 s on the server's clock
    while not any(typ == "DELETED" for _, typ, _ in recorder.times("Pod", "doomed")):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    recorder.stop()
    n1 = recorder.core.read_node("n1")
    assert n1.metadata.labels["zone"] == "a"
    assert [(t.key, t.effect) for t in n1.spec.taints] == [("stays", "PreferNoSchedule")]
    assert any(typ == "DELETED" for _, typ, _ in recorder.times("Pod", "doomed"))
    running = httpx.get(f"{server.url}/simulator/v1/schedulerconfiguration").json()
    assert running["profiles"][0]["plugins"]["score"]["disabled"] == [{"name": "*"}]
    assert len(summary.errors) == 2 and summary.events_applied == 6
    assert "untaint Node n1: 404" in summary.errors[0] and "never-there" in summary.errors[0]
    assert "applyConfig scheduler configuration: 422" in summary.errors[1]


def test_a_node_failure_sets_the_nodes_ready_condition_and_the_servers_controllers_taint_it(server: Server) -> None:
    # n1 stops: the driver plays its lease lapse 50 s (virtual) on; a heal of n2 before its lapse cancels it
    text = workload(
        [node("n1"), node("n2")],
        [{"at": 0, "failNode": "n1"}, {"at": 0, "failNode": "n2"}, {"at": 40, "healNode": "n2"}],
    )
    text2 = workload([], [{"at": 0, "failNode": {"node": "n2", "notReady": True}}, {"at": 6, "healNode": "n1"}])
    started = time.monotonic()
    summary = replay(server, text, speed=100)
    assert summary.errors == [] and summary.events_applied == 3
    assert time.monotonic() - started >= 0.5  # the run held for the lapse

    def ready_and_taints(name: str) -> tuple[str, list[str]]:
        got = httpx.get(f"{server.url}/api/v1/nodes/{name}").json()
        ready = next(c for c in got["status"]["conditions"] if c["type"] == "Ready")
        return ready["status"], sorted(f"{t['key']}:{t['effect']}" for t in got["spec"].get("taints") or [])

    unreachable = ["node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"]
    deadline = time.monotonic() + 20
    while ready_and_taints("n1") != ("Unknown", unreachable):
        assert time.monotonic() < deadline, ready_and_taints("n1")
        time.sleep(0.1)
    assert ready_and_taints("n2") == ("True", [])
    summary = replay(server, text2, speed=600)
    assert summary.errors == [] and summary.events_applied == 2
    not_ready = ["node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"]
    deadline = time.monotonic() + 20
    while (ready_and_taints("n1"), ready_and_taints("n2")) != (("True", []), ("False", not_ready)):
        assert time.monotonic() < deadline, (ready_and_taints("n1"), ready_and_taints("n2"))
        time.sleep(0.1)


def test_the_servers_grace_periods_and_toleration_seconds_run_on_the_replays_clock(server: Server) -> None:
    # At 60x the pods are sent with their timings / 60: a NoExecute taint at 0 evicts the pod tolerating it for 240 s
    # 4 wall seconds later, and its 120 s grace period is 2 s on the server's kubelet; the default 300 s toleration
    # of the not-ready taint is 5 s. Offline, these are the same virtual seconds.
    recorder = Recorder(server.kubeconfig)
    tolerating = [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 240}]
    text = workload(
        [node("n1"), node("n2")],
        [
            {
                "at": 0,
                "create": pod("patient", nodeName="n1", tolerations=tolerating, terminationGracePeriodSeconds=120),
            },
            {"at": 0, "create": pod("plain", nodeName="n2")},
            {"at": 6, "taint": {"node": "n1", "key": "maintenance", "effect": "NoExecute"}},
            {"at": 6, "failNode": {"node": "n2", "notReady": True}},
        ],
    )
    summary = replay(server, text, until=340)
    assert summary.errors == []
    assert any("grace periods and tolerationSeconds / 60" in line for line in summary.lines())
    sent = httpx.get(f"{server.url}/api/v1/namespaces/default/pods/plain").json()["spec"]
    assert sent["terminationGracePeriodSeconds"] == 1  # 30 s / 60, at least 1
    assert sorted((t["key"], t["tolerationSeconds"]) for t in sent["tolerations"]) == [
        ("node.kubernetes.io/not-ready", 5),
        ("node.kubernetes.io/unreachable", 5),
    ]
    recorder.stop()
    t0 = summary.started_at
    for name, evicted_after in (("patient", 6 + 240), ("plain", 6 + 300)):
        deleting = [(t, o) for t, _, o in recorder.times("Pod", name) if o.metadata.deletion_timestamp]
        assert deleting, name
        began, first = deleting[0]
        # the node lifecycle controller's not-ready taint comes a moment after the status patch
        assert t0 + evicted_after / SPEED - EARLY <= began <= t0 + evicted_after / SPEED + LATE + 1, (name, began - t0)
        assert any(c.type == "DisruptionTarget" for c in first.status.conditions)
        if name == "patient":
            assert first.metadata.deletion_grace_period_seconds == 2


def test_a_drain_cordons_and_evicts_through_the_eviction_api_one_at_a_time_under_the_budget(server: Server) -> None:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {**pod("x")["spec"], "terminationGracePeriodSeconds": 5},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
    }
    events = [
        {"at": 0, "create": deployment},
        {"at": 10, "create": node("n2")},
        {"at": 10, "create": budget},
        {"at": 20, "drain": "n1"},
    ]
    recorder = Recorder(server.kubeconfig)
    speed = 5.0
    summary = replay(server, workload([node("n1")], events), speed=speed)
    recorder.stop()
    assert summary.errors == [] and summary.events_applied == 4
    with recorder._lock:
        pod_events = [(t, o) for t, _, o in recorder.seen if o.kind == "Pod"]
    # One at a time under the budget, read from the pods' watch in its order (not from the wall times the recorder
    # saw them at, which a loaded machine shifts): when each eviction sets a deletionTimestamp, the three pods of
    # the Deployment were healthy (Ready, not deleting) just before, so the budget's minAvailable 2 allowed it.
    latest: dict[str, Any] = {}
    marked: dict[str, float] = {}
    healthy_before: list[int] = []
    for t, o in pod_events:
        name = o.metadata.name
        if o.metadata.deletion_timestamp is not None and name not in marked:
            marked[name] = t
            healthy_before.append(sum(1 for other in latest.values() if _healthy(other)))
        latest[name] = o
    assert len(marked) == 3  # the three pods first on n1, each evicted (its deletionTimestamp set) once
    assert healthy_before == [3, 3, 3]
    times = sorted(marked.values())
    # the drain retries a refused eviction every 5 s (virtual): the evictions are spread over seconds, not at once
    assert (times[-1] - times[0]) * speed >= 5
    deadline = time.monotonic() + 20
    while True:
        pods = httpx.get(f"{server.url}/api/v1/pods").json()["items"]
        if sorted(p["spec"].get("nodeName") for p in pods) == ["n2", "n2", "n2"]:
            break
        assert time.monotonic() < deadline, [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods]
        time.sleep(0.2)
    assert httpx.get(f"{server.url}/api/v1/nodes/n1").json()["spec"]["unschedulable"] is True


def _healthy(pod: Any) -> bool:
    """As the disruption budget counts a pod: Ready and not being deleted."""
    conditions = (pod.status.conditions if pod.status else None) or []
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    return ready and pod.metadata.deletion_timestamp is None


def run_cli(server: Server, path: Path, *args: str, **kwargs: Any) -> subprocess.Popen[str]:
    command = [str(KSS), "replay", str(path), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_a_create_that_conflicts_is_reported_with_the_object_and_the_run_goes_on(
    server: Server, tmp_path: Path
) -> None:
    recorder = Recorder(server.kubeconfig)
    recorder.core.create_node(node("n1"))
    recorder.core.create_namespaced_pod("default", pod("taken"))
    path = tmp_path / "w.yaml"
    path.write_text(workload([], [{"at": 0, "create": pod("taken")}, {"at": 6, "create": pod("after")}]))
    proc = run_cli(server, path, "--target-kubeconfig", str(server.kubeconfig), "--speed", "60")
    out, err = proc.communicate(timeout=60)
    recorder.stop()
    assert proc.returncode == 1, err
    problems = [line for line in err.splitlines() if line.startswith("kss replay: ")]
    assert len(problems) == 1 and "create Pod default/taken: 409 AlreadyExists" in problems[0], err
    assert recorder.bound("after")[1] == "n1"  # the next event still happened
    assert "events: 1 of 2 applied" in out and "errors: 1" in out


def test_ctrl_c_stops_the_run_cleanly(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    events = [{"at": f"{i}m", "create": pod(f"p{i}")} for i in range(60)]
    path.write_text(workload([node("n1")], events))
    proc = run_cli(server, path, "--target-url", server.url, "--speed", "60", "--quiet")
    # Interrupted once it has created its first pod (a fixed wait could end while kss was still importing).
    deadline = time.monotonic() + 120
    while httpx.get(f"{server.url}/api/v1/namespaces/default/pods/p0", timeout=10).status_code != 200:
        assert proc.poll() is None and time.monotonic() < deadline, "the replay never created its first pod"
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "live replay interrupted at day 0 00:0" in out and "Traceback" not in err
    created = int(out.split("events: ")[1].split(" of")[0])
    assert 1 <= created < 60


def test_bad_options_are_refused_before_anything_is_sent(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(workload([], [{"at": 0, "cordon": "n1"}]))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kss_sim.replay.live_cli",
            str(path),
            "--target-url",
            "http://127.0.0.1:9",
            "--speed",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stderr.strip() == "kss replay: --speed: 0 must be more than 0"
    offline_only = [str(KSS), "replay", str(path), "--target-url", "http://127.0.0.1:9", "--out", str(tmp_path)]
    proc = subprocess.run(offline_only, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "kss replay: --out: not for a live replay (the server's settings and UI apply)"


def test_until_ends_the_run_at_that_virtual_time(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(workload([node("n1")], [{"at": "30s", "create": pod("early")}, {"at": "1h", "create": pod("x")}]))
    began = time.monotonic()
    proc = run_cli(server, path, "--target-url", server.url, "--speed", "60", "--until", "2m", "--quiet")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert 2.0 <= time.monotonic() - began < 2.0 + 10  # 2 virtual minutes at 60x, plus starting Python
    assert "live replay done at day 0 00:02:00" in out and "events: 1 of 1 applied" in out
    names = [p["metadata"]["name"] for p in httpx.get(f"{server.url}/api/v1/pods").json()["items"]]
    assert names == ["early"]
