"""A scenario of the `dra` golden family under construction, and the device inventory the topics share.

The inventory is a fictitious GPU driver (gpu.example.com) and NIC driver (nic.example.com) whose devices carry
attributes of every CEL type a selector can test: strings (model), ints (index, cores), bools (mig), versions
(driverVersion) and a standard attribute (resource.kubernetes.io/pcieRoot) shared by GPUs and NICs so that
constraints.matchAttribute can pair them.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

from kss_sim.kube.objects import Obj
from tools.golden import dra_objects as k

GPU = "gpu.example.com"
NIC = "nic.example.com"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
GPU_CLASS = "gpu.example.com"
NIC_CLASS = "nic.example.com"

# model -> (memory, cores, driver version)
GPU_MODELS: dict[str, tuple[str, int, str]] = {
    "a100": ("40Gi", 6912, "12.2.0"),
    "h100": ("80Gi", 16896, "12.4.1"),
    "l4": ("24Gi", 7424, "12.2.0"),
    "t4": ("16Gi", 2560, "11.8.0"),
}


def seeded(name: str) -> random.Random:
    return random.Random(zlib.crc32(name.encode()))


def gpu_device(
    index: int,
    model: str,
    *,
    mig: bool = False,
    prefix: str = "gpu",
    qualified: bool = False,
    extra: dict[str, Any] | None = None,
    **device_args: Any,
) -> Obj:
    """A GPU; attribute names are the driver-domain shorthand ("model") unless `qualified`."""
    memory, cores, version = GPU_MODELS[model]
    domain = f"{GPU}/" if qualified else ""
    attributes: dict[str, Any] = {
        f"{domain}model": model,
        f"{domain}index": index,
        f"{domain}cores": cores,
        f"{domain}mig": mig,
        f"{domain}driverVersion": k.attribute(version, "version"),
        PCIE_ROOT: f"pci0000:{index // 2:02x}",
        **(extra or {}),
    }
    return k.device(f"{prefix}-{index}", attributes, {f"{domain}memory": memory}, **device_args)


def nic_device(index: int, *, speed: int = 100, **device_args: Any) -> Obj:
    return k.device(
        f"nic-{index}",
        {"speedGbps": speed, "rdma": index % 2 == 0, PCIE_ROOT: f"pci0000:{index:02x}"},
        {"bandwidth": f"{speed}G"},
        **device_args,
    )


def gpu_class(name: str = GPU_CLASS, *selectors: str, **args: Any) -> Obj:
    return k.device_class(name, f'device.driver == "{GPU}"', *selectors, **args)


def nic_class(name: str = NIC_CLASS) -> Obj:
    return k.device_class(name, f'device.driver == "{NIC}"')


def attr(name: str, domain: str = GPU) -> str:
    return f'device.attributes["{domain}"].{name}'


def cap(name: str, domain: str = GPU) -> str:
    return f'device.capacity["{domain}"].{name}'


class Scenario:
    """Objects of one scenario, written out in FORMAT.md's key order."""

    def __init__(self, name: str, description: str, feature_gates: dict[str, bool] | None = None) -> None:
        self.name = name
        self.description = description
        self.feature_gates = feature_gates
        self.rng = seeded(name)
        self.nodes: list[Obj] = []
        self.pods: list[Obj] = []
        self.pending: list[Obj] = []
        self.namespaces: dict[str, Obj] = {}
        self.priority_classes: list[Obj] = []
        self.device_classes: list[Obj] = []
        self.slices: list[Obj] = []
        self.claims: list[Obj] = []
        self.templates: list[Obj] = []

    # -- shorthands the topics use ---------------------------------------------------------------------------

    def node(self, name: str, **args: Any) -> Obj:
        n = k.node(name, **args)
        self.nodes.append(n)
        return n

    def gpu_nodes(self, models: list[str], *, per_node: int = 2, cpu: str = "8", **node_args: Any) -> None:
        """One node per entry of `models`, each with a node-local pool of `per_node` GPUs of that model."""
        for i, model in enumerate(models):
            name = f"node-{i:02d}"
            self.node(name, cpu=cpu, **node_args)
            if model:
                self.local_slice(name, [gpu_device(j, model) for j in range(per_node)])

    def local_slice(self, node_name: str, devices: list[Obj], *, driver: str = GPU, **args: Any) -> Obj:
        suffix = driver.split(".")[0]
        s = k.resource_slice(f"{node_name}-{suffix}", driver, node_name, devices, node_name=node_name, **args)
        self.slices.append(s)
        return s

    def claim(self, name: str, *requests: Obj, namespace: str = "default", **spec_args: Any) -> Obj:
        c = k.resource_claim(name, k.claim_spec(requests, **spec_args), namespace=namespace)
        self.claims.append(c)
        return c

    def pending_pod(self, name: str, *claim_names: str, **args: Any) -> Obj:
        p = k.pod(name, claims=[(f"c{i}", c) for i, c in enumerate(claim_names)], **args)
        self.pending.append(p)
        return p

    def bound_pod(self, name: str, node_name: str, *claim_names: str, **args: Any) -> Obj:
        p = k.pod(name, node_name=node_name, claims=[(f"c{i}", c) for i, c in enumerate(claim_names)], **args)
        self.pods.append(p)
        return p

    def priorities(self) -> None:
        self.priority_classes = [k.priority_class("low", 100), k.priority_class("high", 10000)]

    def namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        self.namespaces[name] = k.namespace(name, labels)

    # -- output ----------------------------------------------------------------------------------------------

    def to_json(self) -> Obj:
        for obj in [*self.pods, *self.pending, *self.claims, *self.templates]:
            ns = obj["metadata"]["namespace"]
            if ns not in self.namespaces:
                self.namespaces[ns] = k.namespace(ns)
        if not self.namespaces:
            self.namespaces["default"] = k.namespace("default")
        out: Obj = {
            "meta": {
                "description": self.description,
                "family": "dra",
                "name": self.name,
                "seed": f"crc32({self.name})",
            }
        }
        if self.feature_gates is not None:
            out["featureGates"] = self.feature_gates
        out["nodes"] = self.nodes
        out["pods"] = self.pods
        out["pending"] = self.pending
        out["namespaces"] = [self.namespaces[n] for n in sorted(self.namespaces)]
        if self.priority_classes:
            out["priorityClasses"] = self.priority_classes
        out["deviceClasses"] = self.device_classes
        out["resourceSlices"] = self.slices
        out["resourceClaims"] = self.claims
        if self.templates:
            out["resourceClaimTemplates"] = self.templates
        return out
