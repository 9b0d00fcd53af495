"""A node's page: its allocation, labels, taints and conditions, and the pods bound to it."""

from __future__ import annotations

from kss_sim.cluster.errors import ApiError
from kss_sim.web.page_sources import WebService
from kss_sim.web.pod_index import PodRow
from kss_sim.web.views.cluster import NodeRow, node_row


def node_view(web: WebService, name: str) -> tuple[NodeRow, list[PodRow]] | None:
    """A node with its allocation and the pods bound to it; None when there is no such node."""
    try:
        entry = web.store.read("Node", None, name)
    except ApiError:
        return None
    allocations = web.allocations()
    row = node_row(allocations, entry)
    pods = sorted(allocations.pods.by_node.get(name, []), key=lambda r: (r.namespace, r.name))
    return row, pods
