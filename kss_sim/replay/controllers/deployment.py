"""Deployments on the virtual clock: ReplicaSets ``<deploy>-<pod-template-hash>`` rolled as
kube-controller-manager's Deployment controller rolls them.

One sync, as upstream's ``syncDeployment``: a scaling event (an active ReplicaSet's ``desired-replicas`` annotation
differs from ``spec.replicas``) or a paused Deployment is scaled proportionally (``scale``); otherwise a rollout
step: RollingUpdate (the new ReplicaSet grows within maxSurge, rounded up; old ones shrink, unavailable replicas
first, while the available pods stay above ``replicas - maxUnavailable``, rounded down) or Recreate (old ones to
0, the new one created once none of their pods is left). Old ReplicaSets beyond ``revisionHistoryLimit`` go once
the rollout is complete. "Available" is bound for ``minReadySeconds`` here (no kubelet, no probes). The arithmetic
is ``app/controllers/deployment_util.py``'s, shared with ``kss serve``'s controller.
"""

from __future__ import annotations

import copy

from kss_sim.controllers import deployment_util as du
from kss_sim.kube.objects import Obj
from kss_sim.replay.controllers.base import Hub, Owner, TrackedPod
from kss_sim.replay.controllers.replicaset import ReplicaSetOwner


class DeploymentOwner(Owner):
    """One Deployment and the ReplicaSets it made (oldest first)."""

    kind = "Deployment"
    api_version = "apps/v1"

    def __init__(self, hub: Hub, obj: Obj, run_for: float | None) -> None:
        super().__init__(hub, obj, run_for)
        self.sets: list[ReplicaSetOwner] = []
        self.collision_count = int((obj.get("status") or {}).get("collisionCount") or 0)

    # --- one sync ---------------------------------------------------------------------------------------------
    def sync(self) -> None:
        d = self.obj
        self._refresh()
        new_rs, old = self._new_and_old()
        if du.is_paused(d) or self._is_scaling_event(new_rs, old):
            self._scale(new_rs, old)
            if du.is_paused(d):
                self._cleanup(old)
        elif du.strategy_type(d) == "Recreate":
            self._recreate(new_rs, old)
        else:
            self._rolling(new_rs, old)
        self._refresh()
        new_rs, old = self._new_and_old()
        self.obj["status"] = du.calculate_status(
            [rs.obj for rs in [*old, new_rs] if rs is not None],
            new_rs.obj if new_rs is not None else None,
            d,
            self.hub.stamp(self.hub.now),
        )

    def _refresh(self) -> None:
        for rs in self.sets:
            rs.refresh_status()

    def _new_and_old(self) -> tuple[ReplicaSetOwner | None, list[ReplicaSetOwner]]:
        """``FindNewReplicaSet``: the oldest ReplicaSet whose template is the Deployment's (hash aside)."""
        template = du.template_of(self.obj)
        new_rs = next((rs for rs in self.sets if du.equal_ignore_hash(du.template_of(rs.obj), template)), None)
        return new_rs, [rs for rs in self.sets if rs is not new_rs]

    def _is_scaling_event(self, new_rs: ReplicaSetOwner | None, old: list[ReplicaSetOwner]) -> bool:
        for rs in [*old, new_rs]:
            if rs is None or rs.replicas == 0:
                continue
            desired = du.annotation_int(rs.obj, du.DESIRED_REPLICAS)
            if desired is not None and desired != du.replicas(self.obj):
                return True
        return False

    def _scale_rs(self, rs: ReplicaSetOwner, replicas: int) -> bool:
        """``scaleReplicaSet``: the size and the desired/max annotations; whether the size changed."""
        d = self.obj
        du.set_replicas_annotations(rs.obj, du.replicas(d), du.replicas(d) + du.max_surge(d))
        changed = rs.replicas != replicas
        rs.scale(replicas)
        return changed

    # --- getNewReplicaSet -------------------------------------------------------------------------------------
    def _ensure_new(self, new_rs: ReplicaSetOwner | None, old: list[ReplicaSetOwner]) -> ReplicaSetOwner:
        d = self.obj
        max_old = max((du.revision(rs.obj) for rs in old), default=0)
        revision = str(max_old + 1)
        if new_rs is not None:
            du.set_new_replica_set_annotations(d, new_rs.obj, revision, True)
            return new_rs
        template = copy.deepcopy(du.template_of(d))
        while True:
            pod_hash = du.compute_hash(template, self.collision_count or None)
            name = f"{self.name}-{pod_hash}"
            if all(rs.name != name for rs in self.sets):
                break
            self.collision_count += 1  # a hash collision: upstream bumps status.collisionCount and retries
        template.setdefault("metadata", {}).setdefault("labels", {})[du.POD_TEMPLATE_HASH] = pod_hash
        selector = copy.deepcopy((d.get("spec") or {}).get("selector") or {})
        selector.setdefault("matchLabels", {})[du.POD_TEMPLATE_HASH] = pod_hash
        labels = dict(((du.template_of(d).get("metadata") or {}).get("labels")) or {})
        labels[du.POD_TEMPLATE_HASH] = pod_hash
        rs_obj: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": labels,
                "ownerReferences": [self.owner_reference()],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": du.min_ready_seconds(d),
                "selector": selector,
                "template": template,
            },
        }
        rs = ReplicaSetOwner(self.hub, rs_obj, self.run_for, parent=self)
        all_objs = [r.obj for r in old] + [rs_obj]
        rs_obj["spec"]["replicas"] = du.new_rs_new_replicas(d, all_objs, rs_obj)
        du.set_new_replica_set_annotations(d, rs_obj, revision, False)
        self.sets.append(rs)
        self.hub.register(rs)
        self.hub.mark(rs)
        return rs

    def adopt_set(self, rs: ReplicaSetOwner) -> None:
        """A ReplicaSet of this Deployment that arrived on its own (a start snapshot's): it joins, in revision
        order, and keeps its pods and size; the next sync reads it as ``getReplicaSetsForDeployment`` would."""
        rs.parent = self
        self.sets.append(rs)
        self.sets.sort(key=lambda r: du.revision(r.obj))  # stable: equal revisions keep their arrival order
        self.hub.register(rs)
        self.hub.mark(rs)
        self.hub.mark(self)

    # --- rollouts ---------------------------------------------------------------------------------------------
    def _rolling(self, new_rs: ReplicaSetOwner | None, old: list[ReplicaSetOwner]) -> None:
        """``rolloutRolling``: the new ReplicaSet up if it may, else the old ones down."""
        d = self.obj
        new_rs = self._ensure_new(new_rs, old)
        all_objs = [rs.obj for rs in [*old, new_rs]]
        want = du.replicas(d)
        if new_rs.replicas > want:
            if self._scale_rs(new_rs, want):
                return
        elif new_rs.replicas < want and self._scale_rs(new_rs, du.new_rs_new_replicas(d, all_objs, new_rs.obj)):
            return
        if self._scale_down_old(new_rs, old):
            return
        if du.deployment_complete(d, self._status_now(new_rs, old)):
            self._cleanup(old)

    def _scale_down_old(self, new_rs: ReplicaSetOwner, old: list[ReplicaSetOwner]) -> bool:
        """``reconcileOldReplicaSets``: unhealthy old replicas first, then as far as maxUnavailable allows."""
        d = self.obj
        active_old = [rs for rs in old if rs.replicas > 0]
        if not active_old:
            return False
        all_count = sum(rs.replicas for rs in [*old, new_rs])
        min_available = du.replicas(d) - du.max_unavailable(d)
        new_unavailable = new_rs.replicas - new_rs.available_count()
        max_scaled_down = all_count - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        cleaned = 0
        for rs in active_old:  # cleanupUnhealthyReplicas, oldest first
            if cleaned >= max_scaled_down:
                break
            unhealthy = rs.replicas - rs.available_count()
            if unhealthy <= 0:
                continue
            count = min(max_scaled_down - cleaned, unhealthy)
            self._scale_rs(rs, rs.replicas - count)
            cleaned += count
        # scaleDownOldReplicaSetsForRollingUpdate: only the available beyond the minimum may go
        available = sum(rs.available_count() for rs in [*old, new_rs])
        scaled = 0
        budget = available - min_available
        for rs in active_old:
            if scaled >= budget:
                break
            if rs.replicas == 0:
                continue
            count = min(rs.replicas, budget - scaled)
            self._scale_rs(rs, rs.replicas - count)
            scaled += count
        return cleaned + scaled > 0

    def _recreate(self, new_rs: ReplicaSetOwner | None, old: list[ReplicaSetOwner]) -> None:
        """``rolloutRecreate``: every old ReplicaSet to 0; once none of their pods is left, the new one at full
        size."""
        scaled = False
        for rs in old:
            if rs.replicas > 0:
                scaled = self._scale_rs(rs, 0) or scaled
        if scaled or any(rs.pods for rs in old):
            return
        new_rs = self._ensure_new(new_rs, old)
        self._scale_rs(new_rs, du.replicas(self.obj))
        if du.deployment_complete(self.obj, self._status_now(new_rs, old)):
            self._cleanup(old)

    def _scale(self, new_rs: ReplicaSetOwner | None, old: list[ReplicaSetOwner]) -> None:
        """``scale``: one active ReplicaSet takes the whole size; a saturated new one retires the old; else the
        change is shared in proportion (RollingUpdate), the leftover to the largest."""
        d = self.obj
        target = du.find_active_or_latest(new_rs.obj if new_rs else None, [rs.obj for rs in old])
        if target is not None:
            owner = next(rs for rs in self.sets if rs.obj is target)
            self._scale_rs(owner, du.replicas(d))
            return
        if new_rs is not None and du.is_saturated(d, new_rs.obj):
            for rs in old:
                if rs.replicas > 0:
                    self._scale_rs(rs, 0)
            return
        if not du.is_rolling_update(d):
            return
        live = [rs for rs in [*old, new_rs] if rs is not None and rs.replicas > 0]
        allowed = du.replicas(d) + du.max_surge(d) if du.replicas(d) > 0 else 0
        to_add = allowed - sum(rs.replicas for rs in live)
        by_age = [rs for rs in self.sets if rs in live]
        if to_add > 0:  # larger first, newer first among equals
            order = sorted(reversed(by_age), key=lambda rs: -rs.replicas)
        else:  # larger first, older first among equals
            order = sorted(by_age, key=lambda rs: -rs.replicas)
        sizes: list[int] = []
        added = 0
        for rs in order:
            share = du.proportion(rs.obj, d, to_add, added) if to_add != 0 else 0
            sizes.append(rs.replicas + share)
            added += share
        if order and to_add != 0:
            sizes[0] = max(0, sizes[0] + to_add - added)
        for rs, size in zip(order, sizes, strict=True):
            self._scale_rs(rs, size)

    def _status_now(self, new_rs: ReplicaSetOwner, old: list[ReplicaSetOwner]) -> Obj:
        self._refresh()
        return du.calculate_status(
            [rs.obj for rs in [*old, new_rs]], new_rs.obj, self.obj, self.hub.stamp(self.hub.now)
        )

    def _cleanup(self, old: list[ReplicaSetOwner]) -> None:
        """``cleanupDeployment``: the oldest empty old ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = du.revision_history_limit(self.obj)
        if limit is None or len(old) <= limit:
            return
        by_revision = sorted(old, key=lambda rs: (du.revision(rs.obj), self.sets.index(rs)))
        for rs in by_revision[: len(old) - limit]:
            if rs.replicas == 0 and not rs.pods:
                rs.delete()
                self.sets.remove(rs)

    # --- the rest -----------------------------------------------------------------------------------------------
    def pod_bound(self, pod: TrackedPod) -> None:  # its pods belong to its ReplicaSets
        self.hub.mark(self)

    def delete(self) -> None:
        self.alive = False
        for rs in self.sets:
            rs.delete()

    def status(self) -> Obj:
        self._refresh()
        return self.obj
