"""Topics of the `dra` family behind feature gates that v1.35 ships off: partitionable devices (shared
counters), device taints and consumable capacity. Every scenario comes twice: with its gate on, and the very
same objects with the gate off (kube-scheduler then ignores the fields, or cannot allocate what needs them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kss_sim.kube.objects import Obj
from tools.golden import dra_objects as k
from tools.golden.dra_cluster import GPU, GPU_CLASS, Scenario, attr, gpu_class, gpu_device
from tools.golden.dra_topics_requests import Topic

Build = Callable[[Scenario], None]

# (name, memory, compute units) of an 80Gi GPU's partitions
PROFILES = {"whole": ("80Gi", "7"), "3g": ("40Gi", "3"), "1g": ("10Gi", "1")}


def _partition(gpu: int, profile: str, index: int = 0, **device_args: Any) -> Obj:
    memory, compute = PROFILES[profile]
    name = f"gpu-{gpu}" if profile == "whole" else f"gpu-{gpu}-{profile}-{index}"
    return k.device(
        name,
        {"model": "h100", "profile": profile, "parentIndex": gpu},
        {"memory": memory},
        consumes=[(f"gpu-{gpu}-counters", {"memory": memory, "compute": compute})],
        **device_args,
    )


def _counter_slice(node_name: str, gpus: int, slice_count: int) -> Obj:
    return k.resource_slice(
        f"{node_name}-counters",
        GPU,
        node_name,
        node_name=node_name,
        slice_count=slice_count,
        shared_counters=[(f"gpu-{g}-counters", {"memory": "80Gi", "compute": "7"}) for g in range(gpus)],
    )


def _profile_claim(s: Scenario, name: str, profile: str, count: int = 1) -> None:
    s.claim(name, k.exactly("gpu", GPU_CLASS, f'{attr("profile")} == "{profile}"', count=count))


def _partitionable(variant: int) -> tuple[str, Build]:
    def whole_and_slices(s: Scenario) -> None:
        for n in range(s.rng.randint(2, 4)):
            name = f"node-{n:02d}"
            s.node(name)
            s.slices.append(_counter_slice(name, 1, 2))
            devices = [_partition(0, "whole"), _partition(0, "3g", 0), _partition(0, "3g", 1), _partition(0, "1g", 0)]
            s.slices.append(k.resource_slice(f"{name}-gpu", GPU, name, devices, node_name=name, slice_count=2))
        for p, profile in enumerate(["3g", "whole", "1g", "whole", "3g", "3g"][: s.rng.randint(3, 6)]):
            _profile_claim(s, f"claim-p{p:02d}", profile)
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    def three_g(s: Scenario) -> None:
        for n in range(s.rng.randint(2, 3)):
            name = f"node-{n:02d}"
            s.node(name)
            s.slices.append(_counter_slice(name, 1, 2))
            devices = [_partition(0, "3g", j) for j in range(3)]
            s.slices.append(k.resource_slice(f"{name}-gpu", GPU, name, devices, node_name=name, slice_count=2))
        for p in range(s.rng.randint(4, 8)):
            _profile_claim(s, f"claim-p{p:02d}", "3g")
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    def one_g(s: Scenario) -> None:
        for n in range(2):
            name = f"node-{n:02d}"
            s.node(name)
            s.slices.append(_counter_slice(name, 1, 2))
            devices = [_partition(0, "1g", j) for j in range(8)]
            s.slices.append(k.resource_slice(f"{name}-gpu", GPU, name, devices, node_name=name, slice_count=2))
        for p in range(s.rng.randint(5, 9)):
            _profile_claim(s, f"claim-p{p:02d}", "1g", count=2)
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    def two_counter_sets(s: Scenario) -> None:
        for n in range(s.rng.randint(2, 4)):
            name = f"node-{n:02d}"
            s.node(name)
            s.slices.append(_counter_slice(name, 2, 2))
            devices = [_partition(g, p, 0) for g in range(2) for p in ("whole", "3g")]
            s.slices.append(k.resource_slice(f"{name}-gpu", GPU, name, devices, node_name=name, slice_count=2))
        for p in range(s.rng.randint(3, 7)):
            profile = s.rng.choice(["whole", "3g"])
            _profile_claim(s, f"claim-p{p:02d}", profile, count=s.rng.randint(1, 2))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    def per_device_nodes(s: Scenario) -> None:
        nodes = s.rng.randint(3, 5)
        for n in range(nodes):
            s.node(f"node-{n:02d}")
        devices = [gpu_device(j, "a100", node_name=f"node-{j % nodes:02d}") for j in range(nodes + 1)]
        devices.append(gpu_device(nodes + 1, "l4", all_nodes=True))
        s.slices.append(k.resource_slice("fabric-gpu", GPU, "fabric", devices, per_device=True))
        for p in range(s.rng.randint(2, 6)):
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    def split_slices(s: Scenario) -> None:
        for n in range(s.rng.randint(2, 3)):
            name = f"node-{n:02d}"
            s.node(name)
            s.slices.append(_counter_slice(name, 1, 3))
            s.slices.append(
                k.resource_slice(f"{name}-gpu-a", GPU, name, [_partition(0, "whole")], node_name=name, slice_count=3)
            )
            s.slices.append(
                k.resource_slice(
                    f"{name}-gpu-b",
                    GPU,
                    name,
                    [_partition(0, "3g", 0), _partition(0, "3g", 1)],
                    node_name=name,
                    slice_count=3,
                )
            )
        for p, profile in enumerate(["whole", "3g", "3g", "whole", "3g"][: s.rng.randint(2, 5)]):
            _profile_claim(s, f"claim-p{p:02d}", profile)
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    builds: list[tuple[str, Build]] = [
        (
            "a whole GPU and its MIG partitions share counters: taking one makes the others unavailable",
            whole_and_slices,
        ),
        ("three 3g partitions of one GPU: the counters allow two per node", three_g),
        ("eight 1g partitions, seven compute units: two per claim until the counters run out", one_g),
        ("two GPUs per node, each with its counter set", two_counter_sets),
        ("perDeviceNodeSelection: one slice, devices each on a node or on all nodes", per_device_nodes),
        ("a counter set slice and two device slices in one pool (resourceSliceCount 3)", split_slices),
    ]
    return builds[variant]


def _device_taints(variant: int) -> tuple[str, Build]:
    no_schedule = k.device_taint("example.com/unhealthy", "NoSchedule", "ecc")
    no_execute = k.device_taint("example.com/draining", "NoExecute")

    def cluster(s: Scenario, taint_of: Callable[[int, int], list[Obj]], gpus: int = 2) -> None:
        for n in range(s.rng.randint(2, 5)):
            name = f"node-{n:02d}"
            s.node(name)
            s.local_slice(name, [gpu_device(j, "a100", taints=taint_of(n, j)) for j in range(gpus)])

    def claims(s: Scenario, tolerations_of: Callable[[int], list[Obj]]) -> None:
        for p in range(s.rng.randint(2, 6)):
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS, tolerations=tolerations_of(p)))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    def v0(s: Scenario) -> None:
        cluster(s, lambda n, j: [no_schedule] if j == 0 else [])
        claims(s, lambda p: [])

    def v1(s: Scenario) -> None:
        cluster(s, lambda n, j: [no_execute] if n % 2 == 0 else [])
        claims(s, lambda p: [k.toleration("example.com/draining", "Exists")] if p % 2 == 0 else [])

    def v2(s: Scenario) -> None:
        cluster(s, lambda n, j: [no_schedule])
        claims(
            s,
            lambda p: [
                k.toleration("example.com/unhealthy", value="ecc" if p % 2 == 0 else "other", effect="NoSchedule")
            ],
        )

    def v3(s: Scenario) -> None:
        cluster(s, lambda n, j: [no_execute] if n != 0 else [no_schedule])
        claims(
            s,
            lambda p: [
                k.toleration("example.com/draining", "Exists", effect="NoSchedule"),
                k.toleration("example.com/unhealthy", "Exists", effect="NoSchedule"),
            ],
        )

    def v4(s: Scenario) -> None:
        cluster(s, lambda n, j: [no_schedule, no_execute] if n < 2 else [], gpus=1)
        claims(s, lambda p: [k.toleration(operator="Exists")] if p % 3 == 0 else [])

    def v5(s: Scenario) -> None:
        cluster(s, lambda n, j: [no_schedule] if j == 1 else [], gpus=2)
        for p in range(s.rng.randint(2, 6)):
            s.claim(
                f"claim-p{p:02d}",
                k.first_available(
                    "gpu",
                    k.subrequest("healthy", GPU_CLASS, f"{attr('index')} == 1"),
                    k.subrequest(
                        "tolerant",
                        GPU_CLASS,
                        f"{attr('index')} == 1",
                        tolerations=[k.toleration("example.com/unhealthy", "Exists")],
                    ),
                ),
            )
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    builds: list[tuple[str, Build]] = [
        ("a NoSchedule taint on one GPU per node: untolerating claims take the other", v0),
        ("NoExecute taints on every other node's GPUs, tolerated with Exists by half the claims", v1),
        ("Equal tolerations with a matching and a wrong value", v2),
        ("tolerations limited to NoSchedule do not tolerate NoExecute", v3),
        ("GPUs with two taints on two nodes, tolerated by an empty-key Exists toleration", v4),
        ("firstAvailable whose second subrequest tolerates the taint the first does not", v5),
    ]
    return builds[variant]


def _consumable(variant: int) -> tuple[str, Build]:
    policy = {"default": "10Gi", "validRange": {"min": "5Gi", "step": "5Gi"}}

    def cluster(s: Scenario) -> None:
        for n in range(s.rng.randint(2, 3)):
            name = f"node-{n:02d}"
            s.node(name)
            devices = [
                k.device(
                    f"gpu-{j}",
                    {"model": "h100", "index": j},
                    {"memory": {"value": "40Gi", "requestPolicy": policy}},
                    allow_multiple=True,
                )
                for j in range(2)
            ]
            s.local_slice(name, devices)

    def v0(s: Scenario) -> None:
        cluster(s)
        for p in range(s.rng.randint(4, 9)):
            size = s.rng.choice(["15Gi", "20Gi", "25Gi"])
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS, capacity={"memory": size}))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    def v1(s: Scenario) -> None:
        cluster(s)
        for p in range(s.rng.randint(4, 10)):
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    def v2(s: Scenario) -> None:
        cluster(s)
        for p in range(s.rng.randint(2, 5)):
            reqs = [
                k.exactly(f"r{r}", GPU_CLASS, "device.allowMultipleAllocations", capacity={"memory": "20Gi"})
                for r in range(2)
            ]
            s.claim(f"claim-p{p:02d}", *reqs, constraints=[{"distinctAttribute": f"{GPU}/index"}])
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")

    builds: list[tuple[str, Build]] = [
        ("devices with allowMultipleAllocations shared by claims asking memory capacity until it is consumed", v0),
        ("claims without capacity requests consume the requestPolicy default", v1),
        ("a selector on device.allowMultipleAllocations and a distinctAttribute constraint", v2),
    ]
    return builds[variant]


def _gated(prefix: str, gate: str, variants: int, make: Callable[[int], tuple[str, Build]]) -> Iterator[Scenario]:
    for on in (True, False):
        for i in range(variants):
            what, build = make(i)
            name = f"{prefix}-{i:03d}" if on else f"{prefix}-off-{i:03d}"
            state = "on" if on else "off (the same objects as with the gate on)"
            s = Scenario(name, f"{gate} {state}: {what}", {gate: on})
            # The same objects both ways: the seed is the gate-on scenario's.
            s.rng = Scenario(f"{prefix}-{i:03d}", "").rng
            s.device_classes.append(gpu_class())
            build(s)
            yield s


def partitionable() -> Iterator[Scenario]:
    return _gated("dra-partitionable", "DRAPartitionableDevices", 6, _partitionable)


def device_taints() -> Iterator[Scenario]:
    return _gated("dra-devicetaint", "DRADeviceTaints", 6, _device_taints)


def consumable_capacity() -> Iterator[Scenario]:
    return _gated("dra-consumable", "DRAConsumableCapacity", 3, _consumable)


TOPICS: list[Topic] = [partitionable, device_taints, consumable_capacity]
