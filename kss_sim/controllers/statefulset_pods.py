"""A StatefulSet's pods and claims as ``pkg/controller/statefulset/stateful_set_utils.go`` builds them: pure
functions over plain objects (the controller is ``statefulset.py``).

- identity: pod ``<set>-<ordinal>`` (``spec.ordinals.start`` honoured), labels
  ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``,
  ``hostname`` = the pod's name and ``subdomain`` = ``serviceName``;
- storage: one claim ``<template>-<set>-<ordinal>`` per ``volumeClaimTemplates`` entry (labels: the template's plus
  the selector's ``matchLabels``), the pod's volume of that name pointing at it;
- ``persistentVolumeClaimRetentionPolicy``: which ownerReferences a claim should carry (none for Retain/Retain; the
  set for ``whenDeleted: Delete``; the pod, once scaled away, for ``whenScaled: Delete``), for the garbage
  collector to act on.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from kss_sim.controllers.owned import meta, owner_reference, pod_from_template
from kss_sim.controllers.rollout import CONTROLLER_REVISION_HASH_LABEL, int_field, template_hash

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"  # apps.StatefulSetPodNameLabel
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"  # apps.PodIndexLabel (PodIndexLabel is GA)
RETAIN = "Retain"
DELETE = "Delete"
PARALLEL = "Parallel"
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"

_STATEFUL_POD = re.compile(r"^(.*)-([0-9]+)$")
_INT32_MAX = 2**31 - 1


def parent_and_ordinal(name: str) -> tuple[str, int]:
    """``getParentNameAndOrdinal``: the set's name and the ordinal in a pod's name; ("", -1) when it has none."""
    match = _STATEFUL_POD.match(name)
    if match is None:
        return "", -1
    ordinal = int(match.group(2))
    return match.group(1), ordinal if ordinal <= _INT32_MAX else -1


def ordinal_of(pod: Mapping[str, Any]) -> int:
    """``getOrdinal``."""
    return parent_and_ordinal(str(meta(pod).get("name") or ""))[1]


def is_member(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``isMemberOf``: the pod's name is ``<set>-<ordinal>``."""
    return parent_and_ordinal(str(meta(pod).get("name") or ""))[0] == meta(sts).get("name")


# --- the spec, with kube-apiserver's defaults for what is absent ------------------------------------------------


