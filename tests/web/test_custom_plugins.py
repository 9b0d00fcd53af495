"""Users' plugins are marked as such wherever the pages name plugins: the attempt's matrices and the Scheduler
page's plugins in effect; kube-scheduler's own plugins are not."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.web.conftest import node, pod

pytestmark = pytest.mark.usefixtures("fresh_plugin_registry")

MARK = re.compile(r'<span class="oot"[^>]*>custom</span>')
PLUGIN_MODULE = "tests.web.custom_plugins"


@pytest.fixture
async def sched_app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """The application with its scheduler running and NotOnTainted and LikesB loaded as users' plugins are
    (KSS_PLUGIN_MODULES), so the scheduler's own process has them too."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_enabled=True, plugin_modules=[PLUGIN_MODULE]
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


def marked(html: str, plugin: str) -> bool:
    """The custom mark inside an element that names ``plugin``: a matrix header, a bar's caption, a plugin in effect."""
    p, mark = re.escape(plugin), MARK.pattern
    return any(
        re.search(pattern, html, re.S)
        for pattern in (
            rf'<th class="plugin" title="{p}[ "][^>]*>(?:(?!</th>).)*{mark}',
            rf"<figcaption>{p} (?:(?!</figcaption>).)*{mark}",
            rf'<span class="plugin">{p}{mark}',
        )
    )


async def test_users_plugins_are_marked_custom_and_in_tree_ones_are_not(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "filter": {"enabled": [{"name": "NotOnTainted"}]},
                    "score": {"enabled": [{"name": "LikesB", "weight": 3}]},
                },
            }
        ],
    }
    assert (await sched_client.put("/simulator/v1/schedulerconfiguration", json=config)).status_code == 200
    for name, labels in (("a", {"kss.test/tainted": "yes"}), ("b", {}), ("c", {})):
        assert (await sched_client.post("/api/v1/nodes", json=node(name, labels=labels))).status_code == 201
    assert (await sched_client.post("/api/v1/namespaces/default/pods", json=pod("p"))).status_code == 201
    assert await asyncio.to_thread(sched_app.state.scheduler.wait_idle, 20.0)
    sched_app.state.results.flush()

    page = (await sched_client.get("/ui/pods/default/p")).text
    assert "node(s) marked tainted" in page
    assert marked(page, "NotOnTainted") and marked(page, "LikesB")
    assert not marked(page, "NodeResourcesFit") and not marked(page, "TaintToleration")
    # Filter header, score header and the plugin's bar caption: one mark per place a custom plugin is named there.
    assert len(MARK.findall(page)) == 3

    scheduler = (await sched_client.get("/ui/scheduler")).text
    assert marked(scheduler, "NotOnTainted") and marked(scheduler, "LikesB")
    assert not marked(scheduler, "NodeResourcesFit") and not marked(scheduler, "PrioritySort")
