"""The PodGroup controller: scheduler-plugins' ``PodGroupReconciler`` (pkg/controllers/podgroup_controller.go)
over the virtual cluster, keeping each PodGroup's status current as it does on a real cluster.

One reconcile of a group, as upstream's:

- ``Finished`` and ``Failed`` are final: nothing more is done.
- ``Pending`` or ``Scheduling`` with no pod running and ``status.scheduleStartTime`` more than 48 hours after the
  group's creation: a Warning Event ``Timeout`` ("schedule time longer than 48 hours") and nothing more. Upstream
  never sets ``scheduleStartTime`` itself, so this only fires when someone else did (an import, a client).
- phase ``""`` becomes ``Pending``;
- ``Pending`` becomes ``Scheduling`` once the group has ``minMember`` pods, ``status.occupiedBy`` then naming the
  first pod's owners (``namespace/name``, sorted, comma-separated);
- any other phase: ``running``/``succeeded``/``failed`` counted from the pods' ``status.phase``; ``Pending`` when
  there are fewer than ``minMember`` pods, else ``Scheduling`` or ``Running`` (running + succeeded reach
  ``minMember``), ``Failed`` when some failed and failed + running + succeeded reach it, ``Finished`` when
  succeeded alone does.

A group's pods are those labelled ``scheduling.x-k8s.io/pod-group=<name>`` in every namespace: upstream lists
them without a namespace, so kss counts the same pods a real cluster's controller would. "The first pod" is the
first in the API's order (namespace, name); upstream takes whichever its informer cache lists first.

It runs as every controller here does (``loop.ReconcileLoop``), keeping an index of labelled pods (a pod change
queues the group it left as well as the one it joined). The status is written only when it differs (a merge
patch of the ``status`` subresource carrying the resourceVersion it was computed from, recomputed on a
conflict), and the Timeout Event is recorded once per group (one already recorded is found after a restart).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.cluster.storage.selectors import make_selector
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"  # v1alpha1.PodGroupLabel

PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"

COMPONENT = "PodGroupController"  # mgr.GetEventRecorderFor("PodGroupController")
TIMEOUT_REASON = "Timeout"
TIMEOUT_MESSAGE = "schedule time longer than 48 hours"
SCHEDULE_TIMEOUT = timedelta(hours=48)

WATCHED_KINDS = ("PodGroup", "Pod")

_Key = tuple[str, str]  # (namespace, name)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp; None when absent or unreadable (Go's zero time)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """The status fields the controller owns, as Go decodes them (absent = zero value)."""

    phase: str = ""
    occupied_by: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0

    @classmethod
    def of(cls, pg: Mapping[str, Any]) -> GroupStatus:
        """The owned fields of ``pg``'s status."""
        status = pg.get("status")
        if not isinstance(status, Mapping):
            return cls()
        return cls(
            phase=_str(status.get("phase")),
            occupied_by=_str(status.get("occupiedBy")),
            running=_int(status.get("running")),
            succeeded=_int(status.get("succeeded")),
            failed=_int(status.get("failed")),
        )

    def fields(self) -> dict[str, str | int]:
        """The JSON fields (all five, zero values included)."""
        return {
            "phase": self.phase,
            "occupiedBy": self.occupied_by,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }

    def patch_from(self, old: GroupStatus) -> Obj | None:
        """The merge patch of ``status`` turning ``old`` into this, or None when they are equal.

        Every field is ``omitempty`` upstream: one that became zero is removed (``null``), as the JSON merge
        patch controller-runtime computes between the old and new objects removes it.
        """
        before = old.fields()
        patch: Obj = {key: (value or None) for key, value in self.fields().items() if value != before[key]}
        return patch or None


def pod_counts(pods: Sequence[Mapping[str, Any]]) -> tuple[int, int, int]:
    """``getCurrentPodStats``: how many pods are Running, Succeeded, Failed (by ``status.phase``)."""
    running = succeeded = failed = 0
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running":
            running += 1
        elif phase == "Succeeded":
            succeeded += 1
        elif phase == "Failed":
            failed += 1
    return running, succeeded, failed


