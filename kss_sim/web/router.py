"""HTML routes of the web UI under ``/ui``: thin handlers that render view models from ``WebService``.

One route serves a whole page, or, for an htmx request, only the fragment named by ``HX-Target`` (the
partial the page itself includes, so there is one source of truth). A history restore asks for the whole page.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from kss_sim.cluster.errors import ApiError
from kss_sim.cluster.kinds.registry import BY_KIND
from kss_sim.package_data import STATIC_DIR
from kss_sim.web import sse
from kss_sim.web.ports import ShadowJudgements
from kss_sim.web.rendering import base_context, hx_target, is_htmx, not_found, render, web
from kss_sim.web.views import editor
from kss_sim.web.views.cluster import NODE_SORTS, NODE_STATES, cluster_view
from kss_sim.web.views.dra import node_devices
from kss_sim.web.views.editor import TEMPLATES, EditOutcome, Target
from kss_sim.web.views.events import events_for
from kss_sim.web.views.gangs import GROUP_KINDS
from kss_sim.web.views.groups import group_page, groups_view
from kss_sim.web.views.node import node_view, report_ready
from kss_sim.web.views.objects import objects_view
from kss_sim.web.views.pod import pod_view
from kss_sim.web.views.pods import POD_SORTS, POD_STATES, PodsQuery, pods_view
from kss_sim.web.views.scheduler import apply_config, config_in_effect, config_yaml
from kss_sim.web.views.shadow import shadow_view

router = APIRouter(include_in_schema=False)


# ---------------------------------------------------------------------------------------------- static, root


@router.get("/")
def root() -> RedirectResponse:
    """The UI's front page."""
    return RedirectResponse("/ui/cluster", status_code=307)


@router.get("/ui")
@router.get("/ui/")
def ui_root() -> RedirectResponse:
    """The UI's front page."""
    return RedirectResponse("/ui/cluster", status_code=307)


@router.get("/ui/static/{path:path}")
def static(path: str) -> Response:
    """Hand-written CSS/JS and the pinned htmx files (no CDN)."""
    file = (STATIC_DIR / path).resolve()
    if not file.is_relative_to(STATIC_DIR) or not file.is_file():
        return Response("not found", status_code=404, media_type="text/plain")
    # Vendored files carry their version in the name; our own are fetched with ?v=<hash>.
    return FileResponse(file, headers={"Cache-Control": "public, max-age=86400"})


# ---------------------------------------------------------------------------------------------- cluster


@router.get("/ui/cluster")
def cluster_page(
    request: Request,
    q: str = "",
    page: Annotated[int, Query(ge=1)] = 1,
    sort: str = "name",
    resource: str = "cpu",
    state: str = "",
    band: str = "",
) -> HTMLResponse:
    """Every node at a glance (coloured by one resource), then one page of them with their allocation."""
    service = web(request)
    view = cluster_view(service, q=q.strip(), page=page, sort=sort, resource=resource, state=state, band=band)
    params = {
        "q": view.q,
        "resource": view.resource if view.resource != "cpu" else "",
        "state": view.state,
        "band": view.overview.band,
        "sort": view.sort if view.sort != "name" else "",
        "page": view.nodes.page,
    }
    ctx = {
        **base_context(request, service, view.resource_version, "cluster"),
        "view": view,
        "sorts": NODE_SORTS,
        "states": NODE_STATES,
        "params": params,
    }
    if hx_target(request) == "cluster-body":
        return render("components/cluster_body.html", **ctx)
    return render("pages/cluster.html", **ctx)


@router.get("/ui/nodes/{name}")
def node_page(request: Request, name: str) -> HTMLResponse:
    """One node: allocation, labels, taints, conditions, images and its pods."""
    return _node_response(request, name)


@router.post("/ui/nodes/{name}/ready")
def node_report(request: Request, name: str, report: Annotated[str, Form()] = "") -> Response:
    """Fail or heal the node as ``kss node fail|heal`` does (its Ready condition as its kubelet would report it),
    then show it: for htmx its body, else back to its page; what went wrong is said on it, nothing changed."""
    error = report_ready(web(request), name, report)
    if not error and not is_htmx(request):
        return RedirectResponse(f"/ui/nodes/{name}", status_code=303)
    return _node_response(request, name, error=error)


