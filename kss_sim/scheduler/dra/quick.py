"""A node's verdict for the common claim shape from counts of free matching devices, without the search.

The allocator (:mod:`kss_sim.scheduler.dra.allocator`) walks pools, slices and devices with backtracking for every
node; for most pods that walk only finds out whether the node has enough free devices of one kind. For claims of
the common shape — every request ``exactly`` with ``ExactCount``, no admin access, no capacity, no
``firstAvailable``, no constraints — this module answers from counts, whatever the device features:

- per (device class, request selectors) and node, the *candidates*: devices of the node's complete, valid pools
  that the class and request selectors select, that carry no binding conditions (DRADeviceBindingConditions off),
  consume no counters, and (DRAConsumableCapacity on) are not shareable and have room for what a request without
  capacity consumes; kept per :class:`~kss_sim.scheduler.dra.pools.SliceIndex`, since selector verdicts and pools
  depend only on the slices and the node;
- per pod, the free ones: candidates not in the allocated state.

A node is *undecided* (the allocator must decide) when its pools cannot be gathered or one is invalid (the
allocator's error or "invalid resource pools were encountered"), or a device's selectors fail, or a device has
something the count does not model (binding conditions or taints under their gates, counters to consume under
DRAPartitionableDevices, a shareable device or one some allocation holds a share of under DRAConsumableCapacity, a
node selector the result cannot carry). v1.36 has the last two gates on by default: before they were modelled,
the allocator's search ran on every node there. On a decided node:

- fewer free candidates than some request kind needs: the search fails, ``allocate`` returns None;
- one request kind (the same class and selectors for every request) and enough free candidates: the search takes
  the first free candidates in order and succeeds (nothing can refuse a candidate: no constraints, counters,
  taints or capacity), so ``allocate`` returns results; the plugin asks it for them only when they are needed;
- several kinds, each with enough: only the search knows (devices may be wanted by two kinds).

The claims' checks (``_check_claim``) cannot fail for this shape, and every device the search could evaluate is
one the counts evaluated, so no error the allocator would raise is skipped.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra.allocated import DeviceID
from kss_sim.scheduler.dra.allocator import Allocator
from kss_sim.scheduler.dra.capacity import request_fits
from kss_sim.scheduler.dra.devices import DeviceInfo, SliceInfo
from kss_sim.scheduler.dra.pools import PoolGatherError, SliceIndex, gather_pools
from kss_sim.scheduler.dra.requests import ALLOCATION_RESULTS_MAX_SIZE, MODE_EXACT_COUNT
from kss_sim.scheduler.dra.selectors import SelectorCompileError, SelectorRuntimeError

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# (device class name, the request's CEL expressions in order)
KindKey = tuple[str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class NodeCandidates:
    """A node's candidate devices for one request kind, or ``undecided``."""

    devices: tuple[DeviceID, ...] = ()
    undecided: bool = False


_UNDECIDED = NodeCandidates(undecided=True)


@dataclass(slots=True, eq=False)
class _ColumnTable:
    """A kind's candidates over a list of nodes (the engine's node columns), with the allocated ones counted."""

    nodes: list[Any]  # the node dicts the table was built from
    total: IntArray  # candidates per node
    undecided: BoolArray
    columns_of: dict[DeviceID, list[int]]  # candidate device -> the nodes it is a candidate on
    used: IntArray  # candidates per node in ``counted``
    counted: frozenset[DeviceID] = frozenset()
    counted_from: object = None  # the set ``counted`` copies (one allocator's, asked once per batch of nodes)

    def holding(self, devices: Mapping[DeviceID, object]) -> BoolArray:
        """Per node, whether one of its candidates is among ``devices``."""
        mask = np.zeros(len(self.total), np.bool_)
        for dev in devices:
            for c in self.columns_of.get(dev, ()):
                mask[c] = True
        return mask

    def count_allocated(self, allocated: set[DeviceID] | frozenset[DeviceID]) -> None:
        """Bring ``used`` to ``allocated`` by the devices that changed since the last call."""
        if allocated is self.counted_from:
            return
        now = frozenset(allocated)
        columns_of = self.columns_of
        used = self.used
        for dev in now - self.counted:
            for c in columns_of.get(dev, ()):
                used[c] += 1
        for dev in self.counted - now:
            for c in columns_of.get(dev, ()):
                used[c] -= 1
        self.counted, self.counted_from = now, allocated


@dataclass(slots=True, eq=False)
class _KindTable:
    """Per request kind, over one slice index: the candidates by node, and by list of nodes."""

    device_class: Obj
    by_node: dict[tuple[Any, ...], NodeCandidates] = field(default_factory=dict)
    by_columns: dict[int, tuple[Any, _ColumnTable]] = field(default_factory=dict)


