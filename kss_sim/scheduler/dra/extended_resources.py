"""Extended resources backed by DRA (KEP-5004, gate DRAExtendedResource; beta and on by default from v1.36).

A DeviceClass serves an extended resource: the name in its ``spec.extendedResourceName``, and always its implicit
``deviceclass.resource.kubernetes.io/<class>``. A pod requesting such a resource on a node whose allocatable lacks it
(no device plugin there) gets it from DRA: DynamicResources makes a claim of its own for the pod (in memory during
the cycle, created at PreBind) with one request per container and resource, and NodeResourcesFit leaves the resource
to it. What is here is pure: which class serves a name, and the claim's requests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import parse_quantity
from kss_sim.scheduler.resources import Resource, is_extended_resource_name, pod_requests

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"  # resourceapi.ExtendedResourceClaimAnnotation
# The claim's name while it exists only in memory: not a valid object name, so it never clashes with a real claim.
SPECIAL_CLAIM_NAME = "<extended-resources>"


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource name, or a class's implicit one."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _created(device_class: Mapping[str, Any]) -> str:
    # RFC 3339 timestamps in UTC sort as text; a class without one counts as the oldest (Go's zero time).
    return str((device_class.get("metadata") or {}).get("creationTimestamp") or "")


def classes_by_resource_name(classes: Iterable[Obj]) -> dict[str, Obj]:
    """``ExtendedResourceCache``: the class serving each extended resource name. Every class serves its implicit
    name; of the classes naming the same ``extendedResourceName``, the oldest (then the first by name) serves it."""
    mapping: dict[str, Obj] = {}
    explicit: dict[str, Obj] = {}
    for device_class in classes:
        meta = device_class.get("metadata") or {}
        name = str(meta.get("name") or "")
        mapping[DEVICE_CLASS_PREFIX + name] = device_class
        resource = (device_class.get("spec") or {}).get("extendedResourceName")
        if not resource:
            continue
        holder = explicit.get(str(resource))
        rank = (_created(device_class), name)
        if holder is None or rank < (_created(holder), str((holder.get("metadata") or {}).get("name") or "")):
            explicit[str(resource)] = device_class
    mapping.update(explicit)
    return mapping


def pod_scalar_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's scalar requests (``framework.NewResource(resourcehelper.PodRequests(pod))``)."""
    return Resource.from_list(pod_requests(pod)).scalar_resources


def requests_a_name_of(pod: Mapping[str, Any], classes: Mapping[str, Obj]) -> bool:
    """Whether a container, an init container or the overhead names, in its requests, a resource some class serves.
    False rules ``has_class_mapped_request`` out without adding the pod's quantities up (the other names
    ``pod_requests`` yields, pod-level cpu, memory and hugepages, are native: no class serves them)."""
    if not classes:
        return False
    spec = pod.get("spec") or {}
    for group in ("containers", "initContainers"):
        for container in spec.get(group) or []:
            if any(name in classes for name in (container.get("resources") or {}).get("requests") or {}):
                return True
    return any(name in classes for name in spec.get("overhead") or {})


def has_class_mapped_request(requests: Mapping[str, int], classes: Mapping[str, Obj]) -> bool:
    """``hasDeviceClassMappedExtendedResource``: some non-zero request is served by a class."""
    return any(q != 0 and is_dra_extended_resource_name(n) and n in classes for n, q in requests.items())


def find_extended_resource_claim(pod_name: str, pod_uid: str, claims: Iterable[Obj]) -> Obj | None:
    """``findExtendedResourceClaim``: a claim written for this pod's extended resources in an earlier cycle."""
    for claim in claims:
        meta = claim.get("metadata") or {}
        if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
            continue
        for ref in meta.get("ownerReferences") or []:
            if ref.get("name") == pod_name and ref.get("controller") and ref.get("uid") == pod_uid:
                return claim
    return None


def in_memory_claim_uid(pod_uid: str) -> str:
    """The temporary uid of the pod's in-memory claim (its allocation in flight is kept under it)."""
    return f"extended-resources-{pod_uid}"


