"""The record of one scheduling attempt (:class:`Attempt`: decision and every plugin's verdict), and its
array-backed filter verdicts and scores per node and plugin.

Recording every plugin on every node of a big cluster produces tens of thousands of cells per attempt. The
batch record path keeps them as NumPy matrices (:class:`FilterMatrix`, :class:`ScoreMatrix`) instead of nested
dicts; ``Attempt.filter`` / ``unresolvable`` / ``filter_fail`` / ``score`` / ... are built from them only when
read, and the results codec encodes the matrices directly.

Rows are nodes, named by positions (``idx``) into a node-name list shared with the snapshot's columns (never
mutated: the columns build a new list when the nodes change), so a record costs no per-node Python objects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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

    def failing_plugins(self) -> list[str]:
        """The plugins of ``filter_fail_dict``'s texts (those that stopped the loop on some row), in plugin order."""
        stopped = np.unique(self.fail[self.fail >= 0])
        return [self.plugins[k] for k in stopped.tolist()]

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


@dataclass
class Attempt:
    """The outcome and record of one scheduling attempt."""

    pod: str
    attempt: int
    priority: int
    profile: str
    cycle: int = 0
    # Decision
    result: str = "unschedulable"  # scheduled | unschedulable | error | waiting (held in Permit) | gated
    bound_to: str | None = None
    bound_by: str | None = None
    message: str = ""
    nominated_node: str | None = None
    # The failure handler is told to clear the pod's nomination (upstream's clearNominatedNode, or a PostFilter result
    # with no node: preemption found no candidate); see loop.failure_nomination for the cases it infers itself.
    clears_nomination: bool = False
    # PostFilter's result cleared it (preemption found no candidate): cleared even where failures keep it.
    postfilter_clears_nomination: bool = False
    # v1.34 with NominatedNodeNameForExpectation: the scheduling and binding cycles' failures leave the nomination
    # as it is (newFailureNominatingInfo is nil); v1.35 dropped that.
    keeps_nomination: bool = False
    victims: list[str] = field(default_factory=list)
    # Record
    pre_enqueue: str | None = None  # PreEnqueue rejection ("Plugin: message"), the pod never reached PreFilter
    prefilter: dict[str, str] = field(default_factory=dict)
    prefilter_status: str = "success"
    prefilter_nodes: list[str] | None = None
    prefilter_plugin_nodes: dict[str, list[str]] = field(default_factory=dict)
    filter_plugins: list[str] = field(default_factory=list)
    score_plugins: list[str] = field(default_factory=list)
    weights: dict[str, int] = field(default_factory=dict)
    num_nodes: int = 0
    filter: dict[str, dict[str, str]] = field(default_factory=dict)
    stopped_at: dict[str, str] = field(default_factory=dict)  # node -> plugin where kube-scheduler's loop stopped
    unresolvable: dict[str, list[str]] = field(default_factory=dict)
    filter_fail: dict[str, str] = field(default_factory=dict)
    feasible: list[str] = field(default_factory=list)
    feasible_count: int = 0
    evaluated_nodes: int = 0
    prescore: dict[str, str] | None = None
    score: dict[str, dict[str, int]] | None = None
    normalized_score: dict[str, dict[str, int]] | None = None
    final_score: dict[str, dict[str, int]] | None = None
    total: dict[str, int] | None = None
    selected: list[str] | None = None  # the nodes sharing the best total (selectHost's candidates), by name
    # selectHost's pick (``ScheduleResult.SuggestedHost``), kept when Reserve, Permit or Bind then fail on it, and how
    # a tie among ``selected`` was broken ("random": reservoir sampling as kube-scheduler; "name": the first by name).
    suggested_host: str | None = None
    tie_break: str | None = None
    postfilter: dict[str, Any] | None = None
    reserve: dict[str, str] = field(default_factory=dict)
    permit: dict[str, str] = field(default_factory=dict)
    permit_timeout: dict[str, float] = field(default_factory=dict)
    # Waiting in Permit: the node the pod is held on while it waits (result "waiting"), then how the wait ended
    # (node, waitedSeconds, outcome allowed|rejected, plugin, message) and which plugin rejected it.
    waiting_on: str | None = None
    permit_wait: dict[str, Any] | None = None
    rejected_by: str | None = None
    prebind: dict[str, str] = field(default_factory=dict)
    bind: dict[str, str] = field(default_factory=dict)
    # Scheduler extenders' calls: record name ("Extender(<urlPrefix>)") -> verb -> "success" | "error: ..." |
    # "ignored error: ..." (their verdicts and scores are in the filter/score records beside the plugins').
    extenders: dict[str, dict[str, str]] = field(default_factory=dict)
    # What each extender answered, per verb (filter, prioritize, preempt, bind) and urlPrefix, as
    # kube-scheduler-simulator's extender-*-result annotations show it.
    extender_results: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Objects this attempt met malformed for the first time (issue #35): (kind, namespace, name, problem); the host
    # records a Warning Event on each (a node is reported once per version the engine holds).
    malformed_objects: list[tuple[str, str, str, str]] = field(default_factory=list)
    # A v1.36 PodGroup scheduling cycle's attempt: the group (namespace/name), its pods in the order tried, and the
    # cycle's outcome and message as its PodGroupScheduled condition says them; the pod's nomination while the group
    # waits for a preemption, and what workload-aware preemption did and to which pods where (podgroup_cycle.py).
    pod_group: dict[str, Any] | None = None
    # Set by a host, never by the engine: a binding another scheduler made (binder, times, Events, conditions,
    # warnings on its result annotations), and kss's own judgement of the same pod at that moment (the shadow).
    external: dict[str, Any] | None = None
    shadow: dict[str, Any] | None = None
    started_at: float = 0.0
    duration: float = 0.0
    queued_for: float = 0.0
    # The batch record path's matrices; ``filter``, ``unresolvable``, ``filter_fail`` and the score dicts are
    # built from them when first read (entries written to those dicts directly are kept beside them).
    filter_matrix: FilterMatrix | None = None
    score_matrix: ScoreMatrix | None = None

    @property
    def fit_error(self) -> str | None:
        return self.message if self.result != "scheduled" and self.message else None

    def has_record(self) -> bool:
        """Whether per-node filter verdicts or scores were recorded (without building the dicts)."""
        fm, sm = self.filter_matrix, self.score_matrix
        if (fm is not None and len(fm)) or (sm is not None and len(sm)):
            return True
        return bool(self.__dict__.get("_filter")) or bool(self.__dict__.get("_score"))

    def matrices_only(self) -> tuple[FilterMatrix | None, ScoreMatrix | None] | None:
        """The record matrices when they hold every per-node entry of the record dicts; None otherwise (some
        entries were written to the dicts directly, or no matrix was kept)."""
        fm, sm = self.filter_matrix, self.score_matrix
        if fm is None and sm is None:
            return None
        d = self.__dict__
        if _DICTS_USED not in d:
            return fm, sm  # no record dict was read or written (the usual case): the matrices hold everything
        get = d.get
        if (
            not (get("_filter") or get("_unresolvable") or get("_filter_fail"))
            and get("_score") is None
            and get("_normalized_score") is None
            and get("_final_score") is None
            and get("_total") is None
        ):
            return fm, sm  # no record dict was read or written (the usual case): the matrices hold everything
        for slot in ("_filter", "_unresolvable", "_filter_fail"):
            current = d.get(slot)
            if not current:
                continue
            if fm is None:
                return None
            matrix: FilterMatrix = fm
            if d.get(slot + "_from") is not matrix:
                return None
            rows = len(matrix) if slot == "_filter" else matrix.failing_count() if slot == "_filter_fail" else -1
            if rows >= 0 and len(current) != rows:
                return None
        for slot in ("_score", "_normalized_score", "_final_score", "_total"):
            if d.get(slot) is not None and (sm is None or d.get(slot + "_from") is not sm):
                return None
        return fm, sm

    def set_feasible_lazy(self, build: Callable[[], list[str]]) -> None:
        """``feasible`` is computed by ``build`` when first read (the batch path rarely needs the names)."""
        self.__dict__["_feasible"] = None
        self.__dict__["_feasible_build"] = build

    def set_selected_lazy(self, names: Sequence[str], idx: IntArray) -> None:
        """``selected`` is ``sorted(names[i] for i in idx)``, built when first read (the best nodes can be
        hundreds of names; the results writer sends the positions instead)."""
        self.__dict__["_selected"] = None
        self.__dict__["_selected_src"] = (names, idx)

    def selected_positions(self) -> tuple[Sequence[str], IntArray] | None:
        """The node-name list and positions ``selected`` is made of, when it was set lazily."""
        src: tuple[Sequence[str], IntArray] | None = self.__dict__.get("_selected_src")
        return src


def _matrix_view(name: str, source: str, build: Callable[[Any], Any], merge: bool) -> property:
    """A dict field of Attempt whose content also comes from a matrix, built when first read."""
    slot = "_" + name
    seen = "_" + name + "_from"

    def get(self: Attempt) -> Any:
        d = self.__dict__
        d[_DICTS_USED] = True  # the caller may change what it got
        matrix = getattr(self, source)
        if matrix is not None and d.get(seen) is not matrix:
            d[seen] = matrix
            built = build(matrix)
            current = d.get(slot)
            if merge and current:
                current.update(built)
            else:
                d[slot] = built
        return d.get(slot)

    def set_(self: Attempt, value: Any) -> None:
        d = self.__dict__
        if value:  # the dataclass's defaults (empty or None) leave the matrices the whole record
            d[_DICTS_USED] = True
        d[slot] = value

    return property(get, set_)


# Set in an Attempt once a record dict was read or given entries (``matrices_only`` then checks them).
_DICTS_USED = "_dicts_used"


def _feasible_get(self: Attempt) -> list[str]:
    d = self.__dict__
    value = d.get("_feasible")
    if value is None:
        build = d.pop("_feasible_build", None)
        value = d["_feasible"] = build() if build is not None else []
    return value


def _feasible_set(self: Attempt, value: list[str]) -> None:
    self.__dict__.pop("_feasible_build", None)
    self.__dict__["_feasible"] = value


for _name, _source, _build, _merge in (
    ("filter", "filter_matrix", FilterMatrix.filter_dict, True),
    ("unresolvable", "filter_matrix", FilterMatrix.unresolvable_dict, True),
    ("filter_fail", "filter_matrix", FilterMatrix.filter_fail_dict, True),
    ("score", "score_matrix", ScoreMatrix.score_dict, False),
    ("normalized_score", "score_matrix", ScoreMatrix.normalized_dict, False),
    ("final_score", "score_matrix", ScoreMatrix.final_dict, False),
    ("total", "score_matrix", ScoreMatrix.total_dict, False),
):
    setattr(Attempt, _name, _matrix_view(_name, _source, _build, _merge))
Attempt.feasible = property(_feasible_get, _feasible_set)  # type: ignore[assignment]


def _selected_get(self: Attempt) -> list[str] | None:
    d = self.__dict__
    value: list[str] | None = d.get("_selected")
    if value is None:
        src = d.get("_selected_src")
        if src is not None:
            names, idx = src
            value = d["_selected"] = sorted(names[i] for i in idx.tolist())
    return value


def _selected_set(self: Attempt, value: list[str] | None) -> None:
    self.__dict__.pop("_selected_src", None)
    self.__dict__["_selected"] = value


Attempt.selected = property(_selected_get, _selected_set)  # type: ignore[assignment]
