"""End to end: a second ``kss serve`` plays the production cluster and ``python -m syncer`` mirrors it into the first.

Both sides are driven with the official ``kubernetes`` client. The syncer reaches the source through a
recording proxy, which proves it never sends the source a single mutating request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from syncer.translate import SOURCE_UID_ANNOTATION
from tests.conftest import KSS, Server, free_port, launch_server, start_server, start_servers
from tests.conftest import eventually as _eventually
from tests.syncer.proxy import RecordingProxy

T = TypeVar("T")


def eventually(check: Callable[[], T], *, timeout: float = 30.0, what: str = "condition") -> T:
    """``tests.conftest.eventually`` through the simulator's or the source's restarts and outages (their errors
    count as not yet)."""
    return _eventually(
        check, timeout=timeout, what=what, interval=0.2, ignoring=(ApiException, httpx.HTTPError, AssertionError)
    )


REPO = Path(__file__).resolve().parents[2]
SELECTED_NODE = "kube-scheduler-simulator.sigs.k8s.io/selected-node"
# The source plays production, a real cluster whose controllers are the test: its own scheduler, controllers and
# kubelet are off (the tests decide when its pods are bound; its pods name owners it does not serve).
SOURCE_ENV = {
    "KSS_SCHEDULER_ENABLED": "false",
    "KSS_CONTROLLERS": "false",
    "KSS_KUBELET": "false",
    "KSS_WATCH_WINDOW": "20",
    "KSS_WATCH_BOOKMARK_SECONDS": "1",
}


def core(url: str) -> client.CoreV1Api:
    """The official client's CoreV1Api on a server URL."""
    cfg = client.Configuration()
    cfg.host = url
    return client.CoreV1Api(client.ApiClient(cfg))


def raw(api: client.CoreV1Api, path: str) -> dict[str, Any]:
    """GET a path as JSON through the official client (no model conversion)."""
    resp = api.api_client.call_api("GET", api.api_client.configuration.host + path, {"Accept": "application/json"})
    return json.loads(resp.read())  # type: ignore[no-any-return]


def node_body(name: str, cpu: str = "8") -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    return {"metadata": {"name": name}, "status": {"capacity": capacity, "allocatable": capacity}}


def pod_body(name: str, *, node: str | None = None, labels: dict[str, str] | None = None, owned: bool = True) -> dict:
    meta: dict[str, Any] = {"name": name, "labels": labels or {"app": "web"}}
    if owned:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "6a1b", "controller": True}
        ]
    spec: dict[str, Any] = {
        "serviceAccountName": "web",
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec}


