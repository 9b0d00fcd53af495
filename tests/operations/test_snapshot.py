"""Export, import and reset through the API: the snapshot shape, merge and replace, bad documents, round trips."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.db import make_engine, upgrade_database
from kss_sim.main import create_app
from tests.cluster.factories import node, pod
from tests.operations.conftest import SEED

SNAPSHOT_KEYS = ["pods", "nodes", "pvs", "pvcs", "storageClasses", "priorityClasses", "schedulerConfig", "namespaces"]


def _names(items: list[dict[str, Any]]) -> set[str]:
    return {i["metadata"]["name"] for i in items}


async def _wait_idle(app: FastAPI) -> None:
    """The scheduler and then the controllers (the kubelet starting bound pods) have done what they saw."""
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)
    assert await asyncio.to_thread(app.state.controllers.wait_idle, 20.0)


async def _placements(client: httpx.AsyncClient) -> dict[str, str | None]:
    r = await client.get("/api/v1/pods")
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in r.json()["items"]}


async def _load_cluster(client: httpx.AsyncClient) -> None:
    """Identical nodes (so placements hinge on seeded tie-breaks) and objects of every snapshot kind."""
    for i in range(4):
        assert (await client.post("/api/v1/nodes", json=node(f"node-{i}", cpu="8"))).status_code == 201
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    assert (await client.post("/apis/scheduling.k8s.io/v1/priorityclasses", json=pc)).status_code == 201
    sc = {"metadata": {"name": "fast"}, "provisioner": "kubernetes.io/no-provisioner"}
    assert (await client.post("/apis/storage.k8s.io/v1/storageclasses", json=sc)).status_code == 201
    pv = {
        "metadata": {"name": "pv-1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv"}},
    }
    assert (await client.post("/api/v1/persistentvolumes", json=pv)).status_code == 201
    pvc = {
        "metadata": {"name": "claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    assert (await client.post("/api/v1/namespaces/team/persistentvolumeclaims", json=pvc)).status_code == 201
    pods = []
    for i in range(10):
        body = pod(f"web-{i}", cpu="1", namespace="team")
        if i % 3 == 0:
            body["spec"]["priorityClassName"] = "high"
        pods.append(body)
    # Loaded in one import, the pods are queued before any is scheduled: the order is priority, then arrival.
    r = await client.post(
        "/simulator/v1/import", content=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods})
    )
    assert r.status_code == 200, r.text


async def test_export_has_the_kube_scheduler_simulator_snapshot_shape(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/nodes", json=node("n1"))
    await client.post("/api/v1/namespaces/default/pods", json=pod("p1"))
    r = await client.get("/simulator/v1/export")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    snap = r.json()
    assert list(snap)[: len(SNAPSHOT_KEYS)] == SNAPSHOT_KEYS
    assert _names(snap["nodes"]) == {"n1"} and _names(snap["pods"]) == {"p1"}
    assert {"default", "kube-system"} <= _names(snap["namespaces"])
    assert snap["schedulerConfig"]["kind"] == "KubeSchedulerConfiguration"
    as_yaml = await client.get("/simulator/v1/export", params={"format": "yaml"})
    assert as_yaml.headers["content-type"].startswith("application/yaml")
    assert yaml.safe_load(as_yaml.text) == snap
    by_accept = await client.get("/simulator/v1/export", headers={"Accept": "application/yaml"})
    assert yaml.safe_load(by_accept.text) == snap


async def test_round_trip_export_reset_import_gives_same_objects_and_placements(
    scheduling_app: FastAPI, sclient: httpx.AsyncClient
) -> None:
    await _load_cluster(sclient)
    await _wait_idle(scheduling_app)
    before = await _placements(sclient)
    assert len(before) == 10 and all(before.values())
    assert len(set(before.values())) > 1  # ties were broken, not all on one node
    exported = (await sclient.get("/simulator/v1/export", params={"format": "yaml"})).text
    snap = yaml.safe_load(exported)

    r = await sclient.post("/simulator/v1/reset")
    assert r.status_code == 200, r.text
    assert await _placements(sclient) == {}
    assert scheduling_app.state.results.count() == 0

    # Unbound: the scheduler places every pod again, with the same seed, on the same nodes.
    r = await sclient.post("/simulator/v1/import", params={"unbind": "true"}, content=exported)
    assert r.status_code == 200, r.text
    await _wait_idle(scheduling_app)
    assert await _placements(sclient) == before

    # Bound (as kube-scheduler-simulator keeps nodeName): the same objects come back as they were.
    await sclient.post("/simulator/v1/reset")
    r = await sclient.post("/simulator/v1/import", content=json.dumps(snap))
    assert r.status_code == 200, r.text
    await _wait_idle(scheduling_app)
    again = (await sclient.get("/simulator/v1/export")).json()
    for key in ("pods", "nodes", "pvs", "pvcs", "storageClasses", "priorityClasses", "namespaces"):
        assert _comparable(again[key]) == _comparable(snap[key]), key
    # A bound volume's claimRef names its claim as imported here (a new uid), so the PV controller keeps it Bound.
    claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c["metadata"]["uid"] for c in again["pvcs"]}
    bound = [pv for pv in again["pvs"] if pv["spec"].get("claimRef")]
    assert bound and all(pv["status"]["phase"] == "Bound" for pv in bound)
    assert all(
        claims[(pv["spec"]["claimRef"]["namespace"], pv["spec"]["claimRef"]["name"])] == pv["spec"]["claimRef"]["uid"]
        for pv in bound
    )
    assert again["schedulerConfig"] == snap["schedulerConfig"]


def _comparable(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Objects keyed by namespace/name, without what the server assigns anew (uid, versions, timestamps)."""
    out = {}
    for item in items:
        meta = {
            k: v
            for k, v in item["metadata"].items()
            if k not in ("uid", "resourceVersion", "creationTimestamp", "generation")
        }
        status = item.get("status") or {}
        if item["kind"] in ("Node", "Namespace"):
            status = {k: v for k, v in status.items() if k != "conditions"}
        else:
            status = {**status, "conditions": [{**c, "lastTransitionTime": None} for c in status.get("conditions", [])]}
        spec = item.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("claimRef"), dict):  # its uid: the claim's new one
            spec = {**spec, "claimRef": {k: v for k, v in spec["claimRef"].items() if k != "uid"}}
        out[f"{meta.get('namespace', '')}/{meta['name']}"] = {**item, "metadata": meta, "status": status}
        if spec is not None:
            out[f"{meta.get('namespace', '')}/{meta['name']}"]["spec"] = spec
    return out


