"""The FastAPI application: ``create_app(settings)`` wires the database, the cluster store and the routers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.cluster.errors import ApiError, BadRequest, MethodNotAllowed, UnknownResource
from app.cluster.router import error_response
from app.cluster.router import router as cluster_router
from app.cluster.store import ClusterStore
from app.config import Settings
from app.db import make_engine, make_session_factory, session_scope, upgrade_database
from app.operations.auth import BodyLimitMiddleware, TokenAuthMiddleware
from app.operations.metrics import Metrics, RequestMetricsMiddleware
from app.operations.router import IMPORT_PATH, metrics_router
from app.operations.router import router as operations_router
from app.operations.service import OperationsService
from app.results.router import router as results_router
from app.results.service import ResultsService
from app.scheduling.repository import SchedulerConfigRepository
from app.scheduling.service import SchedulerService, load_scheduler_config
from app.web.router import router as web_router

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
        factory = make_session_factory(engine)
        results = ResultsService(
            lambda: session_scope(factory), max_attempts_per_pod=settings.results_max_attempts_per_pod
        )
        results.start()
        app.state.results = results
        scheduler = SchedulerService(
            app.state.store,
            results=results,
            config=load_scheduler_config(settings),
            seed=settings.seed,
            per_node_annotations=settings.results_node_annotations,
            per_node_annotations_max_nodes=settings.results_node_annotations_max_nodes,
            write_annotations=settings.results_annotations,
            on_attempt=metrics.observe_attempt,
            on_plugin=metrics.observe_plugin,
        )
        app.state.scheduler = scheduler
        operations = OperationsService(app.state.store, scheduler, results, settings)
        # What POST /simulator/v1/reset returns to: the cluster as this server started and the configuration
        # it was started with (file or defaults).
        operations.capture_initial()
        app.state.operations = operations
        # A configuration applied at runtime before a restart is still the running one.
        with session_scope(factory) as session:
            saved_config = SchedulerConfigRepository(session).load()
        if saved_config is not None:
            scheduler.update_config(saved_config)
            log.info("scheduler configuration restored from the database")

        def save_config(document: dict[str, Any]) -> None:
            with session_scope(factory) as session:
                SchedulerConfigRepository(session).save(document)

        scheduler.on_config_change = save_config
        if settings.scheduler_enabled:
            scheduler.start()
        try:
            yield
        finally:
            if settings.scheduler_enabled:
                scheduler.stop()
            results.stop()
            # Writes the scheduler queued but has not confirmed yet reach the database before it closes.
            app.state.store.flush()
            engine.dispose()

    app = FastAPI(
        title="kss",
        description="Kubernetes scheduler simulator",
        lifespan=lifespan,
        docs_url="/simulator/docs",
        redoc_url=None,
        # /openapi/* belongs to the Kubernetes API; the simulator's own endpoints are documented here.
        openapi_url="/simulator/v1/openapi.json",
    )
    app.state.settings = settings
    metrics = Metrics()
    app.state.metrics = metrics

    def pending_counts() -> dict[str, int]:
        scheduler = getattr(app.state, "scheduler", None)
        return scheduler.queue.pending_counts() if scheduler is not None else {}

    metrics.watch_queue(pending_counts)
    # Outermost last: metrics see every answer (401 and 413 included), auth runs before any body is read.
    app.add_middleware(
        BodyLimitMiddleware,
        limit=settings.max_body_bytes,
        limit_for=lambda path: settings.import_max_body_bytes if path == IMPORT_PATH else None,
    )
    app.add_middleware(TokenAuthMiddleware, token=settings.api_token)
    app.add_middleware(RequestMetricsMiddleware, metrics=metrics)

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> Response:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in exc.errors())
        return error_response(BadRequest(f"invalid request: {problems}"))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 405:
            return error_response(MethodNotAllowed(_request.method.lower()))
        if exc.status_code == 404:
            return error_response(UnknownResource())
        return error_response(ApiError(str(exc.detail)))

    app.include_router(results_router)
    app.include_router(operations_router)
    app.include_router(metrics_router)
    app.include_router(web_router)
    app.include_router(cluster_router, include_in_schema=False)
    return app
