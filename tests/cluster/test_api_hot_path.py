"""The resource URLs' lean path (``kube_app`` behind our own middleware) and its async durability hand-off: a 2xx
still means committed, a failed commit still answers 500 with nothing visible, and the event loop keeps serving
while a commit is under way."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator

import httpx
import pytest
import yaml
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Receive, Scope, Send

from kss_sim.cluster.api.router import resource_route
from kss_sim.cluster.storage.store import ClusterStore, InternalError
from tests.cluster.factories import node, pod
from tests.cluster.test_group_commit import failing_on, first_commit_waits_for
from tests.conftest import API_TOKEN, asgi_client


def count_lean(app: FastAPI) -> list[str]:
    """Record the paths the lean stack serves from now on."""
    served: list[str] = []
    inner = app.kube_stack  # type: ignore[attr-defined]

    async def counting(scope: Scope, receive: Receive, send: Send) -> None:
        served.append(scope["path"])
        await inner(scope, receive, send)

    app.kube_stack = counting  # type: ignore[attr-defined]
    return served


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_which_urls_are_resource_urls() -> None:
    assert resource_route("/api/v1/namespaces/default/pods") == ("", "v1", "namespaces/default/pods")
    assert resource_route("/api/v1/nodes") == ("", "v1", "nodes")
    assert resource_route("/api/v1/") == ("", "v1", "")
    assert resource_route("/apis/apps/v1/deployments") == ("apps", "v1", "deployments")
    assert resource_route("/apis/apps/v1/") == ("apps", "v1", "")
    # Discovery, OpenAPI and the simulator's own URLs are the framework's.
    for path in ("/api", "/api/", "/api/v1", "/api//nodes", "/apis", "/apis/apps", "/apis/apps/v1", "/apis//v1/x"):
        assert resource_route(path) is None, path
    for path in ("/openapi/v3/api/v1", "/simulator/v1/export", "/metrics", "/ui/pods", "/apifoo/v1/x"):
        assert resource_route(path) is None, path


async def test_resource_urls_take_the_lean_path_with_the_same_answers(app: FastAPI, client: httpx.AsyncClient) -> None:
    served = count_lean(app)
    r = await client.post("/api/v1/nodes", json=node("n1"))
    assert r.status_code == 201 and r.json()["metadata"]["name"] == "n1"
    assert (await client.get("/api/v1/nodes/n1")).json()["metadata"]["uid"] == r.json()["metadata"]["uid"]
    missing = await client.get("/api/v1/nodes/nope")
    assert missing.status_code == 404 and missing.json()["kind"] == "Status" and missing.json()["reason"] == "NotFound"
    unknown = await client.get("/apis/example.com/v1/widgets")
    assert unknown.status_code == 404 and unknown.json()["kind"] == "Status"
    bad = await client.post("/api/v1/namespaces/default/pods", content=b"{nope", headers={"content-type": JSON})
    assert bad.status_code == 400 and bad.json()["reason"] == "BadRequest"
    dry = await client.post("/api/v1/namespaces/default/pods", params={"dryRun": "All"}, json=pod("dry"))
    assert dry.status_code == 201
    assert (await client.get("/api/v1/namespaces/default/pods/dry")).status_code == 404
    bad_dry = await client.post("/api/v1/namespaces/default/pods", params={"dryRun": "Some"}, json=pod("dry"))
    assert bad_dry.status_code == 422 and bad_dry.json()["reason"] == "Invalid"  # CreateOptions, as kube-apiserver
    assert len(served) == 8
    # Discovery and the simulator's endpoints stay on the framework's routes; so do methods those URLs do not serve.
    assert (await client.get("/api/v1")).json()["kind"] == "APIResourceList"
    assert (await client.get("/simulator/v1/schedulerconfiguration")).status_code == 200
    options = await client.options("/api/v1/nodes")
    assert options.status_code == 405 and options.json()["kind"] == "Status"
    assert len(served) == 8


async def test_every_write_verb_answers_once_durable(app: FastAPI, client: httpx.AsyncClient) -> None:
    engine = app.state.engine
    assert (await client.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod("p1"))).status_code == 201
    r = await client.patch(
        "/api/v1/nodes/n1",
        json={"metadata": {"labels": {"zone": "a"}}},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert r.status_code == 200
    current = r.json()
    current["metadata"]["labels"]["rack"] = "r1"
    assert (await client.put("/api/v1/nodes/n1", json=current)).status_code == 200
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"}, "target": {"name": "n1"}}
    assert (await client.post("/api/v1/namespaces/default/pods/p1/binding", json=binding)).status_code == 201
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod("p2"))).status_code == 201
    assert (await client.delete("/api/v1/namespaces/default/pods/p2")).status_code == 200
    # Every answer above came after its commit: a store opened afresh on the database has all of it.
    reopened = ClusterStore.open(engine)
    stored_node = reopened.get("Node", None, "n1")
    assert stored_node is not None and stored_node["metadata"]["labels"] == {"zone": "a", "rack": "r1"}
    stored_pod = reopened.get("Pod", "default", "p1")
    assert stored_pod is not None and stored_pod["spec"]["nodeName"] == "n1"
    assert reopened.get("Pod", "default", "p2") is None


async def test_concurrent_creates_share_commits_and_are_all_acknowledged(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Well under the threadpool's 40 workers, each of which holds one create until its commit.
    commits = first_commit_waits_for(monkeypatch, staged_behind=20)
    answers = await asyncio.gather(
        *(client.post("/api/v1/namespaces/default/pods", json=pod(f"c{i}")) for i in range(60))
    )
    assert [a.status_code for a in answers] == [201] * 60
    assert commits[0] < 60, "concurrent creates should share transactions"
    reopened = ClusterStore.open(app.state.engine)
    assert len(reopened.list("Pod", "default")[0]) == 60


async def test_a_failed_commit_answers_500_and_nothing_is_visible(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await client.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    store: ClusterStore = app.state.store
    before_rv = store.resource_version
    entered, release = threading.Event(), threading.Event()
    failing_on(monkeypatch, "doomed", entered=entered, release=release)
    creating = asyncio.create_task(client.post("/api/v1/namespaces/default/pods", json=pod("doomed")))
    assert await asyncio.to_thread(entered.wait, 10)
    # The commit hangs, yet the event loop serves other requests: no thread or loop is blocked on it.
    listed = await client.get("/api/v1/namespaces/default/pods")
    assert listed.status_code == 200 and listed.json()["items"] == []
    assert (await client.get("/api/v1/namespaces/default/pods/doomed")).status_code == 404
    # A write staged on top of the doomed one fails with it.
    patching = asyncio.create_task(
        client.patch(
            "/api/v1/nodes/n1",
            json={"metadata": {"labels": {"late": "yes"}}},
            headers={"content-type": "application/merge-patch+json"},
        )
    )
    for _ in range(500):
        if store._committer._open is not None:
            break
        await asyncio.sleep(0.01)
    assert not creating.done() and not patching.done()
    release.set()
    created, patched = await creating, await patching
    for answer in (created, patched):
        assert answer.status_code == 500
        assert answer.json()["kind"] == "Status" and answer.json()["reason"] == "InternalError"
    assert (await client.get("/api/v1/namespaces/default/pods/doomed")).status_code == 404
    assert "late" not in ((await client.get("/api/v1/nodes/n1")).json()["metadata"].get("labels") or {})
    assert store.resource_version == before_rv
    monkeypatch.undo()
    again = await client.post("/api/v1/namespaces/default/pods", json=pod("doomed"))
    assert again.status_code == 201
    assert int(again.json()["metadata"]["resourceVersion"]) == before_rv + 1


def test_done_callbacks_run_once_when_durable_or_dropped(store: ClusterStore, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    with store.deferred() as nothing:
        pass
    nothing.add_done_callback(lambda: calls.append("empty"))
    assert calls == ["empty"], "nothing staged: called at once"

    with store.deferred() as pending:
        store.create("Node", node("n1"))
    pending.add_done_callback(lambda: calls.append("committed"))
    store.flush()
    assert calls.count("committed") == 1
    pending.wait()
    pending.add_done_callback(lambda: calls.append("late"))
    assert calls[-1] == "late", "already durable: called at once"

    entered, release = threading.Event(), threading.Event()
    failing_on(monkeypatch, "doomed", entered=entered, release=release)
    with store.deferred() as failing:
        store.create("Pod", pod("doomed"))
    assert entered.wait(10)
    failing.add_done_callback(lambda: calls.append("dropped"))
    assert "dropped" not in calls
    release.set()
    store.flush()
    assert calls.count("dropped") == 1
    with pytest.raises(InternalError):
        failing.wait()


JSON = "application/json"


async def test_auth_body_limit_and_metrics_on_the_lean_path(locked: FastAPI) -> None:
    served = count_lean(locked)
    async with asgi_client(locked) as anonymous:
        r = await anonymous.post("/api/v1/nodes", json=node("n1"))
        assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
        assert r.headers["www-authenticate"] == 'Bearer realm="kss"'
    async with asgi_client(locked, Authorization=f"Bearer {API_TOKEN}") as c:
        assert (await c.post("/api/v1/nodes", json=node("n1"))).status_code == 201
        big = await c.post("/api/v1/nodes", content=b"x" * 5000, headers={"content-type": JSON})
        assert big.status_code == 413 and big.json()["reason"] == "RequestEntityTooLarge"

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
            for _ in range(5):
                yield b" " * 1000

        streamed = await c.post("/api/v1/nodes", content=chunks(), headers={"content-type": JSON})
        assert streamed.status_code == 413 and streamed.json()["kind"] == "Status"
        assert (await c.get("/api/v1/nodes/nope")).status_code == 404
        metrics = samples((await c.get("/metrics")).text)
    assert len(served) == 5
    for code, count in (("401", 1), ("201", 1), ("413", 2)):
        assert (
            metrics[("apiserver_request_total", frozenset({("verb", "POST"), ("resource", "nodes"), ("code", code)}))]
            == count
        )
    assert (
        metrics[("apiserver_request_total", frozenset({("verb", "GET"), ("resource", "nodes"), ("code", "404")}))] == 1
    )
    duration = ("apiserver_request_duration_seconds_count", frozenset({("verb", "POST"), ("resource", "nodes")}))
    assert metrics[duration] == 4


async def test_a_json_create_taken_as_parsed_stores_what_a_yaml_create_stores(client: httpx.AsyncClient) -> None:
    """A JSON body is handed to the store uncopied and answered from the stored object (``owned``, ``copy=False``);
    a YAML body is copied first. Same object either way: unknown fields dropped (and warned of), defaults and
    managedFields the same, the answer equal to what a read gives later."""

    def body(name: str) -> dict[str, object]:
        sent = pod(name, cpu="250m", labels={"app": "web"})
        sent["spec"]["nonsense"] = {"deep": [1, 2]}  # type: ignore[index]
        sent["metadata"]["annotations"] = {"note": "x"}  # type: ignore[index]
        return sent

    as_json = await client.post("/api/v1/namespaces/default/pods", json=body("from-json"))
    as_yaml = await client.post(
        "/api/v1/namespaces/default/pods",
        content=yaml.safe_dump(body("from-yaml")),
        headers={"content-type": "application/yaml"},
    )
    assert as_json.status_code == as_yaml.status_code == 201, (as_json.text, as_yaml.text)
    assert as_json.headers.get("warning") == as_yaml.headers.get("warning") is not None

    def comparable(obj: dict[str, object]) -> dict[str, object]:
        text = json.dumps(obj, sort_keys=True).replace("from-json", "NAME").replace("from-yaml", "NAME")
        meta = (out := json.loads(text))["metadata"]
        for volatile in ("uid", "resourceVersion", "creationTimestamp"):
            meta.pop(volatile)
        for entry in meta["managedFields"]:
            entry.pop("time")
        return out  # type: ignore[no-any-return]

    assert comparable(as_json.json()) == comparable(as_yaml.json())
    assert "nonsense" not in as_json.json()["spec"]
    read = await client.get("/api/v1/namespaces/default/pods/from-json")
    assert read.json() == as_json.json()
    # The create is answered with the very JSON the object was stored as (which a read answers with too).
    assert read.content == as_json.content
