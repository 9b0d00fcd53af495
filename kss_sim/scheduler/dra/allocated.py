"""What the allocator is told is in use already (``schedulerapi.AllocatedState`` and its identifiers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple


class DeviceID(NamedTuple):
    """``DeviceID``: a device by driver, pool and name."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class SharedDeviceID(NamedTuple):
    """``SharedDeviceID``: one share of a device that allows multiple allocations (consumable capacity)."""

    driver: str
    pool: str
    device: str
    share_id: str

    def __str__(self) -> str:
        text = f"{self.driver}/{self.pool}/{self.device}"
        return f"{text}/{self.share_id}" if self.share_id else text


# Capacity name -> amount consumed (``ConsumedCapacity``), per device (``ConsumedCapacityCollection``).
ConsumedCapacity = dict[str, Fraction]
ConsumedCapacityCollection = dict[DeviceID, ConsumedCapacity]


@dataclass(slots=True)
class AllocatedState:
    """``AllocatedState``: devices held by allocated (or in-flight) claims.

    ``aggregated_capacity`` and ``allocated_shared_device_ids`` are only filled with DRAConsumableCapacity on
    (``GatherAllocatedState``); otherwise the plugin passes the allocated devices alone, as upstream does.
    """

    allocated_devices: set[DeviceID] | frozenset[DeviceID] = field(default_factory=frozenset)
    allocated_shared_device_ids: set[SharedDeviceID] | frozenset[SharedDeviceID] = field(default_factory=frozenset)
    aggregated_capacity: ConsumedCapacityCollection = field(default_factory=dict)


def add_consumed(target: ConsumedCapacity, added: ConsumedCapacity) -> None:
    """``ConsumedCapacity.Add``."""
    for name, amount in added.items():
        target[name] = target.get(name, Fraction(0)) + amount


def insert_consumed(collection: ConsumedCapacityCollection, device: DeviceID, consumed: ConsumedCapacity) -> None:
    """``ConsumedCapacityCollection.Insert``."""
    if device in collection:
        add_consumed(collection[device], consumed)
    else:
        collection[device] = dict(consumed)


def remove_consumed(collection: ConsumedCapacityCollection, device: DeviceID, consumed: ConsumedCapacity) -> None:
    """``ConsumedCapacityCollection.Remove``: subtracts, and drops the device once nothing is consumed."""
    current = collection.get(device)
    if current is None:
        return
    for name, amount in consumed.items():
        if name in current:
            current[name] -= amount
    if all(v == 0 for v in current.values()):
        del collection[device]


def is_device_allocated(device: DeviceID, state: AllocatedState) -> bool:
    """``structured.IsDeviceAllocated``: fully allocated, or partly consumed by shares."""
    if device in state.allocated_devices:
        return True
    if any(DeviceID(s.driver, s.pool, s.device) == device for s in state.allocated_shared_device_ids):
        return True
    return device in state.aggregated_capacity
