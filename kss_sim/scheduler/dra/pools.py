"""Which resource pools a node can use (``GatherPools``, ``NodeMatches``), as structured/internal/experimental has it.

Upstream walks every slice for every node. :class:`SliceIndex` files the slices once per allocator (node-local
slices by node name, the others in one list) and :func:`gather_pools` visits, in the original order, only the
slices that can concern the node: the same pools in the same order, without the quadratic walk.

Pool order: upstream collects pools in a Go map and flattens it in map order, which Go randomises; kss keeps the
order in which each pool's first slice appears in the slice list, so a run is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kss_sim.kube.labels import NodeSelector, aggregate_message
from kss_sim.scheduler.dra.devices import SliceInfo
from kss_sim.scheduler.dra.features import Features, Variant


class PoolGatherError(Exception):
    """A slice whose node selection cannot be evaluated (upstream: ``gather pool information`` errors)."""


class PoolID(tuple[str, str]):
    """``PoolID``: (driver, pool); prints as ``driver/pool``."""

    __slots__ = ()

    def __new__(cls, driver: str, pool: str) -> PoolID:
        return super().__new__(cls, (driver, pool))

    @property
    def driver(self) -> str:
        return self[0]

    @property
    def pool(self) -> str:
        return self[1]

    def __str__(self) -> str:
        return f"{self[0]}/{self[1]}"


@dataclass(slots=True, eq=False)
class Pool:
    """``Pool``: a pool's slices that concern the node, or why it cannot be used."""

    pool_id: PoolID
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""
    slices: list[SliceInfo] = field(default_factory=list)  # DeviceSlicesTargetingNode
    slices_not_targeting_node: list[SliceInfo] = field(default_factory=list)
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)


def _go_requirements(reqs: Sequence[Mapping[str, Any]]) -> str:
    parts = [
        f"NodeSelectorRequirement{{Key:{r.get('key') or ''},Operator:{r.get('operator') or ''},"
        f"Values:[{' '.join(str(v) for v in r.get('values') or [])}],}}"
        for r in reqs
    ]
    return "[]NodeSelectorRequirement{" + "".join(part + "," for part in parts) + "}"  # Go ends each with ","


def _go_node_selector(selector: Mapping[str, Any]) -> str:
    """``(*v1.NodeSelector).String()`` as the generated protobuf code renders it."""
    terms = [
        f"NodeSelectorTerm{{MatchExpressions:{_go_requirements(t.get('matchExpressions') or [])},"
        f"MatchFields:{_go_requirements(t.get('matchFields') or [])},}}"
        for t in selector.get("nodeSelectorTerms") or []
    ]
    return "&NodeSelector{NodeSelectorTerms:[]NodeSelectorTerm{" + "".join(term + "," for term in terms) + "},}"


def _parsed_selector(cache: dict[int, NodeSelector], key: int, selector: Mapping[str, Any]) -> NodeSelector:
    parsed = cache.get(key)
    if parsed is None:
        parsed = cache[key] = NodeSelector(selector)
    return parsed


def node_matches(
    node: Mapping[str, Any] | None,
    node_name: str,
    all_nodes: bool,
    node_selector: Mapping[str, Any] | None,
    *,
    cache: dict[int, NodeSelector] | None = None,
    cache_key: int = -1,
) -> bool:
    """``NodeMatches``: a node name, all nodes, or a node selector (raises :class:`PoolGatherError` if invalid)."""
    if node_name:
        return node is not None and (node.get("metadata") or {}).get("name") == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        parsed = _parsed_selector(cache, cache_key, node_selector) if cache is not None else NodeSelector(node_selector)
        if parsed.errors:
            raise PoolGatherError(
                f"failed to parse node selector {_go_node_selector(node_selector)}: {aggregate_message(parsed.errors)}"
            )
        return node is not None and parsed.matches_node(node)
    return False


