"""NodePorts: a pod's host ports must be free on the node (``nodeports``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from kss_sim.scheduler.framework import (
    SKIP,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    Status,
    error,
    success,
    unschedulable,
)
from kss_sim.scheduler.nodeinfo import HostPortInfo, NodeInfo, PodInfo, pod_info_host_ports

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
