"""Issue #35 against a real ``kss serve``: the Nodes the issue created (``cpu: 1e1000``, ``cpu:
9223372036854775808``, ``images: "x"``) are stored, and a normal pod created after them is bound to the good node
within a second, with no traceback in the server's log; a pod with ``ownerReferences: "x"`` gets a SchedulerError
condition and does not hold the others up.

The API now refuses the wrongly typed ones (``images: "x"``, ``ownerReferences: "x"``: 400, as kube-apiserver's
decoder), so they are seeded as a database written before that check holds them: made well-formed through the API
by a server without a scheduler, changed in the database, then loaded by the server under test."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server, start_server


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Server]:
    database = tmp_path / "kss.db"
    seeding = start_server(
        tmp_path, f"sqlite:///{database}", env={"KSS_CONTROLLERS": "false", "KSS_SCHEDULER_ENABLED": "false"}
    )
    try:
        with httpx.Client(base_url=seeding.url, timeout=10) as client:
            assert client.post("/api/v1/nodes", json=node("images", images=[])).status_code == 201
            assert client.post("/api/v1/namespaces/default/pods", json=pod("owned")).status_code == 201
    finally:
        seeding.stop()
    with sqlite3.connect(database) as db:
        db.execute(
            "UPDATE cluster_objects SET body = json_set(body, '$.status.images', 'x') WHERE kind = 'Node' AND name = ?",
            ("images",),
        )
        db.execute(
            "UPDATE cluster_objects SET body = json_set(body, '$.metadata.ownerReferences', 'x') "
            "WHERE kind = 'Pod' AND name = ?",
            ("owned",),
        )
    srv = start_server(tmp_path, f"sqlite:///{database}", env={"KSS_CONTROLLERS": "false"})
    yield srv
    srv.stop()


def node(name: str, **status: Any) -> dict[str, Any]:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {**allocatable, **status.pop("allocatable", {})}, "capacity": allocatable, **status},
    }


def pod(name: str, **metadata: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **metadata},
        "spec": {"containers": [container]},
    }


def bound_within(client: httpx.Client, name: str, seconds: float) -> tuple[str | None, float]:
    """The node ``name`` is bound to, polled from its creation, and how long that took."""
    t0 = time.monotonic()
    assert client.post("/api/v1/namespaces/default/pods", json=pod(name)).status_code == 201
    while time.monotonic() - t0 < seconds:
        bound = client.get(f"/api/v1/namespaces/default/pods/{name}").json()["spec"].get("nodeName")
        if bound:
            return bound, time.monotonic() - t0
        time.sleep(0.02)
    return None, time.monotonic() - t0


def test_a_normal_pod_schedules_within_a_second_after_the_issue_s_nodes(serve: Server) -> None:
    with httpx.Client(base_url=serve.url, timeout=10) as client:
        # kube-apiserver accepts both quantities (their type is right): computed with, never refused.
        bad = [node("exp", allocatable={"cpu": "1e1000"}), node("int64", allocatable={"cpu": "9223372036854775808"})]
        for obj in [*bad, node("good")]:
            r = client.post("/api/v1/nodes", json=obj)
            assert r.status_code == 201, r.text
        assert client.get("/api/v1/nodes/images").json()["status"]["images"] == "x"  # loaded as the database held it
        owned = client.get("/api/v1/namespaces/default/pods/owned").json()
        assert owned["metadata"]["ownerReferences"] == "x"
        refused = client.post("/api/v1/nodes", json=node("again", images="x"))
        assert refused.status_code == 400, refused.text  # what the API answers now (issue #35 item 1)

        for name in ("p0", "p1", "p2"):
            bound, took = bound_within(client, name, 10.0)
            assert bound == "good", f"{name} not bound to the good node within 10 s"
            assert took < 1.0, f"{name} took {took:.2f} s"

        deadline = time.monotonic() + 10
        conditions: list[dict[str, Any]] = []
        while not conditions and time.monotonic() < deadline:
            status = client.get("/api/v1/namespaces/default/pods/owned").json()["status"]
            conditions = [c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"]
            time.sleep(0.05)
        assert [(c["status"], c["reason"]) for c in conditions] == [("False", "SchedulerError")]
        assert "metadata.ownerReferences: must be an array" in conditions[0]["message"]

        results = client.get("/simulator/v1/namespaces/default/pods/p0/results").json()["attempts"][0]
        assert results["rejections"]["ImageLocality"] == {
            "node(s) had a malformed object: status.images: must be an array, not string": 1
        }
        assert results["rejections"]["NodeResourcesFit"] == {"Insufficient cpu": 2}  # 0 millicores, as upstream
        events = client.get("/api/v1/namespaces/default/events").json()["items"]
        on_nodes = [
            (e["type"], e["reason"], e["message"], e["count"]) for e in events if e["involvedObject"]["kind"] == "Node"
        ]
        assert on_nodes == [
            (
                "Warning",
                "MalformedObject",
                "node(s) had a malformed object: status.images: must be an array, not string",
                1,
            )
        ]  # once, not once per attempt
    assert "Traceback" not in serve.log.read_text()
