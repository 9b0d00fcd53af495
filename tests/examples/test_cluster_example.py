"""examples/cluster/, the README's first kubectl example: every pod placed as its comments say, train-big pending for
GPUs; and the README's commands name only files the repository ships (the shared trace files and golden corpus
named as optional)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "examples" / "cluster"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    application: FastAPI = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=1))
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


async def _pods_settled(client: httpx.AsyncClient) -> dict[str, dict[str, object]]:
    """The demo pods once every one but train-big is bound and train-big has been tried."""
    pods: dict[str, dict[str, object]] = {}
    for _ in range(300):
        items = (await client.get("/api/v1/namespaces/demo/pods")).json()["items"]
        pods = {p["metadata"]["name"]: p for p in items}
        big = pods.get("train-big", {})
        conditions = (big.get("status") or {}).get("conditions") or []  # type: ignore[union-attr]
        tried = any(c.get("reason") == "Unschedulable" for c in conditions)
        bound = [name for name, p in pods.items() if p["spec"].get("nodeName")]
        if len(pods) == 14 and len(bound) == 13 and tried:
            return pods
        await asyncio.sleep(0.05)
    raise AssertionError(f"pods not settled: {sorted(pods)}")


async def test_the_example_cluster_places_every_pod_but_train_big(client: httpx.AsyncClient) -> None:
    for name in ("nodes.yaml", "pods.yaml"):
        answer = await client.post(
            "/simulator/v1/import", content=(CLUSTER / name).read_bytes(), headers={"Content-Type": "application/yaml"}
        )
        assert answer.status_code == 200, answer.text
    pods = await _pods_settled(client)
    node_of = {name: p["spec"].get("nodeName") for name, p in pods.items()}  # type: ignore[union-attr]
    # Training pods tolerate the GPU nodes' taint and ask for GPUs: only the GPU nodes have them.
    assert {node_of[f"train-{i}"] for i in range(3)} <= {"gpu-1", "gpu-2"}
    # Everything else stays off the tainted GPU nodes; the six web pods spread two to a zone.
    others = [name for name in node_of if not name.startswith("train")]
    assert {node_of[name] for name in others} <= {"cpu-1", "cpu-2", "cpu-3"}
    web_nodes = sorted(str(node_of[f"web-{i}"]) for i in range(6))
    assert web_nodes == ["cpu-1", "cpu-1", "cpu-2", "cpu-2", "cpu-3", "cpu-3"]
    # train-big asks for 8 GPUs, more than any node has: pending, and the condition says so.
    assert node_of["train-big"] is None
    conditions = pods["train-big"]["status"]["conditions"]  # type: ignore[index]
    message = next(c["message"] for c in conditions if c.get("reason") == "Unschedulable")
    assert "Insufficient nvidia.com/gpu" in message


def test_the_readme_runs_from_the_clone() -> None:
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.DOTALL)
    named = {path for block in blocks for path in re.findall(r"(?<![\w./-])((?:examples|tests)/[\w./*-]+)", block)}
    assert named, "the README's commands name no file of the repository"
    missing = [path for path in sorted(named) if not list(REPO.glob(path.rstrip("/")))]
    assert missing == []
    # A command reading the shared files outside the clone says it is optional.
    for block in blocks:
        for line in block.splitlines():
            if "../shared" in line:
                assert "optional" in line, line
