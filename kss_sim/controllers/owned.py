"""What the controllers that own pods share: controller references, pods made from a template, which pods count.

kube-controller-manager's ``controller_utils.go`` and ``controller_ref_manager.go`` in small: a dependent names
its controller in ``metadata.ownerReferences`` (``controller: true``, ``blockOwnerDeletion: true``); pods are
made from ``spec.template`` with the owner's reference and the template's labels; an orphan whose labels match
the selector is adopted; terminated or deleting pods are not "active".
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.kube.labels import label_selector_matches
from kss_sim.kube.objects import Obj

Key = tuple[str, str]  # (namespace, name)


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj.metadata`` (an empty dict when missing)."""
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def key_of(obj: Mapping[str, Any]) -> Key:
    """``(namespace, name)`` of an object."""
    m = meta(obj)
    return str(m.get("namespace") or ""), str(m.get("name") or "")


def owner_reference(owner: Mapping[str, Any], *, controller: bool = True) -> dict[str, Any]:
    """The ownerReference a controller writes into its dependents (``metav1.NewControllerRef``)."""
    m = meta(owner)
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": m.get("name"),
        "uid": m.get("uid"),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` (``metav1.GetControllerOf``), or None."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid of the object's controller, or None for an orphan."""
    ref = controller_ref(obj)
    return str(ref.get("uid")) if ref is not None and ref.get("uid") else None


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """Whether ``owner`` is ``obj``'s controller (by uid)."""
    uid = controller_uid(obj)
    return uid is not None and uid == meta(owner).get("uid")


def selector_matches(owner: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` match the owner's ``spec.selector`` (an empty or missing selector matches nothing,
    as the workload controllers treat it)."""
    selector = (owner.get("spec") or {}).get("selector")
    if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    return label_selector_matches(selector, labels or {})


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """Whether the object is being deleted (it has a deletionTimestamp)."""
    return bool(meta(obj).get("deletionTimestamp"))


def is_terminated(pod: Mapping[str, Any]) -> bool:
    """Whether the pod has finished (``Succeeded`` or ``Failed``)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: not finished and not being deleted."""
    return not is_terminated(pod) and not is_deleting(pod)


def pod_condition(pod: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """The pod's condition of type ``kind`` (``Ready``, ``PodScheduled``...), or None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    condition = pod_condition(pod, "Ready")
    return condition is not None and condition.get("status") == "True"


