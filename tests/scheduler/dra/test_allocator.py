"""The structured allocator against cases worked from upstream's allocator_testing.go (v1.35) expectations.

Names and objects follow upstream's test table (driver-a, pool-1, device-1, claim-0, req-0...); the CEL
selectors run through kss_sim.kube.dra.cel, as the plugin runs them.
"""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra import (
    AllocatedState,
    AllocationError,
    Allocator,
    DeviceID,
    DeviceMatchCache,
    Features,
    NodeAllocationError,
    features_from_gates,
)

DRIVER_A, DRIVER_B = "driver-a", "driver-b"
DEFAULTS = features_from_gates({})


def node(name: str, region: str = "region-1") -> Obj:
    return {"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}}


def device_class(name: str, driver: str, config: list[Obj] | None = None) -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if config:
        spec["config"] = config
    return {"metadata": {"name": name}, "spec": spec}


def opaque(driver: str, attribute: str) -> Obj:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def device(name: str, **fields: Any) -> Obj:
    return {"name": name, **fields}


def resource_slice(name: str, where: Any, pool: str, driver: str, *devices: Obj, count: int = 1, gen: int = 1) -> Obj:
    spec: Obj = {"driver": driver, "pool": {"name": pool, "generation": gen, "resourceSliceCount": count}}
    if where == "all":
        spec["allNodes"] = True
    elif isinstance(where, dict):
        spec["nodeSelector"] = where
    elif where == "per-device":
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = where
    spec["devices"] = list(devices) or [device("device-1")]
    return {"metadata": {"name": name}, "spec": spec}


def label_selector(key: str, value: str) -> Obj:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}


def local(node_name: str) -> Obj:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}


def request(name: str, class_name: str, count: int = 1, **exactly: Any) -> Obj:
    return {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count, **exactly},
    }


def all_request(name: str, class_name: str) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": class_name, "allocationMode": "All"}}


def sub_request(name: str, class_name: str, count: int = 1, **fields: Any) -> Obj:
    return {"name": name, "deviceClassName": class_name, "allocationMode": "ExactCount", "count": count, **fields}


def claim(name: str, *requests: Obj, constraints: list[Obj] | None = None, config: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {"metadata": {"name": name}, "spec": {"devices": devices}}


def result(req: str, driver: str, pool: str, dev: str, **extra: Any) -> Obj:
    return {"request": req, "driver": driver, "pool": pool, "device": dev, **extra}


def allocate(
    claims: list[Obj],
    slices: list[Obj],
    classes: list[Obj],
    on: Obj | None = None,
    *,
    features: Features = DEFAULTS,
    allocated: set[DeviceID] | None = None,
) -> list[Obj] | None:
    allocator = Allocator(
        features,
        AllocatedState(allocated_devices=allocated or set()),
        {c["metadata"]["name"]: c for c in classes},
        slices,
        DeviceMatchCache(consumable_capacity=features.consumable_capacity),
    )
    return allocator.allocate(on or node("node-1"), claims)


CLASS_A = device_class("class-a", DRIVER_A)
CLASS_B = device_class("class-b", DRIVER_B)


def test_simple_local_device_gets_a_node_local_selector() -> None:
    got = allocate(
        [claim("claim-0", request("req-0", "class-a"))],
        [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A)],
        [CLASS_A],
    )
    assert got == [
        {"devices": {"results": [result("req-0", DRIVER_A, "pool-1", "device-1")]}, "nodeSelector": local("node-1")}
    ]


def test_other_nodes_slice_is_not_usable() -> None:
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A)]
    assert allocate([claim("claim-0", request("req-0", "class-a"))], slices, [CLASS_A], node("node-2")) is None


def test_count_takes_devices_in_slice_order_and_fails_when_too_few() -> None:
    slices = [
        resource_slice(
            "slice-1", "node-1", "pool-1", DRIVER_A, device("device-0"), device("device-1"), device("device-2")
        )
    ]
    got = allocate([claim("claim-0", request("req-0", "class-a", 2))], slices, [CLASS_A])
    assert got is not None
    assert [r["device"] for r in got[0]["devices"]["results"]] == ["device-0", "device-1"]
    assert allocate([claim("claim-0", request("req-0", "class-a", 4))], slices, [CLASS_A]) is None


