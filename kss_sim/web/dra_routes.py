"""HTML routes of Dynamic Resource Allocation: the DRA overview and one ResourceClaim (``kss_sim.web.views.dra``).

Kept apart from ``kss_sim.web.router`` (already long); rendering, the service and the page context come from
``kss_sim.web.rendering``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from kss_sim.web.rendering import base_context, hx_target, not_found, render, web
from kss_sim.web.views.dra import claim_view, dra_view

router = APIRouter(include_in_schema=False)


@router.get("/ui/dra")
def dra_page(request: Request) -> HTMLResponse:
    """Device classes, each node's devices (taken of total), ResourceClaims and their templates."""
    service = web(request)
    view = dra_view(service.store)
    ctx = {**base_context(request, service, view.resource_version, "dra"), "view": view}
    if hx_target(request) == "dra-body":
        return render("components/dra_body.html", **ctx)
    return render("pages/dra.html", **ctx)


@router.get("/ui/claims/{namespace}/{name}")
def claim_page(request: Request, namespace: str, name: str) -> HTMLResponse:
    """One ResourceClaim: requests, allocation (devices, node selector, config), reservedFor and owner pod."""
    service = web(request)
    claim = claim_view(service.store, namespace, name)
    if claim is None:
        return not_found(request, service, f'resourceclaim "{namespace}/{name}"')
    ctx = {**base_context(request, service, claim.resource_version, "dra"), "claim": claim}
    if hx_target(request) == "claim-body":
        return render("components/claim_body.html", **ctx)
    return render("pages/claim.html", **ctx)
