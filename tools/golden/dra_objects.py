"""Builders for the `dra` golden family: Kubernetes objects in the form kube-apiserver stores them.

Nodes and pods copy the shape of the existing families in ../shared/golden (same keys, same defaults); the
resource.k8s.io/v1 kinds carry the defaults of pkg/apis/resource/v1 (ExactCount, count 1, toleration operator
Equal, a taint's timeAdded) and the fields kube-scheduler and the resourceclaim controller write (allocation,
reservedFor, the delete-protection finalizer, generated claims owned by their pod).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from kss_sim.kube.objects import Obj

RESOURCE_API = "resource.k8s.io/v1"
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
# A fixed instant stands in for the defaulted DeviceTaint.timeAdded (kube-apiserver writes "now").
TAINT_TIME_ADDED = "2025-01-12T13:00:00Z"
BOUND_START_TIME = "2024-06-01T00:00:00Z"
# The characters of apimachinery's rand.String, which generateName suffixes are made of.
NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def uid(kind: str, name: str, namespace: str | None = None) -> str:
    return f"uid-{kind}-{namespace}-{name}" if namespace else f"uid-{kind}-{name}"


def _meta(kind: str, name: str, namespace: str | None = None, **extra: Any) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["uid"] = uid(kind, name, namespace)
    meta["resourceVersion"] = "1"
    meta.update({k: v for k, v in extra.items() if v})
    return meta


def node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    zone: str = "zone-a",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Obj] = (),
) -> Obj:
    all_labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": "region-1",
        "topology.kubernetes.io/zone": zone,
        **(labels or {}),
    }
    spec: Obj = {"taints": list(taints)} if taints else {}
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "uid": uid("node", name), "resourceVersion": "1", "labels": all_labels},
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": None, "lastTransitionTime": None}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": "",
                "osImage": "",
                "containerRuntimeVersion": "",
                "kubeletVersion": "",
                "kubeProxyVersion": "",
                "operatingSystem": "",
                "architecture": "",
            },
        },
    }


def namespace(name: str, labels: Mapping[str, str] | None = None) -> Obj:
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"uid-ns-{name}",
            "resourceVersion": "1",
            "labels": {"kubernetes.io/metadata.name": name, **(labels or {})},
        },
        "spec": {},
        "status": {"phase": "Active"},
    }


def priority_class(name: str, value: int) -> Obj:
    return {
        "kind": "PriorityClass",
        "apiVersion": "scheduling.k8s.io/v1",
        "metadata": {"name": name, "uid": uid("priorityclass", name), "resourceVersion": "1"},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str = "500m",
    memory: str = "512Mi",
    claims: Sequence[tuple[str, str]] = (),
    template_claims: Sequence[tuple[str, str]] = (),
    claim_statuses: Sequence[tuple[str, str]] = (),
    node_name: str | None = None,
    priority: int = 0,
    priority_class_name: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Obj | None = None,
    tolerations: Sequence[Obj] = (),
    labels: Mapping[str, str] | None = None,
) -> Obj:
    """A pod; `claims` are (podClaimName, resourceClaimName), `template_claims` (podClaimName, templateName).

    Every container lists every pod claim in resources.claims, as a pod using its devices does.
    """
    pod_claims: list[Obj] = [{"name": n, "resourceClaimName": c} for n, c in claims]
    pod_claims += [{"name": n, "resourceClaimTemplateName": t} for n, t in template_claims]
    resources: Obj = {"requests": {"cpu": cpu, "memory": memory}}
    if pod_claims:
        resources["claims"] = [{"name": c["name"]} for c in pod_claims]
    spec: Obj = {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.9",
                "resources": resources,
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if node_name:
        spec["nodeName"] = node_name
    spec["securityContext"] = {}
    if affinity:
        spec["affinity"] = affinity
    spec["schedulerName"] = "default-scheduler"
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    spec["priority"] = priority
    spec["enableServiceLinks"] = True
    spec["preemptionPolicy"] = "PreemptLowerPriority"
    if pod_claims:
        spec["resourceClaims"] = pod_claims
    status: Obj = {"phase": "Running", "startTime": BOUND_START_TIME} if node_name else {"phase": "Pending"}
    if claim_statuses:
        status["resourceClaimStatuses"] = [{"name": n, "resourceClaimName": c} for n, c in claim_statuses]
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": _meta("pod", name, namespace, labels=dict(labels or {})),
        "spec": spec,
        "status": status,
    }


# --- resource.k8s.io/v1 ---------------------------------------------------------------------------------------


def cel(*expressions: str) -> list[Obj]:
    return [{"cel": {"expression": e}} for e in expressions]


def opaque(driver: str, parameters: Obj) -> Obj:
    return {"opaque": {"driver": driver, "parameters": parameters}}


def device_class(name: str, *selectors: str, config: Sequence[Obj] = ()) -> Obj:
    spec: Obj = {}
    if selectors:
        spec["selectors"] = cel(*selectors)
    if config:
        spec["config"] = list(config)
    return {"kind": "DeviceClass", "apiVersion": RESOURCE_API, "metadata": _meta("deviceclass", name), "spec": spec}


def attribute(value: str | int | bool, kind: str | None = None) -> Obj:
    """A DeviceAttribute; strings become versions when kind == "version"."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {kind or "string": value}


