"""The results API as clients read it: selectHost's tie among equally scored nodes, and NotFound for unknown pods."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.db import make_engine, make_session_factory, session_scope, upgrade_database
from kss_sim.main import create_app
from kss_sim.results.attempts import ResultsService
from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import Handle
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_framework
from tests.scheduler.factories import make_node, make_pod
from tests.web.conftest import node, pod

RESULTS = "/simulator/v1/namespaces/default/pods/{name}/results"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The application with its scheduler running, through an in-process HTTP client."""
    application: FastAPI = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_enabled=True))
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


async def bound_attempt(client: httpx.AsyncClient, name: str) -> dict[str, Any]:
    """The newest attempt of a pod once it is bound."""
    for _ in range(200):
        listing = (await client.get(RESULTS.format(name=name))).json()
        scheduled = [a for a in listing["attempts"] if a["result"] == "scheduled"]
        if scheduled:
            r = await client.get(RESULTS.format(name=name) + f"/{scheduled[0]['attempt']}", params={"pageSize": 100})
            assert r.status_code == 200, r.text
            body: dict[str, Any] = r.json()
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} was not bound")


async def test_a_tie_names_the_winner_as_selected_and_the_tied_nodes_beside_it(client: httpx.AsyncClient) -> None:
    # Four identical nodes: every score plugin gives them the same total, so selectHost draws among all four.
    for i in range(4):
        assert (await client.post("/api/v1/nodes", json=node(f"openb-node-004{i}"))).status_code == 201
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod("tied"))).status_code == 201
    detail = await bound_attempt(client, "tied")

    assert detail["tiedCount"] == 4
    assert detail["tiedNodes"] == [f"openb-node-004{i}" for i in range(4)]
    assert detail["selected"] == [detail["boundTo"]] and detail["boundTo"] in detail["tiedNodes"]
    assert detail["tieBreak"] == "random" and detail["boundBy"] == "score"
    rows = detail["matrix"]["rows"]
    assert {r["total"] for r in rows} == {detail["bestTotal"]}
    assert [r["node"] for r in rows if r["selected"]] == [detail["boundTo"]]
    assert all(r["tied"] for r in rows)
    # kube-scheduler-simulator's selected-node annotation still names the bound node.
    got = (await client.get("/api/v1/namespaces/default/pods/tied")).json()
    assert got["metadata"]["annotations"]["kube-scheduler-simulator.sigs.k8s.io/selected-node"] == detail["boundTo"]


async def test_a_single_best_node_is_selected_without_a_tie(client: httpx.AsyncClient) -> None:
    assert (await client.post("/api/v1/nodes", json=node("small", cpu="2"))).status_code == 201
    assert (await client.post("/api/v1/nodes", json=node("roomy", cpu="64"))).status_code == 201
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod("alone", cpu="1"))).status_code == 201
    detail = await bound_attempt(client, "alone")
    assert detail["selected"] == ["roomy"] == [detail["boundTo"]]
    assert detail["tiedNodes"] == ["roomy"] and detail["tiedCount"] == 1 and detail["tieBreak"] is None
    assert not any(r["tied"] for r in detail["matrix"]["rows"])
    assert [r["node"] for r in detail["matrix"]["rows"] if r["selected"]] == ["roomy"]


def assert_pod_not_found(r: httpx.Response, name: str) -> None:
    assert r.status_code == 404, r.text
    assert r.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "{name}" not found',
        "reason": "NotFound",
        "details": {"name": name, "kind": "pods"},
        "code": 404,
    }


