"""Writes source events into the simulator, one at a time and in order, applying the mirroring rules.

Each event is applied completely before the next one starts: while the simulator is unreachable the
sink retries the same event with capped backoff, so nothing is lost or reordered. Rejections (invalid,
forbidden) are logged and counted, then skipped: retrying the same request cannot help.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from syncer import translate
from syncer.backoff import Backoff
from syncer.kinds import BY_NAME, JOB, POD, PVC, RESOURCE_CLAIM, Kind
from syncer.kube import AlreadyExists, ApiProblem, Conflict, NotFound, Rejected, TargetApi, Unavailable
from syncer.metrics import Metrics
from syncer.objects import Obj
from syncer.state import Mirror, MirrorState

log = logging.getLogger("kss.syncer")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
# Marks the end of a (re)list: mirrored objects of the scope that the list did not return are deleted.
SYNCED = "SYNCED"
# Dependents a simulator controller cannot adopt: a Job's pods select the Job's uid (a new one in the simulator),
# and the CronJob controller adopts no Jobs. With their controller's kind mirrored, they are never copied: the
# simulator's controller makes its own.
_NEVER_ADOPTED = {("Pod", "Job"), ("Job", "CronJob")}
# How long a create waits for an object of its name that is being deleted (finalizers hold it) to go, and in how
# many tries: the sink applies one event at a time, so a stuck deletion must not hold every later event for long.
_TERMINATING_WAIT = 30.0
_TERMINATING_ATTEMPTS = 64  # only matters for a backoff without delays


@dataclass(frozen=True, slots=True)
class Event:
    """One change to apply: a source object ADDED/MODIFIED/DELETED, or the SYNCED end of a list."""

    type: str
    kind: Kind
    obj: Obj = field(default_factory=dict)
    # From the first list of this run: a pod the source already scheduled arrives bound (existing load).
    initial: bool = False
    # SYNCED: the list's scope and the source uids it returned.
    namespace: str | None = None
    present: frozenset[str] = frozenset()


class Stopped(Exception):
    """The syncer is shutting down while an event still waited for the simulator."""


class Sink:
    """Applies events to the simulator (``TargetApi``) and keeps ``MirrorState``."""

    def __init__(
        self,
        target: TargetApi,
        *,
        state: MirrorState | None = None,
        metrics: Metrics | None = None,
        backoff: Backoff | None = None,
        sleep: Callable[[float], None] = time.sleep,
        stop: threading.Event | None = None,
    ) -> None:
        self.target = target
        self.state = state if state is not None else MirrorState()  # an empty state is falsy (len 0)
        self.metrics = metrics or Metrics()
        self.backoff = backoff or Backoff()
        self._sleep = sleep
        self._stop = stop or threading.Event()
        # The kinds this run mirrors (the workload rules depend on which controllers the simulator runs for it).
        self.mirrored_kinds: frozenset[str] = frozenset()

    # ------------------------------------------------------------------------------------------ loop

    def run(self, events: queue.Queue[Event], *, max_events: int | None = None, poll: float = 0.2) -> int:
        """Apply events from the queue until stopped (or ``max_events`` were applied); returns how many."""
        applied = 0
        try:
            while not self._stop.is_set() and (max_events is None or applied < max_events):
                try:
                    event = events.get(timeout=poll)
                except queue.Empty:
                    self.state.flush()  # idle: what the state file does not hold yet is written now
                    continue
                self.metrics.queue_depth.set(events.qsize())
                try:
                    self.apply(event)
                except Stopped:
                    return applied
                applied += 1
            return applied
        finally:
            self.state.flush()

    def apply(self, event: Event) -> None:
        """Apply one event, retrying while the simulator is unreachable (raises ``Stopped`` on shutdown)."""
        attempt = 0
        while True:
            try:
                self._apply_once(event)
                return
            except Unavailable as exc:
                attempt += 1
                delay = self.backoff.delay(attempt)
                self.metrics.count(event.kind.name, "retried")
                log.warning("simulator unavailable (%s); retrying %s in %.1fs", exc, self._what(event), delay)
                if self._stop.is_set():
                    raise Stopped() from exc
                self._sleep(delay)
                if self._stop.is_set():
                    raise Stopped() from exc
            except ApiProblem as exc:
                self.metrics.count(event.kind.name, "failed")
                log.error("failed %s %s: %s", event.type.lower(), self._what(event), exc)
                return

    def seed(self, kinds: tuple[Kind, ...]) -> int:
        """Adopt what an earlier run mirrored (objects carrying the source-uid annotation); returns how many.

        After a restart this lets deletions that happened in the source meanwhile reach the simulator. Mirrors the
        state file kept whose copy is gone from the simulator become tombstones: the simulator deleted them (while
        the syncer was stopped, or while their source copy did not change), so they are not created again.
        """
        found = 0
        # The simulator's controller of each copy: once every kind is read, the source uid it mirrors is known.
        controlled: list[tuple[Mirror, tuple[str, str, str]]] = []
        source_uid_of: dict[str, str] = {}
        # What the simulator holds of each kind: its objects' uids, names, and the source uids they carry.
        simulator_uids: set[str] = set()
        names: set[tuple[str, str, str]] = set()
        annotated: set[str] = set()
        for kind in kinds:
            attempt = 0
            while True:
                try:
                    objects = self.target.list(kind)
                    break
                except Unavailable as exc:
                    attempt += 1
                    log.warning("simulator unavailable (%s); listing %s again", exc, kind.name)
                    if self._stop.is_set():
                        raise Stopped() from exc
                    self._sleep(self.backoff.delay(attempt))
            for obj in objects:
                m = translate.meta(obj)
                uid = (m.get("annotations") or {}).get(translate.SOURCE_UID_ANNOTATION)
                simulator_uids.add(str(m.get("uid")))
                names.add((kind.name, *translate.key(obj)))
                if uid:
                    annotated.add(uid)
                if uid and self.state.get(uid) is None:
                    namespace, name = translate.key(obj)
                    mirror = Mirror(kind.name, namespace, name, m.get("uid"))
                    self.state.put(uid, mirror)
                    source_uid_of[str(m.get("uid"))] = uid
                    controller = translate.controller_of(obj)
                    if controller is not None:
                        controlled.append((mirror, controller))
                    found += 1
        for mirror, (api_version, controller_kind, simulator_uid) in controlled:
            if simulator_uid in source_uid_of:
                mirror.controller = (api_version, controller_kind, source_uid_of[simulator_uid])
        self._tombstone_gone({k.name for k in kinds}, simulator_uids, names, annotated)
        return found

    def _tombstone_gone(
        self, kinds: set[str], simulator_uids: set[str], names: set[tuple[str, str, str]], annotated: set[str]
    ) -> None:
        """Make a tombstone of every mirror of ``kinds`` the simulator no longer holds (by its uid, the source uid it
        carries, or, with no uid recorded, its name)."""
        gone = 0
        for uid, mirror in self.state.live():
            if mirror.kind not in kinds or uid in annotated:
                continue
            if mirror.simulator_uid is not None:
                present = mirror.simulator_uid in simulator_uids
            else:
                present = (mirror.kind, mirror.namespace, mirror.name) in names
            if present:
                continue
            self.state.mark_deleted_in_simulator(uid)
            self.metrics.count(mirror.kind, "tombstoned")
            what = (
                f"{mirror.kind} {mirror.namespace}/{mirror.name}"
                if mirror.namespace
                else f"{mirror.kind} {mirror.name}"
            )
            log.info("%s was deleted in the simulator since it was mirrored: it will not be recreated", what)
            gone += 1
        if gone:
            log.warning(
                "%d objects mirrored earlier are gone from the simulator and stay deleted (delete the state file to "
                "mirror them again)",
                gone,
            )

    # ------------------------------------------------------------------------------------------ rules

    @staticmethod
    def _what(event: Event) -> str:
        if event.type == SYNCED:
            return f"{event.kind.name} list" + (f" in {event.namespace}" if event.namespace else "")
        return translate.describe(event.kind, event.obj)

    def _apply_once(self, event: Event) -> None:
        if event.type in (ADDED, MODIFIED):
            self._upsert(event)
        elif event.type == DELETED:
            self._delete(event.kind, translate.source_uid(event.obj), "deleted in the source", event.obj)
        elif event.type == SYNCED:
            for uid in self.state.uids(event.kind.name, event.namespace):
                if uid not in event.present:
                    self._delete(event.kind, uid, "gone from the source")

    def _run_by_simulator(self, kind: Kind, controller: tuple[str, str, str] | None) -> str | None:
        """Why the object whose source controller is ``controller`` belongs to a controller of the simulator (its
        copy of that controller decides what exists, as kube-controller-manager does in the source), or None."""
        if controller is None:
            return None
        api_version, controller_kind, uid = controller
        workload = BY_NAME.get(controller_kind)
        if (
            workload is None
            or not workload.workload
            or workload.api_version != api_version
            or controller_kind not in self.mirrored_kinds
        ):
            return None
        if (kind.name, controller_kind) in _NEVER_ADOPTED:
            return f"its {controller_kind} runs in the simulator, which makes its own"
        mirror = self.state.get(uid)
        if mirror is None or mirror.deleted_in_simulator:
            return None  # not mirrored (yet): this object is copied, and adopted when its controller arrives
        return f"its {controller_kind} {mirror.namespace}/{mirror.name} is run by the simulator's controller"

    def _pvc_uid(self, namespace: str, name: str) -> str | None:
        mirror = self.state.find(PVC.name, namespace, name)
        if mirror is not None and mirror.simulator_uid:
            return mirror.simulator_uid
        try:
            return translate.meta(self.target.get(PVC, namespace, name)).get("uid")
        except NotFound:
            return None

    def _upsert(self, event: Event) -> None:
        kind, source = event.kind, event.obj
        uid = translate.source_uid(source)
        what = translate.describe(kind, source)
        mirror = self.state.get(uid)
        if mirror is not None and mirror.deleted_in_simulator:
            self.metrics.count(kind.name, "ignored_deleted_in_simulator")
            log.info("ignored update of %s: deleted in the simulator", what)
            return
        controller = translate.controller_of(source)
        run_by = self._run_by_simulator(kind, controller)
        if kind.name == RESOURCE_CLAIM.name and controller is not None and controller[1] == "Pod":
            run_by = "its pod's claim is made by the simulator's resourceclaim controller from the pod's template"
        if run_by is not None:
            self.metrics.count(kind.name, "left_to_controller")
            log.info("%s %s: %s", "ignored update of" if mirror is not None else "left out", what, run_by)
            return
        if mirror is None and kind is JOB and translate.is_finished_job(source):
            # Its status is not copied: the simulator's Job controller would run it all over again.
            self.metrics.count(kind.name, "ignored_finished")
            log.info("left out %s: finished in the source", what)
            return
        scheduled_pod = kind is POD and translate.is_scheduled(source)
        if mirror is not None and scheduled_pod:
            self.metrics.count(kind.name, "ignored_scheduled")
            log.info("ignored update of %s: scheduled in the source", what)
            return
        keep_binding = event.initial and mirror is None
        want = translate.desired(kind, source, keep_binding=keep_binding, pvc_uid=self._pvc_uid)
        namespace, name = translate.key(want)
        if mirror is not None:
            self._update(kind, uid, mirror, want, None)
            return
        replaced = self.state.holder(kind.name, namespace, name)
        if replaced is not None:
            # The name mirrors another source object: the source deleted it and made a new one of that name (a
            # StatefulSet's pod, ``kubectl replace --force``) while the watch was down, and the relist shows the new
            # uid before the SYNCED that drops the old. A different object: its copy must not be adopted as this one.
            self._delete(kind, replaced, "replaced in the source by a new object of that name")
        created = self._create(kind, uid, want, controller, scheduled_pod=scheduled_pod)
        if created is None:
            return
        mirror = Mirror(kind.name, namespace, name, translate.meta(created).get("uid"))
        mirror.controller = controller
        mirror.applied = {**translate.without_status(want), "status": created.get("status")}
        self.state.put(uid, mirror)
        self.metrics.count(kind.name, "created")
        node = (want.get("spec") or {}).get("nodeName") if kind is POD else None
        log.info("created %s%s", what, f" bound to {node} (existing load)" if node else "")
        if kind.mirror_status or node:
            self._sync_status(kind, uid, mirror, want)

    def _create(
        self, kind: Kind, uid: str, want: Obj, controller: tuple[str, str, str] | None, *, scheduled_pod: bool
    ) -> Obj | None:
        """Create the copy of source object ``uid``; None when there is nothing more to do (an object of that name
        was adopted, or the name stayed taken by an object being deleted).

        An object of that name that is being deleted (``deletionTimestamp``: finalizers hold it) is never adopted:
        it is on its way out, so the create waits for it to go (capped backoff, ``_TERMINATING_WAIT`` seconds at
        most, keeping the events in order) and gives up after that; the object's next event creates it then.
        """
        namespace, name = translate.key(want)
        what = translate.describe(kind, want)
        waited = 0.0
        attempt = 0
        while True:
            try:
                # Status goes along: servers that take it on create (nodes) need no second request.
                return self.target.create(kind, want)
            except (AlreadyExists, Rejected) as exc:
                # Rejected too: a create of a built-in object (system-* PriorityClasses) fails validation first.
                try:
                    current: Obj | None = self.target.get(kind, namespace, name)
                except NotFound:
                    if isinstance(exc, Rejected):
                        raise exc from None
                    current = None  # deleted between our create and get: the name is free now
                if current is not None and not translate.meta(current).get("deletionTimestamp"):
                    self._adopt(kind, uid, want, current, controller, scheduled_pod=scheduled_pod)
                    return None
            attempt += 1
            if attempt > _TERMINATING_ATTEMPTS or waited >= _TERMINATING_WAIT:
                self.metrics.count(kind.name, "failed")
                log.error(
                    "failed create of %s: the simulator's object of that name is still being deleted after %.1fs; "
                    "the next event of it creates it",
                    what,
                    waited,
                )
                return None
            delay = self.backoff.delay(attempt) if current is not None else 0.0
            if delay:
                log.info("waiting %.1fs to create %s: its name is held by an object being deleted", delay, what)
                self._sleep(delay)
                waited += delay
            if self._stop.is_set():
                raise Stopped()

    def _adopt(
        self,
        kind: Kind,
        uid: str,
        want: Obj,
        current: Obj,
        controller: tuple[str, str, str] | None,
        *,
        scheduled_pod: bool,
    ) -> None:
        """Take the simulator's object of ``want``'s name as the copy of source object ``uid`` (it existed already:
        made by a user, an earlier run, or built in), then apply the update rules to it."""
        namespace, name = translate.key(want)
        what = translate.describe(kind, want)
        mirror = Mirror(kind.name, namespace, name, translate.meta(current).get("uid"))
        mirror.controller = controller
        self.state.put(uid, mirror)
        self.metrics.count(kind.name, "adopted")
        log.info("adopted %s: it already exists in the simulator", what)
        if scheduled_pod:
            self.metrics.count(kind.name, "ignored_scheduled")
            log.info("ignored update of %s: scheduled in the source", what)
            return
        self._update(kind, uid, mirror, want, current)

    # ------------------------------------------------------------------------------------------ bulk create

    def bulk_body(self, event: Event) -> Obj | None:
        """The body to create for ``event`` in a page of the bulk create (``kss import``), or None when ``apply``
        must handle it: not a first-list ADDED, already mirrored, or left out (``apply`` then counts and logs why).

        The body carries the status only where ``apply`` would write it after the create (kinds whose status is
        mirrored, pods bound in the source): the bulk create keeps what it is sent, in the same write.
        """
        kind, source = event.kind, event.obj
        if event.type != ADDED or not event.initial or self.state.get(translate.source_uid(source)) is not None:
            return None
        controller = translate.controller_of(source)
        if self._run_by_simulator(kind, controller) is not None:
            return None
        if kind.name == RESOURCE_CLAIM.name and controller is not None and controller[1] == "Pod":
            return None
        if kind is JOB and translate.is_finished_job(source):
            return None
        want = translate.desired(kind, source, keep_binding=True, pvc_uid=self._pvc_uid)
        if not (kind.mirror_status or (kind is POD and translate.is_scheduled(want))):
            want.pop("status", None)
        return want

    def bulk_created(self, event: Event, want: Obj, answer: Obj) -> None:
        """Take the bulk create's ``answer`` for ``want`` (``bulk_body(event)``): remember the copy it created, or
        hand an object it did not create to ``apply``, whose create rules decide (adopt one that exists, including
        a built-in object whose create fails validation first; count and log a refusal; retry while unavailable).
        """
        if not answer.get("uid"):
            self.apply(event)
            return
        kind = event.kind
        what = translate.describe(kind, event.obj)
        namespace, name = translate.key(want)
        mirror = Mirror(kind.name, namespace, name, str(answer["uid"]))
        mirror.controller = translate.controller_of(event.obj)
        mirror.applied = want
        self.state.put(translate.source_uid(event.obj), mirror)
        self.metrics.count(kind.name, "created")
        node = (want.get("spec") or {}).get("nodeName") if kind is POD else None
        log.info("created %s%s", what, f" bound to {node} (existing load)" if node else "")

    def _update(self, kind: Kind, uid: str, mirror: Mirror, want: Obj, current: Obj | None) -> None:
        what = translate.describe(kind, want)
        if mirror.applied is None and current is None:
            try:
                current = self.target.get(kind, mirror.namespace, mirror.name)
            except NotFound:
                self._tombstone(kind, uid, what)
                return
        patch = translate.update_patch(kind, mirror.applied, want, current)
        base_status = (mirror.applied or current or {}).get("status")
        if patch:
            try:
                self.target.patch(kind, mirror.namespace, mirror.name, patch)
            except NotFound:
                self._tombstone(kind, uid, what)
                return
            except ApiProblem as exc:
                if isinstance(exc, Unavailable):
                    raise
                # Keep going from the new version: resending a rejected change with every update would fail alike.
                self.metrics.count(kind.name, "failed")
                log.error("failed update of %s: %s", what, exc)
            else:
                self.metrics.count(kind.name, "updated")
                log.info("updated %s (%s)", what, ", ".join(sorted(_paths(patch))))
        else:
            self.metrics.count(kind.name, "unchanged")
            log.debug("unchanged %s", what)
        mirror.applied = {**translate.without_status(want), "status": base_status}
        if kind.mirror_status:
            self._sync_status(kind, uid, mirror, want)

    def _sync_status(self, kind: Kind, uid: str, mirror: Mirror, want: Obj) -> None:
        applied = mirror.applied or {}
        patch = translate.status_patch(applied.get("status"), want.get("status"))
        if not patch:
            return
        what = translate.describe(kind, want)
        try:
            result = self.target.patch(kind, mirror.namespace, mirror.name, patch, status=True)
        except NotFound:
            self._tombstone(kind, uid, what)
            return
        applied["status"] = result.get("status", want.get("status"))
        mirror.applied = applied
        self.metrics.count(kind.name, "status_updated")
        log.info("updated status of %s", what)

    def _tombstone(self, kind: Kind, uid: str, what: str) -> None:
        self.state.mark_deleted_in_simulator(uid)
        self.metrics.count(kind.name, "tombstoned")
        log.info("ignored update of %s: deleted in the simulator (will not be recreated)", what)

    def _delete(self, kind: Kind, uid: str, why: str, source: Obj | None = None) -> None:
        mirror = self.state.get(uid)
        if mirror is None:
            return
        what = f"{kind.name} {mirror.namespace}/{mirror.name}" if mirror.namespace else f"{kind.name} {mirror.name}"
        if mirror.deleted_in_simulator:
            self.state.remove(uid)
            log.info("forgot %s (%s; already deleted in the simulator)", what, why)
            return
        # Gone during a watch gap (no object): the controller it had when mirrored.
        controller = translate.controller_of(source) if source is not None else mirror.controller
        run_by = self._run_by_simulator(kind, controller)
        if run_by is not None:
            # The source's controller removed it (a scale-down, a replacement): the simulator's decides alike.
            self.state.remove(uid)
            self.metrics.count(kind.name, "left_to_controller")
            log.info("forgot %s (%s): %s", what, why, run_by)
            return
        try:
            self.target.delete(kind, mirror.namespace or None, mirror.name, uid=mirror.simulator_uid)
        except NotFound:
            log.info("deleted %s (%s): already gone from the simulator", what, why)
        except Conflict:
            log.info("kept %s (%s): the simulator's object of that name is another one", what, why)
        else:
            log.info("deleted %s (%s)", what, why)
        self.state.remove(uid)
        self.metrics.count(kind.name, "deleted")


def _paths(patch: Obj, prefix: str = "") -> list[str]:
    """Top-level-ish paths a patch touches, for the log line (``spec.schedulingGates``, ``metadata.labels``)."""
    out: list[str] = []
    for k, v in patch.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict) and v and not prefix:
            out += _paths(v, f"{path}.")
        else:
            out.append(path)
    return out
