"""The disruption controller: kube-controller-manager's ``pkg/controller/disruption`` keeping every
PodDisruptionBudget's status, over the virtual cluster.

One sync of a PDB, as upstream's ``trySync``:

- its pods: those of its namespace its ``spec.selector`` matches (none without a selector, all with an empty
  one); none is the ``NoPods`` "No matching pods found" Event;
- expected and desired healthy (``getExpectedPodCount``): with ``maxUnavailable``, expected is the owning
  controllers' scale and desired that less maxUnavailable (a percentage rounded up; at least 0); with an integer
  ``minAvailable``, desired is it and expected the number of pods; with a percentage, expected is the scale and
  desired the percentage of it rounded up. The scale (``getExpectedScale``) adds up, once per controller, the
  ``spec.replicas`` of each pod's controller: a ReplicaSet (its Deployment's when a Deployment controls it), a
  ReplicationController or a StatefulSet. A pod without a controller is left out, with the ``UnmanagedPods``
  Warning; one whose controller is none of those (a DaemonSet, a Job) or is gone fails the sync;
- current healthy: the pods that are Ready, not being deleted and not in ``status.disruptedPods`` (entries the
  eviction API writes, kept for two minutes while their pod is not being deleted; the PDB is looked at again
  when the first expires);
- ``disruptionsAllowed`` = current - desired (0 when negative or when nothing is expected), ``observedGeneration``,
  and the ``DisruptionAllowed`` condition (True ``SufficientPods`` / False ``InsufficientPods``, its transition
  time moved only when its status changes). A failed sync writes ``disruptionsAllowed`` 0 and the condition False
  ``SyncFailed`` with the error (``failSafe``), after the ``CalculateExpectedPodCountFailed`` Warning.

The status is written through the ``status`` subresource with the resourceVersion read, only when it changes.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kss_sim.cluster.errors import NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import Key, controller_ref, is_deleting, key_of, meta, pod_condition
from kss_sim.controllers.rollout import parse_time, scaled_value
from kss_sim.kube.labels import label_selector_matches
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "controllermanager"  # upstream's disruption controller records its Events as the controller manager
DELETION_TIMEOUT = timedelta(minutes=2)  # how long an eviction's disruptedPods entry waits for the delete
CONDITION = "DisruptionAllowed"
SUFFICIENT = "SufficientPods"
INSUFFICIENT = "InsufficientPods"
SYNC_FAILED = "SyncFailed"


class SyncFailed(Exception):
    """What makes ``failSafe`` write the SyncFailed condition."""


def _replicas(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def is_ready(pod: Mapping[str, Any]) -> bool:
    """``IsPodReady``: the Ready condition is True."""
    condition = pod_condition(pod, "Ready")
    return condition is not None and condition.get("status") == "True"


class DisruptionController(ReconcileLoop[Key]):
    """Keeps every PodDisruptionBudget's status (see the module docstring)."""

    name = "disruption-controller"
    watched_kinds = ("PodDisruptionBudget", "Pod")

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now) -> None:
        """A stopped controller over ``store``; ``clock`` times the disruptedPods entries."""
        super().__init__(store, clock=clock)
        self._budgets: dict[str, dict[str, Obj]] = {}  # namespace -> name -> PDB (the store's read-only dict)
        self._matched: dict[Key, set[Key]] = {}  # pod -> the PDBs it matched when last seen

    def reset(self) -> None:
        self._budgets.clear()
        self._matched.clear()

    # --- what changed ---------------------------------------------------------------------------------------
    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        key = key_of(obj)
        if kind == "PodDisruptionBudget":
            if event_type == DELETED:
                self._budgets.get(key[0], {}).pop(key[1], None)
                return []
            self._budgets.setdefault(key[0], {})[key[1]] = obj
            return [key]
        before = self._matched.pop(key, set())
        now: set[Key] = set()
        if event_type != DELETED:
            labels = meta(obj).get("labels") or {}
            selected = self._budgets.get(key[0], {}).items()
            now = {(key[0], name) for name, pdb in selected if _selects(pdb, labels)}
            if now:
                self._matched[key] = now
        return sorted(before | now)

    def resync(self) -> list[Key]:
        keys = [
            self.observe("ADDED", "PodDisruptionBudget", e.obj)[0]
            for e in self.store.select("PodDisruptionBudget").items
        ]
        for entry in self.store.select("Pod").items:
            self.observe("ADDED", "Pod", entry.obj)
        return keys

    # --- reconcile ------------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        try:
            pdb = self.store.read("PodDisruptionBudget", key[0], key[1]).obj
        except NotFound:
            return
        pods = [e.obj for e in self.store.select("Pod", key[0]).items if _selects(pdb, meta(e.obj).get("labels") or {})]
        if not pods:
            self.store.create_event(pdb, "NoPods", "No matching pods found", component=COMPONENT)
        try:
            expected, desired, unmanaged = self._expected_pod_count(pdb, pods)
        except SyncFailed as exc:
            message = f"Failed to calculate the number of expected pods: {exc}"
            self.store.create_event(
                pdb, "CalculateExpectedPodCountFailed", message, type="Warning", component=COMPONENT
            )
            log.info("PodDisruptionBudget %s/%s: %s", *key, exc)
            self._fail_safe(pdb, str(exc))
            return
        if unmanaged:
            selector = (pdb.get("spec") or {}).get("selector")
            message = (
                f"Pods selected by this PodDisruptionBudget (selector: {_selector_text(selector)}) were found to be "
                "unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in "
                'undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an '
                "integer value."
            )
            self.store.create_event(pdb, "UnmanagedPods", message, type="Warning", component=COMPONENT)
        now = self.now()
        disrupted, recheck = _disrupted_pods(pods, pdb, now)
        healthy = sum(1 for p in pods if not is_deleting(p) and meta(p).get("name") not in disrupted and is_ready(p))
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        status: dict[str, Any] = {
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "disruptionsAllowed": allowed,
            "observedGeneration": meta(pdb).get("generation", 0),
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        if allowed > 0:
            condition = _condition("True", SUFFICIENT, "", self.timestamp())
        else:
            condition = _condition("False", INSUFFICIENT, "", self.timestamp())
        status["conditions"] = _set_condition((pdb.get("status") or {}).get("conditions"), condition)
        self._write(pdb, status)
        if recheck is not None:
            self.requeue_at(key, recheck)

    def _expected_pod_count(self, pdb: Obj, pods: Sequence[Obj]) -> tuple[int, int, list[str]]:
        """``getExpectedPodCount``: (expected, desired healthy, unmanaged pod names)."""
        spec = pdb.get("spec") or {}
        try:
            if spec.get("maxUnavailable") is not None:
                expected, unmanaged = self._expected_scale(pods)
                unavailable = scaled_value(spec["maxUnavailable"], expected, round_up=True)
                return expected, max(0, expected - unavailable), unmanaged
            minimum = spec.get("minAvailable")
            if isinstance(minimum, int) and not isinstance(minimum, bool):
                return len(pods), minimum, []
            if isinstance(minimum, str):
                expected, unmanaged = self._expected_scale(pods)
                return expected, scaled_value(minimum, expected, round_up=True), unmanaged
        except ValueError as exc:
            raise SyncFailed(str(exc)) from exc
        return 0, 0, []

    def _expected_scale(self, pods: Sequence[Obj]) -> tuple[int, list[str]]:
        """``getExpectedScale``: the owning controllers' replicas, each counted once; pods without one apart."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_ref(pod)
            if ref is None:
                unmanaged.append(str(meta(pod).get("name")))
                continue
            if str(ref.get("uid")) in scales:
                continue
            found = self._controller_scale(ref, key_of(pod)[0])
            if found is None:
                raise SyncFailed(f'found no controllers for pod "{meta(pod).get("name")}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), unmanaged

    def _controller_scale(self, ref: Mapping[str, Any], namespace: str) -> tuple[str, int] | None:
        """The finders: (uid, replicas) of the ReplicaSet (or its Deployment), ReplicationController or
        StatefulSet ``ref`` names, when it exists with that uid."""
        kind = ref.get("kind")
        if kind not in ("ReplicaSet", "ReplicationController", "StatefulSet"):
            return None
        owner = self.store.get(str(kind), namespace, str(ref.get("name")))
        if owner is None or meta(owner).get("uid") != ref.get("uid"):
            return None
        parent = controller_ref(owner) if kind == "ReplicaSet" else None
        if parent is not None and parent.get("kind") == "Deployment":
            deployment = self.store.get("Deployment", namespace, str(parent.get("name")))
            if deployment is None or meta(deployment).get("uid") != parent.get("uid"):
                return None
            return str(parent["uid"]), _replicas(deployment)
        return str(ref["uid"]), _replicas(owner)

    def _fail_safe(self, pdb: Obj, message: str) -> None:
        status = dict(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        condition = _condition("False", SYNC_FAILED, message, self.timestamp())
        condition["observedGeneration"] = status.get("observedGeneration", 0)
        status["conditions"] = _set_condition(status.get("conditions"), condition)
        self._write(pdb, status)

    def _write(self, pdb: Obj, status: dict[str, Any]) -> None:
        if status == pdb.get("status"):
            return
        body = {**copy.deepcopy(pdb), "status": status}
        self.store.update("PodDisruptionBudget", body, subresource="status", manager="kube-controller-manager")


def _selects(pdb: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    selector = (pdb.get("spec") or {}).get("selector")
    return label_selector_matches(selector if isinstance(selector, dict) else None, labels)


def _selector_text(selector: Any) -> str:
    """The selector as Go's ``%v`` prints a ``*metav1.LabelSelector`` (its match labels; near enough to read)."""
    if not isinstance(selector, dict):
        return "nil"
    labels = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    expressions = len(selector.get("matchExpressions") or [])
    return f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[{expressions}],}}"


