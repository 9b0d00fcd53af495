"""The taint eviction controller: kube-controller-manager's ``pkg/controller/tainteviction`` (the NoExecute taint
manager) over the virtual cluster.

A pod bound to a node with ``NoExecute`` taints is deleted when one of them is not tolerated (at once), or when
every one is tolerated, after the least ``tolerationSeconds`` of the tolerations that match them, on the
controller's clock (a toleration without ``tolerationSeconds`` tolerates for ever; 0 or less: at once). As
upstream's ``processPodOnNode``: the time is fixed when the eviction is first planned (later taint changes that
still call for an eviction keep it), and taints removed (or the pod now tolerating them for ever) cancel it, with
a ``TaintManagerEviction`` "Cancelling deletion of Pod ns/name" Event. When its time comes the pod gets the
``TaintManagerEviction`` "Marking for deletion Pod ns/name" Event, the ``DisruptionTarget`` condition
(``DeletionByTaintManager``, "Taint manager: deleting due to NoExecute taint") and is deleted (uid precondition).

Pods already being deleted are left alone. The planned evictions live in one ``DueQueue`` (one loop timer).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.disruption_target import mark_disruption_target
from kss_sim.controllers.due import DueQueue
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import Key, is_deleting, key_of, meta
from kss_sim.kube.objects import Obj
from kss_sim.kube.taints import EFFECT_NO_EXECUTE, Toleration

log = logging.getLogger(__name__)

COMPONENT = "taint-eviction-controller"
EVICTION_REASON = "TaintManagerEviction"
DISRUPTION_REASON = "DeletionByTaintManager"
DISRUPTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"

TICK: Key = ("", "")  # the key whose timer is the earliest planned eviction (no pod has an empty name)
Taints = tuple[Mapping[str, Any], ...]


def no_execute_taints(node: Mapping[str, Any]) -> Taints:
    """The node's ``NoExecute`` taints."""
    taints = (node.get("spec") or {}).get("taints") or []
    return tuple(t for t in taints if isinstance(t, dict) and t.get("effect") == EFFECT_NO_EXECUTE)


