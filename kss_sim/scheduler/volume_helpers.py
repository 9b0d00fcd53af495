"""Storage helpers shared by the volume plugins (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits).

Ports of ``k8s.io/component-helpers/storage/{volume,ephemeral}``, the node-selector and topology-selector
matching the volume code uses, lister NotFound messages, and the volume binder's assume cache.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import QuantityError, parse_quantity

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


# --- lister errors ---------------------------------------------------------------------------------
def pvc_not_found(name: str) -> str:
    """``apierrors.NewNotFound(v1.Resource("persistentvolumeclaim"), name)``."""
    return f'persistentvolumeclaim "{name}" not found'


def pv_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


def storage_class_not_found(name: str) -> str:
    return f'storageclass.storage.k8s.io "{name}" not found'


# --- object accessors ------------------------------------------------------------------------------
def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    m: dict[str, Any] = obj.get("metadata") or {}
    return m


def spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = obj.get("spec") or {}
    return s


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    a: dict[str, str] = meta(obj).get("annotations") or {}
    return a


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "default")


def resource_version(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def pvc_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def claim_class(pvc: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation wins over ``spec.storageClassName``."""
    ann = annotations_of(pvc)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return ann[BETA_STORAGE_CLASS_ANNOTATION]
    cls = spec(pvc).get("storageClassName")
    return str(cls) if cls is not None else ""


def volume_class(pv: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClass``."""
    ann = annotations_of(pv)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return ann[BETA_STORAGE_CLASS_ANNOTATION]
    return str(spec(pv).get("storageClassName") or "")


def claim_request(pvc: Mapping[str, Any]) -> Fraction:
    """The claim's ``resources.requests.storage`` (zero when absent)."""
    raw = ((spec(pvc).get("resources") or {}).get("requests") or {}).get("storage")
    return _quantity(raw)


def volume_capacity(pv: Mapping[str, Any]) -> Fraction:
    raw = (spec(pv).get("capacity") or {}).get("storage")
    return _quantity(raw)


def _quantity(raw: Any) -> Fraction:
    if raw is None:
        return Fraction(0)
    try:
        return parse_quantity(raw)
    except QuantityError:
        return Fraction(0)


def access_modes(obj: Mapping[str, Any]) -> list[str]:
    modes: list[str] = spec(obj).get("accessModes") or []
    return modes


def ephemeral_claim_name(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
    """``ephemeral.VolumeClaimName``: ``<pod name>-<volume name>``."""
    return f"{name_of(pod)}-{volume.get('name', '')}"


def ephemeral_volume_is_for_pod(pod: Mapping[str, Any], pvc: Mapping[str, Any]) -> str | None:
    """``ephemeral.VolumeIsForPod``: the error text when the pod does not control the claim, else None."""
    pod_uid = meta(pod).get("uid")
    controlled = any(
        ref.get("controller") and pod_uid and ref.get("uid") == pod_uid
        for ref in meta(pvc).get("ownerReferences") or []
    )
    if namespace_of(pvc) != namespace_of(pod) or not controlled:
        return (
            f"PVC {namespace_of(pvc)}/{name_of(pvc)} was not created for pod "
            f"{namespace_of(pod)}/{name_of(pod)} (pod is not owner)"
        )
    return None


def pod_claims(pod: Mapping[str, Any]) -> Iterable[tuple[Mapping[str, Any], str, bool]]:
    """(volume, claim name, is ephemeral) for each PVC-backed volume of the pod, in spec order."""
    for vol in spec(pod).get("volumes") or []:
        pvc_source = vol.get("persistentVolumeClaim")
        if pvc_source is not None:
            yield vol, str(pvc_source.get("claimName") or ""), False
        elif vol.get("ephemeral") is not None:
            yield vol, ephemeral_claim_name(pod, vol), True


# --- selectors -------------------------------------------------------------------------------------
_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT64_RE = re.compile(r"^[+-]?[0-9]+$")


class SelectorError(ValueError):
    """A requirement ``labels.NewRequirement`` would reject."""


def _valid_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME_RE.match(name))


def _valid_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME_RE.match(value)))


