"""The results API: ``/simulator/v1/namespaces/{ns}/pods/{name}/results[/{attempt}]``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from kss_sim.cluster.errors import ApiError, BadRequest, NotFound
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.results.attempts import ResultsService
from kss_sim.results.schemas import AttemptDetail, AttemptList, Cleared
from kss_sim.state import state_accessor
from kss_sim.web.ports import ATTEMPT_SORTS, AttemptQuery

router = APIRouter(prefix="/simulator/v1", tags=["results"])


_LARGEST_ATTEMPT = 2**63 - 1  # SQL's BIGINT


class _NoAttempt(ApiError):
    code = 404
    reason = "NotFound"


_service = state_accessor("results", ResultsService)
_store = state_accessor("store", ClusterStore)


def _pod_not_found(request: Request, namespace: str, name: str) -> NotFound | None:
    """kube-apiserver's NotFound for a pod that neither exists nor left recorded attempts (a deleted pod's
    attempts stay readable until they are cleared)."""
    if _store(request).get("Pod", namespace, name) is not None:
        return None
    return NotFound("pods", name)


@router.get("/namespaces/{namespace}/pods/{name}/results", response_model=AttemptList)
def list_results(namespace: str, name: str, request: Request) -> AttemptList:
    """Every recorded scheduling attempt of a pod, newest first, with outcome and summary."""
    service = _service(request)
    service.flush()
    attempts = service.list_attempts(namespace, name)
    if not attempts and (missing := _pod_not_found(request, namespace, name)) is not None:
        raise missing
    return AttemptList.model_validate({"pod": f"{namespace}/{name}", "attempts": attempts})


@router.get("/namespaces/{namespace}/pods/{name}/results/{attempt}", response_model=AttemptDetail)
def get_result(
    namespace: str,
    name: str,
    attempt: int,
    request: Request,
    page: Annotated[int, Query(ge=1)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=1000)] = 100,
    sort: Annotated[str, Query(description=f"one of {', '.join(ATTEMPT_SORTS)}")] = "total",
    node: Annotated[str | None, Query(description="only nodes whose name contains this")] = None,
    plugin: Annotated[str | None, Query(description="only nodes this filter plugin rejected")] = None,
    top: Annotated[int, Query(ge=0, le=100)] = 10,
) -> AttemptDetail:
    """One attempt in full: statuses per extension point, and the filter/score matrix paged and sorted."""
    if sort not in ATTEMPT_SORTS:
        raise BadRequest(f"sort must be one of {', '.join(ATTEMPT_SORTS)}")
    service = _service(request)
    if not 0 <= attempt <= _LARGEST_ATTEMPT:
        # Beyond what the database's integers hold: no such attempt can be recorded.
        if not service.list_attempts(namespace, name) and (missing := _pod_not_found(request, namespace, name)):
            raise missing
        raise _NoAttempt(f"no attempt {attempt} recorded for pod {namespace}/{name}")
    service.flush()
    query = AttemptQuery(page=page, page_size=page_size, sort=sort, node=node, plugin=plugin, top=top)
    found = service.get_attempt(namespace, name, attempt, query)
    if found is None:
        if not service.list_attempts(namespace, name) and (missing := _pod_not_found(request, namespace, name)):
            raise missing
        raise _NoAttempt(f"no attempt {attempt} recorded for pod {namespace}/{name}")
    return AttemptDetail.model_validate(found)


@router.delete("/namespaces/{namespace}/pods/{name}/results", response_model=Cleared)
def clear_results(namespace: str, name: str, request: Request) -> Cleared:
    """Forget a pod's recorded attempts."""
    deleted = _service(request).clear_pod(namespace, name)
    if not deleted and (missing := _pod_not_found(request, namespace, name)) is not None:
        raise missing
    return Cleared(deleted=deleted)
