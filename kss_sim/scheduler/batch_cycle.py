"""The batch path of a scheduling attempt: ``findNodesThatFitPod`` and ``prioritizeNodes`` over node columns.

The vectorised equivalent of ``cycle.py``'s per-node loop (kube-scheduler's ``schedule_one.go``), there for speed
(docs/performance.md): the plugins' batch forms filter every candidate node at once (``columns.NodeBatch``), the
walk kube-scheduler would take (start index, stop past ``numFeasibleNodesToFind``) is replayed on the verdicts, and
the feasible nodes are scored as arrays. It must agree with the per-node loop, the reference it is checked against
(``ScheduleOptions.batch`` off): same decisions, fit errors and, with ``record``, the same records. Where a plugin
returns an error (or, recording, nominated pods weigh in) it hands the attempt back to that loop.

``BatchCycle`` is a mixin of ``cycle.Scheduler``: it uses the scheduler's snapshot, walk start and weights cache,
and its ``_nodes_to_find``, ``_pick``, ``_handle_fit_error`` and ``_assume_and_bind`` (declared here for the type
checker only).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kss_sim.scheduler.columns import IntArray, NodeBatch
from kss_sim.scheduler.filter_record import UINT8_REASONS, ReasonTable, RecordFilterOutcome
from kss_sim.scheduler.framework import Code, CycleState, FilterPlugin, Status
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.record import PASSED, SKIP, Attempt, FilterMatrix, ScoreMatrix
from kss_sim.scheduler.runtime import Framework
from kss_sim.scheduler.runtime_filter import BatchFilterOutcome, RaisedStatus
from kss_sim.scheduler.snapshot import Snapshot

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kss_sim.scheduler.cycle import Diagnosis, ScheduleOptions


# Largest filter key mapped to its status through a table (as ``filter_record`` does); bigger ones via np.unique.
_KEY_TABLE = 4096


class BatchCycle:
    """The batch path's methods of ``Scheduler`` (which defines the state and methods declared here)."""

    snapshot: Snapshot
    next_start_node_index: int
    rng: random.Random
    _weights_arrays: dict[tuple[Framework, tuple[str, ...]], IntArray]

    if TYPE_CHECKING:

        def _nodes_to_find(self, fwk: Framework, opts: ScheduleOptions, n: int) -> int: ...

        def _pick(self, top: list[str], tie_break: str) -> str: ...

        def _handle_fit_error(
            self,
            fwk: Framework,
            state: CycleState,
            pod: PodInfo,
            diagnosis: Diagnosis,
            att: Attempt,
            *,
            post_filter: bool = True,
        ) -> None: ...

        def _assume_and_bind(
            self, fwk: Framework, state: CycleState, pod: PodInfo, node_name: str, att: Attempt, opts: ScheduleOptions
        ) -> None: ...

        def _record_only(
            self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], att: Attempt
        ) -> None: ...

    def _filter_batch(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        att: Attempt,
        opts: ScheduleOptions,
        *,
        record_excluded: bool = False,
    ) -> tuple[NodeBatch, int] | None:
        """``findNodesThatPassFilters`` on all candidate nodes at once; the feasible nodes and how many were processed.

        Every candidate is filtered (plugins are pure), then kube-scheduler's walk is replayed on the verdicts:
        from ``next_start_node_index``, stopping at the feasible node after the ``numFeasibleNodesToFind``-th.
        Statuses are materialised only for a pod that fits nowhere. With ``opts.record`` every plugin runs on
        every node and the visited nodes' verdicts go to ``att.filter_matrix``; nodes with nominated pods of at least
        the pod's priority are filtered one by one with those pods added. None when a plugin returned an error (or
        when a node is malformed).

        ``record_excluded`` (with ``opts.record``): the snapshot's nodes outside ``nodes`` (those a PreFilterResult
        left out) are recorded too, before the visited ones and in node-list order, as ``_record_only`` would; no
        decision depends on them. Done here unless None is returned (the caller then records them per node).
        """
        if self.snapshot.any_defective():  # malformed nodes fail per node (Framework.run_filter_plugins)
            return None
        cols = self.snapshot.columns()
        n = len(nodes)
        record = opts.record
        if n == 0:
            if record and record_excluded:  # no candidate: every node was left out, recorded one by one as before
                self._record_only(fwk, state, pod, cols.infos, att)
            return NodeBatch(cols, np.zeros(0, np.int64), []), 0
        if record and record_excluded and not fwk.filter:
            # No filter plugin: nothing to batch (each left-out node's record is empty), one by one as before.
            allowed = {ni.name for ni in nodes}
            self._record_only(fwk, state, pod, [ni for ni in cols.infos if ni.name not in allowed], att)
        to_find = self._nodes_to_find(fwk, opts, n)
        start = self.next_start_node_index % n
        same_list = nodes is cols.infos
        whole = same_list and start == 0
        table = ReasonTable()
        excluded: RecordFilterOutcome | None = None
        if same_list:
            positions = _rolled_range(n, start) if start else cols.positions
        else:
            positions = np.fromiter((ni.column_index for ni in nodes), np.int64, n)
            if record and record_excluded and fwk.filter:
                # Every plugin on every left-out node in one batch (per node, 15,000 of them for a DaemonSet
                # pod at upstream's scale, this was most of the server's cycle); the same reason table.
                left_out = np.ones(cols.n, np.bool_)
                left_out[positions] = False
                excluded = fwk.run_filter_plugins_record_batch(
                    state, pod, NodeBatch(cols, np.flatnonzero(left_out)), table
                )
                if excluded is None or not self._nominated_record_override(fwk, state, pod, excluded):
                    return None
            if start:
                positions = np.roll(positions, -start)
        if not fwk.filter:
            if record:
                take = positions[:to_find]
                att.filter_matrix = FilterMatrix(
                    cols.names, take, [], np.zeros((len(take), 0), np.int16), [], [], np.full(len(take), -1)
                )
            return NodeBatch(cols, positions[:to_find]), to_find
        # With sampling, filter the walk in chunks: usually the first one holds enough feasible nodes.
        size = n if to_find >= n else min(n, max(2 * to_find, 256))
        chunks: list[tuple[int, BatchFilterOutcome]] = []
        rec_chunks: list[RecordFilterOutcome] = []
        offset = found = 0
        while offset < n:
            end = min(n, offset + size)
            if whole and offset == 0 and end == n:
                batch = NodeBatch.all(cols)
            else:
                batch = NodeBatch(cols, positions[offset:end])
            if record:
                rec = fwk.run_filter_plugins_record_batch(state, pod, batch, table)
                if rec is None or not self._nominated_record_override(fwk, state, pod, rec):
                    return None
                rec_chunks.append(rec)
                ok_chunk = rec.ok
            else:
                out = fwk.run_filter_plugins_batch(state, pod, batch)
                if out.has_error or self._nominated_override(fwk, state, pod, out):
                    return None
                chunks.append((offset, out))
                ok_chunk = out.ok
            found += int(np.count_nonzero(ok_chunk))
            offset = end
            if found > to_find:
                break
            size *= 2
        if record:
            ok = rec_chunks[0].ok if len(rec_chunks) == 1 else np.concatenate([r.ok for r in rec_chunks])
        else:
            ok = chunks[0][1].ok if len(chunks) == 1 else np.concatenate([out.ok for _, out in chunks])
        feasible_pos = np.flatnonzero(ok)
        cutoff = offset
        if len(feasible_pos) > to_find:
            # kube-scheduler stops at one more feasible node than it needs (not kept).
            cutoff = int(feasible_pos[to_find])
            feasible_pos = feasible_pos[:to_find]
        att.evaluated_nodes += cutoff
        if record:
            rotation = start if same_list else None
            fits_nowhere = len(feasible_pos) == 0
            self._keep_filter_matrix(rec_chunks, positions, cutoff, diagnosis, att, fits_nowhere, rotation, excluded)
        elif not len(feasible_pos):
            names = cols.names
            node_to_status, filter_fail = diagnosis.node_to_status.statuses, att.filter_fail
            add_plugin = diagnosis.unschedulable_plugins.add
            for offset, out in chunks:
                rejected = self._rejected_statuses(fwk, state, pod, out)
                if rejected is None:
                    return None
                at, statuses, texts = rejected
                chunk_positions = positions[offset : offset + len(out.ok)]
                rejected_names = list(map(names.__getitem__, chunk_positions.take(at).tolist())) if at else []
                node_to_status.update(zip(rejected_names, statuses, strict=True))
                filter_fail.update(zip(rejected_names, texts, strict=True))
                for st in dict.fromkeys(statuses):
                    add_plugin(st.plugin)
        if whole and len(feasible_pos) == n:
            return NodeBatch.all(cols), cutoff
        return NodeBatch(cols, positions[feasible_pos]), cutoff

    def _rejected_statuses(
        self, fwk: Framework, state: CycleState, pod: PodInfo, out: BatchFilterOutcome
    ) -> tuple[list[int], list[Status], list[str]] | None:
        """The nodes of ``out`` the filters rejected (batch positions, in order), their statuses and ``filter_fail``
        texts, for a pod that fits nowhere; None when a status is an error.

        Nodes whose rejecting plugin has ``filter_keys`` share one status per key, as the record pass does
        (``filter_record.keyed_cells``): ``filter_status_of_key``'s, else the first such node's ``filter``. The
        others are asked one by one (``batch_filter_status``). On a full cluster every node is rejected in every
        failed attempt, so the usual case (one plugin rejected them all, with keys) is done on arrays."""
        rejected: IntArray = np.flatnonzero(~out.ok)
        if not len(rejected):
            return [], [], []
        fail = out.fail_plugin.take(rejected)
        first = int(fail[0])
        if not out.statuses and bool((fail == first).all()):
            pl = fwk.filter[first]
            keys = self._filter_keys(pl, state, pod, out.batch)
            if keys is not None:
                node_keys = keys.take(rejected)
                if int(node_keys.min()) > 0:  # a 0 would be a node the plugin's keys pass: asked alone below
                    if int(node_keys.max()) < _KEY_TABLE:
                        distinct = np.bincount(node_keys).nonzero()[0]
                        index_of = np.zeros(int(distinct[-1]) + 1, np.intp)
                        index_of[distinct] = np.arange(len(distinct))
                        picks = index_of.take(node_keys).tolist()
                    else:
                        distinct, inverse = np.unique(node_keys, return_inverse=True)
                        picks = inverse.reshape(-1).tolist()
                    shared: list[Status] = []
                    for key in distinct.tolist():
                        st = self._status_of_key(pl, state, pod, key)
                        if st is None:
                            at = int(np.flatnonzero(node_keys == key)[0])
                            st = fwk.batch_filter_status(state, pod, out, int(rejected[at]))
                        if st.code == Code.ERROR:
                            return None
                        shared.append(st)
                    shared_texts = [f"{st.plugin}: {st.message()}" for st in shared]
                    return (
                        rejected.tolist(),
                        list(map(shared.__getitem__, picks)),
                        list(map(shared_texts.__getitem__, picks)),
                    )
        positions: list[int] = []
        statuses: list[Status] = []
        texts: list[str] = []
        keys_of: dict[int, list[int] | None] = {}
        by_key: dict[tuple[int, int], tuple[Status, str]] = {}
        for j, k in zip(rejected.tolist(), fail.tolist(), strict=True):
            st = out.statuses.get(j)
            key = 0
            if st is None:
                if k not in keys_of:
                    got = self._filter_keys(fwk.filter[k], state, pod, out.batch)
                    keys_of[k] = None if got is None else got.tolist()
                node_keys_list = keys_of[k]
                key = node_keys_list[j] if node_keys_list is not None else 0
                hit = by_key.get((k, key)) if key else None
                if hit is not None:
                    positions.append(j)
                    statuses.append(hit[0])
                    texts.append(hit[1])
                    continue
                st = self._status_of_key(fwk.filter[k], state, pod, key) if key else None
                if st is None:
                    st = fwk.batch_filter_status(state, pod, out, j)
            if st.code == Code.ERROR:
                return None
            text = f"{st.plugin}: {st.message()}"
            if key:
                by_key[(k, key)] = (st, text)
            positions.append(j)
            statuses.append(st)
            texts.append(text)
        return positions, statuses, texts

    @staticmethod
    def _filter_keys(pl: FilterPlugin, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """The plugin's ``filter_keys`` of the batch's nodes, None without them (or when they fail: the nodes are
        then asked one by one)."""
        try:
            return pl.filter_keys(state, pod, batch)
        except Exception:
            return None

    @staticmethod
    def _status_of_key(pl: FilterPlugin, state: CycleState, pod: PodInfo, key: int) -> Status | None:
        """The rejection ``filter_status_of_key`` gives (as RunFilterPlugins reports it), None when it gives none."""
        try:
            st = pl.filter_status_of_key(state, pod, key)
        except Exception:
            return None
        if st is None or not st.is_rejected():
            return None
        st.plugin = pl.name
        return st

    def _keep_filter_matrix(
        self,
        chunks: list[RecordFilterOutcome],
        positions: IntArray,
        cutoff: int,
        diagnosis: Diagnosis,
        att: Attempt,
        fits_nowhere: bool,
        rotation: int | None = None,
        excluded: RecordFilterOutcome | None = None,
    ) -> None:
        """The verdicts of the nodes the walk visited (the first ``cutoff``) as the attempt's filter matrix;
        ``rotation``: the walk's start when ``positions`` is the whole node list rotated. ``excluded``: the
        verdicts on the nodes a PreFilterResult left out, the matrix's first rows (no part of the diagnosis)."""
        skipped = 0
        if excluded is not None:
            skipped = len(excluded.fail)
            chunks = [excluded, *chunks]
            positions = np.concatenate([excluded.batch.idx, positions])
            cutoff += skipped
            rotation = None
        table = chunks[0].table
        # Cells in the smallest type that holds them (copied to the results writer, maybe kept by the caller): the
        # batch built them so unless a later chunk met more reasons.
        kept_type = np.uint8 if len(table.reasons) < UINT8_REASONS else np.int16
        columns: dict[int, npt.NDArray[Any]]
        if len(chunks) == 1:
            fail, columns = chunks[0].fail, chunks[0].columns
            constant: list[int] = chunks[0].constant.tolist()
        else:
            fail = np.concatenate([c.fail for c in chunks])
            merged = chunks[0].constant.copy()
            for c in chunks[1:]:
                merged[c.constant != merged] = -1
            constant = merged.tolist()
            columns = {
                k: np.concatenate(
                    [c.columns[k] if k in c.columns else np.full(len(c.fail), c.constant[k], kept_type) for c in chunks]
                )
                for k, ck in enumerate(constant)
                if ck < 0
            }
        varying = [column[:cutoff] for column in columns.values()]  # in plugin order, as ``constant``'s -1s
        for j, column in enumerate(varying):
            if column.dtype != kept_type:
                varying[j] = column.astype(kept_type)
        fail_kept = fail[:cutoff]
        if fail_kept.dtype != np.int8:
            fail_kept = fail_kept.astype(np.int8)
        all_names = chunks[0].batch.cols.names
        att.filter_matrix = FilterMatrix(
            all_names,
            positions[:cutoff],
            att.filter_plugins,  # the profile's filter plugins (one list per attempt, pickled once)
            None,
            table.reasons,
            table.unresolvable,
            fail_kept,
            rotation,
            constant,
            varying,
        )
        if not fits_nowhere:
            return
        # Diagnosis for the fit error and PostFilter: each rejected node's status (one object per reason), looked
        # up once per distinct (plugin, cell) and set in the rows' order (5,000 rows when a preemptor fits nowhere).
        rows = np.flatnonzero(fail[skipped:] >= 0) + skipped
        if not len(rows):
            return
        plugin_of_row = fail[rows].astype(np.int64)
        cell_of_row = np.empty(len(rows), np.int64)
        for k in np.unique(plugin_of_row).tolist():
            of_k = plugin_of_row == k
            cell_of_row[of_k] = columns[k][rows[of_k]]
        # One key per (plugin, cell): cells are int16 or uint8, so 2^16 above a plugin's index leaves room.
        keys, which = np.unique(plugin_of_row * 65_536 + (cell_of_row + 32_768), return_inverse=True)
        distinct = [table.statuses[(key // 65_536, key % 65_536 - 32_768)] for key in keys.tolist()]
        by_row = [distinct[j] for j in which.reshape(-1).tolist()]
        names = [all_names[i] for i in positions[rows].tolist()]
        diagnosis.node_to_status.statuses.update(zip(names, by_row, strict=True))
        diagnosis.unschedulable_plugins.update(st.plugin for st in distinct)

    def _record_nominated_batch(
        self, fwk: Framework, state: CycleState, pod: PodInfo, nominated: str, att: Attempt, diagnosis: Diagnosis
    ) -> NodeBatch | None:
        """The record of a pod that fits its nominated node, as one matrix: the nominated node's row (the verdicts
        the per-node run just recorded in ``att.filter``, moved here) then every other node's, which
        ``Scheduler._record_only`` would record (the same verdicts, other nominations counted on their nodes).
        Returns the feasible nominated node as a batch, so the lone node is scored as matrices too; the record is
        then matrices only, which the results writer and the annotations encode as arrays (with the nominated
        row kept in the dicts, a preemptor's retry on 5,000 nodes was encoded and annotated from 5,000 dicts).

        No decision depends on the rows; None when the batch cannot give them (a PodGroup placement, a malformed
        node, a plugin's error, a verdict on the nominated node that is not a pass): the caller records per node.
        """
        if not fwk.filter or self.snapshot.placement is not None or self.snapshot.any_defective():
            return None
        cols = self.snapshot.columns()
        col = cols.position.get(nominated)
        own = att.filter.get(nominated)
        if col is None or own is None or set(own) != {pl.name for pl in fwk.filter}:
            return None
        cells = [PASSED if own[pl.name] == "passed" else SKIP if own[pl.name] == "skip" else -1 for pl in fwk.filter]
        if -1 in cells:
            return None
        others = np.ones(cols.n, np.bool_)
        others[col] = False
        positions: IntArray = np.concatenate((np.array([col], np.int64), np.flatnonzero(others)))
        rec = fwk.run_filter_plugins_record_batch(state, pod, NodeBatch(cols, positions), ReasonTable())
        if rec is None or not self._nominated_record_override(fwk, state, pod, rec):
            return None
        for k, cell in enumerate(cells):  # row 0: what the per-node run recorded there
            _set_cell(rec, k, 0, cell)
        rec.fail[0] = -1
        rec.ok = rec.fail < 0
        rec.columns = dict(sorted(rec.columns.items()))
        # The row leaves the dicts (nothing else was written to them), so the matrix holds the whole record.
        del att.filter[nominated]
        att.unresolvable.pop(nominated, None)
        att.filter_fail.pop(nominated, None)
        self._keep_filter_matrix([rec], positions, len(positions), diagnosis, att, fits_nowhere=False)
        return NodeBatch(cols, positions[:1])

    def _nominated_positions(self, fwk: Framework, pod: PodInfo, batch: NodeBatch) -> list[tuple[int, int]]:
        """(batch position, column) of the batch's nodes with nominated pods of at least the pod's priority: they
        are filtered with those pods added (``RunFilterPluginsWithNominatedPods``), one by one."""
        nominated = fwk.handle.nominated_pods
        if not nominated:
            return []
        where: dict[int, int] | None = None
        found: list[tuple[int, int]] = []
        for node_name, pods in nominated.items():
            if not any(p.priority >= pod.priority and p.uid != pod.uid for p in pods):
                continue
            col = batch.cols.position.get(node_name)
            if col is None:
                continue
            if where is None:
                where = {c: j for j, c in enumerate(batch.idx.tolist())}
            j = where.get(col)
            if j is not None:
                found.append((j, col))
        return found

    def _nominated_record_override(
        self, fwk: Framework, state: CycleState, pod: PodInfo, rec: RecordFilterOutcome
    ) -> bool:
        """Recording: the rows of nodes with nominated pods of at least the pod's priority rewritten with what the
        per-node loop records there (every plugin's verdict with those pods added, or without them when they
        passed with them). False when a node's run gave an error or a plugin raised (the per-node loop takes over,
        as it decides where kube-scheduler stops). A preemptor nominated somewhere used to send every lower-priority
        pod's recorded cycle through the per-node loop on every node (the served PreemptionAsync's measured pods)."""
        positions = self._nominated_positions(fwk, pod, rec.batch)
        for j, col in positions:
            verdicts: dict[str, Status] = {}
            st = fwk.run_filter_plugins_with_nominated_pods(state, pod, rec.batch.cols.infos[col], verdicts)
            if not st.is_success() and not st.is_rejected():
                return False
            first = -1
            for k, pl in enumerate(fwk.filter):
                got = verdicts.get(pl.name)
                if got is None or isinstance(got, RaisedStatus):
                    return False
                if got.code == Code.SKIP:
                    cell = SKIP
                elif got.is_success():
                    cell = PASSED
                elif got.is_rejected():
                    cell = rec.table.cell_for(k, pl, got)
                    if first < 0:
                        first = k
                else:
                    return False
                _set_cell(rec, k, j, cell)
            rec.fail[j] = first
        if positions:
            rec.ok = rec.fail < 0
            rec.columns = dict(sorted(rec.columns.items()))  # plugin order, as the matrix's varying columns are read
        return True

    def _nominated_override(self, fwk: Framework, state: CycleState, pod: PodInfo, out: BatchFilterOutcome) -> bool:
        """Nodes with nominated pods of at least the pod's priority are filtered with those pods added.

        Updates the batch verdicts in place; True when that gave an error (the per-node loop takes over).
        """
        infos = out.batch.cols.infos
        for j, col in self._nominated_positions(fwk, pod, out.batch):
            st = fwk.run_filter_plugins_with_nominated_pods(state, pod, infos[col])
            if st.is_success():
                out.ok[j] = True
                out.fail_plugin[j] = -1
                out.statuses.pop(j, None)
            elif st.code == Code.ERROR:
                return True
            else:
                out.ok[j] = False
                out.fail_plugin[j] = 0
                out.statuses[j] = st
        return False

    def _score_and_bind_batch(
        self, fwk: Framework, state: CycleState, pod: PodInfo, feasible: NodeBatch, att: Attempt, opts: ScheduleOptions
    ) -> None:
        """The rest of ``_schedule`` for feasible nodes found by the batch path."""
        single = len(feasible) == 1
        if single and not (opts.record and opts.score_single_feasible):
            chosen = feasible.cols.names[int(feasible.idx[0])]
            att.selected = [chosen]
        else:
            totals, st = self._prioritize_batch(fwk, state, pod, feasible, att, opts.record)
            if not st.is_success():
                att.result = "error"
                att.message = st.message()
                return
            sm, fm = att.score_matrix, att.filter_matrix
            if sm is not None and fm is not None and fm.constant is not None and att.bound_by != "nominated-node":
                # The feasible batch is the filter matrix's passing rows (_filter_batch built both; a pod that fits
                # its nominated node has every node recorded, and only that one scored).
                sm.feasible_rows = True
            names = feasible.cols.names
            top_idx = feasible.idx[totals == totals.max()]
            att.set_selected_lazy(names, top_idx)
            if single:
                chosen = names[int(top_idx[0])]
            elif opts.tie_break == "name":
                # The tie with the smallest name, by the names' order kept once per columns (not ~80 names a pod).
                rank = feasible.cols.name_rank()
                chosen = names[int(top_idx[int(rank.take(top_idx).argmin())])]
            else:
                chosen = names[int(top_idx[reservoir_index(self.rng, len(top_idx))])]
        if att.bound_by is None:
            att.bound_by = "single-feasible" if single else "score"
        self._assume_and_bind(fwk, state, pod, chosen, att, opts)

    def _prioritize_batch(
        self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeBatch, att: Attempt, record: bool = False
    ) -> tuple[IntArray, Status]:
        """``prioritizeNodes`` on a batch: the totals per node (int64); with ``record`` the scores per node and
        plugin go to ``att.score_matrix``."""
        if not fwk.has_score_plugins():
            return np.ones(len(nodes), np.int64), Status()
        prescore: dict[str, str] = {}
        st = fwk.run_pre_score_plugins(state, pod, nodes.nodes, prescore)
        att.prescore = prescore
        if not st.is_success():
            return np.zeros(0, np.int64), st
        if not record:
            raw, normalized, weighted, st = fwk.run_score_plugins_batch(state, pod, nodes)
            if not st.is_success():
                return np.zeros(0, np.int64), st
            arrays = iter(weighted.values())
            first = next(arrays, None)
            if first is None:
                return np.zeros(len(nodes), np.int64), st
            second = next(arrays, None)
            # A new array (the first two added), the others added into it: the plugins' arrays are left as they are.
            summed: IntArray = first.astype(np.int64) if second is None else np.add(first, second, dtype=np.int64)
            for scores in arrays:
                summed += scores
            return summed, st
        # Recording: the normalized scores go straight to the matrix's rows, and the totals are one product with
        # the weights (cheaper than weighting and adding plugin by plugin).
        n = len(nodes)
        rows = np.empty((len(fwk.score), n), np.uint8)
        raw, normalized, _, st = fwk.run_score_plugins_batch(state, pod, nodes, rows)
        if not st.is_success():
            return np.zeros(0, np.int64), st
        plugins = list(raw)
        if plugins == att.score_plugins:
            plugins = att.score_plugins  # one list per attempt (pickled once for the results writer)
        weights = self._score_weights(fwk, plugins)
        norm_kept = rows[: len(plugins)]
        totals: IntArray = weights @ norm_kept if n else np.zeros(0, np.int64)
        same = [normalized[p] is raw[p] for p in plugins]
        # Raw scores in the smallest of uint8 / int32 / int64 that holds them (the matrices are copied to the
        # results writer): those of plugins without NormalizeScore are the normalized ones; the others are checked.
        others = [raw[p] for p, eq in zip(plugins, same, strict=True) if not eq]
        raw_kept: npt.NDArray[Any]
        joined = np.concatenate(others) if others else None  # one reduction for them all
        if (
            n
            and plugins
            and (joined is None or (joined.dtype == np.int64 and int(np.maximum.reduce(joined.view(np.uint64))) <= 255))
        ):
            # As unsigned, negative scores are huge: every row fits a byte, as the normalized ones do.
            raw_kept = norm_kept.copy()
            for k, p in enumerate(plugins):
                if not same[k]:
                    raw_kept[k] = raw[p]
        else:
            raw_kept = np.empty((len(plugins), n), np.int64)
            for k, p in enumerate(plugins):
                raw_kept[k] = raw[p]
            if n and plugins:
                if int(raw_kept.view(np.uint64).max()) <= 255:
                    raw_kept = raw_kept.astype(np.uint8)
                elif int(raw_kept.min()) >= -(2**31) and int(raw_kept.max()) < 2**31:
                    raw_kept = raw_kept.astype(np.int32)
        att.score_matrix = ScoreMatrix(
            nodes.cols.names,
            nodes.idx.astype(np.int32),
            plugins,
            raw_kept,
            norm_kept,
            weights,
        )
        att.score_matrix.norm_same = same
        return totals, st

    def _score_weights(self, fwk: Framework, plugins: list[str]) -> IntArray:
        """The weights of ``plugins`` as an array, one object per profile and plugin list (read-only: shared by
        every attempt's score matrix, and the results writer then sends it once per batch)."""
        key = (fwk, tuple(plugins))
        weights = self._weights_arrays.get(key)
        if weights is None:
            weights = np.array([fwk.weights.get(p, 1) for p in plugins], dtype=np.int64)
            weights.flags.writeable = False
            self._weights_arrays[key] = weights
        return weights


def reservoir_index(rng: random.Random, count: int) -> int:
    """``selectHost``'s reservoir sampling over ``count`` tied nodes: the position kept, the i-th tie replacing the
    choice when ``rng.randrange(i) == 0``. Draws as ``randrange`` does (``getrandbits`` of ``i``'s bit length,
    again while out of range), so the choices and the generator's state are the same, without its per-call
    overhead (the 1,213-node trace has ~80 ties per cycle in ``kss serve``, which breaks ties at random)."""
    chosen = 0
    getrandbits = rng.getrandbits
    for i in range(2, count + 1):
        bits = i.bit_length()
        r = getrandbits(bits)
        while r >= i:
            r = getrandbits(bits)
        if not r:
            chosen = i - 1
    return chosen


def _rolled_range(n: int, start: int) -> IntArray:
    """0..n-1 rotated to begin at ``start``."""
    if not start:
        return np.arange(n, dtype=np.int64)
    return np.concatenate((np.arange(start, n, dtype=np.int64), np.arange(start, dtype=np.int64)))


def _set_cell(rec: RecordFilterOutcome, k: int, j: int, cell: int) -> None:
    """Plugin ``k``'s cell of batch row ``j`` set to ``cell`` (a constant column made a column first)."""
    column = rec.columns.get(k)
    if column is None:
        constant = int(rec.constant[k])
        if constant == cell:
            return
        column = np.full(len(rec.fail), constant, np.uint8 if max(constant, cell) <= 255 else np.int16)
        rec.constant[k] = -1
    elif cell > 255 and column.dtype == np.uint8:
        column = column.astype(np.int16)
    rec.columns[k] = column
    column[j] = cell