def _parse_int64(text: str) -> int | None:
    if not _INT64_RE.match(text):
        return None
    v = int(text)
    return v if -(2**63) <= v < 2**63 else None


Requirement = tuple[str, str, list[str]]


def new_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement``: validates key, operator arity and values."""
    if not _valid_label_key(key):
        raise SelectorError(f"invalid label key {key!r}")
    if operator in ("In", "NotIn"):
        if not values:
            raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            raise SelectorError("values set must be empty for exists and does not exist")
    elif operator in ("Gt", "Lt"):
        if len(values) != 1 or _parse_int64(values[0]) is None:
            raise SelectorError("for 'Gt', 'Lt' operators, exactly one integer value is required")
    elif operator == "Equals":
        if len(values) != 1:
            raise SelectorError("exact-match compatibility requires one single value")
        operator = "In"
    else:
        raise SelectorError(f"operator {operator!r} is not recognized")
    if operator not in ("Gt", "Lt"):
        for v in values:
            if not _valid_label_value(v):
                raise SelectorError(f"invalid label value: {v!r}")
    return (key, operator, list(values))


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    """``labels.Requirement.Matches``."""
    key, op, values = req
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if key not in labels:
        return False
    have = _parse_int64(labels[key])
    want = _parse_int64(values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool | None:
    """One NodeSelectorTerm against labels only; None when the term does not parse.

    The node seen by ``volume.CheckNodeAffinity`` carries labels and no name, so ``matchFields``
    are parsed but never constrain (nodeaffinity skips field matching for nodes without fields).
    """
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    reqs: list[Requirement] = []
    try:
        for e in exprs:
            op = e.get("operator")
            if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                raise SelectorError(f"unsupported operator {op!r}")
            reqs.append(new_requirement(str(e.get("key") or ""), str(op), list(e.get("values") or [])))
        for f in fields:
            if f.get("operator") not in ("In", "NotIn") or len(f.get("values") or []) != 1:
                raise SelectorError("invalid field requirement")
    except SelectorError:
        return None
    return all(requirement_matches(r, labels) for r in reqs)


def node_selector_matches_labels(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``corev1.MatchNodeSelectorTerms`` for a node known only by its labels; empty terms are ignored."""
    for term in (selector or {}).get("nodeSelectorTerms") or []:
        if not (term.get("matchExpressions") or term.get("matchFields")):
            continue
        if _term_matches(term, labels):
            return True
    return False