def test_class_selector_filters_by_driver() -> None:
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_B)]
    assert allocate([claim("claim-0", request("req-0", "class-a"))], slices, [CLASS_A]) is None


def test_request_selector_on_attribute() -> None:
    slices = [
        resource_slice(
            "slice-1",
            "node-1",
            "pool-1",
            DRIVER_A,
            device("device-0", attributes={"model": {"string": "a10"}}),
            device("device-1", attributes={"model": {"string": "a100"}}),
        )
    ]
    sel = [{"cel": {"expression": 'device.attributes["driver-a"].model == "a100"'}}]
    got = allocate([claim("claim-0", request("req-0", "class-a", selectors=sel))], slices, [CLASS_A])
    assert got is not None and got[0]["devices"]["results"] == [result("req-0", DRIVER_A, "pool-1", "device-1")]


def test_already_allocated_devices() -> None:
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A)]
    taken = {DeviceID(DRIVER_A, "pool-1", "device-1"), DeviceID(DRIVER_A, "pool-1", "device-2")}
    assert allocate([claim("claim-0", request("req-0", "class-a"))], slices, [CLASS_A], allocated=taken) is None


def test_admin_access_enabled_uses_allocated_device_and_says_so() -> None:
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A)]
    taken = {DeviceID(DRIVER_A, "pool-1", "device-1")}
    c = claim("claim-0", request("req-0", "class-a", adminAccess=True))
    got = allocate([c], slices, [CLASS_A], allocated=taken)
    assert got == [
        {
            "devices": {"results": [result("req-0", DRIVER_A, "pool-1", "device-1", adminAccess=True)]},
            "nodeSelector": local("node-1"),
        }
    ]


def test_admin_access_disabled_is_an_error() -> None:
    c = claim("claim-0", request("req-0", "class-a", adminAccess=True))
    with pytest.raises(AllocationError) as exc:
        allocate([c], [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A)], [CLASS_A], features=Features())
    assert str(exc.value) == "claim claim-0, request req-0: admin access is requested, but the feature is disabled"
    assert not isinstance(exc.value, NodeAllocationError)


def test_all_devices_takes_every_matching_device() -> None:
    slices = [
        resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), device("device-2")),
        resource_slice("slice-2", "node-1", "pool-2", DRIVER_B),
    ]
    got = allocate([claim("claim-0", all_request("req-0", "class-a"))], slices, [CLASS_A, CLASS_B])
    assert got is not None
    assert [r["device"] for r in got[0]["devices"]["results"]] == ["device-1", "device-2"]


def test_all_devices_with_one_allocated_fails() -> None:
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), device("device-2"))]
    taken = {DeviceID(DRIVER_A, "pool-1", "device-1")}
    assert allocate([claim("claim-0", all_request("req-0", "class-a"))], slices, [CLASS_A], allocated=taken) is None


def test_all_devices_of_an_incomplete_pool_is_an_error() -> None:
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, count=2)]
    with pytest.raises(
        AllocationError,
        match=r"^claim claim-0, request req-0: asks for all devices, but resource pool "
        r"driver-a/pool-1 is currently being updated$",
    ):
        allocate([claim("claim-0", all_request("req-0", "class-a"))], slices, [CLASS_A])


def test_first_available_falls_back_to_the_next_subrequest() -> None:
    # Upstream's prioritized-list case: subrequest 0 wants all of driver-a's devices, one is taken.
    first = sub_request("subReq-0", "class-a", allocationMode="All")
    del first["count"]
    c = claim("claim-0", {"name": "req-0", "firstAvailable": [first, sub_request("subReq-1", "class-b")]})
    slices = [
        resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), device("device-2")),
        resource_slice("slice-2", "node-1", "pool-2", DRIVER_B),
    ]
    got = allocate([c], slices, [CLASS_A, CLASS_B], allocated={DeviceID(DRIVER_A, "pool-1", "device-1")})
    assert got == [
        {
            "devices": {"results": [result("req-0/subReq-1", DRIVER_B, "pool-2", "device-1")]},
            "nodeSelector": local("node-1"),
        }
    ]