def toleration_time(taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> float | None:
    """How long a pod with ``tolerations`` may stay on a node with ``taints`` (``getMatchingTolerations`` and
    ``getMinTolerationTime``): 0 when a taint is not tolerated, None for ever, else the least
    ``tolerationSeconds`` (of the first toleration matching each taint; 0 or less is 0)."""
    if not taints:
        return None
    used: list[Mapping[str, Any]] = []
    for taint in taints:
        match = next((t for t in tolerations if Toleration.from_dict(t).tolerates(taint)), None)
        if match is None:
            return 0.0
        used.append(match)
    least: float | None = None
    for toleration in used:
        seconds = toleration.get("tolerationSeconds")
        if isinstance(seconds, int) and not isinstance(seconds, bool):
            if seconds <= 0:
                return 0.0
            least = seconds if least is None else min(least, seconds)
    return least


def _tolerations(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in (pod.get("spec") or {}).get("tolerations") or [] if isinstance(t, dict)]


class TaintEvictionController(ReconcileLoop[Key]):
    """Deletes the pods a node's NoExecute taints no longer let stay (see the module docstring)."""

    name = COMPONENT
    watched_kinds = ("Node", "Pod")

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now, evictions_per_tick: int = 200) -> None:
        """A stopped controller over ``store``; ``evictions_per_tick``: how many due evictions one pass writes
        before the worker looks at new changes again."""
        super().__init__(store, clock=clock)
        self._per_tick = max(1, evictions_per_tick)
        self._taints: dict[str, Taints] = {}  # node -> its NoExecute taints (nodes with some)
        self._node_of: dict[Key, str] = {}  # bound pod -> its node
        self._pods_on: dict[str, set[Key]] = {}  # node -> its bound pods
        self._due: DueQueue[Key] = DueQueue()  # planned evictions

    def reset(self) -> None:
        self._taints.clear()
        self._node_of.clear()
        self._pods_on.clear()
        self._due.clear()

    # --- what changed ---------------------------------------------------------------------------------------
    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        if kind == "Node":
            name = str(meta(obj).get("name") or "")
            taints = () if event_type == DELETED else no_execute_taints(obj)
            if taints == self._taints.get(name, ()):
                return []
            if taints:
                self._taints[name] = taints
            else:
                self._taints.pop(name, None)
            return sorted(self._pods_on.get(name, ()))
        key = key_of(obj)
        node = "" if event_type == DELETED else str((obj.get("spec") or {}).get("nodeName") or "")
        old = self._node_of.get(key)
        if old != node:
            if old is not None:
                self._pods_on.get(old, set()).discard(key)
                self._node_of.pop(key)
            if node:
                self._node_of[key] = node
                self._pods_on.setdefault(node, set()).add(key)
        if event_type == DELETED:
            self._due.discard(key)  # gone: nothing to cancel
            return []
        return [key] if node in self._taints or key in self._due else []

    def resync(self) -> list[Key]:
        for entry in self.store.select("Node").items:
            self.observe("ADDED", "Node", entry.obj)
        keys: list[Key] = []
        for entry in self.store.select("Pod").items:
            keys += self.observe("ADDED", "Pod", entry.obj)
        return keys

    # --- reconcile ------------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        if key == TICK:
            self._evict_due()
        else:
            self._plan(key)

    def _plan(self, key: Key) -> None:
        """``processPodOnNode``: plan, keep or cancel ``key``'s eviction."""
        try:
            pod = self.store.read("Pod", key[0], key[1]).obj
        except NotFound:
            self._due.discard(key)
            return
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if is_deleting(pod):
            self._due.discard(key)
            return
        seconds = toleration_time(self._taints.get(node, ()), _tolerations(pod))
        if seconds is None:
            self._cancel(key, pod)
            return
        now = self.now()
        if seconds == 0:
            self._schedule(key, now)
        elif key not in self._due:
            self._schedule(key, now + timedelta(seconds=seconds))

    def _cancel(self, key: Key, pod: Obj) -> None:
        if key not in self._due:
            return
        self._due.discard(key)
        self._arm()
        log.info("pod %s/%s: NoExecute taints gone or tolerated, eviction cancelled", *key)
        self.store.create_event(
            pod, EVICTION_REASON, f"Cancelling deletion of Pod {key[0]}/{key[1]}", component=COMPONENT
        )

    def _evict_due(self) -> None:
        due = self._due.pop_due(self.now(), self._per_tick)
        for i, key in enumerate(due):
            try:
                self._evict(key)
            except Exception:
                for again in due[i:]:  # back in the queue; the loop retries the tick with backoff
                    self._due.schedule(again, self.now())
                self._arm()
                raise
        self._arm()

    def _evict(self, key: Key) -> None:
        """The event, the DisruptionTarget condition, the delete (a pod gone meanwhile: nothing to do)."""
        try:
            pod = self.store.read("Pod", key[0], key[1]).obj
        except NotFound:
            return
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if is_deleting(pod) or toleration_time(self._taints.get(node, ()), _tolerations(pod)) is None:
            return  # going already, or (a new pod of that name) allowed to stay
        log.info("pod %s/%s: evicted by a NoExecute taint of %s", *key, (pod.get("spec") or {}).get("nodeName"))
        self.store.create_event(
            pod, EVICTION_REASON, f"Marking for deletion Pod {key[0]}/{key[1]}", component=COMPONENT
        )
        try:
            pod = mark_disruption_target(
                self.store,
                pod,
                reason=DISRUPTION_REASON,
                message=DISRUPTION_MESSAGE,
                now=self.timestamp(),
                manager=COMPONENT,
            )
            # DeleteOptions{} as the taint manager sends them: the pod ends after its grace period, on its node.
            self.store.delete(
                "Pod", key[0], key[1], uid=str(meta(pod).get("uid") or "") or None, options=DeleteOptions(graceful=True)
            )
        except NotFound:
            return  # a Conflict (changed meanwhile) goes to the loop, which retries the tick

    # --- helpers --------------------------------------------------------------------------------------------
    def _schedule(self, key: Key, when: datetime) -> None:
        self._due.schedule(key, when)
        self._arm()

    def _arm(self) -> None:
        earliest = self._due.earliest()
        if earliest is not None:
            self.requeue_at(TICK, earliest)
