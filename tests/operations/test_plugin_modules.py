"""``KSS_PLUGIN_MODULES`` in ``kss serve``: users' plugins enabled by a configuration PUT at runtime, their verdicts
recorded; the modules re-imported on each PUT (an edit is picked up, a broken file refused)."""

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
from kss_sim.scheduler.plugins import out_of_tree
from tests.cluster.factories import node, pod
from tests.plugin_sources import config_enabling, unique_module_name, write_distribution, write_plugin_module

URL = "/simulator/v1/schedulerconfiguration"


pytestmark = pytest.mark.usefixtures("fresh_plugin_registry")


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A plugin module in the current directory, named by KSS_PLUGIN_MODULES."""
    name = unique_module_name()
    write_plugin_module(tmp_path, name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KSS_PLUGIN_MODULES", name)
    return name


@pytest.fixture
async def app(request: pytest.FixtureRequest, tmp_path: Path, module: str) -> AsyncIterator[FastAPI]:
    """The app with its scheduler in a thread, or (parametrized ``True``) in a process of its own, which must import
    the edited files too."""
    in_process = bool(getattr(request, "param", False))
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=7, scheduler_process=in_process)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def _schedule(app: FastAPI, client: httpx.AsyncClient, name: str) -> dict[str, Any]:
    """Create pod ``name``, wait for the scheduler, and answer its latest recorded attempt."""
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod(name, cpu="100m"))).status_code == 201
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)
    app.state.results.flush()
    attempts = (await client.get(f"/simulator/v1/namespaces/default/pods/{name}/results")).json()["attempts"]
    latest: dict[str, Any] = attempts[0]
    return latest


@pytest.mark.parametrize("app", [False, True], ids=["thread", "process"], indirect=True)
async def test_a_plugin_module_enabled_at_runtime_is_recorded_and_reloaded(
    app: FastAPI, client: httpx.AsyncClient, module: str, tmp_path: Path
) -> None:
    await client.post("/api/v1/nodes", json=node("n0", labels={"kss.test/reject": "yes", "kss.test/fast": "yes"}))
    await client.post("/api/v1/nodes", json=node("n1", labels={"kss.test/fast": "yes"}))
    await client.post("/api/v1/nodes", json=node("n2"))
    config = config_enabling(filters=["RejectLabelled"], scores=["PreferFast"])
    r = await client.put(URL, json=config)
    assert r.status_code == 200, r.text
    attempt = await _schedule(app, client, "first")
    assert attempt["rejections"] == {"RejectLabelled": {"node(s) labelled reject": 1}}
    assert attempt["boundTo"] == "n1"

    # The file edited (same size, same second): the next PUT picks it up.
    write_plugin_module(tmp_path, module, reason="node(s) LABELLED REJECT")
    assert (await client.put(URL, json=config)).status_code == 200
    attempt = await _schedule(app, client, "second")
    assert attempt["rejections"] == {"RejectLabelled": {"node(s) LABELLED REJECT": 1}}

    # A file that no longer imports: refused, the running configuration and plugins kept.
    (tmp_path / f"{module}.py").write_text("def broken(:\n")
    r = await client.put(URL, json=config_enabling(filters=[]))
    assert r.status_code == 400
    assert f"plugin module '{module}' failed to reload: SyntaxError" in r.json()["message"]
    assert (await client.get(URL)).json() == config
    attempt = await _schedule(app, client, "third")
    assert attempt["rejections"] == {"RejectLabelled": {"node(s) LABELLED REJECT": 1}}


async def test_an_unknown_plugin_or_a_broken_entry_point_is_refused_on_its_field(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    write_distribution(site, unique_module_name("kss_ep"))
    monkeypatch.syspath_prepend(str(site))
    before = (await client.get(URL)).json()
    r = await client.put(URL, json=config_enabling(filters=["RejectLabelled", "NoSuchPlugin"]))
    assert r.status_code == 422
    (cause,) = r.json()["details"]["causes"]
    assert cause["field"] == "profiles[0].plugins.filter.enabled[1].name"
    assert "plugin does not exist" in cause["message"]
    r = await client.put(URL, json=config_enabling(filters=["OnlyFast"], scores=("BrokenPlugin",)))
    assert r.status_code == 422
    (cause,) = r.json()["details"]["causes"]
    assert cause["field"] == "profiles[0].plugins.score.enabled[0].name", cause
    assert "package kss-test-plugins 1.0" in cause["message"]
    assert "RuntimeError: the broken plugin cannot start" in cause["message"]
    assert (await client.get(URL)).json() == before
    assert (await client.put(URL, json=config_enabling(filters=["OnlyFast"]))).status_code == 200


def test_a_module_that_fails_to_import_stops_create_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kss_bad_plugins.py").write_text("raise ValueError('no')\n")
    with pytest.raises(out_of_tree.PluginLoadError, match="plugin module 'kss_bad_plugins' failed to load: ValueError"):
        create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", plugin_modules=["kss_bad_plugins"]))
