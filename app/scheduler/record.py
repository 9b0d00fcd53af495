"""Array-backed records of one attempt: filter verdicts and scores per node and plugin.

Recording every plugin on every node of a big cluster produces tens of thousands of cells per attempt. The
batch record path keeps them as NumPy matrices (:class:`FilterMatrix`, :class:`ScoreMatrix`) instead of nested
dicts; ``Attempt.filter`` / ``unresolvable`` / ``filter_fail`` / ``score`` / ... are built from them only when
read, and the results codec encodes the matrices directly.

Rows are nodes, named by positions (``idx``) into a node-name list shared with the snapshot's columns (never
mutated: the columns build a new list when the nodes change), so a record costs no per-node Python objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

# Cell codes of a FilterMatrix (reason texts are numbered from FIRST_REASON on).
PASSED = 0
SKIP = 1
FIRST_REASON = 2

IntArray = npt.NDArray[np.int64]
# Record arrays are kept in the smallest integer types that hold them (a run keeps every attempt).
AnyIntArray = npt.NDArray[np.integer[Any]]


def name_ranks(names: Sequence[str]) -> npt.NDArray[np.int64]:
    """Each name's position in sorted order: ``argsort`` of ``ranks[positions]`` sorts those names."""
    ranks = np.empty(len(names), np.int64)
    ranks[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names), dtype=np.int64)
    return ranks


class _Rows:
    """Rows named by positions into a shared list of node names."""

    __slots__ = ("_nodes", "all_names", "idx")

    def __init__(self, all_names: Sequence[str], idx: AnyIntArray) -> None:
        self.all_names = all_names
        self.idx = idx
        self._nodes: list[str] | None = None

    @property
    def nodes(self) -> list[str]:
        """The rows' node names, in row order."""
        if self._nodes is None:
            names = self.all_names
            self._nodes = [names[i] for i in self.idx.tolist()]
        return self._nodes

    def __len__(self) -> int:
        return len(self.idx)


class FilterMatrix(_Rows):
    """Filter verdicts of the nodes a cycle visited (rows, in visiting order) for every filter plugin (columns).

    ``cells[i, k]``: PASSED, SKIP, or FIRST_REASON + j for ``reasons[j]`` (a status text; ``unresolvable[j]``
    says whether that status was UnschedulableAndUnresolvable). ``fail[i]``: the plugin (column) whose status
    stopped kube-scheduler's loop on the node, -1 when it passed.

    The batch path gives the cells by column instead: ``constant[k]`` the cell of every row for plugin k (PASSED
    or SKIP), -1 where rows may differ, and ``varying`` the columns of those plugins (in plugin order, one dtype);
    ``cells`` is then built on first read (the results writer sends and encodes the columns as they are).
    """

    __slots__ = ("_cells", "constant", "fail", "plugins", "reasons", "rotation", "unresolvable", "varying")

    def __init__(
        self,
        all_names: Sequence[str],
        idx: AnyIntArray,
        plugins: list[str],
        cells: AnyIntArray | None,
        reasons: list[str],
        unresolvable: list[bool],
        fail: AnyIntArray,
        rotation: int | None = None,
        constant: list[int] | None = None,
        varying: list[AnyIntArray] | None = None,
    ) -> None:
        super().__init__(all_names, idx)
        if cells is None and (constant is None or varying is None):
            raise ValueError("a FilterMatrix needs its cells, or its constant and varying columns")
        self.plugins = plugins
        self._cells = cells
        self.reasons = reasons
        self.unresolvable = unresolvable
        self.fail = fail
        # ``s`` when the rows are known to be ``all_names[s], all_names[s+1], ...`` (mod n), the walk's order
        # over the whole node list: the results codec then stores the rotation, not the positions.
        self.rotation = rotation
        # Set by the batch path, whose ``fail`` is then the first column holding a reason.
        self.constant = constant
        self.varying = varying

    @property
    def cells(self) -> AnyIntArray:
        """Node-major cells (plugin-major underneath)."""
        if self._cells is None:
            assert self.constant is not None and self.varying is not None
            dtype = self.varying[0].dtype if self.varying else np.dtype(np.uint8)
            by_plugin = np.empty((len(self.constant), len(self.idx)), dtype)
            by_plugin[:] = np.array([max(c, 0) for c in self.constant], dtype)[:, None]
            if self.varying:
                by_plugin[[k for k, c in enumerate(self.constant) if c < 0]] = self.varying
            self._cells = by_plugin.T
        return self._cells

    def column(self, k: int) -> AnyIntArray:
        """Plugin ``k``'s cells, one per row."""
        if self._cells is None and self.constant is not None and self.varying is not None:
            c = self.constant[k]
            if c < 0:
                return self.varying[self.constant[:k].count(-1)]
            return np.full(len(self.idx), c, self.varying[0].dtype if self.varying else np.uint8)
        return self.cells[:, k]

    def filter_dict(self) -> dict[str, dict[str, str]]:
        """``Attempt.filter``: node -> plugin -> "passed" | "skip" | message."""
        texts = ["passed", "skip", *self.reasons]
        plugins = self.plugins
        out: dict[str, dict[str, str]] = {}
        # Rows repeat a lot (same verdicts on many nodes): build each distinct row's dict once, copy it per node.
        cache: dict[tuple[int, ...], dict[str, str]] = {}
        for name, row in zip(self.nodes, self.cells.tolist(), strict=True):
            key = tuple(row)
            d = cache.get(key)
            if d is None:
                d = cache[key] = {p: texts[c] for p, c in zip(plugins, row, strict=True)}
            out[name] = dict(d)
        return out

    def unresolvable_dict(self) -> dict[str, list[str]]:
        """``Attempt.unresolvable``: node -> plugins that returned UnschedulableAndUnresolvable."""
        if not any(self.unresolvable):
            return {}
        flags = np.array([False, False, *self.unresolvable], dtype=np.bool_)
        hit = flags[self.cells]
        nodes = self.nodes
        out: dict[str, list[str]] = {}
        for i in np.flatnonzero(hit.any(axis=1)).tolist():
            out[nodes[i]] = [self.plugins[k] for k in np.flatnonzero(hit[i]).tolist()]
        return out

    def filter_fail_dict(self) -> dict[str, str]:
        """``Attempt.filter_fail``: node -> "plugin: message" of the status that stopped the loop there."""
        out: dict[str, str] = {}
        rows = np.flatnonzero(self.fail >= 0)
        if not len(rows):
            return out
        names = self.all_names
        for i, pos, k in zip(rows.tolist(), self.idx[rows].tolist(), self.fail[rows].tolist(), strict=True):
            code = int(self.cells[i, k])
            out[names[pos]] = f"{self.plugins[k]}: {self.reasons[code - FIRST_REASON]}"
        return out

    def failing_count(self) -> int:
        return int(np.count_nonzero(self.fail >= 0))