def _node_response(request: Request, name: str, *, error: str = "") -> HTMLResponse:
    service = web(request)
    rv = service.store.resource_version
    found = node_view(service, name)
    if found is None:
        return not_found(request, service, f'node "{name}"')
    node, pods = found
    events = events_for(service.store, "Node", None, name)
    # Pods reserving this node while they wait in Permit (counted in its allocation, not bound yet).
    held = [w for w in service.scheduler.waiting_pods() if w.node == name]
    devices = node_devices(service.store, node.obj)  # from ResourceSlices (DRA), with the claims holding them
    ctx = {
        **base_context(request, service, rv, "cluster"),
        **{"node": node, "pods": pods, "events": events, "held": held, "devices": devices, "report_error": error},
    }
    if hx_target(request) == "node-body":
        return render("components/node_body.html", **ctx)  # htmx swaps 2xx answers only
    return render("pages/node.html", 422 if error else 200, **ctx)


# ---------------------------------------------------------------------------------------------- pods


@router.get("/ui/pods")
def pods_page(request: Request, query: Annotated[PodsQuery, Depends()]) -> HTMLResponse:
    """Pods with phase, node, priority, attempts and the pending reason; search, filters, sort, paging."""
    service = web(request)
    view = pods_view(service, query)
    params = {
        "q": view.q,
        "state": view.state if view.state != "all" else "",
        "node": view.node,
        "namespace": view.namespace,
        "sort": view.sort if view.sort != "state" else "",
        "desc": "true" if view.desc else "",
        "page": view.pods.page,
    }
    ctx = {
        **base_context(request, service, view.resource_version, "pods"),
        "view": view,
        "params": params,
        "sorts": POD_SORTS,
        "states": POD_STATES,
    }
    if hx_target(request) == "pod-table":
        return render("components/pod_table.html", **ctx)
    return render("pages/pods.html", **ctx)


