"""The ReplicaSet controller: kube-controller-manager's ``pkg/controller/replicaset`` over the virtual cluster.

One sync of a ReplicaSet, as upstream's ``syncReplicaSet``:

- its pods are the active pods of its namespace it controls and whose labels match its selector: an orphan that
  matches is adopted (the controller reference added), a pod it controls that stopped matching is released;
- unless it is being deleted, it keeps ``spec.replicas`` (default 1) of them: missing ones are created from the
  template (``generateName: <rs>-``, its labels, the controller reference; never bound: the scheduler places
  them), at most 500 a sync (``burstReplicas``) and stopping at the first failure; extra ones are deleted in
  ``ActivePodsWithRanks`` order (``pod_ranking``), ranked against the pods of every ReplicaSet with the same
  controller; each with upstream's ``SuccessfulCreate`` / ``SuccessfulDelete`` Event (``FailedCreate`` /
  ``FailedDelete`` and a ``ReplicaFailure`` condition on an error). Pods are deleted with DeleteOptions, as
  ``podControl.DeletePod`` does: a bound pod ends gracefully (Terminating until its kubelet removes it), and
  counts as terminating, not active, meanwhile (so its replacement is not held back, nor a surplus re-created);
- its status (``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas``,
  ``terminatingReplicas`` — DeploymentReplicaSetTerminatingReplicas is beta and on in v1.35 —,
  ``observedGeneration``, conditions) is written when it differs, with ``omitempty`` as Go writes it.

Differences on purpose: upstream counts the status from the pods it saw before creating or deleting (the next
sync corrects it) and guards against its stale cache with "expectations"; here the store is read directly and the
pods this sync made or removed are counted at once. A ready pod that becomes available after ``minReadySeconds``
is looked at again at that instant on the controller's clock (upstream re-queues after ``minReadySeconds``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import ApiError, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import (
    Controllers,
    Key,
    OwnedIndex,
    adoption_patch,
    controller_ref,
    controller_uid,
    is_active,
    is_controlled_by,
    is_deleting,
    is_ready,
    is_terminated,
    key_of,
    meta,
    pod_from_template,
    selector_matches,
)
from kss_sim.controllers.pod_ranking import NEVER, available_from, is_available, pods_to_delete
from kss_sim.kube.labels import label_selector_matches
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500  # kube-controller-manager's --concurrent-... burstReplicas
WATCHED_KINDS = ("ReplicaSet", "Pod")
GRACEFUL = DeleteOptions(graceful=True)  # podControl's DeleteOptions{}: the pod's own grace period


def replicas_of(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` (default 1, as the API defaults it)."""
    value = (obj.get("spec") or {}).get("replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def min_ready_seconds_of(obj: Mapping[str, Any]) -> int:
    """``spec.minReadySeconds`` (default 0)."""
    value = (obj.get("spec") or {}).get("minReadySeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(meta(obj).get("labels") or {})


def is_terminating(pod: Mapping[str, Any]) -> bool:
    """``controller.FilterTerminatingPods``: being deleted and not yet finished."""
    return is_deleting(pod) and not is_terminated(pod)


def replica_set_status(
    rs: Mapping[str, Any],
    pods: list[Obj],
    terminating: list[Obj],
    failure: tuple[str, str] | None,
    now: datetime,
    timestamp: str,
) -> Obj:
    """``calculateStatus``: the status ``rs`` should have with ``pods`` (active, claimed) and ``terminating``;
    ``failure`` is (reason, message) of this sync's error, if any. Fields as Go serialises them (omitempty)."""
    template_labels = ((rs.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    min_ready = min_ready_seconds_of(rs)
    fully = sum(1 for p in pods if label_selector_matches({"matchLabels": template_labels}, _labels(p)))
    ready = sum(1 for p in pods if is_ready(p))
    available = sum(1 for p in pods if is_available(p, min_ready, now))
    current = rs.get("status") or {}
    conditions = [dict(c) for c in current.get("conditions") or [] if isinstance(c, dict)]
    existing = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
    if failure is not None and existing is None:
        conditions.append(
            {
                "type": "ReplicaFailure",
                "status": "True",
                "lastTransitionTime": timestamp,
                "reason": failure[0],
                "message": failure[1],
            }
        )
    elif failure is None and existing is not None:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    status: Obj = {"replicas": len(pods)}
    for field, value in (("fullyLabeledReplicas", fully), ("readyReplicas", ready), ("availableReplicas", available)):
        if value:
            status[field] = value
    status["terminatingReplicas"] = len(terminating)
    generation = meta(rs).get("generation")
    if generation:
        status["observedGeneration"] = generation
    if conditions:
        status["conditions"] = conditions
    return status


class ReplicaSetController(ReconcileLoop[Key]):
    """Keeps every ReplicaSet's pods and status (see the module docstring); ``start``/``stop`` with the app."""

    name = "replicaset-controller"
    watched_kinds = WATCHED_KINDS

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        retry_base_seconds: float = 0.005,
        retry_max_seconds: float = 60.0,
    ) -> None:
        """A stopped controller over ``store``."""
        super().__init__(store, clock=clock, retry_base_seconds=retry_base_seconds, retry_max_seconds=retry_max_seconds)
        self._pod_owner = OwnedIndex()  # pod -> its controller's uid; orphans by namespace
        self._sets = Controllers("ReplicaSet")

    # --- indexes ------------------------------------------------------------------------------------------
    def reset(self) -> None:
        self._pod_owner.clear()
        self._sets.clear()

    def _index_pod(self, pod: Mapping[str, Any], *, deleted: bool = False) -> str | None:
        """Record a pod's controller, or that it is an orphan (or that it is gone); returns the controller uid it
        had."""
        before, _ = self._pod_owner.track(pod, deleted=deleted)
        return before

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        key = key_of(obj)
        if kind == "ReplicaSet":
            self._sets.put(key, None if event_type == DELETED else str(meta(obj).get("uid") or ""))
            return [key]
        before = self._index_pod(obj, deleted=event_type == DELETED)
        keys = self._sets.keys_of((before, controller_uid(obj)))
        if controller_ref(obj) is None and event_type != DELETED:
            keys += self._sets.selecting(self.store, key[0], _labels(obj))  # an orphan to adopt
        return keys

    def resync(self) -> list[Key]:
        """Index every pod and ReplicaSet, and queue every ReplicaSet."""
        for entry in self.store.select("Pod").items:
            self._index_pod(entry.obj)
        keys: list[Key] = []
        for entry in self.store.select("ReplicaSet").items:
            self._sets.put((entry.namespace, entry.name), str(entry.obj["metadata"].get("uid") or ""))
            keys.append((entry.namespace, entry.name))
        return keys

    # --- one sync -----------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        namespace, name = key
        try:
            rs = self.store.read("ReplicaSet", namespace, name).obj
        except NotFound:
            return
        now = self.now()
        pods = self._candidate_pods(rs)
        claimed = self._claim_pods(rs, [p for p in pods if is_active(p)])
        terminating = [
            p for p in pods if is_terminating(p) and is_controlled_by(p, rs) and selector_matches(rs, _labels(p))
        ]
        failure: tuple[str, str] | None = None
        if not is_deleting(rs):
            claimed, failure, ending = self._manage_replicas(rs, claimed, now)
            terminating += ending
        self._write_status(rs, claimed, terminating, failure, now)
        self._requeue_for_availability(key, rs, claimed, now)

    def _candidate_pods(self, rs: Obj) -> list[Obj]:
        """The pods ``rs`` may claim, by name: those it controls and the orphans its selector may match. Upstream
        lists the whole namespace and lets ``ClaimPods`` skip the rest; reading only these gives the same claim
        without a cost that grows with the namespace's other pods (a replay reconciles at every instant)."""
        uid, selector = str(meta(rs).get("uid") or ""), (rs.get("spec") or {}).get("selector")
        pods: list[Obj] = []
        for pod_key in self._pod_owner.claimable(uid, key_of(rs)[0], selector):
            try:
                pods.append(self.store.read("Pod", *pod_key).obj)  # read-only
            except NotFound:
                continue  # its deletion is in the inbox
        return pods

    def _claim_pods(self, rs: Obj, active: list[Obj]) -> list[Obj]:
        """``PodControllerRefManager.ClaimPods``: the pods ``rs`` keeps; adopts matching orphans, releases its
        pods that stopped matching."""
        uid = meta(rs).get("uid")
        claimed: list[Obj] = []
        adoptable: bool | None = None
        for pod in active:
            matches = selector_matches(rs, _labels(pod))
            owner = controller_uid(pod)
            if owner is not None:
                if owner != uid:
                    continue
                if matches:
                    claimed.append(pod)
                elif not is_deleting(rs):
                    self._release(rs, pod)
                continue
            if not matches or is_deleting(rs) or is_deleting(pod):
                continue
            if adoptable is None:
                adoptable = self._can_adopt(rs)
            if adoptable:
                adopted = self._adopt(rs, pod)
                if adopted is not None:
                    claimed.append(adopted)
        return claimed

    def _can_adopt(self, rs: Obj) -> bool:
        """``RecheckDeletionTimestamp``: the ReplicaSet as stored now is the same one and not being deleted."""
        fresh = self.store.get("ReplicaSet", *key_of(rs))
        return fresh is not None and meta(fresh).get("uid") == meta(rs).get("uid") and not is_deleting(fresh)

    def _adopt(self, rs: Obj, pod: Obj) -> Obj | None:
        namespace, name = key_of(pod)
        try:
            adopted = self.store.patch("Pod", namespace, name, adoption_patch(pod, rs), "merge")
        except NotFound:
            return None
        self._index_pod(adopted)
        return adopted

    def _release(self, rs: Obj, pod: Obj) -> None:
        namespace, name = key_of(pod)
        uid = meta(rs).get("uid")
        refs = [r for r in meta(pod).get("ownerReferences") or [] if isinstance(r, dict) and r.get("uid") != uid]
        body = {
            "metadata": {
                "ownerReferences": refs or None,
                "uid": meta(pod).get("uid"),
                "resourceVersion": meta(pod).get("resourceVersion"),
            }
        }
        try:
            released = self.store.patch("Pod", namespace, name, body, "merge")
        except NotFound:
            return
        self._index_pod(released)

    def _manage_replicas(
        self, rs: Obj, pods: list[Obj], now: datetime
    ) -> tuple[list[Obj], tuple[str, str] | None, list[Obj]]:
        """``manageReplicas``: create or delete pods towards ``spec.replicas``; returns the pods after, the
        ReplicaFailure (reason, message) of an error, and the pods it deleted that now terminate gracefully."""
        diff = len(pods) - replicas_of(rs)
        if diff < 0:
            return (*self._create_pods(rs, pods, min(-diff, BURST_REPLICAS)), [])
        if diff > 0:
            return self._delete_pods(rs, pods, min(diff, BURST_REPLICAS), now)
        return pods, None, []

    def _create_pods(self, rs: Obj, pods: list[Obj], count: int) -> tuple[list[Obj], tuple[str, str] | None]:
        template = (rs.get("spec") or {}).get("template") or {}
        pods = list(pods)
        # Upstream creates in doubling batches and stops at the first batch with an error: one at a time here.
        for _ in range(count):
            try:
                created = self.store.create("Pod", pod_from_template(rs, template))
            except ApiError as exc:
                self.store.create_event(
                    rs, "FailedCreate", f"Error creating: {exc.message}", type="Warning", component=COMPONENT
                )
                return pods, ("FailedCreate", exc.message)
            self._index_pod(created)
            self.store.create_event(
                rs, "SuccessfulCreate", f"Created pod: {meta(created).get('name')}", component=COMPONENT
            )
            pods.append(created)
        return pods, None

    def _delete_pods(
        self, rs: Obj, pods: list[Obj], count: int, now: datetime
    ) -> tuple[list[Obj], tuple[str, str] | None, list[Obj]]:
        victims = pods_to_delete(pods, self._related_pods(rs), count, now)
        gone: set[str] = set()
        ending: list[Obj] = []
        failure: tuple[str, str] | None = None
        for pod in victims:
            namespace, name = key_of(pod)
            uid = str(meta(pod).get("uid") or "")
            try:
                self.store.delete("Pod", namespace, name, uid=uid or None, options=GRACEFUL)
            except NotFound:
                pass
            except ApiError as exc:
                self.store.create_event(
                    rs, "FailedDelete", f"Error deleting: {exc.message}", type="Warning", component=COMPONENT
                )
                failure = ("FailedDelete", exc.message)
                continue
            else:
                self.store.create_event(rs, "SuccessfulDelete", f"Deleted pod: {name}", component=COMPONENT)
            gone.add(name)
            after = self.store.get("Pod", namespace, name)
            if after is not None and meta(after).get("uid") == uid and is_terminating(after):
                self._index_pod(after)  # still this ReplicaSet's until its kubelet removes it
                ending.append(after)
            else:
                self._index_pod(pod, deleted=True)
        return [p for p in pods if meta(p).get("name") not in gone], failure, ending

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """``getIndirectlyRelatedPods``: the pods of every ReplicaSet with the same controller (only this one's
        when it has none)."""
        namespace = key_of(rs)[0]
        owner = controller_uid(rs)
        uids: list[str] = [str(meta(rs).get("uid") or "")]
        if owner is not None:
            for name in self._sets.names_in(namespace):
                other = self.store.get("ReplicaSet", namespace, name)
                if other is not None and controller_uid(other) == owner:
                    uids.append(str(meta(other).get("uid") or ""))
        related: list[Obj] = []
        for uid in dict.fromkeys(uids):
            for pod_key in self._pod_owner.owned_by(uid):
                try:
                    related.append(self.store.read("Pod", *pod_key).obj)
                except NotFound:
                    continue
        return related

    def _write_status(
        self, rs: Obj, pods: list[Obj], terminating: list[Obj], failure: tuple[str, str] | None, now: datetime
    ) -> None:
        status = replica_set_status(rs, pods, terminating, failure, now, self.timestamp())
        if status == (rs.get("status") or {}):
            return
        body = {"metadata": dict(meta(rs)), "status": status}
        try:
            self.store.update("ReplicaSet", body, subresource="status")  # Conflict: the base retries
        except NotFound:
            return

    def _requeue_for_availability(self, key: Key, rs: Obj, pods: Iterable[Obj], now: datetime) -> None:
        """Look again when the next ready pod becomes available (``minReadySeconds`` after it became ready)."""
        min_ready = min_ready_seconds_of(rs)
        if min_ready <= 0:
            return
        upcoming = [t for t in (available_from(p, min_ready) for p in pods) if t is not None and now <= t < NEVER]
        if upcoming:
            # Availability is strict (``Before``): a moment past the instant.
            self.requeue_at(key, min(upcoming) + timedelta(milliseconds=1))
