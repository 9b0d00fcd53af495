"""The Filter extension point of the framework runtime: per node, on a batch of nodes, recorded, and with the
nominated pods.

``FilterRunners`` is a mixin of ``runtime.Framework``, which defines the state and methods declared here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from numpy import count_nonzero

from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch, filled
from kss_sim.scheduler.filter_record import (
    NONE_REJECTED,
    UINT8_REASONS,
    ReasonTable,
    RecordFilterOutcome,
    Rejected,
    keyed_cells,
    per_node_cells,
)
from kss_sim.scheduler.framework import (
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    Plugin,
    PreFilterPlugin,
    Status,
    error,
    success,
)
from kss_sim.scheduler.guard import PluginResultError, is_in_tree
from kss_sim.scheduler.nodeinfo import NodeInfo, NodeWithout, PodInfo
from kss_sim.scheduler.record import SKIP
from kss_sim.scheduler.watchdog import PluginTimeout


class BatchFilterOutcome:
    """Filter verdicts for a batch of nodes: who passed, and for the others the first plugin that failed."""

    __slots__ = ("batch", "fail_plugin", "has_error", "ok", "statuses")

    def __init__(self, batch: NodeBatch) -> None:
        self.batch = batch
        n = len(batch)
        self.ok: BoolArray = filled(n, True, np.bool_)
        # Index into Framework.filter of the first plugin that rejected each node (-1: passed).
        self.fail_plugin: IntArray = filled(n, -1, np.int64)
        # Statuses already known (per-node plugins), by batch position.
        self.statuses: dict[int, Status] = {}
        self.has_error = False


def _filter_status(pl: FilterPlugin, st: Status) -> Status:
    """A failing Filter status as RunFilterPlugins reports it (errors wrapped, plugin named)."""
    if not st.is_rejected():
        st = error(f'running "{pl.name}" filter plugin: {st.message()}')
    st.plugin = pl.name
    return st


class RaisedStatus(Status):
    """The status of a node a Filter plugin raised on (``Framework.node_failure``): that node fails. When every node
    the cycle evaluated raised, the failure is the plugin's (or the pod's), not a node's, and the attempt is an
    error as before (``Scheduler._find_nodes_that_pass_filters``)."""

    __slots__ = ()


def _defect_status(node_info: NodeInfo, record: dict[str, Status] | None) -> Status:
    """A malformed node's Filter status: UnschedulableAndUnresolvable for the plugin reading the wrong field."""
    defect = node_info.defect
    assert defect is not None
    st = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, defect.message(), plugin=defect.plugin)
    if record is not None:
        record[defect.plugin] = st
    return st


class FilterWithoutCopy:
    """How a cycle's Filter plugins answer on a node with some of its pods taken off, without copying the node
    (``FilterRunners.filter_without_copy``): ``plugins`` are the ones the cycle runs, in order, each with whether
    it answers from a ``NodeWithout`` (``filter_without``; else it reads no pod and is asked on the node itself);
    ``pod_readers`` are the former, the only ones whose verdict putting a pod back can change."""

    __slots__ = ("plugins", "pod_readers")

    def __init__(self, plugins: list[tuple[FilterPlugin, bool]]) -> None:
        self.plugins = plugins
        self.pod_readers = [(pl, True) for pl, reads in plugins if reads]


