"""What every offline workload controller shares: the engine's actions, the pods each owner made, names and uids
made deterministically, and a work queue drained on the virtual clock.

The controllers of ``kss serve`` (``app/controllers``) read and write a store; these keep their own state and act
only through :class:`ReplayActions`. Pods that reach the replay otherwise (a start snapshot's, a workload event's) are
adopted as kube-controller-manager's ControllerRefManager claims them: by their controller ownerReference, or, for
an orphan, by the first owner whose selector matches; a pod nobody claims yet waits in :attr:`Hub.arrived`.

A change (an event, a pod bound or gone, a node) marks its owner dirty; the dirty owners are synced by one timer
at the current virtual time, so everything that happens at one instant (a snapshot's objects, a node removal and
its pods' deletions) is seen before any controller acts, as an informer's work queue would batch it.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kss_sim.controllers.job_parts import rfc3339
from kss_sim.controllers.owned import controller_ref, owner_reference, selector_matches
from kss_sim.kube.objects import Obj
from kss_sim.replay.workload import WorkloadError
from kss_sim.replay.world import Engine

__all__ = ["WorkloadError"]  # raised for objects the controllers cannot run

Key = tuple[str, str]  # (namespace, name)

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # utilrand's alphabet: generateName's five characters
_MAX_GENERATE_PREFIX = 58  # validation.maxGeneratedNameLength: 63 less the five random characters
_UID_NAMESPACE = uuid.UUID("6f1c1b43-5a0e-4c7e-9d3b-2f3c4b5a6d7e")


# What the engine does for the controllers: the protocol the replay's object world uses too, written once.
ReplayActions = Engine


@dataclass(slots=True, eq=False)
class TrackedPod:
    """A pod an owner made, as the owner knows it (the engine holds the object itself)."""

    namespace: str
    name: str
    owner: Owner
    created: float
    annotations: dict[str, str] = field(default_factory=dict)
    node: str | None = None
    bound_at: float | None = None
    index: int | None = None  # a StatefulSet's ordinal, an Indexed Job's completion index
    revision: str = ""  # the template hash / revision it was made from
    target_node: str = ""  # a DaemonSet pod's node

    @property
    def key(self) -> Key:
        return self.namespace, self.name

    def available(self, min_ready_seconds: float, now: float) -> bool:
        """Bound (Running and Ready here) for at least ``minReadySeconds``."""
        return self.bound_at is not None and now >= self.bound_at + min_ready_seconds


@dataclass(slots=True, eq=False)
class ArrivedPod:
    """A pod that reached the replay otherwise than through the controllers, not (yet) claimed by an owner."""

    namespace: str
    name: str
    obj: Obj
    arrived: float
    node: str | None = None
    bound_at: float | None = None

    @property
    def key(self) -> Key:
        return self.namespace, self.name


class Hub:
    """The controllers' shared context: the engine's actions, the epoch, which owner made each live pod, names
    handed out, and the dirty owners waiting for a sync."""

    def __init__(self, actions: ReplayActions, epoch: datetime) -> None:
        self.actions = actions
        self.epoch = epoch
        self.pods: dict[Key, TrackedPod] = {}
        self.arrived: dict[Key, ArrivedPod] = {}  # pods no owner has claimed yet, in arrival order
        self._claimers: dict[Owner, None] = {}  # owners of pods (not Deployments, CronJobs), in creation order
        self._dirty: dict[Owner, None] = {}  # insertion-ordered: owners sync in the order they were touched
        self._flush_scheduled = False
        self._name_counters: dict[str, int] = {}
        self._uid_counters: dict[str, int] = {}
        self.pods_created = 0

    # --- time -------------------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.actions.now

    def at(self, t: float) -> datetime:
        """Virtual time ``t`` on the wall clock (the workload's epoch + t)."""
        return self.epoch + timedelta(seconds=t)

    def stamp(self, t: float) -> str:
        """Virtual time ``t`` as the API writes timestamps."""
        return rfc3339(self.at(t))

    def virtual(self, when: datetime) -> float:
        """A wall-clock time as virtual seconds."""
        return (when - self.epoch).total_seconds()

    # --- names and uids ---------------------------------------------------------------------------------------
    def uid(self, kind: str, namespace: str, name: str) -> str:
        """A uid for an object the controllers make or receive without one: the same for the same object made
        the same number of times before (a re-created object gets a new one, as the API server gives)."""
        key = f"{kind}/{namespace}/{name}"
        count = self._uid_counters.get(key, 0)
        self._uid_counters[key] = count + 1
        return str(uuid.uuid5(_UID_NAMESPACE, f"{key}#{count}"))

    def generate_name(self, namespace: str, prefix: str) -> str:
        """``generateName``: ``prefix`` (cut to 58 characters) and five characters of utilrand's alphabet, drawn
        from a hash of the prefix and a counter (deterministic, never a live pod's name)."""
        prefix = prefix[:_MAX_GENERATE_PREFIX]
        count = self._name_counters.get(prefix, 0)
        while True:
            digest = hashlib.blake2b(f"{prefix}#{count}".encode(), digest_size=8).digest()
            count += 1
            name = prefix + "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])
            if (namespace, name) not in self.pods and (namespace, name) not in self.arrived:
                self._name_counters[prefix] = count
                return name

    # --- pods ---------------------------------------------------------------------------------------------------
    def create_pod(self, owner: Owner, pod: Obj, **facts: Any) -> TrackedPod:
        """Hand ``pod`` (named) to the engine as ``owner``'s, running for the owner's ``run_for``."""
        meta = pod["metadata"]
        tracked = TrackedPod(
            namespace=str(meta["namespace"]),
            name=str(meta["name"]),
            owner=owner,
            created=self.now,
            annotations=dict(meta.get("annotations") or {}),
            **facts,
        )
        self.pods[tracked.key] = tracked
        owner.pods[tracked.name] = tracked
        self.pods_created += 1
        self.actions.create_pod(pod, run_for=owner.run_for, owner=owner.ref)
        return tracked

    def delete_pod(self, pod: TrackedPod) -> None:
        """Delete one of the controllers' pods now; forgotten first, so the engine's report of it is ignored."""
        self.forget(pod)
        self.actions.delete_pod(pod.namespace, pod.name)

    def forget(self, pod: TrackedPod) -> None:
        """Stop tracking ``pod`` (it is gone)."""
        if self.pods.get(pod.key) is pod:
            del self.pods[pod.key]
        if pod.owner.pods.get(pod.name) is pod:
            del pod.owner.pods[pod.name]

    # --- adoption ----------------------------------------------------------------------------------------------
    def register(self, owner: Owner) -> None:
        """``owner`` controls pods from now on: it claims the waiting pods that are its own."""
        self._claimers[owner] = None
        for arrived in [a for a in self.arrived.values() if a.namespace == owner.namespace]:
            if owner.claims(arrived.obj):
                self._adopt(owner, arrived)

    def arrive(self, arrived: ArrivedPod) -> None:
        """A pod reached the replay otherwise than through the controllers: its owner claims it now, or it waits
        for one (an orphan is taken by the first owner, in creation order, that selects it)."""
        for owner in list(self._claimers):
            if not owner.alive:
                del self._claimers[owner]
            elif owner.namespace == arrived.namespace and owner.claims(arrived.obj):
                self._adopt(owner, arrived)
                return
        self.arrived[arrived.key] = arrived

    def _adopt(self, owner: Owner, arrived: ArrivedPod) -> None:
        self.arrived.pop(arrived.key, None)
        meta = arrived.obj.get("metadata") or {}
        tracked = TrackedPod(
            namespace=arrived.namespace,
            name=arrived.name,
            owner=owner,
            created=arrived.arrived,
            annotations=dict(meta.get("annotations") or {}),
            node=arrived.node,
            bound_at=arrived.bound_at,
            **owner.adoption_facts(arrived.obj),
        )
        self.pods[tracked.key] = tracked
        owner.pods[tracked.name] = tracked
        owner.pod_adopted(tracked)

    # --- the work queue -----------------------------------------------------------------------------------------
    def mark(self, owner: Owner) -> None:
        """Sync ``owner`` at the current virtual time, after whatever else happens at this instant."""
        if not owner.alive:
            return
        self._dirty[owner] = None
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.actions.call_at(self.now, self._flush)

    def wake(self, owner: Owner, at: float, *, holds_run: bool = True) -> None:
        """Sync ``owner`` again at virtual time ``at`` (a deadline, a backoff, a schedule); a CronJob's schedule does
        not hold the run (it never ends)."""
        self.actions.call_at(max(at, self.now), lambda: self.mark(owner), holds_run=holds_run)

    def _flush(self) -> None:
        self._flush_scheduled = False
        while self._dirty:
            owner = next(iter(self._dirty))
            del self._dirty[owner]
            if owner.alive:
                owner.sync()


class Owner:
    """A workload object with the pods (or Jobs, ReplicaSets) it controls; subclasses say how it syncs."""

    kind = ""
    api_version = ""

    def __init__(self, hub: Hub, obj: Obj, run_for: float | None, *, parent: Owner | None = None) -> None:
        self.hub = hub
        meta = obj.setdefault("metadata", {})
        self.namespace = str(meta.get("namespace") or "default")
        self.name = str(meta.get("name") or "")
        meta["namespace"] = self.namespace
        self.uid_given = bool(meta.get("uid"))  # a snapshot's owner: its pods name it by this uid
        meta.setdefault("uid", hub.uid(self.kind, self.namespace, self.name))
        meta.setdefault("creationTimestamp", hub.stamp(hub.now))
        meta.setdefault("generation", 1)
        obj.setdefault("apiVersion", self.api_version)
        obj["kind"] = self.kind
        self.obj = obj
        self.run_for = run_for
        self.parent = parent
        self.created = hub.now
        self.alive = True
        self.pods: dict[str, TrackedPod] = {}

    @property
    def ref(self) -> str:
        """``Kind/namespace/name``: the owner the engine records for its pods."""
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def spec(self) -> Obj:
        spec = self.obj.get("spec")
        return spec if isinstance(spec, dict) else {}

    def owner_reference(self) -> Obj:
        return owner_reference(self.obj)

    # --- adoption (``ClaimPods``) ---------------------------------------------------------------------------------
    def selector(self) -> Obj | None:
        """The label selector its pods are claimed by (``spec.selector``)."""
        selector = self.spec.get("selector")
        return selector if isinstance(selector, dict) else None

    def refers_to_me(self, ref: Obj) -> bool:
        """Whether a controller ownerReference names this owner: by uid, or by kind and name when the workload gave
        the owner no uid (a hand-written start whose pods name their owner)."""
        if ref.get("kind") != self.kind:
            return False
        if ref.get("uid") and self.uid_given:
            return bool(ref.get("uid") == self.obj["metadata"]["uid"])
        return ref.get("name") == self.name

    def claims(self, pod: Obj) -> bool:
        """Whether this owner takes ``pod``: its controller reference names it, or the pod is an orphan its
        selector matches; either way only a pod it could have made (:meth:`may_own`)."""
        ref = controller_ref(pod)
        if ref is not None:
            return self.refers_to_me(ref) and self.may_own(pod)
        selector = self.selector()
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return selector is not None and selector_matches({"spec": {"selector": selector}}, labels) and self.may_own(pod)

    def may_own(self, pod: Obj) -> bool:
        """Kind-specific membership (a StatefulSet's pod is named ``<set>-<ordinal>``)."""
        return True

    def adoption_facts(self, pod: Obj) -> dict[str, Any]:
        """What the owner tracks of an adopted pod (an ordinal, a revision, a target node)."""
        return {}

    def pod_adopted(self, pod: TrackedPod) -> None:
        """A pod was adopted: look again."""
        self.hub.mark(self)

    def update(self, obj: Obj) -> None:
        """The object replaced by an update event: spec, labels and annotations taken, identity kept; the
        generation moves when the spec changes."""
        meta = self.obj["metadata"]
        new_meta = obj.get("metadata") or {}
        if obj.get("spec") != self.obj.get("spec"):
            meta["generation"] = int(meta.get("generation") or 1) + 1
        for key in ("labels", "annotations"):
            if key in new_meta:
                meta[key] = new_meta[key]
            else:
                meta.pop(key, None)
        self.obj["spec"] = obj.get("spec") or {}
        self.hub.mark(self)

    def sync(self) -> None:
        """Bring the owner's pods toward its spec (called from the work queue)."""
        raise NotImplementedError

    def pod_bound(self, pod: TrackedPod) -> None:
        """One of its pods was bound (it runs: Running and Ready in the replay)."""
        self.hub.mark(self)

    def pod_gone(self, pod: TrackedPod, *, succeeded: bool) -> None:
        """One of its pods left the cluster: it ran its runFor (``succeeded``) or was deleted, preempted or
        evicted."""
        self.hub.mark(self)

    def delete(self) -> None:
        """Deleted with background propagation: its pods (and dependents) go at once."""
        self.alive = False
        for pod in sorted(self.pods.values(), key=lambda p: p.name):
            self.hub.delete_pod(pod)

    def status(self) -> Obj:
        """The object with the status its controller would write (for reports and tests)."""
        return self.obj

    def rank_view(self, pod: TrackedPod) -> Obj:
        """The pod as the scale-down ranking reads it: node, phase, Ready since binding, creation; the name stands
        in for the uid in tie-breaks (deterministic)."""
        bound = pod.bound_at is not None
        status: Obj = {"phase": "Running" if bound else "Pending"}
        if bound and pod.bound_at is not None:
            status["conditions"] = [
                {"type": "Ready", "status": "True", "lastTransitionTime": self.hub.stamp(pod.bound_at)}
            ]
        return {
            "metadata": {
                "name": pod.name,
                "uid": pod.name,
                "creationTimestamp": self.hub.stamp(pod.created),
                "annotations": pod.annotations,
            },
            "spec": {"nodeName": pod.node or ""},
            "status": status,
        }


def int_spec(spec: Obj, name: str, default: int) -> int:
    """An integer spec field, ``default`` when absent (a nil pointer defaulted)."""
    value = spec.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else default
