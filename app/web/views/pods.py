"""The pods page: every pod, searched, filtered, sorted and paged."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Query

from app.web.formatting import Page, paginate
from app.web.pod_index import PodRow
from app.web.ports import WaitingPodRow
from app.web.service import WebService

POD_SORTS = ("name", "namespace", "node", "phase", "priority", "attempts", "age")
POD_STATES = ("all", "pending", "waiting", "bound")


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
    waiting: dict[str, WaitingPodRow]  # namespace/name -> held in Permit now

    def attempts_of(self, row: PodRow) -> int:
        """Recorded attempts of one pod."""
        return self.attempts.get((row.namespace, row.name), 0)

    def permit_of(self, row: PodRow) -> WaitingPodRow | None:
        """Where and for how long the pod is held in Permit (None: it is not)."""
        return self.waiting.get(row.key) if not row.bound else None


@dataclass(frozen=True, slots=True)
class PodsQuery:
    """What the pods page was asked for: its URL's query (the route takes it as one dependency)."""

    q: str = ""
    state: str = "all"
    node: str = ""
    namespace: str = ""
    sort: str = "name"
    desc: bool = False
    page: Annotated[int, Query(ge=1)] = 1


def pods_view(web: WebService, query: PodsQuery) -> PodsView:
    """One page of pods: searched, filtered, sorted, with attempt counts and pending reasons."""
    store = web.store
    index = web.pod_index.get(store)
    q, node, namespace, desc = query.q.strip(), query.node.strip(), query.namespace, query.desc
    state = query.state if query.state in POD_STATES else "all"
    sort = query.sort if query.sort in POD_SORTS else "name"
    attempts = web.results.attempt_counts()  # one query per request
    waiting = {w.pod: w for w in web.scheduler.waiting_pods()}  # held in Permit: not bound, not pending either

    def pending(r: PodRow) -> bool:
        return not r.bound and not r.terminal and r.key not in waiting

    rows: Iterable[PodRow] = index.rows
    if namespace:
        rows = (r for r in rows if r.namespace == namespace)
    if node:
        rows = (r for r in rows if r.node == node or r.nominated == node)
    if state == "pending":
        rows = (r for r in rows if pending(r))
    elif state == "waiting":
        rows = (r for r in rows if not r.bound and r.key in waiting)
    elif state == "bound":
        rows = (r for r in rows if r.bound)
    terms = q.split()
    if terms:
        rows = (r for r in rows if pod_matches(r, terms))
    selected = list(rows)
    keys: dict[str, Callable[[PodRow], Any]] = {
        "namespace": lambda r: (r.namespace, r.name),
        "node": lambda r: (r.node == "", r.node, r.namespace, r.name),
        "phase": lambda r: (r.phase, r.namespace, r.name),
        "priority": lambda r: (r.priority, r.namespace, r.name),
        "attempts": lambda r: (attempts.get((r.namespace, r.name), 0), r.namespace, r.name),
        "age": lambda r: (r.created, r.namespace, r.name),
    }
    if sort == "name":
        selected.sort(key=lambda r: (r.name, r.namespace), reverse=desc)
    else:
        selected.sort(key=keys[sort], reverse=desc)
    counts = {
        "all": len(index.rows),
        "pending": sum(1 for r in index.rows if pending(r)),
        "waiting": sum(1 for r in index.rows if not r.bound and r.key in waiting),
        "bound": sum(1 for r in index.rows if r.bound),
    }
    namespaces = [e.name for e in store.select("Namespace").items]
    return PodsView(
        paginate(selected, query.page),
        attempts,
        q,
        state,
        node,
        namespace,
        sort,
        desc,
        namespaces,
        counts,
        index.resource_version,
        waiting,
    )
