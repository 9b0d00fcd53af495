"""The UI's server-sent events: batches per kind, resumable by resourceVersion, 410 tells the page to reload."""

from __future__ import annotations

import json

import httpx
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from tests.web.conftest import node, pod


def records(text: str) -> list[dict[str, str]]:
    """Parse an SSE body into records (field -> value), skipping comments."""
    out = []
    for block in text.strip().split("\n\n"):
        record: dict[str, str] = {}
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            field, _, value = line.partition(": ")
            record[field] = record.get(field, "") + value
        out.append(record)
    return out


async def test_events_replay_changes_after_the_resource_version_one_message_per_kind(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store: ClusterStore = app.state.store
    start = store.resource_version
    store.create("Node", node("n1"))
    store.create("Pod", pod("a", node_name="n1"))
    store.create("Pod", pod("b"))
    store.create_event({"kind": "Pod", "metadata": {"name": "a", "namespace": "default"}}, "Note", "ignored")
    response = await client.get("/ui/events", params={"resourceVersion": start, "timeoutSeconds": 0})
    assert response.headers["content-type"].startswith("text/event-stream")
    got = records(response.text)
    assert got[0] == {"retry": "2000"}
    kinds = {r["event"]: json.loads(r["data"]) for r in got if "event" in r}
    assert set(kinds) == {"node", "pod"}  # Events are not streamed
    assert kinds["pod"]["keys"] == ["default/a", "default/b"] and kinds["pod"]["nodes"] == ["n1"]
    assert kinds["node"]["keys"] == ["n1"]
    # The id comes last, after the whole batch, and is the store's resourceVersion.
    assert got[-1] == {"id": str(store.resource_version)}


async def test_last_event_id_takes_precedence_over_the_page_version(app: FastAPI, client: httpx.AsyncClient) -> None:
    store: ClusterStore = app.state.store
    start = store.resource_version
    store.create("Pod", pod("first"))
    seen = store.resource_version
    store.create("Pod", pod("second"))
    response = await client.get(
        "/ui/events", params={"resourceVersion": start, "timeoutSeconds": 0}, headers={"Last-Event-ID": str(seen)}
    )
    data = [json.loads(r["data"]) for r in records(response.text) if r.get("event") == "pod"]
    assert [d["keys"] for d in data] == [["default/second"]]


async def test_a_compacted_resource_version_gets_expired_so_the_page_reloads(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store: ClusterStore = app.state.store
    start = store.resource_version
    store.create("Pod", pod("gone"))
    store.compact()
    response = await client.get("/ui/events", params={"resourceVersion": start, "timeoutSeconds": 0})
    expired = [r for r in records(response.text) if r.get("event") == "expired"]
    assert len(expired) == 1
    assert "too old resource version" in json.loads(expired[0]["data"])["message"]
    assert expired[0]["id"] == str(store.resource_version)


async def test_no_changes_no_messages(app: FastAPI, client: httpx.AsyncClient) -> None:
    store: ClusterStore = app.state.store
    response = await client.get("/ui/events", params={"resourceVersion": store.resource_version, "timeoutSeconds": 0})
    assert records(response.text) == [{"retry": "2000"}]


def test_web_ports_match_the_real_services(app: FastAPI) -> None:
    """kss_sim.web types the services structurally (it may not import them); the real ones must fit."""
    import inspect

    from kss_sim.web import ports

    pairs = [
        (ports.Store, app.state.store),
        (ports.Results, app.state.results),
        (ports.SchedulerView, app.state.scheduler_view),
        (ports.Operations, app.state.operations),
    ]
    for protocol, instance in pairs:
        for name, member in vars(protocol).items():
            if name.startswith("_"):
                continue
            assert hasattr(instance, name), (protocol.__name__, name)
            if inspect.isfunction(member):
                wanted = [p for p in inspect.signature(member).parameters if p != "self"]
                have = inspect.signature(getattr(instance, name)).parameters
                assert all(p in have for p in wanted), (protocol.__name__, name, wanted, list(have))
