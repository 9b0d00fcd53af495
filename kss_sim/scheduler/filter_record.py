"""The record pass's filter cells: every filter plugin's verdict on every node of a batch, as cells of the
attempt's filter matrix (``record.FilterMatrix``).

A rejecting status is registered once in a :class:`ReasonTable` and its cell code spread to the nodes it rejected:
per distinct ``filter_keys`` key (:func:`keyed_cells`), or node by node for plugins without keys
(:func:`per_node_cells`). ``Framework.run_filter_plugins_record_batch`` assembles them into a
:class:`RecordFilterOutcome`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch
from kss_sim.scheduler.framework import Code, CycleState, FilterPlugin, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.record import FIRST_REASON, PASSED


class ReasonTable:
    """Distinct rejecting statuses met while recording: texts (with their unresolvable flag) numbered from
    FIRST_REASON, and the status behind each (plugin index, cell) pair. Shared by the chunks of one walk."""

    __slots__ = ("ids", "reasons", "statuses", "unresolvable")

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.unresolvable: list[bool] = []
        self.ids: dict[tuple[str, bool], int] = {}
        self.statuses: dict[tuple[int, int], Status] = {}

    def cell_for(self, k: int, pl: FilterPlugin, st: Status) -> int:
        """The cell code of a rejecting status of plugin ``k`` (registered on first sight)."""
        text = st.message()
        unres = st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        rid = self.ids.get((text, unres))
        if rid is None:
            rid = self.ids[(text, unres)] = len(self.reasons)
            self.reasons.append(text)
            self.unresolvable.append(unres)
        cell = FIRST_REASON + rid
        if cell > _INT16_MAX:
            raise OverflowError("too many distinct filter statuses in one cycle")
        if (k, cell) not in self.statuses:
            st.plugin = pl.name
            self.statuses[(k, cell)] = st
        return cell


class RecordFilterOutcome:
    """Every filter plugin's verdict on every node of a batch (record mode), by plugin.

    ``constant[k]``: the cell of every node for plugin k (PASSED or SKIP), -1 where some node was rejected;
    ``columns[k]`` for those plugins (inserted in plugin order): each node's cell (PASSED or a reason cell of
    ``table``, uint8 while the table has fewer than ``UINT8_REASONS`` texts, else int16). ``fail[j]``: the first
    plugin that rejected node j (-1: passed).
    """

    __slots__ = ("batch", "columns", "constant", "fail", "ok", "table")

    def __init__(
        self,
        batch: NodeBatch,
        columns: dict[int, npt.NDArray[Any]],
        fail: npt.NDArray[Any],
        table: ReasonTable,
        constant: npt.NDArray[np.int16],
    ) -> None:
        self.batch = batch
        self.constant = constant
        self.table = table
        self.columns = columns
        self.fail = fail
        self.ok: BoolArray = fail < 0


# Reason tables shorter than this keep their cells in uint8 (FIRST_REASON + 249 < 256).
UINT8_REASONS = 250
_INT16_MAX = int(np.iinfo(np.int16).max)
# A plugin's rejections in the record pass: its index, the rejected batch positions, and their cells (``whole``:
# a column of every node of the batch, PASSED where it passed; else one cell per rejected node).
Rejected = tuple[int, IntArray, npt.NDArray[Any], bool]
NONE_REJECTED: Rejected = (-1, np.zeros(0, np.int64), np.zeros(0, np.int16), False)
# Largest key looked up through a table (a count per key value); bigger keys go through np.unique.
_KEY_TABLE = 4096


def keyed_cells(
    k: int,
    pl: FilterPlugin,
    state: CycleState,
    pod: PodInfo,
    batch: NodeBatch,
    keys: IntArray,
    table: ReasonTable,
    of_key: bool,
) -> Rejected | None:
    """Plugin ``k``'s cells from keys of every node of ``batch`` (0: passed; equal keys, equal statuses): one
    status per distinct key, of ``filter_status_of_key`` when ``of_key`` else of ``filter`` on the first node with
    that key, spread to the nodes through a key -> cell table. ``NONE_REJECTED`` when every node passed; None
    when a status is neither success nor a rejection."""
    # (NumPy's ufuncs and methods directly: their Python wrappers cost as much as the work on ~1,000 nodes.)
    top = int(np.maximum.reduce(keys)) if len(keys) else 0
    if top == 0:
        return NONE_REJECTED
    if int(np.minimum.reduce(keys)) == top:
        # One key on every node (a DaemonSet pod's nodes left out by its PreFilterResult): one status, no table.
        code = _code_of_key(k, pl, state, pod, batch, top, 0, of_key, table)
        if code is None:
            return None
        return k, np.arange(len(keys), dtype=np.int64), np.full(len(keys), code, _cell_type(code)), True
    inverse: IntArray | None = None
    firsts: list[int] | None = None
    if of_key and top < _KEY_TABLE:
        distinct: list[int] = np.bincount(keys).nonzero()[0].tolist()
    else:
        values, first_pos, inverse = np.unique(keys, return_index=True, return_inverse=True)
        distinct, firsts = values.tolist(), first_pos.tolist()
    codes: list[int] = []
    for i, key in enumerate(distinct):
        if key == 0:
            codes.append(PASSED)
            continue
        first = firsts[i] if firsts is not None else int(np.argmax(keys == key))
        code = _code_of_key(k, pl, state, pod, batch, key, first, of_key, table)
        if code is None:
            return None
        codes.append(code)
    dtype = _cell_type(max(codes))
    cells: npt.NDArray[Any]
    if inverse is None:
        cell_of = np.zeros(top + 1, dtype)
        cell_of[distinct] = codes
        cells = cell_of.take(keys)
    else:
        cells = np.array(codes, dtype)[inverse.reshape(-1)]
    bad: IntArray = cells.nonzero()[0]  # the rejected nodes' cells are reasons (PASSED is 0)
    return k, bad, cells, True


def _code_of_key(
    k: int,
    pl: FilterPlugin,
    state: CycleState,
    pod: PodInfo,
    batch: NodeBatch,
    key: int,
    first: int,
    of_key: bool,
    table: ReasonTable,
) -> int | None:
    """The cell of the nodes with (non-zero) ``key``, ``first`` the batch position of one of them: the status of
    ``filter_status_of_key`` when ``of_key``, else of ``filter`` on that node; None when it is not a rejection."""
    st = pl.filter_status_of_key(state, pod, key) if of_key else None
    if st is None:
        ni = batch.nodes[first]
        st = pl.filter(state, pod, ni)
        if st.is_success():
            raise RuntimeError(f"{pl.name}: node {ni.name!r} was rejected in the batch but filter accepts it")
    if not st.is_rejected():
        return None
    return table.cell_for(k, pl, st)


def _cell_type(largest: int) -> type[np.uint8] | type[np.int16]:
    return np.uint8 if largest <= 255 else np.int16


def per_node_cells(
    k: int, pl: FilterPlugin, state: CycleState, pod: PodInfo, batch: NodeBatch, table: ReasonTable
) -> Rejected | None:
    """Plugin ``k``'s cells asked of ``filter`` node by node (plugins without a batch filter)."""
    bad: list[int] = []
    codes: list[int] = []
    for j, ni in enumerate(batch.nodes):
        st = pl.filter(state, pod, ni)
        if st.is_success():
            continue
        if not st.is_rejected():
            return None
        bad.append(j)
        codes.append(table.cell_for(k, pl, st))
    if not bad:
        return NONE_REJECTED
    return k, np.array(bad, np.int64), np.array(codes, np.int16), False
