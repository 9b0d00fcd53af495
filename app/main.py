"""The FastAPI application: ``create_app(settings)`` wires the database, the cluster store and the routers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.cluster.errors import ApiError, MethodNotAllowed, UnknownResource
from app.cluster.router import error_response
from app.cluster.router import router as cluster_router
from app.cluster.store import ClusterStore
from app.config import Settings
from app.db import make_engine, upgrade_database

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the application; its lifespan migrates the database and loads the cluster store."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
        upgrade_database(engine)
        app.state.engine = engine
        app.state.store = ClusterStore.open(
            engine,
            watch_window=settings.watch_window,
            auto_create_namespaces=settings.auto_create_namespaces,
        )
        log.info("cluster store loaded at resourceVersion %s", app.state.store.resource_version)
        try:
            yield
        finally:
            engine.dispose()

    app = FastAPI(
        title="kss",
        description="Kubernetes scheduler simulator",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # /openapi/* belongs to the Kubernetes API (answered 404 so kubectl falls back)
    )
    app.state.settings = settings

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> Response:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 405:
            return error_response(MethodNotAllowed(_request.method.lower()))
        if exc.status_code == 404:
            return error_response(UnknownResource())
        return error_response(ApiError(str(exc.detail)))

    app.include_router(cluster_router)
    return app
