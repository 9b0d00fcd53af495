"""A DaemonSet's ControllerRevisions as ``pkg/controller/daemon/update.go`` keeps them (``history.py`` has what
the StatefulSet controller shares).

- ``construct_history``: the current revision is the one whose data is the template's, renumbered past the others
  when older (a rollback, ``kubectl rollout undo``); several such are folded into the newest (the pods relabelled
  to its hash, the others deleted); none: a new one, ``<ds>-<hash>``, its label the hash new pods carry. A revision
  without the hash label gets its name as one.
- ``cleanup_history``: old revisions no pod is at go, oldest first, beyond ``revisionHistoryLimit``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from kss_sim.cluster.errors import NotFound
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.history import (
    controlled_revisions,
    create_revision,
    delete_revision,
    new_revision,
    revision_number,
    sort_revisions,
    update_revision_number,
)
from kss_sim.controllers.owned import key_of, meta
from kss_sim.controllers.rollout import CONTROLLER_REVISION_HASH_LABEL, int_field, revision_data
from kss_sim.kube.objects import Obj

Pods = Callable[[], list[Obj]]  # the DaemonSet's claimed pods, read when needed


def _hash(obj: Obj) -> str | None:
    value = (meta(obj).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
    return str(value) if value is not None else None


def construct_history(store: ClusterPort, ds: Obj, pods: Pods) -> tuple[Obj, list[Obj]]:
    """``constructHistory``: (the current revision, the old ones)."""
    data = revision_data((ds.get("spec") or {}).get("template"))
    current: list[Obj] = []
    old: list[Obj] = []
    for revision in controlled_revisions(store, ds):
        if _hash(revision) is None:
            body = {"metadata": {"labels": {CONTROLLER_REVISION_HASH_LABEL: meta(revision).get("name")}}}
            revision = store.patch("ControllerRevision", *key_of(revision), body, "merge")
        (current if revision.get("data") == data else old).append(revision)
    number = max((revision_number(r) for r in old), default=0) + 1
    if not current:
        collisions = int_field(ds.get("status"), "collisionCount", 0)
        created, used = create_revision(store, ds, new_revision(ds, number, collisions), collisions)
        if used != collisions:
            store.patch("DaemonSet", *key_of(ds), {"status": {"collisionCount": used}}, "merge", subresource="status")
        return created, old
    keep = _dedup_current(store, current, pods)
    if revision_number(keep) < number:
        keep = update_revision_number(store, keep, number)
    return keep, old


def _dedup_current(store: ClusterPort, current: list[Obj], pods: Pods) -> Obj:
    """``dedupCurHistories``: of several revisions of the current template the newest stays; the pods not at its
    hash are relabelled (every one, as upstream does) and the others deleted."""
    keep = max(current, key=revision_number)
    for duplicate in current:
        if duplicate is keep:
            continue
        for pod in pods():
            if _hash(pod) != _hash(keep):
                body = {"metadata": {"labels": {CONTROLLER_REVISION_HASH_LABEL: _hash(keep)}}}
                with contextlib.suppress(NotFound):
                    store.patch("Pod", *key_of(pod), body, "strategic")
        delete_revision(store, duplicate)
    return keep


def cleanup_history(store: ClusterPort, ds: Obj, old: list[Obj], pods: Pods) -> None:
    """``cleanupHistory``: old revisions beyond ``revisionHistoryLimit`` go, oldest first, unless a pod is at their
    hash."""
    excess = len(old) - int_field(ds.get("spec"), "revisionHistoryLimit", 10)
    if excess <= 0:
        return
    live = {_hash(pod) for pod in pods()}
    for revision in sort_revisions(old):
        if excess <= 0:
            break
        if _hash(revision) in live:
            continue
        delete_revision(store, revision)
        excess -= 1
