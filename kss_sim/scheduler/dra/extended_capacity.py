"""What the resource scorers count for an extended resource backed by DRA (DRAExtendedResource, from v1.36).

NodeResourcesFit's strategies (LeastAllocated, MostAllocated, RequestedToCapacityRatio) and BalancedAllocation score
the resources their configuration lists. For an extended resource a DeviceClass serves, on a node whose allocatable
lacks it, upstream's ``calculateDRAResourceTotals`` counts instead the node's devices the class selects (every
ResourceSlice that applies to the node, device by device where the slice selects nodes per device) as the node's
allocatable, and those of them allocated (by allocated claims or allocations in flight) as its requested. The state
is gathered once per cycle at PreScore (``getDRAPreScoredParams``), only when a listed resource is backed by DRA.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra.allocated import AllocatedState, is_device_allocated
from kss_sim.scheduler.dra.devices import DeviceInfo, SliceInfo
from kss_sim.scheduler.dra.dra_manager import DraManager
from kss_sim.scheduler.dra.extended_resources import is_dra_extended_resource_name
from kss_sim.scheduler.dra.pools import PoolGatherError, node_matches
from kss_sim.scheduler.dra.selectors import DeviceMatchCache, SelectorCompileError, SelectorRuntimeError


class ExtendedResourceTotals:
    """One cycle's view: per (node, resource), the devices of the serving class and how many are allocated."""

    def __init__(
        self,
        classes: Mapping[str, Obj],
        slices: list[SliceInfo],
        allocated: AllocatedState,
        match_cache: DeviceMatchCache,
    ) -> None:
        self.classes = classes
        self.slices = slices
        self.allocated = allocated
        self.match_cache = match_cache
        self._totals: dict[tuple[str, str], tuple[int, int]] = {}

    def totals(self, node: Mapping[str, Any], resource: str) -> tuple[int, int]:
        """(devices, allocated devices) of the class serving ``resource`` on ``node``; (0, 0) when no class serves
        it, or when a selector or node selector fails (upstream logs the error and leaves the resource out)."""
        device_class = self.classes.get(resource)
        if device_class is None:
            return 0, 0
        name = str((node.get("metadata") or {}).get("name") or "")
        key = (name, resource)
        hit = self._totals.get(key)
        if hit is None:
            try:
                hit = self._count(node, name, device_class)
            except (PoolGatherError, SelectorCompileError, SelectorRuntimeError):
                hit = (0, 0)
            self._totals[key] = hit
        return hit

    def _count(self, node: Mapping[str, Any], node_name: str, device_class: Obj) -> tuple[int, int]:
        expressions = [
            str(cel.get("expression") or "")
            for selector in (device_class.get("spec") or {}).get("selectors") or []
            if (cel := selector.get("cel")) is not None
        ]
        capacity = allocated = 0
        for s in self.slices:
            for device in _devices_on(s, node, node_name):
                if all(self.match_cache.matches(e, s.driver, device) for e in expressions):
                    capacity += 1
                    allocated += is_device_allocated(device.id, self.allocated)
        return capacity, allocated


def _devices_on(s: SliceInfo, node: Mapping[str, Any], node_name: str) -> Iterable[DeviceInfo]:
    """The slice's devices that apply to the node, as ``calculateDRAResourceTotals`` selects them."""
    if s.per_device_node_selection:
        for device in s.devices:
            device_node = device.node_name or ""
            here = device.all_nodes or device_node == node_name != ""
            if here or (
                device.node_selector is not None
                and node_matches(node, device_node, device.all_nodes, device.node_selector)
            ):
                yield device
        return
    slice_node = s.node_name or ""
    if not s.all_nodes and slice_node != node_name:
        if s.node_selector is not None:
            if not node_matches(node, slice_node, s.all_nodes, s.node_selector):
                return
        elif slice_node:
            return
    yield from s.devices


def extended_resource_totals(
    manager: DraManager, resources: Iterable[str], match_cache: DeviceMatchCache
) -> ExtendedResourceTotals | None:
    """``getDRAPreScoredParams``: the cycle's totals when some of ``resources`` is backed by DRA, else None."""
    candidates = [r for r in resources if is_dra_extended_resource_name(r)]
    if not candidates:
        return None  # cpu and memory alone (the default): no DRA state to read
    classes = manager.extended_resource_classes()
    if not any(r in classes for r in candidates):
        return None
    slices = match_cache.slices(manager.resource_slices())
    return ExtendedResourceTotals(classes, slices, manager.gather_allocated_state(), match_cache)
