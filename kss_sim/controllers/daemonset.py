"""The DaemonSet controller: kube-controller-manager's ``pkg/controller/daemon`` over the virtual cluster.

One reconcile of a DaemonSet, as ``syncDaemonSet``:

- which nodes should run its pod (``nodeShouldRunDaemonPod``): the template's ``nodeName`` if any, its
  ``nodeSelector`` and required node affinity, and the node's NoSchedule/NoExecute taints against the template's
  tolerations plus the ones the controller adds to every daemon pod (not-ready and unreachable NoExecute;
  disk-, memory-, pid-pressure and unschedulable NoSchedule; network-unavailable too with ``hostNetwork``). A node
  whose only untolerated taints are NoSchedule keeps a pod already there (``shouldContinueRunning``).
- ``manage``: a pod is created for each such node without one; pods on nodes that may not keep them, pods for nodes
  that no longer exist, extra pods on a node (all but the oldest, unless surging), failed pods (with a backoff per
  node, and a ``FailedDaemonPod`` Warning) and succeeded pods are deleted. A new pod is the template with the
  daemon tolerations, the labels ``controller-revision-hash`` and ``pod-template-generation``, generateName
  ``<ds>-``, and the required node-affinity term ``matchFields metadata.name In [<node>]`` in place of the
  template's required terms (``ReplaceDaemonSetPodNodeNameNodeAffinity``); the scheduler places it (never bound
  here).
- ``rollingUpdate`` (``daemon_update.py``) once ``manage`` had nothing to do (upstream waits for its creations and
  deletions to be observed): without ``maxSurge``, old pods are deleted while no more than ``maxUnavailable`` are
  unavailable; with it, new pods are created next to available old ones, up to ``maxSurge``, and the old ones go
  once the new are available.
- the status (``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberMisscheduled``, ``numberReady``,
  ``updatedNumberScheduled``, ``numberAvailable``, ``numberUnavailable``, ``observedGeneration``) is written when it
  changed, so ``kubectl rollout status ds/x`` follows; a pod Ready but not yet ``minReadySeconds`` old brings the
  DaemonSet back when it becomes available.

Pods are deleted as ``podControl.DeletePod`` does, with DeleteOptions: a bound pod ends gracefully (Terminating
until its kubelet removes it) and its node gets no new pod meanwhile (without surge). Pods are claimed as
``ControllerRefManager`` does: those it controls, orphans matching the selector (adopted),
and controlled pods that stopped matching are released.

Which nodes should run the pod, the pod's template and the update strategy's numbers are ``daemon_placement.py``'s
(upstream's ``util``). Revisions are ControllerRevisions (``daemon_history.py``): the current one's
``controller-revision-hash`` label is the hash new pods carry and updated pods are recognised by.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.daemon_history import cleanup_history, construct_history
from kss_sim.controllers.daemon_placement import (
    ROLLING_UPDATE,
    DaemonPlacement,
    allows_surge,
    daemon_pod_template,
    is_pod_updated,
    min_ready_seconds,
    replace_node_name_affinity,
    target_node_name,
    template_generation,
    update_strategy,
)
from kss_sim.controllers.daemon_update import DaemonPlan, rolling_update_plan
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import (
    Key,
    OwnedIndex,
    adoption_patch,
    controller_ref,
    is_deleting,
    is_ready,
    is_terminated,
    key_of,
    meta,
    pod_from_template,
    selector_matches,
)
from kss_sim.controllers.rollout import (
    CONTROLLER_REVISION_HASH_LABEL,
    available_at,
    creation_order,
    is_available,
)
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "daemonset-controller"

FAILED_POD_BACKOFF = timedelta(seconds=1)  # dsc.failedPodsBackoff: 1s doubling to 15 minutes
FAILED_POD_BACKOFF_MAX = timedelta(minutes=15)

WATCHED_KINDS = ("DaemonSet", "Pod", "Node")
GRACEFUL = DeleteOptions(graceful=True)  # podControl's DeleteOptions{}: the pod's own grace period


# --- the status ------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class DaemonSetStatus:
    """The counts ``updateDaemonSetStatus`` writes."""

    desired: int = 0
    current: int = 0
    misscheduled: int = 0
    ready: int = 0
    updated: int = 0
    available: int = 0
    next_available: datetime | None = None  # when a Ready pod becomes available (minReadySeconds)

    @property
    def unavailable(self) -> int:
        """``numberUnavailable``."""
        return self.desired - self.available

    def fields(self, observed_generation: int | None) -> dict[str, Any]:
        """The status as apps/v1 renders it (``omitempty`` fields left out when zero)."""
        body: dict[str, Any] = {
            "currentNumberScheduled": self.current,
            "numberMisscheduled": self.misscheduled,
            "desiredNumberScheduled": self.desired,
            "numberReady": self.ready,
        }
        optional = {
            "observedGeneration": observed_generation or 0,
            "updatedNumberScheduled": self.updated,
            "numberAvailable": self.available,
            "numberUnavailable": self.unavailable,
        }
        body.update({k: v for k, v in optional.items() if v})
        return body


_STATUS_FIELDS = (
    "currentNumberScheduled",
    "numberMisscheduled",
    "desiredNumberScheduled",
    "numberReady",
    "observedGeneration",
    "updatedNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
)


class DaemonSetController(ReconcileLoop[Key]):
    """Runs every DaemonSet's pods on the nodes that should have them (see the module docstring)."""

    name = "daemonset-controller"
    watched_kinds = WATCHED_KINDS

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        retry_base_seconds: float = 0.005,
        retry_max_seconds: float = 60.0,
    ) -> None:
        """A stopped controller over ``store``; ``clock`` decides availability (``minReadySeconds``) and the
        failed-pod backoff."""
        super().__init__(store, clock=clock, retry_base_seconds=retry_base_seconds, retry_max_seconds=retry_max_seconds)
        self._pods = OwnedIndex()  # pod -> uid of its controlling DaemonSet
        self._sets: dict[str, Key] = {}  # DaemonSet uid -> key
        self._node_shape: dict[str, str] = {}  # node -> its labels and taints (what placement reads)
        self._failed_backoff: dict[tuple[str, str], tuple[datetime, timedelta]] = {}  # (ds uid, node)

    # --- indexes ------------------------------------------------------------------------------------------------
    def reset(self) -> None:
        self._pods.clear()
        self._sets.clear()
        self._node_shape.clear()
        self._failed_backoff.clear()

    def resync(self) -> list[Key]:
        """Index every DaemonSet, pod and node; queue every DaemonSet."""
        keys: list[Key] = []
        for entry in self.store.select("DaemonSet").items:
            self._sets[str(meta(entry.obj).get("uid"))] = (entry.namespace, entry.name)
            keys.append((entry.namespace, entry.name))
        for entry in self.store.select("Pod").items:
            self._index_pod(entry.obj, deleted=False)
        for entry in self.store.select("Node").items:
            self._node_shape[entry.name] = _node_shape(entry.obj)
        return keys

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        deleted = event_type == DELETED
        if kind == "DaemonSet":
            uid = str(meta(obj).get("uid"))
            if deleted:
                self._sets.pop(uid, None)
            else:
                self._sets[uid] = key_of(obj)
            return [key_of(obj)]
        if kind == "Node":
            name = str(meta(obj).get("name"))
            shape = None if deleted else _node_shape(obj)
            before = self._node_shape.pop(name, None)
            if shape is not None:
                self._node_shape[name] = shape
            # Heartbeats and status changes do not move daemon pods (shouldIgnoreNodeUpdate).
            return [] if before == shape else sorted(self._sets.values())
        before, now = self._index_pod(obj, deleted=deleted)
        keys = {self._sets[uid] for uid in (before, now) if uid is not None and uid in self._sets}
        namespace, _ = key_of(obj)
        # An orphan: the DaemonSets of its namespace whose selector matches may adopt it (none there: no need to
        # ask the store; a DaemonSet not observed yet claims its orphans when it is).
        if now is None and not deleted and any(ns == namespace for ns, _ in self._sets.values()):
            labels = meta(obj).get("labels") or {}
            for entry in self.store.select("DaemonSet", namespace).items:
                if selector_matches(entry.obj, labels):
                    keys.add((entry.namespace, entry.name))
        return sorted(keys)

    def _index_pod(self, pod: Obj, *, deleted: bool) -> tuple[str | None, str | None]:
        """Record the pod's controlling DaemonSet (or orphanhood); returns (controller before, controller now)."""
        return self._pods.track(pod, deleted=deleted, owner_kind="DaemonSet")

    # --- reconcile ----------------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        try:
            ds = self.store.read("DaemonSet", *key).obj  # read-only
        except NotFound:
            return
        if is_deleting(ds):
            return  # upstream leaves a DaemonSet being deleted alone (its history may be gone)
        if not _has_selector(ds):
            self.store.create_event(
                ds,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
                type="Warning",
                component=COMPONENT,
            )
            return
        nodes = [entry.obj for entry in self.store.select("Node").items]
        current, old = construct_history(self.store, ds, lambda: self._claim_pods(ds))
        hash_ = str((meta(current).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) or "")
        generation = template_generation(ds)
        placement = DaemonPlacement.of(ds)
        wrote = self._manage(ds, nodes, placement, hash_, generation)
        if not wrote and update_strategy(ds) == ROLLING_UPDATE:
            # Upstream rolls only once manage's creations and deletions are observed: ours come back as changes.
            self._rolling_update(ds, nodes, placement, hash_, generation)
        cleanup_history(self.store, ds, old, lambda: self._claim_pods(ds))
        self._update_status(ds, nodes, placement, hash_, generation)

    def _claim_pods(self, ds: Obj) -> list[Obj]:
        """``ClaimPods``: pods ``ds`` controls and still selects, orphans it selects (adopted); controlled pods
        it no longer selects are released. Pods as stored (read-only)."""
        uid = str(meta(ds).get("uid"))
        namespace, _ = key_of(ds)
        claimed: list[Obj] = []
        for pod_key in self._pods.owned_by(uid):
            pod = self._read_pod(pod_key)
            if pod is None:
                continue
            if selector_matches(ds, meta(pod).get("labels")):
                claimed.append(pod)
            elif not is_deleting(pod):
                self._release(pod, uid)
        for pod_key in self._pods.orphans_for(namespace, (ds.get("spec") or {}).get("selector")):
            pod = self._read_pod(pod_key)
            if pod is None or controller_ref(pod) is not None or is_deleting(pod):
                continue
            if selector_matches(ds, meta(pod).get("labels")):
                try:
                    claimed.append(self.store.patch("Pod", *pod_key, adoption_patch(pod, ds), "merge"))
                except (NotFound, Conflict):
                    continue  # gone or changed: its change brings us back
        return claimed

    def _read_pod(self, key: Key) -> Obj | None:
        try:
            return self.store.read("Pod", *key).obj
        except NotFound:
            return None

    def _release(self, pod: Obj, owner_uid: str) -> None:
        refs = [r for r in meta(pod).get("ownerReferences") or [] if r.get("uid") != owner_uid]
        body = {"metadata": {"ownerReferences": refs or None, "resourceVersion": meta(pod).get("resourceVersion")}}
        with contextlib.suppress(NotFound, Conflict):  # gone or changed: its change brings us back
            self.store.patch("Pod", *key_of(pod), body, "merge")

    def _nodes_to_pods(self, ds: Obj) -> dict[str, list[Obj]]:
        """``getNodesToDaemonPods``: the claimed pods by target node (finished pods being deleted left out)."""
        by_node: dict[str, list[Obj]] = {}
        for pod in self._claim_pods(ds):
            if is_terminated(pod) and is_deleting(pod):
                continue
            node = target_node_name(pod)
            if node is not None:
                by_node.setdefault(node, []).append(pod)
        return by_node

    def _manage(
        self, ds: Obj, nodes: list[Obj], placement: DaemonPlacement, hash_: str, generation: int | None
    ) -> bool:
        """``manage``: create and delete pods so each node has what it should; True if anything was written."""
        by_node = self._nodes_to_pods(ds)
        surge = allows_surge(ds)
        plan = DaemonPlan()
        for node in nodes:
            self._pods_should_be_on_node(ds, node, by_node, placement, hash_, surge, plan)
        existing = {str(meta(n).get("name")) for n in nodes}
        for node_name, pods in by_node.items():
            if node_name not in existing:
                # Unscheduled pods for a node that is gone would never be placed nor collected.
                plan.delete += [str(meta(p).get("name")) for p in pods if not (p.get("spec") or {}).get("nodeName")]
        return self._sync_nodes(ds, plan, hash_, generation)

    def _pods_should_be_on_node(
        self,
        ds: Obj,
        node: Obj,
        by_node: Mapping[str, list[Obj]],
        placement: DaemonPlacement,
        hash_: str,
        surge: bool,
        plan: DaemonPlan,
    ) -> None:
        """``podsShouldBeOnNode``: adds to ``plan`` what this node needs."""
        node_name = str(meta(node).get("name"))
        should_run, should_continue = placement.should_run(node)
        pods = by_node.get(node_name)
        if should_run and not pods:
            plan.create.append(node_name)
            return
        if should_continue:
            running: list[Obj] = []
            for pod in pods or []:
                if is_deleting(pod):
                    continue
                phase = (pod.get("status") or {}).get("phase")
                if phase == "Failed":
                    if self._failed_pod_in_backoff(ds, node_name):
                        continue
                    pod_ns, pod_name = key_of(pod)
                    self.store.create_event(
                        ds,
                        "FailedDaemonPod",
                        f"Found failed daemon pod {pod_ns}/{pod_name} on node {node_name}, will try to kill it",
                        type="Warning",
                        component=COMPONENT,
                    )
                    plan.delete.append(pod_name)
                elif phase == "Succeeded":
                    pod_ns, pod_name = key_of(pod)
                    self.store.create_event(
                        ds,
                        "SucceededDaemonPod",
                        f"Found succeeded daemon pod {pod_ns}/{pod_name} on node {node_name}, will try to delete it",
                        component=COMPONENT,
                    )
                    plan.delete.append(pod_name)
                else:
                    running.append(pod)
            running.sort(key=creation_order)
            if not surge:
                plan.delete += [str(meta(p).get("name")) for p in running[1:]]
                return
            if not running:
                if should_run:
                    plan.create.append(node_name)
                return
            if len(running) == 1:
                return
            # Surging: keep the oldest new pod and, while it is not yet available, the oldest old one if Ready.
            oldest_new: Obj | None = None
            oldest_old: Obj | None = None
            for pod in running:
                is_new = (meta(pod).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) == hash_
                if is_new and oldest_new is None:
                    oldest_new = pod
                elif not is_new and oldest_old is None:
                    oldest_old = pod
                else:
                    plan.delete.append(str(meta(pod).get("name")))
            if (
                oldest_new is not None
                and oldest_old is not None
                and (not is_ready(oldest_old) or is_available(oldest_new, min_ready_seconds(ds), self.now()))
            ):
                plan.delete.append(str(meta(oldest_old).get("name")))
            return
        if pods:
            plan.delete += [str(meta(p).get("name")) for p in pods if not is_deleting(p)]

    def _failed_pod_in_backoff(self, ds: Obj, node_name: str) -> bool:
        """``failedPodsBackoff``: a failed pod on a node is killed at most once per delay (1s doubling to 15m)."""
        key = (str(meta(ds).get("uid")), node_name)
        now = self.now()
        entry = self._failed_backoff.get(key)
        if entry is not None and now < entry[0]:
            self.requeue_at(key_of(ds), entry[0])
            return True
        delay = FAILED_POD_BACKOFF if entry is None else min(entry[1] * 2, FAILED_POD_BACKOFF_MAX)
        self._failed_backoff[key] = (now + delay, delay)
        return False

    def _sync_nodes(self, ds: Obj, plan: DaemonPlan, hash_: str, generation: int | None) -> bool:
        """``syncNodes``: create a pod for each node of ``plan.create``, delete the pods of ``plan.delete``."""
        namespace, ds_name = key_of(ds)
        template = daemon_pod_template(ds, hash_, generation) if plan.create else {}
        wrote = False
        # The pods and their Events share commits (upstream creates them in concurrent batches, slowStartBatch):
        # one commit each, awaited in turn, was most of the API process's CPU per pod at thousands of nodes.
        # Waited for before anything else is read (a create refused too), so what follows, a retry included, sees
        # them committed, as before.
        with self.store.deferred() as pending:
            try:
                for node_name in plan.create:
                    pod = pod_from_template(ds, template, generate_name=f"{ds_name}-")
                    replace_node_name_affinity(pod["spec"], node_name)
                    created = self.store.create("Pod", pod, namespace)
                    wrote = True
                    self.store.create_event(
                        ds, "SuccessfulCreate", f"Created pod: {meta(created).get('name')}", component=COMPONENT
                    )
            finally:
                pending.wait()
        for pod_name in dict.fromkeys(plan.delete):
            try:
                self.store.delete("Pod", namespace, pod_name, options=GRACEFUL)
            except NotFound:
                continue
            wrote = True
            self.store.create_event(ds, "SuccessfulDelete", f"Deleted pod: {pod_name}", component=COMPONENT)
        return wrote

    def _rolling_update(
        self, ds: Obj, nodes: list[Obj], placement: DaemonPlacement, hash_: str, generation: int | None
    ) -> None:
        """``rollingUpdate`` (``daemon_update.py``): its plan carried out by ``syncNodes``."""
        plan = rolling_update_plan(ds, nodes, self._nodes_to_pods(ds), placement, hash_, generation, self.now())
        if plan is not None:
            self._sync_nodes(ds, plan, hash_, generation)

    def _update_status(
        self, ds: Obj, nodes: list[Obj], placement: DaemonPlacement, hash_: str, generation: int | None
    ) -> None:
        """``updateDaemonSetStatus``: count and write the status when it changed (re-read on a conflict)."""
        status = self._count(ds, nodes, placement, hash_, generation)
        if status.next_available is not None:
            self.requeue_at(key_of(ds), status.next_available)
        generation_seen = meta(ds).get("generation")
        wanted = status.fields(generation_seen if isinstance(generation_seen, int) else None)
        old = ds.get("status") or {}
        if all(old.get(f) == wanted.get(f) for f in _STATUS_FIELDS):
            return
        body = copy.deepcopy(ds)
        body["status"] = {**{k: v for k, v in old.items() if k not in _STATUS_FIELDS}, **wanted}
        try:
            # Carries the resourceVersion read at the start: a DaemonSet changed since is reconciled again.
            self.store.update("DaemonSet", body, subresource="status")
        except NotFound:
            return

    def _count(
        self, ds: Obj, nodes: list[Obj], placement: DaemonPlacement, hash_: str, generation: int | None
    ) -> DaemonSetStatus:
        by_node = self._nodes_to_pods(ds)
        status = DaemonSetStatus()
        now = self.now()
        min_ready = min_ready_seconds(ds)
        for node in nodes:
            pods = by_node.get(str(meta(node).get("name"))) or []
            if not placement.should_run(node)[0]:
                if pods:
                    status.misscheduled += 1
                continue
            status.desired += 1
            if not pods:
                continue
            status.current += 1
            pod = min(pods, key=creation_order)
            if is_ready(pod):
                status.ready += 1
                at = available_at(pod, min_ready)
                if at is not None and at <= now:
                    status.available += 1
                elif at is not None and (status.next_available is None or at < status.next_available):
                    status.next_available = at
            if is_pod_updated(pod, hash_, generation):
                status.updated += 1
        return status


def _node_shape(node: Mapping[str, Any]) -> str:
    """The parts of a node placement reads: labels and taints."""
    return json.dumps(
        [meta(node).get("labels") or {}, (node.get("spec") or {}).get("taints") or []], sort_keys=True, default=str
    )


def _has_selector(ds: Mapping[str, Any]) -> bool:
    selector = (ds.get("spec") or {}).get("selector")
    return isinstance(selector, dict) and bool(selector.get("matchLabels") or selector.get("matchExpressions"))
