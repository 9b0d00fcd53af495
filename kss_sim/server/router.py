"""The server's own routes: ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kss_sim.server.metrics import CONTENT_TYPE, Metrics
from kss_sim.state import state_accessor

metrics_router = APIRouter()
_metrics = state_accessor("metrics", Metrics)


@metrics_router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Prometheus metrics: kube-scheduler's scheduling metrics and kube-apiserver's request metrics."""
    return Response(_metrics(request).render(), media_type=CONTENT_TYPE)
