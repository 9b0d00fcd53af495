"""Node state as columns (NumPy arrays), for plugins that evaluate a pod against many nodes at once.

``NodeColumns`` mirrors the snapshot's ``NodeInfo`` list (same order): allocatable, requested and
non-zero requested resources, pod counts, cordons and taint groups. NodeInfos report their own changes
(``add_pod`` / ``remove_pod`` mark them dirty) and ``sync`` rewrites only those rows, so the columns
follow binds and deletions incrementally instead of being rebuilt per pod. Static per-node data derived
by plugins (label columns, image scores) is cached in ``derived`` for the columns' lifetime: a node
change that is not a pod change (labels, taints, images) replaces the NodeInfo list or refreshes the
image states, and the snapshot then builds new columns.

``NodeBatch`` is a view of some of those nodes (positions into the columns), what batch plugin hooks
(``FilterPlugin.filter_nodes``, ``ScorePlugin.score_batch``) receive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

T = TypeVar("T")

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_JOURNAL_MAX = 200_000
# Past this many entries, and past this many per pod the nodes hold, the oldest half is dropped: replaying that
# many costs more than counting afresh, and each entry keeps its pod alive (pods churned through a long-running
# server would otherwise stay in memory until _JOURNAL_MAX).
_JOURNAL_FLOOR = 4096
_JOURNAL_PER_POD = 4


def filled(n: int, value: bool | int, dtype: type[np.generic]) -> npt.NDArray[Any]:
    """``np.full(n, value, dtype)`` without its Python-level wrapper (per pod and plugin on hot paths; ``np.ones``
    of bools costs ~3x this)."""
    out: npt.NDArray[Any] = np.empty(n, dtype)
    out.fill(value)
    return out


def same_to_aggregates(old: PodInfo, new: PodInfo) -> bool:
    """Whether two versions of a pod on one node count the same in every aggregate kept from the journal:
    PodTopologySpread's and InterPodAffinity's per-shape counts (namespace, labels, terminating or not, the
    affinity terms of the spec) and the per-node resource columns (requests, non-zero requests)."""
    if old.namespace != new.namespace or old.labels != new.labels:
        return False
    old_meta, new_meta = old.pod.get("metadata") or {}, new.pod.get("metadata") or {}
    if old_meta.get("deletionTimestamp") != new_meta.get("deletionTimestamp"):
        return False
    old_spec, new_spec = old.pod.get("spec"), new.pod.get("spec")
    if old_spec is not new_spec and old_spec != new_spec:
        return False
    a, b = old.requests, new.requests
    return (
        old.non_zero_cpu_memory == new.non_zero_cpu_memory
        and a.milli_cpu == b.milli_cpu
        and a.memory == b.memory
        and a.ephemeral_storage == b.ephemeral_storage
        and a.allowed_pod_number == b.allowed_pod_number
        and a.scalar_resources == b.scalar_resources
    )


def _taint_key(taints: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, str, str], ...]:
    return tuple((str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or "")) for t in taints)


class NodeColumns:
    """Per-node resource and status columns for one list of NodeInfos, kept in step with their pods."""

    def __init__(self, infos: list[NodeInfo]) -> None:
        self.infos = infos
        n = len(infos)
        self.n = n
        self.names: list[str] = [ni.name for ni in infos]
        self.position: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        # 0..n-1, the positions of a batch of every node (read-only: shared by every such batch, never written).
        self.positions: IntArray = np.arange(n, dtype=np.int64)
        self.positions.flags.writeable = False
        self.alloc_cpu = np.fromiter((ni.allocatable.milli_cpu for ni in infos), np.int64, n)
        self.alloc_mem = np.fromiter((ni.allocatable.memory for ni in infos), np.int64, n)
        self.alloc_eph = np.fromiter((ni.allocatable.ephemeral_storage for ni in infos), np.int64, n)
        self.alloc_pods = np.fromiter((ni.allocatable.allowed_pod_number for ni in infos), np.int64, n)
        self.req_cpu = np.zeros(n, np.int64)
        self.req_mem = np.zeros(n, np.int64)
        self.req_eph = np.zeros(n, np.int64)
        self.nz_cpu = np.zeros(n, np.int64)
        self.nz_mem = np.zeros(n, np.int64)
        self.num_pods = np.zeros(n, np.int64)
        # How many of a node's pods have (anti-)affinity terms / required anti-affinity terms.
        self.num_affinity_pods = np.zeros(n, np.int64)
        self.num_anti_affinity_pods = np.zeros(n, np.int64)
        # Scalar (extended) resources get columns on first use: name -> per-node amounts.
        self._scalar_alloc: dict[str, IntArray] = {}
        self._scalar_req: dict[str, IntArray] = {}
        self.unschedulable = np.fromiter((ni.unschedulable for ni in infos), np.bool_, n)
        # Nodes sharing the same taints share a group; plugins decide once per group.
        groups: dict[tuple[tuple[str, str, str], ...], int] = {}
        self.taint_sets: list[list[dict[str, Any]]] = []
        gid = np.zeros(n, np.int64)
        for i, ni in enumerate(infos):
            taints = ni.taints
            key = _taint_key(taints)
            g = groups.get(key)
            if g is None:
                g = groups[key] = len(self.taint_sets)
                self.taint_sets.append(list(taints))
            gid[i] = g
        self.taint_group = gid
        self.derived: dict[str, Any] = {}
        self.dirty: set[NodeInfo] = set()
        # Every pod change of these nodes, in order: (pod, node, +1 added / -1 removed). Plugins keep per-pod-shape
        # aggregates in ``derived`` and bring them up to date by replaying the entries since they last looked
        # (``journal_base`` + index is an entry's sequence number; the oldest entries are dropped now and then).
        self.journal: list[tuple[PodInfo, NodeInfo, int]] = []
        self.journal_base = 0
        # pod uid -> sequence number of the entry that last added it (see ``log``: a new version of a pod that no
        # aggregate tells apart takes the old one's place there).
        self._added: dict[str, int] = {}
        # The journal's end as last handed to a reader (``journal_end``): entries before it may be counted somewhere.
        self._read_end = 0
        # The last ``changed_since`` answer: (seq, end, the journal's last entry then, the nodes). Its readers in one
        # cycle (Fit's filter and score, BalancedAllocation) mostly ask from the same entry, the pod shape's last.
        self._changed: tuple[int, int, object, dict[int, NodeInfo]] | None = None
        self._next_size_check = _JOURNAL_FLOOR
        for i, ni in enumerate(infos):
            ni.attach_columns(self, i)
            self._write(i, ni)

    def _write(self, i: int, ni: NodeInfo) -> None:
        req = ni.requested
        self.req_cpu[i] = req.milli_cpu
        self.req_mem[i] = req.memory
        self.req_eph[i] = req.ephemeral_storage
        self.nz_cpu[i] = ni.non_zero_requested.milli_cpu
        self.nz_mem[i] = ni.non_zero_requested.memory
        self.num_pods[i] = len(ni.pods)
        self.num_affinity_pods[i] = len(ni.pods_with_affinity)
        self.num_anti_affinity_pods[i] = len(ni.pods_with_required_anti_affinity)
        for name, col in self._scalar_req.items():
            col[i] = req.scalar_resources.get(name, 0)

    def mark(self, ni: NodeInfo) -> None:
        """A NodeInfo's pods changed: its row is rewritten at the next ``sync``."""
        self.dirty.add(ni)

    def log(self, pod: PodInfo, ni: NodeInfo, sign: int) -> None:
        """Record a pod added to (+1) or removed from (-1) one of these nodes.

        A new version of a pod replacing the old on the same node (the cache removes, then adds: the binding of an
        assumed pod, the kubelet's status write) is no change to any aggregate when the two agree on everything the
        journal's readers look at (``same_to_aggregates``): the removal is taken back and the entry that added the
        old version now names the new one. So the journal holds one entry per bound pod instead of five, and no
        superseded version of a pod (each with its object: ~220 MB at 20,000 pods in ``kss serve``)."""
        journal = self.journal
        end = self.journal_base + len(journal)
        # A removal a reader has replayed stays: taking it back would hide the addition from that reader.
        if sign > 0 and journal and self._read_end < end:
            old, old_ni, old_sign = journal[-1]
            if old_sign < 0 and old_ni is ni and old.uid == pod.uid and same_to_aggregates(old, pod):
                journal.pop()
                seq = self._added.get(pod.uid, -1)
                if seq >= self.journal_base and journal[seq - self.journal_base][0] is old:
                    journal[seq - self.journal_base] = (pod, ni, 1)
                return
        if len(journal) >= _JOURNAL_MAX or (len(journal) >= self._next_size_check and self._outgrown()):
            # Aggregates older than what is kept are rebuilt from scratch (``changes_since`` returns None).
            drop = len(journal) // 2
            del journal[:drop]
            self.journal_base += drop
            self._added = {uid: seq for uid, seq in self._added.items() if seq >= self.journal_base}
        if sign > 0:
            self._added[pod.uid] = self.journal_base + len(journal)
        journal.append((pod, ni, sign))

    def _outgrown(self) -> bool:
        """Whether the journal holds more entries than its nodes' pods warrant (counted now and then: the next
        count waits for at least one entry per node)."""
        pods = sum(len(ni.pods) for ni in self.infos)
        limit = _JOURNAL_FLOOR + _JOURNAL_PER_POD * pods
        size = len(self.journal)
        self._next_size_check = max(limit, size + len(self.infos))
        return size >= limit

    def journal_end(self) -> int:
        """The sequence number the next pod change will get (a reader keeps it to replay what follows)."""
        end = self.journal_base + len(self.journal)
        self._read_end = end
        return end

    def changes_since(self, seq: int) -> list[tuple[PodInfo, NodeInfo, int]] | None:
        """The pod changes from sequence number ``seq`` on; None when they are no longer kept."""
        if seq < self.journal_base:
            return None
        return self.journal[seq - self.journal_base :]

    def changed_since(self, seq: int) -> dict[int, NodeInfo] | None:
        """The nodes with pod changes from sequence number ``seq`` on, by ``id`` (each once; read-only: shared
        with the next caller asking from the same ``seq``); None when those changes are no longer kept."""
        journal = self.journal
        end = self.journal_base + len(journal)
        last = journal[-1] if journal else None
        memo = self._changed
        # The same end and last entry: no entry added or taken back since (``log`` replaces others in place
        # only with the same node).
        if memo is not None and memo[0] == seq and memo[1] == end and memo[2] is last and seq >= self.journal_base:
            self._read_end = end
            return memo[3]
        changes = self.changes_since(seq)
        if changes is None:
            return None
        changed = {id(ni): ni for _, ni, _ in changes}
        self._changed = (seq, end, last, changed)
        self._read_end = end  # read: a removal from here on is no longer taken back (``log``)
        return changed

    def sync(self) -> None:
        """Rewrite the rows of the NodeInfos that changed since the last sync."""
        if not self.dirty:
            return
        for ni in self.dirty:
            i = ni.column_index
            if 0 <= i < self.n and self.infos[i] is ni:
                self._write(i, ni)
        self.dirty.clear()

    def scalar_alloc(self, name: str) -> IntArray:
        """Allocatable amounts of a scalar resource (0 where the node has none)."""
        col = self._scalar_alloc.get(name)
        if col is None:
            col = np.fromiter((ni.allocatable.scalar_resources.get(name, 0) for ni in self.infos), np.int64, self.n)
            self._scalar_alloc[name] = col
        return col

    def scalar_req(self, name: str) -> IntArray:
        """Requested amounts of a scalar resource (kept in step by ``sync`` from now on)."""
        col = self._scalar_req.get(name)
        if col is None:
            col = np.fromiter((ni.requested.scalar_resources.get(name, 0) for ni in self.infos), np.int64, self.n)
            self._scalar_req[name] = col
        return col

    def cached(self, key: str, factory: Callable[[], T]) -> T:
        """Static per-node data a plugin derives once for these columns (label columns, image scores)."""
        try:
            return self.derived[key]  # type: ignore[no-any-return]
        except KeyError:
            value = factory()
            self.derived[key] = value
            return value

    def name_rank(self) -> IntArray:
        """Each node's place in the nodes sorted by name (the names are unique: the smallest rank is the smallest
        name)."""

        def build() -> IntArray:
            rank = np.empty(self.n, np.int64)
            rank[sorted(range(self.n), key=self.names.__getitem__)] = np.arange(self.n, dtype=np.int64)
            return rank

        return self.cached("kss:name-rank", build)

    def label_codes(self, key: str) -> tuple[IntArray, dict[str, int]]:
        """Per-node code of the value of label ``key`` (-1 where absent) and the value -> code table."""

        def build() -> tuple[IntArray, dict[str, int]]:
            table: dict[str, int] = {}
            codes = np.empty(self.n, np.int64)
            for i, ni in enumerate(self.infos):
                v = ni.labels.get(key)
                if v is None:
                    codes[i] = -1
                else:
                    c = table.get(v)
                    if c is None:
                        c = table[v] = len(table)
                    codes[i] = c
            return codes, table

        return self.cached(f"label:{key}", build)


