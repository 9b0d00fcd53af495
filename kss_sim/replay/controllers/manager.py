"""The workload kinds in a replay: what the engine hands over and to which controller it goes.

The engine (``app/replay/engine.py``) gives every create/update/delete of a Deployment, ReplicaSet, StatefulSet,
DaemonSet, Job or CronJob to :class:`WorkloadControllers` and tells it when a pod it made is bound or gone and when
nodes come, change or go; the controllers make and delete pods through :class:`ReplayActions` only. Pods the engine
received otherwise (``pod_arrived``: a start snapshot's, an event's) are adopted by their owners, and a ReplicaSet or
Job that names a Deployment or CronJob as its controller (a snapshot holds both) joins it instead of running alone.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime

from kss_sim.controllers.owned import controller_ref, selector_matches
from kss_sim.kube.objects import Obj
from kss_sim.replay.controllers.base import ArrivedPod, Hub, Key, Owner, ReplayActions, WorkloadError
from kss_sim.replay.controllers.cronjob import CronJobOwner, parse_schedule
from kss_sim.replay.controllers.daemonset import DaemonSetOwner
from kss_sim.replay.controllers.deployment import DeploymentOwner
from kss_sim.replay.controllers.job import JobOwner
from kss_sim.replay.controllers.replicaset import ReplicaSetOwner
from kss_sim.replay.controllers.statefulset import StatefulSetOwner

_OWNERS: dict[str, Callable[[Hub, Obj, float | None], Owner]] = {
    "Deployment": DeploymentOwner,
    "ReplicaSet": ReplicaSetOwner,
    "StatefulSet": StatefulSetOwner,
    "DaemonSet": DaemonSetOwner,
    "Job": JobOwner,
    "CronJob": CronJobOwner,
}


def check_workload_object(obj: Obj) -> list[str]:
    """What keeps a workload object from running in a replay, each as ``path: message`` (empty: it runs). The
    engine or a loader can ask before the run; :meth:`WorkloadControllers.apply` raises the first one."""
    kind = obj.get("kind")
    spec = obj.get("spec")
    if kind not in _OWNERS:
        return [f"kind: {kind!r} is not a workload kind ({', '.join(sorted(_OWNERS))})"]
    if not isinstance(spec, dict):
        return ["spec: Required value"]
    problems: list[str] = []
    template_path = "spec.jobTemplate.spec.template" if kind == "CronJob" else "spec.template"
    holder = ((spec.get("jobTemplate") or {}).get("spec") or {}) if kind == "CronJob" else spec
    template = holder.get("template") if isinstance(holder, dict) else None
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        problems.append(f"{template_path}.spec: Required value: a pod template")
    elif not template["spec"].get("containers"):
        problems.append(f"{template_path}.spec.containers: Required value")
    for field in ("replicas", "parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"):
        value = holder.get(field) if isinstance(holder, dict) else None
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            problems.append(f"{field}: Invalid value: {value!r}: must be a non-negative integer")
    indexed = isinstance(holder, dict) and holder.get("completionMode") == "Indexed"
    if indexed and not isinstance(holder.get("completions"), int):
        problems.append("completions: Required value: when completion mode is Indexed")
    if kind == "CronJob":
        try:
            parse_schedule(obj)
        except WorkloadError as exc:
            problems += exc.problems
    return problems


class WorkloadControllers:
    """Deployment, ReplicaSet, StatefulSet, DaemonSet, Job and CronJob controllers on the replay's virtual clock."""

    KINDS: frozenset[str] = frozenset(_OWNERS)

    def __init__(self, actions: ReplayActions, epoch: datetime) -> None:
        self._hub = Hub(actions, epoch)
        self._owners: dict[tuple[str, str, str], Owner] = {}  # (kind, namespace, name)

    # --- events ---------------------------------------------------------------------------------------------
    def apply(self, action: str, kind: str, namespace: str, name: str, obj: Obj | None, run_for: float | None) -> None:
        """A create, update or delete of a workload object (an update of an unknown one creates it; a create of a
        known one updates it, as ``kubectl apply``). :class:`WorkloadError` lists what keeps it from running."""
        if kind not in _OWNERS:
            raise WorkloadError([f"{kind}: not a workload kind"])
        key = (kind, namespace or "default", name)
        if action == "delete":
            owner = self._owners.pop(key, None)
            if owner is not None:
                owner.delete()
            return
        if action not in ("create", "update") or obj is None:
            raise WorkloadError([f"{kind} {key[1]}/{name}: unknown action {action!r}"])
        problems = check_workload_object(obj)
        if problems:
            raise WorkloadError([f"{kind} {key[1]}/{name}: {p}" for p in problems])
        existing = self._owners.get(key)
        if existing is not None:
            existing.update(copy.deepcopy(obj))
            return
        obj = copy.deepcopy(obj)
        parent = self._parent_of(kind, obj)
        if isinstance(parent, DeploymentOwner):
            parent.adopt_set(ReplicaSetOwner(self._hub, obj, run_for, parent=parent))
            return
        if isinstance(parent, CronJobOwner):
            parent.adopt_job(JobOwner(self._hub, obj, run_for, parent=parent))
            return
        owner = _OWNERS[kind](self._hub, obj, run_for)
        self._owners[key] = owner
        if isinstance(owner, DeploymentOwner | CronJobOwner):
            self._adopt_children(owner)
        else:
            self._hub.register(owner)
        self._hub.mark(owner)

    # --- adoption of ReplicaSets by Deployments, Jobs by CronJobs -------------------------------------------------
    def _parent_of(self, kind: str, obj: Obj) -> Owner | None:
        """The Deployment a ReplicaSet belongs to (its controller reference, or an orphan the Deployment selects),
        the CronJob a Job belongs to (its controller reference: CronJobs adopt no orphans)."""
        parent_kind = {"ReplicaSet": "Deployment", "Job": "CronJob"}.get(kind)
        if parent_kind is None:
            return None
        namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
        ref = controller_ref(obj)
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for (k, ns, _), owner in self._owners.items():
            if k != parent_kind or ns != namespace or not owner.alive:
                continue
            if ref is not None and owner.refers_to_me(ref):
                return owner
            if ref is None and parent_kind == "Deployment" and selector_matches(owner.obj, labels):
                return owner
        return None

    def _adopt_children(self, owner: DeploymentOwner | CronJobOwner) -> None:
        """A Deployment or CronJob arrived: the ReplicaSets or Jobs already running alone that are its own join it."""
        child_kind = "ReplicaSet" if isinstance(owner, DeploymentOwner) else "Job"
        for key, child in list(self._owners.items()):
            if key[0] != child_kind or key[1] != owner.namespace or self._parent_of(child_kind, child.obj) is not owner:
                continue
            del self._owners[key]
            child.parent = owner
            if isinstance(owner, DeploymentOwner) and isinstance(child, ReplicaSetOwner):
                owner.adopt_set(child)
            elif isinstance(owner, CronJobOwner) and isinstance(child, JobOwner):
                owner.adopt_job(child)

    def pod_arrived(self, pod: Obj) -> None:
        """A pod the controllers did not make entered the replay (a start snapshot's, bound or not, or an event's):
        its owner adopts it, now or when the owner arrives. Terminated or deleting pods are not active: nobody
        counts them."""
        meta = pod.get("metadata") or {}
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
            return
        node = (pod.get("spec") or {}).get("nodeName") or None
        now = self._hub.now
        namespace, name = _key(pod)
        self._hub.arrive(ArrivedPod(namespace, name, pod, now, node, now if node else None))

    def pod_bound(self, pod: Obj, node: str) -> None:
        """A pod was bound to ``node`` (it runs from now on)."""
        tracked = self._hub.pods.get(_key(pod))
        if tracked is None:
            arrived = self._hub.arrived.get(_key(pod))
            if arrived is not None:
                arrived.node, arrived.bound_at = node, self._hub.now
            return
        tracked.node = node
        tracked.bound_at = self._hub.now
        tracked.owner.pod_bound(tracked)

    def pod_finished(self, pod: Obj, *, succeeded: bool) -> None:
        """A pod left: it ran its runFor (``succeeded``) or was deleted, preempted or evicted (not)."""
        tracked = self._hub.pods.get(_key(pod))
        if tracked is None:
            self._hub.arrived.pop(_key(pod), None)
            return
        self._hub.forget(tracked)
        tracked.owner.pod_gone(tracked, succeeded=succeeded)

    def node_added(self, node: Obj) -> None:
        """A node came (or changed: labels, taints, unschedulable): DaemonSets look again."""
        self._nodes_changed()

    node_updated = node_added

    def node_removed(self, name: str) -> None:
        """A node went (its pods are deleted by the engine, as PodGC does)."""
        self._nodes_changed()

    def _nodes_changed(self) -> None:
        for owner in self._owners.values():
            if isinstance(owner, DaemonSetOwner):
                self._hub.mark(owner)

    # --- reading ----------------------------------------------------------------------------------------------
    def objects(self) -> list[Obj]:
        """Every workload object the controllers hold, with the status its controller would write (the Deployments'
        ReplicaSets and the CronJobs' Jobs included), in kind, namespace, name order."""
        owners: list[Owner] = []
        for owner in self._owners.values():
            owners.append(owner)
            if isinstance(owner, DeploymentOwner):
                owners.extend(owner.sets)
            elif isinstance(owner, CronJobOwner):
                owners.extend(owner.jobs)
        owners.sort(key=lambda o: (o.kind, o.namespace, o.name))
        return [owner.status() for owner in owners]

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        """One object of :meth:`objects`, or None."""
        for obj in self.objects():
            meta = obj["metadata"]
            if obj["kind"] == kind and meta["namespace"] == namespace and meta["name"] == name:
                return obj
        return None

    @property
    def pods_created(self) -> int:
        """How many pods the controllers have made."""
        return self._hub.pods_created


def _key(pod: Obj) -> Key:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")
