"""Waiting in Permit inside ``kss serve``: held pods keep their node reserved and are not bound until their quorum
is reached; a wait that times out sends the team back with kube-scheduler's message. With SchedulerPopFromBackoffQ
(on by default in v1.35) the member sent to backoffQ is retried at once, since activeQ is empty, and its new wait
times out in turn; with the gate off it first waits out its 1 s backoff. Either way the nodes end up free."""

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
from tests.conftest import asgi_client

URL = "/simulator/v1/schedulerconfiguration"
# KssTestQuorum, loaded as users' plugins are, so the scheduler's own process (KSS_SCHEDULER_PROCESS) has it too.
PLUGIN_MODULE = "tests.engine_host.quorum_plugin"


def _config(quorum: int, timeout: float) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"enabled": [{"name": "KssTestQuorum"}]}},
                "pluginConfig": [{"name": "KssTestQuorum", "args": {"quorum": quorum, "timeout": timeout}}],
            }
        ],
    }


@pytest.fixture
async def app(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FastAPI]:
    gates: dict[str, bool] = getattr(request, "param", {})  # feature gates, when a test parametrizes them
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=3, feature_gates=gates, plugin_modules=[PLUGIN_MODULE]
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


def _member(name: str, team: str | None = "red") -> dict[str, Any]:
    body = pod(name, cpu="600m")
    if team:
        body["metadata"]["labels"] = {"team": team}
    return body


async def _node_of(client: httpx.AsyncClient, name: str) -> str | None:
    got = (await client.get(f"/api/v1/namespaces/default/pods/{name}")).json()
    value: str | None = got["spec"].get("nodeName")
    return value


async def _settle(app: FastAPI) -> None:
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)


