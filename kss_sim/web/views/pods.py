"""The pods page: every pod, searched, filtered, sorted and paged."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Query

from kss_sim.web.formatting import Page, paginate
from kss_sim.web.page_sources import WebService
from kss_sim.web.pod_index import PodRow
from kss_sim.web.ports import WaitingPodRow

# "state" (the default) puts what needs a look first: unschedulable, pending, waiting in Permit, then bound, finished.
POD_SORTS = ("state", "name", "namespace", "node", "phase", "priority", "attempts", "age")
# Each pod is in exactly one of pending, waiting, bound, finished; unschedulable and gated are kinds of pending.
POD_STATES = ("all", "unschedulable", "gated", "pending", "waiting", "bound", "finished")


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
    states: dict[str, str]  # namespace/name -> the state (``pod_state``) of each pod on this page

    def state_of(self, row: PodRow) -> str:
        """unschedulable, pending, gated, waiting, bound or finished."""
        return self.states.get(row.key, "pending")

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
    sort: str = "state"
    desc: bool = False
    page: Annotated[int, Query(ge=1)] = 1


def gated(row: PodRow) -> bool:
    """The pod has scheduling gates: the scheduler does not try it until they are removed."""
    return bool((row.obj.get("spec") or {}).get("schedulingGates"))


def pod_state(row: PodRow, waiting: Container[str]) -> str:
    """The one state a pod is counted and ordered in (``POD_STATES`` less "all" and "pending")."""
    if row.terminal:
        return "finished"
    if row.bound:
        return "bound"
    if waiting and row.key in waiting:
        return "waiting"
    if gated(row):
        return "gated"
    return "unschedulable" if row.reason else "pending"


# The default order: what the scheduler could not place first, then what it has not tried, then the rest.
STATE_RANK = {"unschedulable": 0, "pending": 1, "gated": 2, "waiting": 3, "bound": 4, "finished": 5}
PENDING_STATES = frozenset({"unschedulable", "pending", "gated"})


def in_state(state: str, wanted: str) -> bool:
    """A pod in ``state`` shows under the filter ``wanted`` ("pending" takes unschedulable and gated pods too)."""
    return wanted == "all" or state == wanted or (wanted == "pending" and state in PENDING_STATES)


def pods_view(web: WebService, query: PodsQuery) -> PodsView:
    """One page of pods: searched, filtered, sorted (pods that need a look first), with counts per state."""
    store = web.store
    index = web.pod_index.get(store)
    q, node, namespace, desc = query.q.strip(), query.node.strip(), query.namespace, query.desc
    state = query.state if query.state in POD_STATES else "all"
    sort = query.sort if query.sort in POD_SORTS else "state"
    attempts = web.results.attempt_counts()  # one query per request
    waiting = {w.pod: w for w in web.scheduler.waiting_pods()}  # held in Permit: not bound, not pending either

    rows: Iterable[PodRow] = index.rows
    if namespace:
        rows = (r for r in rows if r.namespace == namespace)
    if node:
        rows = (r for r in rows if r.node == node or r.nominated == node)
    terms = q.split()
    if terms:
        rows = (r for r in rows if pod_matches(r, terms))
    # Each kept pod with its state, bucketed by state: the index is in (namespace, name) order, so the default
    # order (state, then namespace and name) needs no sort at 50,000 pods.
    by_state: dict[str, list[PodRow]] = {s: [] for s in STATE_RANK}
    for r in rows:
        by_state[pod_state(r, waiting)].append(r)
    # The chips count the pods the other filters keep, so each says what clicking it shows.
    counts = {s: len(bucket) for s, bucket in by_state.items()}
    counts["pending"] = sum(counts[s] for s in PENDING_STATES)
    counts["all"] = sum(len(bucket) for bucket in by_state.values())
    selected = [r for s, bucket in by_state.items() if in_state(s, state) for r in bucket]  # in STATE_RANK order
    keys: dict[str, Callable[[PodRow], Any]] = {
        "namespace": lambda r: (r.namespace, r.name),
        "node": lambda r: (r.node == "", r.node, r.namespace, r.name),
        "phase": lambda r: (r.phase, r.namespace, r.name),
        "priority": lambda r: (r.priority, r.namespace, r.name),
        "attempts": lambda r: (attempts.get((r.namespace, r.name), 0), r.namespace, r.name),
        "age": lambda r: (r.created, r.namespace, r.name),
    }
    if sort == "state":
        if desc:
            selected.reverse()
    elif sort == "name":
        selected.sort(key=lambda r: (r.name, r.namespace), reverse=desc)
    else:
        selected.sort(key=keys[sort], reverse=desc)
    window = paginate(selected, query.page)
    states = {r.key: pod_state(r, waiting) for r in window.items}
    namespaces = [e.name for e in store.select("Namespace").items]
    return PodsView(
        window,
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
        states,
    )
