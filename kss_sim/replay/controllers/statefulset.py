"""StatefulSets on the virtual clock: pods ``<sts>-<ordinal>`` as kube-controller-manager's StatefulSet controller
makes them (``app/controllers/statefulset_pods.py``: identity labels, hostname and subdomain, the revision label).

- OrderedReady (the default): ordinal i is created once every lower one is Running and Ready (bound, here), and
  scale-down takes the highest ordinal first, one at a time, while the others are; Parallel creates and deletes
  without waiting;
- a pod that finished (its runFor) or was deleted, preempted or evicted is made again under the same name;
- RollingUpdate: once every pod runs, the highest ordinal at or above the partition that is not at the update
  revision is deleted (and so made again from the new template), one at a time; OnDelete leaves pods as they are.

``volumeClaimTemplates``: the claims ``<template>-<sts>-<ordinal>`` (the template's labels and the selector's
matchLabels; an ownerReference to the set under ``persistentVolumeClaimRetentionPolicy.whenDeleted: Delete``) are
created before the pod when the engine can create objects (``create_object``: the replay's engine can); one that
exists is used as it is. ``whenScaled: Delete`` deletes a condemned pod's claims with it, ``whenDeleted: Delete``
every claim with the set (``delete_object``); Retain keeps them. Without ``create_object`` the pod is made without
those volumes.
"""

from __future__ import annotations

import copy
from typing import Any

from kss_sim.controllers import statefulset_pods as sp
from kss_sim.kube.objects import Obj
from kss_sim.replay.controllers.base import Hub, Owner, TrackedPod


class StatefulSetOwner(Owner):
    """One StatefulSet; its pods are tracked by ordinal through their names."""

    kind = "StatefulSet"
    api_version = "apps/v1"

    def __init__(self, hub: Hub, obj: Obj, run_for: float | None) -> None:
        super().__init__(hub, obj, run_for)
        self.templates: dict[str, Obj] = {}  # revision -> the template it makes pods from
        self.current_revision = sp.revision_name(self.obj)
        self.templates[self.current_revision] = copy.deepcopy(self.spec.get("template") or {})
        self.claim_ordinals: set[int] = set()  # ordinals whose claims exist (made here or a snapshot's)

    # --- adoption ---------------------------------------------------------------------------------------------
    def may_own(self, pod: Obj) -> bool:
        """``isMemberOf``: only a pod named ``<set>-<ordinal>`` (a claimed pod outside the ordinals is condemned)."""
        return sp.is_member(self.obj, pod)

    def adoption_facts(self, pod: Obj) -> dict[str, Any]:
        revision = sp.pod_revision(pod)
        status = self.obj.get("status") or {}
        if revision and revision == status.get("updateRevision") == status.get("currentRevision"):
            # The snapshot says this pod is up to date: it is at the revision as this replay names it (another
            # cluster's revision names may be hashed otherwise).
            revision = sp.revision_name(self.obj)
        return {"index": sp.ordinal_of(pod), "revision": revision}

    def pod_adopted(self, pod: TrackedPod) -> None:
        if pod.index is not None and sp.claims_for(self.obj, pod.index):
            self.claim_ordinals.add(pod.index)  # a snapshot's pod: its claims are the snapshot's
        super().pod_adopted(pod)

    def _by_ordinal(self) -> dict[int, TrackedPod]:
        return {pod.index: pod for pod in self.pods.values() if pod.index is not None}

    def sync(self) -> None:
        update_revision = sp.revision_name(self.obj)
        self.templates.setdefault(update_revision, copy.deepcopy(self.spec.get("template") or {}))
        ordered = sp.monotonic(self.obj)
        first = sp.start_ordinal(self.obj)
        wanted = range(first, first + sp.replicas_of(self.obj))
        pods = self._by_ordinal()
        partition = sp.partition(self.obj) or 0
        rolling = sp.strategy_type(self.obj) == sp.ROLLING_UPDATE
        for ordinal in wanted:
            pod = pods.get(ordinal)
            if pod is None:
                revision = update_revision if (not rolling or ordinal >= partition) else self.current_revision
                self._create(ordinal, revision)
                if ordered:
                    return
            elif ordered and pod.bound_at is None:
                return  # wait for it to be Running and Ready
        condemned = sorted((o for o in pods if o not in wanted), reverse=True)
        if condemned:
            if ordered and any(pods[o].bound_at is None for o in pods):
                return
            for ordinal in condemned if not ordered else condemned[:1]:
                self.hub.delete_pod(pods[ordinal])
                if sp.retention_policy(self.obj)[1] == sp.DELETE:
                    self._delete_claims(ordinal)  # whenScaled: Delete: the claims go with the pod
            self.hub.mark(self)  # the next condemned one, or the update, once this one is gone
            return
        pods = self._by_ordinal()
        if all(pod.revision == update_revision for pod in pods.values()):
            self.current_revision = update_revision
            return
        if not rolling or any(pod.bound_at is None for pod in pods.values()):
            return
        for ordinal in sorted(pods, reverse=True):
            if ordinal < partition:
                break
            if pods[ordinal].revision != update_revision:
                self.hub.delete_pod(pods[ordinal])
                self.hub.mark(self)
                return

    def _create(self, ordinal: int, revision: str) -> None:
        pod = sp.new_pod(self.obj, self.templates[revision], ordinal, revision)
        create_object = getattr(self.hub.actions, "create_object", None)
        claims = sp.claims_for(self.obj, ordinal)
        if claims and create_object is not None:
            # ``createPersistentVolumeClaims``: each missing claim before the pod (an existing one, a snapshot's or
            # one kept from an earlier pod of this ordinal, is used as it is), owned as the retention policy says.
            for claim in claims.values():
                refs = sp.wanted_claim_refs(claim, self.obj, pod)
                if refs:
                    claim["metadata"]["ownerReferences"] = refs
                create_object(claim)
            self.claim_ordinals.add(ordinal)
        elif claims:
            volumes: list[Any] = [v for v in pod["spec"].get("volumes") or [] if v.get("name") not in claims]
            if volumes:
                pod["spec"]["volumes"] = volumes
            else:
                pod["spec"].pop("volumes", None)
        self.hub.create_pod(self, pod, index=ordinal, revision=revision)

    def _delete_claims(self, ordinal: int) -> None:
        delete_object = getattr(self.hub.actions, "delete_object", None)
        if delete_object is None:
            return
        for claim in sp.claims_for(self.obj, ordinal).values():
            delete_object("PersistentVolumeClaim", self.namespace, claim["metadata"]["name"])
        self.claim_ordinals.discard(ordinal)

    def delete(self) -> None:
        """Deleted: its pods go; under ``whenDeleted: Delete`` the claims it made go too (owned by the set)."""
        super().delete()
        if sp.retention_policy(self.obj)[0] == sp.DELETE:
            for ordinal in sorted(self.claim_ordinals):
                self._delete_claims(ordinal)

    def status(self) -> Obj:
        pods = list(self.pods.values())
        update_revision = sp.revision_name(self.obj)
        self.obj["status"] = {
            "replicas": len(pods),
            "readyReplicas": sum(1 for p in pods if p.bound_at is not None),
            "availableReplicas": sum(1 for p in pods if p.available(sp.min_ready_seconds(self.obj), self.hub.now)),
            "currentRevision": self.current_revision,
            "updateRevision": update_revision,
            "updatedReplicas": sum(1 for p in pods if p.revision == update_revision),
        }
        return self.obj
