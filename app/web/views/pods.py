"""The pods page: every pod, searched, filtered, sorted and paged."""

from __future__ import annotations

from dataclasses import dataclass

from app.web.formatting import Page
from app.web.pod_index import PodRow

POD_SORTS = ("name", "namespace", "node", "phase", "priority", "attempts", "age")
POD_STATES = ("all", "pending", "bound")


def pod_matches(row: PodRow, terms: list[str]) -> bool:
    """Every term matches: ``key=value`` a label exactly, else a substring of namespace/name or a label."""
    for term in terms:
        if "=" in term:
            key, _, value = term.partition("=")
            if row.labels.get(key.strip()) != value.strip():
                return False
            continue
        t = term.lower()
        if t in row.name.lower() or t in row.namespace.lower():
            continue
        if any(t in k.lower() or t in str(v).lower() for k, v in row.labels.items()):
            continue
        return False
    return True


@dataclass(slots=True)
class PodsView:
    """The pods page."""

    pods: Page[PodRow]
    attempts: dict[tuple[str, str], int]
    q: str
    state: str
    node: str
    namespace: str
    sort: str
    desc: bool
    namespaces: list[str]
    counts: dict[str, int]
    resource_version: int

    def attempts_of(self, row: PodRow) -> int:
        """Recorded attempts of one pod."""
        return self.attempts.get((row.namespace, row.name), 0)
