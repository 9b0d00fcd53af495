"""v1.36's topology-aware workload scheduling in ``kss serve --kube-version 1.36`` with GenericWorkload,
GangScheduling and TopologyAwareWorkloadScheduling: a PodGroup with ``schedulingConstraints.topology`` is placed
within one domain of the key (TopologyPlacementGenerator offers one placement per rack), the domain where more of
its pods fit wins (PodGroupPodsCount), and a gang no single domain can hold binds none ("0/2 placements are
available, ...")."""

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
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import Handle
from kss_sim.scheduler.profiles import build_framework, plugins_in_effect
from kss_sim.scheduler.runtime import Framework
from tests.cluster.factories import node, pod

GATES = {"GenericWorkload": True, "GangScheduling": True, "TopologyAwareWorkloadScheduling": True}
V1ALPHA2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"
RACK = "example.com/rack"


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


async def _create(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> None:
    answer = await client.post(path, json=body)
    assert answer.status_code == 201, answer.text


async def _racks(client: httpx.AsyncClient) -> None:
    """Rack a: two 1-CPU nodes; rack b: three; one node in no rack."""
    for name, rack in (("a0", "a"), ("a1", "a"), ("b0", "b"), ("b1", "b"), ("b2", "b"), ("loose", None)):
        await _create(client, "/api/v1/nodes", node(name, cpu="1", labels={RACK: rack} if rack else None))


async def _gang(client: httpx.AsyncClient, name: str, min_count: int, members: int) -> list[str]:
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "schedulingConstraints": {"topology": [{"key": RACK}]},
        },
    }
    await _create(client, f"{V1ALPHA2}/podgroups", group)
    names = [f"{name}-{i}" for i in range(members)]
    for member in names:
        body = pod(member, cpu="600m")
        body["spec"]["schedulingGroup"] = {"podGroupName": name}
        await _create(client, "/api/v1/namespaces/default/pods", body)
    return names


async def _nodes_of(client: httpx.AsyncClient, names: list[str]) -> list[str | None]:
    return [(await client.get(f"/api/v1/namespaces/default/pods/{n}")).json()["spec"].get("nodeName") for n in names]


async def _condition(client: httpx.AsyncClient, group: str) -> dict[str, Any]:
    got = (await client.get(f"{V1ALPHA2}/podgroups/{group}")).json()
    (condition,) = got["status"]["conditions"]
    return dict(condition)


async def _settle(app: FastAPI) -> None:
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)


def _framework(app: FastAPI) -> Framework:
    """The framework the running configuration builds (in whichever process the scheduler runs, the same)."""
    (profile,) = app.state.scheduler.config.profiles
    return build_framework(profile, Handle(ClusterObjects()))


def test_the_gate_puts_the_placement_plugins_in_the_default_profile(app: FastAPI) -> None:
    (profile,) = app.state.scheduler.config.profiles
    enabled = dict(plugins_in_effect(profile, app.state.scheduler.config.kube_version))
    assert "PodGroupPodsCount" not in [name for name, _ in enabled["score"]]  # a PlacementScore plugin only
    fwk = _framework(app)
    assert [p.name for p in fwk.placement_generate] == ["TopologyPlacementGenerator"]
    assert [p.name for p in fwk.placement_score] == ["PodGroupPodsCount"]
    assert fwk.weights["PodGroupPodsCount"] == 1


async def test_a_gang_goes_to_the_one_rack_that_holds_it(app: FastAPI, client: httpx.AsyncClient) -> None:
    await _racks(client)
    names = await _gang(client, "trio", 3, 3)
    await _settle(app)
    placed = await _nodes_of(client, names)
    assert sorted(n or "" for n in placed) == ["b0", "b1", "b2"]
    condition = await _condition(client, "trio")
    assert (condition["status"], condition["reason"]) == ("True", "Scheduled")


async def test_of_two_feasible_racks_the_one_holding_more_pods_wins(app: FastAPI, client: httpx.AsyncClient) -> None:
    # minCount 2: both racks are feasible (a holds 2 pods, b all 3); PodGroupPodsCount scores b 100, a 66.
    await _racks(client)
    names = await _gang(client, "pair", 2, 3)
    await _settle(app)
    placed = await _nodes_of(client, names)
    assert sorted(n or "" for n in placed) == ["b0", "b1", "b2"]


async def test_a_gang_no_rack_can_hold_binds_none(app: FastAPI, client: httpx.AsyncClient) -> None:
    await _racks(client)
    names = await _gang(client, "quad", 4, 4)
    await _settle(app)
    assert await _nodes_of(client, names) == [None] * 4
    condition = await _condition(client, "quad")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        "0/2 placements are available, first placement status: pod group is unschedulable",
    )
    messages = []
    for name in names:
        got = (await client.get(f"/api/v1/namespaces/default/pods/{name}")).json()
        (scheduled,) = [c for c in got["status"]["conditions"] if c["type"] == "PodScheduled"]
        messages.append(scheduled["message"])
    # Tried first on rack a (by name): two fit there and wait for the quorum, two fit nowhere in it.
    waiting = "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled"
    assert sum(m.startswith(waiting) for m in messages) == 2, messages
    # Their FitError counts rack a's nodes only, and DefaultPreemption declines a PodGroup with constraints (as
    # kube-scheduler v1.36.2 words it: tests/golden/v1.36/topology/topology-002-no-placement).
    fits_nowhere = (
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, "
        "preemption: not eligible due to placement-based pod group scheduling limitation"
    )
    assert sum(m == fits_nowhere for m in messages) == 2, messages


async def test_a_profile_without_the_placement_generator_places_the_gang_across_racks(tmp_path: Path) -> None:
    # placementGenerate disabled in the configuration: the cycle tries the whole cluster as one placement, so the
    # gang no single rack holds binds on nodes of both racks and the loose one.
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "  plugins:\n"
        "    placementGenerate:\n"
        "      disabled: [{name: '*'}]\n"
    )
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        kube_version="1.36",
        feature_gates=GATES,
        runtime_config="scheduling.k8s.io/v1alpha2=true",
        scheduler_config=config,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as client:
            fwk = _framework(application)
            assert fwk.placement_generate == [] and [p.name for p in fwk.placement_score] == ["PodGroupPodsCount"]
            await _racks(client)
            names = await _gang(client, "quad", 4, 4)
            await _settle(application)
            placed = await _nodes_of(client, names)
            assert None not in placed and len(set(placed)) == 4, placed
            condition = await _condition(client, "quad")
            assert (condition["status"], condition["reason"]) == ("True", "Scheduled")
