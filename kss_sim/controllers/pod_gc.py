"""Pod garbage collection: kube-controller-manager's ``pkg/controller/podgc`` over the virtual cluster.

- Orphaned pods (``gcOrphaned``): a pod bound to a node that does not exist is deleted once the node has been
  missing for the quarantine (40 s, upstream's ``quarantineTime``; ``pod_gc_quarantine_seconds``), the node
  looked up again first: marked ``Failed`` unless it has finished, given the ``DisruptionTarget`` condition
  (``DeletionByPodGC``, "PodGC: node no longer exists") and force-deleted (a grace period of 0, upstream's
  ``NewDeleteOptions(0)``: no kubelet will end it), whether it was being deleted already or not. A node that appears
  in time saves its pods. A Node deleted through the API leaves its pods to this, as kube-apiserver does.
- Terminated pods (``gcTerminated``): above ``--terminated-pod-gc-threshold`` (12,500; 0 turns it off)
  Succeeded or Failed pods, the oldest (by creation) are deleted down to the threshold.

Upstream runs these every 20 s; here the indexes are kept from the watch and each check runs when it can have
work: a node's quarantine on the controller's clock, the threshold on a pod's change.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.disruption_target import mark_disruption_target
from kss_sim.controllers.due import DueQueue
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import Key, is_terminated, key_of, meta
from kss_sim.kube.objects import Obj
from kss_sim.kube.pod_conditions import POD_GC_MESSAGE, POD_GC_REASON

log = logging.getLogger(__name__)

COMPONENT = "pod-garbage-collector"
QUARANTINE_SECONDS = 40.0
TERMINATED_POD_GC_THRESHOLD = 12500
GC_REASON = POD_GC_REASON
GC_MESSAGE = POD_GC_MESSAGE

# markFailedAndDeletePod's DeleteOptions: a grace period of 0, the pod goes at once.
FORCE = DeleteOptions(grace_period_seconds=0, graceful=True)

TICK = ("", "")  # the earliest quarantine's end
TERMINATED = ("", "terminated")  # the threshold check (no pod has an empty namespace)


class PodGCController(ReconcileLoop[Key]):
    """Deletes orphaned pods and terminated ones above the threshold (see the module docstring)."""

    name = "pod-garbage-collector"
    watched_kinds = ("Node", "Pod")

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        terminated_pod_gc_threshold: int = TERMINATED_POD_GC_THRESHOLD,
        quarantine_seconds: float = QUARANTINE_SECONDS,
    ) -> None:
        """A stopped controller over ``store``; the threshold (0: never) and the quarantine as the module says."""
        super().__init__(store, clock=clock)
        self._threshold = terminated_pod_gc_threshold
        self._quarantine = timedelta(seconds=quarantine_seconds)
        self._nodes: set[str] = set()
        self._pods_on: dict[str, set[Key]] = {}  # node name -> pods bound to it
        self._node_of: dict[Key, str] = {}
        self._terminated: dict[Key, tuple[str, str]] = {}  # pod -> (creationTimestamp, uid)
        self._missing: DueQueue[str] = DueQueue()  # missing node -> end of its quarantine

    def reset(self) -> None:
        self._nodes.clear()
        self._pods_on.clear()
        self._node_of.clear()
        self._terminated.clear()
        self._missing.clear()

    # --- what changed ---------------------------------------------------------------------------------------
    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        if kind == "Node":
            name = str(meta(obj).get("name") or "")
            if event_type == DELETED:
                self._nodes.discard(name)
                self._watch_node(name)
            else:
                self._nodes.add(name)
                self._missing.discard(name)
            return []
        key = key_of(obj)
        node = "" if event_type == DELETED else str((obj.get("spec") or {}).get("nodeName") or "")
        old = self._node_of.pop(key, None)
        if old is not None and old != node:
            self._pods_on.get(old, set()).discard(key)
        if node:
            self._node_of[key] = node
            self._pods_on.setdefault(node, set()).add(key)
            self._watch_node(node)
        if event_type != DELETED and is_terminated(obj):
            m = meta(obj)
            self._terminated[key] = (str(m.get("creationTimestamp") or ""), str(m.get("uid") or ""))
        else:
            self._terminated.pop(key, None)
        return [TERMINATED] if 0 < self._threshold < len(self._terminated) else []

    def _watch_node(self, name: str) -> None:
        """A node with pods that does not exist starts (or keeps) its quarantine."""
        if name not in self._nodes and self._pods_on.get(name) and name not in self._missing:
            self._missing.schedule(name, self.now() + self._quarantine)
            self._arm()

    def resync(self) -> list[Key]:
        self._nodes = {entry.name for entry in self.store.select("Node").items}
        for entry in self.store.select("Pod").items:
            self.observe("ADDED", "Pod", entry.obj)
        return [TICK, TERMINATED]

    # --- reconcile ------------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        if key == TERMINATED:
            self._gc_terminated()
            return
        for name in self._missing.pop_due(self.now(), 100):
            try:
                self._gc_orphans(name)
            except Exception:
                self._missing.schedule(name, self.now())  # the loop retries the tick with backoff
                self._arm()
                raise
        self._arm()

    def _arm(self) -> None:
        earliest = self._missing.earliest()
        if earliest is not None:
            self.requeue_at(TICK, earliest)

    def _gc_orphans(self, node: str) -> None:
        """The node's quarantine is over: if it still does not exist, its pods go."""
        try:
            self.store.read("Node", None, node)
        except NotFound:
            pass
        else:
            return  # back meanwhile (the watch will say so too)
        for key in sorted(self._pods_on.get(node, ())):
            try:
                pod = self.store.read("Pod", key[0], key[1]).obj
            except NotFound:
                continue
            if (pod.get("spec") or {}).get("nodeName") != node:
                continue
            log.info("pod %s/%s: node %s no longer exists, deleting the pod", *key, node)
            try:
                pod = mark_disruption_target(
                    self.store,
                    pod,
                    reason=GC_REASON,
                    message=GC_MESSAGE,
                    now=self.timestamp(),
                    manager=COMPONENT,
                    fail=True,
                )
                self._force_delete(key, pod)
            except NotFound:
                continue

    def _gc_terminated(self) -> None:
        """``gcTerminated``: the oldest terminated pods above the threshold."""
        excess = len(self._terminated) - self._threshold
        if self._threshold <= 0 or excess <= 0:
            return
        oldest = sorted(self._terminated.items(), key=lambda item: (item[1][0], item[0]))[:excess]
        log.info("garbage collecting %d terminated pods", excess)
        for key, (_, uid) in oldest:
            try:
                self.store.delete("Pod", key[0], key[1], uid=uid or None, options=FORCE)
            except (NotFound, Conflict):
                self._terminated.pop(key, None)  # gone, or another pod of that name now

    def _force_delete(self, key: Key, pod: Obj) -> None:
        # A pod's finalizers still hold it (marked as deleting).
        self.store.delete("Pod", key[0], key[1], uid=str(meta(pod).get("uid") or "") or None, options=FORCE)
