"""Preemption around gangs, as the gang pages and a victim's pod page show it: which pods were preempted for a gang
(by a member's own PostFilter, or by the group as one with WorkloadAwarePreemption), where they ran, in which
attempt, whether they are still terminating; whether the gang waits for them or was turned back; and, seen from the
other side, which of a gang's pods were preempted and by whom.

Two sources. The cluster as it is now: the ``Preempted`` Events kube-scheduler writes on each victim ("Preempted by
pod <uid> on node <node>", "Preempted by podgroup <uid> on node cluster" when a PodGroup preempts as one), the
victims still terminating (deletes are graceful: a victim keeps its node until its grace period ends) and the members'
nominated nodes. And the members' recorded attempts (``AttemptSummary``'s ``victims`` and ``podGroup``): which member
preempted in which attempt, and the group's ``preemption`` and ``preemptionVictims`` (``podgroup_cycle.py``), which
still say where the victims ran once they are gone.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kss_sim.kube.objects import Obj
from kss_sim.kube.times import parse_time
from kss_sim.web.formatting import duration_text
from kss_sim.web.page_sources import WebService
from kss_sim.web.pod_index import PodRow, PodSnapshot
from kss_sim.web.ports import AttemptQuery, AttemptSummary, Results

PREEMPTED = "Preempted"
POD_GROUP_V1ALPHA2 = "PodGroup.v1alpha2"
# kube-scheduler's Event on a victim (``PreemptPod``); a PodGroup preempting as one names itself "podgroup".
_PREEMPTED_BY = re.compile(r"^Preempted by (pod|podgroup) (\S+) on node (\S+)$")
EVENTS_READ = 500  # the newest Preempted Events looked at per page
PREEMPTIONS_SHOWN = 10
GONE_VICTIMS_LOOKED_UP = 20  # victims no longer in the cluster whose own attempts are read for their gang


@dataclass(frozen=True, slots=True)
class PreemptedEvent:
    """One victim's ``Preempted`` Event: who preempted it and where."""

    victim: str  # namespace/name
    victim_uid: str
    preemptor_kind: str  # pod | podgroup
    preemptor_uid: str
    node: str  # the preemptor's nominated node ("cluster" when a PodGroup preempted as one)
    when: str  # the Event's lastTimestamp


@dataclass(frozen=True, slots=True)
class Preemptor:
    """Who preempted: a pod (and the PodGroup it belongs to, if any), or a PodGroup as one."""

    kind: str  # pod | podgroup
    pod: str = ""  # namespace/name of the preempting pod ("" for a PodGroup, or a pod no longer here)
    group: str = ""  # namespace/name of its v1.36 PodGroup ("" for none)
    uid: str = ""

    @property
    def text(self) -> str:
        """``pod group default/train for pod default/train-0``, ``pod group default/train, as one``, ..."""
        if self.kind == "podgroup":
            return f"pod group {self.group}, as one" if self.group else f"a pod group no longer here (uid {self.uid})"
        if self.group and self.pod:
            return f"pod group {self.group} for pod {self.pod}"
        return f"pod {self.pod}" if self.pod else f"a pod no longer here (uid {self.uid})"

    @property
    def group_url(self) -> str:
        """The preempting PodGroup's page ("" for none)."""
        return _group_url(self.group)


def _group_url(group: str) -> str:
    if not group:
        return ""
    namespace, _, name = group.partition("/")
    return f"/ui/groups/{namespace}/{POD_GROUP_V1ALPHA2}/{name}"


