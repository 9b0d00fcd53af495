"""A node's page: its allocation, labels, taints and conditions, and the pods bound to it."""

from __future__ import annotations

from collections.abc import Callable

from app.cluster.errors import ApiError
from app.web.pod_index import PodRow
from app.web.ports import Store
from app.web.views.cluster import Allocations, NodeRow


def node_view(
    store: Store, read_allocations: Callable[[], Allocations], name: str
) -> tuple[NodeRow, list[PodRow]] | None:
    """A node with its allocation and the pods bound to it; None when there is no such node."""
    try:
        entry = store.read("Node", None, name)
    except ApiError:
        return None
    allocations = read_allocations()
    row = allocations.node_row(entry)
    pods = sorted(allocations.pods.by_node.get(name, []), key=lambda r: (r.namespace, r.name))
    return row, pods