def spec_of(sts: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` (an empty dict when missing)."""
    spec = sts.get("spec")
    return spec if isinstance(spec, dict) else {}


def replicas_of(sts: Mapping[str, Any]) -> int:
    """``spec.replicas`` (default 1)."""
    return max(0, int_field(spec_of(sts), "replicas", 1))


def start_ordinal(sts: Mapping[str, Any]) -> int:
    """``getStartOrdinal``: ``spec.ordinals.start`` (default 0)."""
    return max(0, int_field(spec_of(sts).get("ordinals"), "start", 0))


def in_ordinal_range(sts: Mapping[str, Any], ordinal: int) -> bool:
    """``podInOrdinalRange``."""
    start = start_ordinal(sts)
    return start <= ordinal < start + replicas_of(sts)


def monotonic(sts: Mapping[str, Any]) -> bool:
    """Not ``allowsBurst``: ``podManagementPolicy`` OrderedReady (the default) rather than Parallel."""
    return spec_of(sts).get("podManagementPolicy") != PARALLEL


def strategy_type(sts: Mapping[str, Any]) -> str:
    """``spec.updateStrategy.type`` (default RollingUpdate)."""
    return str((spec_of(sts).get("updateStrategy") or {}).get("type") or ROLLING_UPDATE)


def partition(sts: Mapping[str, Any]) -> int | None:
    """``spec.updateStrategy.rollingUpdate.partition`` (default 0 with RollingUpdate; None without rollingUpdate)."""
    strategy = spec_of(sts).get("updateStrategy") or {}
    if strategy_type(sts) != ROLLING_UPDATE:
        rolling = strategy.get("rollingUpdate")
        return int_field(rolling, "partition", 0) if isinstance(rolling, dict) else None
    return int_field(strategy.get("rollingUpdate"), "partition", 0)


def min_ready_seconds(sts: Mapping[str, Any]) -> int:
    """``spec.minReadySeconds`` (default 0)."""
    return int_field(spec_of(sts), "minReadySeconds", 0)


def retention_policy(sts: Mapping[str, Any]) -> tuple[str, str]:
    """``getPersistentVolumeClaimRetentionPolicy``: (whenDeleted, whenScaled), Retain when absent."""
    policy = spec_of(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get("whenDeleted") or RETAIN), str(policy.get("whenScaled") or RETAIN)


def revision_name(sts: Mapping[str, Any]) -> str:
    """The update revision's name, ``ControllerRevisionName(<set>, hash)``."""
    collisions = int_field(sts.get("status"), "collisionCount", 0)
    return f"{str(meta(sts).get('name'))[:223]}-{template_hash(spec_of(sts).get('template'), collisions)}"


# --- pods and claims ----------------------------------------------------------------------------------------------


def claim_name(template_name: str, sts: Mapping[str, Any], ordinal: int) -> str:
    """``getPersistentVolumeClaimName``."""
    return f"{template_name}-{meta(sts).get('name')}-{ordinal}"


def claims_for(sts: Mapping[str, Any], ordinal: int) -> dict[str, dict[str, Any]]:
    """``getPersistentVolumeClaims``: each claim template's claim for ``ordinal``, by template name."""
    match_labels = ((spec_of(sts).get("selector") or {}).get("matchLabels")) or {}
    claims: dict[str, dict[str, Any]] = {}
    for template in spec_of(sts).get("volumeClaimTemplates") or []:
        if not isinstance(template, dict):
            continue
        template_meta = template.get("metadata") or {}
        name = str(template_meta.get("name") or "")
        claim_meta: dict[str, Any] = {
            k: copy.deepcopy(v) for k, v in template_meta.items() if k in ("labels", "annotations", "finalizers")
        }
        claim_meta["name"] = claim_name(name, sts, ordinal)
        claim_meta["namespace"] = meta(sts).get("namespace")
        claim_meta["labels"] = {**(claim_meta.get("labels") or {}), **match_labels}
        claims[name] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": claim_meta,
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
    return claims


def update_storage(sts: Mapping[str, Any], pod: dict[str, Any], ordinal: int) -> None:
    """``updateStorage``, in place: a volume per claim template pointing at its claim, other volumes kept."""
    claims = claims_for(sts, ordinal)
    spec = pod.setdefault("spec", {})
    volumes: list[dict[str, Any]] = [
        {"name": name, "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
        for name, claim in claims.items()
    ]
    volumes += [v for v in spec.get("volumes") or [] if isinstance(v, dict) and v.get("name") not in claims]
    if volumes:
        spec["volumes"] = volumes


def storage_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``storageMatches``: the pod's volumes point at its claims."""
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or [] if isinstance(v, dict)}
    for name, claim in claims_for(sts, ordinal).items():
        source = (volumes.get(name) or {}).get("persistentVolumeClaim") or {}
        if source.get("claimName") != claim["metadata"]["name"]:
            return False
    return True


def identity_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``identityMatches``."""
    parent, ordinal = parent_and_ordinal(str(meta(pod).get("name") or ""))
    return (
        ordinal >= 0
        and parent == meta(sts).get("name")
        and meta(pod).get("namespace") == meta(sts).get("namespace")
        and (meta(pod).get("labels") or {}).get(POD_NAME_LABEL) == meta(pod).get("name")
    )


def identity_labels(sts: Mapping[str, Any], ordinal: int) -> dict[str, str]:
    """``updateIdentity``'s labels."""
    return {POD_NAME_LABEL: f"{meta(sts).get('name')}-{ordinal}", POD_INDEX_LABEL: str(ordinal)}


def new_pod(sts: Mapping[str, Any], template: Mapping[str, Any] | None, ordinal: int, revision: str) -> dict[str, Any]:
    """``newStatefulSetPod`` from ``template`` at ``revision`` (``setPodRevision``)."""
    name = f"{meta(sts).get('name')}-{ordinal}"
    pod = pod_from_template(sts, template, name=name, extra_labels=identity_labels(sts, ordinal))
    pod["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL] = revision
    pod["spec"]["hostname"] = name
    service = spec_of(sts).get("serviceName")
    if service:
        pod["spec"]["subdomain"] = service
    update_storage(sts, pod, ordinal)
    return pod


def pod_revision(pod: Mapping[str, Any]) -> str:
    """``getPodRevision``."""
    return str((meta(pod).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) or "")


# --- claims' owners (the retention policy) ----------------------------------------------------------------------


def _refers_to(ref: Mapping[str, Any], obj: Mapping[str, Any], api_version: str, kind: str) -> bool:
    """``matchesRef``: same group/version, kind and name (uid aside)."""
    return ref.get("apiVersion") == api_version and ref.get("kind") == kind and ref.get("name") == meta(obj).get("name")


def has_stale_ref(claim: Mapping[str, Any], obj: Mapping[str, Any], api_version: str, kind: str) -> bool:
    """``hasStaleOwnerRef``: the claim names ``obj`` by kind and name, but another uid."""
    for ref in meta(claim).get("ownerReferences") or []:
        if _refers_to(ref, obj, api_version, kind):
            return bool(ref.get("uid") != meta(obj).get("uid"))
    return False


def wanted_claim_refs(claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]) -> list[Any] | None:
    """The claim's ownerReferences as ``updateClaimOwnerRefForSetAndPod`` leaves them; None when the claim is to
    be left alone (stale references: a previous set or pod of that name owns it)."""
    if has_stale_ref(claim, sts, "apps/v1", "StatefulSet") or has_stale_ref(claim, pod, "v1", "Pod"):
        return None
    refs = [r for r in meta(claim).get("ownerReferences") or [] if isinstance(r, dict)]
    ours = [r for r in refs if _refers_to(r, sts, "apps/v1", "StatefulSet") or _refers_to(r, pod, "v1", "Pod")]
    others = [r for r in refs if r not in ours]
    when_deleted, when_scaled = retention_policy(sts)
    if (when_deleted, when_scaled) != (RETAIN, RETAIN) and any(r.get("controller") is True for r in others):
        return others  # another controller manages it: scrub ours, add none
    scaled_down = not in_ordinal_range(sts, ordinal_of(pod))
    if when_deleted == DELETE and (when_scaled == RETAIN or not scaled_down):
        others.append(owner_reference(sts))
    if when_scaled == DELETE and scaled_down:
        others.append(owner_reference(pod))
    return others


def refs_equal(a: list[Any], b: list[Any]) -> bool:
    """Whether two ownerReference lists name the same owners the same way (order aside)."""

    def norm(refs: list[Any]) -> list[tuple[str, str, bool]]:
        return sorted((str(r.get("uid")), str(r.get("kind")), r.get("controller") is True) for r in refs)

    return norm(a) == norm(b)