class FilterRunners:
    """The Filter side of ``Framework``."""

    handle: Handle
    filter: list[FilterPlugin]
    pre_filter: list[PreFilterPlugin]

    if TYPE_CHECKING:

        def failure(self, point: str, pl: Plugin, exc: Exception) -> Status: ...

        def node_failure(self, pl: Plugin, node_info: NodeInfo, exc: Exception) -> Status: ...

        def run_pre_filter_extension_add_pod(
            self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo
        ) -> Status: ...

    def run_filter_plugins(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo, record: dict[str, Status] | None = None
    ) -> Status:
        """``RunFilterPlugins``: the first non-success status wins. With ``record``, every plugin runs and is kept.

        A malformed node (``NodeInfo.defect``) fails for the plugin reading the wrong field, and a plugin raising on
        a node fails that node only (``node_failure``): kube-scheduler's typed objects meet neither.
        """
        if node_info.defect is not None:
            return _defect_status(node_info, record)
        first: Status | None = None
        for pl in self.filter:
            if pl.name in state.skip_filter_plugins:
                if record is not None:
                    record[pl.name] = Status(Code.SKIP)
                continue
            try:
                st = pl.filter(state, pod, node_info)
                passed = st.is_success()
            except (PluginResultError, PluginTimeout) as exc:  # the pod's error, not the node's
                st, passed = self.failure("Filter", pl, exc), False
            except Exception as exc:
                st, passed = self.node_failure(pl, node_info, exc), False
            if record is not None:
                record[pl.name] = st
            if not passed:
                if not st.is_rejected():
                    st = error(f'running "{pl.name}" filter plugin: {st.message()}')
                st.plugin = pl.name
                if first is None:
                    first = st
                if record is None:
                    return st
        return first if first is not None else success()

    def filter_without_copy(self, state: CycleState) -> FilterWithoutCopy | None:
        """Whether this cycle's Filter run on a node with pods taken off (a preemption dry run's) can be answered
        without copying the node and ``state``: when no PreFilter extension would change ``state`` as pods go and
        come back (none of this cycle's PreFilter plugins has one), and every Filter plugin the cycle runs is an
        in-tree one that reads no pod (``filter_reads_pods``) or answers from a ``NodeWithout``
        (``filter_without``). None otherwise."""
        skipped = state.skip_filter_plugins
        try:
            if any(pl.name not in skipped and pl.pre_filter_extensions() is not None for pl in self.pre_filter):
                return None
        except Exception:  # the copying run reports it as that point's error
            return None
        plugins: list[tuple[FilterPlugin, bool]] = []
        for pl in self.filter:
            if pl.name in skipped:
                continue
            if not is_in_tree(pl):
                return None
            if not type(pl).filter_reads_pods:
                plugins.append((pl, False))
            elif type(pl).filter_without is not FilterPlugin.filter_without:
                plugins.append((pl, True))
            else:
                return None
        return FilterWithoutCopy(plugins)

    def run_filter_plugins_without_copy(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeWithout,
        plugins: list[tuple[FilterPlugin, bool]],
    ) -> Status:
        """``run_filter_plugins`` on a copy of ``node.node_info`` with ``node``'s pods taken off, without the copy:
        ``plugins`` (a ``FilterWithoutCopy``'s) asked on the node itself or on ``node``. The caller makes sure no
        nominated pod would be added to it (``run_filter_plugins_with_nominated_pods`` would then run twice)."""
        node_info = node.node_info
        if node_info.defect is not None:
            return _defect_status(node_info, None)
        for pl, reads_pods in plugins:
            try:
                answer = pl.filter_without(state, pod, node) if reads_pods else pl.filter(state, pod, node_info)
                assert answer is not None  # filter_without_copy admits only the in-tree plugins that answer
                st = answer
                passed = st.is_success()
            except (PluginResultError, PluginTimeout) as exc:
                st, passed = self.failure("Filter", pl, exc), False
            except Exception as exc:
                st, passed = self.node_failure(pl, node_info, exc), False
            if not passed:
                return _filter_status(pl, st)
        return success()

    def fits_without_copy(
        self, state: CycleState, pod: PodInfo, node: NodeWithout, plugins: list[tuple[FilterPlugin, bool]]
    ) -> bool:
        """Whether ``run_filter_plugins_without_copy`` succeeds (a plugin that raises rejects the node there too),
        without building its statuses: a dry run's reprieve asks only that, once per pod put back."""
        node_info = node.node_info
        if node_info.defect is not None:
            return False
        for pl, reads_pods in plugins:
            try:
                answer = pl.filter_without(state, pod, node) if reads_pods else pl.filter(state, pod, node_info)
            except (PluginResultError, PluginTimeout) as exc:
                self.failure("Filter", pl, exc)
                return False
            except Exception as exc:  # logged as the copying run logs it
                self.node_failure(pl, node_info, exc)
                return False
            if answer is None or not answer.is_success():
                return False
        return True

    def run_filter_plugins_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BatchFilterOutcome:
        """``RunFilterPlugins`` on every node of ``batch`` at once (no nominated pods, no recording).

        Plugins run in profile order on the nodes every earlier plugin passed, through ``filter_nodes`` when
        they have it, else ``filter`` per node; the verdicts equal the per-node loop's.
        """
        out = BatchFilterOutcome(batch)
        n = len(batch)
        # Batch positions of the nodes every plugin so far passed (a full batch's are its column positions, shared).
        alive: IntArray = batch.idx if batch.full else np.arange(n, dtype=np.int64)
        try:
            for k, pl in enumerate(self.filter):
                if pl.name in state.skip_filter_plugins:
                    continue
                if not len(alive):
                    break
                sub = batch if len(alive) == n else batch.subset(alive)
                mask = pl.filter_nodes(state, pod, sub)
                if mask is None:
                    verdicts: list[bool] = []
                    for j, ni in enumerate(sub.nodes):
                        st = pl.filter(state, pod, ni)
                        if st.is_success():
                            verdicts.append(True)
                            continue
                        verdicts.append(False)
                        st = _filter_status(pl, st)
                        if st.code == Code.ERROR:
                            out.has_error = True
                        out.statuses[int(alive[j])] = st
                    mask = np.array(verdicts, dtype=np.bool_)
                if count_nonzero(mask) == len(mask):  # all passed (mask.all()'s Python wrapper costs ~10x)
                    continue
                out.fail_plugin[alive[~mask]] = k
                alive = alive[mask]
        except Exception as exc:  # the per-node loop decides (and reports the error)
            self.failure("Filter", pl, exc)
            out.has_error = True
            return out
        out.ok = out.fail_plugin < 0
        return out

    def run_filter_plugins_record_batch(
        self, state: CycleState, pod: PodInfo, batch: NodeBatch, table: ReasonTable | None = None
    ) -> RecordFilterOutcome | None:
        """``RunFilterPlugins`` with recording on every node of ``batch``: every plugin on every node.

        Statuses of rejected nodes are asked once per distinct ``filter_keys`` key (of ``filter_status_of_key``
        or ``filter``), of ``filter`` on every rejected node for plugins without keys. None when a plugin returned
        anything but success or a rejection (the per-node loop then decides, as kube-scheduler stops at errors).
        """
        table = table if table is not None else ReasonTable()
        n = len(batch)
        num_plugins = len(self.filter)
        # Cells are mostly constant per plugin (PASSED, or SKIP for skipped plugins): a row of those, and a column
        # per plugin that rejected nodes.
        row = np.zeros(num_plugins, np.int16)
        rejected: list[Rejected] = []
        skip_plugins = state.skip_filter_plugins
        try:
            for k, pl in enumerate(self.filter):
                if pl.name in skip_plugins:
                    row[k] = SKIP
                    continue
                keys = pl.filter_keys(state, pod, batch)
                of_key = keys is not None
                if keys is None:
                    mask = pl.filter_nodes(state, pod, batch)
                    if mask is None:
                        got = per_node_cells(k, pl, state, pod, batch, table)
                        if got is None:
                            return None
                        if got is not NONE_REJECTED:
                            rejected.append(got)
                        continue
                    if mask.all():
                        continue
                    # Keys for the whole batch from the rejected nodes' status keys (+1: 0 is for passing nodes), or
                    # one key per rejected node.
                    bad = np.flatnonzero(~mask)
                    sub = pl.filter_status_keys(state, pod, batch.subset(bad)) if len(bad) > 1 else None
                    keys = np.zeros(n, np.int64)
                    keys[bad] = sub + 1 if sub is not None else np.arange(1, len(bad) + 1)
                got = keyed_cells(k, pl, state, pod, batch, keys, table, of_key)
                if got is None:
                    return None
                if got is not NONE_REJECTED:
                    rejected.append(got)
        except Exception as exc:  # the per-node loop decides (and reports the error)
            self.failure("Filter", pl, exc)
            return None
        # ``fail``: the first plugin (in profile order) that rejected each node; assigned last to first so the
        # first one wins.
        fail: npt.NDArray[np.signedinteger[Any]] = np.empty(n, np.int8 if num_plugins < 128 else np.int16)
        fail.fill(-1)
        for k, bad, _, _ in reversed(rejected):
            fail[bad] = k
        dtype = np.uint8 if len(table.reasons) < UINT8_REASONS else np.int16
        columns: dict[int, npt.NDArray[Any]] = {}
        for k, bad, cells, whole in rejected:
            if whole:
                columns[k] = cells
            else:
                column = columns[k] = np.zeros(n, dtype)
                column[bad] = cells
            row[k] = -1
        return RecordFilterOutcome(batch, columns, fail, table, row)

    def batch_filter_status(self, state: CycleState, pod: PodInfo, outcome: BatchFilterOutcome, pos: int) -> Status:
        """The status of a node the batch rejected (asked of the rejecting plugin's ``filter``)."""
        st = outcome.statuses.get(pos)
        if st is not None:
            return st
        pl = self.filter[int(outcome.fail_plugin[pos])]
        ni = outcome.batch.nodes[pos]
        try:
            st = pl.filter(state, pod, ni)
            if st.is_success():  # the plugin's batch and per-node verdicts differ: the per-node loop decides
                st = error(f"filter_nodes rejected node {ni.name!r} that filter accepts")
        except (PluginResultError, PluginTimeout) as exc:  # the pod's error, not the node's
            st = self.failure("Filter", pl, exc)
        except Exception as exc:
            st = self.node_failure(pl, ni, exc)
        st = _filter_status(pl, st)
        outcome.statuses[pos] = st
        return st

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo, record: dict[str, Status] | None = None
    ) -> Status:
        """Filters run twice when equal-or-higher priority pods are nominated here: with them, then without."""
        status = success()
        pods_added = False
        for i in range(2):
            state_to_use, info_to_use = state, node_info
            if i == 0:
                pods_added, state_to_use, info_to_use, err = self._add_nominated_pods(state, pod, node_info)
                if err is not None:
                    return err
            elif not pods_added or not status.is_success():
                break
            if record is not None:
                record.clear()
            status = self.run_filter_plugins(state_to_use, pod, info_to_use, record)
            if not status.is_success() and not status.is_rejected():
                return status
        return status

    def _add_nominated_pods(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo, Status | None]:
        nominated = self.handle.nominated_pods_for_node(node_info.name)
        if not nominated:
            return False, state, node_info, None
        info_out = node_info.clone()
        state_out = state.clone()
        added = False
        for pi in nominated:
            if pi.priority >= pod.priority and pi.uid != pod.uid:
                info_out.add_pod(pi)
                st = self.run_pre_filter_extension_add_pod(state_out, pod, pi, info_out)
                if not st.is_success():
                    return False, state, node_info, st
                added = True
        return added, state_out, info_out, None
