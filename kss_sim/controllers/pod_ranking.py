"""Which pods a ReplicaSet deletes first, and when a ready pod counts as available.

kube-controller-manager's ``controller.ActivePodsWithRanks`` (controller_utils.go) and the ReplicaSet
controller's ``getPodsToDelete`` / ``getPodsRankedByRelatedPodsOnSameNode``, with v1.35's gates as they are by
default (PodDeletionCost on; LogarithmicScaleDown is GA), and ``podutil.IsPodAvailable``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.controllers.owned import is_active, is_ready, meta, pod_condition

POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

# podPhaseToOrdinal: a phase not listed (Succeeded, Failed, none) is 0 as Go's map lookup gives.
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT = re.compile(r"[+-]?[0-9]+")
NEVER = datetime.max.replace(tzinfo=UTC)  # a ready pod with no transition time and minReadySeconds > 0


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as the API writes them; None when absent or unreadable (Go's zero time)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def ready_since(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod's Ready condition last became True (None when not ready or unknown)."""
    if not is_ready(pod):
        return None
    condition = pod_condition(pod, "Ready") or {}
    return parse_time(condition.get("lastTransitionTime"))


def available_from(pod: Mapping[str, Any], min_ready_seconds: int) -> datetime | None:
    """The instant after which a ready pod counts as available; None for a pod that is not ready. A ready
    pod with ``minReadySeconds`` 0 has always been available (``datetime.min``)."""
    if not is_ready(pod):
        return None
    if min_ready_seconds <= 0:
        return datetime.min.replace(tzinfo=UTC)
    since = ready_since(pod)
    # Ready with no transition time never becomes available while minReadySeconds > 0, as upstream.
    return since + timedelta(seconds=min_ready_seconds) if since is not None else NEVER


def is_available(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """``podutil.IsPodAvailable``: ready for more than ``minReadySeconds`` (strictly, as ``Before``)."""
    start = available_from(pod, min_ready_seconds)
    return start is not None and (min_ready_seconds <= 0 or start < now)


def deletion_cost(pod: Mapping[str, Any]) -> int:
    """``GetDeletionCostFromPodAnnotations``: the annotation as an int32, 0 when absent or invalid."""
    raw = (meta(pod).get("annotations") or {}).get(POD_DELETION_COST)
    if not isinstance(raw, str):
        return 0
    if not _INT.fullmatch(raw):  # strconv.ParseInt: no spaces, no underscores
        return 0
    value = int(raw)
    return value if _INT32_MIN <= value <= _INT32_MAX else 0


def _max_restarts(pod: Mapping[str, Any]) -> tuple[int, int]:
    """The highest restart count of the regular containers, then of the sidecars (restartable init ones)."""
    status = pod.get("status") or {}
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or []), default=0)
    sidecars = {
        c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or [] if c.get("restartPolicy") == "Always"
    }
    sidecar = max(
        (
            int(c.get("restartCount") or 0)
            for c in status.get("initContainerStatuses") or []
            if c.get("name") in sidecars
        ),
        default=0,
    )
    return regular, sidecar


def _after_or_zero(t1: datetime | None, t2: datetime | None) -> bool:
    """``afterOrZero``: t1 after t2, a zero time counting as after any other."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _log_rank(t: datetime, now: datetime) -> int:
    # Go takes log2 of a Duration, in nanoseconds.
    delta = now - t
    nanos = (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    return int(math.log2(nanos)) if nanos > 0 else -1


def _time_less(t1: datetime | None, t2: datetime | None, uid1: str, uid2: str, now: datetime) -> bool:
    """LogarithmicScaleDown: compare timestamps by the power of two of their age, then by uid."""
    if t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return uid1 < uid2
    return diff < 0


def _uid(pod: Mapping[str, Any]) -> str:
    return str(meta(pod).get("uid") or "")


def pod_deletes_first(a: Mapping[str, Any], rank_a: int, b: Mapping[str, Any], rank_b: int, now: datetime) -> bool:
    """``ActivePodsWithRanks.Less``: whether ``a`` is deleted before ``b``."""
    node_a = (a.get("spec") or {}).get("nodeName") or ""
    node_b = (b.get("spec") or {}).get("nodeName") or ""
    # 1. unassigned < assigned
    if node_a != node_b and (not node_a or not node_b):
        return not node_a
    # 2. Pending < Unknown < Running
    phase_a = _PHASE_ORDINAL.get((a.get("status") or {}).get("phase") or "", 0)
    phase_b = _PHASE_ORDINAL.get((b.get("status") or {}).get("phase") or "", 0)
    if phase_a != phase_b:
        return phase_a < phase_b
    # 3. not ready < ready
    ready_a, ready_b = is_ready(a), is_ready(b)
    if ready_a != ready_b:
        return not ready_a
    # 4. lower pod-deletion-cost < higher
    cost_a, cost_b = deletion_cost(a), deletion_cost(b)
    if cost_a != cost_b:
        return cost_a < cost_b
    # 5. more related pods on the same node < fewer
    if rank_a != rank_b:
        return rank_a > rank_b
    # 6. ready for less time < more time (both ready)
    if ready_a and ready_b:
        since_a, since_b = ready_since(a), ready_since(b)
        if since_a != since_b:
            return _time_less(since_a, since_b, _uid(a), _uid(b), now)
    # 7. more restarts < fewer (regular containers, then sidecars)
    restarts_a, restarts_b = _max_restarts(a), _max_restarts(b)
    if restarts_a != restarts_b:
        return restarts_a > restarts_b
    # 8. no creation time < newer < older
    created_a = parse_time(meta(a).get("creationTimestamp"))
    created_b = parse_time(meta(b).get("creationTimestamp"))
    if created_a != created_b:
        return _time_less(created_a, created_b, _uid(a), _uid(b), now)
    return False


def pods_to_delete(
    candidates: Sequence[Mapping[str, Any]], related: Sequence[Mapping[str, Any]], count: int, now: datetime
) -> list[Mapping[str, Any]]:
    """``getPodsToDelete``: the ``count`` pods of ``candidates`` to delete first, each ranked by how many active
    ``related`` pods (those of every ReplicaSet with the same controller) share its node."""
    if count >= len(candidates):
        return list(candidates)
    on_node: dict[str, int] = {}
    for pod in related:
        if is_active(pod):
            node = (pod.get("spec") or {}).get("nodeName") or ""
            on_node[node] = on_node.get(node, 0) + 1
    ranked = [(pod, on_node.get((pod.get("spec") or {}).get("nodeName") or "", 0)) for pod in candidates]

    def compare(x: tuple[Mapping[str, Any], int], y: tuple[Mapping[str, Any], int]) -> int:
        if pod_deletes_first(x[0], x[1], y[0], y[1], now):
            return -1
        if pod_deletes_first(y[0], y[1], x[0], x[1], now):
            return 1
        return 0

    ranked.sort(key=functools.cmp_to_key(compare))
    return [pod for pod, _ in ranked[:count]]
