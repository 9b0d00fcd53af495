"""The StatefulSet controller: kube-controller-manager's ``pkg/controller/statefulset`` over the virtual cluster.

One reconcile of a set, as ``defaultStatefulSetControl.UpdateStatefulSet`` (v1.35, MaxUnavailableStatefulSet off as
from v1.35.4):

- its pods are claimed (controlled pods it still selects; orphans named ``<set>-<n>`` it selects are adopted;
  controlled pods it no longer selects are released); pods with an ordinal in ``[start, start+replicas)`` are
  replicas, the others are condemned;
- the update revision is ``<set>-<hash of the template>``; the current one is ``status.currentRevision`` (the
  update revision at first). A missing replica is created at the current revision below the partition, at the
  update revision from it, its claims first (``<template>-<set>-<n>``, created when missing, also for a pending
  pod whose claim went away); a failed or succeeded replica is deleted (and recreated next time);
- OrderedReady (the default) processes replicas in ordinal order and stops at the first one created, terminating,
  or not Running and Ready (and available, ``minReadySeconds``): one pod at a time, each after its predecessors.
  Parallel processes them all;
- condemned pods (past the replicas, or below ``spec.ordinals.start``) are deleted from the highest ordinal, one
  at a time and only while every other pod is healthy when OrderedReady, all at once when Parallel;
- a RollingUpdate then deletes the highest-ordinal replica not at the update revision, at or above the
  partition, one at a time, waiting for each replacement to be healthy (OnDelete leaves them);
- pods are deleted with DeleteOptions, as ``podControl`` does: a bound pod ends gracefully (Terminating, which
  the ordered passes wait for, until its kubelet removes it);
- claims carry the ownerReferences ``persistentVolumeClaimRetentionPolicy`` asks for (the garbage collector acts
  on them); a claim whose pod owner is an earlier pod of that name ("stale") holds the pod back until it is
  deleted (claims' deletions are watched for that);
- the status (``replicas``, ``readyReplicas``, ``currentReplicas``, ``updatedReplicas``, ``availableReplicas``,
  ``currentRevision``, ``updateRevision``, ``observedGeneration``, ``collisionCount``) is written when it changed;
  a rollout completes (current := update) when every replica is updated and ready, so
  ``kubectl rollout status sts/x`` follows.

Revisions are ControllerRevisions (``history.py``), as ``getStatefulSetRevisions`` keeps them: the update revision is
the newest when its data equals the template's, an older equal one renumbered past the newest (a rollback, ``kubectl
rollout undo``), or a new one; the current revision is the one ``status.currentRevision`` names (the update revision
when none does), and pods made below the partition get its template. After each pass the revisions that are neither
current, update, nor any pod's are deleted oldest first beyond ``revisionHistoryLimit`` (``truncateHistory``).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.history import (
    applied_template,
    controlled_revisions,
    create_revision,
    delete_revision,
    equal_data,
    new_revision,
    next_revision,
    revision_number,
    sort_revisions,
    update_revision_number,
)
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import (
    Key,
    OwnedIndex,
    adoption_patch,
    controller_ref,
    is_deleting,
    key_of,
    meta,
    selector_matches,
)
from kss_sim.controllers.rollout import available_at, int_field
from kss_sim.controllers.statefulset_pods import (
    DELETE,
    ON_DELETE,
    ROLLING_UPDATE,
    claims_for,
    has_stale_ref,
    identity_labels,
    identity_matches,
    in_ordinal_range,
    is_member,
    min_ready_seconds,
    monotonic,
    new_pod,
    ordinal_of,
    partition,
    pod_revision,
    refs_equal,
    replicas_of,
    retention_policy,
    start_ordinal,
    storage_matches,
    strategy_type,
    wanted_claim_refs,
)
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "statefulset-controller"
WATCHED_KINDS = ("StatefulSet", "Pod", "PersistentVolumeClaim")
GRACEFUL = DeleteOptions(graceful=True)  # podControl's DeleteOptions{}: the pod's own grace period
_STATUS_FIELDS = (
    "observedGeneration",
    "replicas",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "currentRevision",
    "updateRevision",
    "collisionCount",
    "availableReplicas",
)


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _created(pod: Obj) -> bool:
    """``isCreated``: the API server gave it a phase."""
    return _phase(pod) != ""


def _running_and_ready(pod: Obj) -> bool:
    """``isRunningAndReady``."""
    return _phase(pod) == "Running" and available_at(pod, 0) is not None


def _healthy(pod: Obj) -> bool:
    """``isHealthy``."""
    return _running_and_ready(pod) and not is_deleting(pod)


@dataclass
class _Counts:
    """The replica counts of ``updateStatus``."""

    replicas: int = 0
    ready: int = 0
    available: int = 0
    current: int = 0
    updated: int = 0


class StatefulSetController(ReconcileLoop[Key]):
    """Runs every StatefulSet's pods and claims (see the module docstring)."""

    name = "statefulset-controller"
    watched_kinds = WATCHED_KINDS

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        retry_base_seconds: float = 0.005,
        retry_max_seconds: float = 60.0,
    ) -> None:
        """A stopped controller over ``store``; ``clock`` decides availability (``minReadySeconds``)."""
        super().__init__(store, clock=clock, retry_base_seconds=retry_base_seconds, retry_max_seconds=retry_max_seconds)
        self._pods = OwnedIndex()  # pod -> uid of its controlling StatefulSet
        self._sets: dict[str, Key] = {}  # StatefulSet uid -> key

    # --- indexes ------------------------------------------------------------------------------------------------
    def reset(self) -> None:
        self._pods.clear()
        self._sets.clear()

    def resync(self) -> list[Key]:
        """Index every StatefulSet and pod; queue every set."""
        keys: list[Key] = []
        for entry in self.store.select("StatefulSet").items:
            self._sets[str(meta(entry.obj).get("uid"))] = (entry.namespace, entry.name)
            keys.append((entry.namespace, entry.name))
        for entry in self.store.select("Pod").items:
            self._index_pod(entry.obj, deleted=False)
        return keys

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        deleted = event_type == DELETED
        if kind == "StatefulSet":
            if deleted:
                self._sets.pop(str(meta(obj).get("uid")), None)
            else:
                self._sets[str(meta(obj).get("uid"))] = key_of(obj)
            return [key_of(obj)]
        if kind == "PersistentVolumeClaim":
            # A claim gone may free a pod held back by a stale claim (the garbage collector deleted it).
            return self._sets_of_claim(obj) if deleted else []
        before, now = self._index_pod(obj, deleted=deleted)
        keys = {self._sets[uid] for uid in (before, now) if uid is not None and uid in self._sets}
        namespace, _ = key_of(obj)
        # An orphan: the sets of its namespace may adopt it. Most pods have no set in their namespace: asking the
        # store (its lock, a sorted scan) for each was the controller's whole cost. A set not observed yet is
        # reconciled when it is, and then claims its orphans.
        if now is None and not deleted and any(ns == namespace for ns, _ in self._sets.values()):
            for entry in self.store.select("StatefulSet", namespace).items:
                if is_member(entry.obj, obj) and selector_matches(entry.obj, meta(obj).get("labels")):
                    keys.add((entry.namespace, entry.name))
        return sorted(keys)

    def _sets_of_claim(self, claim: Obj) -> list[Key]:
        namespace, name = key_of(claim)
        keys: list[Key] = []
        for entry in self.store.select("StatefulSet", namespace).items:
            templates = (entry.obj.get("spec") or {}).get("volumeClaimTemplates") or []
            prefixes = [
                f"{(t.get('metadata') or {}).get('name')}-{entry.name}-" for t in templates if isinstance(t, dict)
            ]
            if any(name.startswith(prefix) for prefix in prefixes):
                keys.append((entry.namespace, entry.name))
        return keys

    def _index_pod(self, pod: Obj, *, deleted: bool) -> tuple[str | None, str | None]:
        """Record the pod's controlling StatefulSet (or orphanhood); returns (controller before, controller now)."""
        return self._pods.track(pod, deleted=deleted, owner_kind="StatefulSet")

    # --- reconcile ----------------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        try:
            sts = self.store.read("StatefulSet", *key).obj  # read-only
        except NotFound:
            return
        selector = (sts.get("spec") or {}).get("selector") or {}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            return  # validation requires a selector; nothing can be claimed without one
        revisions = sort_revisions(controlled_revisions(self.store, sts))  # adoptOrphanRevisions, ListRevisions
        pods = self._claim_pods(sts)
        current, update, collision_count = self._revisions(sts, revisions)
        current_name, update_name = str(meta(current).get("name")), str(meta(update).get("name"))
        template = applied_template(sts, current)
        status = _SetSync(self, sts, pods, current_name, update_name, template).run()
        status["collisionCount"] = collision_count
        self._write_status(sts, status)
        self._truncate_history(sts, pods, revisions, {current_name, update_name})

    def _revisions(self, sts: Obj, revisions: list[Obj]) -> tuple[Obj, Obj, int]:
        """``getStatefulSetRevisions``: (current, update, collision count); ``revisions`` sorted oldest first."""
        collision_count = int_field(sts.get("status"), "collisionCount", 0)
        update = new_revision(sts, next_revision(revisions), collision_count)
        equal = [r for r in revisions if equal_data(r, update)]
        if equal and equal[-1] is revisions[-1]:
            update = revisions[-1]  # the template has not changed since the newest revision
        elif equal:
            update = update_revision_number(self.store, equal[-1], revision_number(update))  # a rollback
        else:
            update, collision_count = create_revision(self.store, sts, update, collision_count)
        wanted = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in revisions if meta(r).get("name") == wanted), update)
        return current, update, collision_count

    def _truncate_history(self, sts: Obj, pods: list[Obj], revisions: list[Obj], live: set[str]) -> None:
        """``truncateHistory``: revisions no pod is at, neither current nor update, beyond the limit go, oldest
        first."""
        live |= {pod_revision(pod) for pod in pods}
        history = [r for r in revisions if meta(r).get("name") not in live]
        excess = len(history) - int_field(sts.get("spec"), "revisionHistoryLimit", 10)
        for revision in history[: max(0, excess)]:
            delete_revision(self.store, revision)

    def _claim_pods(self, sts: Obj) -> list[Obj]:
        """``getPodsForStatefulSet``: ``ClaimPods`` with the ``isMemberOf`` filter (pods as stored, read-only)."""
        uid = str(meta(sts).get("uid"))
        namespace, _ = key_of(sts)
        claimed: list[Obj] = []
        for pod_key in self._pods.owned_by(uid):
            pod = self._read("Pod", pod_key)
            if pod is None:
                continue
            if is_member(sts, pod) and selector_matches(sts, meta(pod).get("labels")):
                claimed.append(pod)
            elif not is_deleting(pod):
                refs = [r for r in meta(pod).get("ownerReferences") or [] if r.get("uid") != uid]
                body = {"metadata": {"ownerReferences": refs or None, "resourceVersion": meta(pod)["resourceVersion"]}}
                with contextlib.suppress(NotFound, Conflict):  # its change brings the set back
                    self.store.patch("Pod", *pod_key, body, "merge")
        for pod_key in self._pods.orphans_for(namespace, (sts.get("spec") or {}).get("selector")):
            pod = self._read("Pod", pod_key)
            if pod is None or controller_ref(pod) is not None or is_deleting(pod):
                continue
            if is_member(sts, pod) and selector_matches(sts, meta(pod).get("labels")):
                with contextlib.suppress(NotFound, Conflict):
                    claimed.append(self.store.patch("Pod", *pod_key, adoption_patch(pod, sts), "merge"))
        return claimed

    def _read(self, kind: str, key: Key) -> Obj | None:
        try:
            return self.store.read(kind, *key).obj
        except NotFound:
            return None

    def _write_status(self, sts: Obj, status: dict[str, Any]) -> None:
        """``updateStatefulSetStatus``: complete a finished rollout, write when something differs."""
        replicas = replicas_of(sts)
        if (
            strategy_type(sts) == ROLLING_UPDATE
            and status["updatedReplicas"] == replicas
            and status["readyReplicas"] == replicas
            and status["replicas"] == replicas
        ):
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        old = sts.get("status") or {}
        # omitempty fields: a zero is absent.
        wanted = {k: v for k, v in status.items() if v or k in ("replicas", "availableReplicas", "collisionCount")}
        if all(old.get(f) == wanted.get(f) for f in _STATUS_FIELDS):
            return
        body = copy.deepcopy(sts)
        body["status"] = {**{k: v for k, v in old.items() if k not in _STATUS_FIELDS}, **wanted}
        with contextlib.suppress(NotFound):
            self.store.update("StatefulSet", body, subresource="status")  # a conflict is retried

    # --- writes, with upstream's events ---------------------------------------------------------------------------
    def create_pod(self, sts: Obj, pod: Obj) -> Obj:
        """``CreateStatefulPod``: the claims first, then the pod, then the claims' owners."""
        self.create_missing_claims(sts, pod)
        created = self.store.create("Pod", pod)
        self._event(
            sts, "SuccessfulCreate", f"create Pod {meta(pod)['name']} in StatefulSet {meta(sts)['name']} successful"
        )
        self.update_claim_owners(sts, created)
        return created

    def delete_pod(self, sts: Obj, pod: Obj) -> None:
        """``DeleteStatefulPod`` (the claims' owners first, as ``processCondemned``'s caller fixed them): with
        DeleteOptions, so a bound pod ends gracefully, as any client's delete."""
        try:
            self.store.delete("Pod", *key_of(pod), uid=str(meta(pod).get("uid")), options=GRACEFUL)
        except NotFound:
            return
        self._event(
            sts, "SuccessfulDelete", f"delete Pod {meta(pod)['name']} in StatefulSet {meta(sts)['name']} successful"
        )

    def create_missing_claims(self, sts: Obj, pod: Obj) -> None:
        """``createPersistentVolumeClaims``: each claim of the pod that does not exist."""
        for claim in claims_for(sts, ordinal_of(pod)).values():
            claim_key = key_of(claim)
            existing = self._read("PersistentVolumeClaim", claim_key)
            if existing is not None:
                if is_deleting(existing):
                    raise Conflict("persistentvolumeclaims", claim_key[1], f"pvc {claim_key[1]} is being deleted")
                continue
            self.store.create("PersistentVolumeClaim", claim)
            self._event(
                sts,
                "SuccessfulCreate",
                f"create Claim {claim_key[1]} Pod {meta(pod)['name']} in StatefulSet {meta(sts)['name']} success",
            )

    def claim_is_stale(self, sts: Obj, pod: Obj) -> bool:
        """``PodClaimIsStale``: with ``whenScaled: Delete``, a claim still owned by an earlier pod of this name."""
        if retention_policy(sts)[1] != DELETE:
            return False
        for claim in claims_for(sts, ordinal_of(pod)).values():
            existing = self._read("PersistentVolumeClaim", key_of(claim))
            if existing is not None and has_stale_ref(existing, pod, "v1", "Pod"):
                return True
        return False

    def claims_match_policy(self, sts: Obj, pod: Obj) -> bool:
        """``ClaimsMatchRetentionPolicy``."""
        for claim in claims_for(sts, ordinal_of(pod)).values():
            existing = self._read("PersistentVolumeClaim", key_of(claim))
            if existing is None:
                continue
            wanted = wanted_claim_refs(existing, sts, pod)
            if wanted is not None and not refs_equal(wanted, meta(existing).get("ownerReferences") or []):
                return False
        return True

    def update_claim_owners(self, sts: Obj, pod: Obj) -> None:
        """``UpdatePodClaimForRetentionPolicy``: set each existing claim's ownerReferences as the policy asks."""
        for claim in claims_for(sts, ordinal_of(pod)).values():
            claim_key = key_of(claim)
            existing = self._read("PersistentVolumeClaim", claim_key)
            if existing is None:
                continue
            wanted = wanted_claim_refs(existing, sts, pod)
            if wanted is None or refs_equal(wanted, meta(existing).get("ownerReferences") or []):
                continue
            body = {
                "metadata": {"ownerReferences": wanted or None, "resourceVersion": meta(existing)["resourceVersion"]}
            }
            self.store.patch("PersistentVolumeClaim", *claim_key, body, "merge")

    def update_pod(self, sts: Obj, pod: Obj) -> None:
        """``UpdateStatefulPod``: identity labels and claims' owners brought in line (volumes are immutable)."""
        if not identity_matches(sts, pod):
            labels = identity_labels(sts, ordinal_of(pod))
            body = {"metadata": {"labels": labels, "resourceVersion": meta(pod)["resourceVersion"]}}
            self.store.patch("Pod", *key_of(pod), body, "merge")
        if not storage_matches(sts, pod) and _phase(pod) == "Pending":
            self.create_missing_claims(sts, pod)
        self.update_claim_owners(sts, pod)

    def _event(self, sts: Obj, reason: str, message: str) -> None:
        self.store.create_event(sts, reason, message, component=COMPONENT)