@dataclass
class Mirror:
    """Source + proxy + simulator + syncer process."""

    workdir: Path
    source: Server
    simulator: Server
    proxy: RecordingProxy
    src: client.CoreV1Api
    sim: client.CoreV1Api
    metrics_port: int
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def start_syncer(self, *extra: str) -> None:
        source_config = self.workdir / "source.kubeconfig"
        source_config.write_text(self.source.kubeconfig.read_text().replace(self.source.url, self.proxy.url))
        self.log = self.workdir / "syncer.log"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "syncer",
                "--source-kubeconfig",
                str(source_config),
                "--target-kubeconfig",
                str(self.simulator.kubeconfig),
                "--metrics-port",
                str(self.metrics_port),
                "--watch-timeout",
                "3",
                "--inactivity-timeout",
                "10",
                "--backoff-max",
                "0.5",
                *extra,
            ],
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        eventually(lambda: self.metric("Pod", "listed") >= 1, what="the syncer's first list")

    def metric(self, kind: str, action: str) -> float:
        text = httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2).text
        needle = f'kss_syncer_actions_total{{action="{action}",kind="{kind}"}} '
        for line in text.splitlines():
            if line.startswith(needle):
                return float(line[len(needle) :])
        return 0.0

    def sim_pods(self, namespace: str = "default") -> dict[str, dict[str, Any]]:
        items = raw(self.sim, f"/api/v1/namespaces/{namespace}/pods")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def src_pods(self, namespace: str = "default") -> dict[str, dict[str, Any]]:
        items = raw(self.src, f"/api/v1/namespaces/{namespace}/pods")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def in_step(self) -> bool:
        """Same pod names on both sides, each simulator pod tracing back to the source pod of its name."""
        src, sim = self.src_pods(), self.sim_pods()
        if set(src) != set(sim):
            return False
        return all(sim[n]["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == src[n]["metadata"]["uid"] for n in src)

    def syncer_log(self) -> str:
        return self.log.read_text() if self.log else ""


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    source, simulator = start_servers(
        launch_server(
            tmp_path,
            f"sqlite:///{tmp_path / 'source.db'}",
            env=SOURCE_ENV,
        ),
        launch_server(tmp_path, f"sqlite:///{tmp_path / 'simulator.db'}"),
    )
    proxy = RecordingProxy(source.url).start()
    m = Mirror(tmp_path, source, simulator, proxy, core(source.url), core(simulator.url), free_port())
    try:
        yield m
    finally:
        if m.process is not None and m.process.poll() is None:
            m.process.terminate()
            try:
                m.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                m.process.kill()
        proxy.stop()
        # The tests may have replaced a server by a restarted one: stop whichever runs now (and the first).
        for server in {id(s): s for s in (m.simulator, simulator, m.source, source)}.values():
            server.stop()


def _bind(api: client.CoreV1Api, name: str, node: str) -> None:
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": node}}
    api.create_namespaced_pod_binding(name, "default", body, _preload_content=False)


def test_source_pods_are_scheduled_by_the_simulator_and_the_source_never_moves_them(mirror: Mirror) -> None:
    for name in ("node-a", "node-b", "node-c"):
        mirror.src.create_node(node_body(name))
    mirror.src.create_namespaced_pod("default", pod_body("running", node="node-c"))  # the existing load
    mirror.start_syncer()

    running = eventually(lambda: mirror.sim_pods().get("running"), what="the running pod")
    assert running["spec"]["nodeName"] == "node-c", "a pod scheduled before the syncer started keeps its node"

    for i in range(4):
        mirror.src.create_namespaced_pod("default", pod_body(f"web-{i}"))
    names = [f"web-{i}" for i in range(4)]

    def placed() -> dict[str, str]:
        pods = mirror.sim_pods()
        return {n: pods[n]["spec"]["nodeName"] for n in names if pods.get(n, {}).get("spec", {}).get("nodeName")}

    chosen = eventually(lambda: len(placed()) == 4 and placed(), what="the simulator to schedule the new pods")
    for name in names:
        pod = mirror.sim_pods()[name]
        assert "ownerReferences" not in pod["metadata"]
        assert "serviceAccountName" not in pod["spec"]
        assert pod["metadata"]["annotations"][SELECTED_NODE] == chosen[name]
        results = raw(mirror.sim, f"/simulator/v1/namespaces/default/pods/{name}/results")
        assert results["attempts"], "the simulator recorded why it placed the pod"
    assert all("nodeName" not in p["spec"] for n, p in mirror.src_pods().items() if n in names)

    # Production's scheduler binds the same pods elsewhere and relabels them: the simulator keeps its decisions.
    for name in names:
        elsewhere = next(n for n in ("node-a", "node-b", "node-c") if n != chosen[name])
        _bind(mirror.src, name, elsewhere)
        mirror.src.patch_namespaced_pod(name, "default", {"metadata": {"labels": {"moved": "yes"}}})
    eventually(lambda: mirror.metric("Pod", "ignored_scheduled") >= 8, what="the source's updates to be ignored")
    after = mirror.sim_pods()
    assert {n: after[n]["spec"]["nodeName"] for n in names} == chosen
    assert all("moved" not in after[n]["metadata"].get("labels", {}) for n in names)
    assert mirror.proxy.mutating() == [], "the syncer never writes to the source"


def test_deletions_on_either_side(mirror: Mirror) -> None:
    mirror.src.create_node(node_body("node-a"))
    mirror.start_syncer()
    for name in ("doomed", "victim", "kept"):
        mirror.src.create_namespaced_pod("default", pod_body(name))
    eventually(lambda: {"doomed", "victim", "kept"} <= set(mirror.sim_pods()), what="the pods to be mirrored")

    mirror.src.delete_namespaced_pod("doomed", "default", grace_period_seconds=0)  # gone at once, no kubelet wait
    eventually(lambda: "doomed" not in mirror.sim_pods(), what="the source's deletion to reach the simulator")

    mirror.sim.delete_namespaced_pod("victim", "default", grace_period_seconds=0)  # a user in the simulator
    mirror.src.patch_namespaced_pod("victim", "default", {"metadata": {"labels": {"later": "update"}}})
    mirror.src.patch_namespaced_pod("kept", "default", {"metadata": {"labels": {"later": "update"}}})
    eventually(
        lambda: mirror.sim_pods()["kept"]["metadata"]["labels"].get("later") == "update",
        what="the update of the kept pod",
    )
    assert mirror.metric("Pod", "tombstoned") == 1
    mirror.src.patch_namespaced_pod("victim", "default", {"metadata": {"labels": {"even": "later"}}})
    eventually(lambda: mirror.metric("Pod", "ignored_deleted_in_simulator") >= 1, what="the later update")
    assert "victim" not in mirror.sim_pods(), "a deletion made in the simulator is not undone"

    # The node goes from production: the simulator follows (and drops what it had placed there).
    mirror.src.delete_node("node-a")
    eventually(lambda: not raw(mirror.sim, "/api/v1/nodes")["items"], what="the node deletion")
    assert mirror.proxy.mutating() == []


def test_a_simulator_side_deletion_stays_deleted_across_a_syncer_restart(mirror: Mirror) -> None:
    state_file = mirror.workdir / "sync-state.json"
    mirror.src.create_node(node_body("node-a"))
    mirror.start_syncer("--state-file", str(state_file))
    names = {"quiet", "moved", "kept"}
    for name in sorted(names):
        mirror.src.create_namespaced_pod("default", pod_body(name))
    eventually(lambda: names <= set(mirror.sim_pods()), what="the pods to be mirrored")

    def recorded() -> set[str]:
        if not state_file.exists():
            return set()
        return {m["name"] for m in json.loads(state_file.read_text())["mirrors"].values()}

    eventually(lambda: names <= recorded(), what="the state file to hold the mirrors (written without a clean stop)")

    # Deleted in the simulator: one whose source copy never changes while the syncer runs, one whose source updates
    # are ignored (scheduled in the source): neither deletion is seen by an update that fails.
    # At once (a bound pod is otherwise deleted gracefully, and this simulator runs no kubelet to end it).
    mirror.sim.delete_namespaced_pod("quiet", "default", grace_period_seconds=0)
    mirror.sim.delete_namespaced_pod("moved", "default", grace_period_seconds=0)
    _bind(mirror.src, "moved", "node-a")
    mirror.src.patch_namespaced_pod("moved", "default", {"metadata": {"labels": {"later": "update"}}})
    eventually(lambda: mirror.metric("Pod", "ignored_scheduled") >= 1, what="the source's update to be ignored")
    assert mirror.process is not None
    mirror.process.kill()  # no clean stop
    mirror.process.wait(timeout=10)
    mirror.src.patch_namespaced_pod("quiet", "default", {"metadata": {"labels": {"while": "away"}}})

    mirror.start_syncer("--state-file", str(state_file))
    mirror.src.create_namespaced_pod("default", pod_body("after"))
    eventually(lambda: "after" in mirror.sim_pods(), what="the restarted syncer to mirror a new pod")
    eventually(lambda: mirror.metric("Pod", "tombstoned") >= 2, what="the deletions to be tombstoned")
    pods = mirror.sim_pods()
    assert "quiet" not in pods and "moved" not in pods, "simulator-side deletions are not undone by a restart"
    assert "kept" in pods
    saved = json.loads(state_file.read_text())["mirrors"]
    assert sorted(m["name"] for m in saved.values() if m.get("deletedInSimulator")) == ["moved", "quiet"]
    assert mirror.proxy.mutating() == []


def test_source_stopped_mid_stream_and_started_again_ends_in_step(mirror: Mirror) -> None:
    mirror.src.create_node(node_body("node-a", cpu="64"))
    mirror.start_syncer()
    stop = threading.Event()
    created: list[str] = []

    def churn() -> None:
        i = 0
        while not stop.is_set():
            try:
                mirror.src.create_namespaced_pod("default", pod_body(f"churn-{i}"))
                created.append(f"churn-{i}")
            except Exception:
                return  # the source went away
            i += 1

    writer = threading.Thread(target=churn)
    writer.start()
    eventually(lambda: len(created) >= 15, what="a stream of creations")
    mirror.source.stop()  # mid-stream
    stop.set()
    writer.join()
    eventually(lambda: mirror.metric("Pod", "reconnected") >= 1, what="the syncer to notice the outage")

    restarted = start_server(
        mirror.workdir,
        mirror.source.database_url,
        port=mirror.source.port,
        env=SOURCE_ENV,
    )
    mirror.source = restarted
    for name in created[:3]:
        mirror.src.delete_namespaced_pod(name, "default")
    for i in range(5):
        mirror.src.create_namespaced_pod("default", pod_body(f"after-{i}"))
    eventually(mirror.in_step, timeout=40, what="the simulator to be in step again")
    assert len(mirror.sim_pods()) == len(created) - 3 + 5, "no pod lost, none duplicated"
    assert mirror.proxy.mutating() == []


def test_forced_410_relists_and_mirrors_deletions_from_the_gap(mirror: Mirror) -> None:
    mirror.src.create_node(node_body("node-a", cpu="64"))
    for i in range(6):
        mirror.src.create_namespaced_pod("default", pod_body(f"old-{i}"))
    mirror.start_syncer()
    eventually(mirror.in_step, what="the first list to be mirrored")

    # Every watch ends within --watch-timeout; their next requests are parked at the proxy...
    mirror.proxy.hold_watches()
    # Nine kinds and PodGroup (both ends serve it; Workload needs the GenericWorkload gate, off here).
    eventually(lambda: mirror.proxy.held >= 10, timeout=20, what="all ten watches to be parked")
    # ...while the source changes more than its watch window (20 events) keeps: those versions are gone.
    for i in range(3):
        mirror.src.delete_namespaced_pod(f"old-{i}", "default")
    for i in range(25):
        mirror.src.create_namespaced_pod("default", pod_body(f"gap-{i}"))
    mirror.proxy.release_watches()

    eventually(lambda: mirror.metric("Pod", "relisted_gone") >= 1, what="a 410 and a re-list")
    eventually(mirror.in_step, what="the simulator to be in step after the re-list")
    pods = mirror.sim_pods()
    assert not any(f"old-{i}" in pods for i in range(3)), "deletions during the gap were mirrored"
    assert len(pods) == 3 + 25
    assert mirror.proxy.mutating() == []


def test_kss_import_copies_once_with_paging(mirror: Mirror) -> None:
    for i in range(7):
        mirror.src.create_node(node_body(f"node-{i}"))
    mirror.src.create_namespaced_pod("default", pod_body("bound", node="node-3"))
    for i in range(12):
        mirror.src.create_namespaced_pod("default", pod_body(f"batch-{i}"))
    source_config = mirror.workdir / "source.kubeconfig"
    source_config.write_text(mirror.source.kubeconfig.read_text().replace(mirror.source.url, mirror.proxy.url))
    done = subprocess.run(
        [
            str(KSS),
            "import",
            "--kubeconfig",
            str(source_config),
            "--target-url",
            mirror.simulator.url,
            "--page-size",
            "5",
            "--qps",
            "50",
            "--burst",
            "10",
            "--log-level",
            "INFO",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "imported" in done.stderr and "Pod" in done.stderr
    assert "one by one" not in done.stderr and "object by object" not in done.stderr, "a page per bulk create"
    pods = mirror.sim_pods()
    assert len(pods) == 13 and pods["bound"]["spec"]["nodeName"] == "node-3"
    assert len(raw(mirror.sim, "/api/v1/nodes")["items"]) == 7
    pod_lists = [path for method, path in mirror.proxy.requests if method == "GET" and "/pods?" in path]
    assert len(pod_lists) == 3 and all("limit=5" in p for p in pod_lists), "13 pods in pages of 5"
    assert any("continue=" in p for p in pod_lists)
    assert mirror.proxy.mutating() == []


def test_kss_import_places_pending_pods_against_the_whole_running_load(mirror: Mirror) -> None:
    # One node with room for two pods; two run there in the source and one waits. The waiting pod's namespace is
    # imported first: in list order it would be placed on the still empty node before the running pods arrived
    # (bound, whatever the node holds), three pods on a node that has room for two.
    mirror.src.create_node(node_body("only", cpu="2"))
    for namespace in ("first", "second"):
        mirror.src.create_namespace({"metadata": {"name": namespace}})
    mirror.src.create_namespaced_pod("first", pod_body("waiting"))
    for name in ("running-1", "running-2"):
        mirror.src.create_namespaced_pod("second", pod_body(name, node="only"))
    command = [str(KSS), "import", "--kubeconfig", str(mirror.source.kubeconfig), "--target-url", mirror.simulator.url]
    done = subprocess.run(
        [*command, "--namespaces", "first,second", "--no-progress"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    def tried() -> dict[str, Any]:
        pod = mirror.sim_pods("first")["waiting"]
        conditions = {c["type"] for c in pod["status"].get("conditions") or []}
        return pod if "PodScheduled" in conditions else {}

    waiting = eventually(tried, what="the waiting pod's scheduling attempt")
    assert not waiting["spec"].get("nodeName"), "placed on a node the running pods fill"
    assert [c["reason"] for c in waiting["status"]["conditions"] if c["type"] == "PodScheduled"] == ["Unschedulable"]
    running = mirror.sim_pods("second")
    assert sorted(n for n, p in running.items() if p["spec"].get("nodeName") == "only") == ["running-1", "running-2"]


def test_simulator_outage_loses_and_reorders_nothing(mirror: Mirror) -> None:
    mirror.src.create_node(node_body("node-a", cpu="64"))
    mirror.start_syncer()
    eventually(lambda: raw(mirror.sim, "/api/v1/nodes")["items"], what="the node")
    mirror.simulator.stop()
    # While the simulator is down: a create, an update, a delete of the same pod, and more creates.
    mirror.src.create_namespaced_pod("default", pod_body("short-lived"))
    mirror.src.patch_namespaced_pod("short-lived", "default", {"metadata": {"labels": {"v": "2"}}})
    mirror.src.delete_namespaced_pod("short-lived", "default")
    for i in range(5):
        mirror.src.create_namespaced_pod("default", pod_body(f"queued-{i}"))
    eventually(lambda: mirror.metric("Pod", "retried") >= 1, what="the sink to retry")
    mirror.simulator = start_server(mirror.workdir, mirror.simulator.database_url, port=mirror.simulator.port)
    eventually(mirror.in_step, what="the queued events to be applied")
    assert "short-lived" not in mirror.sim_pods(), "create, update and delete applied in their order"
    assert mirror.metric("Pod", "failed") == 0
    assert mirror.proxy.mutating() == []