def check_node_affinity(pv: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``volume.CheckNodeAffinity``: True when the PV's required node affinity admits the labels."""
    affinity = spec(pv).get("nodeAffinity")
    if not affinity:
        return True
    required = affinity.get("required")
    if required is None:
        return True
    return node_selector_matches_labels(required, labels)


def match_topology_selector_terms(terms: list[Mapping[str, Any]] | None, labels: Mapping[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms``: no terms match everything; an empty term matches nothing."""
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") or []
        if not exprs:
            continue
        try:
            reqs = []
            for e in exprs:
                values = list(e.get("values") or [])
                if not values:
                    raise SelectorError("values must be non-empty")
                reqs.append(new_requirement(str(e.get("key") or ""), "In", values))
        except SelectorError:
            continue
        if all(requirement_matches(r, labels) for r in reqs):
            return True
    return False


def label_selector_requirements(selector: Mapping[str, Any]) -> list[Requirement]:
    """``metav1.LabelSelectorAsSelector`` requirements (empty list = everything); SelectorError when invalid."""
    reqs: list[Requirement] = []
    for k, v in sorted((selector.get("matchLabels") or {}).items()):
        reqs.append(new_requirement(str(k), "Equals", [str(v)]))
    for e in selector.get("matchExpressions") or []:
        op = e.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise SelectorError(f'"{op}" is not a valid label selector operator')
        reqs.append(new_requirement(str(e.get("key") or ""), str(op), list(e.get("values") or [])))
    return reqs


# --- binding helpers -------------------------------------------------------------------------------
def is_volume_bound_to_claim(pv: Mapping[str, Any], pvc: Mapping[str, Any]) -> bool:
    """``IsVolumeBoundToClaim``: claimRef names the claim (and its UID when the ref has one)."""
    ref = spec(pv).get("claimRef")
    if ref is None:
        return False
    if name_of(pvc) != (ref.get("name") or "") or namespace_of(pvc) != (ref.get("namespace") or "default"):
        return False
    ref_uid = ref.get("uid") or ""
    return not (ref_uid and (meta(pvc).get("uid") or "") != ref_uid)


def bind_volume_to_claim(pv: Obj, pvc: Mapping[str, Any]) -> tuple[Obj, bool]:
    """``GetBindVolumeToClaim``: a copy of the PV bound to the claim, and whether anything changed."""
    set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    clone = copy.deepcopy(pv)
    ref = spec(pv).get("claimRef")
    pvc_meta = meta(pvc)
    dirty = False
    if (
        ref is None
        or ref.get("name") != pvc_meta.get("name")
        or (ref.get("namespace") or "default") != namespace_of(pvc)
        or (ref.get("uid") or "") != (pvc_meta.get("uid") or "")
    ):
        new_ref: dict[str, Any] = {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace_of(pvc),
            "name": pvc_meta.get("name"),
            "apiVersion": "v1",
        }
        if pvc_meta.get("uid"):
            new_ref["uid"] = pvc_meta["uid"]
        if pvc_meta.get("resourceVersion"):
            new_ref["resourceVersion"] = pvc_meta["resourceVersion"]
        clone.setdefault("spec", {})["claimRef"] = new_ref
        dirty = True
    if set_bound_by_controller:
        ann = clone.setdefault("metadata", {}).setdefault("annotations", {})
        if ANN_BOUND_BY_CONTROLLER not in ann:
            ann[ANN_BOUND_BY_CONTROLLER] = "yes"
            dirty = True
    return clone, dirty


def volume_mode(obj: Mapping[str, Any]) -> str:
    return str(spec(obj).get("volumeMode") or "Filesystem")


def check_access_modes(pvc: Mapping[str, Any], pv: Mapping[str, Any]) -> bool:
    """``CheckAccessModes``: the PV offers every mode the claim asks for."""
    have = set(access_modes(pv))
    return all(m in have for m in access_modes(pvc))


class AssumeCache:
    """``passiveAssumeCache``: informer objects, overlaid with in-memory assumed versions.

    An assumed object shadows the informer's until the informer holds a different resourceVersion
    (or loses the object), exactly as kube-scheduler's volume binder cache behaves.
    """

    def __init__(self, store: Callable[[], Mapping[str, Obj]], key_of: Callable[[Mapping[str, Any]], str]) -> None:
        self._store = store
        self._key_of = key_of
        self.assumed: dict[str, Obj] = {}

    def get_api_obj(self, key: str) -> Obj | None:
        return self._store().get(key)

    def get(self, key: str) -> Obj | None:
        obj = self.get_api_obj(key)
        if obj is None:
            return None
        assumed = self.assumed.get(key)
        if assumed is None or resource_version(assumed) != resource_version(obj):
            return obj
        return assumed

    def list(self, predicate: Callable[[Obj], bool]) -> list[Obj]:
        """Informer objects satisfying ``predicate`` (on the informer version), assumed versions swapped in."""
        out: list[Obj] = []
        for key, obj in self._store().items():
            if not predicate(obj):
                continue
            assumed = self.assumed.get(key)
            out.append(assumed if assumed is not None and resource_version(assumed) == resource_version(obj) else obj)
        return out

    def assume(self, obj: Obj) -> str | None:
        """Record ``obj`` as the latest version; the error text when the informer disagrees."""
        key = self._key_of(obj)
        stored = self.get_api_obj(key)
        if stored is None:
            return f"{key} not found"
        if resource_version(stored) != resource_version(obj):
            return f"{key!r} is out of sync (stored: {resource_version(stored)}, assume: {resource_version(obj)})"
        self.assumed[key] = obj
        return None

    def restore(self, obj: Mapping[str, Any]) -> None:
        key = self._key_of(obj)
        assumed = self.assumed.get(key)
        if assumed is not None and resource_version(assumed) == resource_version(obj):
            del self.assumed[key]
