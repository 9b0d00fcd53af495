"""The scheduler in its own process keeps no counter per pod: the API process numbers the attempts' rows where the
database is, with the results service's bounded counters (a pod's count read back from the database after it left
them), so the numbers stay exact after eviction and the child's memory does not grow with the pods ever scheduled."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from kss_sim.results import attempts as attempts_module
from tests.cluster.factories import node, pod

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FastAPI]:
    monkeypatch.setattr(attempts_module, "ATTEMPT_COUNTS_KEPT", 2)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_process=True, controllers=False, kubelet=False
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def _bound(client: httpx.AsyncClient, name: str) -> None:
    for _ in range(400):
        got = await client.get(f"{PODS}/{name}")
        if got.status_code == 200 and got.json()["spec"].get("nodeName"):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} was not bound")


async def _numbers(app: FastAPI, client: httpx.AsyncClient, name: str) -> list[int]:
    await asyncio.to_thread(app.state.scheduler.flush_rows)
    attempts = (await client.get(f"/simulator/v1/namespaces/default/pods/{name}/results")).json()["attempts"]
    return [a["attempt"] for a in attempts]


async def _schedule(client: httpx.AsyncClient, name: str) -> None:
    assert (await client.post(PODS, json=pod(name, cpu="100m"))).status_code == 201
    await _bound(client, name)


async def _delete(client: httpx.AsyncClient, name: str) -> None:
    assert (await client.delete(f"{PODS}/{name}", params={"gracePeriodSeconds": "0"})).status_code == 200


async def test_a_pod_scheduled_again_after_its_counter_was_evicted_continues_its_numbers(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    assert type(app.state.scheduler).__name__ == "SchedulerProcess"
    assert (await client.post("/api/v1/nodes", json=node("n0", cpu="8"))).status_code == 201
    await _schedule(client, "a")
    await _delete(client, "a")
    # Two other pods scheduled: a's counter is evicted (two kept).
    for name in ("b", "c"):
        await _schedule(client, name)
    await _schedule(client, "a")
    assert await _numbers(app, client, "a") == [2, 1]
    # Deleted and created again at once, its last rows maybe still on their way from the child: still exact.
    for _ in range(2):
        await _delete(client, "a")
        await _schedule(client, "a")
    assert await _numbers(app, client, "a") == [4, 3, 2, 1]
    assert await _numbers(app, client, "b") == [1]
    # Cleared, the numbers start again at 1 (reset of the results).
    await asyncio.to_thread(app.state.results.clear_all)
    await _delete(client, "b")
    await _schedule(client, "b")
    assert await _numbers(app, client, "b") == [1]
