"""ValidatePodStatusUpdate: what a write through ``pods/{name}/status`` may store (a client's PUT or patch, the
scheduler's conditions and nomination, the kubelet's phases, IPs and container states), as kube-apiserver's pod
status strategy validates it, with its messages and field paths.

The spec and the rest of the metadata are the stored pod's (the status strategy keeps them), so only the status,
the annotations and what the status may not contradict are checked here. Where the versions kss serves differ,
``PodStatusRules`` says which rule applies.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

import orjson

from kss_sim.cluster.admission.validation.dra_rules import too_long
from kss_sim.cluster.admission.validation.metadata import (
    dns_label_messages,
    qualified_name_errors,
    subdomain_messages,
    validate_metadata,
)
from kss_sim.cluster.errors import Cause, duplicate, forbidden, invalid, not_supported, required

# The conditions the system owns: any other type must be a qualified name.
_SYSTEM_CONDITIONS = frozenset({"PodScheduled", "Ready", "Initialized"})
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_NOT_TERMINATED = "may not be transitioned to non-terminated state"
_HEALTH = ["Healthy", "Unhealthy", "Unknown"]
_MAX_ID = 2147483647
_HEALTH_MESSAGE_BYTES = 1024  # v1.ResourceHealthMessageMaxLength
# Go's ParseIPSloppy takes a dotted quad whose parts may have leading zeros (read as decimal).
_SLOPPY_IPV4 = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})")


@dataclass(frozen=True)
class PodStatusRules:
    """What the status validation of one Kubernetes version does differently.

    ``restart_rules``: container states are judged by ``ContainerShouldRestart`` (restart policy rules, the gate
    ContainerRestartRules, on by default from v1.35) rather than by the pod's restartPolicy alone;
    ``restart_all``: a RestartAllContainers rule lets every container leave Terminated
    (RestartAllContainersOnContainerExits, on by default from v1.36); ``bound_nomination``: a bound pod may not be
    given a new nominatedNodeName (ClearingNominatedNodeNameAfterBinding); ``extended_claim_status``:
    status.extendedResourceClaimStatus is validated (from v1.34); ``v136_claims_and_health``: a claim status's bad
    claim name is reported at ``resourceClaimName`` (at ``name`` before), and a resource health's message must be
    non-empty and at most 1,024 bytes (from v1.36)."""

    restart_rules: bool
    restart_all: bool
    bound_nomination: bool
    extended_claim_status: bool
    v136_claims_and_health: bool = False

    @classmethod
    def of(cls, minor: int, *, clearing_nominated: bool) -> PodStatusRules:
        """The rules of Kubernetes v1.``minor``, its gates at their defaults but for ClearingNominatedNodeName."""
        return cls(
            restart_rules=minor >= 35,
            restart_all=minor >= 36,
            bound_nomination=clearing_nominated,
            extended_claim_status=minor >= 34,
            v136_claims_and_health=minor >= 36,
        )


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (a pod stored before the decoder checked types)."""
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The entries of a list field that are objects (the decode already refused any other shape)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _shown(value: Any) -> str:
    """A bad value that is not a plain string or number as field.Invalid prints it: its JSON."""
    return orjson.dumps(value).decode()


