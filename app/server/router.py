"""The server's own routes: ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from app.server.metrics import CONTENT_TYPE, Metrics

metrics_router = APIRouter()


@metrics_router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Prometheus metrics: kube-scheduler's scheduling metrics and kube-apiserver's request metrics."""
    registry: Metrics = request.app.state.metrics
    return Response(registry.render(), media_type=CONTENT_TYPE)
