"""Fixtures of the web UI tests: the app with the scheduler running, and small object builders."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app

HTMX = {"HX-Request": "true"}


def htmx(target: str) -> dict[str, str]:
    """Headers of an htmx request that swaps the element with id ``target``."""
    return {"HX-Request": "true", "HX-Target": target}


def node(
    name: str, *, cpu: str = "4", memory: str = "32Gi", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A Node with capacity (allocatable defaults to it)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": dict(spec),
        "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod(
    name: str,
    *,
    cpu: str = "500m",
    memory: str = "1Gi",
    namespace: str = "default",
    node_name: str = "",
    priority_class: str = "",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Pod with one container and requests."""
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": spec,
    }


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll until ``predicate()`` is truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.fixture
async def sched_app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """The application with its scheduler running (pods get bound, attempts get recorded)."""
    application = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_enabled=True))
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def sched_client(sched_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process HTTP client for the app with the scheduler."""
    transport = httpx.ASGITransport(app=sched_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
        yield c