def validate_pod_status_update(new: dict[str, Any], old: dict[str, Any], rules: PodStatusRules) -> list[Cause]:
    """ValidatePodStatusUpdate of ``new`` replacing the stored pod ``old`` through the status subresource."""
    causes = validate_metadata(new, namespaced=True)
    causes += _annotation_update_causes(new, old)
    status, old_status = _dict(new.get("status")), _dict(old.get("status"))
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    causes += _condition_causes(_dicts(status.get("conditions")))
    if spec.get("nodeName") != old_spec.get("nodeName"):
        causes.append(forbidden("status.nodeName", "may not be changed directly"))
    nominated = str(status.get("nominatedNodeName") or "")
    old_nominated = str(old_status.get("nominatedNodeName") or "")
    if nominated and nominated != old_nominated:
        causes += [invalid("status.nominatedNodeName", nominated, m) for m in subdomain_messages(nominated)]
        if rules.bound_nomination and old_spec.get("nodeName"):
            causes.append(
                forbidden("status.nominatedNodeName", "may not be set on pods that are already bound to a node")
            )
    generation = status.get("observedGeneration")
    if isinstance(generation, int) and generation < 0:
        causes.append(invalid("status.observedGeneration", generation, "must be a non-negative integer"))
    qos, old_qos = status.get("qosClass") or "", old_status.get("qosClass") or ""
    if qos != old_qos:
        causes.append(invalid("status.qosClass", qos, "field is immutable"))
    causes += _transition_causes(status, old_status, old_spec, rules)
    causes += _claim_status_causes(_dicts(status.get("resourceClaimStatuses")), spec, rules)
    if rules.extended_claim_status and isinstance(status.get("extendedResourceClaimStatus"), dict):
        causes += _extended_claim_status_causes(status["extendedResourceClaimStatus"], spec)
    causes += _ip_causes("status.podIPs", _dicts(status.get("podIPs")), _dicts(old_status.get("podIPs")))
    host_ips = _dicts(status.get("hostIPs"))
    if host_ips:
        if str(status.get("hostIP") or "") != str(host_ips[0].get("ip") or ""):
            causes.append(
                invalid("status.hostIPs[0].ip", str(host_ips[0].get("ip") or ""), "must be equal to `hostIP`")
            )
        causes += _ip_causes("status.hostIPs", host_ips, _dicts(old_status.get("hostIPs")))
    os_name = _dict(spec.get("os")).get("name") or "linux"
    for field, containers in (
        ("containerStatuses", "containers"),
        ("initContainerStatuses", "initContainers"),
        ("ephemeralContainerStatuses", None),
    ):
        statuses = _dicts(status.get(field))
        causes += _user_causes(f"status.{field}", statuses, os_name)
        if containers is None:  # ephemeral containers are not allowed to have resources allocated
            for i, s in enumerate(statuses):
                if s.get("allocatedResourcesStatus"):
                    detail = "must not be specified in container status"
                    causes.append(forbidden(f"status.{field}[{i}].allocatedResourcesStatus", detail))
        else:
            causes += _allocated_causes(f"status.{field}", statuses, _dicts(spec.get(containers)), rules)
    return causes