@router.get("/ui/pods/{namespace}/{name}")
def pod_page(
    request: Request,
    namespace: str,
    name: str,
    attempt: Annotated[int | None, Query(ge=1)] = None,
    fpage: Annotated[int, Query(ge=1)] = 1,
    fsort: str = "failing",
    fnode: str = "",
    fplugin: str = "",
    spage: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:
    """One pod: YAML, attempts timeline, and the chosen attempt's filter matrix, scores and statuses."""
    service = web(request)
    detail = pod_view(
        service,
        namespace,
        name,
        attempt=attempt,
        fpage=fpage,
        fsort=fsort,
        fnode=fnode.strip(),
        fplugin=fplugin,
        spage=spage,
    )
    if detail is None:
        return not_found(request, service, f'pod "{namespace}/{name}"')
    chosen = detail.attempt.number if detail.attempt is not None else None
    params = {
        "attempt": attempt,
        "fpage": fpage,
        "fsort": fsort if fsort != "failing" else "",
        "fnode": fnode.strip(),
        "fplugin": fplugin,
        "spage": spage,
    }
    ctx = {
        **base_context(request, service, detail.resource_version, "pods"),
        "pod": detail,
        "params": params,
        "chosen": chosen,
        "base_url": f"/ui/pods/{namespace}/{name}",
    }
    target = hx_target(request)
    if target == "pod-live":
        return render("components/pod_live.html", **ctx)
    if target == "matrices" and detail.attempt is not None:
        return render("components/matrices.html", **ctx)
    if target == "attempt" and detail.attempt is not None:
        return render("components/attempt.html", **ctx)
    return render("pages/pod.html", **ctx)


# ---------------------------------------------------------------------------------------------- gangs


@router.get("/ui/groups")
def groups_page(request: Request, page: Annotated[int, Query(ge=1)] = 1) -> HTMLResponse:
    """Every PodGroup and Workload gang: quorum, members bound / waiting in Permit / pending, state in words."""
    service = web(request)
    view = groups_view(service, minor=request.app.state.settings.version.minor, page=page)
    ctx = {**base_context(request, service, view.resource_version, "groups"), "view": view, "params": {"page": page}}
    if hx_target(request) == "groups-body":
        return render("components/groups_body.html", **ctx)
    return render("pages/groups.html", **ctx)


@router.get("/ui/shadow")
def shadow_page(request: Request, everything: Annotated[bool, Query(alias="all")] = False) -> HTMLResponse:
    """Pods another scheduler bound where kss's own scheduler would have chosen another node (``all``: every
    judgement), with kss's filter and score rows of both nodes."""
    service = web(request)
    judgements: ShadowJudgements = request.app.state.results
    view = shadow_view(judgements, everything=everything, enabled=request.app.state.settings.shadow)
    ctx = {**base_context(request, service, service.store.resource_version, "shadow"), "view": view}
    if hx_target(request) == "shadow-body":
        return render("components/shadow_body.html", **ctx)
    return render("pages/shadow.html", **ctx)


@router.get("/ui/groups/{namespace}/{kind}/{name}")
def group_detail_page(
    request: Request,
    namespace: str,
    kind: str,
    name: str,
    pod_group: Annotated[str, Query(alias="podGroup")] = "",
    replica_key: Annotated[str | None, Query(alias="replicaKey")] = None,
    page: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:
    """One gang (a Workload: each of its gangs): members with their state and last attempt, and why it did not fit."""
    service = web(request)
    detail = group_page(
        service,
        namespace,
        kind,
        name,
        minor=request.app.state.settings.version.minor,
        pod_group=pod_group,
        replica_key=replica_key,
        page=page,
    )
    if detail is None:
        return not_found(request, service, f'{kind} "{namespace}/{name}"')
    params = {"podGroup": pod_group, "replicaKey": replica_key, "page": page}
    ctx = {
        **base_context(request, service, detail.resource_version, "groups"),
        "group": detail,
        "params": params,
        "base_url": f"/ui/groups/{namespace}/{kind}/{name}",
    }
    if hx_target(request) == "group-body":
        return render("components/group_body.html", **ctx)
    return render("pages/group.html", **ctx)


# ---------------------------------------------------------------------------------------------- objects


def _kind_or_default(kind: str) -> str:
    return kind if kind in BY_KIND else "Node"


def _object_url(outcome: EditOutcome) -> str:
    if outcome.kind == "Pod":
        return f"/ui/pods/{outcome.namespace}/{outcome.name}"
    if outcome.kind == "Node":
        return f"/ui/nodes/{outcome.name}"
    if outcome.kind in GROUP_KINDS:
        return f"/ui/groups/{outcome.namespace}/{outcome.kind}/{outcome.name}"
    return f"/ui/objects?kind={outcome.kind}"


@router.get("/ui/objects")
def objects_page(
    request: Request, kind: str = "Node", q: str = "", page: Annotated[int, Query(ge=1)] = 1
) -> HTMLResponse:
    """Objects of any kind the cluster serves, with edit and delete."""
    service = web(request)
    kind = _kind_or_default(kind)
    rv = service.store.resource_version
    objects = objects_view(service.store, kind, q=q, page=page)
    ctx = {
        **base_context(request, service, rv, "objects"),
        "kind": kind,
        "info": BY_KIND[kind],
        "objects": objects,
        "q": q,
        "params": {"kind": kind, "q": q, "page": objects.page},
    }
    if hx_target(request) == "object-table":
        return render("components/object_table.html", **ctx)
    return render("pages/objects.html", **ctx)


@router.get("/ui/new")
def new_page(request: Request, kind: str = "Pod") -> HTMLResponse:
    """The YAML editor, filled with a template of the chosen kind."""
    service = web(request)
    kind = _kind_or_default(kind)
    ctx = {
        **base_context(request, service, service.store.resource_version, "new"),
        "kind": kind,
        "text": editor.starter(kind),
        "target": None,
        "outcome": None,
        "templates": TEMPLATES,
    }
    if hx_target(request) == "editor":
        return render("components/editor.html", **ctx)
    return render("pages/editor.html", **ctx)


@router.get("/ui/edit/{kind}/{name}")
def edit_page(request: Request, kind: str, name: str, namespace: str = "") -> HTMLResponse:
    """The YAML editor on an existing object (its resourceVersion guards against lost updates)."""
    service = web(request)
    if kind not in BY_KIND:
        return not_found(request, service, f"kind {kind}")
    text = editor.object_yaml(service.store, kind, namespace, name)
    if text is None:
        return not_found(request, service, f'{kind} "{namespace + "/" if namespace else ""}{name}"')
    target = Target(kind, namespace if BY_KIND[kind].namespaced else "", name)
    ctx = {
        **base_context(request, service, service.store.resource_version, "new"),
        "kind": kind,
        "text": text,
        "target": target,
        "outcome": None,
        "templates": TEMPLATES,
    }
    return render("pages/editor.html", **ctx)


@router.post("/ui/objects")
def save_object(
    request: Request,
    yaml_text: Annotated[str, Form(alias="yaml")] = "",
    target_kind: Annotated[str, Form()] = "",
    target_namespace: Annotated[str, Form()] = "",
    target_name: Annotated[str, Form()] = "",
) -> Response:
    """Create (or, with a target, replace) the object in the editor; errors come back inline, nothing saved."""
    service = web(request)
    target = Target(target_kind, target_namespace, target_name) if target_kind and target_name else None
    outcome = editor.save_yaml(service.store, yaml_text, target=target)
    if outcome.ok:
        url = _object_url(outcome)
        if is_htmx(request):
            return Response(status_code=200, headers={"HX-Redirect": url})
        return RedirectResponse(url, status_code=303)
    kind = target.kind if target else _kind_or_default(outcome.kind)
    ctx = {
        **base_context(request, service, service.store.resource_version, "new"),
        "kind": kind,
        "text": yaml_text,
        "target": target,
        "outcome": outcome,
        "templates": TEMPLATES,
    }
    if is_htmx(request):
        # htmx swaps 2xx answers only; the editor with its errors replaces itself.
        return render("components/editor.html", **ctx)
    return render("pages/editor.html", outcome.code if outcome.code >= 400 else 422, **ctx)


@router.delete("/ui/objects/{kind}/{name}")
@router.post("/ui/objects/{kind}/{name}/delete")
def delete_object(request: Request, kind: str, name: str, namespace: str = "") -> Response:
    """Delete one object, then go to its list (a node's page goes back to the cluster)."""
    service = web(request)
    outcome = editor.delete(service.store, kind, namespace, name)
    if not outcome.ok:
        return render("components/flash_error.html", 200 if is_htmx(request) else outcome.code, outcome=outcome)
    url = {"Pod": "/ui/pods", "Node": "/ui/cluster"}.get(kind, f"/ui/objects?kind={kind}")
    if is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


# ---------------------------------------------------------------------------------------------- scheduler


@router.get("/ui/scheduler")
def scheduler_page(request: Request) -> HTMLResponse:
    """The running KubeSchedulerConfiguration, editable."""
    service = web(request)
    ctx = {
        **base_context(request, service, service.store.resource_version, "scheduler"),
        "text": config_yaml(service.scheduler),
        "outcome": None,
        "queue": service.scheduler.queue_counts(),
        "in_effect": config_in_effect(service.scheduler),
    }
    return render("pages/scheduler.html", **ctx)


@router.post("/ui/scheduler")
def scheduler_apply(request: Request, config: Annotated[str, Form()] = "") -> HTMLResponse:
    """Validate and apply a configuration from the next cycle on; on error the running one is unchanged."""
    service = web(request)
    outcome = apply_config(service.scheduler, config)
    ctx = {
        **base_context(request, service, service.store.resource_version, "scheduler"),
        "text": outcome.text,
        "outcome": outcome,
        "queue": service.scheduler.queue_counts(),
        "in_effect": config_in_effect(service.scheduler),
    }
    if is_htmx(request):
        # The form swaps itself; what is in effect follows out of band.
        return render("components/scheduler_form.html", in_effect_oob=True, **ctx)
    return render("pages/scheduler.html", 200 if outcome.ok else 422, **ctx)


# ---------------------------------------------------------------------------------------------- operations


@router.get("/ui/operations")
def operations_page(request: Request) -> HTMLResponse:
    """Reset, export and import (when the operations service is present)."""
    service = web(request)
    ctx = {
        **base_context(request, service, service.store.resource_version, "operations"),
        "message": "",
        "error": "",
        "problems": [],
    }
    return render("pages/operations.html", **ctx)


@router.get("/ui/operations/export")
def operations_export(request: Request, format: str = "yaml") -> Response:
    """Download the whole cluster (and the scheduler configuration) as the operations service writes it."""
    service = web(request)
    ops = service.operations
    if ops is None:
        return not_found(request, service, "the operations service")
    fmt = "json" if format == "json" else "yaml"
    text: str = ops.export(fmt)
    media = "application/json" if fmt == "json" else "application/yaml"
    return Response(text, media_type=media, headers={"Content-Disposition": f'attachment; filename="kss-export.{fmt}"'})


@router.post("/ui/operations/import")
async def operations_import(request: Request) -> HTMLResponse:
    """Load an exported file or a kubectl YAML file (merge, or replace everything); all or nothing."""
    service = web(request)
    form = await request.form()
    upload = form.get("file")
    text = ""
    if upload is not None and not isinstance(upload, str):
        text = (await upload.read()).decode("utf-8", errors="replace")
    if not text.strip():
        text = str(form.get("text") or "")
    replace = form.get("replace") in ("on", "true", "1")
    unbind = form.get("unbind") in ("on", "true", "1")
    ops = service.operations
    message, error, problems = "", "", []
    if ops is None:
        error = "this build has no operations service"
    elif not text.strip():
        error = "choose a file or paste an export first"
    else:
        try:
            report = await run_in_threadpool(lambda: ops.import_text(text, replace=replace, unbind=unbind))
            message = "Imported: " + ", ".join(f"{k} {v}" for k, v in report.items())
        except ApiError as exc:  # nothing was changed: the service checks everything before writing
            error = exc.message
            problems = [f"{c.get('field', '')}: {c.get('message', '')}" for c in (exc.details or {}).get("causes", [])]
    ctx = {
        **base_context(request, service, service.store.resource_version, "operations"),
        "message": message,
        "error": error,
        "problems": problems,
    }
    return render("pages/operations.html", 200 if not error else 422, **ctx)


@router.post("/ui/operations/reset")
def operations_reset(request: Request) -> Response:
    """Forget every object and result (built-in namespaces and priority classes come back)."""
    service = web(request)
    ops = service.operations
    if ops is None:
        return not_found(request, service, "the operations service")
    ops.reset()
    if is_htmx(request):
        return Response(status_code=204, headers={"HX-Redirect": "/ui/cluster"})
    return RedirectResponse("/ui/cluster", status_code=303)


# ---------------------------------------------------------------------------------------------- live


@router.get("/ui/events")
async def events(
    request: Request,
    resource_version: Annotated[str | None, Query(alias="resourceVersion")] = None,
    timeout_seconds: Annotated[float | None, Query(alias="timeoutSeconds", ge=0, le=3600)] = None,
) -> StreamingResponse:
    """Server-sent events of store changes, resumable with ``Last-Event-ID`` (see ``kss_sim.web.sse``)."""
    service = web(request)
    store = service.store
    start = sse.start_version(resource_version, request.headers.get("last-event-id"), store.resource_version)
    lifetime = sse.DEFAULT_LIFETIME if timeout_seconds is None else timeout_seconds
    # Pods start waiting in Permit without a store change: the stream looks at them while the scheduler runs.
    waiting = service.scheduler.waiting_pods if service.scheduler_running else None
    return StreamingResponse(
        sse.stream(store, start, lifetime=lifetime, waiting=waiting),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
