"""Reset goes back to the start state (the objects at the last start) or, asked to, to an empty cluster."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod
from tests.conftest import KSS, start_server


def _names(items: list[dict[str, Any]]) -> set[str]:
    return {i["metadata"]["name"] for i in items}


def _kss(server_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KSS), *args, "--server", server_url], capture_output=True, text=True, timeout=60)


async def test_reset_to_empty_leaves_only_the_built_in_objects_and_clears_results(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}"))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kss.test") as c,
    ):
        await c.post("/api/v1/nodes", json=node("n1"))
        await c.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})
        await c.post("/api/v1/namespaces/team/pods", json=pod("p", cpu="1", namespace="team"))
        namespaces_before = _names((await c.get("/api/v1/namespaces")).json()["items"])
        classes_before = _names((await c.get("/apis/scheduling.k8s.io/v1/priorityclasses")).json()["items"])
        assert app.state.scheduler.wait_idle(20.0)
        app.state.results.flush()
        assert app.state.results.count() >= 1

        r = await c.post("/simulator/v1/reset", params={"to": "empty"})
        assert r.status_code == 200, r.text
        assert r.json()["deleted"] >= 3
        assert (await c.get("/api/v1/nodes")).json()["items"] == []
        assert (await c.get("/api/v1/pods")).json()["items"] == []
        namespaces = _names((await c.get("/api/v1/namespaces")).json()["items"])
        assert namespaces == namespaces_before - {"team"}
        assert _names((await c.get("/apis/scheduling.k8s.io/v1/priorityclasses")).json()["items"]) == classes_before
        assert app.state.results.count() == 0


async def test_an_unknown_reset_target_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}"))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kss.test") as c,
    ):
        await c.post("/api/v1/nodes", json=node("n1"))
        r = await c.post("/simulator/v1/reset", params={"to": "yesterday"})
        assert r.status_code == 400
        assert r.json()["kind"] == "Status"
        assert _names((await c.get("/api/v1/nodes")).json()["items"]) == {"n1"}


def test_kss_reset_goes_back_to_the_last_start_and_kss_reset_empty_to_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kss.db'}"
    env = {"KSS_SCHEDULER_ENABLED": "false"}
    first = start_server(tmp_path, url, env=env)
    try:
        assert httpx.post(f"{first.url}/api/v1/nodes", json=node("before-restart")).status_code == 201
    finally:
        first.stop()
    restarted = start_server(tmp_path, url, env=env)
    try:
        assert httpx.post(f"{restarted.url}/api/v1/nodes", json=node("after-restart")).status_code == 201
        done = _kss(restarted.url, "reset")
        assert done.returncode == 0, done.stderr
        assert "reset to the start state:" in done.stderr
        # The start state is the cluster at the restart, not an empty one.
        assert _names(httpx.get(f"{restarted.url}/api/v1/nodes").json()["items"]) == {"before-restart"}
        done = _kss(restarted.url, "reset", "--empty")
        assert done.returncode == 0, done.stderr
        assert "to an empty cluster" in done.stderr
        assert httpx.get(f"{restarted.url}/api/v1/nodes").json()["items"] == []
    finally:
        restarted.stop()


async def test_a_reset_with_a_body_is_refused_and_changes_nothing(client: httpx.AsyncClient) -> None:
    # Reset takes its options from the query: a garbled request must not wipe the cluster.
    await client.post("/api/v1/nodes", json=node("n1"))
    r = await client.post("/simulator/v1/reset", content=b"{garbage")
    assert r.status_code == 400, r.text
    assert r.json()["kind"] == "Status" and r.json()["reason"] == "BadRequest"
    assert r.json()["message"].startswith(
        "POST /simulator/v1/reset takes no body (the options are query parameters): json parse error: "
    )
    r = await client.post("/simulator/v1/reset", json={"to": "empty"})
    assert r.status_code == 400 and r.json()["message"] == (
        "POST /simulator/v1/reset takes no body (the options are query parameters)"
    )
    assert _names((await client.get("/api/v1/nodes")).json()["items"]) == {"n1"}
    # No body, or an empty object, is a reset.
    r = await client.post("/simulator/v1/reset", params={"to": "empty"}, json={})
    assert r.status_code == 200, r.text
    assert (await client.get("/api/v1/nodes")).json()["items"] == []
