"""HTML routes of replay runs (``kss_sim.web.views.runs``): the Runs list, one run, a pod's attempts in a run, Compare.

Kept apart from ``kss_sim.web.router`` (already long); rendering and the page context come from
``kss_sim.web.rendering``. The runs are read through the ``Runs`` port that ``create_app`` puts on ``app.state.runs``.
"""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from kss_sim.web.ports import Runs
from kss_sim.web.rendering import base_context, hx_target, not_found, render, web
from kss_sim.web.views.runs import (
    OUTCOMES,
    compare_view,
    parse_run_ids,
    run_pod_view,
    run_view,
    runs_view,
)

router = APIRouter(include_in_schema=False)


def _runs(request: Request) -> Runs:
    runs: Runs = request.app.state.runs
    return runs


def _json_for_script(value: object) -> Markup:
    """JSON to embed in a ``<script type="application/json">`` (``</`` escaped so no string can end the element)."""
    return Markup(orjson.dumps(value).decode().replace("</", "<\\/"))


@router.get("/ui/runs")
def runs_page(request: Request) -> HTMLResponse:
    """Every recorded replay run, newest first, with its headline figures; tick two or more to compare them."""
    service = web(request)
    view = runs_view(_runs(request))
    ctx = {**base_context(request, service, service.store.resource_version, "runs"), "view": view}
    if hx_target(request) == "runs-body":
        return render("components/runs_body.html", **ctx)
    return render("pages/runs.html", **ctx)


@router.get("/ui/runs/{run_id}")
def run_page(
    request: Request,
    run_id: int,
    outcome: str = "",
    q: str = "",
    page: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:
    """One run: summary, the charts of its samples, and its pods (filter by outcome, search, pages)."""
    service = web(request)
    view = run_view(_runs(request), run_id, outcome=outcome, q=q.strip(), page=page)
    if view is None:
        return not_found(request, service, f"replay run {run_id}")
    params = {"outcome": view.outcome, "q": view.q, "page": view.pods.page}
    ctx = {
        **base_context(request, service, service.store.resource_version, "runs"),
        "view": view,
        "params": params,
        "outcome_names": OUTCOMES,
        "chart_json": _json_for_script(view.chart),
    }
    if hx_target(request) == "run-pods":
        return render("components/run_pods.html", **ctx)
    return render("pages/run.html", **ctx)


@router.get("/ui/runs/{run_id}/pods/{namespace}/{name}")
def run_pod_page(
    request: Request,
    run_id: int,
    namespace: str,
    name: str,
    attempt: Annotated[int | None, Query(ge=1)] = None,
    fpage: Annotated[int, Query(ge=1)] = 1,
    fsort: str = "failing",
    fnode: str = "",
    fplugin: str = "",
    spage: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:
    """A pod of a run: its life (arrival, wait, node, outcome) and its attempts in that run, each in full."""
    service = web(request)
    detail = run_pod_view(
        _runs(request),
        run_id,
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
        return not_found(request, service, f'pod "{namespace}/{name}" in replay run {run_id}')
    params = {
        "attempt": attempt,
        "fpage": fpage,
        "fsort": fsort if fsort != "failing" else "",
        "fnode": fnode.strip(),
        "fplugin": fplugin,
        "spage": spage,
    }
    ctx = {
        **base_context(request, service, service.store.resource_version, "runs"),
        "pod": detail,  # the attempt partials read pod.attempt
        "params": params,
        "chosen": detail.attempt.number if detail.attempt is not None else None,
        "base_url": detail.base_url,
        "in_run": True,  # the partials link nodes and victims to the live cluster only outside a run
        "run_url": detail.run.url,
    }
    target = hx_target(request)
    if target == "matrices" and detail.attempt is not None:
        return render("components/matrices.html", **ctx)
    if target == "attempt" and detail.attempt is not None:
        return render("components/attempt.html", **ctx)
    if target == "run-pod-body":
        return render("components/run_pod_body.html", **ctx)
    return render("pages/run_pod.html", **ctx)


@router.get("/ui/compare")
def compare_page(
    request: Request,
    runs: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies the default)
    group: str = "",
    page: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:
    """Two or more runs side by side (``?runs=1,2`` or a ``kss compare`` group): summaries, overlaid series, and
    the pods placed differently with each side's attempts one click away."""
    service = web(request)
    source = _runs(request)
    ids = parse_run_ids(runs)
    if group:
        ids += [int(r["id"]) for r in source.compare_group(group)]
    view = compare_view(source, ids, page=page)
    params = {"runs": ",".join(str(r.id) for r in view.runs), "group": "", "page": view.differences.page}
    ctx = {
        **base_context(request, service, service.store.resource_version, "runs"),
        "view": view,
        "params": params,
        "chart_json": _json_for_script(view.chart),
    }
    if hx_target(request) == "compare-pods":
        return render("components/compare_pods.html", **ctx)
    return render("pages/compare.html", 404 if view.missing else 200, **ctx)
