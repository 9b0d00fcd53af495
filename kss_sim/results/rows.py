"""The table row a recorded attempt is stored as: its columns, its ``details`` JSON (rejection counts included)
and its encoded matrices; and inserting rows. Both writers (the results service's thread and the writer process)
store the same rows.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from kss_sim.results.codec import encode_matrices
from kss_sim.results.repository import ResultsRepository
from kss_sim.scheduler.record import FIRST_REASON, Attempt, FilterMatrix

SessionFactory = Callable[[], AbstractContextManager[Session]]


def rejection_histogram(att: Attempt) -> dict[str, dict[str, int]]:
    """Nodes rejected per plugin and reason, counting each node once at the plugin where the loop stopped."""
    out: dict[str, dict[str, int]] = {}
    for text in att.filter_fail.values():
        plugin, _, reason = text.partition(": ")
        per = out.setdefault(plugin, {})
        per[reason] = per.get(reason, 0) + 1
    return out


def matrix_rejections(fm: FilterMatrix | None) -> dict[str, dict[str, int]]:
    """``rejection_histogram`` of an attempt whose record is ``fm`` alone (same counts, same order)."""
    out: dict[str, dict[str, int]] = {}
    if fm is None or not len(fm):
        return out
    constant = fm.constant
    if constant is not None and fm.fail.dtype == np.int8 and constant.count(-1) == 1:
        # One plugin rejected nodes (the usual case): every rejected node stopped there, on its cell.
        k = constant.index(-1)
        column = fm.column(k)
        codes = column[column >= FIRST_REASON]
        if not len(codes):
            return out
        counts = np.bincount(codes)
        present = np.flatnonzero(counts).tolist()
        if len(present) > 1:  # in the order the walk first met each reason
            present.sort(key=lambda v: int(np.argmax(codes == v)))
        per = out.setdefault(fm.plugins[k], {})
        for code in present:  # a text can have two codes (resolvable or not): one count
            reason = fm.reasons[code - FIRST_REASON]
            per[reason] = per.get(reason, 0) + int(counts[code])
        return out
    rows = np.flatnonzero(fm.fail >= 0)
    if not len(rows):
        return out
    ks = fm.fail[rows].astype(np.int64)
    codes = fm.cells[rows, ks].astype(np.int64)
    width = int(codes.max()) + 1
    pairs = ks * width + codes
    counts = np.bincount(pairs)
    present = np.flatnonzero(counts).tolist()
    if len(present) > 1:  # in the order the walk first met each (plugin, reason)
        present.sort(key=lambda v: int(np.argmax(pairs == v)))
    for v in present:
        k, code = divmod(v, width)
        text = f"{fm.plugins[k]}: {fm.reasons[code - FIRST_REASON]}"
        plugin, _, reason = text.partition(": ")
        per = out.setdefault(plugin, {})
        per[reason] = per.get(reason, 0) + int(counts[v])
    return out


# Attempt fields of the ``details`` JSON column, in order, with their JSON names.
_DETAIL_FIELDS = (
    ("prefilter", "prefilter"),
    ("prefilterStatus", "prefilter_status"),
    ("prefilterNodes", "prefilter_nodes"),
    ("prefilterPluginNodes", "prefilter_plugin_nodes"),
    ("prescore", "prescore"),
    ("postfilter", "postfilter"),
    ("victims", "victims"),
    ("reserve", "reserve"),
    ("permit", "permit"),
    ("permitTimeout", "permit_timeout"),
    ("permitWait", "permit_wait"),
    ("prebind", "prebind"),
    ("bind", "bind"),
    ("selected", "selected"),
    ("boundBy", "bound_by"),
    ("extenders", "extenders"),
    ("suggestedHost", "suggested_host"),
    ("tieBreak", "tie_break"),
)
_DETAIL_TAIL = (("evaluatedNodes", "evaluated_nodes"), ("filterPlugins", "filter_plugins"))
_DETAIL_TAIL2 = (("scorePlugins", "score_plugins"), ("weights", "weights"))

# Every detail, in order: (JSON name, attempt field); ``DETAIL_KEYS`` the names, ``SELECTED`` where ``selected`` is.
DETAILS = (*_DETAIL_FIELDS, *_DETAIL_TAIL, *_DETAIL_TAIL2)
_get_details = operator.attrgetter(*(attr for _, attr in DETAILS))
DETAIL_KEYS = [key for key, _ in DETAILS]
SELECTED = DETAIL_KEYS.index("selected")
# Stored as ``selected`` when the best nodes are the scored nodes with the best total (the engine took them from
# the scores): they are found again from the matrices when read (``resolve_selected``), instead of being stored
# as hundreds of names in every row.
BEST_TOTAL = "bestTotal"
_get_details_but_selected = operator.attrgetter(*(attr for i, (_, attr) in enumerate(DETAILS) if i != SELECTED))


def _detail_values(att: Attempt) -> tuple[Any, ...]:
    values: tuple[Any, ...] = _get_details(att)
    return values


def details_json(
    values: Sequence[Any], rejections: dict[str, dict[str, int]], extra: dict[str, Any] | None = None
) -> str:
    """The ``details`` column: ``values`` (in ``DETAILS`` order), the rejection counts and ``extra`` (keys only some
    attempts have: ``external``, ``shadow``), as JSON."""
    head = len(_DETAIL_FIELDS)
    doc = {key: v for (key, _), v in zip(_DETAIL_FIELDS, values[:head], strict=True)}
    doc["rejections"] = rejections
    for (key, _), v in zip((*_DETAIL_TAIL, *_DETAIL_TAIL2), values[head:], strict=True):
        doc[key] = v
    if extra:
        doc.update(extra)
    return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS).decode()


# Row columns taken from the attempt as they are (after namespace, pod_name, pod_uid, queued_seconds).
_ROW_FIELDS = (
    ("attempt", "attempt"),
    ("cycle", "cycle"),
    ("profile", "profile"),
    ("started_at", "started_at"),
    ("duration_seconds", "duration"),
)
_ROW_FIELDS2 = (
    ("result", "result"),
    ("bound_to", "bound_to"),
    ("nominated_node", "nominated_node"),
    ("message", "message"),
    ("node_count", "num_nodes"),
    ("feasible_count", "feasible_count"),
)


_get_row = operator.attrgetter(*(attr for _, attr in (*_ROW_FIELDS, *_ROW_FIELDS2)))


def row_values(
    att: Attempt, namespace: str, pod_name: str, pod_uid: str, queued_seconds: float, run_id: int | None = None
) -> tuple[Any, ...]:
    """The row's plain columns, in ``table_row`` order (``run_id``: the replay run, None for the live cluster)."""
    return (namespace, pod_name, pod_uid, queued_seconds, run_id, *_get_row(att))


