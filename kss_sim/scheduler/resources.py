"""Pod and node resource arithmetic (``resourcehelper.PodRequests`` and ``framework.Resource``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from kss_sim.kube.labels import label_key_errors
from kss_sim.kube.quantity import INT64_MAX, INT64_MIN, parse_quantity, scaled_value, wrap_int64

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


def is_prefixed_native_resource(name: str) -> bool:
    """``v1helper.IsPrefixedNativeResource``: the name contains ``kubernetes.io/``."""
    return "kubernetes.io/" in name


def is_native_resource(name: str) -> bool:
    """``v1helper.IsNativeResource``: names without a domain, or in a ``kubernetes.io/`` domain."""
    return "/" not in name or is_prefixed_native_resource(name)


def is_hugepage_resource(name: str) -> bool:
    """``v1helper.IsHugePageResourceName``."""
    return name.startswith("hugepages-")


def is_attachable_volume_resource(name: str) -> bool:
    """``v1helper.IsAttachableVolumeResourceName``."""
    return name.startswith("attachable-volumes-")


_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_KEY_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def qualified_name_errors(value: str) -> list[str]:
    """``validation.IsQualifiedName`` (a label key): empty when valid, else apimachinery's messages."""
    return label_key_errors(value)


@lru_cache(maxsize=1024)
def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: not native, not ``requests.``-prefixed, and a valid quota name."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


@lru_cache(maxsize=1024)
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


def _max_of(first: Mapping[str, Fraction] | None, *others: Mapping[str, Fraction] | None) -> ResourceList:
    result: ResourceList = dict(first or {})
    for other in others:
        _max(result, other or {})
    return result


