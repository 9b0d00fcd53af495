"""The Deployment controller: kube-controller-manager's ``pkg/controller/deployment`` over the virtual cluster.

One sync of a Deployment, as upstream's ``syncDeployment``:

- an empty selector: a ``SelectingAll`` Warning and only ``observedGeneration``;
- its ReplicaSets are those of its namespace it controls and whose labels match its selector (matching orphans
  adopted, those that stopped matching released);
- being deleted: status only; paused: the ``DeploymentPaused`` / ``DeploymentResumed`` Progressing condition,
  proportional scaling and history cleanup, no rollout; a scaling event (an active ReplicaSet's
  ``desired-replicas`` annotation differs from ``spec.replicas``): proportional scaling (``scale``);
- otherwise a rollout step: RollingUpdate (``reconcileNewReplicaSet``, ``reconcileOldReplicaSets`` with
  ``cleanupUnhealthyReplicas``, maxSurge rounded up and maxUnavailable down) or Recreate (old ReplicaSets to 0,
  the new one created and scaled up once no old pod runs); history beyond ``revisionHistoryLimit`` deleted once
  the rollout is complete;
- the new ReplicaSet is ``<name>-<pod-template-hash>`` with the hash label added to its selector, template and so
  its pods, the revision / desired-replicas / max-replicas annotations, and a hash collision bumps
  ``status.collisionCount``;
- the status: counts from the ReplicaSets, Available (MinimumReplicasAvailable / MinimumReplicasUnavailable) and
  Progressing (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
  ProgressDeadlineExceeded past ``progressDeadlineSeconds`` on the controller's clock) with upstream's messages,
  which is what ``kubectl rollout status`` reads.

Differences: upstream's UpdateStatus also stores the Deployment's revision annotation; here the annotation is a
metadata patch and the status an update of the status subresource, each guarded by the resourceVersion read. A
sync that writes the Deployment twice carries the new resourceVersion on (upstream's second write conflicts and
the sync is retried). ``kubectl rollout undo`` works as upstream's apps/v1 does (kubectl copies the old template).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Sequence

from kss_sim.cluster.errors import AlreadyExists, ApiError, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers import deployment_util as du
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.deployment_rollout import DeploymentRollouts, RolloutSync, labels_of, quoted
from kss_sim.controllers.loop import Clock, utc_now
from kss_sim.controllers.owned import (
    Controllers,
    Key,
    adoption_patch,
    controller_ref,
    controller_uid,
    is_controlled_by,
    is_deleting,
    key_of,
    meta,
    owner_reference,
    selector_matches,
)
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "deployment-controller"
WATCHED_KINDS = ("Deployment", "ReplicaSet")


class DeploymentController(DeploymentRollouts):
    """Rolls Deployments out through their ReplicaSets (see the module docstring); ``start``/``stop`` with the
    app. The ReplicaSet controller makes the pods."""

    name = "deployment-controller"
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
        self._deployments = Controllers("Deployment")
        self._sets_in: dict[str, set[str]] = {}
        self._set_owner: dict[Key, str] = {}  # ReplicaSet -> its controller's uid

    # --- indexes ------------------------------------------------------------------------------------------
    def reset(self) -> None:
        self._deployments.clear()
        self._sets_in.clear()
        self._set_owner.clear()

    def _index_set(self, key: Key, rs: Obj | None) -> str | None:
        """Record a ReplicaSet (None: gone); returns the controller uid it had."""
        before = self._set_owner.pop(key, None)
        if rs is None:
            self._sets_in.get(key[0], set()).discard(key[1])
            return before
        self._sets_in.setdefault(key[0], set()).add(key[1])
        owner = controller_uid(rs)
        if owner is not None:
            self._set_owner[key] = owner
        return before

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        key = key_of(obj)
        if kind == "Deployment":
            self._deployments.put(key, None if event_type == DELETED else str(meta(obj).get("uid") or ""))
            return [key]
        before = self._index_set(key, None if event_type == DELETED else obj)
        keys = self._deployments.keys_of((before, controller_uid(obj)))
        if controller_ref(obj) is None and event_type != DELETED:
            keys += self._deployments.selecting(self.store, key[0], labels_of(obj))  # an orphan to adopt
        return keys

    def resync(self) -> list[Key]:
        """Index every ReplicaSet and Deployment, and queue every Deployment."""
        for entry in self.store.select("ReplicaSet").items:
            self._index_set((entry.namespace, entry.name), entry.obj)
        keys: list[Key] = []
        for entry in self.store.select("Deployment").items:
            self._deployments.put((entry.namespace, entry.name), str(entry.obj["metadata"].get("uid") or ""))
            keys.append((entry.namespace, entry.name))
        return keys

    # --- writes -------------------------------------------------------------------------------------------
    def _event(self, d: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        self.store.create_event(d, reason, message, type="Warning" if warning else "Normal", component=COMPONENT)

    def _save(self, sync: RolloutSync) -> None:
        """Write the working Deployment's status and revision annotation in one status update, as upstream's
        UpdateStatus does (the status subresource does not move the generation)."""
        d = sync.d
        namespace, name = sync.key
        annotations = dict(meta(d).get("annotations") or {})
        changed = {
            k: annotations.get(k)
            for k in set(annotations) | set(sync.stored_annotations)
            if annotations.get(k) != sync.stored_annotations.get(k)
        }
        written = self.store.update_status(
            "Deployment",
            namespace,
            name,
            d.get("status") or {},
            resource_version=str(meta(d).get("resourceVersion") or ""),
            annotations=changed or None,
        )
        meta(d)["resourceVersion"] = meta(written).get("resourceVersion")
        sync.stored_annotations = dict(meta(written).get("annotations") or {})

    def _scale_replica_set(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        """``scaleReplicaSet``: the new size and the replicas annotations; a ScalingReplicaSet Event."""
        old_scale = du.replicas(rs)
        size_changes = old_scale != new_scale
        desired, maximum = du.replicas(d), du.replicas(d) + du.max_surge(d)
        if not size_changes and not du.replicas_annotations_need_update(rs, desired, maximum):
            return False, rs
        body = copy.deepcopy(rs)
        body.setdefault("spec", {})["replicas"] = new_scale
        du.set_replicas_annotations(body, desired, maximum)
        updated = self.store.update("ReplicaSet", body)
        if size_changes:
            direction = "up" if old_scale < new_scale else "down"
            self._event(
                d,
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {meta(rs).get('name')} from {old_scale} to {new_scale}",
            )
        return size_changes, updated

    def _scale_and_record(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        """``scaleReplicaSetAndRecordEvent``: nothing when the size is already right."""
        if du.replicas(rs) == new_scale:
            return False, rs
        return self._scale_replica_set(rs, new_scale, d)

    # --- one sync -----------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        namespace, name = key
        stored = self.store.get("Deployment", namespace, name)
        if stored is None:
            return
        d = stored
        sync = RolloutSync(key, d, dict(meta(d).get("annotations") or {}))
        selector = (d.get("spec") or {}).get("selector") or {}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            self._event(
                d,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
                warning=True,
            )
            status = d.setdefault("status", {})
            if int(status.get("observedGeneration") or 0) < int(meta(d).get("generation") or 0):
                status["observedGeneration"] = meta(d).get("generation")
                self._save(sync)
            return
        sets = self._claim_replica_sets(d)
        if is_deleting(d):
            self._sync_status_only(sync, sets)
            return
        self._check_paused_conditions(sync)
        if du.is_paused(d):
            self._sync(sync, sets)
            return
        if self._is_scaling_event(sync, sets):
            self._sync(sync, sets)
            return
        if du.strategy_type(d) == "Recreate":
            self._rollout_recreate(sync, sets)
        else:
            self._rollout_rolling(sync, sets)

    def _claim_replica_sets(self, d: Obj) -> list[Obj]:
        """``getReplicaSetsForDeployment``: claim (adopt / release) the namespace's ReplicaSets."""
        namespace = key_of(d)[0]
        uid = meta(d).get("uid")
        claimed: list[Obj] = []
        for name in sorted(self._sets_in.get(namespace, ())):
            rs = self.store.get("ReplicaSet", namespace, name)
            if rs is None:
                continue
            matches = selector_matches(d, labels_of(rs))
            owner = controller_uid(rs)
            if owner is not None:
                if owner != uid:
                    continue
                if matches:
                    claimed.append(rs)
                elif not is_deleting(d):
                    refs = [r for r in meta(rs).get("ownerReferences") or [] if r.get("uid") != uid]
                    body = {"metadata": {"ownerReferences": refs or None, "uid": meta(rs).get("uid")}}
                    body["metadata"]["resourceVersion"] = meta(rs).get("resourceVersion")
                    with contextlib.suppress(NotFound):
                        self._index_set(
                            (namespace, name), self.store.patch("ReplicaSet", namespace, name, body, "merge")
                        )
                continue
            if not matches or is_deleting(d) or is_deleting(rs):
                continue
            fresh = self.store.get("Deployment", *key_of(d))
            if fresh is None or meta(fresh).get("uid") != uid or is_deleting(fresh):
                continue
            try:
                adopted = self.store.patch("ReplicaSet", namespace, name, adoption_patch(rs, d), "merge")
            except NotFound:
                continue
            self._index_set((namespace, name), adopted)
            claimed.append(adopted)
        return claimed

    def _new_and_old(self, sync: RolloutSync, sets: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        """``getAllReplicaSetsAndSyncRevision``."""
        new_rs = du.find_new(sync.d, sets)
        old = [rs for rs in sets if new_rs is None or meta(rs).get("uid") != meta(new_rs).get("uid")]
        return self._get_new_replica_set(sync, sets, old, create), old

    def _get_new_replica_set(self, sync: RolloutSync, sets: list[Obj], old: list[Obj], create: bool) -> Obj | None:
        """``getNewReplicaSet``: sync the existing new ReplicaSet's annotations, or create it."""
        d = sync.d
        existing = du.find_new(d, sets)
        new_revision = str(max((du.revision(rs) for rs in old), default=0) + 1)
        deadline = du.progress_deadline(d) is not None
        status = d.setdefault("status", {})
        if existing is not None:
            rs = copy.deepcopy(existing)
            annotations_changed = du.set_new_replica_set_annotations(d, rs, new_revision, True)
            if annotations_changed or du.min_ready_seconds(rs) != du.min_ready_seconds(d):
                rs.setdefault("spec", {})["minReadySeconds"] = du.min_ready_seconds(d)
                return self.store.update("ReplicaSet", rs)
            needs_update = self._set_revision(d, (meta(rs).get("annotations") or {}).get(du.REVISION, ""))
            if deadline and du.condition(status, "Progressing") is None:
                message = f"Found new replica set {quoted(meta(rs).get('name'))}"
                du.set_condition(
                    status, du.new_condition("Progressing", "True", du.FOUND_NEW_RS, message, self.timestamp())
                )
                needs_update = True
            if needs_update:
                self._save(sync)
            return rs
        if not create:
            return None
        collision = status.get("collisionCount") if isinstance(status.get("collisionCount"), int) else None
        template = du.stored_template(du.template_of(d))
        pod_hash = du.compute_hash(template, collision)
        template.setdefault("metadata", {})["labels"] = {
            **(template["metadata"].get("labels") or {}),
            du.POD_TEMPLATE_HASH: pod_hash,
        }
        selector = copy.deepcopy((d.get("spec") or {}).get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), du.POD_TEMPLATE_HASH: pod_hash}
        name = f"{meta(d).get('name')}-{pod_hash}"
        new_rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": key_of(d)[0],
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [owner_reference(d)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": du.min_ready_seconds(d),
                "selector": selector,
                "template": template,
            },
        }
        count = du.new_rs_new_replicas(d, [*old, new_rs], new_rs)
        new_rs["spec"]["replicas"] = count
        du.set_new_replica_set_annotations(d, new_rs, new_revision, False)
        already_exists = False
        try:
            created = self.store.create("ReplicaSet", new_rs)
        except AlreadyExists:
            current = self.store.get("ReplicaSet", key_of(d)[0], name)
            if current is None:
                raise
            if is_controlled_by(current, d) and du.equal_ignore_hash(du.template_of(d), du.template_of(current)):
                created, already_exists = current, True
            else:
                # A hash collision: bump collisionCount and come back (the raise retries this sync).
                status["collisionCount"] = (collision or 0) + 1
                self._save(sync)
                log.info("deployment %s/%s: hash collision, collisionCount %d", *sync.key, status["collisionCount"])
                raise
        except ApiError as exc:
            message = f"Failed to create new replica set {quoted(name)}: {exc.message}"
            if deadline:
                du.set_condition(
                    status, du.new_condition("Progressing", "False", du.FAILED_RS_CREATE, message, self.timestamp())
                )
                self._save(sync)
            self._event(d, du.FAILED_RS_CREATE, message, warning=True)
            raise
        self._index_set(key_of(created), created)
        if not already_exists and count > 0:
            self._event(d, "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {count}")
        needs_update = self._set_revision(d, new_revision)
        if not already_exists and deadline:
            message = f"Created new replica set {quoted(name)}"
            du.set_condition(
                status, du.new_condition("Progressing", "True", du.NEW_RS_CREATED, message, self.timestamp())
            )
            needs_update = True
        if needs_update:
            self._save(sync)
        return created

    @staticmethod
    def _set_revision(d: Obj, revision: str) -> bool:
        """``SetDeploymentRevision``."""
        annotations = meta(d).setdefault("annotations", {})
        if annotations.get(du.REVISION) == revision:
            return False
        annotations[du.REVISION] = revision
        return True

    def _check_paused_conditions(self, sync: RolloutSync) -> None:
        """``checkPausedConditions``: DeploymentPaused / DeploymentResumed, unless the rollout timed out."""
        d = sync.d
        if du.progress_deadline(d) is None:
            return
        status = d.setdefault("status", {})
        current = du.condition(status, "Progressing")
        if current is not None and current.get("reason") == du.TIMED_OUT:
            return
        paused_condition = current is not None and current.get("reason") == du.PAUSED
        if du.is_paused(d) and not paused_condition:
            new = du.new_condition("Progressing", "Unknown", du.PAUSED, "Deployment is paused", self.timestamp())
        elif not du.is_paused(d) and paused_condition:
            new = du.new_condition("Progressing", "Unknown", du.RESUMED, "Deployment is resumed", self.timestamp())
        else:
            return
        du.set_condition(status, new)
        self._save(sync)

    def _is_scaling_event(self, sync: RolloutSync, sets: list[Obj]) -> bool:
        """``isScalingEvent``: an active ReplicaSet was sized for another ``spec.replicas``."""
        new_rs, old = self._new_and_old(sync, sets, False)
        for rs in du.active([*old, new_rs]):
            desired = du.annotation_int(rs, du.DESIRED_REPLICAS)
            if desired is not None and desired != du.replicas(sync.d):
                return True
        return False

    def _sync_status_only(self, sync: RolloutSync, sets: list[Obj]) -> None:
        new_rs, old = self._new_and_old(sync, sets, False)
        self._sync_deployment_status(sync, [*old, new_rs], new_rs)

    def _sync(self, sync: RolloutSync, sets: list[Obj]) -> None:
        """``sync``: scaling events and paused Deployments."""
        new_rs, old = self._new_and_old(sync, sets, False)
        new_rs, old = self._scale(sync, new_rs, old)
        if du.is_paused(sync.d):
            self._cleanup(sync.d, old)
        self._sync_deployment_status(sync, [*old, new_rs], new_rs)

    def _scale(self, sync: RolloutSync, new_rs: Obj | None, old: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        """``scale``: one active ReplicaSet takes the whole size; a saturated new one retires the old ones; else
        the change is shared proportionally (RollingUpdate), larger sets first. Returns the sets as written."""
        d = sync.d
        updated: dict[str, Obj] = {}

        def result() -> tuple[Obj | None, list[Obj]]:
            uid_new = meta(new_rs).get("uid") if new_rs is not None else None
            return (updated.get(str(uid_new), new_rs) if new_rs is not None else None), [
                updated.get(str(meta(rs).get("uid")), rs) for rs in old
            ]

        target = du.find_active_or_latest(new_rs, old)
        if target is not None:
            if du.replicas(target) != du.replicas(d):
                _, written = self._scale_and_record(target, du.replicas(d), d)
                updated[str(meta(target).get("uid"))] = written
            return result()
        if du.is_saturated(d, new_rs):
            for rs in du.active(old):
                _, updated[str(meta(rs).get("uid"))] = self._scale_and_record(rs, 0, d)
            return result()
        if not du.is_rolling_update(d):
            return result()
        live = du.active([*old, new_rs])
        allowed = du.replicas(d) + du.max_surge(d) if du.replicas(d) > 0 else 0
        to_add = allowed - du.spec_replicas(live)
        by_age = du.by_creation(live)
        if to_add > 0:  # larger first, newer first among equals
            order = sorted(reversed(by_age), key=lambda rs: -du.replicas(rs))
        else:  # larger first, older first among equals
            order = sorted(by_age, key=lambda rs: -du.replicas(rs))
        sizes: dict[str, int] = {}
        added = 0
        for rs in order:
            share = du.proportion(rs, d, to_add, added) if to_add != 0 else 0
            sizes[str(meta(rs).get("uid"))] = du.replicas(rs) + share
            added += share
        for i, rs in enumerate(order):
            uid = str(meta(rs).get("uid"))
            if i == 0 and to_add != 0:
                sizes[uid] = max(0, sizes[uid] + to_add - added)  # the leftover goes to the largest
            _, updated[uid] = self._scale_replica_set(rs, sizes[uid], d)
        return result()

    def _cleanup(self, d: Obj, old: Sequence[Obj]) -> None:
        """``cleanupDeployment``: delete the oldest empty old ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = du.revision_history_limit(d)
        if limit is None:
            return
        alive = [rs for rs in old if not is_deleting(rs)]
        excess = len(alive) - limit
        if excess <= 0:
            return
        for rs in du.by_revision(alive)[:excess]:
            status = rs.get("status") or {}
            if (
                int(status.get("replicas") or 0) != 0
                or du.replicas(rs) != 0
                or int(meta(rs).get("generation") or 0) > int(status.get("observedGeneration") or 0)
            ):
                continue
            namespace, name = key_of(rs)
            try:
                self.store.delete("ReplicaSet", namespace, name, uid=str(meta(rs).get("uid") or "") or None)
            except NotFound:
                continue

    def _sync_deployment_status(self, sync: RolloutSync, all_sets: list[Obj | None], new_rs: Obj | None) -> None:
        """``syncDeploymentStatus``."""
        status = du.calculate_status(all_sets, new_rs, sync.d, self.timestamp())
        if status != (sync.d.get("status") or {}):
            sync.d["status"] = status
            self._save(sync)