def device(
    name: str,
    attributes: Mapping[str, str | int | bool | Obj] | None = None,
    capacity: Mapping[str, str | Obj] | None = None,
    *,
    taints: Sequence[Obj] = (),
    consumes: Sequence[tuple[str, Mapping[str, str]]] = (),
    node_name: str | None = None,
    all_nodes: bool = False,
    allow_multiple: bool = False,
) -> Obj:
    dev: Obj = {"name": name}
    if attributes:
        dev["attributes"] = {k: v if isinstance(v, dict) else attribute(v) for k, v in attributes.items()}
    if capacity:
        dev["capacity"] = {k: v if isinstance(v, dict) else {"value": v} for k, v in capacity.items()}
    if consumes:
        dev["consumesCounters"] = [
            {"counterSet": s, "counters": {k: {"value": q} for k, q in c.items()}} for s, c in consumes
        ]
    if node_name:
        dev["nodeName"] = node_name
    if all_nodes:
        dev["allNodes"] = True
    if taints:
        dev["taints"] = list(taints)
    if allow_multiple:
        dev["allowMultipleAllocations"] = True
    return dev


def device_taint(key: str, effect: str, value: str = "") -> Obj:
    taint: Obj = {"key": key}
    if value:
        taint["value"] = value
    taint["effect"] = effect
    taint["timeAdded"] = TAINT_TIME_ADDED
    return taint


def toleration(key: str = "", operator: str = "Equal", value: str = "", effect: str = "") -> Obj:
    tol: Obj = {}
    if key:
        tol["key"] = key
    tol["operator"] = operator
    if value:
        tol["value"] = value
    if effect:
        tol["effect"] = effect
    return tol


def node_selector(*terms: Obj) -> Obj:
    return {"nodeSelectorTerms": list(terms)}


def match_labels_term(key: str, *values: str, operator: str = "In") -> Obj:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def resource_slice(
    name: str,
    driver: str,
    pool: str,
    devices: Sequence[Obj] = (),
    *,
    node_name: str | None = None,
    selector: Obj | None = None,
    all_nodes: bool = False,
    per_device: bool = False,
    generation: int = 1,
    slice_count: int = 1,
    shared_counters: Sequence[tuple[str, Mapping[str, str]]] = (),
) -> Obj:
    spec: Obj = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": slice_count},
    }
    if node_name:
        spec["nodeName"] = node_name
    if selector:
        spec["nodeSelector"] = selector
    if all_nodes:
        spec["allNodes"] = True
    if devices:
        spec["devices"] = list(devices)
    if per_device:
        spec["perDeviceNodeSelection"] = True
    if shared_counters:
        spec["sharedCounters"] = [
            {"name": s, "counters": {k: {"value": q} for k, q in c.items()}} for s, c in shared_counters
        ]
    return {
        "kind": "ResourceSlice",
        "apiVersion": RESOURCE_API,
        "metadata": _meta("resourceslice", name),
        "spec": spec,
    }