class SliceIndex:
    """The allocator's slices filed for :func:`gather_pools`: by node name, by pool, and those to check per node."""

    __slots__ = ("by_node", "by_pool", "derived", "gathered", "per_node", "slices")

    def __init__(self, slices: Sequence[SliceInfo]) -> None:
        self.slices = list(slices)
        self.by_node: dict[str, list[int]] = {}
        self.per_node: list[int] = []  # node selectors, allNodes, per-device selection, shared counters
        self.by_pool: dict[tuple[str, str], list[SliceInfo]] = {}
        for i, s in enumerate(self.slices):
            self.by_pool.setdefault((s.driver, s.pool), []).append(s)
            if s.node_name and not s.shared_counters and s.per_device_node_selection is None:
                self.by_node.setdefault(s.node_name, []).append(i)
            else:
                self.per_node.append(i)
        # gather_pools results by (node name, node labels when some slice selects by label, features, variant).
        self.gathered: dict[tuple[Any, ...], list[Pool]] = {}
        # What other modules derive from these slices alone (kss_sim.scheduler.dra.quick's candidates), by their key.
        self.derived: dict[str, Any] = {}

    def candidates(self, node_name: str) -> list[SliceInfo]:
        """The slices that may concern the node, in their original order."""
        local = self.by_node.get(node_name)
        if not local:
            return [self.slices[i] for i in self.per_node]
        if not self.per_node:
            return [self.slices[i] for i in local]
        return [self.slices[i] for i in sorted(local + self.per_node)]


def _add_slice(pools: dict[PoolID, list[SliceInfo]], s: SliceInfo) -> None:
    """``addSlice``: a newer generation replaces a pool's slices, an older one is ignored."""
    pid = PoolID(s.driver, s.pool)
    current = pools.get(pid)
    if current is None:
        pools[pid] = [s]
    elif s.generation < current[0].generation:
        return
    elif s.generation > current[0].generation:
        pools[pid] = [s]
    else:
        current.append(s)


def gather_pools(
    index: SliceIndex, node: Mapping[str, Any], features: Features, variant: Variant = "experimental"
) -> list[Pool]:
    """``GatherPools``: the pools with devices reachable from ``node``, incomplete and invalid ones flagged.

    The result depends on the slices, the node's name and labels and the features alone, so the index keeps it
    (pools are never modified by the allocator).
    """
    meta = node.get("metadata") or {}
    node_name = str(meta.get("name") or "")
    labels = tuple(sorted((meta.get("labels") or {}).items())) if index.per_node else ()
    key = (node_name, labels, features, variant)
    pools = index.gathered.get(key)
    if pools is None:
        pools = index.gathered[key] = _gather_pools(index, node, node_name, features, variant)
    return pools


def _gather_pools(
    index: SliceIndex, node: Mapping[str, Any], node_name: str, features: Features, variant: Variant
) -> list[Pool]:
    pools: dict[PoolID, list[SliceInfo]] = {}
    with_binding_conditions: list[SliceInfo] = []
    # Only the experimental variant moves slices with binding conditions behind the others.
    sort_binding = variant == "experimental"
    # v1.34's pools are the slices reaching the node, as v1.35's stable ones, counters being per slice there.
    slices_only = variant == "stable" or features.release < 35
    for s in index.candidates(node_name):
        if not features.partitionable_devices and (
            s.per_device_node_selection is not None or (not slices_only and s.shared_counters)
        ):
            continue
        if s.shared_counters and not slices_only:
            # Always kept: the pool's devices need them whatever node they are on.
            _add_slice(pools, s)
        elif s.node_name or s.all_nodes or s.node_selector is not None:
            try:
                match = node_matches(
                    node, s.node_name or "", s.all_nodes, s.node_selector, cache=s.parsed_node_selectors
                )
            except PoolGatherError as exc:
                raise PoolGatherError(f"failed to perform node selection for slice {s.name}: {exc}") from None
            if match:
                if sort_binding and s.has_binding_conditions:
                    with_binding_conditions.append(s)
                    continue
                _add_slice(pools, s)
        elif s.per_device_node_selection:
            for i, d in enumerate(s.devices):
                try:
                    match = node_matches(
                        node,
                        d.node_name or "",
                        d.all_nodes,
                        d.node_selector,
                        cache=s.parsed_node_selectors,
                        cache_key=i,
                    )
                except PoolGatherError as exc:
                    raise PoolGatherError(
                        f"failed to perform node selection for device {_go_device(d.obj)} in slice {s.name}: {exc}"
                    ) from None
                if match:
                    if sort_binding and s.has_binding_conditions:
                        with_binding_conditions.append(s)
                    else:
                        _add_slice(pools, s)
                    break
        # Otherwise some future way of selecting nodes: not usable here, other pools may still do.
    for s in with_binding_conditions:
        _add_slice(pools, s)

    result: list[Pool] = []
    last: list[Pool] = []
    for pid, pool_slices in pools.items():
        first = pool_slices[0]
        all_slices: list[SliceInfo] | None = None
        if features.release < 35:
            # v1.34 counts only the slices reaching the node (no look for an obsolete or complete generation).
            pool = _stable_pool(pid, pool_slices, incomplete=len(pool_slices) != first.slice_count)
            (last if sort_binding and _pool_has_binding_conditions(pool) else result).append(pool)
            continue
        if len(pool_slices) != first.slice_count:
            # Slices for other nodes were skipped: count the whole generation before calling the pool incomplete.
            obsolete, all_slices = _slices_in_pool(index, pid, first.generation)
            if obsolete:
                continue
            if len(all_slices) != first.slice_count:
                if variant == "stable":
                    result.append(_stable_pool(pid, pool_slices, incomplete=True))
                else:
                    result.append(Pool(pid, is_incomplete=True))
                continue
        pool = (
            _stable_pool(pid, pool_slices, incomplete=False)
            if variant == "stable"
            else _build_pool(pid, pool_slices, features, all_slices)
        )
        if sort_binding and _pool_has_binding_conditions(pool):
            last.append(pool)
        else:
            result.append(pool)
    result.extend(last)
    return result