async def test_merge_keeps_other_objects_and_replace_really_replaces(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/nodes", json=node("old"))
    await client.post("/api/v1/namespaces/default/pods", json=pod("old-pod"))
    snap = {"nodes": [node("new", cpu="2")], "pods": [pod("new-pod")]}
    r = await client.post("/simulator/v1/import", content=json.dumps(snap))
    assert r.status_code == 200 and r.json()["created"] == 2
    assert _names((await client.get("/api/v1/nodes")).json()["items"]) == {"old", "new"}

    # Merging an object that exists replaces it (a node's capacity included).
    snap["nodes"] = [node("old", cpu="16")]
    r = await client.post("/simulator/v1/import", content=json.dumps(snap))
    assert r.status_code == 200 and r.json()["updated"] == 2
    assert (await client.get("/api/v1/nodes/old")).json()["status"]["capacity"]["cpu"] == "16"

    r = await client.post(
        "/simulator/v1/import", params={"mode": "replace"}, content=json.dumps({"nodes": [node("x")]})
    )
    assert r.status_code == 200, r.text
    assert _names((await client.get("/api/v1/nodes")).json()["items"]) == {"x"}
    assert (await client.get("/api/v1/pods")).json()["items"] == []
    # Built-in namespaces and priority classes stay.
    assert {"default", "kube-system"} <= _names((await client.get("/api/v1/namespaces")).json()["items"])


async def test_multi_document_kubectl_yaml_and_lists_import(client: httpx.AsyncClient) -> None:
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}},
        node("yaml-node"),
        {**pod("job-1"), "metadata": {"name": "job-1", "namespace": "batch"}},
        {"apiVersion": "v1", "kind": "List", "items": [node("list-node"), pod("listed")]},
    ]
    text = yaml.safe_dump_all(docs)
    r = await client.post("/simulator/v1/import", content=text, headers={"content-type": "application/yaml"})
    assert r.status_code == 200, r.text
    assert r.json()["created"] == 5
    assert (await client.get("/api/v1/namespaces/batch/pods/job-1")).status_code == 200
    assert _names((await client.get("/api/v1/nodes")).json()["items"]) == {"yaml-node", "list-node"}