def _annotation_update_causes(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """ValidatePodSpecificAnnotationUpdates: the mirror pod and AppArmor annotations may not change."""
    causes: list[Cause] = []
    annotations = _dict(_dict(new.get("metadata")).get("annotations"))
    old_annotations = _dict(_dict(old.get("metadata")).get("annotations"))
    for key, value in old_annotations.items():
        if key in annotations and annotations[key] == value:
            continue
        if key.startswith(_APPARMOR_PREFIX):
            causes.append(forbidden(f"metadata.annotations[{key}]", "may not remove or update AppArmor annotations"))
        if key == _MIRROR_ANNOTATION:
            causes.append(forbidden(f"metadata.annotations[{key}]", "may not remove or update mirror pod annotation"))
    for key in annotations:
        if key in old_annotations:
            continue
        if key.startswith(_APPARMOR_PREFIX):
            causes.append(forbidden(f"metadata.annotations[{key}]", "may not add AppArmor annotations"))
        if key == _MIRROR_ANNOTATION:
            causes.append(forbidden(f"metadata.annotations[{key}]", "may not add mirror pod annotation"))
    return causes


def _condition_causes(conditions: list[dict[str, Any]]) -> list[Cause]:
    """validatePodConditions (upstream's path says ``Type``, capitalised)."""
    causes: list[Cause] = []
    for i, condition in enumerate(conditions):
        generation = condition.get("observedGeneration")
        if isinstance(generation, int) and generation < 0:
            path = f"status.conditions[{i}].observedGeneration"
            causes.append(invalid(path, generation, "must be a non-negative integer"))
        kind = str(condition.get("type") or "")
        if kind not in _SYSTEM_CONDITIONS:
            causes += qualified_name_errors(f"status.conditions[{i}].Type", kind)
    return causes


# ------------------------------------------------------------------------------------------ container states


def _terminated(status: dict[str, Any]) -> dict[str, Any] | None:
    state = status.get("state")
    terminated = state.get("terminated") if isinstance(state, dict) else None
    return terminated if isinstance(terminated, dict) else None


def _exit_code(terminated: dict[str, Any]) -> int:
    code = terminated.get("exitCode")
    return code if isinstance(code, int) else 0


def _rule_matches(rule: dict[str, Any], exit_code: int) -> bool:
    """FindMatchingContainerRestartRule's test of one rule: its exit codes In or NotIn the list."""
    codes = rule.get("exitCodes")
    if not isinstance(codes, dict):
        return False
    values = codes.get("values")
    listed = isinstance(values, list) and exit_code in values
    operator = codes.get("operator")
    return (operator == "In" and listed) or (operator == "NotIn" and not listed)


def _should_restart(container: dict[str, Any], spec: dict[str, Any], exit_code: int, rules: PodStatusRules) -> bool:
    """ContainerShouldRestart: the container's first matching rule, its own restartPolicy, then the pod's."""
    policy = container.get("restartPolicy")
    if policy is not None:
        for rule in _dicts(container.get("restartPolicyRules")):
            if not _rule_matches(rule, exit_code):
                continue
            if rule.get("action") == "Restart" or (rule.get("action") == "RestartAllContainers" and rules.restart_all):
                return True
            break  # the first match decides; another action falls back to the container's policy
        if policy == "Always":
            return True
        if policy == "OnFailure":
            return exit_code != 0
        if policy == "Never":
            return False
    pod_policy = spec.get("restartPolicy")
    if pod_policy == "OnFailure":
        return exit_code != 0
    return pod_policy != "Never"


def _uses_rules(spec: dict[str, Any], action: str) -> bool:
    """Whether a container of ``spec`` has a restart policy rule whose action is ``action``."""
    for field in ("initContainers", "containers"):
        for container in _dicts(spec.get(field)):
            for rule in _dicts(container.get("restartPolicyRules")):
                if rule.get("action") == action:
                    return True
    return False


def _transition_causes(
    status: dict[str, Any], old_status: dict[str, Any], spec: dict[str, Any], rules: PodStatusRules
) -> list[Cause]:
    """Validate(Init|Ephemeral)ContainerStateTransition: a terminated container that its restart policy does not
    restart may not leave Terminated (the path indexes the old status)."""
    causes: list[Cause] = []
    # A RestartAllContainers rule in the spec lets every container restart (the rule in use allows it whatever
    # the gate: GetValidationOptionsFromPodSpecAndMeta).
    all_restart = rules.restart_rules and _uses_rules(spec, "RestartAllContainers")
    for field, containers in (("containerStatuses", "containers"), ("initContainerStatuses", "initContainers")):
        new_statuses = _dicts(status.get(field))
        old_statuses = _dicts(old_status.get(field))
        if rules.restart_rules:
            if not all_restart:
                causes += _rule_transition_causes(
                    f"status.{field}", new_statuses, old_statuses, spec, containers, rules
                )
        else:
            causes += _policy_transition_causes(f"status.{field}", new_statuses, old_statuses, spec, containers)
    new_ephemeral = _dicts(status.get("ephemeralContainerStatuses"))
    for i, old in enumerate(_dicts(old_status.get("ephemeralContainerStatuses"))):
        if _terminated(old) is None:
            continue
        for new in new_ephemeral:
            if new.get("name") == old.get("name") and _terminated(new) is None:
                causes.append(forbidden(f"status.ephemeralContainerStatuses[{i}].state", _NOT_TERMINATED))
    return causes


def _rule_transition_causes(
    path: str,
    new_statuses: list[dict[str, Any]],
    old_statuses: list[dict[str, Any]],
    spec: dict[str, Any],
    containers: str,
    rules: PodStatusRules,
) -> list[Cause]:
    """The ContainerRestartRules form: each container asked by ContainerShouldRestart (one not in the spec is not
    restarted)."""
    causes: list[Cause] = []
    for i, old in enumerate(old_statuses):
        terminated = _terminated(old)
        if terminated is None:
            continue
        if not any(s.get("name") == old.get("name") and _terminated(s) is None for s in new_statuses):
            continue
        container = next((c for c in _dicts(spec.get(containers)) if c.get("name") == old.get("name")), None)
        if container is None or not _should_restart(container, spec, _exit_code(terminated), rules):
            causes.append(forbidden(f"{path}[{i}].state", _NOT_TERMINATED))
    return causes


def _policy_transition_causes(
    path: str, new_statuses: list[dict[str, Any]], old_statuses: list[dict[str, Any]], spec: dict[str, Any], field: str
) -> list[Cause]:
    """The pod's restartPolicy alone: Always restarts everything, OnFailure what failed; a sidecar (an init
    container whose restartPolicy is Always) always restarts."""
    causes: list[Cause] = []
    policy = spec.get("restartPolicy")
    if policy == "Always":
        return causes
    for i, old in enumerate(old_statuses):
        terminated = _terminated(old)
        if terminated is None or (_exit_code(terminated) != 0 and policy == "OnFailure"):
            continue
        if field == "initContainers":
            container = next((c for c in _dicts(spec.get(field)) if c.get("name") == old.get("name")), None)
            if container is not None and container.get("restartPolicy") == "Always":
                continue
        for new in new_statuses:
            if new.get("name") == old.get("name") and _terminated(new) is None:
                causes.append(forbidden(f"{path}[{i}].state", _NOT_TERMINATED))
    return causes


# ------------------------------------------------------------------------------------------ claims


def _claim_status_causes(statuses: list[dict[str, Any]], spec: dict[str, Any], rules: PodStatusRules) -> list[Cause]:
    """validatePodResourceClaimStatuses: each names one of the pod's claims, once; a claim name a DNS subdomain
    (reported at ``name`` until v1.35, as upstream did)."""
    claim_field = "resourceClaimName" if rules.v136_claims_and_health else "name"
    causes: list[Cause] = []
    claims = {str(c.get("name") or "") for c in _dicts(spec.get("resourceClaims"))}
    seen: set[str] = set()
    for i, status in enumerate(statuses):
        p = f"status.resourceClaimStatuses[{i}]"
        name = str(status.get("name") or "")
        if name not in claims:
            causes.append(invalid(f"{p}.name", name, "must match the name of an entry in `spec.resourceClaims`"))
        if name in seen:
            causes.append(duplicate(f"{p}.name", name))
        seen.add(name)
        claim_name = status.get("resourceClaimName")
        if isinstance(claim_name, str):
            causes += [invalid(f"{p}.{claim_field}", claim_name, m) for m in subdomain_messages(claim_name)]
    return causes


def _extended_claim_status_causes(status: dict[str, Any], spec: dict[str, Any]) -> list[Cause]:
    """validatePodExtendedResourceClaimStatus: request mappings naming the pod's containers and their requested
    resources, once each; the claim's name a DNS subdomain."""
    causes: list[Cause] = []
    path = "status.extendedResourceClaimStatus"
    containers: dict[str, dict[str, Any]] = {}
    for field in ("initContainers", "containers"):
        for container in _dicts(spec.get(field)):
            containers[str(container.get("name") or "")] = container
    mappings = _dicts(status.get("requestMappings"))
    if not mappings:
        causes.append(required(f"{path}.requestMappings", "at least one request mapping is required"))
    seen: set[tuple[str, str, str]] = set()
    for i, mapping in enumerate(mappings):
        p = f"{path}.requestMappings[{i}]"
        container_name = str(mapping.get("containerName") or "")
        resource = str(mapping.get("resourceName") or "")
        request = str(mapping.get("requestName") or "")
        mapped = containers.get(container_name)
        if mapped is None:
            detail = "must match the name of an entry in spec.initContainers.name or spec.containers.name"
            causes.append(invalid(f"{p}.containerName", container_name, detail))
        elif resource not in _dict(_dict(mapped.get("resources")).get("requests")):
            detail = (
                "must match the extended resource name of an entry in spec.initContainers.resources.requests or "
                "spec.containers.resources.requests"
            )
            causes.append(invalid(f"{p}.resourceName", resource, detail))
        # upstream reports the request name at the status's path, not the mapping's
        causes += [invalid(f"{path}.requestName", request, m) for m in dns_label_messages(request)]
        key = (container_name, resource, request)
        if key in seen:
            causes.append(duplicate(f"{p}.containerName", container_name))
            causes.append(duplicate(f"{p}.resourceName", resource))
            causes.append(duplicate(f"{p}.requestName", request))
        seen.add(key)
    claim_name = str(status.get("resourceClaimName") or "")
    if not claim_name:
        causes.append(required(f"{path}.resourceClaimName"))
    else:
        causes += [invalid(f"{path}.resourceClaimName", claim_name, m) for m in subdomain_messages(claim_name)]
    return causes


# ------------------------------------------------------------------------------------------ addresses


def _sloppy_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """netutils.ParseIPSloppy: an IPv4 dotted quad (leading zeros allowed) or an IPv6 address (no zone)."""
    quad = _SLOPPY_IPV4.fullmatch(value)
    if quad is not None:
        parts = [int(p) for p in quad.groups()]
        return ipaddress.IPv4Address(bytes(parts)) if all(p <= 255 for p in parts) else None
    if "%" in value or ":" not in value:
        return None
    try:
        return ipaddress.IPv6Address(value)
    except ValueError:
        return None


def _is_ipv4(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's To4() != nil: IPv4, an IPv4-mapped IPv6 address included."""
    return isinstance(address, ipaddress.IPv4Address) or address.ipv4_mapped is not None


def _ip_causes(path: str, entries: list[dict[str, Any]], old_entries: list[dict[str, Any]]) -> list[Cause]:
    """validatePodIPs / validateHostIPs: every new address a valid IP (one already stored may stay), and at most
    one of each family."""
    causes: list[Cause] = []
    existing = {str(e.get("ip") or "") for e in old_entries}
    ips = [str(e.get("ip") or "") for e in entries]
    for i, ip in enumerate(ips):
        if ip not in existing and _sloppy_ip(ip) is None:
            causes.append(invalid(f"{path}[{i}]", ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
    if len(ips) > 1:
        parsed = [_sloppy_ip(ip) for ip in ips]
        bad = next((i for i, p in enumerate(parsed) if p is None), None)
        if bad is not None:
            detail = f"Internal error: failed to check for dual stack with error:invalid IP[{bad}]: {ips[bad]}"
            causes.append(Cause(path, "InternalError", detail))
            dual = False
        else:
            families = {_is_ipv4(p) for p in parsed if p is not None}
            dual = len(families) == 2
        if not dual or len(ips) > 2:
            shown = _shown([{"ip": ip} for ip in ips])
            causes.append(
                Cause(
                    path,
                    "FieldValueInvalid",
                    f"Invalid value: {shown}: may specify no more than one IP for each IP family",
                )
            )
    return causes


# ------------------------------------------------------------------------------------------ container details


def _id_causes(path: str, value: Any) -> list[Cause]:
    if isinstance(value, int) and not 0 <= value <= _MAX_ID:
        return [invalid(path, value, f"must be between 0 and {_MAX_ID}, inclusive")]
    return []


def _user_causes(path: str, statuses: list[dict[str, Any]], os_name: str) -> list[Cause]:
    """validateContainerStatusUsers: a Linux user's ids in range on a Linux pod; none on a Windows pod."""
    causes: list[Cause] = []
    for i, status in enumerate(statuses):
        user = status.get("user")
        linux = user.get("linux") if isinstance(user, dict) else None
        if not isinstance(linux, dict):
            continue
        p = f"{path}[{i}].user.linux"
        if os_name == "windows":
            causes.append(forbidden(p, "cannot be set for a windows pod"))
        if os_name != "linux":
            continue
        causes += _id_causes(f"{p}.uid", linux.get("uid"))
        causes += _id_causes(f"{p}.gid", linux.get("gid"))
        for g, gid in enumerate(linux.get("supplementalGroups") or []):
            causes += _id_causes(f"{p}.supplementalGroups[{g}]", gid)
    return causes


def _allocated_causes(
    path: str, statuses: list[dict[str, Any]], containers: list[dict[str, Any]], rules: PodStatusRules
) -> list[Cause]:
    """validateContainerStatusAllocatedResourcesStatus: each entry names a resource or claim of its container (a
    container not in the spec is not checked), with known health values, unique resource IDs and (from v1.36) a
    message that is not empty and not too long."""
    causes: list[Cause] = []
    by_name = {str(c.get("name") or ""): c for c in containers}
    for i, status in enumerate(statuses):
        container = by_name.get(str(status.get("name") or ""))
        resources = _dict(_dict(container).get("resources"))
        for j, allocated in enumerate(_dicts(status.get("allocatedResourcesStatus"))):
            p = f"{path}[{i}].allocatedResourcesStatus[{j}]"
            name = str(allocated.get("name") or "")
            if container is not None:
                if name.startswith("claim:"):
                    names = {
                        "claim:" + str(c.get("name") or "") + (f"/{c['request']}" if c.get("request") else "")
                        for c in _dicts(resources.get("claims"))
                    }
                    detail = (
                        "must match one of the container's resource claims in a format "
                        "'claim:<claimName>/<request>' or 'claim:<claimName>' if request is empty"
                    )
                else:
                    names = set(_dict(resources.get("requests")))
                    detail = "must match one of the container's resource requests"
                if name not in names:
                    causes.append(invalid(f"{p}.name", name, detail))
            ids: set[str] = set()
            for k, resource in enumerate(_dicts(allocated.get("resources"))):
                health = str(resource.get("health") or "")
                if health not in _HEALTH:
                    causes.append(not_supported(f"{p}.resources[{k}].health", health, _HEALTH))
                message = resource.get("message")
                if rules.v136_claims_and_health and isinstance(message, str):
                    if not message:
                        causes.append(required(f"{p}.resources[{k}].message", "must be non-empty if specified"))
                    elif len(message.encode()) > _HEALTH_MESSAGE_BYTES:
                        causes.append(too_long(f"{p}.resources[{k}].message", _HEALTH_MESSAGE_BYTES))
                resource_id = str(resource.get("resourceID") or "")
                if resource_id in ids:
                    causes.append(duplicate(f"{p}.resources[{k}].resourceID", resource_id))
                ids.add(resource_id)
    return causes