async def test_a_team_waits_with_its_nodes_reserved_then_binds_together(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    for i in range(3):
        await client.post("/api/v1/nodes", json=node(f"n{i}", cpu="1"))
    assert (await client.put(URL, json=_config(quorum=3, timeout=60))).status_code == 200
    for name in ("a", "b"):
        assert (await client.post("/api/v1/namespaces/default/pods", json=_member(name))).status_code == 201
    await _settle(app)
    assert [await _node_of(client, n) for n in ("a", "b")] == [None, None]
    waiting = app.state.scheduler_view.waiting_pods()
    assert sorted(row.pod for row in waiting) == ["default/a", "default/b"]
    assert all(row.pending_plugins == ("KssTestQuorum",) for row in waiting)
    # Their nodes are reserved: a 600m pod of no team fits only on the third node.
    assert (await client.post("/api/v1/namespaces/default/pods", json=_member("loner", team=None))).status_code == 201
    await _settle(app)
    held = {row.node for row in waiting}
    loner_node = await _node_of(client, "loner")
    assert loner_node is not None and loner_node not in held
    metrics = (await client.get("/metrics")).text
    assert "kss_permit_waiting_pods 2.0" in metrics

    # With the loner gone (no grace period: its node is free at once), the third member takes the free node and the
    # quorum is reached.
    await client.delete("/api/v1/namespaces/default/pods/loner", params={"gracePeriodSeconds": "0"})
    await _settle(app)
    assert (await client.post("/api/v1/namespaces/default/pods", json=_member("c"))).status_code == 201
    await _settle(app)
    nodes = [await _node_of(client, n) for n in ("a", "b", "c")]
    assert None not in nodes and len(set(nodes)) == 3
    assert app.state.scheduler_view.waiting_pods() == []
    app.state.results.flush()
    attempts = (await client.get("/simulator/v1/namespaces/default/pods/a/results")).json()["attempts"]
    assert attempts[0]["result"] == "scheduled"
    detail = (await client.get("/simulator/v1/namespaces/default/pods/a/results/1")).json()
    assert detail["permit"] == {"KssTestQuorum": "wait"}
    assert detail["permitWait"]["outcome"] == "allowed" and detail["permitWait"]["node"] == nodes[0]
    metrics = (await client.get("/metrics")).text
    assert 'scheduler_permit_wait_duration_seconds_count{result="Success"} 2.0' in metrics


async def _attempts(client: httpx.AsyncClient, name: str) -> list[dict[str, Any]]:
    """The pod's recorded attempts, oldest first."""
    got = (await client.get(f"/simulator/v1/namespaces/default/pods/{name}/results")).json()
    attempts: list[dict[str, Any]] = got["attempts"]
    return sorted(attempts, key=lambda a: a["attempt"])


TIMED_OUT = "0/1 nodes are available: 1 rejected due to timeout after waiting 1s at plugin KssTestQuorum."
TEAM_LEFT = "0/1 nodes are available: 1 team member left."


@pytest.mark.parametrize(
    "app", [{}, {"SchedulerPopFromBackoffQ": False}], indirect=True, ids=["PopFromBackoffQ", "gate-off"]
)
async def test_a_wait_that_times_out_sends_the_team_back_to_rest_in_the_unschedulable_pool(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    for i in range(2):
        await client.post("/api/v1/nodes", json=node(f"n{i}", cpu="1"))
    assert (await client.put(URL, json=_config(quorum=3, timeout=1))).status_code == 200
    for name in ("a", "b"):
        await client.post("/api/v1/namespaces/default/pods", json=_member(name))
    await _settle(app)
    assert len(app.state.scheduler_view.waiting_pods()) == 2

    # The first timeout rejects the other member (Unreserve). Both rest in the unschedulable pool after one attempt:
    # the only event while the other was in flight, the first one's released reservation (an assigned pod's
    # deletion), is not one KssTestQuorum registered (kube-scheduler's in-flight events with queueing hints).
    service, view = app.state.scheduler, app.state.scheduler_view
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if not view.waiting_pods() and service.queue.pending_counts()["unschedulable"] == 2:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"the team did not come to rest: {service.queue.pending_counts()}")
    await _settle(app)
    app.state.results.flush()
    timed_out, left = sorted(
        [await _attempts(client, "a"), await _attempts(client, "b")], key=lambda a: a[0]["message"] != TIMED_OUT
    )
    assert (len(timed_out), len(left)) == (1, 1)
    assert timed_out[0]["message"] == TIMED_OUT
    assert left[0]["message"] == TEAM_LEFT
    for name in ("a", "b"):
        got = (await client.get(f"/api/v1/namespaces/default/pods/{name}")).json()
        assert got["spec"].get("nodeName") is None
        condition = next(c for c in got["status"]["conditions"] if c["type"] == "PodScheduled")
        assert condition["reason"] == "Unschedulable"
        assert condition["message"] in (TIMED_OUT, TEAM_LEFT)
    # The reservations are gone: a plain pod fits on either node.
    allocations = view.node_allocations()
    assert allocations["n0"].requested.milli_cpu == 0
    assert allocations["n1"].requested.milli_cpu == 0
    # Each rejection cleared the nomination its wait had written (clearNominatedNode).
    for name in ("a", "b"):
        got = (await client.get(f"/api/v1/namespaces/default/pods/{name}")).json()
        assert "nominatedNodeName" not in got["status"]


async def _nominations(client: httpx.AsyncClient, names: tuple[str, ...]) -> dict[str, str | None]:
    pods = [(await client.get(f"/api/v1/namespaces/default/pods/{n}")).json() for n in names]
    return {p["metadata"]["name"]: p["status"].get("nominatedNodeName") for p in pods}


@pytest.mark.parametrize(
    ("version", "gates", "nominated"),
    [("1.35", {}, True), ("1.34", {}, False), ("1.34", {"NominatedNodeNameForExpectation": True}, True)],
    ids=["1.35", "1.34", "1.34-gate-on"],
)
async def test_a_pod_held_in_permit_is_nominated_to_its_node_until_it_binds(
    tmp_path: Path, version: str, gates: dict[str, bool], nominated: bool
) -> None:
    # NominatedNodeNameForExpectation (beta, on from v1.35): the binding cycle nominates a pod a Permit plugin holds
    # to its node before it waits; the binding clears it (ClearingNominatedNodeNameAfterBinding, on from v1.35).
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        seed=3,
        kube_version=version,
        feature_gates={"ClearingNominatedNodeNameAfterBinding": True, **gates},
        plugin_modules=[PLUGIN_MODULE],
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application), asgi_client(application) as client:
        for i in range(3):
            await client.post("/api/v1/nodes", json=node(f"n{i}", cpu="1"))
        assert (await client.put(URL, json=_config(quorum=3, timeout=60))).status_code == 200
        for name in ("a", "b"):
            assert (await client.post("/api/v1/namespaces/default/pods", json=_member(name))).status_code == 201
        await _settle(application)
        held = {row.pod.split("/")[1]: row.node for row in application.state.scheduler_view.waiting_pods()}
        assert sorted(held) == ["a", "b"]
        expected = held if nominated else {"a": None, "b": None}
        assert await _nominations(client, ("a", "b")) == expected

        assert (await client.post("/api/v1/namespaces/default/pods", json=_member("c"))).status_code == 201
        await _settle(application)
        assert None not in [await _node_of(client, n) for n in ("a", "b", "c")]
        assert await _nominations(client, ("a", "b", "c")) == {"a": None, "b": None, "c": None}
