"""Defaulting and admission as kube-apiserver applies them on create (SetDefaults_* plus the admission plugins
Priority, DefaultTolerationSeconds and DefaultStorageClass).

Functions here work in place on the store's private copy of an incoming object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from kss_sim.cluster.errors import Forbidden
from kss_sim.cluster.kinds.registry import POD_GROUP_V1ALPHA2, WORKLOAD_V1ALPHA2
from kss_sim.kube.quantity import QuantityError, parse_quantity

DEFAULT_SCHEDULER = "default-scheduler"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"

SYSTEM_PRIORITY_CLASSES: tuple[dict[str, Any], ...] = (
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-cluster-critical"},
        "value": 2000000000,
        "description": "Used for system critical pods that must run in the cluster, but can be moved to another node "
        "if necessary.",
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical"},
        "value": 2000001000,
        "description": "Used for system critical pods that must not be moved from their current node.",
    },
)
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _containers(spec: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, dict):
                yield c


def _image_pull_policy(image: str) -> str:
    # SetDefaults_Container: ":latest" or no tag (and no digest) pulls always.
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_probe(probe: Any) -> None:
    """SetDefaults_Probe and SetDefaults_HTTPGetAction."""
    if not isinstance(probe, dict):
        return
    for field, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(field):
            probe[field] = value
    http = probe.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")


def _default_container(c: dict[str, Any]) -> None:
    """SetDefaults_Container (and its ports', probes' and env's defaults): what any PodSpec gets."""
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if isinstance(c.get("image"), str) and c["image"]:
        c.setdefault("imagePullPolicy", _image_pull_policy(c["image"]))
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(probe))
    for env in c.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")


def _default_pod_container(c: dict[str, Any], host_network: bool) -> None:
    """SetDefaults_Pod's part for each container: host ports on the host network, requests from limits."""
    for port in c.get("ports") or []:
        if isinstance(port, dict) and host_network and not port.get("hostPort"):
            port["hostPort"] = port.get("containerPort")
    resources = c.get("resources")
    if isinstance(resources, dict) and isinstance(resources.get("limits"), dict) and resources["limits"]:
        # SetDefaults_Pod: a resource with only a limit gets the limit as its request.
        requests = _dict(resources, "requests")
        for name, quantity in resources["limits"].items():
            requests.setdefault(name, quantity)


def default_pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec with its containers' and volumes' defaults: what a pod template gets too (the rest of
    a pod's defaults, SetDefaults_Pod, materialise only in pods)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
    for c in _containers(spec):
        _default_container(c)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            for source in ("secret", "configMap", "projected", "downwardAPI"):
                if isinstance(volume.get(source), dict):
                    volume[source].setdefault("defaultMode", 420)


def default_pod(pod: dict[str, Any]) -> None:
    """SetDefaults_Pod / PodSpec / Container: what decoding fills in on every create and update."""
    spec = _dict(pod, "spec")
    host_network = bool(spec.get("hostNetwork"))
    default_pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)
    for c in _containers(spec):
        _default_pod_container(c, host_network)
    pod_resources = spec.get("resources")
    if isinstance(pod_resources, dict) and isinstance(pod_resources.get("limits"), dict):
        requests = _dict(pod_resources, "requests")
        for name, quantity in pod_resources["limits"].items():
            requests.setdefault(name, quantity)
    ref = spec.get("workloadRef")
    if isinstance(ref, dict):
        # WorkloadReference's name and podGroup have no omitempty: Go always renders them.
        ref.setdefault("name", "")
        ref.setdefault("podGroup", "")


def prepare_pod_create(pod: dict[str, Any], priority_classes: list[dict[str, Any]]) -> None:
    """Create-only steps: DefaultTolerationSeconds, matchLabelKeys merging, Priority admission, fresh status."""
    spec = _dict(pod, "spec")
    _default_tolerations(spec)
    merge_match_label_keys(pod)
    admit_pod_priority(pod, priority_classes)
    # PrepareForCreate: whatever status the client sent is replaced.
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(pod)}


