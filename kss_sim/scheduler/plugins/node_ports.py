"""NodePorts: a pod's host ports must be free on the node (``nodeports``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.framework import (
    QUEUE,
    QUEUE_SKIP,
    SKIP,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
    error,
    success,
    unschedulable,
)
from kss_sim.scheduler.nodeinfo import HostPortInfo, NodeInfo, PodInfo, pod_info_host_ports
from kss_sim.scheduler.plugins.helper import assigned_or_nominated

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

HostPort = tuple[str, str, int]


def host_ports(pod: PodInfo) -> tuple[HostPort, ...]:
    """The pod's (hostIP, protocol, hostPort) wishes, computed once per pod."""
    return pod_info_host_ports(pod)


def fits_ports(want: Sequence[HostPort], in_use: HostPortInfo) -> bool:
    """``fitsPorts``: none of the wanted ports conflicts with the ones in use."""
    return not any(in_use.check_conflict(ip, protocol, port) for ip, protocol, port in want)


def fits(pod: PodInfo, node_info: NodeInfo) -> bool:
    """``nodeports.Fits`` (used by preemption's what-if checks)."""
    return fits_ports(host_ports(pod), node_info.used_ports)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    ports: tuple[HostPort, ...]

    def clone(self) -> _PreFilterState:
        return self


class NodePorts(PreFilterPlugin, FilterPlugin):
    """Rejects nodes where a wanted host port (per IP and protocol, 0.0.0.0 meaning all IPs) is taken."""

    name: ClassVar[str] = NAME

    def events_to_register(self) -> list[str | ClusterEventWithHint]:
        """A pod deleted that held a port the pod wants; a node added (with queueing hints no update)."""
        return [ClusterEventWithHint(ev.POD_DELETE, self.is_schedulable_after_pod_deleted), ev.NODE_ADD]

    def is_schedulable_after_pod_deleted(self, pod: PodInfo, old: PodInfo | None, new: object) -> QueueingHint:
        """The deleted pod was bound or nominated and held a host port conflicting with one the pod wants."""
        if old is None or not assigned_or_nominated(old):
            return QUEUE_SKIP
        ports = host_ports(old)
        if not ports:
            return QUEUE_SKIP
        in_use = HostPortInfo()
        for ip, protocol, port in ports:
            in_use.add(ip, protocol, port)
        return QUEUE_SKIP if fits_ports(host_ports(pod), in_use) else QUEUE

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        ports = host_ports(pod)
        if not ports:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(ports))
        return None, success()

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if fits_ports(s.ports, node_info.used_ports):
            return success()
        return unschedulable(ERR_REASON)
