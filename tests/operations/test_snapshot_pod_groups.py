"""Export and import of PodGroups and Workloads: the snapshot keys, a round trip with status and pods' workloadRef,
and a Workload snapshot refused by a server without the GenericWorkload gate."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod

PG_PATH = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/team/podgroups"
WL_PATH = "/apis/scheduling.k8s.io/v1alpha1/namespaces/team/workloads"
MERGE = {"content-type": "application/merge-patch+json"}
# The Workload here is v1.35's (scheduling.k8s.io/v1alpha1, pods' spec.workloadRef), which v1.36 replaced.
V1_35 = "1.35"


async def _client(tmp_path: Path, name: str, gates: dict[str, bool]) -> AsyncIterator[httpx.AsyncClient]:
    application: FastAPI = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / name}",
            scheduler_enabled=False,
            controllers=False,
            kube_version=V1_35,
            feature_gates=gates,
            # The Workload API is alpha: off by default, served only with the gate on as well.
            runtime_config={"scheduling.k8s.io/v1alpha1": "true"} if gates else {},
        )
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


@pytest.fixture
async def gated(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A server with GenericWorkload on."""
    async for c in _client(tmp_path, "gated.db", {"GenericWorkload": True}):
        yield c


@pytest.fixture
async def other_gated(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A second server with GenericWorkload on (where snapshots are imported)."""
    async for c in _client(tmp_path, "other.db", {"GenericWorkload": True}):
        yield c


async def _load(c: httpx.AsyncClient) -> None:
    assert (await c.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
    assert (await c.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    group = {"metadata": {"name": "gang"}, "spec": {"minMember": 2, "minResources": {"cpu": "2"}}}
    assert (await c.post(PG_PATH, json=group)).status_code == 201
    status = b'{"status":{"phase":"Running","running":2,"scheduleStartTime":"2025-01-01T00:00:00Z"}}'
    assert (await c.patch(f"{PG_PATH}/gang/status", content=status, headers=MERGE)).status_code == 200
    wl = {
        "metadata": {"name": "train"},
        "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]},
    }
    assert (await c.post(WL_PATH, json=wl)).status_code == 201
    for i in range(2):
        body = pod(f"worker-{i}", namespace="team", labels={"scheduling.x-k8s.io/pod-group": "gang"})
        body["spec"]["workloadRef"] = {"name": "train", "podGroup": "workers"}
        assert (await c.post("/api/v1/namespaces/team/pods", json=body)).status_code == 201


def _essence(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {i["metadata"]["name"]: (i.get("spec"), i.get("status"), i["metadata"].get("labels")) for i in items}


async def test_export_import_round_trip_keeps_groups_workloads_and_refs(
    gated: httpx.AsyncClient, other_gated: httpx.AsyncClient
) -> None:
    await _load(gated)
    exported = (await gated.get("/simulator/v1/export", params={"format": "yaml"})).text
    snap = yaml.safe_load(exported)
    # then the workload kinds, the DRA kinds, the CRDs and the custom objects
    assert list(snap)[-14:-12] == ["podGroups", "workloads"]
    assert [g["metadata"]["name"] for g in snap["podGroups"]] == ["gang"]
    assert snap["podGroups"][0]["status"]["phase"] == "Running"
    assert [w["metadata"]["name"] for w in snap["workloads"]] == ["train"]

    r = await other_gated.post("/simulator/v1/import", content=exported)
    assert r.status_code == 200, r.text
    again = (await other_gated.get("/simulator/v1/export")).json()
    for key in ("podGroups", "workloads", "pods"):
        assert _essence(again[key]) == _essence(snap[key]), key
    assert again["pods"][0]["spec"]["workloadRef"] == {"name": "train", "podGroup": "workers"}

    # Imported again over itself (merge): the objects are replaced in place, the group's status kept.
    r = await other_gated.post("/simulator/v1/import", content=exported)
    assert r.status_code == 200 and r.json()["updated"] >= 2, r.text
    assert (await other_gated.get(f"{PG_PATH}/gang")).json()["status"]["running"] == 2


@pytest.fixture
async def ungated(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A server with GenericWorkload at v1.35's default (off)."""
    async for c in _client(tmp_path, "ungated.db", {}):
        yield c


async def test_without_the_gate_export_leaves_workloads_out_and_import_refuses_them(
    gated: httpx.AsyncClient, ungated: httpx.AsyncClient
) -> None:
    client = ungated
    await _load(gated)
    snap = (await gated.get("/simulator/v1/export")).json()
    plain = (await client.get("/simulator/v1/export")).json()
    assert "podGroups" in plain and "workloads" not in plain

    r = await client.post("/simulator/v1/import", json=snap)
    assert r.status_code == 422, r.text
    causes = r.json()["details"]["causes"]
    assert [c["field"] for c in causes] == ["workloads[0]"]
    assert "feature gate GenericWorkload is off" in causes[0]["message"]
    assert (await client.get("/api/v1/namespaces/team/pods")).json()["items"] == [], "nothing was imported"

    snap.pop("workloads")
    r = await client.post("/simulator/v1/import", json=snap)
    assert r.status_code == 200, r.text
    pods = (await client.get("/api/v1/namespaces/team/pods")).json()["items"]
    assert len(pods) == 2 and all("workloadRef" not in p["spec"] for p in pods), "dropped, as the gate is off"
    assert (await client.get(f"{PG_PATH}/gang")).json()["status"]["phase"] == "Running"


async def test_an_import_succeeds_while_the_pod_group_controller_writes_status(
    gated: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The PodGroup controller may write a status between the import's create and its status update: the import
    reads again and still carries the snapshot's status over (the controller then recomputes it, as on a cluster)."""
    await _load(gated)
    exported = (await gated.get("/simulator/v1/export")).text
    # No kubelet: the members stay as imported (not Running), so the controller's own verdict is Scheduling.
    application: FastAPI = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'live.db'}",
            kube_version=V1_35,
            feature_gates={"GenericWorkload": True},
            runtime_config="scheduling.k8s.io/v1alpha1=true",
            kubelet=False,
        )
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as live:
            for _ in range(5):
                r = await live.post("/simulator/v1/import", content=exported, params={"replace": "true"})
                assert r.status_code == 200, r.text
            assert application.state.controllers.wait_idle(10.0)
            got = (await live.get(f"{PG_PATH}/gang")).json()
            # Two members exist (minMember 2) and neither runs: the controller says Scheduling.
            assert got["status"]["phase"] == "Scheduling"