def _tolerates(tolerations: list[Any], key: str) -> bool:
    for t in tolerations:
        if not isinstance(t, dict):
            continue
        if t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", ""):
            return True
    return False


def _default_tolerations(spec: dict[str, Any]) -> None:
    """DefaultTolerationSeconds admission: tolerate not-ready/unreachable NoExecute taints for 300s."""
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    added = list(tolerations)
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if not _tolerates(tolerations, key):
            added.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    spec["tolerations"] = added


def _merge_keys_into(term: dict[str, Any], labels: dict[str, Any], *, mismatch: bool) -> None:
    keys = term.get("mismatchLabelKeys" if mismatch else "matchLabelKeys") or []
    selector = term.get("labelSelector")
    if not keys or not isinstance(selector, dict):
        return
    exprs = list(selector.get("matchExpressions") or [])
    for key in keys:
        if key in labels:
            exprs.append({"key": key, "operator": "NotIn" if mismatch else "In", "values": [labels[key]]})
    selector["matchExpressions"] = exprs


def merge_match_label_keys(pod: dict[str, Any]) -> None:
    """What kube-apiserver does on pod create: fold pod-affinity ``matchLabelKeys`` (``In``) and
    ``mismatchLabelKeys`` (``NotIn``), and topology-spread ``matchLabelKeys``, into the label selectors
    using the pod's own label values."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind) or {}
        terms = list(section.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [
            w.get("podAffinityTerm") for w in section.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ]
        for term in terms:
            if isinstance(term, dict):
                _merge_keys_into(term, labels, mismatch=False)
                _merge_keys_into(term, labels, mismatch=True)
    for constraint in spec.get("topologySpreadConstraints") or []:
        if isinstance(constraint, dict):
            _merge_keys_into(constraint, labels, mismatch=False)


def _q(value: Any) -> Fraction:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError):
        return Fraction(0)


def qos_class(pod: dict[str, Any]) -> str:
    """``qos.GetPodQOS``: BestEffort, Burstable or Guaranteed from cpu/memory requests and limits."""
    supported = ("cpu", "memory")
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    spec = pod.get("spec") or {}
    for c in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        resources = (c or {}).get("resources") or {}
        # A Fraction's arithmetic is slow Python: each quantity is parsed once (cached) and added only to another.
        for name, quantity in (resources.get("requests") or {}).items():
            if name in supported and (amount := _q(quantity)) != 0:
                earlier = requests.get(name)
                requests[name] = amount if earlier is None else earlier + amount
        found: set[str] = set()
        for name, quantity in (resources.get("limits") or {}).items():
            if name in supported and (amount := _q(quantity)) != 0:
                found.add(name)
                earlier = limits.get(name)
                limits[name] = amount if earlier is None else earlier + amount
        if not found.issuperset(supported):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, quantity in requests.items():
            if limits.get(name) != quantity:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _resolved_priority_class(
    resource: str, name: str, class_name: str, priority_classes: list[dict[str, Any]], *, group: str = ""
) -> tuple[str, int, str]:
    """The Priority plugin's resolution of ``class_name`` (empty: the global default with the lowest value, or
    none at all: priority 0) into (class name, priority, preemptionPolicy); Forbidden for a class not found."""
    if not class_name:
        defaults = [pc for pc in priority_classes if pc.get("globalDefault")]
        if not defaults:
            return "", 0, PREEMPT_LOWER_PRIORITY
        chosen = min(defaults, key=lambda pc: int(pc.get("value", 0)))
        return (
            chosen["metadata"]["name"],
            int(chosen.get("value", 0)),
            chosen.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY,
        )
    found = next((pc for pc in priority_classes if pc["metadata"]["name"] == class_name), None)
    if found is None:
        raise Forbidden(resource, name, f"no PriorityClass with name {class_name} was found", group=group)
    return class_name, int(found.get("value", 0)), found.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY


def _admit_priority(
    spec: dict[str, Any], resource: str, name: str, spec_words: str, classes: list[dict[str, Any]], group: str = ""
) -> str:
    """``priorityClassName`` (or the global default's name) resolved into ``spec.priority``; a missing class or a
    contradicting explicit value is Forbidden. Returns the class's preemptionPolicy."""
    class_name, priority, preemption = _resolved_priority_class(
        resource, name, spec.get("priorityClassName") or "", classes, group=group
    )
    if class_name:
        spec["priorityClassName"] = class_name
    if spec.get("priority") is not None and spec["priority"] != priority:
        raise Forbidden(
            resource,
            name,
            f"the integer value of priority ({spec['priority']}) must not be provided in {spec_words}; priority "
            f"admission controller computed {priority} from the given PriorityClass name",
            group=group,
        )
    spec["priority"] = priority
    return preemption


def admit_pod_priority(pod: dict[str, Any], priority_classes: list[dict[str, Any]]) -> None:
    """Priority admission: resolve ``priorityClassName`` (or the global default) into ``priority`` and
    ``preemptionPolicy``; a missing class or a contradicting explicit value is Forbidden."""
    spec = _dict(pod, "spec")
    name = (pod.get("metadata") or {}).get("name") or ""
    preemption = _admit_priority(spec, "pods", name, "pod spec", priority_classes)
    if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != preemption:
        raise Forbidden(
            "pods",
            name,
            f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in pod spec; "
            f"priority admission controller computed {preemption} from the given PriorityClass name",
        )
    spec["preemptionPolicy"] = preemption


def admit_pod_group_priority(group: dict[str, Any], priority_classes: list[dict[str, Any]]) -> None:
    """v1.36's Priority admission of a new PodGroup (WorkloadAwarePreemption on): as for a pod, without a
    preemptionPolicy (a PodGroup has none in v1.36)."""
    spec = _dict(group, "spec")
    name = (group.get("metadata") or {}).get("name") or ""
    _admit_priority(spec, "podgroups", name, "pod group spec", priority_classes, group="scheduling.k8s.io")


def default_node(node: dict[str, Any]) -> None:
    """SetDefaults_NodeStatus: ``allocatable`` defaults to ``capacity``."""
    status = node.get("status")
    if isinstance(status, dict) and isinstance(status.get("capacity"), dict) and status.get("allocatable") is None:
        status["allocatable"] = dict(status["capacity"])


def default_namespace(ns: dict[str, Any]) -> None:
    """Namespace defaults: the ``kubernetes`` finalizer, phase Active and the metadata.name label."""
    spec = _dict(ns, "spec")
    spec.setdefault("finalizers", ["kubernetes"])
    _dict(ns, "status").setdefault("phase", "Active")
    labels = _dict(_dict(ns, "metadata"), "labels")
    labels["kubernetes.io/metadata.name"] = ns["metadata"].get("name") or ""  # null: no name (Go's "")


def default_persistent_volume(pv: dict[str, Any]) -> None:
    """SetDefaults_PersistentVolume: reclaim Retain, volumeMode Filesystem, phase Pending."""
    spec = _dict(pv, "spec")
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    _dict(pv, "status").setdefault("phase", "Pending")


def default_persistent_volume_claim(pvc: dict[str, Any]) -> None:
    """SetDefaults_PersistentVolumeClaim: volumeMode Filesystem, phase Pending."""
    _dict(pvc, "spec").setdefault("volumeMode", "Filesystem")
    _dict(pvc, "status").setdefault("phase", "Pending")


def prepare_pvc_create(pvc: dict[str, Any], storage_classes: list[dict[str, Any]]) -> None:
    """DefaultStorageClass admission: a claim without ``storageClassName`` gets the default class."""
    spec = _dict(pvc, "spec")
    if "storageClassName" not in spec or spec["storageClassName"] is None:
        defaults = [
            sc
            for sc in storage_classes
            if ((sc.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
        ]
        if defaults:
            # Several defaults: the newest wins, as in the admission plugin.
            newest = max(defaults, key=lambda sc: (sc["metadata"].get("creationTimestamp", ""), sc["metadata"]["name"]))
            spec["storageClassName"] = newest["metadata"]["name"]


def default_storage_class(sc: dict[str, Any]) -> None:
    """SetDefaults_StorageClass: reclaimPolicy Delete, volumeBindingMode Immediate."""
    sc.setdefault("reclaimPolicy", "Delete")
    sc.setdefault("volumeBindingMode", "Immediate")


def default_priority_class(pc: dict[str, Any]) -> None:
    """SetDefaults_PriorityClass: preemptionPolicy PreemptLowerPriority."""
    pc.setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)


def prepare_pdb_create(pdb: dict[str, Any]) -> None:
    """PDB PrepareForCreate: the status starts empty (the disruption controller fills it)."""
    pdb["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


def default_pod_group(pg: dict[str, Any]) -> None:
    """A custom resource's decoding: ``null`` values of fields the schema does not make nullable are pruned."""
    for part in ("spec", "status"):
        if part in pg and pg[part] is None:
            del pg[part]
        section = pg.get(part)
        if isinstance(section, dict):
            for key in [k for k, v in section.items() if v is None]:
                del section[key]


def default_workload(workload: dict[str, Any]) -> None:
    """What the typed decoder renders for a v1alpha1 Workload: fields without omitempty are always there."""
    spec = _dict(workload, "spec")
    ref = spec.get("controllerRef")
    if isinstance(ref, dict):
        ref.setdefault("kind", "")
        ref.setdefault("name", "")
    for group in spec.get("podGroups") or []:
        if isinstance(group, dict):
            group.setdefault("name", "")
            policy = _dict(group, "policy")
            gang = policy.get("gang")
            if isinstance(gang, dict):
                gang.setdefault("minCount", 0)


def _default_group_fields(group: dict[str, Any]) -> None:
    """What a v1alpha2 pod group template and PodGroup spec always render: the policy struct, a gang's count."""
    policy = _dict(group, "schedulingPolicy")
    gang = policy.get("gang")
    if isinstance(gang, dict):
        gang.setdefault("minCount", 0)


def default_workload_v1alpha2(workload: dict[str, Any]) -> None:
    """What the typed decoder renders for a v1alpha2 Workload (v1.36): a template's name, its policy and its
    schedulingConstraints (no omitempty: ``null`` when absent), a controllerRef's kind and name."""
    spec = _dict(workload, "spec")
    spec.setdefault("podGroupTemplates", None)
    ref = spec.get("controllerRef")
    if isinstance(ref, dict):
        ref.setdefault("kind", "")
        ref.setdefault("name", "")
    for template in spec.get("podGroupTemplates") or []:
        if isinstance(template, dict):
            template.setdefault("name", "")
            _default_group_fields(template)
            template.setdefault("schedulingConstraints", None)


def default_pod_group_v1alpha2(group: dict[str, Any]) -> None:
    """SetObjectDefaults_PodGroup (v1.36): ``disruptionMode`` Pod; the typed decoder renders
    ``podGroupTemplateRef`` (``null`` when absent) and the policy struct."""
    spec = _dict(group, "spec")
    spec.setdefault("podGroupTemplateRef", None)
    ref = (spec.get("podGroupTemplateRef") or {}).get("workload")
    if isinstance(ref, dict):
        ref.setdefault("workloadName", "")
        ref.setdefault("podGroupTemplateName", "")
    _default_group_fields(spec)
    if spec.get("disruptionMode") is None:
        spec["disruptionMode"] = "Pod"


# Defaulting that decoding applies to every create and update body.
DEFAULTERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "Pod": default_pod,
    "Node": default_node,
    "Namespace": default_namespace,
    "PersistentVolume": default_persistent_volume,
    "PersistentVolumeClaim": default_persistent_volume_claim,
    "StorageClass": default_storage_class,
    "PriorityClass": default_priority_class,
    "PodGroup": default_pod_group,
    "Workload": default_workload,
    WORKLOAD_V1ALPHA2: default_workload_v1alpha2,
    POD_GROUP_V1ALPHA2: default_pod_group_v1alpha2,
}