async def test_a_kube_scheduler_simulator_export_imports_with_its_configuration(client: httpx.AsyncClient) -> None:
    # Go's typed lists omit apiVersion/kind on items; server-managed fields come along and are dropped.
    n = node("ksim-node")
    del n["apiVersion"], n["kind"]
    foreign = [
        {"manager": "kube-scheduler-simulator", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"}
    ]
    n["metadata"].update(uid="0a0a0a0a-0000-0000-0000-000000000000", resourceVersion="123", managedFields=foreign)
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "second"}],
    }
    snap = {"pods": [], "nodes": [n], "pvs": None, "schedulerConfig": config, "namespaces": []}
    r = await client.post("/simulator/v1/import", content=json.dumps(snap))
    assert r.status_code == 200, r.text
    assert r.json()["schedulerConfigApplied"] is True
    stored = (await client.get("/api/v1/nodes/ksim-node")).json()
    assert stored["metadata"]["uid"] != "0a0a0a0a-0000-0000-0000-000000000000"
    # The snapshot's managedFields are dropped; the server records the import's own write, as for any create.
    assert [m["manager"] for m in stored["metadata"].get("managedFields") or []] != ["kube-scheduler-simulator"]
    assert all(m["manager"] != "kube-scheduler-simulator" for m in stored["metadata"].get("managedFields") or [])
    profiles = (await client.get("/simulator/v1/schedulerconfiguration")).json()["profiles"]
    assert [p["schedulerName"] for p in profiles] == ["default-scheduler", "second"]


