"""The scheduler yields to the API: ``api_busy`` is true exactly while resource requests (watches aside) are being
answered, and the loop pauses after a cycle only then, still scheduling every pod.

The thread host's only (``KSS_SCHEDULER_PROCESS=false``): the loop shares the API's GIL there and so yields it; in a
process of its own the scheduler has no ``api_busy`` and nothing to yield."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.cluster.storage import repository
from kss_sim.config import Settings
from kss_sim.engine_host import scheduler_thread
from kss_sim.main import create_app
from tests.cluster.factories import node, pod
from tests.operations.conftest import SEED


@pytest.fixture
async def scheduling_app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """The application with the scheduler in a thread of the API process (the host that yields to the API)."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=SEED, scheduler_process=False)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_api_busy_counts_requests_being_answered_but_not_watches(
    scheduling_app: FastAPI, sclient: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheduler = scheduling_app.state.scheduler
    assert scheduler.api_busy is not None and not scheduler.api_busy()
    entered, release = threading.Event(), threading.Event()
    original = repository.write_changes

    def hang(conn: Any, changes: Iterable[repository.Change], resource_version: int) -> None:
        changes = list(changes)
        if any(c.row.name == "slow" for c in changes):
            entered.set()
            release.wait(10)
        original(conn, changes, resource_version)

    monkeypatch.setattr(repository, "write_changes", hang)
    watching = asyncio.create_task(sclient.get("/api/v1/nodes", params={"watch": "true", "timeoutSeconds": "1"}))
    await asyncio.sleep(0.2)
    assert not scheduler.api_busy(), "an open watch is not API load"
    creating = asyncio.create_task(sclient.post("/api/v1/nodes", json=node("slow")))
    assert await asyncio.to_thread(entered.wait, 10)
    assert scheduler.api_busy(), "a create waiting for its commit is"
    release.set()
    assert (await creating).status_code == 201
    assert not scheduler.api_busy()
    await watching


async def test_the_loop_pauses_after_cycles_only_while_the_api_is_busy(
    scheduling_app: FastAPI, sclient: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheduler = scheduling_app.state.scheduler
    marker = 0.00123  # a pause of this length is the loop's yield (floor and cap alike, whatever a cycle takes)
    monkeypatch.setattr(scheduler_thread, "API_YIELD_SECONDS", marker)
    monkeypatch.setattr(scheduler_thread, "API_YIELD_MAX_SECONDS", marker)
    pauses: list[float] = []
    real_sleep = scheduler_thread.time.sleep

    def sleep(seconds: float) -> None:
        if seconds == marker:
            pauses.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(scheduler_thread.time, "sleep", sleep)
    busy = [False]
    asked: list[bool] = []

    def api_busy() -> bool:
        asked.append(busy[0])
        return busy[0]

    scheduler.api_busy = api_busy
    await sclient.post("/api/v1/nodes", json=node("n1", cpu="8"))
    for i in range(3):
        await sclient.post("/api/v1/namespaces/default/pods", json=pod(f"quiet-{i}", cpu="100m"))
    assert await asyncio.to_thread(scheduler.wait_idle, 20.0)
    assert len(asked) >= 3 and pauses == [], "asked after each cycle; the API was idle: no pause"
    busy[0] = True
    for i in range(3):
        await sclient.post("/api/v1/namespaces/default/pods", json=pod(f"busy-{i}", cpu="100m"))
    assert await asyncio.to_thread(scheduler.wait_idle, 20.0)
    assert len(pauses) >= 3, "one pause after each cycle while the API is busy"
    listed = (await sclient.get("/api/v1/namespaces/default/pods")).json()["items"]
    assert len(listed) == 6 and all(p["spec"].get("nodeName") == "n1" for p in listed), "every pod still scheduled"


def test_the_pause_lasts_as_long_as_the_cycle_worked_within_its_floor_and_cap() -> None:
    floor, cap = scheduler_thread.API_YIELD_SECONDS, scheduler_thread.API_YIELD_MAX_SECONDS
    assert floor < 0.005 < cap
    assert scheduler_thread.api_yield_seconds(0.0) == floor, "a cheap cycle: the fixed pause"
    assert scheduler_thread.api_yield_seconds(0.005) == 0.005, "a 5 ms cycle (5,000 nodes): as long again for the API"
    assert scheduler_thread.api_yield_seconds(2.0) == cap, (
        "a long cycle (preemption) does not stall the scheduler for as long"
    )
