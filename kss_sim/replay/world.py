"""The live workload controllers in a replay: ``kss serve``'s controllers over an in-memory store, on the virtual clock.

The replay's workload objects (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob) live in an in-memory
``ClusterStore`` (no database), with the nodes and every pod the controllers may own or adopt; the controllers of
``kss_sim/controllers/`` (``manager.WORKLOAD_CONTROLLERS``: the workload controllers, TTL-after-finished and the
garbage collector) are attached to it and settled by ``SteppedControllers`` whenever something changed, at the
current virtual instant, and again when one of their timers is due. Why a store and not a lighter object world of
the replay's own: docs/architecture.md ("The replay's object world").

The engine (``kss_sim/replay/engine.py``) talks to :class:`LiveControllers` as to its own workload controllers; they
act through its :class:`Engine` verbs:

- a pod a controller creates reaches the engine through ``create_pod`` (as a created pod does), with its controller
  as its owner and a run time: the template's ``kss.sigs.k8s.io/run-duration`` when it has one, else the workload's
  ``runFor`` of the object at the top of its chain of controllers (a Deployment's, a CronJob's);
- a pod a controller deletes (or the garbage collector) is deleted in the engine and from the store at once (a
  Job's pod once its controller takes the tracking finalizer off);
- what the engine does to a pod the controllers see: a binding makes it Running and Ready (the replay's pods start
  at once); a pod that ran its time Succeeds; one deleted, preempted or evicted is deleted;
- pods that reach the engine otherwise (a start snapshot's, an event's) are created in the store as they are (uids
  and owner references kept), so their controllers count or adopt them as upstream's ``ClaimPods`` does.

Names and uids the store gives (``generateName``, every new object's uid) are drawn from a Random seeded with the
run's seed (``uids.drawn_from``): the same workload, the same names. Objects the API would refuse are refused before
the run (``check_workload_object``: the API's own admission and validation, in a scratch store).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

from kss_sim.cluster.admission import uids
from kss_sim.cluster.errors import ApiError, NotFound
from kss_sim.cluster.storage.change_log import ADDED, DELETED
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.cronjob import CronJobController
from kss_sim.controllers.loop import ReconcileLoop
from kss_sim.controllers.manager import WORKLOAD_CONTROLLERS
from kss_sim.controllers.owned import controller_ref, key_of, meta
from kss_sim.controllers.pod_status import RUN_DURATION_ANNOTATION, parse_go_duration
from kss_sim.controllers.stepped import SteppedControllers
from kss_sim.kube.objects import Obj
from kss_sim.replay.workload import WorkloadError

log = logging.getLogger("kss.replay")

Key = tuple[str, str]  # (namespace, name)

KINDS = frozenset(("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"))
_MANAGER = "kss-replay"


class Engine(Protocol):
    """What the controllers ask of the replay engine (``kss_sim/replay/engine.py``'s ``Replay`` offers it). An
    engine may also offer ``create_object(obj) -> bool`` (an object such as a StatefulSet's claim, created as a
    create event would; False when one of that kind and name exists) and ``delete_object(kind, namespace, name)``;
    the replay's own StatefulSet controller uses them when they are there."""

    @property
    def now(self) -> float: ...

    def create_pod(self, pod: Obj, *, run_for: float | None, owner: str) -> None: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...

    def call_at(self, at: float, callback: Callable[[], None], *, holds_run: bool = True) -> None: ...

    def node_objects(self) -> list[Obj]: ...


def check_workload_object(obj: Obj) -> list[str]:
    """What keeps a workload object from running in a replay, each as ``path: message`` (empty: it runs): the kind,
    and what kube-apiserver's admission and validation refuse (asked of a scratch in-memory store)."""
    kind = obj.get("kind")
    if kind not in KINDS:
        return [f"kind: {kind!r} is not a workload kind ({', '.join(sorted(KINDS))})"]
    body = copy.deepcopy(obj)
    body.setdefault("metadata", {}).setdefault("namespace", "default")
    try:
        ClusterStore(None).create(str(kind), body)
    except ApiError as exc:
        causes = (exc.details or {}).get("causes") or []
        return [
            f"{c.get('field')}: {c.get('message')}" if c.get("field") else str(c.get("message")) for c in causes
        ] or [exc.message]
    return []


class LiveControllers:
    """The workload controllers of ``kss serve`` on a replay's virtual clock (module docstring); ``actions`` is the
    engine, ``epoch`` the wall time of virtual time 0."""

    KINDS = KINDS

    def __init__(self, actions: Engine, epoch: datetime, *, seed: int = 0) -> None:
        self._actions = actions
        self._epoch = epoch
        self._rng = random.Random(f"kss-replay-controllers/{seed}")
        with uids.drawn_from(self._rng):
            self.store = ClusterStore(None, clock=self._clock)
        self._loops: list[ReconcileLoop[Any]] = [c(self.store, clock=self._clock) for c in WORKLOAD_CONTROLLERS]
        self._stepped = SteppedControllers(self._loops)
        self._engine_pods: set[Key] = set()  # pods the engine holds, as the store knows them
        self._created: dict[Key, None] = {}  # pods the controllers made, for the engine, in creation order
        self._ending: dict[Key, None] = {}  # engine pods the store deletes (a controller, the garbage collector)
        self._run_for: dict[str, float | None] = {}  # a workload object's uid -> its runFor
        self._settle_due = False
        self._timers: set[tuple[float, bool]] = set()  # (virtual time, holds the run) of the timers asked for
        self.pods_created = 0
        self.store.add_listener(self._on_pod, ("Pod",))
        with uids.drawn_from(self._rng):
            self._stepped.attach()
        for node in actions.node_objects():  # nodes the engine held before the first workload object
            self.node_added(node)

    # --- the clock ----------------------------------------------------------------------------------------------
    def _clock(self) -> datetime:
        return self._epoch + timedelta(seconds=float(self._actions.now))

    def _virtual(self, when: datetime) -> float:
        return (when - self._epoch).total_seconds()

    # --- the engine's calls -------------------------------------------------------------------------------------
    def apply(self, action: str, kind: str, namespace: str, name: str, obj: Obj | None, run_for: float | None) -> None:
        """A create, update or delete of a workload object (an update of an unknown one creates it; a create of a
        known one updates it, as ``kubectl apply``); :class:`WorkloadError` names what the API refuses."""
        if kind not in KINDS:
            raise WorkloadError([f"{kind}: not a workload kind"])
        namespace = namespace or "default"
        with uids.drawn_from(self._rng):
            if action == "delete":
                with contextlib.suppress(NotFound):
                    self.store.delete(kind, namespace, name)
            elif action in ("create", "update") and obj is not None:
                self._put(kind, namespace, name, obj, run_for)
            else:
                raise WorkloadError([f"{kind} {namespace}/{name}: unknown action {action!r}"])
        self._wake()

    def _put(self, kind: str, namespace: str, name: str, obj: Obj, run_for: float | None) -> None:
        existing = self.store.get(kind, namespace, name)
        try:
            if existing is None:
                body = copy.deepcopy(obj)
                body.setdefault("metadata", {})["namespace"] = namespace
                stored = self.store.create(kind, body, manager=_MANAGER)
            else:
                body = copy.deepcopy(existing)
                new_meta = obj.get("metadata") or {}
                for field in ("labels", "annotations"):
                    if field in new_meta:
                        body["metadata"][field] = copy.deepcopy(new_meta[field])
                    else:
                        body["metadata"].pop(field, None)
                body["spec"] = copy.deepcopy(obj.get("spec") or {})
                stored = self.store.update(kind, body, manager=_MANAGER)
        except ApiError as exc:
            raise WorkloadError([f"{kind} {namespace}/{name}: {exc.message}"]) from exc
        self._run_for[str(meta(stored).get("uid"))] = run_for

    def pod_arrived(self, pod: Obj) -> None:
        """A pod the controllers did not make entered the replay (a start snapshot's, an event's): the store holds
        it as it is, so its controller counts it or an owner adopts it. Finished or deleting pods count for none."""
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or meta(pod).get("deletionTimestamp"):
            return
        body = copy.deepcopy(pod)
        body["metadata"].pop("resourceVersion", None)
        key = key_of(body)
        self._engine_pods.add(key)
        with uids.drawn_from(self._rng):
            try:
                self.store.create("Pod", body, manager=_MANAGER)
            except ApiError as exc:
                self._engine_pods.discard(key)
                log.warning("pod %s/%s: not seen by the workload controllers: %s", *key, exc.message)
                return
            if (body.get("spec") or {}).get("nodeName"):
                self._running(key)
        self._wake()

    def pod_bound(self, pod: Obj, node: str) -> None:
        """A pod was bound to ``node``: it runs (Running and Ready) from now on."""
        key = key_of(pod)
        if key not in self._engine_pods:
            return
        with uids.drawn_from(self._rng):
            try:
                self.store.bind_pod(key[0], key[1], node)
            except ApiError as exc:
                log.warning("pod %s/%s: binding not written for the controllers: %s", *key, exc.message)
                return
            self._running(key)
        self._wake()

    def pod_finished(self, pod: Obj, *, succeeded: bool) -> None:
        """A pod left the replay: it ran its time (``succeeded``: it Succeeded) or was deleted, preempted or evicted
        (deleted: the store's own delete removes it at once, no grace period)."""
        key = key_of(pod)
        if key not in self._engine_pods:
            return
        self._engine_pods.discard(key)
        self._ending.pop(key, None)
        with uids.drawn_from(self._rng):
            try:
                if succeeded:
                    self._succeeded(key)
                else:
                    self.store.delete("Pod", key[0], key[1])
            except NotFound:
                pass
        self._wake()

    def node_added(self, node: Obj) -> None:
        """A node came or changed (labels, taints, unschedulable): the store holds it as the engine does."""
        name = str(meta(node).get("name"))
        body = copy.deepcopy(node)
        body["metadata"].pop("resourceVersion", None)
        with uids.drawn_from(self._rng):
            try:
                existing = self.store.get("Node", None, name)
                if existing is None:
                    self.store.create("Node", body, manager=_MANAGER)
                else:
                    body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                    body["metadata"]["uid"] = existing["metadata"]["uid"]
                    self.store.update("Node", body, manager=_MANAGER)
            except ApiError as exc:
                log.warning("node %s: not seen by the workload controllers: %s", name, exc.message)
                return
        self._wake()

    node_updated = node_added

    def node_removed(self, name: str) -> None:
        """A node went (the engine deletes its pods, as PodGC does)."""
        with uids.drawn_from(self._rng):
            try:
                self.store.delete("Node", None, name)
            except NotFound:
                return
        self._wake()

    # --- reading ------------------------------------------------------------------------------------------------
    def objects(self) -> list[Obj]:
        """Every workload object in the store, with its status, in kind, namespace, name order."""
        found = [obj for kind in sorted(KINDS) for obj in self.store.list(kind)[0]]
        return sorted(found, key=lambda o: (str(o.get("kind")), *key_of(o)))

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        """One workload object as stored, or None."""
        return self.store.get(kind, namespace, name)

    # --- pods between the store and the engine ------------------------------------------------------------------
    def _on_pod(self, event_type: str, kind: str, pod: Obj) -> None:
        # After each commit (only noted: the handover runs after the controllers settle).
        key = key_of(pod)
        if key in self._engine_pods:
            if event_type == DELETED or meta(pod).get("deletionTimestamp"):
                self._ending[key] = None
        elif event_type == ADDED and controller_ref(pod) is not None:
            self._created[key] = None

    def _running(self, key: Key) -> None:
        """The pod's status as a started pod's: Running, Ready since now (what availability counts from)."""
        now = self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": now}
        status = {"phase": "Running", "startTime": now, "conditions": [ready]}
        self.store.merge_pod_status(key[0], key[1], status, resource_version=None, manager=_MANAGER)

    def _succeeded(self, key: Key) -> None:
        now = self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        ready = {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}
        status = {"phase": "Succeeded", "conditions": [ready]}
        self.store.merge_pod_status(key[0], key[1], status, resource_version=None, manager=_MANAGER)

    def _run_for_of(self, pod: Obj) -> float | None:
        """The pod's run time: its template's run-duration annotation, else the workload's runFor of the first of
        its chain of controllers that has one."""
        annotation = (meta(pod).get("annotations") or {}).get(RUN_DURATION_ANNOTATION)
        if annotation:
            try:
                return parse_go_duration(str(annotation)).total_seconds()
            except ValueError:
                log.warning(
                    "pod %s/%s: bad %s %r: it runs until deleted", *key_of(pod), RUN_DURATION_ANNOTATION, annotation
                )
                return None
        obj: Obj | None = pod
        for _ in range(8):  # pod -> ReplicaSet -> Deployment, pod -> Job -> CronJob
            ref = controller_ref(obj) if obj is not None else None
            if ref is None or obj is None:
                return None
            uid = str(ref.get("uid"))
            if uid in self._run_for:
                return self._run_for[uid]
            obj = self.store.get(str(ref.get("kind")), key_of(obj)[0], str(ref.get("name")))
        return None

    # --- settling -----------------------------------------------------------------------------------------------
    def _wake(self) -> None:
        """Settle the controllers at the current instant, after whatever else happens at it."""
        if not self._settle_due:
            self._settle_due = True
            self._actions.call_at(self._actions.now, self._settle)

    def _settle(self) -> None:
        self._settle_due = False
        with uids.drawn_from(self._rng):
            while True:
                if not self._stepped.settle():
                    log.warning("the workload controllers did not settle at %gs", self._actions.now)
                if not self._created and not self._ending:
                    break
                self._hand_over()
        self._ask_timers()

    def _hand_over(self) -> None:
        ending, self._ending = list(self._ending), {}
        for key in ending:
            self._engine_pods.discard(key)
            self._actions.delete_pod(*key)
            with contextlib.suppress(NotFound):
                self.store.delete("Pod", key[0], key[1])
        created, self._created = list(self._created), {}
        for key in created:
            pod = self.store.get("Pod", *key)
            if pod is None or meta(pod).get("deletionTimestamp"):
                continue
            ref = controller_ref(pod) or {}
            self._engine_pods.add(key)
            self.pods_created += 1
            owner = f"{ref.get('kind')}/{key[0]}/{ref.get('name')}"
            self._actions.create_pod(pod, run_for=self._run_for_of(pod), owner=owner)

    def _ask_timers(self) -> None:
        """A wake-up at each controller's next timer. Neither a CronJob's schedule (it never ends) nor the retry of
        a reconcile that failed (one the API keeps refusing would retry for ever) holds the run."""
        for loop in self._loops:
            holding = None if isinstance(loop, CronJobController) else loop.next_due(retries=False)
            for due, holds in ((holding, True), (loop.next_due(), False)):
                if due is None or (not holds and holding is not None and holding <= due):
                    continue
                timer = (max(self._virtual(due), float(self._actions.now)), holds)
                if timer not in self._timers:
                    self._timers.add(timer)
                    self._actions.call_at(timer[0], functools.partial(self._timer_fired, timer), holds_run=holds)

    def _timer_fired(self, timer: tuple[float, bool]) -> None:
        self._timers.discard(timer)
        self._wake()