@dataclass(slots=True)
class Victim:
    """A preempted pod as it is now: terminating on its node for the rest of its grace period, or gone."""

    pod: str  # namespace/name
    node: str  # where it ran ("" when no record says)
    state: str  # terminating | gone | running (not deleted: a pod of that name made again)
    grace_left: float | None = None  # seconds of its grace period left while terminating
    pod_group: str = ""  # namespace/name of its PodGroup
    whole_group: bool = False  # evicted with its whole PodGroup (disruptionMode PodGroup)

    @property
    def name(self) -> str:
        """The pod's name."""
        return self.pod.partition("/")[2]

    @property
    def group_url(self) -> str:
        """Its PodGroup's page ("" for none)."""
        return _group_url(self.pod_group)

    @property
    def state_text(self) -> str:
        """``terminating, 17 s of its grace period left`` / ``gone``."""
        if self.state != "terminating":
            return self.state
        if self.grace_left is None:
            return "terminating"
        if self.grace_left <= 0:
            return "terminating, its grace period is over"
        return f"terminating, {duration_text(self.grace_left)} of its grace period left"


@dataclass(slots=True)
class Preemption:
    """One preemption made for a gang: by a member's own PostFilter (DefaultPreemption), or by the group as one."""

    by_group: bool  # the group preempted as one (WorkloadAwarePreemption)
    pod: str  # the member whose attempt made it (for the group: the first such attempt found)
    attempt: int
    started: float  # unix time of that attempt
    node: str  # the member's nominated node ("" for the group: its victims may be anywhere)
    victims: list[Victim]

    @property
    def attempt_url(self) -> str:
        """That attempt on the member's pod page."""
        return f"/ui/pods/{self.pod}?attempt={self.attempt}"

    @property
    def ago(self) -> str:
        """How long ago the attempt started."""
        return duration_text(time.time() - self.started)

    @property
    def terminating(self) -> int:
        """Victims still terminating."""
        return sum(1 for v in self.victims if v.state == "terminating")


@dataclass(slots=True)
class PreemptedMember:
    """A pod of the gang that another's preemption deleted."""

    pod: str  # namespace/name
    node: str
    by: Preemptor
    when: str  # the Event's time
    victim: Victim

    @property
    def name(self) -> str:
        """The pod's name."""
        return self.pod.partition("/")[2]


@dataclass(slots=True)
class GangPreemption:
    """A gang's preemption on its page: what it preempted, where it stands, and its pods others preempted."""

    status: str  # waiting | turned back | could not preempt | bound | "" (nothing to say of the latest cycle)
    message: str  # the latest cycle's message when turned back or not able to preempt
    as_one: bool  # the group preempts as one (the latest cycle ran workload-aware preemption)
    preemptions: list[Preemption] = field(default_factory=list)  # newest first
    nominated: list[tuple[str, str]] = field(default_factory=list)  # members nominated now: pod, node
    preempted_members: list[PreemptedMember] = field(default_factory=list)
    disruption_mode: str = ""  # the gang's PodGroup spec.disruptionMode (v1.36)

    @property
    def shown(self) -> bool:
        """Whether there is anything to show."""
        return bool(self.status or self.preemptions or self.nominated or self.preempted_members)

    @property
    def victims(self) -> int:
        """Pods preempted for the gang (in the preemptions shown)."""
        return sum(len(p.victims) for p in self.preemptions)

    @property
    def terminating(self) -> int:
        """Of them, those still terminating."""
        return sum(p.terminating for p in self.preemptions)


# ---------------------------------------------------------------------------------------------- reading


def preempted_events(web: WebService, namespace: str | None = None) -> list[PreemptedEvent]:
    """The newest ``Preempted`` Events kube-scheduler wrote on victims (of ``namespace``, else of every one)."""
    found, _ = web.store.list("Event", namespace, field_selector=f"reason={PREEMPTED}")
    found.sort(key=lambda o: (str(o.get("lastTimestamp") or ""), int(o["metadata"]["resourceVersion"])), reverse=True)
    return [e for e in (_parse(o) for o in found[:EVENTS_READ]) if e is not None]


def _parse(event: Obj) -> PreemptedEvent | None:
    involved = event.get("involvedObject") or {}
    match = _PREEMPTED_BY.match(str(event.get("message") or ""))
    if match is None or involved.get("kind") != "Pod":
        return None
    kind, uid, node = match.groups()
    victim = f"{involved.get('namespace') or 'default'}/{involved.get('name') or ''}"
    when = str(event.get("lastTimestamp") or event.get("eventTime") or "")
    return PreemptedEvent(victim, str(involved.get("uid") or ""), kind, uid, node, when)


