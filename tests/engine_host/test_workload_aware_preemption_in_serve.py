"""v1.36's workload-aware preemption in ``kss serve --kube-version 1.36`` (GenericWorkload, GangScheduling,
WorkloadAwarePreemption): a gang that fits only by evicting lower-priority pods preempts as one PodGroup; its victims
are marked and deleted in the PodGroup's name, the group waits for them, then binds."""

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

GATES = {"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": True}
V1ALPHA2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        kube_version="1.36",
        feature_gates=GATES,
        runtime_config="scheduling.k8s.io/v1alpha2=true",
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def _create(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = await client.post(path, json=body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


async def _until(check: Any, timeout: float = 20.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := await check()):
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    return value


async def test_a_gang_preempts_as_one_and_binds_once_its_victims_are_gone(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    for name, value in (("low", 10), ("high", 1000)):
        pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        await _create(client, "/apis/scheduling.k8s.io/v1/priorityclasses", pc)
    for i in range(2):
        await _create(client, "/api/v1/nodes", node(f"n{i}", cpu="1"))
    for i in range(2):
        body = pod(f"low-{i}", cpu="800m", priorityClassName="low", terminationGracePeriodSeconds=1)
        await _create(client, PODS, body)

    async def low_bound() -> bool:
        got = [(await client.get(f"{PODS}/low-{i}")).json()["spec"].get("nodeName") for i in range(2)]
        return None not in got

    await _until(low_bound)
    group = await _create(
        client,
        f"{V1ALPHA2}/podgroups",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "pair", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priorityClassName": "high"},
        },
    )
    assert group["spec"]["priority"] == 1000  # from its class, by the Priority admission plugin
    for i in range(2):
        member = pod(f"pair-{i}", cpu="800m", priorityClassName="high")
        member["spec"]["schedulingGroup"] = {"podGroupName": "pair"}
        await _create(client, PODS, member)

    async def victim() -> dict[str, Any] | None:
        got: dict[str, Any] = (await client.get(f"{PODS}/low-0")).json()
        return got if got.get("metadata", {}).get("deletionTimestamp") else None

    marked = await _until(victim)
    (disruption,) = [c for c in marked["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (disruption["reason"], disruption["message"]) == (
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority podgroup",
    )

    async def preempted() -> dict[str, str]:
        # The second victim's Event follows the first victim's marking: waited for, not read at once.
        events = (await client.get("/api/v1/namespaces/default/events")).json()["items"]
        got = {e["involvedObject"]["name"]: e["message"] for e in events if e["reason"] == "Preempted"}
        return got if len(got) >= 2 else {}

    uid = group["metadata"]["uid"]
    assert await _until(preempted) == {f"low-{i}": f"Preempted by podgroup {uid} on node cluster" for i in range(2)}

    async def members_bound() -> bool:
        got = [(await client.get(f"{PODS}/pair-{i}")).json()["spec"].get("nodeName") for i in range(2)]
        return None not in got

    # The victims end after their 1 s grace period through the kubelet, then the group binds: slower under load.
    await _until(members_bound, timeout=60.0)
    pg = (await client.get(f"{V1ALPHA2}/podgroups/pair")).json()
    (scheduled,) = pg["status"]["conditions"]
    assert (scheduled["type"], scheduled["status"]) == ("PodGroupScheduled", "True")
