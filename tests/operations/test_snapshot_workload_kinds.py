"""Export and import of the workload kinds: the snapshot keys (no Leases), a round trip into another server that
keeps owners before what they own (new uids relinked, a Job's generated selector regenerated) and their status."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node

APPS = "/apis/apps/v1/namespaces/shop"
BATCH = "/apis/batch/v1/namespaces/shop"
MERGE = {"content-type": "application/merge-patch+json"}


async def _client(tmp_path: Path, name: str) -> AsyncIterator[httpx.AsyncClient]:
    application: FastAPI = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / name}", scheduler_enabled=False, controllers=False, kubelet=False)
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async for c in _client(tmp_path, "source.db"):
        yield c


@pytest.fixture
async def target(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async for c in _client(tmp_path, "target.db"):
        yield c


def _template(labels: dict[str, str], restart: str = "Always") -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "nginx"}]},
    }


async def _load(c: httpx.AsyncClient) -> None:
    assert (await c.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    deploy = {
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": _template({"app": "web"})},
    }
    d = (await c.post(f"{APPS}/deployments", json=deploy)).json()
    owner = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": d["metadata"]["uid"],
        "controller": True,
    }
    rs = {
        "metadata": {"name": "web-5d4f", "ownerReferences": [owner], "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": _template({"app": "web"})},
    }
    rs = (await c.post(f"{APPS}/replicasets", json=rs)).json()
    status = {"status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 1}}
    assert (await c.patch(f"{APPS}/replicasets/web-5d4f/status", json=status, headers=MERGE)).status_code == 200
    rs_owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-5d4f",
        "uid": rs["metadata"]["uid"],
        "controller": True,
    }
    pod = {
        "metadata": {"name": "web-5d4f-abcde", "labels": {"app": "web"}, "ownerReferences": [rs_owner]},
        "spec": _template({})["spec"],
    }
    assert (await c.post("/api/v1/namespaces/shop/pods", json=pod)).status_code == 201
    j = (
        await c.post(
            f"{BATCH}/jobs", json={"metadata": {"name": "report"}, "spec": {"template": _template({}, "Never")}}
        )
    ).json()
    job_owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "report",
        "uid": j["metadata"]["uid"],
        "controller": True,
    }
    job_pod = {
        "metadata": {
            "name": "report-xyz",
            "labels": j["spec"]["template"]["metadata"]["labels"],
            "ownerReferences": [job_owner],
        },
        "spec": _template({}, "Never")["spec"],
    }
    assert (await c.post("/api/v1/namespaces/shop/pods", json=job_pod)).status_code == 201
    cron = {
        "metadata": {"name": "tick"},
        "spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": _template({}, "Never")}}},
    }
    assert (await c.post(f"{BATCH}/cronjobs", json=cron)).status_code == 201
    lease = {"metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}}
    assert (
        await c.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", json=lease)
    ).status_code == 201


async def test_workload_kinds_round_trip_with_owners_relinked(
    source: httpx.AsyncClient, target: httpx.AsyncClient
) -> None:
    await _load(source)
    snap = (await source.get("/simulator/v1/export")).json()
    for key in ("deployments", "replicaSets", "statefulSets", "daemonSets", "jobs", "cronJobs"):
        assert key in snap, key
    assert [o["metadata"]["name"] for o in snap["deployments"]] == ["web"]
    assert [o["metadata"]["name"] for o in snap["cronJobs"]] == ["tick"]
    assert not any("lease" in key.lower() for key in snap), "heartbeats are runtime state, not exported"

    exported = (await source.get("/simulator/v1/export", params={"format": "yaml"})).text
    r = await target.post("/simulator/v1/import", content=exported)
    assert r.status_code == 200, r.text
    d = (await target.get(f"{APPS}/deployments/web")).json()
    rs = (await target.get(f"{APPS}/replicasets/web-5d4f")).json()
    assert rs["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"], "relinked to the new Deployment"
    assert rs["status"]["readyReplicas"] == 1, "the snapshot's status is carried over"
    pod = (await target.get("/api/v1/namespaces/shop/pods/web-5d4f-abcde")).json()
    assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]

    job = (await target.get(f"{BATCH}/jobs/report")).json()
    uid = job["metadata"]["uid"]
    assert uid != snap["jobs"][0]["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"]["controller-uid"] == uid
    job_pod = (await target.get("/api/v1/namespaces/shop/pods/report-xyz")).json()
    assert job_pod["metadata"]["ownerReferences"][0]["uid"] == uid
    assert job_pod["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == uid, "the Job still selects it"
    assert (await target.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")).json()["items"] == []

    again = (await target.get("/simulator/v1/export")).json()
    for key in ("deployments", "replicaSets", "jobs", "cronJobs"):
        assert len(again[key]) == len(snap[key]) == 1, key
    assert again["deployments"][0]["spec"] == snap["deployments"][0]["spec"]


async def test_an_export_merged_back_into_its_own_server_replaces_a_job_with_a_generated_selector(
    source: httpx.AsyncClient,
) -> None:
    """The README's `kss export` then `kss import --snapshot` on one server: the import takes off the selector and
    labels the API generated from the Job's uid (so that a new server generates them for the uid it gives); replacing
    the stored Job, they are the stored one's again instead of an update of immutable fields the API refuses."""
    await _load(source)
    before = (await source.get(f"{BATCH}/jobs/report")).json()
    exported = (await source.get("/simulator/v1/export", params={"format": "yaml"})).text
    r = await source.post("/simulator/v1/import", content=exported)
    assert r.status_code == 200, r.text
    assert r.json()["created"] == 0
    job = (await source.get(f"{BATCH}/jobs/report")).json()
    assert job["metadata"]["uid"] == before["metadata"]["uid"]
    assert job["spec"]["selector"] == before["spec"]["selector"]
    assert job["spec"]["template"]["metadata"]["labels"] == before["spec"]["template"]["metadata"]["labels"]