_ROW_KEYS = (
    *("namespace", "pod_name", "pod_uid", "queued_seconds", "run_id"),
    *(k for k, _ in (*_ROW_FIELDS, *_ROW_FIELDS2)),
)


def table_row(values: Sequence[Any], details: str, matrices: bytes | None) -> dict[str, Any]:
    """The row from ``row_values``, the ``details`` JSON and the encoded matrices."""
    row = dict(zip(_ROW_KEYS, values, strict=True))
    row["details"] = details
    row["matrices"] = matrices
    return row


def attempt_row(
    att: Attempt, *, namespace: str, pod_name: str, pod_uid: str, queued_seconds: float, run_id: int | None = None
) -> dict[str, Any]:
    """The table row for one attempt."""
    if _selected_from_scores(att):  # the names are not built at all
        rest = _get_details_but_selected(att)
        values = (*rest[:SELECTED], BEST_TOTAL, *rest[SELECTED:])
    else:
        values = _detail_values(att)
    # Counted on the filter matrix when it holds every verdict (as the writer process does): building the
    # node -> "plugin: reason" dict first was ~2/3 of a row with 5,000 nodes (~1,000 of them evaluated).
    pure = att.matrices_only()
    rejections = matrix_rejections(pure[0]) if pure is not None else rejection_histogram(att)
    row = table_row(
        row_values(att, namespace, pod_name, pod_uid, queued_seconds, run_id),
        details_json(values, rejections, _extra_details(att)),
        encode_matrices(att) if att.has_record() else None,
    )
    if att.external is not None:
        # Only another scheduler's bindings have these columns set (kss's own rows leave them NULL).
        row["scheduled_by"] = att.external.get("binder") or ""
        row["shadow_agrees"] = None if att.shadow is None else bool(att.shadow.get("agrees"))
    return row


