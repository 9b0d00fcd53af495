"""A user's plugin that loops, in a real ``kss serve``: within KSS_PLUGIN_TIMEOUT the UI names the plugin and the
pod, /metrics counts the timeout, the pod's attempt is an Error, and the other pods schedule (issue #35)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cluster.factories import node, pod
from tests.conftest import Server, eventually, start_server
from tests.plugin_sources import config_enabling, unique_module_name

# Loops for the pod named victim (a pure-Python loop, as a plugin with a bug would), behaves for every other pod.
MODULE = """\
from kss.framework import FilterPlugin, success


class Spins(FilterPlugin):
    name = "Spins"

    def filter(self, state, pod, node_info):
        n = 0
        while pod.name == "victim":
            n += 1
        return success()


PLUGINS = [Spins]
"""
TIMEOUT = 1.0


@pytest.fixture(params=["false", "true"], ids=["thread", "process"])
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """``kss serve`` with the scheduler in a thread, or in a process of its own (which reports across)."""
    module = unique_module_name()
    (tmp_path / f"{module}.py").write_text(MODULE)
    server = start_server(
        tmp_path,
        f"sqlite:///{tmp_path / 'kss.db'}",
        env={
            "KSS_PLUGIN_MODULES": module,
            "KSS_PLUGIN_TIMEOUT": str(TIMEOUT),
            "KSS_CONTROLLERS": "false",
            "KSS_SCHEDULER_PROCESS": request.param,
        },
    )
    try:
        yield server
    finally:
        server.stop()


def test_a_looping_plugin_is_named_in_the_ui_within_its_timeout_and_other_pods_schedule(serve: Server) -> None:
    api = httpx.Client(base_url=serve.url, timeout=10)
    assert api.post("/api/v1/nodes", json=node("n0")).status_code == 201
    r = api.put("/simulator/v1/schedulerconfiguration", json=config_enabling(filters=["Spins"]))
    assert r.status_code == 200, r.text
    assert api.post("/api/v1/namespaces/default/pods", json=pod("victim", cpu="100m")).status_code == 201
    started = time.monotonic()

    def banner() -> str:
        page = api.get("/ui/pods").text
        return page if 'id="plugin-timeouts"' in page else ""

    page = eventually(banner, timeout=TIMEOUT + 5, what="the banner naming the runaway plugin")
    assert time.monotonic() - started < TIMEOUT + 5
    assert "<code>Spins</code> at Filter" in page and "default/victim" in page

    # The scheduler carries on: pods created after the loop started are bound.
    for i in range(3):
        assert api.post("/api/v1/namespaces/default/pods", json=pod(f"other-{i}", cpu="100m")).status_code == 201

    def bound() -> bool:
        pods = api.get("/api/v1/namespaces/default/pods").json()["items"]
        return sum(1 for p in pods if p["metadata"]["name"].startswith("other-") and p["spec"].get("nodeName")) == 3

    eventually(bound, timeout=15, what="the other pods to be bound")

    victim = api.get("/api/v1/namespaces/default/pods/victim").json()
    assert "nodeName" not in victim["spec"]
    (condition,) = [c for c in victim["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert condition["reason"] == "SchedulerError"
    assert condition["message"].startswith(
        "running \"Spins\" filter plugin: plugin 'Spins' ran past its 1s timeout at Filter and was interrupted"
    ), condition["message"]
    metrics = api.get("/metrics").text
    line = next(x for x in metrics.splitlines() if x.startswith("kss_plugin_timeouts_total{"))
    assert 'plugin="Spins"' in line and 'extension_point="Filter"' in line and float(line.split()[-1]) >= 1
    assert "ran past its 1s timeout at Filter on pod default/victim" in serve.log.read_text()
