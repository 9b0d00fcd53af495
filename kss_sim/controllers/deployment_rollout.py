"""The rollout half of the Deployment controller (``deployment.py``): RollingUpdate and Recreate steps and the
status with its Progressing condition (``rolling.go``, ``recreate.go``, ``progress.go``). The controller class
supplies the ReplicaSet writes these steps call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from kss_sim.controllers import deployment_util as du
from kss_sim.controllers.loop import ReconcileLoop
from kss_sim.controllers.owned import Key, controller_uid, key_of, meta, selector_matches
from kss_sim.kube.objects import Obj


@dataclass
class RolloutSync:
    """One sync's working copy of the Deployment (``d``), as upstream mutates its DeepCopy."""

    key: Key
    d: Obj
    stored_annotations: dict[str, str] = field(default_factory=dict)


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(meta(obj).get("labels") or {})


def quoted(name: Any) -> str:
    return f'"{name}"'  # Go's %q of a DNS name


class DeploymentRollouts(ReconcileLoop[Key]):
    """The rollout strategies and the rollout status; ``DeploymentController`` supplies the writes."""

    # --- what the controller supplies ---------------------------------------------------------------------
    def _save(self, sync: RolloutSync) -> None:
        raise NotImplementedError

    def _claim_replica_sets(self, d: Obj) -> list[Obj]:
        raise NotImplementedError

    def _new_and_old(self, sync: RolloutSync, sets: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        raise NotImplementedError

    def _scale_and_record(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        raise NotImplementedError

    def _cleanup(self, d: Obj, old: Sequence[Obj]) -> None:
        raise NotImplementedError

    # --- rollouts -----------------------------------------------------------------------------------------
    def _rollout_rolling(self, sync: RolloutSync, sets: list[Obj]) -> None:
        """``rolloutRolling``: scale the new ReplicaSet up if it may, else the old ones down, then the status."""
        d = sync.d
        new_rs, old = self._new_and_old(sync, sets, True)
        assert new_rs is not None
        all_sets: list[Obj | None] = [*old, new_rs]
        scaled, new_rs = self._reconcile_new_replica_set(all_sets, new_rs, d)
        if scaled:
            self._sync_rollout_status(sync, [*old, new_rs], new_rs)
            return
        scaled, old = self._reconcile_old_replica_sets([*old, new_rs], du.active(old), old, new_rs, d)
        if scaled:
            self._sync_rollout_status(sync, [*old, new_rs], new_rs)
            return
        if du.deployment_complete(d, d.get("status") or {}):
            self._cleanup(d, old)
        self._sync_rollout_status(sync, [*old, new_rs], new_rs)

    def _reconcile_new_replica_set(self, all_sets: list[Obj | None], new_rs: Obj, d: Obj) -> tuple[bool, Obj]:
        """``reconcileNewReplicaSet``."""
        want = du.replicas(d)
        if du.replicas(new_rs) == want:
            return False, new_rs
        if du.replicas(new_rs) > want:
            return self._scale_and_record(new_rs, want, d)
        return self._scale_and_record(new_rs, du.new_rs_new_replicas(d, all_sets, new_rs), d)

    def _reconcile_old_replica_sets(
        self, all_sets: list[Obj], active_old: list[Obj], old: list[Obj], new_rs: Obj, d: Obj
    ) -> tuple[bool, list[Obj]]:
        """``reconcileOldReplicaSets``: unhealthy old replicas first, then as far as maxUnavailable allows.
        Returns whether anything was scaled down and every old ReplicaSet as now written."""
        written: dict[str, Obj] = {}

        def current(rs: Obj) -> Obj:
            return written.get(str(meta(rs).get("uid")), rs)

        if du.spec_replicas(active_old) == 0:
            return False, old
        all_count = du.spec_replicas(all_sets)
        min_available = du.replicas(d) - du.max_unavailable(d)
        new_unavailable = du.replicas(new_rs) - int((new_rs.get("status") or {}).get("availableReplicas") or 0)
        max_scaled_down = all_count - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False, old
        # cleanupUnhealthyReplicas: replicas that are not available go first, oldest ReplicaSet first.
        cleaned = 0
        for rs in du.by_creation(active_old):
            if cleaned >= max_scaled_down:
                break
            size = du.replicas(rs)
            available = int((rs.get("status") or {}).get("availableReplicas") or 0)
            if size == 0 or size == available:
                continue
            count = min(max_scaled_down - cleaned, size - available)
            _, written[str(meta(rs).get("uid"))] = self._scale_and_record(rs, size - count, d)
            cleaned += count
        # scaleDownOldReplicaSetsForRollingUpdate
        survivors = [current(rs) for rs in active_old]
        available_now = du.available_replicas([*survivors, new_rs])
        scaled_down = 0
        if available_now > min_available:
            budget = available_now - min_available
            for rs in du.by_creation(survivors):
                if scaled_down >= budget:
                    break
                if du.replicas(rs) == 0:
                    continue
                count = min(du.replicas(rs), budget - scaled_down)
                _, written[str(meta(rs).get("uid"))] = self._scale_and_record(rs, du.replicas(rs) - count, d)
                scaled_down += count
        return cleaned + scaled_down > 0, [current(rs) for rs in old]

    def _rollout_recreate(self, sync: RolloutSync, sets: list[Obj]) -> None:
        """``rolloutRecreate``: every old ReplicaSet to 0, then (no old pod left) the new one to full size."""
        d = sync.d
        new_rs, old = self._new_and_old(sync, sets, False)
        scaled = False
        written: dict[str, Obj] = {}
        for rs in du.active(old):
            did, written[str(meta(rs).get("uid"))] = self._scale_and_record(rs, 0, d)
            scaled = scaled or did
        old = [written.get(str(meta(rs).get("uid")), rs) for rs in old]
        if scaled or self._old_pods_running(d, new_rs, old):
            self._sync_rollout_status(sync, [*old, new_rs], new_rs)
            return
        if new_rs is None:
            new_rs, old = self._new_and_old(sync, self._claim_replica_sets(d), True)
        assert new_rs is not None
        _, new_rs = self._scale_and_record(new_rs, du.replicas(d), d)
        if du.deployment_complete(d, d.get("status") or {}):
            self._cleanup(d, old)
        self._sync_rollout_status(sync, [*old, new_rs], new_rs)

    def _old_pods_running(self, d: Obj, new_rs: Obj | None, old: list[Obj]) -> bool:
        """``oldPodsRunning``: an old ReplicaSet still reports pods, or one of its pods has not finished."""
        if du.actual_replicas(old) > 0:
            return True
        old_uids = {meta(rs).get("uid") for rs in old}
        new_uid = meta(new_rs).get("uid") if new_rs is not None else None
        for entry in self.store.select("Pod", key_of(d)[0]).items:
            pod = entry.obj
            owner = controller_uid(pod)
            if owner is None or owner == new_uid or owner not in old_uids or not selector_matches(d, labels_of(pod)):
                continue
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                return True
        return False

    def _sync_rollout_status(self, sync: RolloutSync, all_sets: list[Obj | None], new_rs: Obj | None) -> None:
        """``syncRolloutStatus``: the status with the Progressing condition, or a timer for the deadline."""
        d = sync.d
        now = self.now()
        stamp = self.timestamp()
        status = du.calculate_status(all_sets, new_rs, d, stamp)
        if du.progress_deadline(d) is None:
            du.remove_condition(status, "Progressing")
        current = du.condition(d.get("status") or {}, "Progressing")
        complete_before = (
            int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
            and current is not None
            and current.get("reason") == du.NEW_RS_AVAILABLE
        )
        subject = (
            f"ReplicaSet {quoted(meta(new_rs).get('name'))}"
            if new_rs is not None
            else f"Deployment {quoted(meta(d).get('name'))}"
        )
        if du.progress_deadline(d) is not None and not complete_before:
            if du.deployment_complete(d, status):
                du.set_condition(
                    status,
                    du.new_condition(
                        "Progressing", "True", du.NEW_RS_AVAILABLE, f"{subject} has successfully progressed.", stamp
                    ),
                )
            elif du.deployment_progressing(d, status):
                new = du.new_condition("Progressing", "True", du.RS_UPDATED, f"{subject} is progressing.", stamp)
                if current is not None:
                    if current.get("status") == "True":
                        new["lastTransitionTime"] = current.get("lastTransitionTime")
                    du.remove_condition(status, "Progressing")
                du.set_condition(status, new)
            elif du.deployment_timed_out(d, status, now):
                du.set_condition(
                    status,
                    du.new_condition(
                        "Progressing", "False", du.TIMED_OUT, f"{subject} has timed out progressing.", stamp
                    ),
                )
        failure = self._replica_failure(all_sets, new_rs)
        if failure is not None:
            du.set_condition(status, failure)
        else:
            du.remove_condition(status, "ReplicaFailure")
        if status == (d.get("status") or {}):
            self._requeue_stuck(sync, status)
            return
        d["status"] = status
        self._save(sync)

    @staticmethod
    def _replica_failure(all_sets: list[Obj | None], new_rs: Obj | None) -> dict[str, Any] | None:
        """``getReplicaFailures``: the new ReplicaSet's ReplicaFailure condition, else an old one's."""
        ordered = [new_rs, *[rs for rs in all_sets if rs is not new_rs]]
        for rs in ordered:
            if rs is None:
                continue
            for c in (rs.get("status") or {}).get("conditions") or []:
                if c.get("type") == "ReplicaFailure":
                    return {
                        "type": "ReplicaFailure",
                        "status": c.get("status"),
                        "lastUpdateTime": c.get("lastTransitionTime"),
                        "lastTransitionTime": c.get("lastTransitionTime"),
                        "reason": c.get("reason"),
                        "message": c.get("message"),
                    }
        return None

    def _requeue_stuck(self, sync: RolloutSync, status: Mapping[str, Any]) -> None:
        """``requeueStuckDeployment``: look again one second after the progress deadline passes."""
        d = sync.d
        current = du.condition(d.get("status") or {}, "Progressing")
        if current is None or du.deployment_complete(d, status) or current.get("reason") == du.TIMED_OUT:
            return
        at = du.progress_deadline_at(d, d.get("status") or {})
        if at is not None:
            self.requeue_at(sync.key, max(at, self.now()) + timedelta(seconds=1))