def scheduling_group(row: PodRow) -> str:
    """``namespace/name`` of the v1.36 PodGroup a pod names in ``spec.schedulingGroup`` ("" for none)."""
    group = (row.obj.get("spec") or {}).get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return f"{row.namespace}/{name}" if name else ""


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def grace_left(row: PodRow, now: float | None = None) -> float | None:
    """Seconds until a terminating pod's ``deletionTimestamp`` (when its grace period ends)."""
    when = parse_time((row.obj.get("metadata") or {}).get("deletionTimestamp"))
    if when is None:
        return None
    return when.timestamp() - (time.time() if now is None else now)


class PreemptionIndex:
    """Who preempted whom, from the ``Preempted`` Events and the pods as they are now; built once per request."""

    def __init__(self, web: WebService, snapshot: PodSnapshot, namespace: str | None = None) -> None:
        self.events = preempted_events(web, namespace)
        self.rows: dict[str, PodRow] = {}
        self.pods_by_uid: dict[str, PodRow] = {}
        self.groups_by_uid: dict[str, str] = {}
        if not self.events:
            return
        victims = {e.victim for e in self.events}
        preemptors = {e.preemptor_uid for e in self.events if e.preemptor_kind == "pod"}
        for row in snapshot.rows:
            if row.key in victims:
                self.rows[row.key] = row
            uid = _uid(row.obj)
            if uid in preemptors:
                self.pods_by_uid[uid] = row
        if any(e.preemptor_kind == "podgroup" for e in self.events):
            for entry in web.store.select(POD_GROUP_V1ALPHA2).items:
                self.groups_by_uid[_uid(entry.obj)] = f"{entry.namespace}/{entry.name}"

    def preemptor(self, event: PreemptedEvent) -> Preemptor:
        """The pod or PodGroup an Event names, as far as the cluster still holds it."""
        if event.preemptor_kind == "podgroup":
            group = self.groups_by_uid.get(event.preemptor_uid, "")
            return Preemptor("podgroup", group=group, uid=event.preemptor_uid)
        row = self.pods_by_uid.get(event.preemptor_uid)
        if row is None:
            return Preemptor("pod", uid=event.preemptor_uid)
        return Preemptor("pod", pod=row.key, group=scheduling_group(row), uid=event.preemptor_uid)

    def of_victim(self, pod: str, uid: str = "") -> PreemptedEvent | None:
        """The newest Event that says why ``pod`` was preempted (of that uid, when given)."""
        return next((e for e in self.events if e.victim == pod and (not uid or e.victim_uid == uid)), None)

    def by_preemptors(self, uids: Iterable[str]) -> list[PreemptedEvent]:
        """The Events of the victims these pods or PodGroups preempted, newest first."""
        wanted = set(uids)
        return [e for e in self.events if e.preemptor_uid in wanted]

    def victim(self, pod: str, node: str = "", now: float | None = None) -> Victim:
        """A victim as it is now. A pod of that name that is not being deleted was made again: the victim is gone."""
        row = self.rows.get(pod)
        if row is None or not row.terminating:
            return Victim(pod, node, "gone")
        return Victim(pod, node or row.node, "terminating", grace_left(row, now), scheduling_group(row))


def terminating_victims(index: PreemptionIndex, preemptor_uids: Iterable[str]) -> list[Victim]:
    """The victims of these pods or PodGroups that are still terminating (what a gang waiting for preemption waits
    for)."""
    out: dict[str, Victim] = {}
    for event in index.by_preemptors(preemptor_uids):
        row = index.rows.get(event.victim)
        if row is None or not row.terminating or (event.victim_uid and _uid(row.obj) != event.victim_uid):
            continue
        out.setdefault(event.victim, index.victim(event.victim))
    return list(out.values())


# ---------------------------------------------------------------------------------------------- a gang's page