class ScoreMatrix(_Rows):
    """Raw and normalized scores of the scored nodes per score plugin that ran; ``raw[k]`` / ``normalized[k]``
    are plugin k's scores (plugin-major), ``weights[k]`` its weight."""

    __slots__ = ("feasible_rows", "norm_same", "normalized", "plugins", "raw", "weights")

    def __init__(
        self,
        all_names: Sequence[str],
        idx: AnyIntArray,
        plugins: list[str],
        raw: AnyIntArray,
        normalized: AnyIntArray,
        weights: IntArray,
    ) -> None:
        super().__init__(all_names, idx)
        self.plugins = plugins
        self.raw = raw
        self.normalized = normalized
        self.weights = weights
        # Set by the batch path: the rows are the attempt's filter-matrix rows that passed, in order, and
        # ``norm_same[k]`` says plugin k's normalized scores are its raw ones (it has no NormalizeScore).
        self.feasible_rows = False
        self.norm_same: list[bool] | None = None

    @property
    def weighted(self) -> IntArray:
        out: IntArray = self.normalized.astype(np.int64) * self.weights[:, None]
        return out

    def totals(self) -> IntArray:
        if not self.plugins:
            return np.zeros(len(self.idx), np.int64)
        out: IntArray = self.weighted.sum(axis=0)
        return out

    def _dict(self, values: AnyIntArray) -> dict[str, dict[str, int]]:
        plugins = self.plugins
        return {
            name: dict(zip(plugins, row, strict=True)) for name, row in zip(self.nodes, values.T.tolist(), strict=True)
        }

    def score_dict(self) -> dict[str, dict[str, int]]:
        return self._dict(self.raw)

    def normalized_dict(self) -> dict[str, dict[str, int]]:
        return self._dict(self.normalized)

    def final_dict(self) -> dict[str, dict[str, int]]:
        return self._dict(self.weighted)

    def total_dict(self) -> dict[str, int]:
        return dict(zip(self.nodes, self.totals().tolist(), strict=True))
