"""Export and import of CustomResourceDefinitions and their objects: the snapshot's ``customResourceDefinitions``
and ``customResources`` keys, a round trip into another server, a kubectl-style YAML bundle with a CRD and its
objects in one import, and an object whose CRD is missing refused with nothing imported."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import yaml
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.test_custom_resources import CRDS, RAY_CRD, RAYS, _ray

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cluster"


@pytest.fixture
async def other(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A second server, where snapshots are imported."""
    application: FastAPI = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'other.db'}", scheduler_enabled=False, controllers=False)
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


async def test_export_import_round_trip_keeps_crds_and_their_objects(
    client: httpx.AsyncClient, other: httpx.AsyncClient
) -> None:
    assert (await client.post(CRDS, json=copy.deepcopy(RAY_CRD))).status_code == 201
    created = (await client.post(RAYS, json=_ray(workers=4))).json()
    await client.put(f"{RAYS}/r1/status", json={**created, "status": {"readyWorkers": 4}})
    snap = (await client.get("/simulator/v1/export")).json()
    assert [c["metadata"]["name"] for c in snap["customResourceDefinitions"]] == ["rayclusters.ray.example.com"]
    (ray,) = snap["customResources"]
    assert ray["kind"] == "RayCluster" and ray["spec"]["workers"] == 4
    answer = await other.post("/simulator/v1/import", json=snap)
    assert answer.status_code == 200, answer.text
    copied = (await other.get(f"{RAYS}/r1")).json()
    assert copied["spec"] == {"image": "rayproject/ray", "workers": 4}
    crd = (await other.get(f"{CRDS}/rayclusters.ray.example.com")).json()
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]}["Established"] == "True"
    again = (await other.get("/simulator/v1/export")).json()
    assert [o["metadata"]["name"] for o in again["customResources"]] == ["r1"]


async def test_a_yaml_bundle_with_a_crd_and_its_objects_imports_in_one_go(client: httpx.AsyncClient) -> None:
    bundle = (EXAMPLES / "crd-raycluster.yaml").read_text() + "---\n" + (EXAMPLES / "raycluster.yaml").read_text()
    answer = await client.post("/simulator/v1/import", content=bundle)
    assert answer.status_code == 200, answer.text
    demo = (await client.get("/apis/ray.kss.example/v1/namespaces/ray-demo/rayclusters/demo")).json()
    assert demo["spec"]["workerReplicas"] == 3
    assert (await client.get("/api/v1/namespaces/ray-demo/configmaps/ray-config")).status_code == 200


async def test_an_object_without_its_crd_is_refused_and_nothing_is_imported(client: httpx.AsyncClient) -> None:
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lonely"}},
        {**_ray(), "metadata": {"name": "r1", "namespace": "lonely"}},
    ]
    answer = await client.post("/simulator/v1/import", content=yaml.safe_dump_all(docs))
    assert answer.status_code == 422, answer.text
    assert "RayCluster.ray.example.com" in answer.json()["message"]
    assert (await client.get("/api/v1/namespaces/lonely")).status_code == 404
