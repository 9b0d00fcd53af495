"""Operations over HTTP: export, import, reset, the scheduler configuration and the pods waiting in Permit."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
import yaml
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from kss_sim.cluster.errors import BadRequest, Invalid, UnsupportedMediaType
from kss_sim.engine_host.control import SchedulerControl
from kss_sim.engine_host.view import EngineView
from kss_sim.kube import go_yaml
from kss_sim.operations.import_export import OperationsService, scheduler_config_causes
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError
from kss_sim.scheduler.plugins import PluginLoadError
from kss_sim.state import state_accessor

router = APIRouter(prefix="/simulator/v1", tags=["operations"])

IMPORT_PATH = "/simulator/v1/import"
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")


_operations = state_accessor("operations", OperationsService)
_scheduler = state_accessor("scheduler", SchedulerControl)  # type: ignore[type-abstract]
_scheduler_view = state_accessor("scheduler_view", EngineView)


def _wants_yaml(request: Request, fmt: str | None) -> bool:
    if fmt is not None:
        return fmt == "yaml"
    accept = request.headers.get("accept", "")
    return any(t in accept for t in YAML_TYPES)


def _encode(body: Any, as_yaml: bool) -> Response:
    if as_yaml:
        return Response(yaml.safe_dump(body, sort_keys=False), media_type="application/yaml")
    return Response(orjson.dumps(body), media_type="application/json")


async def _text(request: Request) -> str:
    body = await request.body()
    if not body.strip():
        raise BadRequest("the request body is empty")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request body is not UTF-8 text") from None


async def _no_body(request: Request, what: str) -> None:
    """``BadRequest`` unless the request's body is empty or an empty JSON object."""
    body = await request.body()
    if not body.strip():
        return
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"{what} takes no body (the options are query parameters): json parse error: {exc}") from None
    if parsed != {}:
        raise BadRequest(f"{what} takes no body (the options are query parameters)")


@router.get("/export")
async def export(request: Request, format: Annotated[Literal["json", "yaml"] | None, Query()] = None) -> Response:
    """The whole virtual cluster and the scheduler configuration (kube-scheduler-simulator's snapshot shape)."""
    as_yaml = _wants_yaml(request, format)
    text = await run_in_threadpool(_operations(request).export, "yaml" if as_yaml else "json")
    return Response(text, media_type="application/yaml" if as_yaml else "application/json")


@router.post("/import")
async def import_snapshot(
    request: Request,
    mode: Annotated[Literal["merge", "replace", "create"], Query()] = "merge",
    unbind: Annotated[bool, Query()] = False,
) -> Response:
    """Load a snapshot, a multi-document kubectl YAML file or a List (JSON or YAML).

    ``mode=replace`` first deletes everything that is not built-in; ``unbind=true`` clears pods' nodes so
    the scheduler places them again. A bad document changes nothing: 422 names every bad object.
    ``mode=create`` (a page of ``kss import``) creates each object on its own, with the status it carries,
    and answers for each one its uid or why it was refused (``AlreadyExists`` included); the others go on.
    """
    text = await _text(request)
    service = _operations(request)
    if mode == "create":
        if unbind:
            raise BadRequest("unbind applies to mode=merge and mode=replace")
        answer = await run_in_threadpool(service.create_objects, text)
        return _encode(answer, False)
    report = await run_in_threadpool(lambda: service.import_text(text, replace=mode == "replace", unbind=unbind))
    return _encode(report, False)


@router.post("/reset")
async def reset(
    request: Request,
    to: Annotated[
        Literal["start", "empty"],
        Query(
            description="`start`: the objects the server had when it started (after a restart: at that restart); "
            "`empty`: no objects but the built-in namespaces and priority classes. The scheduler configuration "
            "goes back to the one the server started with either way."
        ),
    ] = "start",
) -> Response:
    """Back to the objects and scheduler configuration the simulator started with, or to an empty cluster;
    results cleared. The request carries no body (an empty JSON object is accepted too): anything else is
    refused (400) before anything is reset, so a garbled request never wipes the cluster."""
    await _no_body(request, "POST /simulator/v1/reset")
    service = _operations(request)
    report = await run_in_threadpool(lambda: service.reset(empty=to == "empty"))
    return _encode(report, False)


@router.get("/schedulerconfiguration")
async def get_scheduler_configuration(
    request: Request,
    defaulted: Annotated[
        bool,
        Query(
            description="kube-scheduler's defaulted form (what `--write-config-to` prints: default plugins merged, "
            "every plugin's args) instead of the document as it was given"
        ),
    ] = False,
) -> Response:
    """The running KubeSchedulerConfiguration (JSON, or YAML with ``Accept: application/yaml``)."""
    scheduler = _scheduler(request)
    document = scheduler.defaulted_config_document() if defaulted else scheduler.config_document()
    return _encode(document, _wants_yaml(request, None))


@router.put("/schedulerconfiguration")
async def put_scheduler_configuration(request: Request) -> Response:
    """Replace the configuration from the next scheduling cycle on; an invalid one is refused (422, field named).

    The plugin modules (``--plugin-module``) are imported again first; one that fails to is refused (400).
    """
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in ("", "application/json", *YAML_TYPES):
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format ({content_type}) - accepted media types include: "
            "application/json, application/yaml"
        )
    text = await _text(request)
    try:
        source: Any = go_yaml.load(text)
    except yaml.YAMLError as exc:
        raise BadRequest(f"the configuration is neither JSON nor YAML: {exc}") from None
    except RecursionError:  # PyYAML's constructor recurses once per level of nesting
        raise BadRequest("the configuration nests too deep: exceeded max depth") from None
    if not isinstance(source, dict):
        raise BadRequest("the configuration must be a KubeSchedulerConfiguration object")
    scheduler = _scheduler(request)
    try:
        # The user's plugin modules again, so an edited file is what this configuration runs.
        await run_in_threadpool(scheduler.reload_plugin_modules)
    except PluginLoadError as exc:
        raise BadRequest(f"{exc}; the running configuration is kept") from None
    try:
        await run_in_threadpool(scheduler.update_config, source)
    except ConfigError as exc:
        raise Invalid("KubeSchedulerConfiguration", "", scheduler_config_causes(exc)) from None
    return _encode(scheduler.config_document(), _wants_yaml(request, None))


@router.get("/waitingpods")
async def waiting_pods(request: Request) -> Response:
    """The pods waiting in Permit now, oldest first: the node each holds, the plugins that have not allowed it yet,
    how long it has waited and the seconds left until the earliest of those plugins' timeouts."""
    items = [
        {
            "pod": row.pod,
            "node": row.node,
            "pendingPlugins": list(row.pending_plugins),
            "waitingSeconds": row.waiting_seconds,
            "remainingSeconds": row.remaining_seconds,
        }
        for row in _scheduler_view(request).waiting_pods()
    ]
    return _encode({"items": items}, False)
