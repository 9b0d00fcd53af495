"""The scheduler's view of pods and nodes: ``PodInfo`` and ``NodeInfo`` (the cycle's ``Snapshot`` is in snapshot.py).

Objects stay plain Kubernetes JSON dicts; these wrappers cache what plugins read on hot paths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from kss_sim.kube.quantity import wrap_int64
from kss_sim.scheduler.columns import NodeColumns
from kss_sim.scheduler.node_shape import NodeDefect, checked_node
from kss_sim.scheduler.resources import Resource, calculate_pod_resource

T = TypeVar("T")

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"

# Derived values shared by pods whose resource-relevant fields are equal (see ``PodInfo.resource_key``).
_SHARED_LIMIT = 8192
_shared: dict[tuple[str, bytes], Any] = {}


def shared_by_resources(pod: PodInfo, kind: str, factory: Callable[[], T]) -> T:
    """A value derived only from the pod's resource fields, computed once for every pod with the same ones.

    The value must never be mutated (it is shared between pods).
    """
    key = pod.resource_key
    if key is None:
        return factory()
    try:
        return _shared[(kind, key)]  # type: ignore[no-any-return]
    except KeyError:
        if len(_shared) >= _SHARED_LIMIT:
            _shared.clear()
        value = factory()
        _shared[(kind, key)] = value
        return value


class PodInfo:
    """A pod plus values derived from it once (``framework.PodInfo``)."""

    __slots__ = (
        "_memo",
        "_non_zero",
        "_requests",
        "_resource_key",
        "key",
        "labels",
        "name",
        "namespace",
        "pod",
        "priority",
        "uid",
    )

    def __init__(self, pod: dict[str, Any]) -> None:
        self.pod = pod
        meta = pod.get("metadata") or {}
        if not isinstance(meta, dict):  # a malformed pod (pod_shape.py): its attempts are errors
            meta = {}
        self.namespace: str = meta.get("namespace") or "default"
        self.name: str = meta.get("name") or ""
        self.uid: str = meta.get("uid") or f"{self.namespace}/{self.name}"
        self.key = f"{self.namespace}/{self.name}"
        self.labels: dict[str, str] = meta.get("labels") or {}
        spec = pod.get("spec") or {}
        prio = spec.get("priority") if isinstance(spec, dict) else None
        self.priority: int = int(prio) if isinstance(prio, int) else 0
        self._requests: Resource | None = None
        self._non_zero: tuple[int, int] | None = None
        self._memo: dict[str, Any] = {}
        self._resource_key: bytes | None = b""

    @property
    def resource_key(self) -> bytes | None:
        """Everything ``pod_requests`` reads (containers' names, restart policies and requests, pod-level
        requests, overhead, container statuses and conditions) serialised; None when it cannot be."""
        if self._resource_key == b"":
            spec = self.pod.get("spec") or {}
            status = self.pod.get("status") or {}

            def containers(key: str) -> list[Any]:
                return [
                    (c.get("name"), c.get("restartPolicy"), (c.get("resources") or {}).get("requests"))
                    for c in spec.get(key) or []
                ]

            parts = (
                containers("containers"),
                containers("initContainers"),
                spec.get("resources"),
                spec.get("overhead"),
                status.get("containerStatuses"),
                status.get("initContainerStatuses"),
                status.get("allocatedResources"),
                status.get("resources"),
                [c for c in status.get("conditions") or [] if c.get("type") == "PodResizePending"],
            )
            try:
                # A copy of exact size: orjson's own bytes object keeps a 4 KB buffer (kept per pod here).
                self._resource_key = bytes(memoryview(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)))
            except TypeError:
                self._resource_key = None
        return self._resource_key

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.pod.setdefault("spec", {})
        return spec

    @property
    def node_name(self) -> str:
        return str(self.spec.get("nodeName") or "")

    @property
    def requests(self) -> Resource:
        """Actual requests as NodeInfo.Requested counts them (``PodInfo.CalculateResource``, resizes included)."""
        if self._requests is None:
            self._calculate()
        assert self._requests is not None
        return self._requests

    @property
    def non_zero_cpu_memory(self) -> tuple[int, int]:
        """(milli-CPU, memory) with 100m / 200Mi for each container lacking a request (``CalculateResource``)."""
        if self._non_zero is None:
            self._calculate()
        assert self._non_zero is not None
        return self._non_zero

    def _calculate(self) -> None:
        requests, cpu0, mem0 = shared_by_resources(self, "calculate", lambda: calculate_pod_resource(self.pod))
        self._requests = requests
        self._non_zero = (cpu0, mem0)

    def without_pod_level_resources(self) -> tuple[Resource, int, int]:
        """``requests`` and ``non_zero_cpu_memory`` with the PodLevelResources gate off (pod-level requests
        ignored): what a node of a scheduler without that gate counts."""
        return self.memo(
            "calculate:no-pod-level",
            lambda: shared_by_resources(
                self,
                "calculate:no-pod-level",
                lambda: calculate_pod_resource(self.pod, pod_level_resources=False),
            ),
        )

    def inherit(self, other: PodInfo) -> None:
        """Reuse what was derived from ``other``, the same pod before ``spec.nodeName`` was set."""
        self._requests = other._requests
        self._non_zero = other._non_zero
        self._resource_key = other._resource_key
        self._memo = dict(other._memo)

    def memo(self, key: str, factory: Callable[[], T]) -> T:
        """Cache a value a plugin derives from the pod (parsed affinity terms, tolerations, ...)."""
        try:
            return self._memo[key]  # type: ignore[no-any-return]
        except KeyError:
            value = factory()
            self._memo[key] = value
            return value

    @property
    def affinity(self) -> dict[str, Any]:
        aff: dict[str, Any] = self.spec.get("affinity") or {}
        return aff

    @property
    def has_pod_affinity_or_anti_affinity(self) -> bool:
        aff = self.affinity
        return bool(aff.get("podAffinity") or aff.get("podAntiAffinity"))

    @property
    def has_required_anti_affinity(self) -> bool:
        anti = self.affinity.get("podAntiAffinity") or {}
        return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


class HostPortInfo:
    """Host ports in use on a node: ip -> {(protocol, port)} (``framework.HostPortInfo``)."""

    __slots__ = ("ports",)

    def __init__(self) -> None:
        self.ports: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
        return (ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP")

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        self.ports.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        entries = self.ports.get(ip)
        if entries is not None:
            entries.discard((protocol, port))
            if not entries:
                del self.ports[ip]

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        """True when (ip, protocol, port) clashes with a port in use; 0.0.0.0 clashes with every IP."""
        if port <= 0:
            return False
        ip, protocol = self._sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in entries for entries in self.ports.values())
        return pp in self.ports.get(ip, ()) or pp in self.ports.get(DEFAULT_BIND_ALL_HOST_IP, ())

    def __len__(self) -> int:
        return sum(len(v) for v in self.ports.values())

    def clone(self) -> HostPortInfo:
        c = HostPortInfo()
        c.ports = {k: set(v) for k, v in self.ports.items()}
        return c


def pod_host_ports(pod: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """Every (hostIP, protocol, hostPort) the pod asks for (``util.GetHostPorts``).

    Only init containers that run for the pod's whole life (sidecars, ``restartPolicy: Always``) count.
    """
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    init = spec.get("initContainers")
    if init:
        containers = [*(c for c in init if c.get("restartPolicy") == "Always"), *containers]
    out: list[tuple[str, str, int]] = []
    for c in containers:
        ports = c.get("ports")
        if not ports:
            continue  # most containers: no ports at all
        for p in ports:
            port = int(p.get("hostPort") or 0)
            if port > 0:
                out.append((p.get("hostIP") or "", p.get("protocol") or "TCP", port))
    return out


def pod_info_host_ports(pi: PodInfo) -> tuple[tuple[str, str, int], ...]:
    """``pod_host_ports`` of a PodInfo, computed once per pod: a node adds and removes a pod's ports each time a
    preemption dry run takes the pod off a node copy and puts it back."""
    return pi.memo(_HOST_PORTS_MEMO, lambda: tuple(pod_host_ports(pi.pod)))


_HOST_PORTS_MEMO = "hostPorts"


@dataclass(slots=True)
class ImageStateSummary:
    """An image's size and on how many nodes it is present (``framework.ImageStateSummary``)."""

    size: int
    num_nodes: int


