"""Dynamic Resource Allocation's structured-parameters allocator, pure (k8s.io/dynamic-resource-allocation/structured).

Use::

    features = features_from_gates(gates)
    allocator = Allocator(features, AllocatedState(allocated_devices=...), classes_by_name, slices, cache)
    results = allocator.allocate(node, claims)  # list of AllocationResult dicts, or None: not on this node

``allocate`` raises :class:`NodeAllocationError` (unschedulable on this node only, upstream's
``ErrFailedAllocationOnNode``) or :class:`AllocationError` (the attempt fails with an error). Keep one
:class:`DeviceMatchCache` for the scheduler's lifetime and pass it to every allocator: it holds parsed slices,
compiled selectors and per-device selector verdicts.
"""

from kss_sim.scheduler.dra.allocated import AllocatedState, DeviceID, SharedDeviceID, is_device_allocated
from kss_sim.scheduler.dra.allocator import AllocationError, Allocator, NodeAllocationError
from kss_sim.scheduler.dra.features import Features, allocator_variant, features_from_gates
from kss_sim.scheduler.dra.pools import Pool, PoolGatherError, PoolID, SliceIndex, gather_pools, node_matches
from kss_sim.scheduler.dra.selectors import DeviceMatchCache, SelectorCompileError, SelectorRuntimeError

__all__ = [
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "DeviceID",
    "DeviceMatchCache",
    "Features",
    "NodeAllocationError",
    "Pool",
    "PoolGatherError",
    "PoolID",
    "SelectorCompileError",
    "SelectorRuntimeError",
    "SharedDeviceID",
    "SliceIndex",
    "allocator_variant",
    "features_from_gates",
    "gather_pools",
    "is_device_allocated",
    "node_matches",
]