class _SetSync:
    """One ``updateStatefulSet`` pass over a set (see the module docstring); ``run`` returns the status."""

    def __init__(
        self,
        ctl: StatefulSetController,
        sts: Obj,
        pods: list[Obj],
        current_revision: str,
        update_revision: str,
        current_template: Obj | None,
    ) -> None:
        self.ctl = ctl
        self.sts = sts
        self.current_revision = current_revision
        self.update_revision = update_revision
        self.update_template = (sts.get("spec") or {}).get("template") or {}
        self.current_template = current_template if current_template is not None else self.update_template
        self.monotonic = monotonic(sts)
        self.min_ready = min_ready_seconds(sts)
        self.now: datetime = ctl.now()
        self.start = start_ordinal(sts)
        self.replicas: list[Obj] = [{} for _ in range(replicas_of(sts))]
        self.condemned: list[Obj] = []
        for pod in pods:
            ordinal = ordinal_of(pod)
            if in_ordinal_range(sts, ordinal):
                self.replicas[ordinal - self.start] = pod
            elif ordinal >= 0:
                self.condemned.append(pod)
        for index, pod in enumerate(self.replicas):
            if not pod:
                self.replicas[index] = self.versioned_pod(self.start + index)
        self.condemned.sort(key=ordinal_of, reverse=True)
        unhealthy = [p for p in self.replicas if not _healthy(p)] + [
            p for p in reversed(self.condemned) if not _healthy(p)
        ]
        self.first_unhealthy: Obj | None = unhealthy[0] if unhealthy else None

    def versioned_pod(self, ordinal: int) -> Obj:
        """``newVersionedStatefulSetPod``: below the partition at the current revision, else at the update one."""
        cut = partition(self.sts)  # None with OnDelete: every new pod is at the update revision
        if cut is not None and ordinal < self.start + cut:
            return new_pod(self.sts, self.current_template, ordinal, self.current_revision)
        return new_pod(self.sts, self.update_template, ordinal, self.update_revision)

    def available(self, pod: Obj) -> bool:
        """``isRunningAndAvailable``; a pod that becomes available later brings the set back then."""
        at = available_at(pod, self.min_ready)
        if at is None or _phase(pod) != "Running":
            return False
        if at > self.now:
            self.ctl.requeue_at(key_of(self.sts), at)
            return False
        return True

    def run(self) -> dict[str, Any]:
        if is_deleting(self.sts):
            return self.status()
        if self.run_for_all(self.replicas, self.process_replica):
            return self.status()
        if self.run_for_all(self.condemned, self.fix_condemned_claims):
            return self.status()
        if self.run_for_all(self.condemned, self.process_condemned):
            return self.status()
        status = self.status()
        if strategy_type(self.sts) == ON_DELETE:
            return status
        update_min = partition(self.sts) or 0
        # The highest-ordinal replica not at the update revision goes; then wait for its replacement.
        for target in range(len(self.replicas) - 1, update_min - 1, -1):
            pod = self.replicas[target]
            if pod_revision(pod) != self.update_revision and not is_deleting(pod):
                self.ctl.delete_pod(self.sts, pod)
                status["currentReplicas"] -= 1
                return status
            if not _healthy(pod):
                return status
        return status

    def run_for_all(self, pods: list[Obj], step: Callable[[int, list[Obj]], bool]) -> bool:
        """``runForAll``: in order, stopping at the first step that says so when monotonic; every one otherwise."""
        # A generator: a monotonic pass stops at the first step that says so; a Parallel one runs every step.
        return any(step(index, pods) and self.monotonic for index in range(len(pods)))

    def process_replica(self, index: int, replicas: list[Obj]) -> bool:
        """``processReplica``: True when a monotonic pass must stop here."""
        pod = replicas[index]
        if _phase(pod) in ("Failed", "Succeeded"):
            if not is_deleting(pod):
                self.ctl.delete_pod(self.sts, pod)
            return True
        if not _created(pod):
            if self.ctl.claim_is_stale(self.sts, pod):
                return True
            self.ctl.create_pod(self.sts, pod)
            return True
        if _phase(pod) == "Pending":
            self.ctl.create_missing_claims(self.sts, pod)
        if self.monotonic and (is_deleting(pod) or not _running_and_ready(pod) or not self.available(pod)):
            return True
        if not (identity_matches(self.sts, pod) and storage_matches(self.sts, pod)) or not self.ctl.claims_match_policy(
            self.sts, pod
        ):
            self.ctl.update_pod(self.sts, pod)
        return False

    def fix_condemned_claims(self, index: int, condemned: list[Obj]) -> bool:
        """Condemned pods' claims get the owners the policy asks for (``whenScaled: Delete``) before they go."""
        pod = condemned[index]
        if not self.ctl.claims_match_policy(self.sts, pod):
            self.ctl.update_claim_owners(self.sts, pod)
        return False

    def process_condemned(self, index: int, condemned: list[Obj]) -> bool:
        """``processCondemned``: delete, highest ordinal first; monotonic waits for the others to be healthy."""
        pod = condemned[index]
        if is_deleting(pod):
            return True
        if self.monotonic and pod is not self.first_unhealthy and not (_running_and_ready(pod) and self.available(pod)):
            return True
        self.ctl.delete_pod(self.sts, pod)
        return True

    def status(self) -> dict[str, Any]:
        """``updateStatus`` over the replicas and the condemned."""
        counts = _Counts()
        for pod in [*self.replicas, *self.condemned]:
            if not _created(pod):
                continue
            counts.replicas += 1
            if _running_and_ready(pod):
                counts.ready += 1
                if self.available(pod):
                    counts.available += 1
            if not is_deleting(pod):
                counts.current += pod_revision(pod) == self.current_revision
                counts.updated += pod_revision(pod) == self.update_revision
        generation = meta(self.sts).get("generation")
        return {
            "observedGeneration": generation if isinstance(generation, int) else 0,
            "replicas": counts.replicas,
            "readyReplicas": counts.ready,
            "currentReplicas": counts.current,
            "updatedReplicas": counts.updated,
            "currentRevision": self.current_revision,
            "updateRevision": self.update_revision,
            "collisionCount": int((self.sts.get("status") or {}).get("collisionCount") or 0),
            "availableReplicas": counts.available,
        }