class NodeInfo:
    """A node plus the pods assigned to it and their aggregate usage (``framework.NodeInfo``)."""

    __slots__ = (
        "_columns",
        "allocatable",
        "column_index",
        "defect",
        "generation",
        "image_states",
        "labels",
        "name",
        "node",
        "non_zero_requested",
        "pod_level_resources",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(self, node: dict[str, Any] | None = None, *, pod_level_resources: bool = True) -> None:
        # A stored node with wrongly typed fields is read without them, and fails Filter (node_shape.py).
        self.node: dict[str, Any]
        self.defect: NodeDefect | None
        self.node, self.defect = checked_node(node or {})
        meta = self.node.get("metadata") or {}
        self.name: str = meta.get("name") or ""
        self.labels: dict[str, str] = meta.get("labels") or {}
        status = self.node.get("status") or {}
        alloc = status.get("allocatable") or status.get("capacity") or {}
        self.allocatable = Resource.from_raw(alloc)
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = 0
        # The PodLevelResources gate of the scheduler this node belongs to: whether pod-level requests count.
        self.pod_level_resources = pod_level_resources
        # The snapshot's columns this NodeInfo reports its pod changes to (None for clones).
        self._columns: NodeColumns | None = None
        self.column_index = -1

    def attach_columns(self, columns: NodeColumns, index: int) -> None:
        """Report pod changes to ``columns`` (row ``index``) from now on."""
        self._columns = columns
        self.column_index = index

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.node.get("spec") or {}
        return spec

    @property
    def taints(self) -> list[dict[str, Any]]:
        taints: list[dict[str, Any]] = self.spec.get("taints") or []
        return taints

    @property
    def unschedulable(self) -> bool:
        return bool(self.spec.get("unschedulable"))

    def counted_requests(self, pi: PodInfo) -> Resource:
        """What ``pi`` adds to ``requested`` here (pod-level requests count with the PodLevelResources gate on)."""
        return pi.requests if self.pod_level_resources else pi.without_pod_level_resources()[0]

    def _update(self, pi: PodInfo, sign: int) -> None:
        if self.pod_level_resources:
            req = pi.requests
            cpu0, mem0 = pi.non_zero_cpu_memory
        else:
            req, cpu0, mem0 = pi.without_pod_level_resources()
        if sign > 0:
            self.requested.add(req)
        else:
            self.requested.sub(req)
        self.non_zero_requested.milli_cpu = wrap_int64(self.non_zero_requested.milli_cpu + sign * cpu0)
        self.non_zero_requested.memory = wrap_int64(self.non_zero_requested.memory + sign * mem0)
        for ip, proto, port in pod_info_host_ports(pi):
            if sign > 0:
                self.used_ports.add(ip, proto, port)
            else:
                self.used_ports.remove(ip, proto, port)
        for vol in pi.spec.get("volumes") or []:
            # Only persistentVolumeClaim volumes count, as in upstream's updatePVCRefCounts.
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                key = f"{pi.namespace}/{claim}"
                n = self.pvc_ref_counts.get(key, 0) + sign
                if n <= 0:
                    self.pvc_ref_counts.pop(key, None)
                else:
                    self.pvc_ref_counts[key] = n
        self.generation += 1
        if self._columns is not None:
            self._columns.mark(self)
            self._columns.log(pi, self, sign)

    def add_pod(self, pi: PodInfo) -> None:
        """Account for a pod placed on this node."""
        self.pods.append(pi)
        if pi.has_pod_affinity_or_anti_affinity:
            self.pods_with_affinity.append(pi)
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pi)
        self._update(pi, +1)

    def remove_pod(self, pi: PodInfo) -> bool:
        """Forget a pod (matched by uid); False when it was not here."""
        # From the end: the pod forgotten is usually one just assumed (its bound version replaces it), and a node
        # may hold tens of thousands (scheduler_perf's DaemonSet node). A uid is on a node once (cache.add_pod
        # replaces the earlier version), so the match is the one a scan from the front would find.
        pods, uid = self.pods, pi.uid
        for i in range(len(pods) - 1, -1, -1):
            if pods[i].uid == uid:
                existing = pods.pop(i)
                break
        else:
            return False
        # Most pods have no affinity: leave the (usually empty) lists as they are then.
        if self.pods_with_affinity:
            self.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid != uid]
        if self.pods_with_required_anti_affinity:
            self.pods_with_required_anti_affinity = [p for p in self.pods_with_required_anti_affinity if p.uid != uid]
        self._update(existing, -1)
        return True

    def clone(self) -> NodeInfo:
        """A copy whose pod lists and aggregates can change without touching this one."""
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.defect = self.defect
        c.name = self.name
        c.labels = self.labels
        c.allocatable = self.allocatable
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = self.used_ports.clone()
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.image_states = self.image_states
        c.pvc_ref_counts = dict(self.pvc_ref_counts)
        c.generation = self.generation
        c.pod_level_resources = self.pod_level_resources
        c._columns = None
        c.column_index = -1
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