def _go_device(device: Mapping[str, Any]) -> str:
    # ``Device.String()`` is long and never reached with validated slices: the name says which device.
    return f"&Device{{Name:{device.get('name') or ''},}}"


def _slices_in_pool(index: SliceIndex, pid: PoolID, generation: int) -> tuple[bool, list[SliceInfo]]:
    """``checkSlicesInPool``: whether a newer generation exists, else every slice of this one."""
    same: list[SliceInfo] = []
    for s in index.by_pool.get((pid.driver, pid.pool), ()):
        if s.generation == generation:
            same.append(s)
        elif s.generation > generation:
            return True, []
    return False, same


def _pool_has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions is not None for s in pool.slices for d in s.devices)


def _duplicate_device_name(slices: Sequence[SliceInfo]) -> str | None:
    seen: set[str] = set()
    for s in slices:
        for d in s.devices:
            if d.name in seen:
                return f"duplicate device name {d.name}"
            seen.add(d.name)
    return None


def _stable_pool(pid: PoolID, slices: list[SliceInfo], *, incomplete: bool) -> Pool:
    """The stable variant's pool: its slices as gathered, invalid on duplicate names even when incomplete."""
    reason = _duplicate_device_name(slices)
    return Pool(
        pid, is_incomplete=incomplete, is_invalid=reason is not None, invalid_reason=reason or "", slices=slices
    )


def _counter_consumption_error(
    counter_sets: Mapping[str, Mapping[str, Fraction]], slices: Sequence[SliceInfo]
) -> str | None:
    """``validateDeviceCounterConsumption``: every consumed counter exists in its counter set."""
    for s in slices:
        for d in s.devices:
            for set_name, counters in d.consumes_counters:
                counter_set = counter_sets.get(set_name)
                if counter_set is None:
                    return f"counter set {set_name} not found"
                for name in counters:
                    if name not in counter_set:
                        return f"counter {name} not found in counter set {set_name}"
    return None


def _build_pool(pid: PoolID, slices: list[SliceInfo], features: Features, all_slices: list[SliceInfo] | None) -> Pool:
    """``buildPool``: device slices apart from counter slices, validated (invalid pools are kept, flagged)."""
    if not features.partitionable_devices:
        device_slices = slices
        counter_slices: list[SliceInfo] = []
    else:
        device_slices = [s for s in slices if not s.shared_counters]
        counter_slices = [s for s in slices if s.shared_counters]
    reason = _duplicate_device_name(device_slices)
    if reason is not None:
        return Pool(pid, is_invalid=True, invalid_reason=reason)
    if not features.partitionable_devices:
        return Pool(pid, slices=device_slices)
    counter_sets: dict[str, dict[str, Fraction]] = {}
    for s in counter_slices:
        for name, counters in s.shared_counters:
            if name in counter_sets:
                return Pool(pid, is_invalid=True, invalid_reason=f"duplicate counter set name {name}")
            counter_sets[name] = counters
    reason = _counter_consumption_error(counter_sets, slices)
    if reason is not None:
        return Pool(pid, is_invalid=True, invalid_reason=reason)
    if all_slices is None or len(slices) == len(all_slices):
        return Pool(pid, slices=device_slices, counter_sets=counter_sets)
    # Devices on other nodes consume the same counters: the allocator must see them to count what is left.
    names = {s.name for s in slices}
    others = [s for s in all_slices if s.name not in names]
    reason = _counter_consumption_error(counter_sets, others)
    if reason is not None:
        return Pool(pid, is_invalid=True, invalid_reason=reason)
    return Pool(pid, slices=device_slices, slices_not_targeting_node=others, counter_sets=counter_sets)
