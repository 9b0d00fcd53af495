"""The replay's workload objects as the controllers' store takes them: which kinds, what the API refuses of one
(before the run), and the uids that name owners.

The store gives every object a uid of its own, so what names an owner by the uid it came with (a snapshot's owner
references, a Job's generated selector labels) is made to name it by the store's (:class:`StoreUids`); a Job that
names its own uid loses those labels before its create, and the API generates them anew (as ``kss import`` does).
``world.py`` runs the controllers over that store.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from kss_sim.cluster.errors import ApiError
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.owned import meta
from kss_sim.kube.objects import Obj

# The workload kinds, and the autoscaler that scales them (its controller runs here too).
KINDS = frozenset(("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "HorizontalPodAutoscaler"))
JOB_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def check_workload_object(
    obj: Obj, *, kube_version: str | None = None, feature_gates: Mapping[str, bool] | None = None
) -> list[str]:
    """What keeps a workload object from running in a replay, each as ``path: message`` (empty: it runs): the kind,
    and what kube-apiserver's admission and validation refuse (asked of a scratch in-memory store serving the run's
    ``kube_version`` with its ``feature_gates``; None: the default version, its default gates)."""
    kind = obj.get("kind")
    if kind not in KINDS:
        return [f"kind: {kind!r} is not a workload kind ({', '.join(sorted(KINDS))})"]
    body = without_job_uid(copy.deepcopy(obj))
    body.setdefault("metadata", {}).setdefault("namespace", "default")
    try:
        ClusterStore(None, kube_version=kube_version, feature_gates=feature_gates).create(str(kind), body)
    except ApiError as exc:
        causes = (exc.details or {}).get("causes") or []
        return [
            f"{c.get('field')}: {c.get('message')}" if c.get("field") else str(c.get("message")) for c in causes
        ] or [exc.message]
    return []


def without_job_uid(obj: Obj) -> Obj:
    """A Job that names its uid (a snapshot's) in the selector and labels the API generated from it loses them: the
    store gives every object a uid of its own and generates them anew from it (as ``kss import`` does)."""
    uid = meta(obj).get("uid")
    spec = obj.get("spec")
    if obj.get("kind") != "Job" or not uid or not isinstance(spec, dict) or spec.get("manualSelector"):
        return obj
    template_meta = (spec.get("template") or {}).get("metadata") or {}
    selector = spec.get("selector") or {}
    for labels in (meta(obj).get("labels"), template_meta.get("labels"), selector.get("matchLabels")):
        for label in JOB_UID_LABELS:
            if isinstance(labels, dict) and labels.get(label) == uid:
                del labels[label]
    if "selector" in spec and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        del spec["selector"]
    return obj


class StoreUids:
    """The uids the store gave the objects that came with uids of their own, and the objects that came with none:
    what renames an owner reference or a Job's uid label to the store's uid."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self._store_uid: dict[str, str] = {}  # the uid an object came with (a snapshot's) -> the one the store gave
        self._without_uid: set[tuple[str, str, str]] = set()  # (kind, namespace, name) of those that came with none

    def created(self, kind: str, namespace: str, name: str, given: object, stored: Obj) -> None:
        """A workload object created in the store: ``given`` the uid it came with (none: named by kind and name)."""
        if given:
            self._store_uid[str(given)] = str(meta(stored).get("uid"))
        else:
            self._without_uid.add((kind, namespace, name))

    def with_store_uids(self, obj: Obj) -> Obj:
        """``obj`` naming its owners by the uids the store gave them (the owner references of a snapshot's pods and
        ReplicaSets, a Job's pods' uid labels): the store gives every object a uid of its own, and the garbage
        collector deletes what names an owner that is not there. An owner that came without a uid (hand-written) is
        named by kind and name."""
        namespace = str(meta(obj).get("namespace") or "default")
        for ref in meta(obj).get("ownerReferences") or []:
            uid = self._store_uid.get(str(ref.get("uid")))
            if uid is None and (str(ref.get("kind")), namespace, str(ref.get("name"))) in self._without_uid:
                owner = self.store.get(str(ref.get("kind")), namespace, str(ref.get("name")))
                uid = str(meta(owner).get("uid")) if owner is not None else None
            if uid is not None:
                ref["uid"] = uid
        if obj.get("kind") == "Pod":
            self.store_uid_labels(meta(obj).get("labels"))
        return obj

    def keep_generated_selector(self, spec: Obj, stored: Obj) -> None:
        """A Job's update keeps the selector and template labels the API generated at its create, as ``kubectl
        apply`` keeps fields it did not set (both are immutable: written without them, or naming the uid a
        snapshot's Job came with, the update would be refused)."""
        if spec.get("manualSelector"):
            return
        template = spec.setdefault("template", {})
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        self.store_uid_labels(labels)
        self.store_uid_labels((spec.get("selector") or {}).get("matchLabels"))
        stored_labels = ((stored.get("template") or {}).get("metadata") or {}).get("labels") or {}
        for label in (*JOB_UID_LABELS, "job-name", "batch.kubernetes.io/job-name"):
            if label in stored_labels:
                labels.setdefault(label, stored_labels[label])
        if "selector" in stored:
            spec.setdefault("selector", copy.deepcopy(stored["selector"]))

    def store_uid_labels(self, labels: object) -> None:
        """A Job's uid labels (``controller-uid``) naming it by the uid the store gave it."""
        if isinstance(labels, dict):
            for label in JOB_UID_LABELS:
                uid = self._store_uid.get(str(labels.get(label)))
                if uid is not None:
                    labels[label] = uid
