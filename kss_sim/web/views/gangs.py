"""What a gang is, read through the web's ports: every PodGroup (Coscheduling), Workload gang pod group (v1.35) and
v1.36 PodGroup, its quorum, its members (the pods naming it) and its state; the gangs page and a gang's page
(``groups.py``) show them.

A gang is one of three things. A **PodGroup** (``scheduling.x-k8s.io/v1alpha1``) whose members are the pods of its
namespace labelled ``scheduling.x-k8s.io/pod-group: <name>``, quorum ``spec.minMember``. A **Workload**'s pod group
with a gang policy (``scheduling.k8s.io/v1alpha1``, ``spec.podGroups[].policy.gang.minCount``), whose members are
the pods whose ``spec.workloadRef`` names it; each replica key (``podGroupReplicaKey``) is a gang of its own. A v1.36
**PodGroup** (``scheduling.k8s.io/v1alpha2``, the store's ``PodGroup.v1alpha2``) whose members are the pods whose
``spec.schedulingGroup.podGroupName`` names it, quorum ``spec.schedulingPolicy.gang.minCount`` (a basic policy has
none). Pods that name a group with no object behind it are gangs too, so a typo shows.

The pods come from the pod index, the groups from the store, the pods held in Permit from the scheduler
(``SchedulerView.waiting_pods``), the victims a gang waits for from kube-scheduler's ``Preempted`` Events
(``gang_preemption.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from kss_sim.kube.objects import Obj
from kss_sim.web.formatting import duration_text
from kss_sim.web.page_sources import WebService
from kss_sim.web.pod_index import PodRow
from kss_sim.web.ports import AttemptSummary, SchedulerView, Store, WaitingPodRow
from kss_sim.web.views.gang_preemption import PreemptionIndex, Victim, scheduling_group, terminating_victims

POD_GROUP = "PodGroup"
WORKLOAD = "Workload"
POD_GROUP_V1ALPHA2 = "PodGroup.v1alpha2"  # v1.36's, as the store names it
GROUP_KINDS = (POD_GROUP, WORKLOAD, POD_GROUP_V1ALPHA2)
# How the pages name each kind.
KIND_LABELS = {
    POD_GROUP: "PodGroup",
    WORKLOAD: "Workload",
    POD_GROUP_V1ALPHA2: "PodGroup (scheduling.k8s.io/v1alpha2)",
}
# From v1.37 the store's v1alpha2 PodGroups are served (and shown) as scheduling.k8s.io/v1beta1.
V1BETA1_FROM_MINOR = 37
V1BETA1_LABELS = {POD_GROUP_V1ALPHA2: "PodGroup (scheduling.k8s.io/v1beta1)"}


def kind_label(kind: str, minor: int) -> str:
    """The kind as the pages name it at Kubernetes 1.``minor``: in the API version that release serves."""
    if minor >= V1BETA1_FROM_MINOR and kind in V1BETA1_LABELS:
        return V1BETA1_LABELS[kind]
    return KIND_LABELS.get(kind, kind)


# The group cycle's condition: v1.36's name, and v1.37's for the same condition.
POD_GROUP_SCHEDULED_TYPES = ("PodGroupScheduled", "PodGroupInitiallyScheduled")
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
COSCHEDULING = "Coscheduling"
GANG_SCHEDULING = "GangScheduling"
FAILED_RESULTS = ("unschedulable", "error")


# ---------------------------------------------------------------------------------------------- models


@dataclass(frozen=True, slots=True, order=True)
class GangKey:
    """Which gang: a PodGroup by name, or one replica of a Workload's pod group."""

    namespace: str
    kind: str  # PodGroup | Workload
    name: str  # the PodGroup's or the Workload's name
    pod_group: str = ""  # a Workload's pod group
    replica_key: str = ""  # its podGroupReplicaKey ("" when the pods give none)

    @property
    def label(self) -> str:
        """How the pages name the gang: ``g``, ``job / workers``, ``job / workers [replica 1]``."""
        if self.kind != WORKLOAD:
            return self.name
        text = f"{self.name} / {self.pod_group}"
        return f"{text} [replica {self.replica_key}]" if self.replica_key else text

    @property
    def url(self) -> str:
        """The gang's own page."""
        base = f"/ui/groups/{self.namespace}/{self.kind}/{self.name}"
        if self.kind != WORKLOAD:
            return base
        params = {"podGroup": self.pod_group, **({"replicaKey": self.replica_key} if self.replica_key else {})}
        return f"{base}?{urlencode(params)}"

    @property
    def dom_id(self) -> str:
        """A stable element id for the gang's row or section."""
        raw = "-".join(p for p in (self.namespace, self.kind, self.name, self.pod_group, self.replica_key) if p)
        return "gang-" + re.sub(r"[^A-Za-z0-9_-]", "_", raw)


