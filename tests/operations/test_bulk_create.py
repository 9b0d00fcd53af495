"""``POST /simulator/v1/import?mode=create``: the bulk create a page of ``kss import`` goes through.

Each object is created on its own with the status it carries (a running pod in one write, which the kubelet leaves
as it is), the answer says for each one its uid or why it was refused, and everything it says it created is
committed by the time it answers.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.db import make_engine
from kss_sim.kube.objects import Obj
from kss_sim.main import create_app
from tests.cluster.factories import node, pod
from tests.operations.conftest import SEED

RUNNING = {
    "phase": "Running",
    "hostIP": "10.0.0.7",
    "podIP": "10.244.3.9",
    "podIPs": [{"ip": "10.244.3.9"}],
    "startTime": "2026-01-02T03:04:05Z",
    "qosClass": "Burstable",
    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:09Z"}],
    "containerStatuses": [
        {
            "name": "c",
            "ready": True,
            "started": True,
            "restartCount": 0,
            "image": "registry.k8s.io/pause:3.10",
            "imageID": "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
            "containerID": "containerd://4f1e",
            "state": {"running": {"startedAt": "2026-01-02T03:04:08Z"}},
        }
    ],
}


def _list(*items: Obj) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}).encode()


async def _bulk(client: httpx.AsyncClient, *items: Obj) -> httpx.Response:
    return await client.post("/simulator/v1/import", params={"mode": "create"}, content=_list(*items))


async def _wait_idle(app: FastAPI) -> None:
    assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)
    assert await asyncio.to_thread(app.state.controllers.wait_idle, 20.0)


async def test_each_object_is_answered_in_order_and_refusals_do_not_stop_the_others(
    scheduling_app: FastAPI, sclient: httpx.AsyncClient
) -> None:
    assert (await sclient.post("/api/v1/nodes", json=node("taken", labels={"v": "old"}))).status_code == 201
    bad = pod("bad")
    bad["spec"]["containers"] = []
    r = await _bulk(
        sclient,
        node("n1", cpu="2"),
        node("taken", labels={"v": "new"}),
        bad,
        {**pod("p-bound", cpu="2", node_name="n1"), "status": RUNNING},
        node("n2", cpu="2"),
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert (answer["created"], answer["failed"]) == (3, 2)
    items = answer["items"]
    assert [(i["kind"], i["name"]) for i in items] == [
        ("Node", "n1"),
        ("Node", "taken"),
        ("Pod", "bad"),
        ("Pod", "p-bound"),
        ("Node", "n2"),
    ]
    n1 = (await sclient.get("/api/v1/nodes/n1")).json()
    assert items[0]["uid"] == n1["metadata"]["uid"]
    assert "uid" not in items[1] and items[1]["status"]["reason"] == "AlreadyExists"
    assert items[1]["status"]["code"] == 409
    assert items[2]["status"]["reason"] == "Invalid" and "spec.containers" in items[2]["status"]["message"]
    assert items[3]["namespace"] == "default" and items[3]["uid"]
    # The existing object was left as it was; the refused one does not exist.
    assert (await sclient.get("/api/v1/nodes/taken")).json()["metadata"]["labels"] == {"v": "old"}
    assert (await sclient.get("/api/v1/namespaces/default/pods/bad")).status_code == 404


async def test_a_running_pod_is_one_write_that_the_kubelet_leaves_alone_and_the_scheduler_counts(
    scheduling_app: FastAPI, sclient: httpx.AsyncClient
) -> None:
    # n1 is full with the imported running pod: the pending one can only go to n2 if the scheduler took the
    # running pod into its cache on n1.
    r = await _bulk(
        sclient,
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        {**pod("p-bound", cpu="2", node_name="n1"), "status": RUNNING},
        {**pod("p-pending", cpu="1"), "status": RUNNING},  # not bound: the status sent means nothing
    )
    assert r.status_code == 200 and r.json()["created"] == 4, r.text
    bound = (await sclient.get("/api/v1/namespaces/default/pods/p-bound")).json()
    assert bound["status"] == RUNNING
    assert bound["spec"]["nodeName"] == "n1"
    await _wait_idle(scheduling_app)
    after = (await sclient.get("/api/v1/namespaces/default/pods/p-bound")).json()
    assert after["metadata"]["resourceVersion"] == bound["metadata"]["resourceVersion"], "nobody rewrote it"
    pending = (await sclient.get("/api/v1/namespaces/default/pods/p-pending")).json()
    assert pending["spec"]["nodeName"] == "n2"
    assert pending["status"]["phase"] == "Running"
    assert pending["status"]["podIP"] != RUNNING["podIP"], "started by the simulated kubelet, not as sent"
    # One write for the create with its status: the watch from before the import sees ADDED, then nothing more.
    events = scheduling_app.state.store.events_since(0)
    bound_events = [e for e in events if e.kind == "Pod" and e.obj["metadata"]["name"] == "p-bound"]
    assert [e.type for e in bound_events] == ["ADDED"]


async def test_what_it_answers_created_is_committed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kss.db'}"
    app = create_app(Settings(database_url=url, seed=SEED, scheduler_enabled=False, controllers=False, kubelet=False))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kss.test") as c,
    ):
        items = [node(f"n{i}") for i in range(20)]
        items += [{**pod(f"p{i}", node_name=f"n{i % 20}", namespace="team"), "status": RUNNING} for i in range(200)]
        r = await _bulk(c, *items)
        assert r.status_code == 200 and r.json()["created"] == 220, r.text
        # Read from the database itself, as a restarted server would: no commit is left to wait for.
        engine = make_engine(url)
        try:
            stored = ClusterStore.open(engine)
            assert len(stored.list("Node")[0]) == 20
            pods = stored.list("Pod", "team")[0]
            assert len(pods) == 200
            assert all(p["status"] == RUNNING for p in pods)
            assert stored.get("Namespace", None, "team") is not None, "the namespace made for them too"
        finally:
            engine.dispose()


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "neither JSON nor YAML"),
        (_list({"metadata": {"name": "x"}}), 422, "has no kind"),
        (json.dumps({"schedulerConfig": {"profiles": []}}).encode(), 400, "objects only"),
    ],
)
async def test_a_document_it_cannot_read_changes_nothing(
    client: httpx.AsyncClient, body: bytes, status: int, message: str
) -> None:
    before = (await client.get("/api/v1/nodes")).json()["items"]
    r = await client.post("/simulator/v1/import", params={"mode": "create"}, content=body)
    assert r.status_code == status, r.text
    assert message in r.json()["message"]
    assert (await client.get("/api/v1/nodes")).json()["items"] == before


async def test_unbind_is_refused_with_mode_create(client: httpx.AsyncClient) -> None:
    r = await client.post("/simulator/v1/import", params={"mode": "create", "unbind": "true"}, content=_list(node("n")))
    assert r.status_code == 400 and "unbind" in r.json()["message"]
    assert (await client.get("/api/v1/nodes/n")).status_code == 404
