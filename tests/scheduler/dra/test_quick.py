"""The count-based verdict (kss_sim.scheduler.dra.quick) against the full allocator it stands in for.

Wherever the counts decide, the allocator must agree: "fits" only where ``allocate`` returns results, "does not
fit" only where it returns None without an error. Nodes the counts cannot judge (invalid pools, failing selectors,
binding conditions under their gate, shapes with constraints or devices two request kinds compete for) are left
to the allocator. The last tests run whole scenarios through DynamicResources with and without the counts and
compare every recorded field.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import VERSIONS
from kss_sim.scheduler.dra import (
    AllocatedState,
    AllocationError,
    Allocator,
    DeviceID,
    DeviceMatchCache,
    Features,
    features_from_gates,
)
from kss_sim.scheduler.dra.quick import QuickCheck
from kss_sim.simulation.runner import run_scenario
from tests.scheduler.dra.test_allocator import (
    CLASS_A,
    DEFAULTS,
    DRIVER_A,
    claim,
    device,
    label_selector,
    node,
    request,
    resource_slice,
)

MODELS = ("t4", "a100", "h100")


def model_is(*models: str) -> Obj:
    values = ", ".join(f'"{m}"' for m in models)
    return {"cel": {"expression": f'device.attributes["{DRIVER_A}"].model in [{values}]'}}


def gpu(name: str, model: str, **fields: Any) -> Obj:
    return device(name, attributes={"model": {"string": model}}, **fields)


# v1.36's defaults: partitionable devices, consumable capacity, device taints and binding conditions on.
V1_36 = features_from_gates(VERSIONS["1.36"].effective_gates(), 36)
# v1.34 with consumable capacity on, whose capacity check reads another device of the slice.
V1_34_CAPACITY = features_from_gates(
    VERSIONS["1.34"].effective_gates({"DRAConsumableCapacity": True, "DRAPartitionableDevices": True}), 34
)


def allocator_for(
    slices: list[Obj],
    allocated: set[DeviceID],
    features: Features = DEFAULTS,
    classes: list[Obj] | None = None,
    shares: dict[DeviceID, dict[str, Fraction]] | None = None,
) -> Allocator:
    return Allocator(
        features,
        AllocatedState(allocated_devices=allocated, aggregated_capacity=dict(shares or {})),
        {c["metadata"]["name"]: c for c in classes or [CLASS_A]},
        slices,
        DeviceMatchCache(consumable_capacity=features.consumable_capacity),
    )


def outcome(allocator: Allocator, on: Obj, claims: list[Obj]) -> str:
    """What the full allocator says: "fits", "no" (None) or "error"."""
    try:
        got = allocator.allocate(on, claims)
    except AllocationError:
        return "error"
    return "no" if got is None else "fits"


def verdicts_agree(allocator: Allocator, nodes: list[Obj], claims: list[Obj]) -> list[bool | None]:
    """Each node's quick verdict, checked against the allocator and against the batch verdicts."""
    quick = QuickCheck.for_claims(allocator, claims)
    assert quick is not None
    verdicts = [quick.node_verdict(n) for n in nodes]
    for n, verdict in zip(nodes, verdicts, strict=True):
        if verdict is not None:
            assert outcome(allocator, n, claims) == ("fits" if verdict else "no"), (n["metadata"]["name"], claims)
    cols = SimpleNamespace(infos=[SimpleNamespace(node=n) for n in nodes])
    decided, fits = quick.column_verdicts(cols, np.arange(len(nodes)))
    assert [bool(f) if d else None for d, f in zip(decided, fits, strict=True)] == verdicts
    return verdicts