def _disrupted_pods(pods: Sequence[Obj], pdb: Obj, now: datetime) -> tuple[dict[str, str], datetime | None]:
    """``buildDisruptedPodMap``: the entries still waiting for their pod's delete, and when the first expires."""
    entries = (pdb.get("status") or {}).get("disruptedPods") or {}
    kept: dict[str, str] = {}
    recheck: datetime | None = None
    for pod in pods:
        name = str(meta(pod).get("name"))
        stamp = entries.get(name) if isinstance(entries, dict) else None
        when = parse_time(stamp)
        if is_deleting(pod) or when is None:
            continue
        expires = when + DELETION_TIMEOUT
        if expires >= now:
            kept[name] = str(stamp)
            recheck = expires if recheck is None or expires < recheck else recheck
    return kept, recheck


def _condition(status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": CONDITION, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}


def _set_condition(conditions: Any, condition: dict[str, Any]) -> list[dict[str, Any]]:
    """``meta.SetStatusCondition``: replace the condition of that type, keeping its transition time when the
    status does not change; others kept."""
    result: list[dict[str, Any]] = []
    found = False
    for current in conditions or []:
        if not isinstance(current, dict):
            continue
        if current.get("type") != condition["type"]:
            result.append(current)
            continue
        found = True
        if current.get("status") == condition["status"] and current.get("lastTransitionTime"):
            condition = {**condition, "lastTransitionTime": current["lastTransitionTime"]}
        result.append(condition)
    if not found:
        result.append(condition)
    return result