async def test_results_of_a_pod_that_does_not_exist_are_not_found(client: httpx.AsyncClient) -> None:
    assert_pod_not_found(await client.get(RESULTS.format(name="ghost")), "ghost")
    assert_pod_not_found(await client.get(RESULTS.format(name="ghost") + "/1"), "ghost")
    assert_pod_not_found(await client.delete(RESULTS.format(name="ghost")), "ghost")
    # A pod that exists but was never tried answers an empty list; a missing attempt of it stays a 404 of its own.
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod("waiting"))).status_code == 201
    r = await client.get(RESULTS.format(name="waiting"))
    assert r.status_code == 200 and r.json()["pod"] == "default/waiting"
    r = await client.get(RESULTS.format(name="waiting") + "/99")
    assert r.status_code == 404 and r.json()["message"] == "no attempt 99 recorded for pod default/waiting"
    # An attempt number beyond the database's integers is no attempt either (not a 500).
    huge = 99999999999999999999999
    r = await client.get(RESULTS.format(name="waiting") + f"/{huge}")
    assert r.status_code == 404 and r.json()["message"] == f"no attempt {huge} recorded for pod default/waiting"
    assert_pod_not_found(await client.get(RESULTS.format(name="ghost") + f"/{huge}"), "ghost")


async def test_a_deleted_pods_attempts_stay_readable_until_cleared(client: httpx.AsyncClient) -> None:
    assert (await client.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod("gone"))).status_code == 201
    await bound_attempt(client, "gone")
    gone = await client.delete("/api/v1/namespaces/default/pods/gone", params={"gracePeriodSeconds": "0"})
    assert gone.status_code == 200  # no grace period: the pod is gone at once
    r = await client.get(RESULTS.format(name="gone"))
    assert r.status_code == 200 and r.json()["attempts"]
    r = await client.delete(RESULTS.format(name="gone"))
    assert r.status_code == 200 and r.json()["deleted"] >= 1
    assert_pod_not_found(await client.get(RESULTS.format(name="gone")), "gone")


def test_the_winner_of_a_tie_is_drawn_among_the_tied_nodes_and_kept_in_the_record() -> None:
    # selectHost's reservoir sampling: over many seeds each tied node wins sometimes, and the record keeps the pick.
    winners: set[str] = set()
    for seed in range(40):
        cache = SchedulerCache()
        for name in ("n-a", "n-b", "n-c"):
            cache.add_node(make_node(name=name, allocatable={"cpu": "4", "memory": "8Gi"}))
        config = parse_config(None)
        frameworks = {"default-scheduler": build_framework(config.profiles[0], Handle(ClusterObjects()))}
        scheduler = Scheduler(frameworks, cache.snapshot, seed=seed, cache=cache)
        opts = ScheduleOptions(record=True, run_binding_cycle=False)
        att = scheduler.schedule_one(PodInfo(make_pod(name="p", requests={"cpu": "1"})), 1, opts)
        assert att.selected == ["n-a", "n-b", "n-c"]
        assert att.suggested_host == att.bound_to and att.tie_break == "random"
        winners.add(att.suggested_host or "")
    assert winners == {"n-a", "n-b", "n-c"}


def test_a_winner_whose_binding_failed_is_still_the_selected_node(tmp_path: Path) -> None:
    # No binder can write the binding here, so Bind fails on the drawn node: the attempt is an error, yet the
    # results still say which node selectHost picked and that it was drawn among the tied ones.
    cache = SchedulerCache()
    for name in ("n-a", "n-b"):
        cache.add_node(make_node(name=name, allocatable={"cpu": "4", "memory": "8Gi"}))
    frameworks = {"default-scheduler": build_framework(parse_config(None).profiles[0], Handle(ClusterObjects()))}
    scheduler = Scheduler(frameworks, cache.snapshot, seed=3, cache=cache)
    att = scheduler.schedule_one(PodInfo(make_pod(name="p", requests={"cpu": "1"})), 1, ScheduleOptions(record=True))
    assert att.result == "error" and att.bound_to is None and att.bind
    engine = make_engine(f"sqlite:///{tmp_path / 'r.db'}")
    upgrade_database(engine)
    factory = make_session_factory(engine)
    service = ResultsService(lambda: session_scope(factory))
    service.submit(att, namespace="default", pod_name="p", pod_uid="u")
    service.flush()
    got = service.get_attempt("default", "p", 1)
    service.stop()
    assert got is not None and got["boundTo"] is None
    assert got["selected"] == [att.suggested_host] and got["tiedNodes"] == ["n-a", "n-b"]
    assert [r["node"] for r in got["matrix"]["rows"] if r["selected"]] == [att.suggested_host]