# --- varied clusters ----------------------------------------------------------------------------------------------
def random_cluster(rng: random.Random) -> tuple[list[Obj], list[Obj], set[DeviceID]]:
    """Nodes with local pools (some incomplete, invalid, with odd devices), network pools, some devices taken."""
    nodes = [node(f"node-{i}", region=rng.choice(("r1", "r2"))) for i in range(8)]
    slices: list[Obj] = []
    allocated: set[DeviceID] = set()
    for i, n in enumerate(nodes):
        name = n["metadata"]["name"]
        kind = rng.random()
        if kind < 0.1:
            continue  # no devices
        devices = [gpu(f"gpu-{j}", rng.choice(MODELS)) for j in range(rng.randint(1, 5))]
        count = 1
        if kind < 0.18:
            count = 2  # the second slice never comes: incomplete pool
        elif kind < 0.24:
            devices.append(gpu("gpu-0", "t4"))  # duplicate name: invalid pool
        elif kind < 0.32:
            devices[0]["bindingConditions"] = ["attached"]
        elif kind < 0.38:
            devices[0]["attributes"]["size"] = {"int": 3}  # only some devices have it (selector errors elsewhere)
        slices.append(resource_slice(f"s-{i}", name, name, DRIVER_A, *devices, count=count))
        for d in devices:
            if rng.random() < 0.3:
                allocated.add(DeviceID(DRIVER_A, name, d["name"]))
    if rng.random() < 0.5:
        where = "all" if rng.random() < 0.5 else label_selector("region", "r1")
        shared = [gpu(f"net-{j}", rng.choice(MODELS)) for j in range(rng.randint(1, 3))]
        slices.append(resource_slice("network", where, "network", DRIVER_A, *shared))
    return nodes, slices, allocated


def random_partitionable_cluster(
    rng: random.Random,
) -> tuple[list[Obj], list[Obj], set[DeviceID], dict[DeviceID, dict[str, Fraction]]]:
    """:func:`random_cluster` with what v1.36's defaults change the allocator for: devices with capacity (some
    whose default consumption cannot fit), shareable devices, devices consuming a pool's counters, and shares held
    by allocated claims."""
    nodes, slices, allocated = random_cluster(rng)
    shares: dict[DeviceID, dict[str, Fraction]] = {}
    for s in list(slices):
        spec = s["spec"]
        if spec.get("nodeName") is None:
            continue
        pool = spec["pool"]["name"]
        for d in spec["devices"]:
            kind = rng.random()
            if kind < 0.3:
                d["capacity"] = {"memory": {"value": "32Gi"}}
            elif kind < 0.4:
                # The default consumption is more than the device has: never fits.
                d["capacity"] = {"memory": {"value": "32Gi", "requestPolicy": {"default": "64Gi"}}}
            elif kind < 0.5:
                d["capacity"] = {"memory": {"value": "32Gi", "requestPolicy": {"validValues": ["8Gi", "16Gi"]}}}
            elif kind < 0.6:
                d["allowMultipleAllocations"] = True
                d["capacity"] = {"memory": {"value": "32Gi"}}
            elif kind < 0.7:
                d["consumesCounters"] = [{"counterSet": "mem", "counters": {"memory": {"value": "20Gi"}}}]
            if rng.random() < 0.1:
                shares[DeviceID(DRIVER_A, pool, d["name"])] = {"memory": Fraction(8 * 2**30)}
        if any("consumesCounters" in d for d in spec["devices"]):
            spec["pool"]["resourceSliceCount"] += 1
            counters = {
                "metadata": {"name": s["metadata"]["name"] + "-counters"},
                "spec": {
                    "driver": DRIVER_A,
                    "pool": dict(spec["pool"]),
                    "nodeName": spec["nodeName"],
                    "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "40Gi"}}}],
                },
            }
            slices.append(counters)
    return nodes, slices, allocated, shares


def random_claims(rng: random.Random) -> list[Obj]:
    """Claims of the common shape; one request kind, or several."""
    claims = []
    one_kind = rng.random() < 0.6
    kind = list(rng.sample(MODELS, rng.randint(1, 3)))
    for c in range(rng.randint(1, 2)):
        requests = []
        for r in range(rng.randint(1, 2)):
            models = kind if one_kind else rng.sample(MODELS, rng.randint(1, 3))
            selectors = [model_is(*models)]
            if rng.random() < 0.1:
                selectors.append({"cel": {"expression": f'device.attributes["{DRIVER_A}"].size > 2'}})
            requests.append(request(f"req-{r}", "class-a", rng.randint(1, 3), selectors=selectors))
        claims.append(claim(f"claim-{c}", *requests))
    return claims


@pytest.mark.parametrize("seed", range(40))
def test_counts_agree_with_the_allocator_on_varied_clusters(seed: int) -> None:
    rng = random.Random(seed)
    nodes, slices, allocated = random_cluster(rng)
    claims = random_claims(rng)
    verdicts_agree(allocator_for(slices, allocated), nodes, claims)


