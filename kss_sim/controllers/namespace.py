"""The namespace controller: kube-controller-manager's ``pkg/controller/namespace`` (its namespaced resources
deleter) over the virtual cluster.

A Namespace deleted through the API is not removed at once: kube-apiserver marks it (``deletionTimestamp``,
``status.phase: Terminating``) while its ``spec.finalizers`` holds ``kubernetes``, refuses new content in it, and
answers a second delete with a 409. This controller then empties it as upstream's deleter does:

- every namespaced kind's objects are deleted with background propagation, as a client would (so pods end
  gracefully, over their grace periods, through their kubelet, and an object's own finalizers hold it): the
  built-in kinds and every namespaced kind a CustomResourceDefinition serves, as the deleter walks discovery; the
  pods' owners first, so no workload controller makes new ones meanwhile (they would be refused: the namespace is
  terminating);
- what remains is counted into the namespace's conditions (``NamespaceDeletionDiscoveryFailure``,
  ``NamespaceDeletionGroupVersionParsingFailure``, ``NamespaceDeletionContentFailure``,
  ``NamespaceContentRemaining``, ``NamespaceFinalizersRemaining``, with upstream's reasons and messages), and the
  namespace looked at again after half the longest pod grace period (15 s when only finalizers hold content), or as
  soon as a pod of it goes;
- once nothing remains, ``kubernetes`` is taken out of ``spec.finalizers`` through the ``finalize`` subresource
  (a plain update keeps them, as kube-apiserver's strategy does) and the store removes the namespace.

Without a kubelet a bound pod never ends, so the namespace stays Terminating until it is force-deleted
(``--grace-period=0 --force``), as on a cluster whose nodes are gone.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from kss_sim.cluster.admission.deletion import BACKGROUND, DeleteOptions
from kss_sim.cluster.errors import ApiError, Conflict, NotFound
from kss_sim.cluster.kinds.registry import KINDS, KindInfo
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import is_terminated, meta
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

KUBERNETES_FINALIZER = "kubernetes"  # v1.FinalizerKubernetes
# finalizerEstimateSeconds: how long to wait for content held by finalizers.
FINALIZER_ESTIMATE_SECONDS = 15
_CONTENT = DeleteOptions(propagation_policy=BACKGROUND, graceful=True)
_CONFLICT_RETRIES = 5


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _resource(info: KindInfo) -> str:
    """schema.GroupResource's String(): ``pods``, ``deployments.apps``."""
    return f"{info.plural}.{info.group}" if info.group else info.plural


def _deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def content_kinds(store: ClusterPort) -> list[KindInfo]:
    """The namespaced kinds a namespace's deletion empties, as the deleter walks discovery: the built-in ones and
    every namespaced kind a CustomResourceDefinition serves (at its storage version), pods last (their owners go
    first)."""
    custom = [k for k in store.custom_kinds().storage_kinds() if k.namespaced]
    kinds = [*(k for k in KINDS if k.namespaced and not k.review), *custom]
    return sorted(kinds, key=lambda k: k.kind == "Pod")


