"""Fixtures of the operations tests: the application with its scheduler running (fixed seed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app

SEED = 7


@pytest.fixture
async def scheduling_app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """The application with the scheduler on and a fixed seed, so placements are reproducible."""
    application = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=SEED))
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def sclient(scheduling_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process HTTP client for the scheduling application."""
    transport = httpx.ASGITransport(app=scheduling_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
        yield c
