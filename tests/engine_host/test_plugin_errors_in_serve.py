"""A user's plugin that raises or returns the wrong type, in ``kss serve``: the attempt is recorded as an error
(PodScheduled=False reason SchedulerError, a FailedScheduling Event), the server keeps answering, and the pod goes
to backoffQ and is bound once the plugin behaves again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod
from tests.plugin_sources import config_enabling, unique_module_name

URL = "/simulator/v1/schedulerconfiguration"

# Two Filter plugins that misbehave while the flag file exists: one raises, one returns a string.
MODULE = """\
from pathlib import Path

from kss.framework import FilterPlugin, success

FLAG = Path({flag!r})


class Explodes(FilterPlugin):
    name = "Explodes"

    def filter(self, state, pod, node_info):
        if FLAG.exists():
            raise RuntimeError("boom")
        return success()


class ReturnsString(FilterPlugin):
    name = "ReturnsString"

    def filter(self, state, pod, node_info):
        if FLAG.exists():
            return "ok"
        return success()


PLUGINS = [Explodes, ReturnsString]
"""

pytestmark = pytest.mark.usefixtures("fresh_plugin_registry")


@pytest.fixture
def flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The flag file (present: the plugins misbehave) and the module naming it, named by KSS_PLUGIN_MODULES."""
    path = tmp_path / "misbehave"
    path.touch()
    name = unique_module_name()
    (tmp_path / f"{name}.py").write_text(MODULE.format(flag=str(path)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KSS_PLUGIN_MODULES", name)
    return path


@pytest.fixture
async def app(tmp_path: Path, flag: Path) -> AsyncIterator[FastAPI]:
    application = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=7))
    async with application.router.lifespan_context(application):
        yield application


async def _attempts(app: FastAPI, client: httpx.AsyncClient, name: str) -> list[dict[str, Any]]:
    """The recorded attempts of pod ``name``, latest first."""
    app.state.results.flush()
    r = await client.get(f"/simulator/v1/namespaces/default/pods/{name}/results")
    assert r.status_code == 200, r.text
    attempts: list[dict[str, Any]] = r.json()["attempts"]
    return attempts


async def _fail_once(app: FastAPI, client: httpx.AsyncClient, plugin: str, name: str) -> dict[str, Any]:
    """Enable ``plugin``, create pod ``name`` and answer its (error) attempt, after checking the pod's status,
    its Event, and that the server still answers."""
    assert (await client.post("/api/v1/nodes", json=node("n0"))).status_code == 201
    r = await client.put(URL, json=config_enabling(filters=[plugin]))
    assert r.status_code == 200, r.text
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod(name, cpu="100m"))).status_code == 201
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)

    (attempt,) = await _attempts(app, client, name)
    assert attempt["result"] == "error", attempt
    assert attempt["boundTo"] is None
    message: str = attempt["message"]
    assert message.startswith(f'running "{plugin}" filter plugin: '), message

    current = (await client.get(f"/api/v1/namespaces/default/pods/{name}")).json()
    assert "nodeName" not in current["spec"]
    (condition,) = [c for c in current["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (condition["status"], condition["reason"], condition["message"]) == ("False", "SchedulerError", message)
    events = (await client.get("/api/v1/namespaces/default/events")).json()["items"]
    assert [(e["type"], e["reason"], e["message"]) for e in events if e["involvedObject"]["name"] == name] == [
        ("Warning", "FailedScheduling", message)
    ]

    # An error sends the pod to backoffQ (not the unschedulable pool), and the server keeps answering.
    assert app.state.scheduler.queue.pending_counts()["backoff"] == 1
    assert (await client.get("/healthz")).status_code == 200
    r = await client.get("/api/v1/namespaces/default/pods")
    assert r.status_code == 200
    assert [p["metadata"]["name"] for p in r.json()["items"]] == [name]
    return attempt


async def test_a_filter_that_raises_is_an_error_attempt_and_the_pod_is_retried_once_it_behaves(
    app: FastAPI, client: httpx.AsyncClient, flag: Path
) -> None:
    error = await _fail_once(app, client, "Explodes", "p0")
    assert error["message"] == 'running "Explodes" filter plugin: RuntimeError: boom'

    # The plugin behaves again: the pod leaves backoffQ (1 s, flushed by the engine's loop every second) and binds.
    flag.unlink()
    deadline = time.monotonic() + 20.0
    bound_to = None
    while bound_to is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        bound_to = (await client.get("/api/v1/namespaces/default/pods/p0")).json()["spec"].get("nodeName")
    assert bound_to == "n0", "the pod was not retried within 20 s of the plugin behaving"

    attempts = await _attempts(app, client, "p0")
    assert attempts[0]["result"] == "scheduled", attempts[0]
    assert attempts[0]["boundTo"] == "n0"
    assert attempts[-1] == error
    assert all(a["result"] == "error" for a in attempts[1:]), attempts
    current = (await client.get("/api/v1/namespaces/default/pods/p0")).json()
    (condition,) = [c for c in current["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert condition["status"] == "True"
    events = (await client.get("/api/v1/namespaces/default/events")).json()["items"]
    assert [e["reason"] for e in events if e["involvedObject"]["name"] == "p0"][-1] == "Scheduled"


async def test_a_filter_that_returns_a_string_is_an_error_attempt_saying_what_it_returned(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    error = await _fail_once(app, client, "ReturnsString", "p1")
    assert error["message"] == "running \"ReturnsString\" filter plugin: filter returned str 'ok', want a Status"