def test_first_available_disabled_is_an_error() -> None:
    c = claim("claim-0", {"name": "req-0", "firstAvailable": [sub_request("subReq-0", "class-a")]})
    with pytest.raises(AllocationError, match="has subrequests, but the DRAPrioritizedList feature is disabled"):
        allocate([c], [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A)], [CLASS_A], features=Features())


def _versioned(name: str, version: str, text: str) -> Obj:
    return device(name, attributes={"driverVersion": {"version": version}, "stringAttribute": {"string": text}})


def test_match_attribute_for_one_request_backtracks_on_the_other_constraint() -> None:
    # Upstream's "with-constraint-for-request-retry".
    constraints: list[Obj] = [
        {"requests": ["req-0"], "matchAttribute": "driver-a/driverVersion"},
        {"matchAttribute": "driver-a/stringAttribute"},
    ]
    slices = [
        resource_slice(
            "slice-1",
            "node-1",
            "pool-1",
            DRIVER_A,
            _versioned("device-1", "1.0.0", "a"),
            _versioned("device-2", "2.0.0", "b"),
            _versioned("device-3", "3.0.0", "b"),
        )
    ]
    c = claim("claim-0", request("req-0", "class-a"), request("req-1", "class-a"), constraints=constraints)
    got = allocate([c], slices, [CLASS_A])
    assert got is not None
    assert got[0]["devices"]["results"] == [
        result("req-0", DRIVER_A, "pool-1", "device-2"),
        result("req-1", DRIVER_A, "pool-1", "device-3"),
    ]


def test_match_attribute_not_matching_int_fails_and_all_mode_is_an_error() -> None:
    slices = [
        resource_slice(
            "slice-1",
            "node-1",
            "pool-1",
            DRIVER_A,
            device("device-1", attributes={"numa": {"int": 1}}),
            device("device-2", attributes={"numa": {"int": 2}}),
        )
    ]
    constraints = [{"matchAttribute": "driver-a/numa"}]
    assert (
        allocate([claim("claim-0", request("req-0", "class-a", 2), constraints=constraints)], slices, [CLASS_A]) is None
    )
    with pytest.raises(AllocationError) as exc:
        allocate([claim("claim-0", all_request("req-0", "class-a"), constraints=constraints)], slices, [CLASS_A])
    assert str(exc.value) == (
        "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
        "because a claim constraint would not be satisfied"
    )


def test_class_configs_once_per_class_then_claim_configs() -> None:
    classes = [
        device_class("class-a", DRIVER_A, [opaque(DRIVER_A, "classAttribute-A")]),
        device_class("class-b", DRIVER_B, [opaque(DRIVER_B, "classAttribute-B")]),
    ]
    slices = [
        resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-0"), device("device-1")),
        resource_slice("slice-2", "node-1", "pool-1", DRIVER_B),
    ]
    config = [{**opaque(DRIVER_A, "deviceAttribute")}, {"requests": ["req-2"], **opaque(DRIVER_B, "only-b")}]
    c = claim(
        "claim-0", request("req-0", "class-a"), request("req-1", "class-a"), request("req-2", "class-b"), config=config
    )
    got = allocate([c], slices, classes)
    assert got is not None
    assert got[0]["devices"]["config"] == [
        {"source": "FromClass", "requests": ["req-0", "req-1"], **opaque(DRIVER_A, "classAttribute-A")},
        {"source": "FromClass", "requests": ["req-2"], **opaque(DRIVER_B, "classAttribute-B")},
        {"source": "FromClaim", **opaque(DRIVER_A, "deviceAttribute")},
        {"source": "FromClaim", "requests": ["req-2"], **opaque(DRIVER_B, "only-b")},
    ]


