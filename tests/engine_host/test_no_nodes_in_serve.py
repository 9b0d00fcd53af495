"""A pod created while the cluster has no node, in ``kss serve``: kube-scheduler's ErrNoNodesAvailable is an
UnschedulableAndUnresolvable status naming no plugin, so the pod is Unschedulable (not a SchedulerError), its
attempt runs no PostFilter, and, with no rejector plugin, it waits in backoffQ (podErrorBackoffQ) rather than in
the unschedulable pool; it binds once a node appears."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod

MESSAGE = "no nodes available to schedule pods"


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    application = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=7))
    async with application.router.lifespan_context(application):
        yield application


async def test_a_pod_with_no_node_to_go_to_is_unschedulable_and_binds_when_one_appears(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod("p", cpu="100m"))).status_code == 201
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)

    app.state.results.flush()
    attempts = (await client.get("/simulator/v1/namespaces/default/pods/p/results")).json()["attempts"]
    assert [(a["result"], a["message"], a["boundTo"]) for a in attempts] == [("unschedulable", MESSAGE, None)]
    current = (await client.get("/api/v1/namespaces/default/pods/p")).json()
    (condition,) = [c for c in current["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (condition["status"], condition["reason"], condition["message"]) == ("False", "Unschedulable", MESSAGE)
    assert "nominatedNodeName" not in current["status"]
    events = (await client.get("/api/v1/namespaces/default/events")).json()["items"]
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [("Warning", "FailedScheduling", MESSAGE)]
    # No plugin rejected it: backoffQ, not the unschedulable pool (which only a registered event would empty).
    counts = app.state.scheduler.queue.pending_counts()
    assert (counts["backoff"], counts["unschedulable"]) == (1, 0), counts

    assert (await client.post("/api/v1/nodes", json=node("n0"))).status_code == 201
    deadline = time.monotonic() + 20.0
    bound_to = None
    while bound_to is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        bound_to = (await client.get("/api/v1/namespaces/default/pods/p")).json()["spec"].get("nodeName")
    assert bound_to == "n0"
