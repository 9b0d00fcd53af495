"""What the resource scorers count for an extended resource backed by DRA: the devices of the serving class on the
node (slices by node name, node selector or all nodes; device by device with perDeviceNodeSelection) and which of
them are allocated; a class with a failing selector leaves the resource out."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.dra.allocated import AllocatedState, DeviceID
from kss_sim.scheduler.dra.extended_capacity import ExtendedResourceTotals
from kss_sim.scheduler.dra.selectors import DeviceMatchCache

GPU = "example.com/gpu"


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def _slice(pool: str, devices: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": pool},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
            **spec,
        },
    }


def _gpu(name: str, model: str = "a100", **fields: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"model": {"string": model}}, **fields}


def _totals(slices: list[dict[str, Any]], expression: str | None, allocated: set[DeviceID]) -> ExtendedResourceTotals:
    spec: dict[str, Any] = {"extendedResourceName": GPU}
    if expression is not None:
        spec["selectors"] = [{"cel": {"expression": expression}}]
    cache = DeviceMatchCache()
    classes = {GPU: {"metadata": {"name": "gpu.example.com"}, "spec": spec}}
    return ExtendedResourceTotals(classes, cache.slices(slices), AllocatedState(allocated_devices=allocated), cache)


def test_devices_of_the_class_on_the_node_and_those_allocated() -> None:
    slices = [
        _slice("a", [_gpu("g0"), _gpu("g1"), _gpu("g2", model="t4")], nodeName="node-a"),
        _slice("b", [_gpu("g0")], nodeName="node-b"),
        _slice("rack", [_gpu("r0")], nodeSelector={"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["1"]}]}]}),
        _slice("shared", [_gpu("s0")], allNodes=True),
    ]  # fmt: skip
    allocated = {DeviceID("gpu.example.com", "a", "g1"), DeviceID("gpu.example.com", "shared", "s0")}
    totals = _totals(slices, 'device.attributes["gpu.example.com"].model == "a100"', allocated)
    assert totals.totals(_node("node-a", rack="1"), GPU) == (4, 2)  # g0, g1, r0, s0; t4 is not of the class
    assert totals.totals(_node("node-b"), GPU) == (2, 1)  # g0 of pool b, s0
    assert totals.totals(_node("node-a"), "example.com/other") == (0, 0)


def test_per_device_node_selection() -> None:
    devices = [_gpu("d0", nodeName="node-a"), _gpu("d1", allNodes=True), _gpu("d2", nodeName="node-b")]
    totals = _totals([_slice("p", devices, perDeviceNodeSelection=True)], None, set())
    assert totals.totals(_node("node-a"), GPU) == (2, 0)
    assert totals.totals(_node("node-c"), GPU) == (1, 0)


def test_a_selector_that_fails_leaves_the_resource_out() -> None:
    # g1 has no model attribute: the selector fails on it, and upstream counts none of the node's devices.
    slices = [_slice("a", [_gpu("g0"), {"name": "g1"}], nodeName="node-a")]
    totals = _totals(slices, 'device.attributes["gpu.example.com"].model == "a100"', set())
    assert totals.totals(_node("node-a"), GPU) == (0, 0)
