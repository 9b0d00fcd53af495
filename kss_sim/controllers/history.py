"""ControllerRevisions, the template history of StatefulSets and DaemonSets, as ``pkg/controller/history`` keeps them.

A revision's ``data`` is the strategic merge patch ``getPatch`` builds, ``{"spec": {"template": {...,
"$patch": "replace"}}}`` (the template as Go renders it: ``metadata.creationTimestamp`` null), so applying it to the
owner restores that template; ``kubectl rollout undo sts/x`` sends exactly this patch. A revision carries the
template's labels plus ``controller-revision-hash``, the owner's controller reference, and a ``revision`` number one
past the highest of the owner's. Its name is ``<owner>-<hash>`` (``ControllerRevisionName``), the hash over
``data`` and the owner's ``collisionCount`` (``HashControllerRevision``); a name taken by other data bumps the count
until one is free. The owner's revisions are the ones it controls and the orphans its selector matches (adopted).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import Any

from kss_sim.cluster.admission.patch import strategic_merge_patch
from kss_sim.cluster.errors import AlreadyExists, Conflict, NotFound
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.owned import adoption_patch, controller_uid, key_of, meta, owner_reference, selector_matches
from kss_sim.controllers.rollout import CONTROLLER_REVISION_HASH_LABEL, revision_data, template_hash
from kss_sim.kube.objects import Obj

KIND = "ControllerRevision"
_NAME_PREFIX_MAX = 223  # ControllerRevisionName truncates the owner's name so the hash still fits


def revision_name(owner_name: str, hash_: str) -> str:
    """``ControllerRevisionName``."""
    return f"{owner_name[:_NAME_PREFIX_MAX]}-{hash_}"


def revision_number(revision: Mapping[str, Any]) -> int:
    """``revision`` (0 when absent)."""
    value = revision.get("revision")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def sort_revisions(revisions: list[Obj]) -> list[Obj]:
    """``SortControllerRevisions``: by revision number, then creation time, then name."""
    return sorted(
        revisions,
        key=lambda r: (revision_number(r), str(meta(r).get("creationTimestamp") or ""), str(meta(r).get("name"))),
    )


def next_revision(revisions: list[Obj]) -> int:
    """``nextRevision``: one past the highest revision number (1 for the first)."""
    return max((revision_number(r) for r in revisions), default=0) + 1


def equal_data(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``EqualRevision``: the same ``data`` (upstream compares the raw bytes, which the same template gives)."""
    return a.get("data") == b.get("data")


def new_revision(owner: Mapping[str, Any], number: int, collision_count: int) -> Obj:
    """``NewControllerRevision`` for the owner's current template (``newRevision`` also copies the owner's
    annotations, so ``kubernetes.io/change-cause`` shows in ``kubectl rollout history``)."""
    template = (owner.get("spec") or {}).get("template") or {}
    hash_ = template_hash(template, collision_count)
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    revision_meta: dict[str, Any] = {
        "name": revision_name(str(meta(owner).get("name")), hash_),
        "namespace": meta(owner).get("namespace"),
        "labels": labels,
        "ownerReferences": [owner_reference(owner)],
    }
    if meta(owner).get("annotations"):
        revision_meta["annotations"] = dict(meta(owner)["annotations"])
    return {
        "apiVersion": "apps/v1",
        "kind": KIND,
        "metadata": revision_meta,
        "data": revision_data(template),
        "revision": number,
    }


def controlled_revisions(store: ClusterPort, owner: Mapping[str, Any]) -> list[Obj]:
    """``ClaimControllerRevisions`` over the owner's namespace: the revisions it controls and still selects, the
    orphans it selects (adopted); controlled ones it no longer selects are released. As stored (read-only)."""
    uid = str(meta(owner).get("uid"))
    namespace, _ = key_of(owner)
    claimed: list[Obj] = []
    for entry in store.select(KIND, namespace).items:
        revision = entry.obj
        controller = controller_uid(revision)
        matches = selector_matches(owner, meta(revision).get("labels"))
        if controller == uid:
            if matches:
                claimed.append(revision)
            elif not meta(revision).get("deletionTimestamp"):
                refs = [r for r in meta(revision).get("ownerReferences") or [] if r.get("uid") != uid]
                body = {
                    "metadata": {"ownerReferences": refs or None, "resourceVersion": meta(revision)["resourceVersion"]}
                }
                with contextlib.suppress(NotFound, Conflict):
                    store.patch(KIND, namespace, entry.name, body, "merge")
        elif controller is None and matches and not meta(revision).get("deletionTimestamp"):
            with contextlib.suppress(NotFound, Conflict):  # gone or changed: the next pass looks again
                claimed.append(store.patch(KIND, namespace, entry.name, adoption_patch(revision, owner), "merge"))
    return claimed


def create_revision(
    store: ClusterPort, owner: Mapping[str, Any], revision: Obj, collision_count: int
) -> tuple[Obj, int]:
    """``CreateControllerRevision``: create ``revision`` under the name its hash gives; a name held by a revision
    of the same data is that revision, one held by other data bumps the collision count and tries the next name.
    Returns the revision and the collision count used."""
    template = ((revision.get("data") or {}).get("spec") or {}).get("template") or {}
    template = {k: v for k, v in template.items() if k != "$patch"}
    while True:
        hash_ = template_hash(template, collision_count)
        body = copy.deepcopy(revision)
        body["metadata"]["name"] = revision_name(str(meta(owner).get("name")), hash_)
        body["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL] = hash_  # DaemonSet pods carry this one
        try:
            return store.create(KIND, body), collision_count
        except AlreadyExists:
            existing = store.get(KIND, meta(owner).get("namespace"), body["metadata"]["name"])
            if existing is not None and equal_data(existing, body):
                return existing, collision_count
            collision_count += 1


def update_revision_number(store: ClusterPort, revision: Obj, number: int) -> Obj:
    """``UpdateControllerRevision``: the same revision, renumbered (a rollback to an old template)."""
    namespace, name = key_of(revision)
    body = {"revision": number, "metadata": {"resourceVersion": meta(revision).get("resourceVersion")}}
    return store.patch(KIND, namespace, name, body, "merge")


def delete_revision(store: ClusterPort, revision: Obj) -> None:
    """``DeleteControllerRevision`` (already gone is fine)."""
    with contextlib.suppress(NotFound):
        store.delete(KIND, *key_of(revision), uid=str(meta(revision).get("uid")))


def applied_template(owner: Mapping[str, Any], revision: Mapping[str, Any]) -> Obj:
    """``ApplyRevision``'s template: the revision's patch applied to the owner."""
    data = revision.get("data")
    if not isinstance(data, dict):
        return copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    restored = strategic_merge_patch(dict(owner), data)
    template = (restored.get("spec") or {}).get("template")
    return template if isinstance(template, dict) else {}