def _resize_infeasible(pod: Mapping[str, Any]) -> bool:
    """``IsPodResizeInfeasible``: the PodResizePending condition says Infeasible."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodResizePending":
            return bool(cond.get("reason") == "Infeasible")
    return False


def _effective_requests(pod: Mapping[str, Any], spec: ResourceList, status: Mapping[str, Any]) -> ResourceList:
    """``determineEffectiveRequests``: an in-place resize counts its largest of desired, actuated and allocated."""
    actuated = _to_resource_list((status.get("resources") or {}).get("requests"))
    allocated = _to_resource_list(status.get("allocatedResources"))
    if _resize_infeasible(pod):
        return _max_of(actuated, allocated)
    return _max_of(spec, actuated, allocated)


def _apply_non_missing(reqs: ResourceList, non_missing: Mapping[str, Fraction]) -> ResourceList:
    out = dict(reqs)
    for k, v in non_missing.items():
        if k not in reqs:
            out[k] = v
    return out


def is_supported_pod_level_resource(name: str) -> bool:
    """cpu, memory and hugepages can be requested at pod level (PodLevelResources)."""
    return name in (CPU, MEMORY) or is_hugepage_resource(name)


def is_pod_level_requests_set(pod: Mapping[str, Any]) -> bool:
    """``IsPodLevelRequestsSet``: the pod-level requests name a supported resource."""
    requests = ((pod.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return any(is_supported_pod_level_resource(k) for k in requests)


def pod_requests(
    pod: Mapping[str, Any],
    *,
    non_missing: bool | Mapping[str, Fraction] = False,
    use_status: bool = False,
    skip_pod_level: bool = False,
) -> ResourceList:
    """``resourcehelper.PodRequests``: containers summed, init containers maxed (sidecars stacked), pod-level
    cpu/memory/hugepages requests replacing the containers' (PodLevelResources on), plus overhead.

    ``non_missing``: a container lacking a cpu or memory request counts 100m / 200Mi (``True``), or the given
    defaults; an explicit zero stays zero. ``use_status``: in-place resizes count (InPlacePodVerticalScaling),
    as the scheduler cache does for bound pods. ``skip_pod_level``: ignore pod-level requests.
    """
    defaults: Mapping[str, Fraction] = (
        _NON_MISSING if non_missing is True else ({} if non_missing is False else non_missing)
    )
    spec = pod.get("spec") or {}
    statuses: dict[str, Mapping[str, Any]] = {}
    if use_status:
        status = pod.get("status") or {}
        for cs in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
            statuses[cs.get("name") or ""] = cs

    def container_requests(container: Mapping[str, Any], resizable: bool) -> ResourceList:
        creqs = _to_resource_list((container.get("resources") or {}).get("requests"))
        if resizable:
            cs = statuses.get(container.get("name") or "")
            if cs is not None and cs.get("resources") is not None:
                creqs = _effective_requests(pod, creqs, cs)
        if defaults:
            creqs = _apply_non_missing(creqs, defaults)
        return creqs

    reqs: ResourceList = {}
    for container in spec.get("containers") or []:
        _add(reqs, container_requests(container, use_status))
    restartable: ResourceList = {}
    init_max: ResourceList = {}
    for container in spec.get("initContainers") or []:
        sidecar = container.get("restartPolicy") == "Always"
        creqs = container_requests(container, use_status and sidecar)
        if sidecar:
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
    if not skip_pod_level and is_pod_level_requests_set(pod):
        for k, v in _to_resource_list(spec["resources"]["requests"]).items():
            if is_supported_pod_level_resource(k):
                reqs[k] = v
    overhead = spec.get("overhead")
    if overhead:
        _add(reqs, _to_resource_list(overhead))
    return reqs


def non_missing_requests(requests: Mapping[str, Fraction], pod_level_set: bool) -> dict[str, Fraction]:
    """``getNonMissingContainerRequests``: the defaults for missing cpu/memory container requests.

    With pod-level requests set, a default applies only to a resource requested neither by the pod nor
    by any container.
    """
    if not pod_level_set:
        return dict(_NON_MISSING)
    return {k: v for k, v in _NON_MISSING.items() if k not in requests}


def calculate_pod_resource(pod: Mapping[str, Any], *, pod_level_resources: bool = True) -> tuple[Resource, int, int]:
    """``PodInfo.CalculateResource``: what a bound pod adds to NodeInfo.Requested, and its non-zero cpu/memory.

    ``pod_level_resources``: the PodLevelResources gate (off: pod-level requests are ignored, as in v1.33).
    """
    skip = not pod_level_resources
    requests = pod_requests(pod, use_status=True, skip_pod_level=skip)
    defaults = non_missing_requests(requests, pod_level_resources and is_pod_level_requests_set(pod))
    non0 = pod_requests(pod, use_status=True, non_missing=defaults, skip_pod_level=skip) if defaults else requests
    return (
        Resource.from_list(requests),
        milli_of(non0.get(CPU, Fraction(0))),
        units_of(non0.get(MEMORY, Fraction(0))),
    )


def milli_of(q: Fraction) -> int:
    """``Quantity.MilliValue()``: an int64 however large ``q`` is (see ``kss_sim.kube.quantity.scaled_value``)."""
    return scaled_value(q, -3)


def units_of(q: Fraction) -> int:
    """``Quantity.Value()``: an int64 however large ``q`` is."""
    return scaled_value(q, 0)


def _add64(a: int, b: int) -> int:
    """``a + b`` in Go's int64: a node's sums wrap as kube-scheduler's do, and stay in NumPy's int64 columns."""
    total = a + b
    return total if INT64_MIN <= total <= INT64_MAX else wrap_int64(total)


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
                self.milli_cpu = _add64(self.milli_cpu, milli_of(q))
            elif name == MEMORY:
                self.memory = _add64(self.memory, units_of(q))
            elif name == PODS:
                self.allowed_pod_number = _add64(self.allowed_pod_number, units_of(q))
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage = _add64(self.ephemeral_storage, units_of(q))
            elif is_scalar_resource_name(name):
                self.scalar_resources[name] = _add64(self.scalar_resources.get(name, 0), units_of(q))

    def add(self, other: Resource) -> None:
        self.milli_cpu = _add64(self.milli_cpu, other.milli_cpu)
        self.memory = _add64(self.memory, other.memory)
        self.ephemeral_storage = _add64(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = _add64(self.allowed_pod_number, other.allowed_pod_number)
        for k, v in other.scalar_resources.items():
            self.scalar_resources[k] = _add64(self.scalar_resources.get(k, 0), v)

    def sub(self, other: Resource) -> None:
        self.milli_cpu = _add64(self.milli_cpu, -other.milli_cpu)
        self.memory = _add64(self.memory, -other.memory)
        self.ephemeral_storage = _add64(self.ephemeral_storage, -other.ephemeral_storage)
        self.allowed_pod_number = _add64(self.allowed_pod_number, -other.allowed_pod_number)
        for k, v in other.scalar_resources.items():
            self.scalar_resources[k] = _add64(self.scalar_resources.get(k, 0), -v)

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
