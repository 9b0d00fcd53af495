"""A node's page: its allocation, labels, taints and conditions, and the pods bound to it; its Ready condition set
by hand (fail and heal)."""

from __future__ import annotations

from kss_sim.cluster.errors import ApiError
from kss_sim.kube.node_ready import NODE_REPORTS, ready_status_patch
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


def report_ready(web: WebService, name: str, report: str) -> str:
    """Set the node's Ready condition as its kubelet would report ``report`` (``kss node fail|heal``: fail,
    unreachable or heal); returns what went wrong, or "" when it was written."""
    if report not in NODE_REPORTS:
        return f'Unsupported value: "{report}": supported values: {", ".join(NODE_REPORTS)}'
    try:
        web.store.patch("Node", None, name, ready_status_patch(report), "strategic", subresource="status")
    except ApiError as exc:
        return exc.message
    return ""