class NamespaceController(ReconcileLoop[str]):
    """Empties namespaces being deleted, then lets them go (see the module docstring)."""

    name = "namespace"
    watched_kinds = ("Namespace", "Pod")

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now) -> None:
        """A stopped controller over ``store``."""
        super().__init__(store, clock=clock)
        self._terminating: set[str] = set()

    def reset(self) -> None:
        self._terminating.clear()

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[str]:
        namespace = str(meta(obj).get("namespace") or "")
        if kind == "Pod":
            # A pod of a terminating namespace gone: maybe the last thing it waited for.
            return [namespace] if event_type == DELETED and namespace in self._terminating else []
        name = str(meta(obj).get("name") or "")
        if event_type == DELETED or not _deleting(obj):
            self._terminating.discard(name)
            return []
        self._terminating.add(name)
        return [name]

    def resync(self) -> list[str]:
        for entry in self.store.select("Namespace").items:
            if _deleting(entry.obj):
                self._terminating.add(entry.name)
        return sorted(self._terminating)

    # --- reconcile ------------------------------------------------------------------------------------------
    def reconcile(self, key: str) -> None:
        try:
            namespace = self.store.read("Namespace", None, key).obj
        except NotFound:
            self._terminating.discard(key)
            return
        if not _deleting(namespace):
            return
        if KUBERNETES_FINALIZER not in (_dict(namespace.get("spec")).get("finalizers") or []):
            return  # finalized: the store removes it once its other finalizers go
        estimate = self._delete_content(key, namespace)
        if estimate > 0:
            # upstream's ResourcesRemainingError: looked at again after half the estimate (and on a pod's end)
            self.requeue_at(key, self.now() + timedelta(seconds=estimate // 2 + 1))
            return
        self._finalize(key)

    def _delete_content(self, namespace: str, obj: Obj) -> int:
        """deleteAllContent: delete, count what remains, write the conditions; the seconds to wait (0: empty)."""
        # estimateGracefulTerminationForPods: the longest grace period of the pods not finished yet.
        grace = max(
            (
                int(_dict(e.obj.get("spec")).get("terminationGracePeriodSeconds") or 0)
                for e in self.store.select("Pod", namespace).items
                if not is_terminated(e.obj)
            ),
            default=0,
        )
        failures: list[str] = []
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        estimate = 0
        for info in content_kinds(self.store):
            if not self.store.serves(info.key):
                continue
            for entry in list(self.store.select(info.key, namespace).items):
                if _deleting(entry.obj) and info.kind != "Pod":
                    continue  # waits for its finalizers (a pod is asked again: a shorter period may apply)
                try:
                    self.store.delete(info.key, namespace, entry.name, options=_CONTENT)
                except NotFound:
                    continue
                except ApiError as exc:
                    failures.append(f"{_resource(info)}: {exc.message}")
            left = self.store.select(info.key, namespace).items
            if not left:
                continue
            remaining[_resource(info)] = len(left)
            held = 0
            for entry in left:
                for finalizer in meta(entry.obj).get("finalizers") or []:
                    finalizers[str(finalizer)] = finalizers.get(str(finalizer), 0) + 1
                    held += 1
            if info.kind == "Pod" and grace:
                estimate = max(estimate, grace)
            elif held:
                estimate = max(estimate, FINALIZER_ESTIMATE_SECONDS)
            else:
                estimate = max(estimate, 1)  # upstream's "unexpected items still remain": retried
        self._write_conditions(namespace, failures, remaining, finalizers)
        return estimate

    def _write_conditions(
        self, namespace: str, failures: list[str], remaining: dict[str, int], finalizers: dict[str, int]
    ) -> None:
        """namespaceConditionUpdater: the five deletion conditions, written when they change."""
        if failures:
            content = (
                "True",
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(failures)} remaining: {', '.join(failures)}",
            )
        else:
            content = ("False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization")
        if remaining:
            listed = ", ".join(f"{r} has {n} resource instances" for r, n in sorted(remaining.items()))
            left = ("True", "SomeResourcesRemain", f"Some resources are remaining: {listed}")
        else:
            left = ("False", "ContentRemoved", "All content successfully removed")
        if finalizers:
            listed = ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
            held = ("True", "SomeFinalizersRemain", f"Some content in the namespace has finalizers remaining: {listed}")
        else:
            held = ("False", "ContentHasNoFinalizers", "All content-preserving finalizers finished")
        wanted = {
            "NamespaceDeletionDiscoveryFailure": (
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            "NamespaceDeletionGroupVersionParsingFailure": (
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            "NamespaceDeletionContentFailure": content,
            "NamespaceContentRemaining": left,
            "NamespaceFinalizersRemaining": held,
        }
        for _ in range(_CONFLICT_RETRIES):
            try:
                current = self.store.read("Namespace", None, namespace).obj
            except NotFound:
                return
            status = dict(_dict(current.get("status")))
            conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
            by_type = {c.get("type"): c for c in conditions}
            changed = False
            for kind, (value, reason, message) in wanted.items():
                condition = by_type.get(kind)
                if condition is None:
                    condition = {"type": kind}
                    conditions.append(condition)
                elif (condition.get("status"), condition.get("reason"), condition.get("message")) == (
                    value,
                    reason,
                    message,
                ):
                    continue
                if condition.get("status") != value:
                    condition["lastTransitionTime"] = self.timestamp()
                condition.update(status=value, reason=reason, message=message)
                changed = True
            if not changed:
                return
            status["conditions"] = conditions
            try:
                self.store.update_status(
                    "Namespace", None, namespace, status, resource_version=meta(current).get("resourceVersion")
                )
                return
            except Conflict:
                continue

    def _finalize(self, namespace: str) -> None:
        """finalizeNamespace: ``kubernetes`` out of ``spec.finalizers``; the store then removes the namespace."""
        for _ in range(_CONFLICT_RETRIES):
            try:
                current = self.store.read("Namespace", None, namespace).obj
            except NotFound:
                return
            spec = dict(_dict(current.get("spec")))
            # An empty list, not none: the store's defaulting would give a namespace without one ``kubernetes``.
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != KUBERNETES_FINALIZER]
            try:
                self.store.update(
                    "Namespace", {**current, "spec": spec}, subresource="finalize", manager="kube-controller-manager"
                )
            except Conflict:
                continue
            log.info("namespace %s: emptied and finalized", namespace)
            self._terminating.discard(namespace)
            return
