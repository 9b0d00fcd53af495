"""Bindings made through the API by another scheduler are recorded in-process: with kss's scheduler off and no shadow
(only the pending pods are kept, no cache), and beside kss's own scheduler for a pod of another schedulerName."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.web.conftest import node, pod

RESULTS = "/simulator/v1/namespaces/default/pods/{name}/results"


async def _client(tmp_path: Path, *, scheduler: bool) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_enabled=scheduler, kubelet=False)
    application: FastAPI = create_app(settings)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


async def _bind(client: httpx.AsyncClient, name: str, node_name: str, *, user_agent: str = "") -> None:
    """A Binding posted with ``user_agent`` (empty: the Binding names no manager, as no fieldManager is given)."""
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": node_name}}
    url = f"/api/v1/namespaces/default/pods/{name}/binding"
    r = await client.post(url, json=binding, headers={"User-Agent": user_agent})
    assert r.status_code == 201, r.text


async def _attempts(client: httpx.AsyncClient, name: str, timeout: float = 20.0) -> list[dict[str, Any]]:
    for _ in range(int(timeout / 0.05)):
        attempts: list[dict[str, Any]] = (await client.get(RESULTS.format(name=name))).json()["attempts"]
        if attempts:
            return attempts
        await asyncio.sleep(0.05)
    raise AssertionError(f"nothing recorded for {name}")


async def test_a_binding_is_recorded_with_the_scheduler_off_and_no_shadow(tmp_path: Path) -> None:
    async for client in _client(tmp_path, scheduler=False):
        assert (await client.post("/api/v1/nodes", json=node("n1"))).status_code == 201
        assert (await client.post("/api/v1/namespaces/default/pods", json=pod("web"))).status_code == 201
        await _bind(client, "web", "n1")
        [summary] = await _attempts(client, "web")
        assert summary["result"] == "scheduled" and summary["boundTo"] == "n1" and summary["boundBy"] == "external"
        # Neither the Binding's manager nor a Scheduled Event names a binder: the pod's schedulerName does.
        assert summary["scheduledBy"] == "default-scheduler"
        assert summary["shadowAgrees"] is None
        detail = (await client.get(RESULTS.format(name="web") + "/1")).json()
        assert detail["shadow"] is None and detail["external"]["warnings"] == []
        assert detail["matrix"]["rows"] == []  # no result annotations


async def test_beside_kss_scheduler_only_another_scheduler_pods_are_external(tmp_path: Path) -> None:
    async for client in _client(tmp_path, scheduler=True):
        assert (await client.post("/api/v1/nodes", json=node("n1"))).status_code == 201
        theirs = {**pod("theirs"), "spec": {**pod("theirs")["spec"], "schedulerName": "my-scheduler"}}
        assert (await client.post("/api/v1/namespaces/default/pods", json=theirs)).status_code == 201
        assert (await client.post("/api/v1/namespaces/default/pods", json=pod("ours"))).status_code == 201
        [ours] = await _attempts(client, "ours")
        assert ours["boundBy"] == "single-feasible" and ours["scheduledBy"] is None
        await _bind(client, "theirs", "n1", user_agent="gang-binder/v1.35.4 (linux/amd64) kubernetes/abc")
        [summary] = await _attempts(client, "theirs")
        # The binder is the Binding's manager: its client's User-Agent up to the first "/".
        assert summary["boundBy"] == "external" and summary["scheduledBy"] == "gang-binder"
        assert summary["profile"] == "my-scheduler"
