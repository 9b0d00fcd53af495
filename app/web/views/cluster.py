"""The cluster page (and a node's page): the summary strip and the nodes with their allocation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.web.formatting import Bar, Page
from app.web.ports import StoredEntry

Obj = dict[str, Any]

NODE_POD_PREVIEW = 6
NODE_SORTS = ("name", "cpu", "memory", "pods")


@dataclass(slots=True)
class NodeRow:
    """A node on the cluster page or its own page."""

    name: str
    labels: dict[str, str]
    taints: list[Obj]
    unschedulable: bool
    ready: bool
    bars: list[Bar]
    pod_count: int
    pod_keys: list[str]
    obj: Obj

    @property
    def more_pods(self) -> int:
        """Pods not previewed."""
        return max(0, self.pod_count - len(self.pod_keys))


@dataclass(slots=True)
class Summary:
    """The strip above the cluster page."""

    nodes: int
    unschedulable_nodes: int
    pods: int
    bound: int
    pending: int
    cpu: Bar
    memory: Bar
    pod_slots: Bar
    source: str  # "scheduler cache" or "pods in the store"


@dataclass(slots=True)
class ClusterView:
    """The cluster page: summary and one page of nodes."""

    summary: Summary
    nodes: Page[NodeRow]
    q: str
    sort: str
    resource_version: int


def node_ready(node: Obj) -> bool:
    """The Ready condition is True."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def node_matches(entry: StoredEntry, terms: list[str]) -> bool:
    """Every search term matches: ``key=value`` a label exactly, else a substring of the name or a label."""
    meta = entry.obj.get("metadata") or {}
    name = str(meta.get("name") or "").lower()
    labels: dict[str, str] = meta.get("labels") or {}
    for term in terms:
        if "=" in term:
            key, _, value = term.partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
            continue
        t = term.lower()
        if t in name:
            continue
        if any(t in k.lower() or t in str(v).lower() for k, v in labels.items()):
            continue
        return False
    return True