async def test_a_bad_document_changes_nothing_and_names_every_bad_object(client: httpx.AsyncClient) -> None:
    rv = (await client.get("/api/v1/nodes")).json()["metadata"]["resourceVersion"]
    config_before = (await client.get("/simulator/v1/schedulerconfiguration")).json()
    bad_pod = pod("broken")
    del bad_pod["spec"]["containers"]
    snap = {
        "nodes": [node("fine"), {"metadata": {}}],
        "pods": [bad_pod],
        "schedulerConfig": {"percentageOfNodesToScore": 300},
    }
    r = await client.post("/simulator/v1/import", params={"mode": "replace"}, content=json.dumps(snap))
    assert r.status_code == 422
    status = r.json()
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    fields = {c["field"] for c in status["details"]["causes"]}
    assert fields == {"nodes[1].metadata.name", "pods[0].spec.containers", "schedulerConfig.percentageOfNodesToScore"}
    assert (await client.get("/api/v1/nodes")).json()["metadata"]["resourceVersion"] == rv
    assert (await client.get("/api/v1/nodes/fine")).status_code == 404
    assert (await client.get("/simulator/v1/schedulerconfiguration")).json() == config_before

    r = await client.post(
        "/simulator/v1/import", content=json.dumps([{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"}])
    )
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "[0].kind"
    r = await client.post("/simulator/v1/import", content="{not: [valid")
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"
    r = await client.post("/simulator/v1/import", params={"mode": "sideways"}, content="{}")
    assert r.status_code == 400 and r.json()["kind"] == "Status"


async def test_an_unknown_kind_is_reported_with_every_other_bad_object(client: httpx.AsyncClient) -> None:
    bad_pod = pod("broken")
    del bad_pod["spec"]["containers"]
    docs = [node("fine"), bad_pod, {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "d"}}]
    text = yaml.safe_dump_all(docs)
    r = await client.post("/simulator/v1/import", content=text, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 422
    fields = {c["field"] for c in r.json()["details"]["causes"]}
    assert fields == {"[1].spec.containers", "[2].kind"}
    assert (await client.get("/api/v1/nodes/fine")).status_code == 404


async def test_reset_restores_the_starting_objects_and_configuration_and_clears_results(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kss.db'}"
    engine = make_engine(url)
    upgrade_database(engine)
    ClusterStore.open(engine).create("Node", node("from-before"))
    engine.dispose()
    app = create_app(Settings(database_url=url, seed=SEED))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kss.test") as c,
    ):
        await c.post("/api/v1/nodes", json=node("added"))
        await c.post("/api/v1/namespaces/default/pods", json=pod("p", cpu="1"))
        await c.delete("/api/v1/nodes/from-before")
        config = yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "percentageOfNodesToScore": 40,
            }
        )
        put = await c.put(
            "/simulator/v1/schedulerconfiguration", content=config, headers={"content-type": "application/yaml"}
        )
        assert put.status_code == 200
        await _wait_idle(app)
        app.state.results.flush()
        assert app.state.results.count() >= 1

        r = await c.post("/simulator/v1/reset")
        assert r.status_code == 200, r.text
        assert _names((await c.get("/api/v1/nodes")).json()["items"]) == {"from-before"}
        assert (await c.get("/api/v1/pods")).json()["items"] == []
        assert "percentageOfNodesToScore" not in (await c.get("/simulator/v1/schedulerconfiguration")).json()
        assert app.state.results.count() == 0


@pytest.mark.parametrize("fmt", ["json", "yaml"])
async def test_operations_service_is_usable_without_http(app: FastAPI, fmt: str) -> None:
    # The web UI calls app.state.operations directly.
    ops = app.state.operations
    ops.import_text(json.dumps({"nodes": [node("svc-node")]}), replace=False)
    text = ops.export(fmt)
    loaded = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert "svc-node" in _names(loaded["nodes"])


async def test_replace_with_a_claim_held_by_its_finalizer_imports_the_snapshot(
    scheduling_app: FastAPI, sclient: httpx.AsyncClient
) -> None:
    """examples/dra exported and imported back with replace (the README's `kss import --snapshot --replace`): the
    allocated, reserved claim's delete protection would keep it marked for deletion until its controller let it go,
    and the snapshot's claim of its name was refused; replace deletes it whole."""
    dra = Path(__file__).resolve().parents[2] / "examples" / "dra"
    text = "\n---\n".join(p.read_text() for p in sorted(dra.glob("*.yaml")))
    assert (await sclient.post("/simulator/v1/import", content=text)).status_code == 200
    await _wait_idle(scheduling_app)
    claims = (await sclient.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims")).json()["items"]
    held = [c for c in claims if (c.get("status") or {}).get("reservedFor")]
    assert held and all(c["metadata"].get("finalizers") for c in held)
    snap = (await sclient.get("/simulator/v1/export")).text
    # Merged first, as the README does: the pod replaced, its claim is marked for deletion before replace deletes.
    assert (await sclient.post("/simulator/v1/import", content=snap)).status_code == 200
    await _wait_idle(scheduling_app)
    r = await sclient.post("/simulator/v1/import", params={"mode": "replace"}, content=snap)
    assert r.status_code == 200, r.text
    await _wait_idle(scheduling_app)
    name = held[0]["metadata"]["name"]
    claim = (await sclient.get(f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{name}")).json()
    assert "deletionTimestamp" not in claim["metadata"]
    # Reserved again for the pod of its name (the pod has the uid the import gave it).
    assert [r["name"] for r in claim["status"]["reservedFor"]] == [r["name"] for r in held[0]["status"]["reservedFor"]]