def occupied_by(pod: Mapping[str, Any]) -> str | None:
    """``fillOccupiedObj``: the pod's owners as ``namespace/name``, sorted and comma-separated; None without any."""
    meta = pod.get("metadata") or {}
    refs = meta.get("ownerReferences") or []
    if not refs:
        return None
    namespace = _str(meta.get("namespace"))
    return ",".join(sorted(f"{namespace}/{_str(ref.get('name'))}" for ref in refs))


def is_final(pg: Mapping[str, Any]) -> bool:
    """Finished and Failed groups are never reconciled again."""
    return GroupStatus.of(pg).phase in (FINISHED, FAILED)


def schedule_timed_out(pg: Mapping[str, Any]) -> bool:
    """Pending or Scheduling, no pod running, and ``scheduleStartTime`` more than 48 hours after creation."""
    status = GroupStatus.of(pg)
    if status.phase not in (PENDING, SCHEDULING) or status.running != 0:
        return False
    start = _time((pg.get("status") or {}).get("scheduleStartTime"))
    created = _time((pg.get("metadata") or {}).get("creationTimestamp"))
    # Go's zero time minus a creation time is a large negative duration: never a timeout.
    return start is not None and created is not None and start - created > SCHEDULE_TIMEOUT


def next_status(pg: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> GroupStatus:
    """The owned status after one reconcile of ``pg`` whose pods are ``pods`` (in list order)."""
    current = GroupStatus.of(pg)
    min_member = _int((pg.get("spec") or {}).get("minMember"))
    if current.phase in (FINISHED, FAILED):
        return current
    if current.phase == "":
        return replace(current, phase=PENDING)
    if current.phase == PENDING:
        if len(pods) < min_member:
            return current
        owners = occupied_by(pods[0]) if pods else None
        return replace(current, phase=SCHEDULING, occupied_by=owners if owners is not None else current.occupied_by)
    running, succeeded, failed = pod_counts(pods)
    phase = current.phase
    if len(pods) < min_member:
        phase = PENDING
    else:
        phase = RUNNING if succeeded + running >= min_member else SCHEDULING
        if failed != 0 and failed + running + succeeded >= min_member:
            phase = FAILED
        if succeeded >= min_member:
            phase = FINISHED
    return replace(current, phase=phase, running=running, succeeded=succeeded, failed=failed)


class PodGroupController(ReconcileLoop[_Key]):
    """Keeps every PodGroup's status current (see the module docstring); ``start``/``stop`` with the app."""

    name = "podgroup-controller"
    watched_kinds = WATCHED_KINDS

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        conflict_retries: int = 5,
        retry_base_seconds: float = 0.005,
        retry_max_seconds: float = 60.0,
    ) -> None:
        """A stopped controller over ``store``; ``conflict_retries``: how many times one reconcile recomputes
        after a resourceVersion conflict before it is put back with backoff."""
        super().__init__(store, clock=clock, retry_base_seconds=retry_base_seconds, retry_max_seconds=retry_max_seconds)
        self._conflict_retries = max(1, conflict_retries)
        self._group_of: dict[_Key, str] = {}  # labelled pod -> its pod-group label
        self._members: dict[str, set[_Key]] = {}  # pod-group label -> labelled pods, every namespace
        self._timeouts_recorded: set[str] = set()  # uids of groups whose Timeout Event exists

    def reset(self) -> None:
        self._group_of.clear()
        self._members.clear()
        self._timeouts_recorded.clear()

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[_Key]:
        meta = obj.get("metadata") or {}
        namespace, name = _str(meta.get("namespace")), _str(meta.get("name"))
        if kind == "PodGroup":
            if event_type == DELETED:
                self._timeouts_recorded.discard(_str(meta.get("uid")))
            return [(namespace, name)]
        group = None if event_type == DELETED else ((meta.get("labels") or {}).get(POD_GROUP_LABEL) or None)
        before = self._index_pod((namespace, name), group)
        # A relabelled pod concerns both groups, as controller-runtime maps an update's old and new objects.
        return [(namespace, g) for g in {before, group} if g is not None]

    def resync(self) -> list[_Key]:
        """Index every labelled pod and queue every group."""
        for entry in self.store.select("Pod").items:
            group = (entry.obj["metadata"].get("labels") or {}).get(POD_GROUP_LABEL)
            if group:
                self._index_pod((entry.namespace, entry.name), group)
        return [(entry.namespace, entry.name) for entry in self.store.select("PodGroup").items]

    def _index_pod(self, key: _Key, group: str | None) -> str | None:
        """Record ``key``'s pod-group label (None: unlabelled or gone); returns the one it had."""
        before = self._group_of.get(key)
        if before == group:
            return before
        if before is not None:
            members = self._members[before]
            members.discard(key)
            if not members:
                del self._members[before]
            del self._group_of[key]
        if group is not None:
            self._group_of[key] = group
            self._members.setdefault(group, set()).add(key)
        return before

    def reconcile(self, key: _Key) -> None:
        self._reconcile(*key)

    def _reconcile(self, namespace: str, name: str) -> None:
        """One reconcile of a group (module docstring); a conflict recomputes from the group as it is now."""
        conflict: Conflict | None = None
        for _ in range(self._conflict_retries):
            try:
                pg = self.store.read("PodGroup", namespace, name).obj  # read-only
            except NotFound:
                return  # deleted
            if is_final(pg):
                return
            if schedule_timed_out(pg):
                self._record_timeout(pg)
                return
            old = GroupStatus.of(pg)
            new = next_status(pg, self._pods_of(name))
            patch = new.patch_from(old)
            if patch is None:
                return
            body = {"metadata": {"resourceVersion": pg["metadata"]["resourceVersion"]}, "status": patch}
            try:
                self.store.patch("PodGroup", namespace, name, body, "merge", subresource="status")
            except NotFound:
                return
            except Conflict as exc:
                conflict = exc
                continue
            if new.phase != old.phase:
                log.debug("PodGroup %s/%s: %s -> %s", namespace, name, old.phase or '""', new.phase)
            return
        assert conflict is not None
        raise conflict

    def _pods_of(self, group: str) -> list[Obj]:
        """The pods labelled with ``group`` in every namespace, in (namespace, name) order (read-only)."""
        pods: list[Obj] = []
        for namespace, name in sorted(self._members.get(group, ())):
            try:
                pod = self.store.read("Pod", namespace, name).obj
            except NotFound:
                continue  # its deletion is in the inbox: the group comes round again
            if (pod["metadata"].get("labels") or {}).get(POD_GROUP_LABEL) == group:
                pods.append(pod)
        return pods

    def _record_timeout(self, pg: Obj) -> None:
        """The Warning Event ``Timeout`` about ``pg``, once per group (also across restarts)."""
        meta = pg["metadata"]
        uid = _str(meta.get("uid"))
        if uid in self._timeouts_recorded:
            return
        if not self._timeout_recorded(pg):
            self.store.create_event(pg, TIMEOUT_REASON, TIMEOUT_MESSAGE, type="Warning", component=COMPONENT)
            log.info("PodGroup %s/%s: %s", meta.get("namespace"), meta.get("name"), TIMEOUT_MESSAGE)
        self._timeouts_recorded.add(uid)

    def _timeout_recorded(self, pg: Obj) -> bool:
        meta = pg["metadata"]
        # Only the Timeout Events are read: an Event is held as its JSON, decoded when read (20,000 of them, kept).
        timeouts = make_selector("Event", None, f"reason={TIMEOUT_REASON}")
        for entry in self.store.select("Event", _str(meta.get("namespace")), timeouts).items:
            event = entry.obj
            if (
                event.get("reason") == TIMEOUT_REASON
                and (event.get("involvedObject") or {}).get("uid") == meta.get("uid")
                and (event.get("source") or {}).get("component") == COMPONENT
            ):
                return True
        return False
