"""What a DaemonSet's pod looks like and where it may run: ``pkg/controller/daemon/util`` and
``NodeShouldRunDaemonPod``, with the update strategy's numbers (``SurgeCount``, ``AllowsSurge``), as pure functions
over plain objects (the controller is ``daemonset.py``, its rolling update ``daemon_update.py``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kss_sim.controllers.owned import meta
from kss_sim.controllers.rollout import CONTROLLER_REVISION_HASH_LABEL, int_field, scaled_value
from kss_sim.kube.labels import RequiredNodeAffinity
from kss_sim.kube.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, Toleration, find_matching_untolerated_taint

TEMPLATE_GENERATION_LABEL = "pod-template-generation"  # extensions.DaemonSetTemplateGenerationKey
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"  # apps.DeprecatedTemplateGeneration
NODE_NAME_FIELD = "metadata.name"  # metav1.ObjectNameField
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"

# AddOrUpdateDaemonPodTolerations, in its order.
DAEMON_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": EFFECT_NO_EXECUTE},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": EFFECT_NO_EXECUTE},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": EFFECT_NO_SCHEDULE},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": EFFECT_NO_SCHEDULE},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": EFFECT_NO_SCHEDULE},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": EFFECT_NO_SCHEDULE},
)
NETWORK_UNAVAILABLE_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": EFFECT_NO_SCHEDULE,
}


# --- the pod every node would get ------------------------------------------------------------------------------


def _same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``Toleration.MatchToleration``: same key, operator, value and effect."""
    return all((a.get(f) or "") == (b.get(f) or "") for f in ("key", "operator", "value", "effect"))


def add_or_update_toleration(spec: dict[str, Any], toleration: Mapping[str, Any]) -> None:
    """``v1helper.AddOrUpdateTolerationInPodSpec``: a matching toleration is replaced, else this one appended."""
    tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    for i, existing in enumerate(tolerations):
        if _same_toleration(existing, toleration):
            tolerations[i] = dict(toleration)
            break
    else:
        tolerations.append(dict(toleration))
    spec["tolerations"] = tolerations


def add_daemon_tolerations(spec: dict[str, Any]) -> None:
    """``util.AddOrUpdateDaemonPodTolerations``, in place."""
    for toleration in DAEMON_TOLERATIONS:
        add_or_update_toleration(spec, toleration)
    if spec.get("hostNetwork"):
        add_or_update_toleration(spec, NETWORK_UNAVAILABLE_TOLERATION)


def replace_node_name_affinity(spec: dict[str, Any], node_name: str) -> None:
    """``util.ReplaceDaemonSetPodNodeNameNodeAffinity``, in place: the required node-affinity terms become the one
    term ``matchFields metadata.name In [node]`` (the controller already checked the template's terms)."""
    term = {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node_name]}]}
    affinity = spec.get("affinity")
    if not isinstance(affinity, dict):
        affinity = spec["affinity"] = {}
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, dict):
        node_affinity = affinity["nodeAffinity"] = {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, dict):
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    else:
        required["nodeSelectorTerms"] = [term]


def target_node_name(pod: Mapping[str, Any]) -> str | None:
    """``util.GetTargetNodeName``: ``spec.nodeName``, else the single value of the ``metadata.name In`` field
    requirement of the pod's required node affinity; None when there is none."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in (term or {}).get("matchFields") or []:
            if expr.get("key") == NODE_NAME_FIELD and expr.get("operator") == "In":
                values = expr.get("values") or []
                return str(values[0]) if len(values) == 1 else None
    return None


@dataclass(frozen=True, slots=True)
class DaemonPlacement:
    """What ``nodeShouldRunDaemonPod`` needs of a DaemonSet's template, parsed once per reconcile."""

    node_name: str
    affinity: RequiredNodeAffinity
    tolerations: tuple[Toleration, ...]

    @classmethod
    def of(cls, ds: Mapping[str, Any]) -> DaemonPlacement:
        """The template's placement, daemon tolerations added (``NewPod``)."""
        spec = copy.deepcopy(((ds.get("spec") or {}).get("template") or {}).get("spec") or {})
        add_daemon_tolerations(spec)
        return cls(
            node_name=str(spec.get("nodeName") or ""),
            affinity=RequiredNodeAffinity(spec),
            tolerations=tuple(Toleration.from_dict(t) for t in spec.get("tolerations") or []),
        )

    def should_run(self, node: Mapping[str, Any]) -> tuple[bool, bool]:
        """``NodeShouldRunDaemonPod``: (should run a pod there, may keep one already there)."""
        name = str(meta(node).get("name") or "")
        if self.node_name and self.node_name != name:
            return False, False
        if not self.affinity.matches_node(node):
            return False, False
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
        if find_matching_untolerated_taint(taints, self.tolerations, (EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE)) is None:
            return True, True
        # A pod already there stays unless a NoExecute taint is not tolerated.
        return False, find_matching_untolerated_taint(taints, self.tolerations, (EFFECT_NO_EXECUTE,)) is None


def template_generation(ds: Mapping[str, Any]) -> int | None:
    """``util.GetTemplateGeneration``: the ``deprecated.daemonset.template.generation`` annotation the API server
    keeps; when it is missing (an API server that does not set it) the object's generation stands in."""
    annotation = (meta(ds).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if annotation is not None:
        try:
            return int(annotation)
        except ValueError:
            return None
    generation = meta(ds).get("generation")
    return generation if isinstance(generation, int) else None


def is_pod_updated(pod: Mapping[str, Any], hash_: str, generation: int | None) -> bool:
    """``util.IsPodUpdated``: the pod carries the current hash (or, for old pods, the template generation).

    Upstream compares the generation label with ``fmt.Sprint`` of a pointer, which never matches; the hash decides,
    as it does there."""
    labels = meta(pod).get("labels") or {}
    return bool(hash_) and labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_


def daemon_pod_template(ds: Mapping[str, Any], hash_: str, generation: int | None) -> dict[str, Any]:
    """``util.CreatePodTemplate``: the template with the daemon tolerations and the generation and hash labels."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    spec = template.setdefault("spec", {})
    add_daemon_tolerations(spec)
    template_meta = template.setdefault("metadata", {})
    labels = template_meta.setdefault("labels", {})
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if hash_:
        labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    return template


def update_strategy(ds: Mapping[str, Any]) -> str:
    return str(((ds.get("spec") or {}).get("updateStrategy") or {}).get("type") or ROLLING_UPDATE)


def min_ready_seconds(ds: Mapping[str, Any]) -> int:
    return int_field(ds.get("spec"), "minReadySeconds", 0)


def surge_count(ds: Mapping[str, Any], desired: int) -> int:
    """``util.SurgeCount`` (DaemonSetUpdateSurge is GA): ``maxSurge`` of ``desired``, rounded up; 0 unless
    RollingUpdate."""
    if update_strategy(ds) != ROLLING_UPDATE:
        return 0
    rolling = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    return scaled_value(rolling.get("maxSurge"), desired, round_up=True, default=0)


def allows_surge(ds: Mapping[str, Any]) -> bool:
    """``util.AllowsSurge``."""
    try:
        return surge_count(ds, 1) > 0
    except ValueError:
        return False
