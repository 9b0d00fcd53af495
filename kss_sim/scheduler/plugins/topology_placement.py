"""TopologyPlacementGenerator (v1.36, KEP-5732, default with TopologyAwareWorkloadScheduling): a PlacementGenerate
plugin that offers a PodGroup cycle one placement per domain of the group's topology constraint.

A PodGroup with ``spec.schedulingConstraints.topology`` (one entry: a node label key) is placed within one value of
that label: each domain whose nodes carry it is a placement (named by the value), and once some of the group's pods
are scheduled (bound, or assumed: waiting in Permit) only their domain is offered. A group without constraints gets
the parent placement (every node). Upstream lists the domains in map order; kss offers them sorted by value, so runs
repeat.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kss_sim.scheduler.framework import Handle, Placement, PlacementGeneratePlugin, Status, error, success
from kss_sim.scheduler.plugins.gang_scheduling import POD_GROUP_V1ALPHA2

NAME = "TopologyPlacementGenerator"


def scheduled_pods(handle: Handle, namespace: str, pod_group: str) -> list[tuple[dict[str, Any], str]]:
    """``PodGroupState.ScheduledPods``: the group's pods bound or assumed (held in Permit), each with its node."""
    out: list[tuple[dict[str, Any], str]] = []
    for pod in handle.cluster.pods_of_scheduling_group(namespace, pod_group):
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node:
            meta = pod.get("metadata") or {}
            waiting = handle.get_waiting_pod(str(meta.get("uid") or f"{namespace}/{meta.get('name')}"))
            node = waiting.node_name if waiting is not None else ""
        if node:
            out.append((pod, node))
    return out


def topology_key(group: dict[str, Any]) -> str | None:
    """The key of the PodGroup's (only) topology constraint, or None."""
    topology = ((group.get("spec") or {}).get("schedulingConstraints") or {}).get("topology") or []
    return str(topology[0].get("key") or "") if topology else None


class TopologyPlacement(PlacementGeneratePlugin):
    """``topologyaware.TopologyPlacement``."""

    name: ClassVar[str] = NAME

    def events_to_register(self) -> list[str] | None:
        return []  # it never rejects a pod

    def generate_placements(self, namespace: str, pod_group: str, parent: Placement) -> tuple[list[Placement], Status]:
        group = self.handle.cluster.get_object(POD_GROUP_V1ALPHA2, namespace, pod_group)
        if group is None:
            return [], error(f'podgroup.scheduling.k8s.io "{pod_group}" not found')
        key = topology_key(group)
        if key is None:
            return [parent], success()
        required: str | None = None
        scheduled = scheduled_pods(self.handle, namespace, pod_group)
        if scheduled:
            domain, problem = self._domain_of(key, scheduled)
            if problem:
                return [], error(f"cannot determine domain for already scheduled pods: {problem}")
            required = domain
        by_domain: dict[str, list[Any]] = {}
        for node in parent.nodes:
            value = node.labels.get(key)
            if value is not None and (required is None or value == required):
                by_domain.setdefault(value, []).append(node)
        return [Placement(domain, nodes) for domain, nodes in sorted(by_domain.items())], success()

    def _domain_of(self, key: str, scheduled: list[tuple[dict[str, Any], str]]) -> tuple[str, str]:
        """The one domain the scheduled pods are in, or a problem as upstream words it."""
        found = ""
        for pod, node_name in scheduled:
            meta = pod.get("metadata") or {}
            ref = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            node = self.handle.snapshot.get(node_name)
            if node is None:
                return "", f'getting node for pod {ref}: nodeinfo not found for node name "{node_name}"'
            domain = node.labels.get(key)
            if domain is None:
                return "", f"no topology domain found for pod {ref}"
            if found and found != domain:
                return "", f"more than 1 domain found for pod group: {found}, {domain}"
            found = domain
        return found, ""