def gang_preemption(
    web: WebService,
    index: PreemptionIndex,
    *,
    namespace: str,
    pod_group: str,
    group_obj: Obj | None,
    members: Sequence[PodRow],
    history: Mapping[str, Sequence[AttemptSummary]],
    waiting: bool,
    settled: bool,
    latest_record: Obj | None,
) -> GangPreemption:
    """A gang's preemption: ``pod_group`` the v1.36 PodGroup it is (``namespace/name``, "" for other gangs),
    ``members`` its pods on the page, ``history`` their attempts (newest first), ``waiting`` whether it waits for
    preemption now, ``settled`` whether it is bound (or its quorum is), ``latest_record`` its latest PodGroup cycle's
    record."""
    preemptions = _preemptions(web.results, index, history)
    as_one = bool(latest_record and "preemption" in latest_record) or any(p.by_group for p in preemptions)
    status, message = "", ""
    if waiting:
        status = "waiting"
    elif settled:
        status = "bound" if preemptions else ""
    elif latest_record is not None and latest_record.get("outcome") != "Scheduled":
        group_try = latest_record.get("preemption")
        if isinstance(group_try, Mapping) and group_try.get("status") != "success":
            status, message = "could not preempt", str(group_try.get("status") or "")
        elif preemptions and _made_in_latest_cycle(preemptions, history):
            status, message = "turned back", str(latest_record.get("message") or "")
    nominated = [(row.key, row.nominated) for row in members if row.nominated and not row.bound]
    spec = (group_obj or {}).get("spec") or {}
    return GangPreemption(
        status,
        message,
        as_one,
        preemptions[:PREEMPTIONS_SHOWN],
        nominated,
        _preempted_members(web.results, index, namespace, pod_group, members),
        str(spec.get("disruptionMode") or ""),
    )


def _made_in_latest_cycle(preemptions: Sequence[Preemption], history: Mapping[str, Sequence[AttemptSummary]]) -> bool:
    """Whether a member preempted in its latest attempt (the cycle that turned the gang back)."""
    latest = {pod: attempts[0]["attempt"] for pod, attempts in history.items() if attempts}
    return any(not p.by_group and latest.get(p.pod) == p.attempt for p in preemptions)


def _preemptions(
    results: Results, index: PreemptionIndex, history: Mapping[str, Sequence[AttemptSummary]]
) -> list[Preemption]:
    """Every preemption the members' attempts recorded, newest first; the group's (recorded in each member's attempt
    of its cycle) once."""
    out: list[Preemption] = []
    seen_group: set[tuple[str, ...]] = set()
    for pod, attempts in history.items():
        for a in attempts:
            record = a.get("podGroup") or {}
            group_try = record.get("preemption")
            if isinstance(group_try, Mapping) and group_try.get("status") == "success" and group_try.get("victims"):
                key = tuple(str(v) for v in group_try["victims"])
                if key not in seen_group:
                    seen_group.add(key)
                    victims = _group_victims(index, key, record.get("preemptionVictims"))
                    out.append(Preemption(True, pod, int(a["attempt"]), float(a["startedAt"] or 0.0), "", victims))
            if a.get("victims"):
                node = a.get("nominatedNode") or _postfilter_node(results, pod, int(a["attempt"]))
                victims = [index.victim(str(v), node) for v in a["victims"]]
                out.append(Preemption(False, pod, int(a["attempt"]), float(a["startedAt"] or 0.0), node, victims))
    out.sort(key=lambda p: -p.started)
    _name_victims_groups(results, out)
    return out


def _group_victims(index: PreemptionIndex, keys: Sequence[str], recorded: object) -> list[Victim]:
    """The group's victims with the nodes and groups its record gives (older records name the pods alone)."""
    detail = {str(v.get("pod")): v for v in recorded if isinstance(v, Mapping)} if isinstance(recorded, list) else {}
    victims = []
    for key in keys:
        entry = detail.get(key) or {}
        victim = index.victim(key, str(entry.get("node") or ""))
        victim.pod_group = str(entry.get("podGroup") or victim.pod_group or "")
        victim.whole_group = bool(entry.get("wholeGroup"))
        victims.append(victim)
    return victims