def _extra_details(att: Attempt) -> dict[str, Any] | None:
    """The ``details`` keys only some attempts have: a binding another scheduler made (what it did, and the shadow
    judgement), a v1.36 PodGroup cycle's record (``podGroup``)."""
    extra: dict[str, Any] = {}
    if att.external is not None or att.shadow is not None:
        extra.update(external=att.external, shadow=att.shadow)
    if att.pod_group is not None:
        extra["podGroup"] = att.pod_group
    return extra or None


def _selected_from_scores(att: Attempt) -> bool:
    """Whether ``att.selected`` is what ``resolve_selected`` finds again from the stored matrices: the engine took
    the best nodes from the score matrix, and the matrices are stored as they are."""
    positions = att.selected_positions()
    if positions is None:
        return False
    pure = att.matrices_only()
    sm = pure[1] if pure is not None else None
    return sm is not None and len(sm) > 0 and positions[0] is sm.all_names


def resolve_selected(selected: Any, totals: dict[str, int]) -> list[str] | None:
    """A stored ``selected`` as names: ``BEST_TOTAL`` means the nodes with the best total, by name."""
    if selected != BEST_TOTAL:
        return selected  # type: ignore[no-any-return]
    if not totals:
        return []
    best = max(totals.values())
    return sorted(name for name, total in totals.items() if total == best)


@dataclass(frozen=True, slots=True)
class AttemptRetention:
    """Which of a live pod's recorded attempts stay: the first ``first`` and the newest, ``total`` in all (None:
    every attempt). A pod retried for hours keeps how it started and how it is going, not every try between; the
    pod page counts the ones dropped from the gap in the attempt numbers. A replay run keeps all of its own."""

    total: int | None = None
    first: int = 0

    def dropped_through(self, newest: int) -> int:
        """The highest attempt number to drop (the drop runs from ``first`` + 1) once ``newest`` is recorded; no
        higher than ``first``: nothing to drop."""
        if self.total is None:
            return 0
        first = min(self.first, self.total - 1)  # the newest attempt always stays
        return newest - (self.total - first)


def stamp_version(rows: list[dict[str, Any]], kube_version: str | None) -> None:
    """Each row says the Kubernetes version its attempt was scheduled at."""
    for row in rows:
        row["kube_version"] = kube_version


def write_rows(session_scope: SessionFactory, rows: list[dict[str, Any]], retention: AttemptRetention) -> None:
    """Insert ``rows`` in one transaction; each live pod keeps the attempts ``retention`` says."""
    with session_scope() as session:
        _insert_and_trim(session, rows, retention)


def write_rows_on(conn: Connection, rows: list[dict[str, Any]], retention: AttemptRetention) -> None:
    """``write_rows`` in ``conn``'s open transaction (another writer's), which the caller commits or rolls back."""
    # rollback_only: the session never commits the given transaction, and closing it leaves that alone.
    with Session(bind=conn, join_transaction_mode="rollback_only") as session:
        _insert_and_trim(session, rows, retention)


def _insert_and_trim(session: Session, rows: list[dict[str, Any]], retention: AttemptRetention) -> None:
    repo = ResultsRepository(session)
    repo.add_many(rows)
    if retention.total is not None:
        live = {(r["namespace"], r["pod_name"]) for r in rows if r["run_id"] is None}
        # Trimming one pod leaves the others' newest attempt (and its own) as it was: asked once for them all.
        newest = repo.newest_attempts(live)
        for ns, name in live:
            repo.trim(ns, name, retention.first, retention.dropped_through(newest[(ns, name)]))
