"""An imported bound pod's status is written after its create; when another writer changed the pod in between (a
controller, the kubelet), the import's status write must start from the pod as it is now, not from the create's
answer: nothing that writer set is undone, and the write is still the snapshot's status."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_enabled=False, controllers=False, kubelet=False
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


def _written_after_create(store: ClusterStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer touches each pod the moment it is created: an annotation and a status condition."""
    create = store.create

    def create_then_touch(kind: str, obj: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        created = create(kind, obj, *args, **kwargs)
        if kind == "Pod":
            meta = created["metadata"]
            store.patch("Pod", meta["namespace"], meta["name"], {"metadata": {"annotations": {"touched": "yes"}}})
            ready = {"type": "Ready", "status": "False", "reason": "Touched"}
            store.patch(
                "Pod", meta["namespace"], meta["name"], {"status": {"conditions": [ready]}}, subresource="status"
            )
        return created

    monkeypatch.setattr(store, "create", create_then_touch)


async def test_a_status_write_after_another_writer_keeps_what_it_wrote(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = pod("web", cpu="100m", node_name="n1")
    running["status"] = {"phase": "Running", "podIP": "10.0.0.7", "startTime": "2026-01-01T00:00:00Z"}
    snapshot = {"apiVersion": "v1", "kind": "List", "items": [node("n1"), running]}
    _written_after_create(app.state.store, monkeypatch)

    response = await client.post(
        "/simulator/v1/import", content=yaml.safe_dump(snapshot), headers={"Content-Type": "application/yaml"}
    )

    assert response.status_code == 200, response.text
    stored = (await client.get("/api/v1/namespaces/default/pods/web")).json()
    assert stored["metadata"]["annotations"] == {"touched": "yes"}, "the other writer's annotation stays"
    assert stored["status"]["phase"] == "Running" and stored["status"]["podIP"] == "10.0.0.7"
    assert [c["reason"] for c in stored["status"]["conditions"]] == ["Touched"], "fields the snapshot leaves out stay"