def _postfilter_node(results: Results, pod: str, attempt: int) -> str:
    """The node a member's preemption nominated when its attempt no longer says (the group turned it back)."""
    namespace, _, name = pod.partition("/")
    detail = results.get_attempt(namespace, name, attempt, AttemptQuery(page_size=1, top=0))
    postfilter = detail.get("postfilter") if detail is not None else None
    return str((postfilter or {}).get("nominatedNode") or "")


def _name_victims_groups(results: Results, preemptions: Sequence[Preemption]) -> None:
    """The PodGroups of victims no longer in the cluster that no record names, from their own last attempts."""
    looked_up = 0
    for p in preemptions:
        for v in p.victims:
            if v.pod_group or v.state != "gone" or looked_up >= GONE_VICTIMS_LOOKED_UP:
                continue
            looked_up += 1
            v.pod_group = _recorded_group(results, v.pod)


def _recorded_group(results: Results, pod: str) -> str:
    """The PodGroup a pod's newest attempt tried it in ("" for none)."""
    namespace, _, name = pod.partition("/")
    for a in results.list_attempts(namespace, name):
        group = (a.get("podGroup") or {}).get("podGroup")
        if group:
            return str(group)
    return ""


def _preempted_members(
    results: Results, index: PreemptionIndex, namespace: str, pod_group: str, members: Sequence[PodRow]
) -> list[PreemptedMember]:
    """The gang's pods another's preemption deleted: those still terminating, and (for a v1.36 PodGroup) those gone
    whose attempts name the group."""
    present = {row.key: row for row in members}
    out: list[PreemptedMember] = []
    looked_up = 0
    for event in index.events:
        if event.victim.partition("/")[0] != namespace or any(m.pod == event.victim for m in out):
            continue
        row = present.get(event.victim)
        if row is not None:
            if not row.terminating or _uid(row.obj) not in ("", event.victim_uid):
                continue
        else:
            if not pod_group or looked_up >= GONE_VICTIMS_LOOKED_UP or event.victim in index.rows:
                continue
            looked_up += 1
            if _recorded_group(results, event.victim) != pod_group:
                continue
        victim = index.victim(event.victim, row.node if row is not None else "")
        victim.pod_group = pod_group
        node = victim.node or (event.node if event.preemptor_kind == "pod" else "")
        out.append(PreemptedMember(event.victim, node, index.preemptor(event), event.when, victim))
    return out


# ---------------------------------------------------------------------------------------------- a victim's page


@dataclass(slots=True)
class PreemptedBy:
    """On a victim's pod page: who preempted it, where, and how long it keeps its node."""

    by: Preemptor
    node: str
    when: str
    grace_left: float | None


def preempted_by(web: WebService, row: PodRow, events: Sequence[Obj]) -> PreemptedBy | None:
    """Who preempted this pod, from its newest ``Preempted`` Event (``events``: the Events about it)."""
    uid = _uid(row.obj)
    parsed = [e for e in (_parse(o) for o in events if o.get("reason") == PREEMPTED) if e is not None]
    event = next((e for e in parsed if not uid or not e.victim_uid or e.victim_uid == uid), None)
    if event is None:
        return None
    by = Preemptor(event.preemptor_kind, uid=event.preemptor_uid)
    if event.preemptor_kind == "podgroup":
        for entry in web.store.select(POD_GROUP_V1ALPHA2).items:
            if _uid(entry.obj) == event.preemptor_uid:
                by = Preemptor("podgroup", group=f"{entry.namespace}/{entry.name}", uid=event.preemptor_uid)
                break
    else:
        for other in web.pod_index.get(web.store).rows:
            if _uid(other.obj) == event.preemptor_uid:
                by = Preemptor("pod", pod=other.key, group=scheduling_group(other), uid=event.preemptor_uid)
                break
    node = row.node or (event.node if event.preemptor_kind == "pod" else "")
    return PreemptedBy(by, node, event.when, grace_left(row) if row.terminating else None)