@dataclass(slots=True)
class Member:
    """One pod of a gang and where it is: bound, waiting in Permit, pending, gated or finished."""

    row: PodRow
    state: str  # bound | waiting | pending | gated | finished
    permit: WaitingPodRow | None = None  # held in Permit now
    gate: str = ""  # why PreEnqueue keeps it out of the queue
    attempt: AttemptSummary | None = None  # the latest attempt, on the gang's own page
    permit_wait: Obj | None = None  # how the latest attempt's wait in Permit ended
    attempt_count: int = 0
    cycle: Obj | None = None  # the latest attempt's PodGroup cycle record (v1.36), on the gang's own page

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return self.row.key

    @property
    def pending_text(self) -> str:
        """Why it is pending: kube-scheduler's last message (the PodScheduled condition, else the last attempt)."""
        if self.row.reason:
            return self.row.reason
        if self.attempt is not None and self.attempt.get("result") in FAILED_RESULTS:
            return str(self.attempt.get("message") or "")
        return ""


@dataclass(frozen=True, slots=True)
class GangState:
    """The gang's state in words (``word``: ``detail``) with a tone for the badge; ``remaining`` counts down to the
    first waiting member's Permit timeout."""

    word: str  # waiting for quorum | bound | quorum met | rejected | too few members | gated | pending | ...
    tone: str  # ok | warn | bad | "" (neutral)
    detail: str
    remaining: float | None = None

    @property
    def text(self) -> str:
        """``waiting for quorum: 5 of 8 reserved``."""
        return f"{self.word}: {self.detail}" if self.detail else self.word

    @property
    def summary(self) -> str:
        """The whole sentence (``waiting for quorum: 5 of 8 reserved, 52 s left``)."""
        if self.remaining is None:
            return self.text
        return f"{self.text}, {duration_text(self.remaining)} left"


@dataclass(slots=True)
class Gang:
    """One gang: its object, quorum, members and state."""

    key: GangKey
    obj: Obj | None  # the PodGroup or Workload; None when pods name one that does not exist
    quorum: int
    quorum_field: str  # minMember | minCount
    members: list[Member]
    timeout_seconds: float | None = None  # PodGroup spec.scheduleTimeoutSeconds
    min_resources: dict[str, Any] = field(default_factory=dict)
    phase: str = ""  # PodGroup status.phase (written by its controller, when there is one)
    enforced: bool = True  # the plugin that enforces this kind of gang runs in some profile
    state: GangState = field(default_factory=lambda: GangState("", "", ""))
    # v1.36's PodGroup: its scheduling policy (gang | basic), topology constraint key, PodGroupScheduled condition.
    policy: str = "gang"
    topology_key: str = ""
    condition: Obj | None = None
    # Victims still terminating that the gang waits for: preempted by its nominated members, or by the group as one.
    awaited_victims: list[Victim] = field(default_factory=list)

    def _count(self, state: str) -> int:
        return sum(1 for m in self.members if m.state == state)

    @property
    def exists(self) -> int:
        """Members that exist and have not finished."""
        return sum(1 for m in self.members if m.state != "finished")

    @property
    def bound(self) -> int:
        """Members bound to a node."""
        return self._count("bound")

    @property
    def waiting(self) -> int:
        """Members held in Permit, keeping their reservation."""
        return self._count("waiting")

    @property
    def pending(self) -> int:
        """Members not placed yet (gated ones included)."""
        return self._count("pending") + self._count("gated")

    @property
    def gated(self) -> int:
        """Members PreEnqueue keeps out of the queue."""
        return self._count("gated")

    @property
    def nominated(self) -> list[Member]:
        """Pending members nominated to a node: their preemption made room there, they wait for the victims."""
        return [m for m in self.members if m.state in ("pending", "gated") and m.row.nominated]

    @property
    def reserved(self) -> int:
        """Members with a node: bound, or reserved while they wait in Permit (what the quorum counts)."""
        return self.bound + self.waiting

    @property
    def remaining(self) -> float | None:
        """Seconds until the first waiting member's Permit timeout (None when none waits)."""
        left = [m.permit.remaining_seconds for m in self.members if m.permit is not None]
        return min(left) if left else None


