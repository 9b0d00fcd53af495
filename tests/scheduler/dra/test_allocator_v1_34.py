"""The allocator as kube-scheduler v1.34 runs it (issue #32): where its code differs from v1.35's.

Helpers and objects are test_allocator's (upstream's test table names); ``at(34, ...)`` are v1.34's default features
under the given gates, as the DynamicResources plugin builds them at that version.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.dra import (
    AllocatedState,
    AllocationError,
    Allocator,
    DeviceID,
    DeviceMatchCache,
    Features,
    NodeAllocationError,
    allocator_variant,
    features_from_gates,
)
from tests.scheduler.dra.test_allocator import (
    CLASS_A,
    DRIVER_A,
    allocate,
    claim,
    device,
    node,
    request,
    resource_slice,
)

GI = 1024**3


def at(minor: int, **gates: bool) -> Features:
    return features_from_gates(kube_version(f"1.{minor}").effective_gates(gates), minor)


def test_v1_34_defaults_run_the_experimental_allocator_for_device_status() -> None:
    # DRAResourceClaimDeviceStatus is on by default and only v1.34's experimental allocator supports it alone.
    assert at(34).device_status and allocator_variant(at(34)) == "experimental"
    assert allocator_variant(at(34, DRAResourceClaimDeviceStatus=False)) == "incubating"
    assert not at(35).device_status and allocator_variant(at(35)) == "incubating"


def test_v1_34_writes_no_tolerations_into_the_results() -> None:
    tainted = device("device-1", taints=[{"key": "dead", "effect": "NoSchedule"}])
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, tainted)]
    toleration = {"key": "dead", "operator": "Exists"}
    claims = [claim("claim-0", request("req-0", "class-a", tolerations=[toleration]))]
    for minor, written in ((34, None), (35, [toleration])):
        got = allocate(claims, slices, [CLASS_A], features=at(minor, DRADeviceTaints=True))
        assert got is not None and got[0]["devices"]["results"][0].get("tolerations") == written, minor


def test_v1_34_fails_the_attempt_on_reaching_an_invalid_pool() -> None:
    duplicate = [resource_slice(f"slice-{i}", "node-1", "pool-1", DRIVER_A, count=2) for i in (1, 2)]
    claims = [claim("claim-0", request("req-0", "class-a"))]
    with pytest.raises(AllocationError, match=r"^pool pool-1 is invalid: duplicate device name device-1$") as v134:
        allocate(claims, duplicate, [CLASS_A], features=at(34))
    assert not isinstance(v134.value, NodeAllocationError)  # an error for the attempt, not this node's verdict
    with pytest.raises(NodeAllocationError, match=r"^invalid resource pools were encountered$"):
        allocate(claims, duplicate, [CLASS_A], features=at(35))


def test_v1_34_searches_an_incomplete_pool() -> None:
    half_published = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, count=2)]
    claims = [claim("claim-0", request("req-0", "class-a"))]
    got = allocate(claims, half_published, [CLASS_A], features=at(34))
    assert got is not None and got[0]["devices"]["results"][0]["device"] == "device-1"
    assert allocate(claims, half_published, [CLASS_A], features=at(35)) is None


def _partitioned() -> list[Obj]:
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
        count=2,
    )
    return [counters, parts]


def test_v1_34_takes_shared_counters_from_the_devices_own_slice() -> None:
    two = [claim("claim-0", request("req-0", "class-a")), claim("claim-1", request("req-0", "class-a"))]
    # v1.35: the pool's counter slice limits both devices together, so the two claims cannot both have one.
    assert allocate(two, _partitioned(), [CLASS_A], features=at(35, DRAPartitionableDevices=True)) is None
    # v1.34: the devices' slice shares no counters, so nothing limits them.
    got = allocate(two, _partitioned(), [CLASS_A], features=at(34, DRAPartitionableDevices=True))
    assert got is not None
    assert [g["devices"]["results"][0]["device"] for g in got] == ["whole", "half-0"]


def test_v1_34_checks_capacity_on_the_slice_device_at_the_wanted_index() -> None:
    policy = {"value": "40Gi"}
    shared = [
        device("gpu-0", capacity={"memory": policy}, allowMultipleAllocations=True),
        device("gpu-1", capacity={"memory": policy}, allowMultipleAllocations=True),
    ]
    slices = [resource_slice("slice-1", "node-1", "pool-1", DRIVER_A, *shared)]
    # An allocated claim holds 20Gi of gpu-0, so a claim asking 25Gi gets gpu-1; v1.34 checks gpu-0 again (the
    # slice's device at the index of the device wanted, the first) and finds no room.
    held = AllocatedState(aggregated_capacity={DeviceID(DRIVER_A, "pool-1", "gpu-0"): {"memory": Fraction(20 * GI)}})
    wants = [claim("claim-1", request("req-0", "class-a", capacity={"requests": {"memory": "25Gi"}}))]
    for minor, expected in ((35, ["gpu-1"]), (34, None)):
        features = at(minor, DRAConsumableCapacity=True)
        allocator = Allocator(features, held, {"class-a": CLASS_A}, slices, DeviceMatchCache(consumable_capacity=True))
        got = allocator.allocate(node("node-1"), wants)
        assert (got and [r["device"] for r in got[0]["devices"]["results"]]) == expected, minor
