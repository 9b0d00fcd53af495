"""The live workload controllers in a replay: ``kss serve``'s controllers over an in-memory store, on the virtual clock.

The replay's workload objects (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, and the
HorizontalPodAutoscalers that scale them, the horizontal controller syncing every 15 s) live in an in-memory
``ClusterStore`` (no database), with the nodes and every pod the controllers may own or adopt; the controllers of
``kss_sim/controllers/`` (``manager.WORKLOAD_CONTROLLERS``: the workload controllers, TTL-after-finished and the
garbage collector; and the taint eviction controller, which evicts what a node's NoExecute taints no longer let
stay, the ``DisruptionTarget`` condition written, the pod terminating in the engine) are attached to it and
settled by ``SteppedControllers`` whenever something changed, at the current virtual instant, and again when one
of their timers is due. Why a store and not a lighter object world of the replay's own: docs/architecture.md
("The replay's object world").

The engine (``kss_sim/replay/engine.py``) talks to :class:`LiveControllers` as to its own workload controllers; they
act through its :class:`Engine` verbs:

- a pod a controller creates reaches the engine through ``create_pod`` (as a created pod does), with its controller
  as its owner and a run time: the template's ``kss.sigs.k8s.io/run-duration`` when it has one, else the workload's
  ``runFor`` of the object at the top of its chain of controllers (a Deployment's, a CronJob's);
- a pod a controller deletes (or the garbage collector) gracefully, bound, terminates in the engine
  (``terminate_pod``): it holds its node until its kubelet ends it at the end of its grace period (the engine's
  timer; the store's pod is then deleted with a grace period of 0, as ``kss serve``'s kubelet does), while its
  controller counts it gone and replaces it at once; one not bound, or deleted without a grace period, is deleted
  in the engine and from the store at once (a Job's pod once its controller takes the tracking finalizer off). The
  record's outcome follows the pod's ``DisruptionTarget`` condition: evicted (the taint eviction controller's, the
  eviction API's: a drain), with its reason; preempted; else deleted;
- a claim a controller creates (a StatefulSet's) reaches the engine as a created claim, before the pods that mount
  it; one the store deletes (the set's retention policy, through the garbage collector) is deleted there;
- what the engine does to a pod the controllers see: a binding makes it Running and Ready (the replay's pods start
  at once); a pod that ran its time Succeeds; one the engine deletes gracefully (a delete event, its ``endAt``, a
  preemption: ``pod_deleting``) is deleted so in the store too, a victim's ``DisruptionTarget`` first; one gone
  at once is deleted;
- a workload's usage curve (``usage_curve``, ``world_usage.py``) is written at each step as its pods'
  ``<resource>-usage`` annotations, and on each pod it makes later: what the horizontal controller reads;
- pods that reach the engine otherwise (a start snapshot's, an event's) are created in the store as they are, so
  their controllers count or adopt them as upstream's ``ClaimPods`` does; the store gives every object a uid of its
  own, so what names an owner by the uid it came with (owner references, a Job's generated selector labels) is
  made to name it by the store's (``world_objects.py``). A workload object keeps the status it came with (a
  snapshot's Job goes on from its counted completions);
- PriorityClasses are held as the engine holds them: the API's admission of a pod reads them; so are
  PodDisruptionBudgets, which the disruption controller keeps and a drain's evictions (``drain``) read.

The controllers' timers never hold the run: it ends when the workload is done (docs/architecture.md, "The replay's
object world", says why); a planned taint eviction's does, as it happens once.

Names and uids the store gives (``generateName``, every new object's uid) are drawn from a Random seeded with the
run's seed (``uids.drawn_from``): the same workload, the same names. Objects the API would refuse are refused before
the run (``world_objects.check_workload_object``: the API's own admission and validation, in a scratch store). A
node failed or healed (``reported_node``) gets the node lifecycle controller's taints (``world_nodes.py``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from kss_sim.cluster.admission import uids
from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.api.eviction import Eviction, evict
from kss_sim.cluster.errors import ApiError, NotFound, TooManyRequests
from kss_sim.cluster.storage.change_log import ADDED, DELETED
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.disruption import DisruptionController
from kss_sim.controllers.horizontal import HorizontalController
from kss_sim.controllers.loop import ReconcileLoop
from kss_sim.controllers.manager import WORKLOAD_CONTROLLERS
from kss_sim.controllers.node_lifecycle import (
    NOT_READY,
    UNREACHABLE,
)
from kss_sim.controllers.owned import controller_ref, key_of, meta
from kss_sim.controllers.pod_status import RUN_DURATION_ANNOTATION, parse_go_duration
from kss_sim.controllers.stepped import SteppedControllers
from kss_sim.controllers.taint_eviction import DISRUPTION_REASON as TAINT_EVICTION_REASON
from kss_sim.controllers.taint_eviction import TaintEvictionController
from kss_sim.kube.node_ready import ready_status
from kss_sim.kube.objects import Obj
from kss_sim.kube.pod_conditions import DISRUPTION_TARGET, POD_GC_REASON
from kss_sim.kube.taints import EFFECT_NO_EXECUTE
from kss_sim.replay import model
from kss_sim.replay.model import DRAIN, EVICTED, NODE_FAILURE, PREEMPTED, TAINT
from kss_sim.replay.workload import DRAIN_RETRY_SECONDS, WorkloadError
from kss_sim.replay.world_nodes import reported_node
from kss_sim.replay.world_objects import KINDS, StoreUids, without_job_uid
from kss_sim.replay.world_usage import UsageCurves

log = logging.getLogger("kss.replay")

Key = tuple[str, str]  # (namespace, name)

_MANAGER = "kss-replay"
# Kinds besides nodes the store holds as the engine does: those the API's admission of a pod reads (cluster-scoped),
# and the budgets the eviction API (a drain's) and the disruption controller read (namespaced).
ADMISSION_KINDS = frozenset(("PriorityClass",))
STORED_KINDS = ADMISSION_KINDS | {"PodDisruptionBudget"}
EVICTION_API_REASON = "EvictionByEvictionAPI"  # the DisruptionTarget reason of an eviction through the API
PREEMPTION_REASON = "PreemptionByScheduler"  # the DisruptionTarget reason of a preemption victim
# The controllers a replay runs: the workload ones and what acts on nodes' NoExecute taints.
REPLAY_CONTROLLERS: tuple[type[ReconcileLoop[Any]], ...] = (
    *WORKLOAD_CONTROLLERS,
    TaintEvictionController,
    DisruptionController,
    HorizontalController,
)
# Controllers whose timers end by themselves (a planned eviction happens once): those timers hold the run, as the
# engine's own do. The others' may recur for ever (a CronJob's schedule) and never hold it.
RUN_HOLDING_CONTROLLERS = (TaintEvictionController,)


class Engine(Protocol):
    """What the controllers ask of the replay engine (``kss_sim/replay/engine.py``'s ``Replay`` offers it)."""

    @property
    def now(self) -> float: ...

    def create_pod(self, pod: Obj, *, run_for: float | None, owner: str) -> None: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...

    def terminate_pod(self, pod: Obj, outcome: str, reason: str = "") -> bool:
        """The bound pod, deleted gracefully in the store (deletionTimestamp set), starts terminating, holding its
        node until its kubelet ends it (``outcome``; ``reason``: an eviction's cause); False when the engine has no
        such pod bound."""
        ...

    def call_at(self, at: float, callback: Callable[[], None], *, holds_run: bool = True) -> None: ...

    def node_objects(self) -> list[Obj]: ...

    def create_object(self, obj: Obj) -> bool:
        """An object a controller made that scheduling reads (a StatefulSet's claim), created as a create event's
        would be; False, and nothing done, when one of that kind and name exists."""
        ...

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Such an object deleted (a StatefulSet's claim under its retention policy), as a delete event deletes."""
        ...


def _deleted_gracefully(pod: Obj) -> bool:
    """Whether the deleted pod terminates on its node: bound, with a grace period its kubelet gives it."""
    return bool((pod.get("spec") or {}).get("nodeName") and meta(pod).get("deletionGracePeriodSeconds"))


def _pod_gc_condition(pod: Obj) -> Obj | None:
    """The pod GC's DisruptionTarget condition on the engine's pod, if the pod GC collected it."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next(
        (c for c in conditions if c.get("type") == DISRUPTION_TARGET and c.get("reason") == POD_GC_REASON), None
    )


class LiveControllers:
    """The workload controllers of ``kss serve`` on a replay's virtual clock (module docstring); ``actions`` is the
    engine, ``epoch`` the wall time of virtual time 0."""

    KINDS = KINDS

    def __init__(
        self,
        actions: Engine,
        epoch: datetime,
        *,
        seed: int = 0,
        kube_version: str | None = None,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        self._actions = actions
        self._epoch = epoch
        self._rng = random.Random(f"kss-replay-controllers/{seed}")
        with uids.drawn_from(self._rng):
            # The run's release and gates: its API decides which kinds and fields the controllers' objects keep.
            self.store = ClusterStore(None, clock=self._clock, kube_version=kube_version, feature_gates=feature_gates)
        self._loops: list[ReconcileLoop[Any]] = [c(self.store, clock=self._clock) for c in REPLAY_CONTROLLERS]
        self._stepped = SteppedControllers(self._loops)
        self._engine_pods: set[Key] = set()  # pods the engine holds, as the store knows them
        self._created: dict[Key, None] = {}  # pods the controllers made, for the engine, in creation order
        self._ending: dict[Key, None] = {}  # engine pods the store deletes (a controller, the garbage collector)
        self._terminating: dict[Key, None] = {}  # bound engine pods the store deletes gracefully, for the engine
        self._deleting: set[Key] = set()  # engine pods deleted gracefully by the engine (its terminating pods)
        self._claims: dict[Key, bool] = {}  # claims the controllers made (True) or deleted (False), for the engine
        self._run_for: dict[str, float | None] = {}  # a workload object's uid -> its runFor
        self._store_uids = StoreUids(self.store)
        self._usage = UsageCurves(self.store, lambda: float(self._actions.now), manager=_MANAGER)
        self._settle_due = False
        self._timers: set[tuple[float, bool]] = set()  # (virtual time, holds the run) of the wake-ups asked for
        self.pods_created = 0
        self.store.add_listener(self._on_pod, ("Pod",))
        self.store.add_listener(self._on_claim, ("PersistentVolumeClaim",))
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
                body = self._store_uids.with_store_uids(without_job_uid(copy.deepcopy(obj)))
                body.setdefault("metadata", {})["namespace"] = namespace
                # A snapshot's object goes on from its status (a Job's counted completions, a set's revisions).
                stored = self.store.create(kind, body, manager=_MANAGER, keep_status=True)
                self._store_uids.created(kind, namespace, name, meta(obj).get("uid"), stored)
            else:
                body = copy.deepcopy(existing)
                new_meta = obj.get("metadata") or {}
                for field in ("labels", "annotations"):
                    if field in new_meta:
                        body["metadata"][field] = copy.deepcopy(new_meta[field])
                    else:
                        body["metadata"].pop(field, None)
                body["spec"] = copy.deepcopy(obj.get("spec") or {})
                if kind == "Job":
                    self._store_uids.keep_generated_selector(body["spec"], existing["spec"])
                stored = self.store.update(kind, body, manager=_MANAGER)
        except ApiError as exc:
            raise WorkloadError([f"{kind} {namespace}/{name}: {exc.message}"]) from exc
        self._run_for[str(meta(stored).get("uid"))] = run_for

    def usage_curve(
        self, kind: str, namespace: str, name: str, curve: Mapping[str, Sequence[tuple[float, str]]]
    ) -> None:
        """The workload's pods' usage from now on follows ``curve`` (resource -> steps): at each step's time every
        pod it owns (down its chain of controllers) gets the ``kss.sigs.k8s.io/<resource>-usage`` annotation the
        horizontal controller reads, and so does each pod it makes later. A new curve for it replaces the old."""
        key = (kind, namespace or "default", name)
        self._usage.curves[key] = curve
        now = float(self._actions.now)
        for at in sorted({at for steps in curve.values() for at, _ in steps}):
            self._actions.call_at(max(at, now), functools.partial(self._usage_step, key, curve))

    def _usage_step(self, key: tuple[str, str, str], curve: Mapping[str, Sequence[tuple[float, str]]]) -> None:
        if self._usage.curves.get(key) is not curve:
            return  # replaced by a later curve
        with uids.drawn_from(self._rng):
            self._usage.step(key, curve)
        self._wake()

    def pod_arrived(self, pod: Obj) -> None:
        """A pod the controllers did not make entered the replay (a start snapshot's, an event's): the store holds
        it as it is, so its controller counts it or an owner adopts it. Finished or deleting pods count for none."""
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or meta(pod).get("deletionTimestamp"):
            return
        body = self._store_uids.with_store_uids(copy.deepcopy(pod))
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
        """A pod left the replay: it ran its time (``succeeded``: it Succeeded), its kubelet ended it after its
        grace period, or it was removed at once (a pending pod deleted, its node gone)."""
        key = key_of(pod)
        if key not in self._engine_pods:
            return
        self._engine_pods.discard(key)
        self._ending.pop(key, None)
        self._terminating.pop(key, None)
        self._deleting.discard(key)
        with uids.drawn_from(self._rng):
            try:
                if succeeded:
                    self._succeeded(key)
                stored = self.store.get("Pod", *key)
                collected = _pod_gc_condition(pod)
                if stored is not None and collected is not None:
                    self._collected(key, stored, collected)
                elif stored is not None and meta(stored).get("deletionTimestamp"):
                    # Its kubelet's delete once the containers are gone (``kubelet.py``): grace 0, gone now.
                    self.store.delete(
                        "Pod", key[0], key[1], options=DeleteOptions(grace_period_seconds=0, graceful=True)
                    )
                elif not succeeded:
                    self.store.delete("Pod", key[0], key[1])
            except NotFound:
                pass
        self._wake()

    def _collected(self, key: Key, stored: Obj, condition: Obj) -> None:
        """The pod GC collected the pod (its node missing): as ``kss serve``'s pod GC, the store's pod is marked
        Failed (unless it finished) with the DisruptionTarget condition, then deleted with a grace period of 0; so
        its controller sees a disrupted pod (a Job's podFailurePolicy may ignore it)."""
        status = stored.get("status") or {}
        kept = [c for c in status.get("conditions") or [] if c.get("type") != DISRUPTION_TARGET]
        written: Obj = {"conditions": [*kept, condition]}
        if status.get("phase") not in ("Succeeded", "Failed"):
            written["phase"] = "Failed"
        self.store.merge_pod_status(key[0], key[1], written, resource_version=None, manager=_MANAGER)
        self.store.delete("Pod", key[0], key[1], options=DeleteOptions(grace_period_seconds=0, graceful=True))

    def node_added(self, node: Obj) -> None:
        """A node came or changed (labels, taints, unschedulable): the store holds it as the engine does."""
        name = str(meta(node).get("name"))
        body = copy.deepcopy(node)
        body["metadata"].pop("resourceVersion", None)
        with uids.drawn_from(self._rng):
            try:
                existing = self.store.get("Node", None, name)
                if existing is None:
                    stored = self.store.create("Node", body, manager=_MANAGER)
                else:
                    body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                    body["metadata"]["uid"] = existing["metadata"]["uid"]
                    stored = self.store.update("Node", body, manager=_MANAGER)
                if ready_status(stored) != ready_status(body):  # the Ready condition (the status subresource)
                    self.store.update_status("Node", None, name, copy.deepcopy(body.get("status") or {}))
            except ApiError as exc:
                log.warning("node %s: not seen by the workload controllers: %s", name, exc.message)
                return
        self._wake()

    node_updated = node_added

    def reported_node(self, node: Obj, report: str) -> Obj:
        """``node`` as its kubelet reports it now and the node lifecycle controller taints it (``world_nodes.py``)."""
        return reported_node(node, report, self._clock())

    def object_put(self, obj: Obj) -> None:
        """An object of another kind came or changed: the store holds those its admission reads (a PriorityClass:
        a pod naming one the store does not know is refused, a controller's as well as a snapshot's)."""
        kind = str(obj.get("kind"))
        if kind not in STORED_KINDS:
            return
        name = str(meta(obj).get("name"))
        namespace = None if kind in ADMISSION_KINDS else str(meta(obj).get("namespace") or "default")
        body = copy.deepcopy(obj)
        for field in ("resourceVersion", "uid"):
            body["metadata"].pop(field, None)
        if namespace is not None:
            body["metadata"]["namespace"] = namespace
        with uids.drawn_from(self._rng):
            try:
                existing = self.store.get(kind, namespace, name)
                if existing is None:
                    self.store.create(kind, body, manager=_MANAGER)
                else:
                    body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                    self.store.update(kind, body, manager=_MANAGER)
            except ApiError as exc:
                log.warning("%s %s: not seen by the workload controllers: %s", kind, name, exc.message)

        if namespace is not None:
            self._wake()  # a budget: the disruption controller keeps its status

    def object_deleted(self, kind: str, namespace: str, name: str) -> None:
        """An object of another kind went (the store forgets those it holds)."""
        if kind in STORED_KINDS:
            with uids.drawn_from(self._rng), contextlib.suppress(NotFound):
                self.store.delete(kind, None if kind in ADMISSION_KINDS else namespace or "default", name)
            self._wake()

    def drain(self, node: str) -> None:
        """``kubectl drain NODE`` after its cordon: every pod on the node but a DaemonSet's is evicted through the
        eviction API (its PodDisruptionBudget asked); one a budget refuses is asked for again every 5 s virtual,
        as kubectl retries, until it goes (its replacement Ready elsewhere frees the budget) or is gone."""
        blocked = 0
        with uids.drawn_from(self._rng):
            for pod in self.store.list("Pod")[0]:
                spec = pod.get("spec") or {}
                ref = controller_ref(pod) or {}
                if spec.get("nodeName") != node or meta(pod).get("deletionTimestamp") or ref.get("kind") == "DaemonSet":
                    continue
                namespace, name = key_of(pod)
                try:
                    evict(self.store, namespace, Eviction(name, {}))
                except TooManyRequests as exc:
                    blocked += 1
                    log.info("drain %s at %gs: pod %s/%s not evicted (retried in %gs): %s", node,
                             self._actions.now, namespace, name, DRAIN_RETRY_SECONDS, exc.message)  # fmt: skip
                except (NotFound, ApiError) as exc:
                    log.warning("drain %s: pod %s/%s not evicted: %s", node, namespace, name, exc)
        self._wake()
        if blocked:
            at = float(self._actions.now) + DRAIN_RETRY_SECONDS
            self._actions.call_at(at, functools.partial(self._drain_again, node))

    def _drain_again(self, node: str) -> None:
        if self.store.get("Node", None, node) is not None:
            self.drain(node)

    def node_removed(self, name: str) -> None:
        """A node went, deleted as a client deletes it: its pods stay (their controllers count them) until the
        engine's pod GC collects them (``pod_finished``)."""
        with uids.drawn_from(self._rng):
            try:
                self.store.delete("Node", None, name, options=DeleteOptions(graceful=True))
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
            if event_type == DELETED:
                self._ending[key] = None
            elif meta(pod).get("deletionTimestamp") and key not in self._deleting:
                if _deleted_gracefully(pod):
                    self._terminating[key] = None  # its kubelet ends it after its grace period
                else:
                    self._ending[key] = None
        elif event_type == ADDED and controller_ref(pod) is not None:
            self._created[key] = None

    def _on_claim(self, event_type: str, kind: str, claim: Obj) -> None:
        # Only the controllers write claims to the store (the engine keeps its own): a StatefulSet's, or the garbage
        # collector's delete of one under its retention policy. Noted, handed over after the settle.
        if event_type in (ADDED, DELETED):
            key = key_of(claim)
            self._claims.pop(key, None)  # the latest write last, in the order of the writes
            self._claims[key] = event_type == ADDED

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
                if not self._created and not self._ending and not self._claims and not self._terminating:
                    break
                self._hand_over()
        self._ask_timers()

    def _hand_over(self) -> None:
        # Claims first: the pods that mount them reach the scheduler with their claims there.
        claims, self._claims = list(self._claims.items()), {}
        for key, made in claims:
            claim = self.store.get("PersistentVolumeClaim", *key) if made else None
            if claim is not None:
                self._actions.create_object(claim)
            elif not made:
                self._actions.delete_object("PersistentVolumeClaim", *key)
        terminating, self._terminating = list(self._terminating), {}
        for key in terminating:
            self._start_terminating(key)
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
            curve = self._usage.curve_of(pod)
            if curve is not None:  # its workload's usage now, before the autoscaler next reads it
                self._usage.set_usage(pod, curve)
            ref = controller_ref(pod) or {}
            self._engine_pods.add(key)
            self.pods_created += 1
            owner = f"{ref.get('kind')}/{key[0]}/{ref.get('name')}"
            self._actions.create_pod(pod, run_for=self._run_for_of(pod), owner=owner)

    # --- pods deleted gracefully: the engine keeps them on their nodes until their kubelets end them ------------
    def _start_terminating(self, key: Key) -> None:
        """A bound pod the store deleted gracefully (a controller's scale-down, the garbage collector, an eviction)
        terminates in the engine for its grace period (``deletionGracePeriodSeconds``); one the engine does not
        hold bound is deleted there at once."""
        pod = self.store.get("Pod", *key)
        if pod is None or key in self._deleting:
            return
        outcome, reason = self._deletion_of(pod)
        if not self._actions.terminate_pod(pod, outcome, reason):
            self._ending[key] = None
            return
        self._deleting.add(key)

    def _deletion_of(self, pod: Obj) -> tuple[str, str]:
        """The outcome and reason of the pod's deletion, from its DisruptionTarget condition: evicted by a drain (the
        eviction API's), by its node's failure (the node lifecycle controller's not-ready or unreachable NoExecute
        taint on the node) or another NoExecute taint; preempted; else deleted (a controller, a client)."""
        conditions = (pod.get("status") or {}).get("conditions") or []
        target: Obj = next(
            (c for c in conditions if c.get("type") == DISRUPTION_TARGET and c.get("status") == "True"), {}
        )
        if target.get("reason") == EVICTION_API_REASON:
            return EVICTED, DRAIN
        if target.get("reason") == PREEMPTION_REASON:
            return PREEMPTED, ""
        if target.get("reason") != TAINT_EVICTION_REASON:
            return model.DELETED, ""
        node = str((pod.get("spec") or {}).get("nodeName"))
        taints = ((self.store.get("Node", None, node) or {}).get("spec") or {}).get("taints") or []
        failed = any(t.get("key") in (NOT_READY, UNREACHABLE) and t.get("effect") == EFFECT_NO_EXECUTE for t in taints)
        return EVICTED, NODE_FAILURE if failed else TAINT

    def pod_deleting(self, pod: Obj) -> None:
        """The engine deletes a bound pod gracefully (a delete event, its ``endAt``, a preemption): the store's pod
        gets the same deletion, its DisruptionTarget condition first (a victim's), so its controller counts it gone
        and replaces it at once, as on a cluster."""
        key = key_of(pod)
        if key not in self._engine_pods or key in self._deleting:
            return
        self._deleting.add(key)
        target = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == DISRUPTION_TARGET]
        with uids.drawn_from(self._rng):
            try:
                stored = self.store.get("Pod", *key)
                if stored is not None and target:
                    conditions = [
                        c
                        for c in (stored.get("status") or {}).get("conditions") or []
                        if c.get("type") != DISRUPTION_TARGET
                    ]
                    status = {"conditions": [*conditions, *target]}
                    self.store.merge_pod_status(key[0], key[1], status, resource_version=None, manager=_MANAGER)
                grace = meta(pod).get("deletionGracePeriodSeconds")
                self.store.delete(
                    "Pod", key[0], key[1], options=DeleteOptions(grace_period_seconds=grace, graceful=True)
                )
            except NotFound:
                pass
        self._wake()

    def _ask_timers(self) -> None:
        """A wake-up at the controllers' next timer, which never holds the run (module docstring: when a run ends),
        and one at the next timer that ends by itself (a planned taint eviction), which does."""
        due = self._stepped.next_due()
        if due is not None:
            self._ask_wake_up(self._virtual(due), holds_run=False)
        held = [
            when
            for loop in self._loops
            if isinstance(loop, RUN_HOLDING_CONTROLLERS) and (when := loop.next_due(retries=False)) is not None
        ]
        if held:
            self._ask_wake_up(self._virtual(min(held)), holds_run=True)

    def _ask_wake_up(self, at: float, *, holds_run: bool) -> None:
        at = max(at, float(self._actions.now))
        if (at, holds_run) not in self._timers:
            self._timers.add((at, holds_run))
            self._actions.call_at(at, functools.partial(self._timer_fired, at, holds_run), holds_run=holds_run)

    def _timer_fired(self, at: float, holds_run: bool) -> None:
        self._timers.discard((at, holds_run))
        self._wake()
