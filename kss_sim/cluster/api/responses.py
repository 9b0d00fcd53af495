"""What the Kubernetes API's routers share: JSON answers, the Status of an error, the bearer-token check."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import Response

from kss_sim.cluster.errors import ApiError, Unauthorized
from kss_sim.config import Settings
from kss_sim.state import state_accessor

JSON = "application/json"

_settings = state_accessor("settings", Settings)


def json_response(body: Any, status_code: int = 200) -> Response:
    """``body`` as JSON (orjson: the API's answers are large)."""
    return Response(orjson.dumps(body), status_code=status_code, media_type=JSON)


def raw_response(body: bytes, status_code: int = 200) -> Response:
    """Bytes that are JSON already (an object as stored, a rendered list)."""
    return Response(body, status_code=status_code, media_type=JSON)


def error_response(exc: ApiError) -> Response:
    """The Status body and HTTP code of an API error (with ``Retry-After`` when it says when to retry, which
    client-go honours by retrying itself)."""
    response = json_response(exc.to_status(), exc.code)
    retry_after = (exc.details or {}).get("retryAfterSeconds")
    if isinstance(retry_after, int) and retry_after > 0:
        response.headers["Retry-After"] = str(retry_after)
    return response


def authorize(request: Request) -> None:
    """``401`` unless the request carries the bearer token the server was started with (if any)."""
    token = _settings(request).api_token
    if token and request.headers.get("authorization", "") != f"Bearer {token}":
        raise Unauthorized("Unauthorized")