def in_memory_claim(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod's claim for its extended resources before any node is chosen: no requests yet, owned by the pod,
    a temporary uid (derived from the pod's, so runs repeat)."""
    meta = pod.get("metadata") or {}
    pod_name, pod_uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": str(meta.get("namespace") or "default"),
            "name": SPECIAL_CLAIM_NAME,
            "uid": in_memory_claim_uid(pod_uid),
            "generateName": f"{pod_name}-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid, "controller": True}
            ],
            "annotations": {CLAIM_ANNOTATION: "true"},
        },
        "spec": {},
    }


def generated_name(claim: Mapping[str, Any]) -> str:
    """A name for the claim from its ``generateName`` as the API server would make one (five characters), derived
    from the claim's uid so that offline runs repeat."""
    meta = claim.get("metadata") or {}
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.String alphabet
    digest = hashlib.sha256(str(meta.get("uid") or "").encode()).digest()
    return str(meta.get("generateName") or "") + "".join(alphabet[b % len(alphabet)] for b in digest[:5])


def _long_lived_and_short_lived(
    containers: Sequence[Mapping[str, Any]], init_count: int
) -> tuple[list[int], list[int]]:
    """``partitionContainerIndices``: regular containers and sidecars hold their devices for the pod's life; other
    init containers only while they run."""
    long_lived: list[int] = []
    short_lived: list[int] = []
    for i, container in enumerate(containers):
        if i < init_count and container.get("restartPolicy") != "Always":
            short_lived.append(i)
        else:
            long_lived.append(i)
    return long_lived, short_lived


def _container_request(
    index: int,
    container: Mapping[str, Any],
    resource: str,
    class_name: str,
    reusable: Sequence[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """``createResourceRequestAndMappings``: the container's device request for ``resource`` (None when it asks for
    none, or when the ``reusable`` requests of containers after it already cover it) and its request mappings."""
    requests = (container.get("resources") or {}).get("requests") or {}
    if resource not in requests:
        return None, []
    quantity = parse_quantity(str(requests[resource]))
    if quantity.denominator != 1 or quantity == 0:
        return None, []
    wanted = int(quantity)
    mappings: list[dict[str, str]] = []
    covered = 0
    container_name = str(container.get("name") or "")
    for request in reusable:
        if request is None:
            continue
        covered += int(request["exactly"]["count"])
        mappings.append({"containerName": container_name, "resourceName": resource, "requestName": request["name"]})
        if covered >= wanted:
            return None, mappings
    # The request is named after the container's index and the resource's among its sorted request names.
    position = sorted(requests).index(resource)
    name = f"container-{index}-request-{position}"
    device_request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": wanted - covered},
    }
    mappings.append({"containerName": container_name, "resourceName": resource, "requestName": name})
    return device_request, mappings


def requests_and_mappings(
    pod: Mapping[str, Any], resources: Iterable[str], classes: Mapping[str, Obj]
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """``createRequestsAndMappings``: the claim's device requests for ``resources`` (by request name) and which
    container's resource each one serves. Short-lived init containers share the largest of their requests and reuse
    the devices of the containers after them that stay."""
    spec = pod.get("spec") or {}
    init = list(spec.get("initContainers") or [])
    containers: list[Mapping[str, Any]] = [*init, *(spec.get("containers") or [])]
    long_lived, short_lived = _long_lived_and_short_lived(containers, len(init))
    device_requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(resources):
        device_class = classes.get(resource)
        if device_class is None:
            continue
        class_name = str((device_class.get("metadata") or {}).get("name") or "")
        kept: list[dict[str, Any] | None] = [None] * len(containers)
        kept_mappings: list[dict[str, str]] = []
        for i in long_lived:
            kept[i], got = _container_request(i, containers[i], resource, class_name, ())
            kept_mappings.extend(got)
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for i in short_lived:
            request, got = _container_request(i, containers[i], resource, class_name, kept[i:])
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings.extend(got)
        if largest is not None and len(short_names) > 1:
            # Init containers run one at a time: they all use the largest one's devices.
            short_names.discard(largest["name"])
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest["name"]
        if largest is not None:
            device_requests.append(largest)
        device_requests.extend(r for r in kept if r is not None)
        mappings.extend(kept_mappings)
        mappings.extend(short_mappings)
    device_requests.sort(key=lambda r: str(r["name"]))
    return device_requests, mappings
