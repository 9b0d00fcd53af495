"""The results API: ``/simulator/v1/namespaces/{ns}/pods/{name}/results[/{attempt}]``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from app.cluster.errors import ApiError, BadRequest
from app.results.schemas import AttemptDetail, AttemptList, Cleared
from app.results.service import SORT_KEYS, ResultsService
from app.state import state_accessor

router = APIRouter(prefix="/simulator/v1", tags=["results"])


class _NoAttempt(ApiError):
    code = 404
    reason = "NotFound"


_service = state_accessor("results", ResultsService)


@router.get("/namespaces/{namespace}/pods/{name}/results", response_model=AttemptList)
def list_results(namespace: str, name: str, request: Request) -> AttemptList:
    """Every recorded scheduling attempt of a pod, newest first, with outcome and summary."""
    service = _service(request)
    service.flush()
    return AttemptList.model_validate(
        {"pod": f"{namespace}/{name}", "attempts": service.list_attempts(namespace, name)}
    )


@router.get("/namespaces/{namespace}/pods/{name}/results/{attempt}", response_model=AttemptDetail)
def get_result(
    namespace: str,
    name: str,
    attempt: int,
    request: Request,
    page: Annotated[int, Query(ge=1)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=1000)] = 100,
    sort: Annotated[str, Query(description=f"one of {', '.join(SORT_KEYS)}")] = "total",
    node: Annotated[str | None, Query(description="only nodes whose name contains this")] = None,
    plugin: Annotated[str | None, Query(description="only nodes this filter plugin rejected")] = None,
    top: Annotated[int, Query(ge=0, le=100)] = 10,
) -> AttemptDetail:
    """One attempt in full: statuses per extension point, and the filter/score matrix paged and sorted."""
    if sort not in SORT_KEYS:
        raise BadRequest(f"sort must be one of {', '.join(SORT_KEYS)}")
    service = _service(request)
    service.flush()
    found = service.get_attempt(
        namespace, name, attempt, page=page, page_size=page_size, sort=sort, node=node, plugin=plugin, top=top
    )
    if found is None:
        raise _NoAttempt(f"no attempt {attempt} recorded for pod {namespace}/{name}")
    return AttemptDetail.model_validate(found)


@router.delete("/namespaces/{namespace}/pods/{name}/results", response_model=Cleared)
def clear_results(namespace: str, name: str, request: Request) -> Cleared:
    """Forget a pod's recorded attempts."""
    return Cleared(deleted=_service(request).clear_pod(namespace, name))
