"""Topics of the `dra` family about claims and where their devices are: shared and allocated claims, templates,
several claims per pod, network-attached pools, pool bookkeeping, unsatisfiable claims, DRA beside the other
plugins, and preemption."""

from __future__ import annotations

from collections.abc import Iterator

from kss_sim.kube.objects import Obj
from tools.golden import dra_objects as k
from tools.golden.dra_cluster import (
    GPU,
    GPU_CLASS,
    NIC,
    NIC_CLASS,
    Scenario,
    attr,
    gpu_class,
    gpu_device,
    nic_class,
    nic_device,
)
from tools.golden.dra_topics_requests import Topic


def _gpu_cluster(s: Scenario, nodes: int, per_node: int, model: str = "a100", cpu: str = "8") -> None:
    for n in range(nodes):
        s.node(f"node-{n:02d}", cpu=cpu)
        s.local_slice(f"node-{n:02d}", [gpu_device(j, model) for j in range(per_node)])
    s.device_classes.append(gpu_class())


def _hold(s: Scenario, claim_name: str, node_name: str, devices: list[str], *owners: Obj, pool: str = "") -> Obj:
    """An allocated claim on node-local GPUs of `node_name`, reserved for `owners`."""
    c = s.claim(claim_name, k.exactly("gpu", GPU_CLASS, count=len(devices)))
    results = [("gpu", GPU, pool or node_name, d) for d in devices]
    return k.allocate(c, results, node_name=node_name, reserved_for=list(owners))


