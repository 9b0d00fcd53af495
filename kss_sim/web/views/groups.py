"""The gangs pages: the list of every gang (PodGroup, Workload gang pod group, v1.36 PodGroup) with its quorum,
member counts and state, and a gang's own page: its members (paged) with their latest attempts, why the gang did not
fit (the rejection messages folded over its members), and for a v1.36 PodGroup its ``PodGroupScheduled`` condition
and the last PodGroup scheduling cycle its members were tried in (the attempts' ``podGroup`` record: the pods tried
together, the outcome, the placement), and its preemption (``gang_preemption.py``: the pods preempted for it, whether
it waits for them or was turned back, its own pods others preempted).

What a gang is and how it is read through the ports is ``gangs.py``'s; the members' attempts come from the results.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from kss_sim.cluster.kinds.workload_v1beta1 import in_served_version
from kss_sim.kube.objects import Obj
from kss_sim.web.formatting import Page, duration_text, paginate, to_yaml
from kss_sim.web.page_sources import WebService
from kss_sim.web.ports import AttemptQuery, AttemptSummary, WaitingPodRow
from kss_sim.web.views.gang_preemption import GangPreemption, PreemptionIndex, gang_preemption
from kss_sim.web.views.gangs import (
    FAILED_RESULTS,
    GROUP_KINDS,
    POD_GROUP,
    POD_GROUP_V1ALPHA2,
    WORKLOAD,
    Gang,
    GangReader,
    Member,
    kind_label,
)

MEMBERS_PAGE_SIZE = 50  # each member shown costs two reads of the results
REJECTIONS_SHOWN = 8  # distinct messages under "why the gang did not fit"
REJECTIONS_PER_MEMBER = 5  # a member's failed attempts looked at, newest first


@dataclass(slots=True)
class Rejection:
    """One reason the gang's members were turned away, folded over the members that got it."""

    message: str
    pods: list[str]  # namespace/name, most recent first
    latest: float  # unix time of the newest attempt with this message
    attempt_url: str  # the newest such attempt on its pod's page

    @property
    def count(self) -> int:
        """How many members got this message."""
        return len(self.pods)

    @property
    def ago(self) -> str:
        """How long ago the newest attempt with this message started."""
        return duration_text(time.time() - self.latest)


@dataclass(slots=True)
class GroupsView:
    """The gangs page."""

    gangs: Page[Gang]
    other_waiting: list[WaitingPodRow]  # held in Permit but in no gang listed here (a plugin of one's own)
    waiting_total: int
    coscheduling: bool  # Coscheduling runs in some profile
    gang_scheduling: bool  # GangScheduling runs in some profile
    resource_version: int
    minor: int  # the Kubernetes minor version served: it names the kinds' API versions

    def kind_label(self, kind: str) -> str:
        """A gang's kind as the pages name it."""
        return kind_label(kind, self.minor)


@dataclass(slots=True)
class GroupCycle:
    """The latest v1.36 PodGroup scheduling cycle of a gang, as its members' attempts recorded it: the pods tried
    together (in order) with what each attempt came to, the outcome and message (the PodGroupScheduled condition's)
    and the placement (TopologyAwareWorkloadScheduling)."""

    pods: list[tuple[str, str, str]]  # pod, its attempt's result ("" when not on this page), its message
    outcome: str
    message: str
    placement: str | None
    nominated: dict[str, str] = field(default_factory=dict)  # pod -> the node it waits on for the preemption
    record: Obj = field(default_factory=dict)  # the attempts' ``podGroup`` record as it is


@dataclass(slots=True)
class GangDetail:
    """A gang on its own page: members (paged) with their last attempts, and why the gang did not fit."""

    gang: Gang
    members: Page[Member]
    rejections: list[Rejection]
    cycle: GroupCycle | None = None
    preemption: GangPreemption | None = None


@dataclass(slots=True)
class GroupPage:
    """The page of a PodGroup, or of a Workload (each of its gangs, or the one asked for)."""

    namespace: str
    kind: str
    name: str
    obj: Obj | None
    yaml: str
    gangs: list[GangDetail]
    resource_version: int
    minor: int  # the Kubernetes minor version served

    @property
    def kind_label(self) -> str:
        """The kind as the pages name it."""
        return kind_label(self.kind, self.minor)


# ---------------------------------------------------------------------------------------------- pages


def groups_view(web: WebService, *, minor: int, page: int = 1) -> GroupsView:
    """Every gang, with quorum, member counts and state; and pods held in Permit outside any gang."""
    rv = web.store.resource_version
    ctx = GangReader(web)
    gangs = [ctx.gang(key) for key in ctx.gang_keys()]
    in_gangs = {m.key for g in gangs for m in g.members}
    others = [w for w in ctx.waiting.values() if w.pod not in in_gangs]
    return GroupsView(
        gangs=paginate(gangs, page),
        other_waiting=others,
        waiting_total=len(ctx.waiting),
        coscheduling=ctx.coscheduling,
        gang_scheduling=ctx.gang_scheduling,
        resource_version=rv,
        minor=minor,
    )


