"""The FastAPI application: ``create_app(settings)`` wires the database, the cluster store and the routers."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from kss_sim.cluster.api.discovery import router as discovery_router
from kss_sim.cluster.api.responses import error_response
from kss_sim.cluster.api.router import KUBE_METHODS, kube_app, resource_route
from kss_sim.cluster.api.router import router as cluster_router
from kss_sim.cluster.errors import ApiError, BadRequest, MethodNotAllowed, UnknownResource
from kss_sim.cluster.storage.event_expiry import EventExpiry
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.controllers.manager import ControllerManager
from kss_sim.db import make_engine, make_session_factory, session_scope, upgrade_database
from kss_sim.engine_host.memory_census import take_census_periodically
from kss_sim.engine_host.process_host import ProcessView, SchedulerProcess
from kss_sim.engine_host.repository import SchedulerConfigRepository
from kss_sim.engine_host.scheduler_thread import SchedulerService, load_scheduler_config
from kss_sim.engine_host.view import EngineView
from kss_sim.operations.import_export import OperationsService
from kss_sim.operations.router import IMPORT_PATH
from kss_sim.operations.router import router as operations_router
from kss_sim.results.attempts import ResultsService
from kss_sim.results.router import router as results_router
from kss_sim.results.rows import AttemptRetention
from kss_sim.results.runs import RunsService
from kss_sim.scheduler.plugins import load_plugin_modules
from kss_sim.server.auth import BodyLimitMiddleware, TokenAuthMiddleware
from kss_sim.server.gc_policy import reclaim_frozen
from kss_sim.server.metrics import Metrics, RequestMetricsMiddleware
from kss_sim.server.router import metrics_router
from kss_sim.web.dra_routes import router as dra_web_router
from kss_sim.web.page_sources import WebCaches
from kss_sim.web.router import router as web_router
from kss_sim.web.runs_routes import router as runs_web_router

log = logging.getLogger(__name__)


class _Application(FastAPI):
    """FastAPI, with the Kubernetes resource URLs sent to a lean stack: our own middleware (metrics, auth, body
    limit: the very classes the framework's stack has) around ``kube_app``, skipping the framework's routing,
    dependency and exception layers. Those cost ~40 % of the event loop's time per create (issue #9); every
    other URL, and methods the resource routes do not serve, take the normal path."""

    kube_stack: ASGIApp | None = None
    # Resource requests being answered, watches aside (they stay open): the scheduler yields while this is > 0.
    in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self.kube_stack is not None
            and scope["method"] in KUBE_METHODS
            and not scope.get("root_path")
            and resource_route(scope["path"]) is not None
        ):
            scope["app"] = self
            if b"watch=" in scope["query_string"]:
                await self.kube_stack(scope, receive, send)
                return
            self.in_flight += 1
            try:
                await self.kube_stack(scope, receive, send)
            finally:
                self.in_flight -= 1
            return
        await super().__call__(scope, receive, send)

    def api_busy(self) -> bool:
        """Whether resource requests (watches aside) are being answered (read by the scheduler thread)."""
        return self.in_flight > 0


class _Wrapped:
    """Middleware built by a function (``wrap(app)``), so both stacks share one definition."""

    def __init__(self, app: ASGIApp, wrap: Callable[[ASGIApp], ASGIApp]) -> None:
        self.app = wrap(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the application; its lifespan migrates the database and loads the cluster store."""
    settings = settings or Settings()
    # The user's plugin modules, before any configuration (a file's, or the one saved) names their plugins;
    # PluginLoadError names the module that failed.
    load_plugin_modules(settings.plugin_modules)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
        upgrade_database(engine)
        app.state.engine = engine
        app.state.store = ClusterStore.open(
            engine,
            watch_window=settings.watch_window,
            auto_create_namespaces=settings.auto_create_namespaces,
            feature_gates=settings.effective_feature_gates,
            kube_version=settings.version.name,
        )
        log.info("cluster store loaded at resourceVersion %s", app.state.store.resource_version)
        # kube-apiserver's --event-ttl, and a bound on what kss holds in memory
        event_expiry = EventExpiry(app.state.store, settings.event_ttl_seconds, limit=settings.event_limit)
        event_expiry.start()
        factory = make_session_factory(engine)
        # The store's committer inserts the recorded attempts too: one writer for the database file.
        results = ResultsService(
            lambda: session_scope(factory),
            retention=AttemptRetention(
                settings.results_max_attempts_per_pod or None, settings.results_first_attempts_kept
            ),
            shared_commit=app.state.store,
            kube_version=settings.version.name,
        )
        results.start()
        app.state.results = results
        # Replay runs recorded into this database (kss replay --record-db), for the Runs and Compare pages.
        app.state.runs = RunsService(lambda: session_scope(factory))
        scheduler: SchedulerService | SchedulerProcess
        if settings.scheduler_process:
            # The scheduler beside the API process, as kube-scheduler runs beside kube-apiserver (the store still
            # commits everything; kss_sim/engine_host/process_host.py).
            scheduler = SchedulerProcess(
                app.state.store,
                settings,
                results=results,
                on_attempt=metrics.observe_attempt_parts,
                on_shadow=metrics.observe_shadow,
                on_plugin=metrics.observe_plugin,
                on_plugin_timeout=metrics.observe_plugin_timeout,
            )
            app.state.scheduler_view = ProcessView(scheduler)
            results.before_flush = scheduler.flush_rows
        else:
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
                plugin_timeout=settings.plugin_timeout,
                on_plugin_timeout=metrics.observe_plugin_timeout,
                plugin_metrics_sample_percent=settings.plugin_metrics_sample_percent,
                api_busy=app.api_busy if isinstance(app, _Application) else None,
                on_idle=reclaim_frozen,
                feature_gates=settings.effective_feature_gates,
                kube_version=settings.version,
                shadow=settings.shadow,
                on_shadow=metrics.observe_shadow,
            )
            # The web pages read the scheduler through this port (plain view data, none of the engine's internals).
            app.state.scheduler_view = EngineView(scheduler)
        app.state.scheduler = scheduler
        # The pages' pod rows, built now rather than by the first page (about a second at 50,000 pods).
        web_caches = app.state.web_caches = WebCaches.over(app.state.scheduler_view)
        stop_warming = threading.Event()
        threading.Thread(
            target=web_caches.pod_index.keep_warm,
            args=(lambda: app.state.store, stop_warming),
            name="web-pod-index",
            daemon=True,
        ).start()
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
        else:
            # No cycles of its own: its cache kept current to record (and, --shadow, judge) other schedulers'
            # bindings.
            scheduler.observe()
        # What kube-controller-manager (and scheduler-plugins' controller) keep current on a real cluster.
        controllers = ControllerManager(
            app.state.store,
            controllers=settings.controllers,
            kubelet=settings.kubelet,
            node_monitor_grace_period=settings.node_monitor_grace_period,
            terminated_pod_gc_threshold=settings.terminated_pod_gc_threshold,
            pod_gc_quarantine=settings.pod_gc_quarantine,
            hpa_sync_period=settings.horizontal_pod_autoscaler_sync_period,
            hpa_downscale_stabilization=settings.horizontal_pod_autoscaler_downscale_stabilization,
        )
        app.state.controllers = controllers
        controllers.start()
        stop_census = threading.Event()
        if settings.api_memory_census is not None:
            store, link = app.state.store, scheduler if isinstance(scheduler, SchedulerProcess) else None

            def memory_counts() -> dict[str, int]:
                counts: dict[str, int] = store.memory_counts()
                counts.update(results.memory_counts())
                counts.update(controllers.memory_counts())
                counts.update(link.memory_counts() if link is not None else {})
                return counts

            take_census_periodically(
                str(settings.api_memory_census), stop_census, process="api", counts=memory_counts, frozen=True
            )
        try:
            yield
        finally:
            stop_warming.set()
            stop_census.set()
            controllers.stop()
            event_expiry.stop()
            scheduler.stop()
            results.stop()
            # Writes the scheduler queued but has not confirmed yet reach the database before it closes.
            app.state.store.flush()
            engine.dispose()

    app = _Application(
        title="kss",
        description="Kubernetes scheduler simulator",
        lifespan=lifespan,
        docs_url="/simulator/docs",
        redoc_url=None,
        # /openapi/* belongs to the Kubernetes API; the simulator's own endpoints are documented here.
        openapi_url="/simulator/v1/openapi.json",
    )
    app.state.settings = settings
    metrics = Metrics(settings.version.version_info())
    app.state.metrics = metrics

    def pending_counts() -> dict[str, int]:
        scheduler = getattr(app.state, "scheduler", None)
        return scheduler.queue.pending_counts() if scheduler is not None else {}

    metrics.watch_queue(pending_counts)

    def waiting_count() -> int:
        scheduler = getattr(app.state, "scheduler", None)
        return len(scheduler.waiting_pods) if scheduler is not None else 0

    metrics.watch_waiting(waiting_count)

    # Outermost last: metrics see every answer (401 and 413 included), auth runs before any body is read.
    # The framework's stack and the resource URLs' lean one get the same three, in the same order.
    def own_middleware(inner: ASGIApp) -> ASGIApp:
        limited = BodyLimitMiddleware(
            inner,
            limit=settings.max_body_bytes,
            limit_for=lambda path: settings.import_max_body_bytes if path == IMPORT_PATH else None,
        )
        return RequestMetricsMiddleware(TokenAuthMiddleware(limited, token=settings.api_token), metrics=metrics)

    app.add_middleware(_Wrapped, wrap=own_middleware)
    app.kube_stack = own_middleware(kube_app)

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
    app.include_router(dra_web_router)
    app.include_router(runs_web_router)
    app.include_router(discovery_router, include_in_schema=False)
    app.include_router(cluster_router, include_in_schema=False)
    return app