def shared() -> Iterator[Scenario]:
    variants = [
        "one claim shared by every pending pod: the first allocates, the rest join reservedFor on that node",
        "a shared claim whose node runs out of cpu: later pods fail (claim not available elsewhere, "
        "Insufficient cpu there)",
        "a shared claim already allocated and reserved by a bound pod; pending pods join it",
        "two shared claims, pods alternate between them",
        "a shared claim on an allNodes (network-attached) device: its pods may go anywhere",
        "a shared claim referenced from another namespace: not found there",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-shared-{i:03d}", what)
        nodes = s.rng.randint(2, 5)
        if i == 4:
            for n in range(nodes):
                s.node(f"node-{n:02d}")
            s.slices.append(
                k.resource_slice("fabric-gpu", GPU, "fabric", [gpu_device(j, "h100") for j in range(2)], all_nodes=True)
            )
            s.device_classes.append(gpu_class())
        else:
            _gpu_cluster(s, nodes, s.rng.randint(1, 2), cpu="2" if i == 1 else "8")
        names = ["shared-a", "shared-b"] if i == 3 else ["shared-a"]
        for name in names:
            if i == 2:
                owner = k.pod("owner-00", node_name="node-01", claims=[("c0", name)])
                s.pods.append(owner)
                _hold(s, name, "node-01", ["gpu-0"], owner)
            else:
                s.claim(name, k.exactly("gpu", GPU_CLASS))
        for p in range(s.rng.randint(3, 6)):
            ns = "other" if i == 5 and p % 2 == 1 else "default"
            s.pending_pod(f"p{p:02d}", names[p % len(names)], cpu="750m", namespace=ns)
        yield s


def allocated() -> Iterator[Scenario]:
    variants = [
        "a claim allocated on one node with nobody reserving it: the pod is restricted to that node",
        "a claim allocated and reserved by a bound pod: a second pod joins it on that node",
        "a claim allocated on a node the pod does not tolerate, reserved by nobody: every node fails and "
        "DynamicResources' PostFilter deallocates it; the next pod with that claim allocates anew",
        "a claim allocated from a rack-wide pool: the allocation's nodeSelector (rack label) restricts the pod",
        "bound pods' allocated claims hold devices: new claims take the remaining ones",
        "a claim allocated and reserved by another pod on a node without cpu left: PostFilter cannot deallocate it",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-allocated-{i:03d}", what)
        nodes = s.rng.randint(3, 6)
        if i == 3:
            for n in range(nodes):
                s.node(f"node-{n:02d}", labels={"example.com/rack": f"rack-{n % 2}"})
            for r in range(2):
                sel = k.node_selector(k.match_labels_term("example.com/rack", f"rack-{r}"))
                s.slices.append(
                    k.resource_slice(
                        f"rack-{r}-gpu", GPU, f"rack-{r}", [gpu_device(j, "h100") for j in range(3)], selector=sel
                    )
                )
            s.device_classes.append(gpu_class())
            c = s.claim("preallocated", k.exactly("gpu", GPU_CLASS))
            k.allocate(c, [("gpu", GPU, "rack-1", "gpu-0")], node_name=None)
            c["status"]["allocation"]["nodeSelector"] = k.node_selector(
                k.match_labels_term("example.com/rack", "rack-1")
            )
        else:
            taints = [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]
            for n in range(nodes):
                s.node(
                    f"node-{n:02d}", cpu="2" if i == 5 and n == 1 else "8", taints=taints if i == 2 and n == 1 else ()
                )
                s.local_slice(f"node-{n:02d}", [gpu_device(j, "l4") for j in range(2)])
            s.device_classes.append(gpu_class())
            owners: list[Obj] = []
            if i in (1, 5):
                owner = k.pod(
                    "owner-00", node_name="node-01", cpu="1500m" if i == 5 else "500m", claims=[("c0", "preallocated")]
                )
                s.pods.append(owner)
                owners.append(owner)
            _hold(s, "preallocated", "node-01", ["gpu-1"], *owners)
            if i == 4:
                for n in range(nodes - 1):
                    holder = s.bound_pod(f"holder-{n:02d}", f"node-{n:02d}", f"held-{n:02d}")
                    _hold(s, f"held-{n:02d}", f"node-{n:02d}", ["gpu-0", "gpu-1"][: 1 + n % 2], holder)
        s.pending_pod("p00", "preallocated", cpu="1")
        for p in range(1, s.rng.randint(2, 5)):
            if i == 2 and p == 1:
                s.pending_pod("p01", "preallocated")
                continue
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s


def templates() -> Iterator[Scenario]:
    variants = [
        "pods from one ResourceClaimTemplate, each with its generated claim and resourceClaimStatuses",
        "a pod whose claim from a template has not been created yet: PreEnqueue waits",
        "a pod whose resourceClaimStatuses names another pod's generated claim: not created for this pod",
        "a pod with a claim from a template and a named claim",
        "a template with firstAvailable: each generated claim prefers h100 over l4",
        "bound pods from a template (their generated claims allocated) and pending ones",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-template-{i:03d}", what)
        nodes = s.rng.randint(2, 5)
        for n in range(nodes):
            s.node(f"node-{n:02d}")
            s.local_slice(f"node-{n:02d}", [gpu_device(j, "h100" if n % 2 else "l4") for j in range(2)])
        s.device_classes.append(gpu_class())
        if i == 4:
            spec = k.claim_spec(
                [
                    k.first_available(
                        "gpu",
                        k.subrequest("h100", GPU_CLASS, f'{attr("model")} == "h100"'),
                        k.subrequest("l4", GPU_CLASS, f'{attr("model")} == "l4"'),
                    )
                ]
            )
        else:
            spec = k.claim_spec([k.exactly("gpu", GPU_CLASS)])
        template = k.resource_claim_template("gpu-template", spec)
        s.templates.append(template)
        if i == 5:
            for b in range(min(2, nodes)):
                owner = k.pod(f"bound-{b:02d}", node_name=f"node-{b:02d}", template_claims=[("gpu", "gpu-template")])
                generated = k.generated_claim(s.rng, owner, "gpu", template)
                owner["status"]["resourceClaimStatuses"] = [
                    {"name": "gpu", "resourceClaimName": generated["metadata"]["name"]}
                ]
                s.pods.append(owner)
                s.claims.append(generated)
                pool = f"node-{b:02d}"
                k.allocate(generated, [("gpu", GPU, pool, "gpu-0")], node_name=pool, reserved_for=[owner])
        generated_names: list[str] = []
        for p in range(s.rng.randint(2 if i in (1, 2) else 1, 6)):
            named = [("shared", "shared-a")] if i == 3 else []
            pod = k.pod(f"p{p:02d}", template_claims=[("gpu", "gpu-template")], claims=named)
            generated = k.generated_claim(s.rng, pod, "gpu", template)
            generated_names.append(generated["metadata"]["name"])
            if not (i == 1 and p == 0):
                s.claims.append(generated)
                status_name = generated_names[0] if i == 2 and p == 1 else generated["metadata"]["name"]
                pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": status_name}]
            s.pending.append(pod)
        if i == 3:
            s.claim("shared-a", k.exactly("gpu", GPU_CLASS))
        yield s


def multi_claims() -> Iterator[Scenario]:
    variants = [
        "a pod with a GPU claim and a NIC claim",
        "a pod with two single-GPU claims: only nodes with two free GPUs",
        "a pod whose second claim names a DeviceClass that does not exist: PreFilter",
        "a pod with an allocated network-attached claim and a new claim: several feasible nodes, and v1.35's "
        "Score indexes allocation results by claim index (number of allocations smaller than claims)",
        "a pod with three claims (two GPUs, one NIC)",
        "a pod whose second claim does not exist",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-multiclaim-{i:03d}", what)
        nodes = s.rng.randint(2, 6)
        for n in range(nodes):
            s.node(f"node-{n:02d}")
            s.local_slice(f"node-{n:02d}", [gpu_device(j, "a100") for j in range(1 + n % 3)])
            if n % 2 == 0 or i != 0:
                s.local_slice(f"node-{n:02d}", [nic_device(j) for j in range(1 + n % 2)], driver=NIC)
        s.device_classes += [gpu_class(), nic_class()]
        if i == 3:
            s.slices.append(k.resource_slice("fabric-nic", NIC, "fabric", [nic_device(9)], all_nodes=True))
            fabric = s.claim("fabric", k.exactly("nic", NIC_CLASS, f"{attr('speedGbps', NIC)} == 100"))
            k.allocate(fabric, [("nic", NIC, "fabric", "nic-9")], node_name=None)
        for p in range(s.rng.randint(1, 4)):
            names = [f"gpu-p{p:02d}"]
            s.claim(f"gpu-p{p:02d}", k.exactly("gpu", GPU_CLASS))
            if i in (0, 4):
                s.claim(f"nic-p{p:02d}", k.exactly("nic", NIC_CLASS))
                names.append(f"nic-p{p:02d}")
            if i in (1, 4):
                s.claim(f"gpu2-p{p:02d}", k.exactly("gpu", GPU_CLASS))
                names.append(f"gpu2-p{p:02d}")
            if i == 2:
                s.claim(f"fpga-p{p:02d}", k.exactly("fpga", "fpga.example.com"))
                names.append(f"fpga-p{p:02d}")
            if i == 3:
                names.insert(0, "fabric")
            if i == 5:
                names.append(f"missing-p{p:02d}")
            s.pending_pod(f"p{p:02d}", *names)
        yield s


def network() -> Iterator[Scenario]:
    variants = [
        "a pool per rack selected by node labels (nodeSelector): pods go to the rack with free devices",
        "an allNodes pool: every node sees the same devices until they are taken",
        "node-local GPUs and a network-attached NIC pool requested together",
        "a slice nodeSelector with matchFields metadata.name",
        "a network pool exhausted after a few pods",
        "slice nodeSelectors with NotIn and Exists operators",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-network-{i:03d}", what)
        nodes = s.rng.randint(3, 7)
        for n in range(nodes):
            labels = {"example.com/rack": f"rack-{n % 3}"} if n != nodes - 1 or i != 5 else {}
            s.node(f"node-{n:02d}", labels=labels)
        s.device_classes += [gpu_class(), nic_class()]
        if i in (0, 4):
            for r in range(3 if i == 0 else 1):
                sel = k.node_selector(k.match_labels_term("example.com/rack", f"rack-{r}"))
                devs = [gpu_device(j, "a100") for j in range(s.rng.randint(1, 3))]
                s.slices.append(k.resource_slice(f"rack-{r}-gpu", GPU, f"rack-{r}", devs, selector=sel))
        elif i == 1:
            s.slices.append(
                k.resource_slice("fabric-gpu", GPU, "fabric", [gpu_device(j, "h100") for j in range(3)], all_nodes=True)
            )
        elif i == 2:
            for n in range(nodes):
                s.local_slice(f"node-{n:02d}", [gpu_device(0, "l4")])
            s.slices.append(
                k.resource_slice("fabric-nic", NIC, "fabric", [nic_device(j) for j in range(2)], all_nodes=True)
            )
        elif i == 3:
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-00", "node-02"]}]}
            s.slices.append(
                k.resource_slice(
                    "pair-gpu", GPU, "pair", [gpu_device(j, "a100") for j in range(3)], selector=k.node_selector(term)
                )
            )
        else:
            not_in = k.node_selector(k.match_labels_term("example.com/rack", "rack-0", operator="NotIn"))
            exists = k.node_selector({"matchExpressions": [{"key": "example.com/rack", "operator": "Exists"}]})
            s.slices.append(k.resource_slice("notin-gpu", GPU, "notin", [gpu_device(0, "t4")], selector=not_in))
            s.slices.append(k.resource_slice("exists-gpu", GPU, "exists", [gpu_device(0, "l4")], selector=exists))
        for p in range(s.rng.randint(2, 6)):
            reqs = [k.exactly("gpu", GPU_CLASS)]
            if i == 2:
                reqs.append(k.exactly("nic", NIC_CLASS))
            if i == 5:
                reqs = [k.exactly("gpu", GPU_CLASS, f'{attr("model")} == "{"t4" if p % 2 else "l4"}"')]
            s.claim(f"claim-p{p:02d}", *reqs)
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s


def pools() -> Iterator[Scenario]:
    variants = [
        "a node-local pool published in three slices (resourceSliceCount 3)",
        "a stale pool generation: generation 1 slices are ignored beside complete generation 2",
        "a newer generation only partly published: the pool is incomplete, the old generation is obsolete",
        "an incomplete pool (resourceSliceCount 2, one slice): its devices are not allocated",
        "two pools on each node with disjoint GPU models, requests selecting by model",
        "a pool whose slices repeat a device name: invalid, no allocation on that node",
        "a network pool split into slices with different node selectors",
        "a stale generation listing more devices than the current one",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-pools-{i:03d}", what)
        nodes = s.rng.randint(2, 5)
        for n in range(nodes):
            name = f"node-{n:02d}"
            s.node(name)
            if i == 0:
                for part in range(3):
                    s.slices.append(
                        k.resource_slice(
                            f"{name}-gpu-{part}", GPU, name, [gpu_device(part, "a100")], node_name=name, slice_count=3
                        )
                    )
            elif i in (1, 2, 7):
                old = [gpu_device(j, "t4") for j in range(4 if i == 7 else 2)]
                s.slices.append(k.resource_slice(f"{name}-gpu-old", GPU, name, old, node_name=name))
                new_count = 2 if i == 2 else 1
                s.slices.append(
                    k.resource_slice(
                        f"{name}-gpu-new",
                        GPU,
                        name,
                        [gpu_device(j, "l4") for j in range(2)],
                        node_name=name,
                        generation=2,
                        slice_count=new_count,
                    )
                )
            elif i == 3:
                s.local_slice(name, [gpu_device(j, "a100") for j in range(2)], slice_count=2 if n % 2 == 0 else 1)
            elif i == 4:
                s.slices.append(
                    k.resource_slice(f"{name}-gpu-a", GPU, f"{name}-a", [gpu_device(0, "a100")], node_name=name)
                )
                s.slices.append(
                    k.resource_slice(
                        f"{name}-gpu-b",
                        GPU,
                        f"{name}-b",
                        [gpu_device(0, "h100"), gpu_device(1, "h100")],
                        node_name=name,
                    )
                )
            elif i == 5:
                dup = n == 0
                s.slices.append(
                    k.resource_slice(f"{name}-gpu-0", GPU, name, [gpu_device(0, "a100")], node_name=name, slice_count=2)
                )
                s.slices.append(
                    k.resource_slice(
                        f"{name}-gpu-1", GPU, name, [gpu_device(0 if dup else 1, "a100")], node_name=name, slice_count=2
                    )
                )
        if i == 6:
            # By hostname label (matchFields may name one node only; dra-network-003 covers that error): each node
            # sees one slice of the pool, so neither devices nor messages depend on the slices' order.
            for half in range(2):
                names = [f"node-{n:02d}" for n in range(nodes) if n % 2 == half]
                term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": names}]}
                devices = [gpu_device(half * 2 + j, "a100") for j in range(2)]
                s.slices.append(
                    k.resource_slice(
                        f"shared-gpu-{half}", GPU, "shared", devices, selector=k.node_selector(term), slice_count=2
                    )
                )
        s.device_classes.append(gpu_class())
        for p in range(s.rng.randint(2, 6)):
            selector = [f'{attr("model")} == "{"h100" if p % 2 else "a100"}"'] if i == 4 else []
            if i in (0, 5):
                # A pool in several slices: the allocator walks them in the lister's (map) order, so each pod
                # asks for one device index and the device it gets does not depend on that order.
                selector = [f"{attr('index')} == {p % (3 if i == 0 else 2)}"]
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS, *selector))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s


def unsatisfiable() -> Iterator[Scenario]:
    variants = [
        "a selector no device matches on any node",
        "more devices asked for than any node has",
        "a request naming a DeviceClass that does not exist",
        "a pod naming a ResourceClaim that does not exist",
        "a claim being deleted (deletionTimestamp, finalizer)",
        "no ResourceSlices at all",
        "every device held by bound pods' claims",
        "a DeviceClass selecting another driver than the one published",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-unsatisfiable-{i:03d}", f"unsatisfiable: {what}; a satisfiable pod after it")
        nodes = s.rng.randint(2, 4)
        for n in range(nodes):
            s.node(f"node-{n:02d}")
            if i != 5:
                s.local_slice(f"node-{n:02d}", [gpu_device(j, "l4") for j in range(2)])
        s.device_classes.append(gpu_class())
        if i == 7:
            s.device_classes.append(k.device_class("nic-only", f'device.driver == "{NIC}"'))
        if i == 6:
            for n in range(nodes):
                holder = s.bound_pod(f"holder-{n:02d}", f"node-{n:02d}", f"held-{n:02d}")
                _hold(s, f"held-{n:02d}", f"node-{n:02d}", ["gpu-0", "gpu-1"], holder)
        bad = {
            0: [k.exactly("gpu", GPU_CLASS, f'{attr("model")} == "b200"')],
            1: [k.exactly("gpu", GPU_CLASS, count=3)],
            2: [k.exactly("gpu", "tpu.example.com")],
            7: [k.exactly("gpu", "nic-only")],
        }.get(i, [k.exactly("gpu", GPU_CLASS)])
        for p in range(s.rng.randint(1, 3)):
            if i != 3:
                c = s.claim(f"bad-p{p:02d}", *bad)
                if i == 4:
                    c["metadata"]["deletionTimestamp"] = "2025-01-12T13:40:00Z"
                    c["metadata"]["deletionGracePeriodSeconds"] = 0
                    c["metadata"]["finalizers"] = ["example.com/keep"]
            s.pending_pod(f"bad-p{p:02d}", f"bad-p{p:02d}")
        s.pending_pod("plain", cpu="100m")
        yield s


def with_other_plugins() -> Iterator[Scenario]:
    variants = [
        "GPU nodes short of cpu (NodeResourcesFit) beside cpu-rich nodes without GPUs",
        "GPU nodes tainted NoSchedule: pods with and without the toleration",
        "required node affinity to a zone whose nodes have no GPUs left",
        "a pod nodeSelector choosing among GPU nodes",
        "pods without claims among pods with claims (DynamicResources skips them)",
        "scores from NodeResourcesFit and BalancedAllocation decide among GPU nodes",
        "PreferNoSchedule taints on some GPU nodes",
        "memory requests exhaust GPU nodes before their devices",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-mixed-{i:03d}", what)
        nodes = s.rng.randint(3, 8)
        for n in range(nodes):
            has_gpu = n % 2 == 0 or i in (3, 5)
            taints = []
            if i == 1 and has_gpu:
                taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
            if i == 6 and n % 4 == 0:
                taints = [{"key": "busy", "value": "true", "effect": "PreferNoSchedule"}]
            s.node(
                f"node-{n:02d}",
                cpu=("2" if has_gpu and i == 0 else str(s.rng.choice([4, 8, 16]))),
                memory="4Gi" if i == 7 else "32Gi",
                zone=f"zone-{'ab'[n % 2]}",
                labels={"example.com/tier": "gold" if n % 3 == 0 else "silver"},
                taints=taints,
            )
            if has_gpu:
                s.local_slice(f"node-{n:02d}", [gpu_device(j, "a100") for j in range(s.rng.randint(1, 3))])
        s.device_classes.append(gpu_class())
        for p in range(s.rng.randint(2, 10)):
            args: dict[str, object] = {"cpu": s.rng.choice(["500m", "1", "1500m"])}
            if i == 1 and p % 2 == 0:
                args["tolerations"] = [
                    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
                ]
            if i == 2:
                args["affinity"] = {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": k.node_selector(
                            k.match_labels_term("topology.kubernetes.io/zone", "zone-b")
                        )
                    }
                }
            if i == 3:
                args["node_selector"] = {"example.com/tier": "gold"}
            if i == 7:
                args["memory"] = "1536Mi"
            if i == 4 and p % 2 == 1:
                s.pending_pod(f"p{p:02d}", **args)
                continue
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}", **args)
        yield s


def preemption() -> Iterator[Scenario]:
    variants = [
        "a high-priority pod needs cpu a low-priority GPU pod holds: the victim's claim is deallocated "
        "(R5-DRA) and a later pod gets its GPU",
        "a high-priority pod needs the only GPU, held by a low-priority pod: DynamicResources is "
        "UnschedulableAndUnresolvable, preemption does not help",
        "the victim shares its claim with another bound pod: reservedFor shrinks, the claim stays allocated",
        "two nodes of low-priority GPU pods: preemption picks one node, its victims' claims are freed",
        "the victim holds a network-attached (allNodes) device; once freed the next pod takes it",
        "the preemptor's claim is already allocated on a node full of low-priority pods",
    ]
    for i, what in enumerate(variants):
        s = Scenario(f"dra-preemption-{i:03d}", what)
        s.priorities()
        nodes = s.rng.randint(2, 4)
        gpus = 1 if i == 1 else 2
        for n in range(nodes):
            s.node(f"node-{n:02d}", cpu="4")
            if n < 2 and i != 4:
                s.local_slice(f"node-{n:02d}", [gpu_device(j, "a100") for j in range(gpus)])
        s.device_classes.append(gpu_class())
        if i == 4:
            devices = [gpu_device(j, "h100") for j in range(2)]
            s.slices.append(k.resource_slice("fabric-gpu", GPU, "fabric", devices, all_nodes=True))
        low = {"priority": 100, "priority_class_name": "low"}
        high = {"priority": 10000, "priority_class_name": "high"}
        victims_nodes = [0, 1] if i == 3 else [0]
        for n in victims_nodes:
            v = s.bound_pod(f"low-{n:02d}", f"node-{n:02d}", f"low-{n:02d}", cpu="3", **low)
            if i == 4:
                c = s.claim(f"low-{n:02d}", k.exactly("gpu", GPU_CLASS))
                k.allocate(c, [("gpu", GPU, "fabric", "gpu-0")], node_name=None, reserved_for=[v])
                continue
            owners = [v]
            if i == 2:
                mate = s.bound_pod(
                    "mate-00", "node-00", "low-00", cpu="100m", priority=10000, priority_class_name="high"
                )
                owners.append(mate)
            _hold(s, f"low-{n:02d}", f"node-{n:02d}", ["gpu-0"], *owners)
        for n in range(nodes):
            if n not in victims_nodes:
                s.bound_pod(f"busy-{n:02d}", f"node-{n:02d}", cpu="3500m", **high)
        if i == 5:
            c = s.claim("mine", k.exactly("gpu", GPU_CLASS))
            k.allocate(c, [("gpu", GPU, "node-00", "gpu-1")], node_name="node-00")
            s.pending_pod("high-00", "mine", cpu="2", **high)
        else:
            s.claim("high-00", k.exactly("gpu", GPU_CLASS))
            s.pending_pod("high-00", "high-00", cpu="2", **high)
        s.claim("after-00", k.exactly("gpu", GPU_CLASS))
        s.pending_pod("after-00", "after-00", cpu="500m")
        yield s


TOPICS: list[Topic] = [
    shared,
    allocated,
    templates,
    multi_claims,
    network,
    pools,
    unsatisfiable,
    with_other_plugins,
    preemption,
]