def group_page(
    web: WebService,
    namespace: str,
    kind: str,
    name: str,
    *,
    minor: int,
    pod_group: str = "",
    replica_key: str | None = None,
    page: int = 1,
) -> GroupPage | None:
    """A PodGroup's page, or a Workload's (its gangs, or only ``pod_group`` / ``replica_key``); None when neither
    the object nor any pod naming it exists."""
    if kind not in GROUP_KINDS:
        return None
    rv = web.store.resource_version
    ctx = GangReader(web, namespace)
    keys = [
        k
        for k in ctx.gang_keys()
        if k.kind == kind
        and k.name == name
        and (not pod_group or k.pod_group == pod_group)
        and (replica_key is None or k.replica_key == replica_key)
    ]
    objects = {POD_GROUP: ctx.pod_groups, WORKLOAD: ctx.workloads, POD_GROUP_V1ALPHA2: ctx.pod_groups_v1alpha2}
    obj = objects[kind].get((namespace, name))
    if obj is None and not keys:
        return None
    web.results.flush()  # attempts are written off-thread: show what was submitted before this request
    details = [_detail(web, ctx.preemption, ctx.gang(k), page) for k in keys]
    # shown as the release's API serves it (v1beta1 from 1.37), without its managedFields
    shown = in_served_version(kind, dict(obj), minor) if obj is not None else None
    if shown is not None:
        shown["metadata"] = {k: v for k, v in (shown.get("metadata") or {}).items() if k != "managedFields"}
    return GroupPage(namespace, kind, name, obj, to_yaml(shown) if shown else "", details, rv, minor)


def _detail(web: WebService, index: PreemptionIndex, gang: Gang, page: int) -> GangDetail:
    results = web.results
    members = paginate(gang.members, page, MEMBERS_PAGE_SIZE)
    failures: list[tuple[float, str, int, str]] = []  # startedAt, pod, attempt, message
    history: dict[str, list[AttemptSummary]] = {}
    for m in members.items:
        attempts = results.list_attempts(m.row.namespace, m.row.name)
        history[m.key] = attempts
        m.attempt_count = len(attempts)
        if not attempts:
            continue
        m.attempt = attempts[0]
        latest = AttemptQuery(page_size=1, top=0)  # the statuses alone
        detail = results.get_attempt(m.row.namespace, m.row.name, int(attempts[0]["attempt"]), latest)
        m.permit_wait = (detail.get("permitWait") or None) if detail else None
        m.cycle = (detail.get("podGroup") or None) if detail else None
        failed = [a for a in attempts if a.get("result") in FAILED_RESULTS and a.get("message")]
        for a in failed[:REJECTIONS_PER_MEMBER]:
            failures.append((float(a.get("startedAt") or 0.0), m.key, int(a["attempt"]), str(a["message"])))
    cycle = latest_cycle(members.items)
    key = gang.key
    preemption = gang_preemption(
        web,
        index,
        namespace=key.namespace,
        pod_group=f"{key.namespace}/{key.name}" if key.kind == POD_GROUP_V1ALPHA2 else "",
        group_obj=gang.obj,
        members=[m.row for m in members.items],
        history=history,
        waiting=gang.state.word == "waiting for preemption",
        settled=gang.state.word in ("bound", "quorum met"),
        latest_record=cycle.record if cycle is not None else None,
    )
    shown = preemption if preemption.shown else None
    return GangDetail(gang, members, fold_rejections(failures), cycle, shown)


def latest_cycle(members: Iterable[Member]) -> GroupCycle | None:
    """The newest PodGroup cycle among the members' latest attempts, with what each pod tried in it came to (as far
    as the members shown tell)."""
    newest: tuple[float, Obj] | None = None
    for m in members:
        if m.cycle is not None and m.attempt is not None:
            started = float(m.attempt.get("startedAt") or 0.0)
            if newest is None or started > newest[0]:
                newest = (started, m.cycle)
    if newest is None:
        return None
    record = newest[1]
    by_pod = {m.key: m for m in members if m.cycle is not None and m.cycle.get("pods") == record.get("pods")}
    pods = []
    nominated = {}
    for pod in record.get("pods") or []:
        member = by_pod.get(str(pod))
        node = (member.cycle or {}).get("nominatedNode") if member is not None else None
        if node:
            nominated[str(pod)] = str(node)
        attempt = member.attempt if member is not None else None
        result = str(attempt.get("result") or "") if attempt is not None else ""
        message = str(attempt.get("message") or "") if attempt is not None else ""
        pods.append((str(pod), result, message))
    placement = record.get("placement")
    return GroupCycle(
        pods,
        str(record.get("outcome") or ""),
        str(record.get("message") or ""),
        str(placement) if placement else None,
        nominated,
        record,
    )


def fold_rejections(failures: Iterable[tuple[float, str, int, str]], limit: int = REJECTIONS_SHOWN) -> list[Rejection]:
    """The most recent distinct rejection messages, each with the members that got it (newest first)."""
    folded: dict[str, Rejection] = {}
    for started, pod, attempt, message in sorted(failures, key=lambda f: -f[0]):
        found = folded.get(message)
        if found is None:
            folded[message] = Rejection(message, [pod], started, f"/ui/pods/{pod}?attempt={attempt}")
        elif pod not in found.pods:
            found.pods.append(pod)
    return list(folded.values())[:limit]
