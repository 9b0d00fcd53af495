"""/metrics in Prometheus format with kube-scheduler's names, fed by real scheduling; probes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod
from tests.operations.conftest import SEED


@pytest.fixture
async def scheduling_app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """The scheduling application with every cycle's plugin runs timed (kube-scheduler, and kss by default, time
    one cycle in ten), so that the few cycles below each show in the plugin metric."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=SEED, plugin_metrics_sample_percent=100)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_scheduling_and_request_metrics(scheduling_app: FastAPI, sclient: httpx.AsyncClient) -> None:
    await sclient.post("/api/v1/nodes", json=node("n1", cpu="2"))
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "urgent"}, "value": 1000}
    await sclient.post("/apis/scheduling.k8s.io/v1/priorityclasses", json=pc)
    await sclient.post("/api/v1/namespaces/default/pods", json=pod("fits", cpu="2"))
    await sclient.post("/api/v1/namespaces/default/pods", json=pod("too-big", cpu="64"))
    assert await asyncio.to_thread(scheduling_app.state.scheduler.wait_idle, 20.0)
    # A higher-priority pod preempts "fits": one victim.
    await sclient.post("/api/v1/namespaces/default/pods", json=pod("urgent", cpu="2", priorityClassName="urgent"))
    assert await asyncio.to_thread(scheduling_app.state.scheduler.wait_idle, 20.0)

    r = await sclient.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    samples = _samples(r.text)
    profile = ("profile", "default-scheduler")
    scheduled = samples[("scheduler_schedule_attempts_total", frozenset({("result", "scheduled"), profile}))]
    unschedulable = samples[("scheduler_schedule_attempts_total", frozenset({("result", "unschedulable"), profile}))]
    assert scheduled >= 1 and unschedulable >= 2
    key = ("scheduler_scheduling_attempt_duration_seconds_count", frozenset({("result", "scheduled"), profile}))
    assert samples[key] == scheduled
    pending = {
        q: samples[("scheduler_pending_pods", frozenset({("queue", q)}))]
        for q in ("active", "backoff", "unschedulable", "gated")
    }
    assert pending["backoff"] + pending["unschedulable"] >= 1  # "too-big" waits (moved to backoff by the preemption)
    assert samples[("scheduler_preemption_victims_count", frozenset())] >= 1
    assert samples[("scheduler_preemption_victims_sum", frozenset())] >= 1
    fit = frozenset({("plugin", "NodeResourcesFit"), ("extension_point", "PreFilter"), ("status", "Success")})
    assert samples[("scheduler_plugin_execution_duration_seconds_count", fit)] >= 3
    created = frozenset({("verb", "POST"), ("resource", "pods"), ("code", "201")})
    assert samples[("apiserver_request_total", created)] == 3
    assert ("apiserver_request_duration_seconds_count", frozenset({("verb", "POST"), ("resource", "pods")})) in samples


async def test_health_and_readiness_probes(client: httpx.AsyncClient) -> None:
    for path in ("/healthz", "/readyz", "/livez"):
        r = await client.get(path)
        assert r.status_code == 200 and r.text == "ok"
