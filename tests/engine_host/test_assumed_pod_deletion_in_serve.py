"""A pod kss serve assumed (held in Permit here) whose deletion a finalizer holds: kube-scheduler's
handleAssumedPodDeletion rejects its wait and frees its node at once (an AssignedPodDelete to the pods it kept out),
in both hosts, rather than when the wait times out."""

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
from tests.engine_host.test_permit_wait_in_serve import PLUGIN_MODULE, URL, _config

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(params=[False, True], ids=["thread", "process"])
async def app(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        seed=3,
        plugin_modules=[PLUGIN_MODULE],
        scheduler_process=request.param,
        controllers=False,
        kubelet=False,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def _node_of(client: httpx.AsyncClient, name: str) -> str | None:
    value: str | None = (await client.get(f"{PODS}/{name}")).json()["spec"].get("nodeName")
    return value


async def test_a_waiting_pod_marked_for_deletion_frees_its_node_at_once(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    assert (await client.post("/api/v1/nodes", json=node("n1", cpu="1"))).status_code == 201
    # A quorum never reached and a wait far longer than the test: only the deletion can end it.
    assert (await client.put(URL, json=_config(quorum=2, timeout=600))).status_code == 200
    held = pod("held", cpu="600m", labels={"team": "red"})
    held["metadata"]["finalizers"] = ["example.com/keep"]
    assert (await client.post(PODS, json=held)).status_code == 201
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)
    assert (await client.post(PODS, json=pod("loner", cpu="600m"))).status_code == 201
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)
    assert await _node_of(client, "loner") is None, "the held pod's node is reserved"

    assert (await client.delete(f"{PODS}/held")).status_code == 200  # the finalizer keeps it, being deleted

    deadline = time.monotonic() + 20.0
    while await _node_of(client, "loner") is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert await _node_of(client, "loner") == "n1"
    assert await _node_of(client, "held") is None
