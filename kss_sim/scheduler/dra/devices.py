"""ResourceSlices read once into what the allocator walks (upstream converts each slice to ``draapi`` per call).

A :class:`SliceInfo` is built from a slice's JSON and kept by :class:`kss_sim.scheduler.dra.selectors.DeviceMatchCache`
for as long as that same dict is handed in, so a slice is parsed once however many nodes and pods are tried.
Slices are read-only here: a new version of a slice is a new dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kss_sim.kube.labels import NodeSelector
from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import parse_quantity
from kss_sim.scheduler.dra.allocated import DeviceID

# Counter set name -> counter name -> amount (``counterSets`` / ``SharedCounters``).
Counters = dict[str, dict[str, Fraction]]


def counters_of(counters: Mapping[str, Any] | None) -> dict[str, Fraction]:
    """``map[string]Counter`` from JSON (``{"memory": {"value": "8Gi"}}``)."""
    return {name: parse_quantity(c.get("value") or "0") for name, c in (counters or {}).items()}


@dataclass(slots=True, eq=False)
class DeviceInfo:
    """One device of a slice, with what the allocator reads from it."""

    obj: Obj
    id: DeviceID
    name: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Any]
    # (counter set, counters) per entry of consumesCounters, in order.
    consumes_counters: list[tuple[str, dict[str, Fraction]]]
    taints: list[Obj]
    binding_conditions: list[str] | None
    binding_failure_conditions: list[str] | None
    binds_to_node: bool
    allow_multiple_allocations: bool | None
    node_name: str | None
    all_nodes: bool
    node_selector: Obj | None
    # Selector verdicts by CEL expression: True/False, or the evaluation error to raise again.
    verdicts: dict[str, bool | Exception] = field(default_factory=dict)
    view: Any = None  # the CEL DeviceView, built on first use


@dataclass(slots=True, eq=False)
class SliceInfo:
    """One ResourceSlice: pool membership, node selection, shared counters and devices."""

    obj: Obj
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str | None
    all_nodes: bool
    node_selector: Obj | None
    per_device_node_selection: bool | None  # None: the field is absent
    shared_counters: list[tuple[str, dict[str, Fraction]]]
    devices: list[DeviceInfo]
    has_binding_conditions: bool  # some device has bindingConditions (``hasBindingConditions``)
    parsed_node_selectors: dict[int, NodeSelector] = field(default_factory=dict)


def _device(driver: str, pool: str, obj: Obj) -> DeviceInfo:
    name = str(obj.get("name") or "")
    amm = obj.get("allowMultipleAllocations")
    return DeviceInfo(
        obj=obj,
        id=DeviceID(driver, pool, name),
        name=name,
        attributes=obj.get("attributes") or {},
        capacity=obj.get("capacity") or {},
        consumes_counters=[
            (str(c.get("counterSet") or ""), counters_of(c.get("counters"))) for c in obj.get("consumesCounters") or []
        ],
        taints=list(obj.get("taints") or []),
        binding_conditions=obj.get("bindingConditions"),
        binding_failure_conditions=obj.get("bindingFailureConditions"),
        binds_to_node=bool(obj.get("bindsToNode")),
        allow_multiple_allocations=None if amm is None else bool(amm),
        node_name=obj.get("nodeName"),
        all_nodes=bool(obj.get("allNodes")),
        node_selector=obj.get("nodeSelector"),
    )


def parse_slice(obj: Obj) -> SliceInfo:
    """A ResourceSlice's JSON as the allocator reads it."""
    spec = obj.get("spec") or {}
    pool = spec.get("pool") or {}
    driver = str(spec.get("driver") or "")
    pool_name = str(pool.get("name") or "")
    devices = [_device(driver, pool_name, d) for d in spec.get("devices") or []]
    pdns = spec.get("perDeviceNodeSelection")
    return SliceInfo(
        obj=obj,
        name=str((obj.get("metadata") or {}).get("name") or ""),
        driver=driver,
        pool=pool_name,
        generation=int(pool.get("generation") or 0),
        slice_count=int(pool.get("resourceSliceCount") or 0),
        node_name=spec.get("nodeName"),
        all_nodes=bool(spec.get("allNodes")),
        node_selector=spec.get("nodeSelector"),
        per_device_node_selection=None if pdns is None else bool(pdns),
        shared_counters=[
            (str(c.get("name") or ""), counters_of(c.get("counters"))) for c in spec.get("sharedCounters") or []
        ],
        devices=devices,
        has_binding_conditions=any(d.binding_conditions is not None for d in devices),
    )