# ---------------------------------------------------------------------------------------------- reading


def _natural(text: str) -> tuple[Any, ...]:
    """``p2`` before ``p10``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _workload_ref(row: PodRow) -> Mapping[str, Any] | None:
    ref = (row.obj.get("spec") or {}).get("workloadRef")
    return ref if isinstance(ref, Mapping) and ref.get("name") else None


def gang_keys_of(row: PodRow) -> list[GangKey]:
    """The gangs a pod belongs to: its PodGroup label, its ``spec.workloadRef`` and its ``spec.schedulingGroup``
    (a pod may have more than one)."""
    keys: list[GangKey] = []
    group_v1alpha2 = scheduling_group(row)
    if group_v1alpha2:
        keys.append(GangKey(row.namespace, POD_GROUP_V1ALPHA2, group_v1alpha2.partition("/")[2]))
    group = row.labels.get(POD_GROUP_LABEL)
    if group:
        keys.append(GangKey(row.namespace, POD_GROUP, str(group)))
    ref = _workload_ref(row)
    if ref is not None:
        keys.append(
            GangKey(
                row.namespace,
                WORKLOAD,
                str(ref.get("name") or ""),
                str(ref.get("podGroup") or ""),
                str(ref.get("podGroupReplicaKey") or ""),
            )
        )
    return keys


def plugins_running(scheduler: SchedulerView) -> set[str]:
    """Every plugin some profile runs, at any extension point."""
    return {name for _, points in scheduler.plugins_in_effect() for _, plugins in points for name, _ in plugins}


def _gang_policy(workload: Obj, pod_group: str) -> tuple[bool, Mapping[str, Any] | None]:
    """Whether the Workload has the pod group, and its gang policy (None: not a gang)."""
    for group in (workload.get("spec") or {}).get("podGroups") or []:
        if isinstance(group, Mapping) and group.get("name") == pod_group:
            gang = (group.get("policy") or {}).get("gang")
            return True, gang if isinstance(gang, Mapping) else None
    return False, None


def _gang_pod_groups(workload: Obj) -> list[str]:
    """The names of a Workload's pod groups with a gang policy."""
    out = []
    for group in (workload.get("spec") or {}).get("podGroups") or []:
        gang = ((group or {}).get("policy") or {}).get("gang") if isinstance(group, Mapping) else None
        if isinstance(gang, Mapping):
            out.append(str(group.get("name") or ""))
    return out