def test_network_attached_devices_merge_their_selectors() -> None:
    slices = [
        resource_slice("slice-1", label_selector("region", "region-1"), "pool-1", DRIVER_A),
        resource_slice("slice-1", label_selector("planet", "earth"), "pool-2", DRIVER_A),
    ]
    got = allocate([claim("claim-0", request("req-0", "class-a", 2))], slices, [CLASS_A])
    assert got is not None
    assert got[0]["nodeSelector"] == {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "region", "operator": "In", "values": ["region-1"]},
                    {"key": "planet", "operator": "In", "values": ["earth"]},
                ]
            }
        ]
    }
    assert (
        allocate([claim("claim-0", request("req-0", "class-a"))], slices[:1], [CLASS_A], node("node-2", "region-2"))
        is None
    )


def test_all_nodes_slice_needs_no_node_selector() -> None:
    got = allocate(
        [claim("claim-0", request("req-0", "class-a"))],
        [resource_slice("slice-1", "all", "pool-1", DRIVER_A)],
        [CLASS_A],
    )
    assert got == [{"devices": {"results": [result("req-0", DRIVER_A, "pool-1", "device-1")]}}]


def test_several_claims_do_not_share_a_device() -> None:
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), device("device-2"))]
    claims = [claim("claim-0", request("req-0", "class-a")), claim("claim-1", request("req-0", "class-a"))]
    got = allocate(claims, slices, [CLASS_A])
    assert got is not None
    assert [g["devices"]["results"][0]["device"] for g in got] == ["device-1", "device-2"]
    claims.append(claim("claim-2", request("req-0", "class-a")))
    assert allocate(claims, slices, [CLASS_A]) is None


def test_invalid_pool_is_a_node_error_only_when_nothing_fits() -> None:
    bad = resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), device("device-1"))
    with pytest.raises(NodeAllocationError, match=r"^invalid resource pools were encountered$"):
        allocate([claim("claim-0", request("req-0", "class-a"))], [bad], [CLASS_A])
    good = resource_slice("slice-2", "node-1", "pool-2", DRIVER_A)
    got = allocate([claim("claim-0", request("req-0", "class-a"))], [bad, good], [CLASS_A])
    assert got is not None and got[0]["devices"]["results"][0]["pool"] == "pool-2"


def test_newer_generation_replaces_and_incomplete_pool_is_skipped() -> None:
    old = resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, device("old"), gen=1)
    new = resource_slice("slice-2", "node-1", "pool-1", DRIVER_A, device("new"), gen=2)
    got = allocate([claim("claim-0", request("req-0", "class-a"))], [old, new], [CLASS_A])
    assert got is not None and got[0]["devices"]["results"][0]["device"] == "new"
    incomplete = resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, count=2)
    assert allocate([claim("claim-0", request("req-0", "class-a"))], [incomplete], [CLASS_A]) is None


def test_missing_class_and_bad_selectors_are_errors_with_upstream_words() -> None:
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A)]
    with pytest.raises(AllocationError) as exc:
        allocate([claim("claim-0", request("req-0", "class-x"))], slices, [CLASS_A])
    assert str(exc.value) == (
        "claim claim-0, request req-0: could not retrieve device class class-x: "
        'deviceclass.resource.k8s.io "class-x" not found'
    )
    runtime = [{"cel": {"expression": 'device.attributes["driver-a"].missing == 1'}}]
    c = {
        **claim("claim-0", request("req-0", "class-a", selectors=runtime)),
        "metadata": {"name": "claim-0", "namespace": "ns"},
    }
    with pytest.raises(AllocationError, match=r"^claim ns/claim-0: selector #0: CEL runtime error: "):
        allocate([c], slices, [CLASS_A])
    with pytest.raises(AllocationError, match=r"^claim claim-0, request req-0, selector #0: CEL expression empty"):
        allocate([claim("claim-0", request("req-0", "class-a", selectors=[{}]))], slices, [CLASS_A])


def test_device_taints_block_unless_tolerated_when_the_gate_is_on() -> None:
    tainted = device("device-1", taints=[{"key": "dead", "effect": "NoSchedule"}])
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, tainted)]
    gated = features_from_gates({"DRADeviceTaints": True})
    assert allocate([claim("claim-0", request("req-0", "class-a"))], slices, [CLASS_A], features=gated) is None
    off = features_from_gates({"DRADeviceTaints": False})  # on by default from v1.36
    assert allocate([claim("claim-0", request("req-0", "class-a"))], slices, [CLASS_A], features=off) is not None
    toleration = {"key": "dead", "operator": "Exists"}
    got = allocate(
        [claim("claim-0", request("req-0", "class-a", tolerations=[toleration]))], slices, [CLASS_A], features=gated
    )
    assert got is not None and got[0]["devices"]["results"][0]["tolerations"] == [toleration]