class NodeView(Sequence["NodeInfo"]):
    """The NodeInfos at some column positions, looked up only when read."""

    __slots__ = ("_idx", "_infos")

    def __init__(self, infos: list[NodeInfo], idx: IntArray) -> None:
        self._infos = infos
        self._idx = idx

    def __len__(self) -> int:
        return len(self._idx)

    @property
    def infos(self) -> list[NodeInfo]:
        """The column list the positions index."""
        return self._infos

    @property
    def positions(self) -> IntArray:
        """The column positions of the nodes, in order."""
        return self._idx

    @overload
    def __getitem__(self, i: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[NodeInfo]: ...

    def __getitem__(self, i: int | slice) -> NodeInfo | Sequence[NodeInfo]:
        if isinstance(i, slice):
            return [self._infos[j] for j in self._idx[i].tolist()]
        return self._infos[int(self._idx[i])]

    def __iter__(self) -> Iterator[NodeInfo]:
        infos = self._infos
        return (infos[j] for j in self._idx.tolist())


class NodeBatch:
    """Some nodes of a ``NodeColumns`` (``idx`` are positions), in the order a cycle evaluates them."""

    __slots__ = ("_nodes", "cols", "full", "idx")

    def __init__(
        self, cols: NodeColumns, idx: IntArray, nodes: Sequence[NodeInfo] | None = None, *, full: bool = False
    ) -> None:
        self.cols = cols
        self.idx = idx
        self._nodes = nodes
        # Every node of the columns, in column order (idx == arange): columns are read without indexing.
        self.full = full

    @classmethod
    def all(cls, cols: NodeColumns) -> NodeBatch:
        """Every node, in column order."""
        return cls(cols, cols.positions, cols.infos, full=True)

    def take(self, column: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """A column's values for the batch's nodes."""
        return column if self.full else column[self.idx]

    def __len__(self) -> int:
        return len(self.idx)

    @property
    def nodes(self) -> Sequence[NodeInfo]:
        """The NodeInfos, for per-node fallbacks."""
        if self._nodes is None:
            self._nodes = NodeView(self.cols.infos, self.idx)
        return self._nodes

    def names(self) -> list[str]:
        names = self.cols.names
        return [names[i] for i in self.idx.tolist()]

    def subset(self, sel: IntArray | BoolArray) -> NodeBatch:
        """The nodes at batch positions ``sel`` (indices or a mask)."""
        return NodeBatch(self.cols, self.idx[sel])
