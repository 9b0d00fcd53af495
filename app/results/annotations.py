"""The pod annotations kube-scheduler-simulator users know, built from a recorded attempt.

Keys and JSON value shapes follow kube-scheduler-simulator (``simulator/scheduler/plugin/annotation``):
maps of plugin -> status text, node -> plugin -> verdict or score (scores as decimal strings), the
selected node, and ``result-history``: a JSON list of earlier attempts' annotation maps.
"""

from __future__ import annotations

from typing import Any

import orjson

from app.scheduler.cycle import Attempt

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
PREFILTER_STATUS = PREFIX + "prefilter-result-status"
PREFILTER_RESULT = PREFIX + "prefilter-result"
FILTER_RESULT = PREFIX + "filter-result"
POSTFILTER_RESULT = PREFIX + "postfilter-result"
PRESCORE_RESULT = PREFIX + "prescore-result"
SCORE_RESULT = PREFIX + "score-result"
FINALSCORE_RESULT = PREFIX + "finalscore-result"
RESERVE_RESULT = PREFIX + "reserve-result"
PERMIT_RESULT = PREFIX + "permit-result"
PERMIT_TIMEOUT = PREFIX + "permit-result-timeout"
PREBIND_RESULT = PREFIX + "prebind-result"
BIND_RESULT = PREFIX + "bind-result"
SELECTED_NODE = PREFIX + "selected-node"
RESULT_HISTORY = PREFIX + "result-history"

PER_NODE_KEYS = (FILTER_RESULT, POSTFILTER_RESULT, SCORE_RESULT, FINALSCORE_RESULT)
RESULT_KEYS = (
    PREFILTER_STATUS, PREFILTER_RESULT, FILTER_RESULT, POSTFILTER_RESULT, PRESCORE_RESULT, SCORE_RESULT,
    FINALSCORE_RESULT, RESERVE_RESULT, PERMIT_RESULT, PERMIT_TIMEOUT, PREBIND_RESULT, BIND_RESULT, SELECTED_NODE,
)  # fmt: skip
HISTORY_LIMIT_BYTES = 256 * 1024
# kube-apiserver's limit on all of an object's annotations together (keys and values); the store enforces it.
TOTAL_ANNOTATIONS_LIMIT_BYTES = 256 * 1024
POSTFILTER_NOMINATED_MESSAGE = "preemption victim"


def _dump(value: Any) -> str:
    # orjson: the per-node maps of a big cluster are hundreds of KB per pod, built on the scheduler thread.
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _go_duration(seconds: float) -> str:
    """Render seconds as Go's ``time.Duration.String()`` does for whole and fractional seconds."""
    if seconds == int(seconds):
        total = int(seconds)
        h, rem = divmod(total, 3600)
        m, s = divmod(rem, 60)
        if h:
            return f"{h}h{m}m{s}s"
        if m:
            return f"{m}m{s}s"
        return f"{s}s"
    return f"{seconds:g}s"


def attempt_annotations(att: Attempt, *, per_node: bool = True) -> dict[str, str]:
    """The result annotations for one attempt (without history)."""
    filter_result = att.filter
    score = {n: {p: str(v) for p, v in plugins.items()} for n, plugins in (att.score or {}).items()}
    final = {n: {p: str(v) for p, v in plugins.items()} for n, plugins in (att.final_score or {}).items()}
    postfilter: dict[str, dict[str, str]] = {}
    if att.postfilter is not None:
        postfilter = {node: {} for node in att.filter}
        if att.nominated_node:
            postfilter[att.nominated_node] = {"DefaultPreemption": POSTFILTER_NOMINATED_MESSAGE}
    out = {
        PREFILTER_STATUS: _dump(att.prefilter),
        PREFILTER_RESULT: _dump(att.prefilter_plugin_nodes),
        PRESCORE_RESULT: _dump(att.prescore or {}),
        RESERVE_RESULT: _dump(att.reserve),
        PERMIT_RESULT: _dump(att.permit),
        PERMIT_TIMEOUT: _dump({p: _go_duration(t) for p, t in att.permit_timeout.items()}),
        PREBIND_RESULT: _dump(att.prebind),
        BIND_RESULT: _dump(att.bind),
        SELECTED_NODE: att.bound_to or "",
    }
    if per_node:
        out[FILTER_RESULT] = _dump(filter_result)
        out[POSTFILTER_RESULT] = _dump(postfilter)
        out[SCORE_RESULT] = _dump(score)
        out[FINALSCORE_RESULT] = _dump(final)
    return out


def with_history(
    current: dict[str, str], existing_annotations: dict[str, str] | None, *, limit_bytes: int = HISTORY_LIMIT_BYTES
) -> dict[str, str]:
    """Add ``result-history``: earlier entries plus this one, oldest dropped while the value exceeds the limit.

    The limit is also what is left of the pod's 256 KiB annotation budget once the other annotations (the
    user's and this attempt's) are counted, so the store does not refuse the write for being too long.
    """
    others = sum(len(k) + len(v) for k, v in current.items()) + len(RESULT_HISTORY)
    others += sum(
        len(k) + len(v)
        for k, v in (existing_annotations or {}).items()
        if k not in current and k != RESULT_HISTORY and isinstance(v, str)
    )
    limit_bytes = min(limit_bytes, TOTAL_ANNOTATIONS_LIMIT_BYTES - others)
    history: list[dict[str, str]] = []
    raw = (existing_annotations or {}).get(RESULT_HISTORY)
    if raw:
        try:
            loaded = orjson.loads(raw)
            if isinstance(loaded, list):
                history = [h for h in loaded if isinstance(h, dict)]
        except orjson.JSONDecodeError:
            history = []
    history.append(dict(current))
    encoded = orjson.dumps(history)
    while len(encoded) > limit_bytes and len(history) > 1:
        history.pop(0)
        encoded = orjson.dumps(history)
    if len(encoded) > limit_bytes:
        # Even the newest entry alone is too big: keep it without its per-node maps.
        history = [{k: v for k, v in current.items() if k not in PER_NODE_KEYS}]
        encoded = orjson.dumps(history)
    out = dict(current)
    out[RESULT_HISTORY] = encoded.decode()
    return out