@pytest.mark.parametrize("features", [DEFAULTS, V1_36, V1_34_CAPACITY], ids=["v1.35", "v1.36", "v1.34+capacity"])
@pytest.mark.parametrize("seed", range(40))
def test_counts_agree_with_the_allocator_on_partitionable_and_shared_devices(seed: int, features: Features) -> None:
    rng = random.Random(seed)
    nodes, slices, allocated, shares = random_partitionable_cluster(rng)
    claims = random_claims(rng)
    verdicts_agree(allocator_for(slices, allocated, features, shares=shares), nodes, claims)


def test_counts_decide_most_nodes_under_v1_36_defaults() -> None:
    decided = total = 0
    for seed in range(40):
        rng = random.Random(seed)
        nodes, slices, allocated = random_cluster(rng)
        claims = random_claims(rng)
        verdicts = verdicts_agree(allocator_for(slices, allocated, V1_36), nodes, claims)
        decided += sum(v is not None for v in verdicts)
        total += len(verdicts)
    assert decided > total // 2


def test_devices_the_counts_cannot_judge_under_v1_36_defaults_go_to_the_allocator() -> None:
    counters = {
        "metadata": {"name": "counters"},
        "spec": {
            "driver": DRIVER_A,
            "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 2},
            "nodeName": "node-1",
            "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "40Gi"}}}],
        },
    }
    partition = gpu("a", "t4", consumesCounters=[{"counterSet": "mem", "counters": {"memory": {"value": "20Gi"}}}])
    shared = gpu("b", "t4", allowMultipleAllocations=True)
    for slices, shares in (
        ([resource_slice("s", "node-1", "pool", DRIVER_A, partition, count=2), counters], None),
        ([resource_slice("s", "node-1", "pool", DRIVER_A, shared)], None),
        # Held in part by a share, though the device does not allow it: the allocator decides what is left.
        (
            [resource_slice("s", "node-1", "pool", DRIVER_A, gpu("c", "t4", capacity={"m": {"value": "2"}}))],
            {DeviceID(DRIVER_A, "pool", "c"): {"m": Fraction(1)}},
        ),
    ):
        allocator = allocator_for(slices, set(), V1_36, shares=shares)
        wants = [claim("claim-0", request("req-0", "class-a", 1))]
        quick = QuickCheck.for_claims(allocator, wants)
        assert quick is not None and quick.node_verdict(node("node-1")) is None
        assert verdicts_agree(allocator, [node("node-1")], wants) == [None]


def test_counts_decide_most_nodes_of_varied_clusters() -> None:
    decided = total = 0
    for seed in range(40):
        rng = random.Random(seed)
        nodes, slices, allocated = random_cluster(rng)
        claims = random_claims(rng)
        verdicts = verdicts_agree(allocator_for(slices, allocated), nodes, claims)
        decided += sum(v is not None for v in verdicts)
        total += len(verdicts)
    assert decided > total // 2


# --- what the counts leave to the allocator -----------------------------------------------------------------------
def test_enough_devices_but_a_constraint_refuses_them_goes_to_the_allocator() -> None:
    slices = [
        resource_slice("s", "node-1", "pool", DRIVER_A, gpu("a", "t4"), gpu("b", "a100"), device("c", attributes={}))
    ]
    allocator = allocator_for(slices, set())
    # Two devices of the class on the node, but none share a model.
    constrained = claim(
        "claim-0", request("req-0", "class-a", 2), constraints=[{"matchAttribute": f"{DRIVER_A}/model"}]
    )
    assert QuickCheck.for_claims(allocator, [constrained]) is None
    assert outcome(allocator, node("node-1"), [constrained]) == "no"


def test_enough_of_each_kind_but_not_of_both_goes_to_the_allocator() -> None:
    slices = [resource_slice("s", "node-1", "pool", DRIVER_A, gpu("a", "t4"), gpu("b", "a100"))]
    allocator = allocator_for(slices, set())
    wants = [
        claim(
            "claim-0",
            request("any", "class-a", 2, selectors=[model_is("t4", "a100")]),
            request("t4", "class-a", 1, selectors=[model_is("t4")]),
        )
    ]
    quick = QuickCheck.for_claims(allocator, wants)
    assert quick is not None and quick.node_verdict(node("node-1")) is None
    assert outcome(allocator, node("node-1"), wants) == "no"
    # Short of one kind: decided without the search.
    allocator = allocator_for(slices, {DeviceID(DRIVER_A, "pool", "a")})
    quick = QuickCheck.for_claims(allocator, wants)
    assert quick is not None and quick.node_verdict(node("node-1")) is False
    assert outcome(allocator, node("node-1"), wants) == "no"


