"""``KSS_SCHEDULER_PROCESS``: the scheduler in a process of its own beside ``kss serve``'s API process.

The pods are bound by the child (its writes made and committed by the API process), every attempt is recorded, and
kill -9 of either process is survived: the child is started again and schedules what is left, and a child whose
API process died exits.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kss_sim.results.annotations import SELECTED_NODE
from tests.conftest import Server, start_server

PROCESS = {"KSS_SCHEDULER_PROCESS": "true", "KSS_CONTROLLERS": "false", "KSS_KUBELET": "false"}


def _node(name: str, cpu: str = "64") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "memory": "256Gi", "pods": "110"}},
    }


def _pod(name: str, cpu: str = "100m") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]},
    }


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (the scheduler process, spawn's resource tracker if any)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(p) for p in text]
    return found


def _scheduler_pid(server: Server) -> int:
    """The pid of the server's scheduler process (the child whose command line runs the spawn entry point)."""
    for pid in _children(server.process.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"spawn_main" in cmdline:
            return pid
    raise AssertionError("no scheduler process")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}", env=PROCESS)
    yield srv
    srv.stop(kill=True)


def _bound(http: httpx.Client) -> dict[str, str]:
    pods = http.get("/api/v1/namespaces/default/pods").json()["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in pods}


def test_the_child_binds_with_the_result_annotations_and_every_attempt_is_recorded(server: Server) -> None:
    child = _scheduler_pid(server)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for name in ("n1", "n2"):
            assert http.post("/api/v1/nodes", json=_node(name)).status_code == 201
        http.post("/api/v1/namespaces/default/pods", json=_pod("big", cpu="100")).raise_for_status()
        for i in range(20):
            http.post("/api/v1/namespaces/default/pods", json=_pod(f"p{i}")).raise_for_status()
        wait_for(lambda: sum(1 for node in _bound(http).values() if node) == 20)
        pod = http.get("/api/v1/namespaces/default/pods/p0").json()
        assert pod["metadata"]["annotations"][SELECTED_NODE] == pod["spec"]["nodeName"]
        events = http.get("/api/v1/namespaces/default/events").json()["items"]
        assert {"Scheduled", "FailedScheduling"} <= {e["reason"] for e in events}
        # The pod that fits nowhere: PodScheduled=False with kube-scheduler's message, written through the child.
        big = wait_for(
            lambda: [
                c
                for c in http.get("/api/v1/namespaces/default/pods/big").json()["status"].get("conditions") or []
                if c["type"] == "PodScheduled"
            ]
        )
        assert big[0]["status"] == "False" and "Insufficient cpu" in big[0]["message"]
        attempts = wait_for(
            lambda: http.get("/simulator/v1/namespaces/default/pods/p3/results").json().get("attempts"), timeout=20
        )
        assert attempts[0]["result"] == "scheduled" and attempts[0]["attempt"] == 1
        assert attempts[0]["boundTo"] == http.get("/api/v1/namespaces/default/pods/p3").json()["spec"]["nodeName"]
    assert _scheduler_pid(server) == child  # one child throughout


def test_kill_9_of_the_child_starts_another_that_schedules_the_rest(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        http.post("/api/v1/nodes", json=_node("n1", cpu="1000")).raise_for_status()
        first = _scheduler_pid(server)
        for i in range(60):
            http.post("/api/v1/namespaces/default/pods", json=_pod(f"p{i}")).raise_for_status()
            if i == 30:
                os.kill(first, signal.SIGKILL)
        wait_for(lambda: all(_bound(http).values()) and len(_bound(http)) == 60)
        second = _scheduler_pid(server)
        assert second != first and not _alive(first)
        # Every pod bound once: an unacknowledged binding was made again by the new child, not twice.
        assert set(_bound(http).values()) == {"n1"}


def test_a_page_asked_while_the_child_is_restarted_is_answered_by_the_next_one(server: Server) -> None:
    """The pages ask the child (node allocations, waiting pods, plugin timeouts): a child that ends while a page's
    question is on its way (killed, or restarted after falling behind the change log) must not fail the page."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        http.post("/api/v1/nodes", json=_node("n1")).raise_for_status()
        assert http.get("/ui/cluster").status_code == 200
        for _ in range(3):
            first = _scheduler_pid(server)
            os.kill(first, signal.SIGKILL)
            page = http.get("/ui/cluster")  # asked at once: the killed child's link may still look open
            assert page.status_code == 200, page.text[:500]
            assert 'id="node-n1"' in page.text
            wait_for(lambda killed=first: _scheduler_pid(server) != killed)


def test_kill_9_of_the_api_process_leaves_no_scheduler_behind(server: Server) -> None:
    child = _scheduler_pid(server)
    server.stop(kill=True)
    wait_for(lambda: not _alive(child), timeout=20)