def exactly(
    name: str,
    device_class_name: str,
    *selectors: str,
    count: int = 1,
    all_devices: bool = False,
    admin_access: bool | None = None,
    tolerations: Sequence[Obj] = (),
    capacity: Mapping[str, str] | None = None,
) -> Obj:
    """A DeviceRequest with `exactly`, defaulted as kube-apiserver stores it."""
    body: Obj = {"deviceClassName": device_class_name}
    if selectors:
        body["selectors"] = cel(*selectors)
    body["allocationMode"] = "All" if all_devices else "ExactCount"
    if not all_devices:
        body["count"] = count
    if admin_access is not None:
        body["adminAccess"] = admin_access
    if tolerations:
        body["tolerations"] = list(tolerations)
    if capacity:
        body["capacity"] = {"requests": dict(capacity)}
    return {"name": name, "exactly": body}


def subrequest(
    name: str,
    device_class_name: str,
    *selectors: str,
    count: int = 1,
    all_devices: bool = False,
    tolerations: Sequence[Obj] = (),
) -> Obj:
    body: Obj = {"name": name, "deviceClassName": device_class_name}
    if selectors:
        body["selectors"] = cel(*selectors)
    body["allocationMode"] = "All" if all_devices else "ExactCount"
    if not all_devices:
        body["count"] = count
    if tolerations:
        body["tolerations"] = list(tolerations)
    return body


def first_available(name: str, *subrequests: Obj) -> Obj:
    return {"name": name, "firstAvailable": list(subrequests)}


def claim_spec(requests: Sequence[Obj], *, constraints: Sequence[Obj] = (), config: Sequence[Obj] = ()) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    if config:
        devices["config"] = list(config)
    return {"devices": devices}


def match_attribute(attribute_name: str, *requests: str) -> Obj:
    constraint: Obj = {}
    if requests:
        constraint["requests"] = list(requests)
    constraint["matchAttribute"] = attribute_name
    return constraint


def claim_config(driver: str, parameters: Obj, *requests: str) -> Obj:
    config: Obj = {}
    if requests:
        config["requests"] = list(requests)
    config.update(opaque(driver, parameters))
    return config


def resource_claim(name: str, spec: Obj, *, namespace: str = "default", **meta: Any) -> Obj:
    return {
        "kind": "ResourceClaim",
        "apiVersion": RESOURCE_API,
        "metadata": _meta("resourceclaim", name, namespace, **meta),
        "spec": spec,
        "status": {},
    }


def resource_claim_template(name: str, spec: Obj, *, namespace: str = "default") -> Obj:
    return {
        "kind": "ResourceClaimTemplate",
        "apiVersion": RESOURCE_API,
        "metadata": _meta("resourceclaimtemplate", name, namespace),
        "spec": {"spec": spec},
    }


def generated_claim(rng: random.Random, owner: Obj, pod_claim_name: str, template: Obj) -> Obj:
    """The claim the resourceclaim controller creates for `owner` from `template`."""
    pod_name = owner["metadata"]["name"]
    ns = owner["metadata"]["namespace"]
    prefix = f"{pod_name}-{pod_claim_name}-"
    name = prefix + "".join(rng.choice(NAME_SUFFIX_ALPHABET) for _ in range(5))
    claim = resource_claim(name, template["spec"]["spec"], namespace=ns)
    meta = claim["metadata"]
    meta["generateName"] = prefix
    meta["annotations"] = {POD_CLAIM_NAME_ANNOTATION: pod_claim_name}
    meta["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod_name,
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return claim


def allocate(
    claim: Obj,
    results: Sequence[tuple[str, str, str, str]],
    *,
    node_name: str | None,
    reserved_for: Sequence[Obj] = (),
    config: Sequence[Obj] = (),
) -> Obj:
    """Mark `claim` allocated as DynamicResources' PreBind leaves it.

    `results` are (request, driver, pool, device); `node_name` None means devices reachable from every node.
    """
    allocation: Obj = {
        "devices": {"results": [{"request": r, "driver": d, "pool": p, "device": n} for r, d, p, n in results]}
    }
    if config:
        allocation["devices"]["config"] = list(config)
    if node_name:
        allocation["nodeSelector"] = node_selector(
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        )
    claim["status"] = {"allocation": allocation}
    if reserved_for:
        claim["status"]["reservedFor"] = [
            {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]} for p in reserved_for
        ]
    claim["metadata"]["finalizers"] = [CLAIM_FINALIZER]
    return claim