def test_invalid_pool_and_failing_selector_go_to_the_allocator_for_its_error() -> None:
    invalid = [resource_slice("s", "node-1", "pool", DRIVER_A, gpu("a", "t4"), gpu("a", "t4"))]
    allocator = allocator_for(invalid, set())
    wants = [claim("claim-0", request("req-0", "class-a", 3))]
    quick = QuickCheck.for_claims(allocator, wants)
    assert quick is not None and quick.node_verdict(node("node-1")) is None
    assert outcome(allocator, node("node-1"), wants) == "error"  # invalid resource pools were encountered
    failing = [resource_slice("s", "node-1", "pool", DRIVER_A, gpu("a", "t4"))]
    allocator = allocator_for(failing, set())
    sized = [
        claim(
            "c",
            request("r", "class-a", selectors=[{"cel": {"expression": f'device.attributes["{DRIVER_A}"].size > 2'}}]),
        )
    ]
    quick = QuickCheck.for_claims(allocator, sized)
    assert quick is not None and quick.node_verdict(node("node-1")) is None
    assert outcome(allocator, node("node-1"), sized) == "error"


@pytest.mark.parametrize(
    "shape",
    [
        {"allocationMode": "All"},
        {"adminAccess": True},
        {"count": 0},
        {"deviceClassName": "missing"},
        {"selectors": [{}]},
        {"count": 33},
    ],
)
def test_other_request_shapes_are_left_to_the_allocator(shape: Obj) -> None:
    allocator = allocator_for([resource_slice("s", "node-1", "pool", DRIVER_A, gpu("a", "t4"))], set())
    req = request("req-0", "class-a")
    req["exactly"].update(shape)
    assert QuickCheck.for_claims(allocator, [claim("claim-0", req)]) is None
    first = {
        "name": "r",
        "firstAvailable": [{"name": "s", "deviceClassName": "class-a", "allocationMode": "ExactCount", "count": 1}],
    }
    assert QuickCheck.for_claims(allocator, [claim("claim-0", first)]) is None


# --- DynamicResources with and without the counts -------------------------------------------------------------------
def trace_like_scenario(rng: random.Random) -> Obj:
    """GPU nodes of a few models, pods asking 1-4 GPUs of some models (some of none), until the cluster fills up."""
    nodes, slices = [], []
    for i in range(12):
        name = f"node-{i:02d}"
        nodes.append(
            {
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}},
            }
        )
        if i % 5 == 4:
            continue
        model = MODELS[i % 3]
        devices = [gpu(f"gpu-{j}", model) for j in range(rng.choice((2, 4, 8)))]
        s = resource_slice(f"{name}-gpus", name, name, DRIVER_A, *devices)
        s["metadata"]["uid"] = f"uid-{name}-gpus"
        slices.append(s)
    claims, pending = [], []
    for p in range(40):
        count = rng.choice((1, 1, 2, 4))
        models = rng.sample(MODELS, rng.randint(1, 3))
        c = claim(f"claim-{p}", request("gpu", "class-a", count, selectors=[model_is(*models)]))
        c["metadata"].update(namespace="default", uid=f"uid-claim-{p}")
        claims.append(c)
        pending.append(
            {
                "metadata": {"name": f"pod-{p}", "namespace": "default", "uid": f"uid-pod-{p}"},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": f"claim-{p}"}],
                },
            }
        )
    class_a = json.loads(json.dumps(CLASS_A))
    class_a["metadata"]["uid"] = "uid-class-a"
    return {
        "nodes": nodes,
        "pods": [],
        "pending": pending,
        "deviceClasses": [class_a],
        "resourceSlices": slices,
        "resourceClaims": claims,
    }


@pytest.mark.parametrize("detail", ["full", "placements"])
@pytest.mark.parametrize("seed", range(3))
def test_scheduling_with_counts_equals_scheduling_with_the_allocator_alone(
    seed: int, detail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = trace_like_scenario(random.Random(seed))
    with_counts = run_scenario(json.loads(json.dumps(scenario)), detail)
    monkeypatch.setattr(QuickCheck, "for_claims", classmethod(lambda cls, allocator, claims: None))
    allocator_only = run_scenario(json.loads(json.dumps(scenario)), detail)
    assert with_counts == allocator_only
    results = with_counts["results"]
    assert any(r.get("boundTo") for r in results) and any(not r.get("boundTo") for r in results)