class QuickCheck:
    """The count-based verdict for one pod's claims to allocate and one allocator (one scheduling cycle).

    Build with :meth:`for_claims` (None when the claims are not of the common shape or the features are not the
    defaults the counts model).
    """

    def __init__(self, allocator: Allocator, kinds: list[tuple[KindKey, Obj, list[Mapping[str, Any]], int]]) -> None:
        self.allocator = allocator
        self.index: SliceIndex = allocator.index
        self.allocated = allocator.allocated_state.allocated_devices
        # Devices some allocation holds a share of (DRAConsumableCapacity): what is left of them is the allocator's
        # to judge, so a node with one among its candidates is undecided.
        self.held = allocator.allocated_state.aggregated_capacity
        # Per kind: key, class, the request's selectors, devices needed in all.
        self.kinds = kinds
        self.exact = len(kinds) == 1
        tables: dict[tuple[Any, ...], _KindTable] = self.index.derived.setdefault("quick", {})
        self.tables: list[_KindTable] = []
        for key, device_class, _, _ in kinds:
            table_key = (key, allocator.features, allocator.variant)
            table = tables.get(table_key)
            if table is None or table.device_class is not device_class:
                table = tables[table_key] = _KindTable(device_class)
            self.tables.append(table)

    @classmethod
    def for_claims(cls, allocator: Allocator, claims: Sequence[Obj]) -> QuickCheck | None:
        """The check for these claims (all to allocate), or None when only the allocator can answer."""
        features = allocator.features
        kinds: dict[KindKey, tuple[Obj, list[Mapping[str, Any]], int]] = {}
        for claim in claims:
            devices = (claim.get("spec") or {}).get("devices") or {}
            if devices.get("constraints"):
                return None
            claim_total = 0
            for request in devices.get("requests") or []:
                exactly = request.get("exactly")
                if exactly is None or request.get("firstAvailable"):
                    return None
                if exactly.get("allocationMode") != MODE_EXACT_COUNT or exactly.get("capacity") is not None:
                    return None
                admin = exactly.get("adminAccess")
                if admin or (admin is not None and not features.admin_access):
                    return None
                count = exactly.get("count")
                if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                    return None
                class_name = str(exactly.get("deviceClassName") or "")
                device_class = allocator.classes.get(class_name) if class_name else None
                if device_class is None:
                    return None
                selectors = list(exactly.get("selectors") or [])
                if any(s.get("cel") is None for s in selectors):
                    return None
                key: KindKey = (class_name, tuple(_expression(s) for s in selectors))
                _, _, before = kinds.get(key, (device_class, selectors, 0))
                kinds[key] = (device_class, selectors, before + count)
                claim_total += count
            if claim_total > ALLOCATION_RESULTS_MAX_SIZE:
                return None
        if not kinds:
            return None
        return cls(allocator, [(key, c, sel, n) for key, (c, sel, n) in kinds.items()])

    # --- one node ---------------------------------------------------------------------------------------------

    def node_verdict(self, node: Obj) -> bool | None:
        """True: ``allocate`` succeeds on the node; False: it returns None; None: ask it."""
        allocated = self.allocated
        short = False
        frees: list[int] = []
        for table, (key, device_class, selectors, need) in zip(self.tables, self.kinds, strict=True):
            found = self._candidates(table, key, device_class, selectors, node)
            if found.undecided or (self.held and any(d in self.held for d in found.devices)):
                return None
            free = sum(1 for d in found.devices if d not in allocated)
            frees.append(free)
            short = short or free < need
        if short:
            return False
        return True if self.exact else None

    # --- many nodes -------------------------------------------------------------------------------------------

    def column_verdicts(self, cols: Any, idx: IntArray) -> tuple[BoolArray, BoolArray]:
        """For the nodes at positions ``idx`` of the engine's node columns (``cols.infos``: objects with the node
        dict as ``.node``, the same node names as long as ``cols`` lives): (decided, fits), :meth:`node_verdict`'s
        True/False where decided."""
        n = len(idx)
        decided = np.ones(n, np.bool_)
        fits = np.ones(n, np.bool_)
        for table, (key, device_class, selectors, need) in zip(self.tables, self.kinds, strict=True):
            columns = self._columns(table, key, device_class, selectors, cols)
            columns.count_allocated(self.allocated)
            free = columns.total[idx] - columns.used[idx]
            decided &= ~columns.undecided[idx]
            if self.held:
                decided &= ~columns.holding(self.held)[idx]
            fits &= free >= need
        if not self.exact:
            # Enough of every kind proves nothing: only "not enough" is decided.
            decided &= ~fits
        return decided, fits

    def _columns(
        self,
        table: _KindTable,
        key: KindKey,
        device_class: Obj,
        selectors: list[Mapping[str, Any]],
        cols: Any,
    ) -> _ColumnTable:
        hit = table.by_columns.get(id(cols))
        if hit is not None and hit[0] is cols:
            columns = hit[1]
            # Node-local slices concern a node by its name, fixed per position of ``cols``; slices that select
            # nodes otherwise read the node's labels too: then the same node objects (an update is a new dict).
            if not self.index.per_node or all(map(operator.is_, columns.nodes, (ni.node for ni in cols.infos))):
                return columns
        node_dicts = [ni.node for ni in cols.infos]
        n = len(node_dicts)
        total = np.zeros(n, np.int64)
        undecided = np.zeros(n, np.bool_)
        columns_of: dict[DeviceID, list[int]] = {}
        for i, node in enumerate(node_dicts):
            found = self._candidates(table, key, device_class, selectors, node)
            if found.undecided:
                undecided[i] = True
                continue
            total[i] = len(found.devices)
            for d in found.devices:
                columns_of.setdefault(d, []).append(i)
        columns = _ColumnTable(node_dicts, total, undecided, columns_of, np.zeros(n, np.int64))
        if len(table.by_columns) > 4:
            table.by_columns.clear()
        table.by_columns[id(cols)] = (cols, columns)
        return columns

    # --- candidates -------------------------------------------------------------------------------------------

    def _candidates(
        self, table: _KindTable, key: KindKey, device_class: Obj, selectors: list[Mapping[str, Any]], node: Obj
    ) -> NodeCandidates:
        meta = node.get("metadata") or {}
        node_name = str(meta.get("name") or "")
        node_key = (node_name, tuple(sorted((meta.get("labels") or {}).items())) if self.index.per_node else ())
        found = table.by_node.get(node_key)
        if found is None:
            found = table.by_node[node_key] = self._find_candidates(device_class, selectors, node)
        return found

    def _find_candidates(self, device_class: Obj, selectors: list[Mapping[str, Any]], node: Obj) -> NodeCandidates:
        allocator = self.allocator
        features = allocator.features
        try:
            pools = gather_pools(self.index, node, features, allocator.variant)
        except PoolGatherError:
            return _UNDECIDED
        expressions = [_expression(s) for s in ((device_class.get("spec") or {}).get("selectors") or [])]
        expressions += [_expression(s) for s in selectors]
        out: list[DeviceID] = []
        for pool in pools:
            if pool.is_invalid:
                return _UNDECIDED
            if pool.is_incomplete and features.release >= 35:  # v1.34 searches incomplete pools too
                continue
            for s in pool.slices:
                if s.per_device_node_selection or _selector_terms(s) > 1:
                    return _UNDECIDED
                if features.consumable_capacity and features.release < 35 and any(d.capacity for d in s.devices):
                    # v1.34 checks the capacity of the slice's device at the index of the device wanted.
                    return _UNDECIDED
                for dev in s.devices:
                    usable = self._usable(dev, s, expressions)
                    if usable is None:
                        return _UNDECIDED
                    if usable:
                        out.append(dev.id)
        return NodeCandidates(tuple(out))

    def _usable(self, dev: DeviceInfo, s: SliceInfo, expressions: list[str]) -> bool | None:
        """Whether the search can take the device when free (None: it may do something the count does not model)."""
        features = self.allocator.features
        if dev.binding_conditions:
            if not features.device_binding:
                return False  # never selectable, before any selector is evaluated
            return None
        cache = self.allocator.cel_cache
        for expression in expressions:
            verdict = dev.verdicts.get(expression)
            if verdict is None:
                try:
                    verdict = cache.matches(expression, s.driver, dev)
                except (SelectorCompileError, SelectorRuntimeError):
                    return None
            if isinstance(verdict, Exception):
                return None
            if not verdict:
                return False
        if features.device_taints and dev.taints:
            return None
        if dev.consumes_counters:
            # Without DRAPartitionableDevices a device that consumes counters is refused when taken; with it, only
            # the counters left decide.
            return None if features.partitionable_devices else False
        if features.consumable_capacity:
            if dev.allow_multiple_allocations:
                return None  # shared: taken by several requests, never counted as allocated
            if dev.capacity:
                # A request without capacity consumes each capacity's default (or all of it): whether that fits an
                # unshared device is the device's own property, unless some allocation holds a share of it (those
                # devices are left to the allocator, see ``held``).
                try:
                    return request_fits({}, None, dev.capacity, None)
                except Exception:
                    return None
        return True


def _expression(selector: Mapping[str, Any]) -> str:
    return str((selector.get("cel") or {}).get("expression") or "")


def _selector_terms(s: SliceInfo) -> int:
    """Terms of the slice's node selector (an allocation result carries at most one)."""
    if s.node_selector is None:
        return 0
    return len(s.node_selector.get("nodeSelectorTerms") or [])
