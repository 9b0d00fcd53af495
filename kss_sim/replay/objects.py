"""The replay's object intake: a workload event applied to the replay's cluster as the API server and the
scheduler's informers would see it.

Nodes and the kinds plugins read go to the scheduling loop's event handlers (app/scheduler/loop.py, as in
``kss serve``); the workload kinds go to the workload controllers; pods to the engine. A node's removal leaves its
pods to the pod GC, which deletes them once it has been missing 40 s; a NoExecute taint's evictions are the taint
eviction controller's (``world.py``).
"""

from __future__ import annotations

import functools
import itertools
import logging
from typing import TYPE_CHECKING

from kss_sim.cluster.kinds.workload_v1beta1 import in_stored_version
from kss_sim.kube.node_ready import node_monitor_grace_period
from kss_sim.kube.objects import Obj
from kss_sim.replay import intake
from kss_sim.replay.volumes import release_volume_of
from kss_sim.replay.workload import Event
from kss_sim.scheduler.loop import OBJECT_KINDS

if TYPE_CHECKING:
    from kss_sim.replay.engine import Replay

log = logging.getLogger("kss.replay")


class ObjectIntake:
    """Applies workload events to one replay."""

    def __init__(self, run: Replay) -> None:
        self.run = run
        self.nodes: dict[str, Obj] = {}
        # (node, taint key, effect) -> pods with a pending NoExecute eviction are checked again at their time.
        self._ignored_kinds: set[str] = set()
        self._lapses: dict[str, int] = {}  # stopped node -> the token of its coming lease lapse
        self._lapse_tokens = itertools.count()

    # --- events ---------------------------------------------------------------------------------
    def apply(self, event: Event) -> None:
        run = self.run
        action = event.action
        if action == "create":
            assert event.obj is not None
            self.create(intake.copy_object(event.obj), run_for=event.run_for, end_at=event.end_at, seq=None)
            self._usage_curve(event)
        elif action == "update":
            assert event.obj is not None
            self.update(intake.copy_object(event.obj))
            self._usage_curve(event)
        elif action == "delete":
            self.delete(event.kind, event.namespace, event.name, grace=event.grace)
        elif action in ("cordon", "uncordon"):
            node = self.nodes.get(event.name)
            if node is None:
                log.warning("%s %s at %gs: no such node", action, event.name, run.now)
                return
            self._replace_node(intake.cordoned(node, action == "cordon"))
        elif action in ("taint", "untaint"):
            node = self.nodes.get(event.name)
            if node is None:
                log.warning("%s %s at %gs: no such node", action, event.name, run.now)
                return
            assert event.taint is not None
            add = action == "taint"
            # A NoExecute taint's evictions are the taint eviction controller's (``replay/world.py``): the engine
            # runs it whenever the workload holds such a taint.
            self._replace_node(intake.tainted(node, event.taint, add=add, epoch=run.workload.epoch, now=run.now))
        elif action == "drain":
            node = self.nodes.get(event.name)
            if node is None:
                log.warning("drain %s at %gs: no such node", event.name, run.now)
                return
            self._replace_node(intake.cordoned(node, True))
            assert run.controllers is not None  # the engine runs them whenever the workload drains a node
            run.controllers.drain(event.name)
        elif action in ("failNode", "healNode"):
            node = self.nodes.get(event.name)
            if node is None:
                log.warning("%s %s at %gs: no such node", action, event.name, run.now)
                return
            # The engine runs the controllers whenever the workload fails a node (the node lifecycle controller's
            # taints, the taint eviction controller's evictions).
            assert run.controllers is not None
            self._lapses.pop(event.name, None)  # a heal (or another failure) before a lapse was seen
            if event.report == "unreachable":
                self._stop_lease(event.name)
            else:
                self._replace_node(run.controllers.reported_node(node, event.report))
        elif action == "applyConfig":
            assert event.obj is not None
            run.apply_config(event.obj)

    def _usage_curve(self, event: Event) -> None:
        """A workload's usage curve (its pods' usage annotations over time) is the controllers' to follow."""
        controllers = self.run.controllers
        if event.usage is None or event.obj is None or controllers is None:
            return
        meta = event.obj.get("metadata") or {}
        controllers.usage_curve(event.kind, str(meta.get("namespace") or "default"), str(meta.get("name")), event.usage)

    def create(self, obj: Obj, *, run_for: float | None, end_at: float | None, seq: int | None) -> None:
        run = self.run
        obj = in_stored_version(obj)
        kind = scheduler_kind(obj)
        if kind == "Pod":
            run._create_pod(obj, run_for=run_for, end_at=end_at, owner="", seq=seq)
            return
        if kind in _WORKLOAD:
            self._to_controllers("create", obj, run_for)
            return
        arrival = next(run._arrivals) if seq is None else seq
        intake.ensure_name(obj, kind, arrival)
        intake.stamp(obj, kind=kind, seq=arrival, epoch=run.workload.epoch, now=run.now)
        if kind == "Node":
            name = str(obj["metadata"]["name"])
            if name in self.nodes:
                log.warning("node %s already exists; the create at %gs is ignored", name, run.now)
                return
            self._add_node(intake.new_node(obj))
            return
        intake.admit_storage(kind, obj, run.cluster)
        self.put(kind, obj, added=True)
        if run.controllers is not None:
            run.controllers.object_put(obj)

    def create_if_absent(self, obj: Obj) -> bool:
        """:meth:`create` unless an object of that kind, namespace and name exists (False then)."""
        obj = in_stored_version(obj)
        kind = scheduler_kind(obj)
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if kind not in CLUSTER_SCOPED_OR_KNOWN:
            self._ignore(kind)
            return False
        if (
            self.find(kind, "" if kind in intake.CLUSTER_SCOPED else meta.get("namespace") or "default", name)
            is not None
        ):
            return False
        self.create(obj, run_for=None, end_at=None, seq=None)
        return True

    def find(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The stored object of a kind in ClusterObjects' tables, lists or named kinds, or None."""
        return self.run.loop.find(kind, namespace, name)

    def update(self, obj: Obj) -> None:
        run = self.run
        obj = in_stored_version(obj)
        kind = scheduler_kind(obj)
        meta = obj.setdefault("metadata", {})
        if kind == "Pod":
            run._update_pod(obj)
            return
        if kind in _WORKLOAD:
            self._to_controllers("update", obj, None)
            return
        if kind == "Node":
            old = self.nodes.get(str(meta.get("name")))
            if old is None:
                self.create(obj, run_for=None, end_at=None, seq=None)
                return
            meta.setdefault("uid", (old.get("metadata") or {}).get("uid"))
            meta.setdefault("creationTimestamp", (old.get("metadata") or {}).get("creationTimestamp"))
            self._replace_node(intake.new_node(obj))
            return
        if kind not in CLUSTER_SCOPED_OR_KNOWN:
            self._ignore(kind)
            return
        if kind not in intake.CLUSTER_SCOPED:
            meta["namespace"] = meta.get("namespace") or "default"
        self.put(kind, obj, added=False)
        if run.controllers is not None:
            run.controllers.object_put(obj)

    def delete(self, kind: str, namespace: str, name: str, *, grace: float | None = None) -> None:
        run = self.run
        namespace = namespace or "default"
        if f"{kind}.v1alpha2" in _V1ALPHA2_KINDS and run.loop.find(f"{kind}.v1alpha2", namespace, name) is not None:
            kind = f"{kind}.v1alpha2"  # a delete names no version: the v1.36 object of that name
        if kind == "Pod":
            run._delete_pod(f"{namespace}/{name}", grace=grace)
            return
        if kind in _WORKLOAD:
            if run.controllers is not None:  # none made: the workload never had one of these kinds to delete
                run.controllers.apply("delete", kind, namespace, name, None, None)
            return
        if kind == "Node":
            self._remove_node(name)
            return
        if kind not in CLUSTER_SCOPED_OR_KNOWN:
            self._ignore(kind)
            return
        gone = run.loop.find(kind, "" if kind in intake.CLUSTER_SCOPED else namespace, name)
        if gone is None:
            return
        run.loop.handle("DELETED", kind, gone)
        if run.controllers is not None:
            run.controllers.object_deleted(kind, namespace, name)
        if kind == "PersistentVolumeClaim":
            release_volume_of(run, gone)

    def _to_controllers(self, action: str, obj: Obj, run_for: float | None) -> None:
        controllers = self.run.controllers
        assert controllers is not None, "the engine makes the controllers when its workload holds a workload kind"
        meta = obj.get("metadata") or {}
        name = str(meta.get("name"))
        controllers.apply(action, str(obj.get("kind")), meta.get("namespace") or "default", name, obj, run_for)

    # --- other kinds ----------------------------------------------------------------------------
    def put(self, kind: str, obj: Obj, *, added: bool = True) -> None:
        """Store a non-pod, non-node object where plugins read it, and raise its queue event."""
        if kind == "Node" or not self.run.loop.handle("ADDED" if added else "MODIFIED", kind, obj):
            self._ignore(kind)

    def _ignore(self, kind: str) -> None:
        if kind not in self._ignored_kinds:
            self._ignored_kinds.add(kind)
            log.info("objects of kind %s do not matter to the scheduler; left out of the replay", kind)

    # --- nodes ----------------------------------------------------------------------------------
    def _add_node(self, node: Obj) -> None:
        run = self.run
        self.nodes[node["metadata"]["name"]] = node
        run.loop.handle("ADDED", "Node", node)
        if run.controllers is not None:
            run.controllers.node_added(node)

    def _replace_node(self, node: Obj) -> None:
        run = self.run
        self.nodes[node["metadata"]["name"]] = node
        run.loop.handle("MODIFIED", "Node", node)
        if run.controllers is not None:
            run.controllers.node_added(node)  # DaemonSets re-check a changed node as a new one
        run.terminations.node_changed(node["metadata"]["name"])  # Ready again: its kubelet ends pods past their grace

    def _stop_lease(self, name: str) -> None:
        """``failNode``: the node's kubelet stops; its Lease, last renewed now, lapses after the node lifecycle
        controller's ``--node-monitor-grace-period`` (the release's default), which then marks the node Unknown
        (and taints it unreachable). A ``healNode`` before then finds it Ready as it was."""
        run = self.run
        token = self._lapses[name] = next(self._lapse_tokens)
        grace = node_monitor_grace_period(run.kube_version.minor)
        run.call_at(run.now + grace, functools.partial(self._lease_lapsed, name, token))

    def _lease_lapsed(self, name: str, token: int) -> None:
        node = self.nodes.get(name)
        if self._lapses.get(name) != token or node is None or self.run.controllers is None:
            return
        del self._lapses[name]
        self._replace_node(self.run.controllers.reported_node(node, "unreachable"))

    def _remove_node(self, name: str) -> None:
        run = self.run
        node = self.nodes.pop(name, None)
        if node is None:
            log.warning("delete of node %s at %gs: no such node", name, run.now)
            return
        run.node_deleted(name)
        run.loop.handle("DELETED", "Node", node)
        if run.controllers is not None:
            run.controllers.node_removed(name)


_V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
# v1.36's Workload and PodGroup go by the scheduler's own names for them (the kinds of v1.35 and scheduler-plugins
# keep theirs), as in ``kss simulate``; v1.37's v1beta1 ones are read in that form (``in_stored_version``).
_V1ALPHA2_KINDS = frozenset(("PodGroup.v1alpha2", "Workload.v1alpha2"))


def scheduler_kind(obj: Obj) -> str:
    """The name the scheduler's listers keep ``obj``'s kind under (``PodGroup.v1alpha2`` for v1.36's)."""
    kind = str(obj.get("kind"))
    named = f"{kind}.v1alpha2"
    return named if obj.get("apiVersion") == _V1ALPHA2 and named in _V1ALPHA2_KINDS else kind


_WORKLOAD = frozenset(
    ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "HorizontalPodAutoscaler")
)  # world.KINDS
CLUSTER_SCOPED_OR_KNOWN = OBJECT_KINDS - {"Node"}