def _objects(store: Store, kind: str, namespace: str | None = None) -> dict[tuple[str, str], Obj]:
    return {(e.namespace, e.name): e.obj for e in store.select(kind, namespace).items}


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _quoted(text: str) -> str:
    """Go's ``%q`` of a name, as the plugins' messages print it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class GangReader:
    """What building gangs reads once per request: PodGroups, Workloads, pods in Permit, plugins in effect."""

    def __init__(self, web: WebService, namespace: str | None = None) -> None:
        self.web = web
        self.snapshot = web.pod_index.get(web.store)
        self.pod_groups = _objects(web.store, POD_GROUP, namespace)
        self.workloads = _objects(web.store, WORKLOAD, namespace)
        self.pod_groups_v1alpha2 = _objects(web.store, POD_GROUP_V1ALPHA2, namespace)
        self.waiting = {w.pod: w for w in web.scheduler.waiting_pods()}
        running = plugins_running(web.scheduler)
        self.coscheduling = COSCHEDULING in running
        self.gang_scheduling = GANG_SCHEDULING in running
        self._preemption: PreemptionIndex | None = None
        self.members: dict[GangKey, list[PodRow]] = {}
        for row in self.snapshot.rows:
            if namespace is not None and row.namespace != namespace:
                continue
            for key in gang_keys_of(row):
                self.members.setdefault(key, []).append(row)

    @property
    def preemption(self) -> PreemptionIndex:
        """Who preempted whom (every namespace's: a gang's victims may be anywhere), read once, when first needed."""
        if self._preemption is None:
            self._preemption = PreemptionIndex(self.web, self.snapshot)
        return self._preemption

    def gang_keys(self) -> list[GangKey]:
        """Every gang: each PodGroup, each gang pod group of each Workload (per replica key), and every group
        pods name that has no object."""
        keys = {GangKey(ns, POD_GROUP, name) for ns, name in self.pod_groups}
        keys.update(GangKey(ns, POD_GROUP_V1ALPHA2, name) for ns, name in self.pod_groups_v1alpha2)
        for (ns, name), found in self.workloads.items():
            for group in _gang_pod_groups(found):
                replicas = {
                    k.replica_key
                    for k in self.members
                    if (k.namespace, k.kind, k.name, k.pod_group) == (ns, WORKLOAD, name, group)
                }
                keys.update(GangKey(ns, WORKLOAD, name, group, r) for r in replicas or {""})
        for key in self.members:
            if key.kind != WORKLOAD:
                keys.add(key)
            else:
                workload = self.workloads.get((key.namespace, key.name))
                # Pods of a pod group with the basic policy are no gang; pods of a missing group are shown.
                if workload is None or not _gang_policy(workload, key.pod_group)[0]:
                    keys.add(key)
        return sorted(keys, key=lambda k: (k.namespace, _natural(k.name), k.kind, k.pod_group, _natural(k.replica_key)))

    def gang(self, key: GangKey) -> Gang:
        """One gang with its members placed and its state worked out."""
        rows = sorted(self.members.get(key, []), key=lambda r: _natural(r.name))
        if key.kind == POD_GROUP:
            obj = self.pod_groups.get((key.namespace, key.name))
            spec = (obj or {}).get("spec") or {}
            timeout = spec.get("scheduleTimeoutSeconds")
            gang = Gang(
                key,
                obj,
                int(spec.get("minMember") or 0),
                "minMember",
                [],
                timeout_seconds=float(timeout) if timeout is not None else None,
                min_resources=dict(spec.get("minResources") or {}),
                phase=str(((obj or {}).get("status") or {}).get("phase") or ""),
                enforced=self.coscheduling,
            )
        elif key.kind == POD_GROUP_V1ALPHA2:
            obj = self.pod_groups_v1alpha2.get((key.namespace, key.name))
            spec = (obj or {}).get("spec") or {}
            gang_spec = (spec.get("schedulingPolicy") or {}).get("gang")
            topology = (spec.get("schedulingConstraints") or {}).get("topology") or []
            conditions = ((obj or {}).get("status") or {}).get("conditions") or []
            gang = Gang(
                key,
                obj,
                int((gang_spec or {}).get("minCount") or 0),
                "minCount",
                [],
                enforced=self.gang_scheduling or not isinstance(gang_spec, Mapping),
                policy="gang" if isinstance(gang_spec, Mapping) else "basic",
                topology_key=str((topology[0] or {}).get("key") or "") if topology else "",
                condition=next((c for c in conditions if c.get("type") in POD_GROUP_SCHEDULED_TYPES), None),
            )
        else:
            obj = self.workloads.get((key.namespace, key.name))
            gang_policy = _gang_policy(obj, key.pod_group)[1] if obj is not None else None
            quorum = int((gang_policy or {}).get("minCount") or 0)
            gang = Gang(key, obj, quorum, "minCount", [], enforced=self.gang_scheduling)
        gang.members = [self._member(gang, row) for row in rows]
        preemptors = [_uid(m.row.obj) for m in gang.nominated]
        if key.kind == POD_GROUP_V1ALPHA2 and gang.obj is not None and gang.pending:
            preemptors.append(_uid(gang.obj))  # preempting as one (WorkloadAwarePreemption)
        if preemptors:  # only a gang with pending members waits for victims: the Events are read for those alone
            gang.awaited_victims = terminating_victims(self.preemption, preemptors)
        gang.state = gang_state(gang)
        return gang

    def _member(self, gang: Gang, row: PodRow) -> Member:
        permit = self.waiting.get(row.key)
        if row.terminal:
            return Member(row, "finished")
        if row.bound:
            return Member(row, "bound")
        if permit is not None:
            return Member(row, "waiting", permit=permit)
        gate = self._gate(gang, row)
        return Member(row, "gated" if gate else "pending", gate=gate)

    def _gate(self, gang: Gang, row: PodRow) -> str:
        """Why PreEnqueue keeps the pod out of the queue, in the plugin's words ("" when nothing does).

        The scheduler's queue does not tell the pages which pods it gates, so this reads what the gates read:
        the pod's schedulingGates (SchedulingGates), and for a Workload's gang, the Workload and how many pods the
        group has (GangScheduling, when a profile runs it).
        """
        gates = [str((g or {}).get("name") or "") for g in (row.obj.get("spec") or {}).get("schedulingGates") or []]
        if gates:
            return f"SchedulingGates: waiting for scheduling gates: [{' '.join(gates)}]"
        if gang.key.kind == POD_GROUP_V1ALPHA2 and self.gang_scheduling:
            if gang.obj is None:
                name = _quoted(gang.key.name)
                return f"{GANG_SCHEDULING}: waiting for pods's pod group {name} to appear in scheduling queue"
            if gang.policy == "gang" and len(self.members.get(gang.key, [])) < gang.quorum:
                return f"{GANG_SCHEDULING}: waiting for minCount pods from a gang to appear in scheduling queue"
            return ""
        if gang.key.kind != WORKLOAD or not self.gang_scheduling:
            return ""
        name, group = gang.key.name, gang.key.pod_group
        if gang.obj is None:
            return f"{GANG_SCHEDULING}: waiting for pods's workload {_quoted(name)} to appear in scheduling queue"
        found, policy = _gang_policy(gang.obj, group)
        if not found:
            return f"{GANG_SCHEDULING}: pod group {_quoted(group)} doesn't exist for a workload {_quoted(name)}"
        if policy is not None and len(self.members.get(gang.key, [])) < gang.quorum:
            return f"{GANG_SCHEDULING}: waiting for minCount pods from a gang to appear in scheduling queue"
        return ""


def _latest_reason(members: Iterable[Member]) -> str:
    """The newest pending reason among the members (by the PodScheduled condition's transition time)."""
    best: tuple[str, str] | None = None
    for m in members:
        text = m.pending_text
        if not text:
            continue
        when = ""
        for cond in (m.row.obj.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled":
                when = str(cond.get("lastTransitionTime") or "")
        if best is None or when > best[0]:
            best = (when, text)
    return best[1] if best else ""


def gang_state(gang: Gang) -> GangState:
    """The gang's state in words: missing, no members, waiting for quorum, too few members, bound, quorum met,
    waiting for preemption, rejected, gated or pending (checked in that order: the first that holds explains the
    most)."""
    kind = gang.key.kind
    if gang.obj is None:
        return GangState("missing", "bad", f"no {kind} object: {gang.exists} pod(s) name it")
    if kind == WORKLOAD and not _gang_policy(gang.obj, gang.key.pod_group)[0]:
        detail = f"{kind} {gang.key.name} has no pod group {gang.key.pod_group}: {gang.exists} pod(s) name it"
        return GangState("missing", "bad", detail)
    quorum, exists = gang.quorum, gang.exists
    if exists == 0:
        return GangState("no members yet", "", f"quorum {quorum}")
    if gang.waiting:
        return GangState("waiting for quorum", "warn", f"{gang.reserved} of {quorum} reserved", gang.remaining)
    if exists < quorum:
        return GangState("too few members", "bad", f"{exists} of {quorum} exist")
    if gang.pending == 0:
        return GangState("bound", "ok", f"{gang.bound} of {exists} on nodes")
    if gang.bound >= quorum:
        return GangState("quorum met", "ok", f"{gang.bound} bound, {gang.pending} pending")
    if gang.awaited_victims or gang.nominated:
        return _waiting_for_preemption(gang)
    reason = _latest_reason(gang.members)
    if reason:
        return GangState("rejected", "bad", reason)
    if gang.gated == gang.pending:
        return GangState("gated", "warn", next(m.gate for m in gang.members if m.state == "gated"))
    return GangState("pending", "warn", f"{gang.pending} of {exists} not scheduled yet")


def _waiting_for_preemption(gang: Gang) -> GangState:
    """The gang fits once victims of its preemption are gone (deletes are graceful: each keeps its node for its grace
    period); counts down to the last victim's end."""
    victims = gang.awaited_victims
    if not victims:
        nominated = len(gang.nominated)
        return GangState("waiting for preemption", "warn", f"{nominated} member{_s(nominated)} nominated")
    left = [v.grace_left for v in victims if v.grace_left is not None and v.grace_left > 0]
    detail = f"{len(victims)} victim{_s(len(victims))} terminating"
    return GangState("waiting for preemption", "warn", detail, max(left) if left else None)


def _s(count: int) -> str:
    return "" if count == 1 else "s"
