"""The pod annotations kube-scheduler-simulator users know, built from a recorded attempt.

Keys and JSON value shapes follow kube-scheduler-simulator (``simulator/scheduler/plugin/annotation``):
maps of plugin -> status text, node -> plugin -> verdict or score (scores as decimal strings), the
selected node, and ``result-history``: a JSON list of earlier attempts' annotation maps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from kss_sim.scheduler.record import Attempt, FilterMatrix, ScoreMatrix, name_ranks

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
EXTENDER_RESULTS = {verb: PREFIX + f"extender-{verb}-result" for verb in ("filter", "prioritize", "preempt", "bind")}
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


def _quoted(text: str) -> str:
    return orjson.dumps(text).decode()


# Per node-name list (the snapshot's, shared by every attempt until the nodes change): the names as JSON strings
# and each name's rank in sorted order. id(list) -> (the list, kept alive so the id stays its own, quoted, ranks).
_NAME_TABLES: dict[int, tuple[Sequence[str], list[str], npt.NDArray[np.int64]]] = {}
_NAME_TABLES_MAX = 4


def _name_table(names: Sequence[str]) -> tuple[list[str], npt.NDArray[np.int64]]:
    hit = _NAME_TABLES.get(id(names))
    if hit is not None and hit[0] is names:
        return hit[1], hit[2]
    ranks = name_ranks(names)
    quoted = [_quoted(name) for name in names]
    if len(_NAME_TABLES) >= _NAME_TABLES_MAX:
        _NAME_TABLES.pop(next(iter(_NAME_TABLES)))
    _NAME_TABLES[id(names)] = (names, quoted, ranks)
    return quoted, ranks


def _by_name(matrix: FilterMatrix | ScoreMatrix) -> tuple[list[str], npt.NDArray[np.int64]]:
    """The matrix's row names as JSON strings in sorted order, and the row indices in that order."""
    quoted, ranks = _name_table(matrix.all_names)
    positions = matrix.idx.astype(np.int64)
    order = np.argsort(ranks[positions], kind="stable")
    return [quoted[i] for i in positions[order].tolist()], order


def _filter_json(fm: FilterMatrix) -> str:
    """``_dump(att.filter)`` from the matrix: each distinct row's JSON once, nodes and plugins in sorted order."""
    plugins = fm.plugins
    order = sorted(range(len(plugins)), key=plugins.__getitem__)
    texts = ["passed", "skip", *fm.reasons]
    names, rows_order = _by_name(fm)
    constant, varying = fm.constant, fm.varying
    if constant is not None and varying is not None:
        # The batch path's columns: a row is told apart by its varying cells alone (usually one plugin's), each
        # distinct row's JSON made once (a full cluster's 5,000 rows are a handful of distinct ones).
        keys: list[Any]
        if len(varying) == 1:
            keys = varying[0][rows_order].tolist()
        elif not varying:
            keys = [()] * len(names)
        else:
            keys = list(zip(*[column[rows_order].tolist() for column in varying], strict=True))
        at = [k for k, c in enumerate(constant) if c < 0]
        fragments: dict[Any, str] = {}
        for key in dict.fromkeys(keys):
            row = list(constant)
            for k, cell in zip(at, key if len(varying) != 1 else (key,), strict=True):
                row[k] = cell
            fragments[key] = _dump({plugins[k]: texts[row[k]] for k in order})
        return "{" + ",".join([name + ":" + fragments[key] for name, key in zip(names, keys, strict=True)]) + "}"
    rows: dict[tuple[int, ...], str] = {}
    parts = []
    for name, row in zip(names, fm.cells[rows_order].tolist(), strict=True):
        key = tuple(row)
        fragment = rows.get(key)
        if fragment is None:
            fragment = rows[key] = _dump({plugins[k]: texts[row[k]] for k in order})
        parts.append(f"{name}:{fragment}")
    return "{" + ",".join(parts) + "}"


def _scores_json(sm: ScoreMatrix, values: npt.NDArray[Any]) -> str:
    """``_dump`` of node -> plugin -> str(score) from plugin-major ``values``: one format string per attempt."""
    plugins = sm.plugins
    order = sorted(range(len(plugins)), key=plugins.__getitem__)
    row_format = "{" + ",".join(_quoted(plugins[k]).replace("%", "%%") + ':"%d"' for k in order) + "}"
    names, rows_order = _by_name(sm)
    # One format string for the whole map, filled in one go (a % per node costs more than the scores do).
    whole = "{" + ",".join([name.replace("%", "%%") + ":" + row_format for name in names]) + "}"
    return whole % (tuple(values[order][:, rows_order].T.ravel().tolist()) if order else ())


def _per_node_json(att: Attempt) -> tuple[str, str, str] | None:
    """filter-result, score-result and finalscore-result built from the record matrices, the same text as from the
    dicts (several times faster on 100 nodes: the scheduler thread builds them for every pod); None when the
    matrices do not hold everything."""
    pure = att.matrices_only()
    if pure is None:
        return None
    fm, sm = pure
    if fm is None:
        return None
    if sm is None:
        return _filter_json(fm), "{}", "{}"
    return _filter_json(fm), _scores_json(sm, sm.raw), _scores_json(sm, sm.weighted)


def _postfilter(att: Attempt) -> dict[str, dict[str, str]]:
    """postfilter-result: an empty entry per filtered node once PostFilter ran, the nominated node's message. The
    nodes are read from the filter matrix when it holds the record: reading ``att.filter`` builds every node's
    verdicts as dicts (~40 ms at 2,500 nodes, the unschedulable pod of every failed attempt) and takes the fast
    path below away."""
    if att.postfilter is None:
        return {}
    pure = att.matrices_only()
    fm = pure[0] if pure is not None else None
    postfilter: dict[str, dict[str, str]] = {node: {} for node in (fm.nodes if fm is not None else att.filter)}
    if att.nominated_node:
        postfilter[att.nominated_node] = {"DefaultPreemption": POSTFILTER_NOMINATED_MESSAGE}
    return postfilter


def attempt_annotations(att: Attempt, *, per_node: bool = True) -> dict[str, str]:
    """The result annotations for one attempt (without history)."""
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
    if att.extender_results:  # only when extenders took part, all four as kube-scheduler-simulator writes them
        for verb, key in EXTENDER_RESULTS.items():
            out[key] = _dump(att.extender_results.get(verb, {}))
    if per_node:
        postfilter = _postfilter(att)
        fast = _per_node_json(att)
        if fast is None:
            score = {n: {p: str(v) for p, v in plugins.items()} for n, plugins in (att.score or {}).items()}
            final = {n: {p: str(v) for p, v in plugins.items()} for n, plugins in (att.final_score or {}).items()}
            fast = _dump(att.filter), _dump(score), _dump(final)
        out[FILTER_RESULT] = fast[0]
        out[POSTFILTER_RESULT] = _dump(postfilter)
        out[SCORE_RESULT] = fast[1]
        out[FINALSCORE_RESULT] = fast[2]
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
