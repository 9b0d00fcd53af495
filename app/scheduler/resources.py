"""Pod and node resource arithmetic (``resourcehelper.PodRequests`` and ``framework.Resource``)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from app.kube.quantity import parse_quantity

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what scoring assumes for a missing request.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
_NON_MISSING: dict[str, Fraction] = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}

ResourceList = dict[str, Fraction]


def is_native_resource(name: str) -> bool:
    """Names without a domain, or in the ``kubernetes.io/`` domain."""
    return "/" not in name or name.startswith("kubernetes.io/")


def is_hugepage_resource(name: str) -> bool:
    return name.startswith("hugepages-")


def is_attachable_volume_resource(name: str) -> bool:
    return name.startswith("attachable-volumes-")


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: domain-qualified, not kubernetes.io, not ``requests.``-prefixed."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return True


def is_prefixed_native_resource(name: str) -> bool:
    return "kubernetes.io/" in name


def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, prefixed native or attachable volumes."""
    return (
        is_extended_resource_name(name)
        or is_hugepage_resource(name)
        or is_prefixed_native_resource(name)
        or is_attachable_volume_resource(name)
    )


def _to_resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    return {k: parse_quantity(v) for k, v in (raw or {}).items()}


def _add(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, Fraction(0)) + v


def _max(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def _container_requests(container: Mapping[str, Any], non_missing: bool) -> ResourceList:
    reqs = _to_resource_list((container.get("resources") or {}).get("requests"))
    if non_missing:
        for k, v in _NON_MISSING.items():
            if k not in reqs:
                reqs[k] = v
    return reqs


def pod_requests(pod: Mapping[str, Any], *, non_missing: bool = False) -> ResourceList:
    """``resourcehelper.PodRequests``: containers summed, init containers maxed (sidecars stacked), plus overhead.

    With ``non_missing`` every container lacking a cpu or memory request counts 100m / 200Mi, as scoring does.
    """
    spec = pod.get("spec") or {}
    pod_level = _to_resource_list((spec.get("resources") or {}).get("requests"))
    reqs: ResourceList = {}
    for container in spec.get("containers") or []:
        _add(reqs, _container_requests(container, non_missing))
    restartable: ResourceList = {}
    init_max: ResourceList = {}
    for container in spec.get("initContainers") or []:
        creqs = _container_requests(container, non_missing)
        if container.get("restartPolicy") == "Always":
            _add(reqs, creqs)
            _add(restartable, creqs)
            creqs = dict(restartable)
        else:
            tmp: ResourceList = {}
            _add(tmp, creqs)
            _add(tmp, restartable)
            creqs = tmp
        _max(init_max, creqs)
    _max(reqs, init_max)
    if pod_level:
        # PodLevelResources (beta, on by default): pod-level cpu/memory requests replace the containers' sum.
        for k in (CPU, MEMORY):
            if k in pod_level:
                reqs[k] = pod_level[k]
    overhead = spec.get("overhead")
    if overhead:
        _add(reqs, _to_resource_list(overhead))
    return reqs


def _ceil(v: Fraction) -> int:
    return -((-v.numerator) // v.denominator)


class Resource:
    """``framework.Resource``: integer milli-CPU, bytes, pod count and scalar resources."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar_resources")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar_resources: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar_resources: dict[str, int] = scalar_resources if scalar_resources is not None else {}

    @classmethod
    def from_list(cls, rl: Mapping[str, Fraction]) -> Resource:
        r = cls()
        r.add_list(rl)
        return r

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any] | None) -> Resource:
        return cls.from_list(_to_resource_list(raw))

    def add_list(self, rl: Mapping[str, Fraction]) -> None:
        for name, q in rl.items():
            if name == CPU:
                self.milli_cpu += _ceil(q * 1000)
            elif name == MEMORY:
                self.memory += _ceil(q)
            elif name == PODS:
                self.allowed_pod_number += _ceil(q)
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += _ceil(q)
            elif is_scalar_resource_name(name):
                self.scalar_resources[name] = self.scalar_resources.get(name, 0) + _ceil(q)

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar_resources.items():
            self.scalar_resources[k] = self.scalar_resources.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar_resources.items():
            self.scalar_resources[k] = self.scalar_resources.get(k, 0) - v

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar_resources)
        )

    def get(self, name: str) -> int:
        """The amount of one named resource."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar_resources.get(name, 0)

    def __repr__(self) -> str:
        return (
            f"Resource(cpu={self.milli_cpu}m, memory={self.memory}, eph={self.ephemeral_storage}, "
            f"pods={self.allowed_pod_number}, scalar={self.scalar_resources})"
        )
