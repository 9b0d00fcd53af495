"""v1.35's gang scheduling in ``kss serve`` behind GenericWorkload and GangScheduling: a Workload's gang is held
before the queue until its Workload and minCount pods exist, then reserved and bound all together."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod

GATES = {"GenericWorkload": True, "GangScheduling": True}


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        kube_version="1.35",  # v1.35's Workload (scheduling.k8s.io/v1alpha1, pods' spec.workloadRef)
        feature_gates=GATES,
        runtime_config="scheduling.k8s.io/v1alpha1=true",  # the Workload API is alpha: off by default
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


def _member(name: str) -> dict[str, Any]:
    body = pod(name, cpu="500m")
    body["spec"]["workloadRef"] = {"name": "train", "podGroup": "workers"}
    return body


WORKLOAD = {
    "apiVersion": "scheduling.k8s.io/v1alpha1",
    "kind": "Workload",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 3}}}]},
}


async def _settle(app: FastAPI) -> None:
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)


async def _nodes_of(client: httpx.AsyncClient, names: list[str]) -> list[str | None]:
    out = []
    for name in names:
        got = (await client.get(f"/api/v1/namespaces/default/pods/{name}")).json()
        out.append(got["spec"].get("nodeName"))
    return out


async def test_a_workload_gang_is_held_then_bound_together(app: FastAPI, client: httpx.AsyncClient) -> None:
    for i in range(3):
        assert (await client.post("/api/v1/nodes", json=node(f"n{i}", cpu="1"))).status_code == 201
    defaulted = (await client.get("/simulator/v1/schedulerconfiguration?defaulted=true")).json()
    multi = [p["name"] for p in defaulted["profiles"][0]["plugins"]["multiPoint"]["enabled"]]
    assert multi[-1] == "GangScheduling"
    # Two members before their Workload exists: held before the queue (gated), not tried.
    for name in ("w0", "w1"):
        assert (await client.post("/api/v1/namespaces/default/pods", json=_member(name))).status_code == 201
    await _settle(app)
    assert app.state.scheduler.queue.pending_counts()["gated"] == 2
    assert await _nodes_of(client, ["w0", "w1"]) == [None, None]
    # The Workload appears: still gated, two of three pods.
    assert (
        await client.post("/apis/scheduling.k8s.io/v1alpha1/namespaces/default/workloads", json=WORKLOAD)
    ).status_code == 201
    await _settle(app)
    assert app.state.scheduler.queue.pending_counts()["gated"] == 2
    # The third member: the quorum exists, all three go through the cycle and are bound together.
    assert (await client.post("/api/v1/namespaces/default/pods", json=_member("w2"))).status_code == 201
    deadline = asyncio.get_running_loop().time() + 20
    while None in await _nodes_of(client, ["w0", "w1", "w2"]):
        assert asyncio.get_running_loop().time() < deadline, app.state.scheduler.queue.snapshot()
        await asyncio.sleep(0.05)
    placed = await _nodes_of(client, ["w0", "w1", "w2"])
    assert len(set(placed)) == 3
    app.state.results.flush()
    waited = []
    for name in ("w0", "w1", "w2"):
        attempts = (await client.get(f"/simulator/v1/namespaces/default/pods/{name}/results")).json()["attempts"]
        detail = (
            await client.get(f"/simulator/v1/namespaces/default/pods/{name}/results/{attempts[0]['attempt']}")
        ).json()
        waited.append((detail.get("permitWait") or {}).get("outcome"))
    assert sorted(waited, key=str) == [None, "allowed", "allowed"]  # the third completed the quorum


async def test_without_the_gates_workload_refs_are_dropped_and_pods_schedule_alone(
    tmp_path: Path,
) -> None:
    application = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}"))
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as client:
            await client.post("/api/v1/nodes", json=node("n0", cpu="1"))
            created = (await client.post("/api/v1/namespaces/default/pods", json=_member("solo"))).json()
            assert "workloadRef" not in created["spec"]
            r = await client.post("/apis/scheduling.k8s.io/v1alpha1/namespaces/default/workloads", json=WORKLOAD)
            assert r.status_code == 404
            assert await asyncio.to_thread(application.state.scheduler.wait_idle, 20.0)
            got = (await client.get("/api/v1/namespaces/default/pods/solo")).json()
            assert got["spec"].get("nodeName") == "n0"