def pod_from_template(
    owner: Mapping[str, Any],
    template: Mapping[str, Any] | None,
    *,
    name: str | None = None,
    generate_name: str | None = None,
    extra_labels: Mapping[str, str] | None = None,
) -> Obj:
    """A new pod as ``controller.GetPodFromTemplate`` makes it: the template's labels, annotations, finalizers
    and spec, the owner's namespace and controller reference, and either ``name`` or ``generateName``."""
    template = template or {}
    template_meta = template.get("metadata") or {}
    labels = dict(template_meta.get("labels") or {})
    labels.update(extra_labels or {})
    pod_meta: dict[str, Any] = {
        "namespace": meta(owner).get("namespace"),
        "labels": labels,
        "ownerReferences": [owner_reference(owner)],
    }
    if name is not None:
        pod_meta["name"] = name
    else:
        pod_meta["generateName"] = generate_name or f"{meta(owner).get('name')}-"
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    if template_meta.get("finalizers"):
        pod_meta["finalizers"] = list(template_meta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": copy.deepcopy(template.get("spec") or {})}


def adoption_patch(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch by which ``owner`` adopts the orphan ``obj`` (its references plus the controller's),
    guarded by ``obj``'s resourceVersion and uid as controller-runtime's adoption is."""
    refs = [dict(r) for r in meta(obj).get("ownerReferences") or [] if isinstance(r, dict)]
    refs.append(owner_reference(owner))
    return {
        "metadata": {
            "ownerReferences": refs,
            "uid": meta(obj).get("uid"),
            "resourceVersion": meta(obj).get("resourceVersion"),
        }
    }


class OwnedIndex:
    """Which objects (of one kind) each controller uid owns, fed from a controller's ``observe``; lets a
    reconcile find its pods without listing every pod of the cluster."""

    def __init__(self) -> None:
        """An empty index."""
        self._owner_of: dict[Key, str] = {}
        self._owned: dict[str, set[Key]] = {}
        self._orphans: dict[str, set[Key]] = {}  # namespace -> objects without a controller (``track``)
        # namespace -> (label, value) -> the orphans so labelled, and each orphan's pairs: a selector's matchLabels
        # narrow the orphans it may adopt without reading every orphan of the namespace.
        self._orphans_labelled: dict[str, dict[tuple[str, str], set[Key]]] = {}
        self._orphan_labels: dict[Key, tuple[tuple[str, str], ...]] = {}

    def clear(self) -> None:
        """Forget everything."""
        self._owner_of.clear()
        self._owned.clear()
        self._orphans.clear()
        self._orphans_labelled.clear()
        self._orphan_labels.clear()

    def update(self, key: Key, owner_uid: str | None) -> str | None:
        """Record ``key``'s controller (None: orphan or deleted); returns the one it had."""
        before = self._owner_of.get(key)
        if before == owner_uid:
            return before
        if before is not None:
            owned = self._owned[before]
            owned.discard(key)
            if not owned:
                del self._owned[before]
            del self._owner_of[key]
        if owner_uid is not None:
            self._owner_of[key] = owner_uid
            self._owned.setdefault(owner_uid, set()).add(key)
        return before

    def owned_by(self, owner_uid: str) -> list[Key]:
        """The keys ``owner_uid`` controls, sorted."""
        return sorted(self._owned.get(owner_uid, ()))

    def owners(self) -> Iterable[str]:
        """Every owner uid with at least one dependent."""
        return list(self._owned)

    def track(
        self, obj: Mapping[str, Any], *, deleted: bool, owner_kind: str | None = None
    ) -> tuple[str | None, str | None]:
        """Record ``obj``'s controller (only one of ``owner_kind`` counts, when given) and whether it is an orphan
        (no controller at all); returns (controller uid before, controller uid now)."""
        key = key_of(obj)
        ref = None if deleted else controller_ref(obj)
        owner = str(ref.get("uid")) if ref is not None and owner_kind in (None, ref.get("kind")) else None
        before = self.update(key, owner)
        orphans = self._orphans.setdefault(key[0], set())
        self._unlabel_orphan(key)
        if ref is None and not deleted:
            orphans.add(key)
            pairs = tuple((str(k), str(v)) for k, v in (meta(obj).get("labels") or {}).items())
            self._orphan_labels[key] = pairs
            labelled = self._orphans_labelled.setdefault(key[0], {})
            for pair in pairs:
                labelled.setdefault(pair, set()).add(key)
        else:
            orphans.discard(key)
        return before, owner

    def _unlabel_orphan(self, key: Key) -> None:
        labelled = self._orphans_labelled.get(key[0], {})
        for pair in self._orphan_labels.pop(key, ()):
            keys = labelled.get(pair)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del labelled[pair]

    def orphans_in(self, namespace: str) -> list[Key]:
        """The objects of ``namespace`` with no controller, sorted (``track`` feeds this)."""
        return sorted(self._orphans.get(namespace, ()))

    def orphans_for(self, namespace: str, selector: Mapping[str, Any] | None) -> list[Key]:
        """The orphans of ``namespace`` that ``selector`` may match, sorted: every one carrying all of its
        ``matchLabels`` (every orphan when it has none); the caller still matches the whole selector."""
        return sorted(self._orphans_for(namespace, selector))

    def claimable(self, owner_uid: str, namespace: str, selector: Mapping[str, Any] | None) -> list[Key]:
        """What a controller's claim looks at, sorted: the objects of ``namespace`` ``owner_uid`` controls and the
        orphans its ``selector`` may match."""
        # Sorted by name within the one namespace: comparing strings is about twice as fast as comparing keys.
        names = {name for ns, name in self._owned.get(owner_uid, ()) if ns == namespace}
        names.update(name for _, name in self._orphans_for(namespace, selector))
        return [(namespace, name) for name in sorted(names)]

    def _orphans_for(self, namespace: str, selector: Mapping[str, Any] | None) -> set[Key]:
        match_labels = (selector or {}).get("matchLabels") or {}
        if not match_labels:
            return self._orphans.get(namespace, set())
        labelled = self._orphans_labelled.get(namespace, {})
        postings = sorted((labelled.get((str(k), str(v)), set()) for k, v in match_labels.items()), key=len)
        return postings[0].intersection(*postings[1:])


class Controllers:
    """A controller's own objects (Deployments, ReplicaSets...): by namespace and by uid, fed from ``observe``."""

    def __init__(self, kind: str) -> None:
        """An empty index of objects of ``kind``."""
        self.kind = kind
        self._names_in: dict[str, set[str]] = {}
        self._key_of_uid: dict[str, Key] = {}
        self._uid_of_key: dict[Key, str] = {}

    def clear(self) -> None:
        """Forget everything."""
        self._names_in.clear()
        self._key_of_uid.clear()
        self._uid_of_key.clear()

    def put(self, key: Key, uid: str | None) -> None:
        """Record the object at ``key`` with ``uid`` (None: it is gone)."""
        before = self._uid_of_key.pop(key, None)
        if before is not None:
            self._key_of_uid.pop(before, None)
        if uid is None:
            self._names_in.get(key[0], set()).discard(key[1])
            return
        self._names_in.setdefault(key[0], set()).add(key[1])
        self._uid_of_key[key] = uid
        self._key_of_uid[uid] = key

    def keys_of(self, uids: Iterable[str | None]) -> list[Key]:
        """The keys of those of ``uids`` that are known."""
        return [self._key_of_uid[uid] for uid in set(uids) if uid is not None and uid in self._key_of_uid]

    def names_in(self, namespace: str) -> list[str]:
        """The names in ``namespace``, sorted."""
        return sorted(self._names_in.get(namespace, ()))

    def selecting(self, store: ClusterPort, namespace: str, labels: Mapping[str, str]) -> list[Key]:
        """Those of ``namespace`` whose selector matches ``labels`` (who may adopt an orphan so labelled)."""
        keys: list[Key] = []
        for name in self.names_in(namespace):
            obj = store.get(self.kind, namespace, name)
            if obj is not None and selector_matches(obj, labels):
                keys.append((namespace, name))
        return keys