class NodeWithout:
    """``node_info`` as it would be with ``removed`` (some of its pods) taken off, without copying it: the pod count
    and ``requested`` a copy would have, for the Filter plugins that answer from them
    (``FilterPlugin.filter_without``), as a preemption dry run takes a node's lower-priority pods off and puts them
    back one by one. The sums wrap as ``NodeInfo``'s do (modulo 2^64), so they equal the copy's in any order."""

    __slots__ = ("node_info", "num_pods", "requested")

    def __init__(self, node_info: NodeInfo, removed: Sequence[PodInfo]) -> None:
        self.node_info = node_info
        # Summed, then wrapped once: the same int64 as a copy's removal pod by pod (both are modulo 2^64).
        used = node_info.requested
        cpu, memory, storage, pods = used.milli_cpu, used.memory, used.ephemeral_storage, used.allowed_pod_number
        scalars = dict(used.scalar_resources)
        counted = node_info.counted_requests
        for pi in removed:
            r = counted(pi)
            cpu -= r.milli_cpu
            memory -= r.memory
            storage -= r.ephemeral_storage
            pods -= r.allowed_pod_number
            for name, value in r.scalar_resources.items():
                scalars[name] = scalars.get(name, 0) - value
        self.requested = Resource(
            wrap_int64(cpu),
            wrap_int64(memory),
            wrap_int64(storage),
            wrap_int64(pods),
            {name: wrap_int64(value) for name, value in scalars.items()},
        )
        self.num_pods = len(node_info.pods) - len(removed)

    def put_back(self, pi: PodInfo) -> None:
        """``pi``, one of the pods taken off, counted again."""
        self.requested.add(self.node_info.counted_requests(pi))
        self.num_pods += 1

    def take_off(self, pi: PodInfo) -> None:
        """``pi``, one of the node's pods counted here, taken off."""
        self.requested.sub(self.node_info.counted_requests(pi))
        self.num_pods -= 1


def normalized_image_name(name: str) -> str:
    """Append ``:latest`` when an image has neither tag nor digest."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name
