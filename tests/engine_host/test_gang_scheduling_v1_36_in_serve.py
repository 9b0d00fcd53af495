"""v1.36's GangScheduling in ``kss serve --kube-version 1.36`` with GenericWorkload and GangScheduling: pods join a
standalone PodGroup (scheduling.k8s.io/v1alpha2) by ``spec.schedulingGroup``; a gang of minCount 3 is held before
the queue until its PodGroup and three pods exist, then bound all together; one that cannot fit binds none.

GangScheduling's rules (PreEnqueue, Permit) run inside v1.36's PodGroup scheduling cycle, which tries the queued
members together: a gang that cannot fit leaves no member waiting in Permit, each says why at once and so does its
PodGroup's PodGroupScheduled condition."""

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
from tests.cluster.factories import node, pod

GATES = {"GenericWorkload": True, "GangScheduling": True}
V1ALPHA2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        kube_version="1.36",
        feature_gates=GATES,
        runtime_config="scheduling.k8s.io/v1alpha2=true",  # the Workload API is alpha: off by default
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


def _member(name: str, *, cpu: str = "500m", group: str = "train-workers") -> dict[str, Any]:
    body = pod(name, cpu=cpu)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


def _pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


async def _settle(app: FastAPI) -> None:
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)


async def _nodes_of(client: httpx.AsyncClient, names: list[str]) -> list[str | None]:
    out = []
    for name in names:
        got = (await client.get(f"/api/v1/namespaces/default/pods/{name}")).json()
        out.append(got["spec"].get("nodeName"))
    return out


async def _create(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> None:
    answer = await client.post(path, json=body)
    assert answer.status_code == 201, answer.text


async def test_a_pod_group_gang_is_held_then_bound_together(app: FastAPI, client: httpx.AsyncClient) -> None:
    for i in range(3):
        await _create(client, "/api/v1/nodes", node(f"n{i}", cpu="1"))
    # Two members before their PodGroup exists: held before the queue (gated), not tried.
    for name in ("w0", "w1"):
        await _create(client, "/api/v1/namespaces/default/pods", _member(name))
    await _settle(app)
    assert app.state.scheduler.queue.pending_counts()["gated"] == 2
    # The PodGroup appears: still gated, two of three pods.
    await _create(client, f"{V1ALPHA2}/podgroups", _pod_group("train-workers", 3))
    await _settle(app)
    assert app.state.scheduler.queue.pending_counts()["gated"] == 2
    assert await _nodes_of(client, ["w0", "w1"]) == [None, None]
    # The third member: the quorum exists, all three are bound together.
    await _create(client, "/api/v1/namespaces/default/pods", _member("w2"))
    deadline = asyncio.get_running_loop().time() + 20
    while None in await _nodes_of(client, ["w0", "w1", "w2"]):
        assert asyncio.get_running_loop().time() < deadline, app.state.scheduler.queue.snapshot()
        await asyncio.sleep(0.05)
    assert len(set(await _nodes_of(client, ["w0", "w1", "w2"]))) == 3


async def test_a_gang_that_cannot_fit_binds_none(app: FastAPI, client: httpx.AsyncClient) -> None:
    for i in range(2):
        await _create(client, "/api/v1/nodes", node(f"n{i}", cpu="1"))
    await _create(client, f"{V1ALPHA2}/podgroups", _pod_group("big", 3))
    for name in ("b0", "b1", "b2"):
        await _create(client, "/api/v1/namespaces/default/pods", _member(name, cpu="900m", group="big"))
    await _settle(app)
    # Two fit, the third fits nowhere: the group's cycle binds none and holds none in Permit.
    assert await _nodes_of(client, ["b0", "b1", "b2"]) == [None, None, None]
    assert not list(app.state.scheduler.waiting_pods)
    messages = {}
    for name in ("b0", "b1", "b2"):
        got = (await client.get(f"/api/v1/namespaces/default/pods/{name}")).json()
        (condition,) = [c for c in got["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert condition["reason"] == "Unschedulable"
        messages[name] = condition["message"]
    waiting_words = "pod group is unschedulable, waiting for minCount"
    group_failures = [n for n, m in messages.items() if m.startswith(waiting_words)]
    assert len(group_failures) == 2, messages
    (unfit,) = set(messages) - set(group_failures)
    assert messages[unfit].startswith("0/2 nodes are available: 2 Insufficient cpu."), messages
    group = (await client.get(f"{V1ALPHA2}/podgroups/big")).json()
    (scheduled,) = group["status"]["conditions"]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "PodGroupScheduled",
        "False",
        "Unschedulable",
        "pod group is unschedulable",
    )