def test_partitionable_devices_share_counters() -> None:
    counters = resource_slice("counters", "node-1", "pool-1", DRIVER_A, count=2)
    counters["spec"]["devices"] = []
    counters["spec"]["sharedCounters"] = [{"name": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}]
    half = {"counterSet": "gpu-0", "counters": {"memory": {"value": "4Gi"}}}
    whole = {"counterSet": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}
    parts = resource_slice(
        "parts",
        "node-1",
        "pool-1",
        DRIVER_A,
        device("whole", consumesCounters=[whole]),
        device("half-0", consumesCounters=[half]),
        device("half-1", consumesCounters=[half]),
        count=2,
    )
    gated = features_from_gates({"DRAPartitionableDevices": True})
    two = [claim("claim-0", request("req-0", "class-a")), claim("claim-1", request("req-0", "class-a"))]
    got = allocate(two, [counters, parts], [CLASS_A], features=gated)
    # The whole GPU uses up the counters, so the second claim backtracks the first onto a half.
    assert got is not None
    assert [g["devices"]["results"][0]["device"] for g in got] == ["half-0", "half-1"]
    # Gate off (on by default from v1.36): the counter slice is ignored and devices that consume counters are never
    # allocated.
    off = features_from_gates({"DRAPartitionableDevices": False})
    assert allocate(two[:1], [counters, parts], [CLASS_A], features=off) is None


def test_selector_verdicts_are_reused_across_allocators_without_changing_results() -> None:
    calls: list[str] = []

    class Counting:
        def __init__(self, expression: str) -> None:
            self.expression = expression

        def matches(self, view: Any) -> bool:
            calls.append(self.expression)
            return bool(view["driver"] == DRIVER_A)

    cache = DeviceMatchCache(compile_selector=Counting, device_view=lambda driver, dev: {"driver": driver})
    slices = [resource_slice(f"slice-{n}", f"node-{n}", f"pool-{n}", DRIVER_A) for n in range(3)]
    for n in range(3):
        allocator = Allocator(DEFAULTS, AllocatedState(), {"class-a": CLASS_A}, slices, cache)
        got = allocator.allocate(node(f"node-{n}"), [claim("claim-0", request("req-0", "class-a"))])
        assert got is not None and got[0]["devices"]["results"][0]["pool"] == f"pool-{n}"
    again = Allocator(DEFAULTS, AllocatedState(), {"class-a": CLASS_A}, slices, cache)
    assert again.allocate(node("node-0"), [claim("claim-0", request("req-0", "class-a"))]) is not None
    assert len(calls) == 3  # one evaluation per device, however many allocators asked


def test_one_allocator_asked_node_after_node_gives_each_node_its_own_answer() -> None:
    # The checked claims and gathered pools an allocator keeps between nodes must not leak from one to the next.
    slices = [
        resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1")),
        resource_slice("slice-2", "node-2", "pool-2", DRIVER_A, device("device-1"), device("device-2")),
        resource_slice("slice-3", "node-2", "pool-3", DRIVER_B),
    ]
    claims = [claim("claim-0", request("req-0", "class-b")), claim("claim-1", request("req-0", "class-a", 2))]
    allocator = Allocator(
        DEFAULTS, AllocatedState(), {"class-a": CLASS_A, "class-b": CLASS_B}, slices, DeviceMatchCache()
    )
    assert allocator.allocate(node("node-1"), claims) is None
    got = allocator.allocate(node("node-2"), claims)
    assert got is not None
    assert [r["pool"] for g in got for r in g["devices"]["results"]] == ["pool-3", "pool-2", "pool-2"]
    assert allocator.allocate(node("node-1"), claims) is None
    assert allocator.allocate(node("node-2"), claims) == got
