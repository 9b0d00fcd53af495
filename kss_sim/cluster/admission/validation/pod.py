"""Field validation (422 Invalid) of pods as kube-apiserver does it (``ValidatePodCreate``, ``ValidatePodUpdate``):
containers and their resources, affinity and node selector terms, tolerations, resource claims, the scheduling group
and workload reference; the node selector terms are shared with PersistentVolumes and DRA.
"""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.admission.validation.metadata import (
    dns_label_messages,
    name_errors,
    qualified_name_errors,
    selector_errors,
    subdomain_messages,
    validate_labels,
    validate_metadata,
)
from kss_sim.cluster.errors import Cause, duplicate, forbidden, invalid, not_supported, required
from kss_sim.kube.quantity import parse_quantity


def _resource_errors(path: str, resources: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    for part, values in (("requests", requests), ("limits", limits)):
        for name, quantity in values.items():
            if parse_quantity(quantity) < 0:
                causes.append(invalid(f"{path}.{part}[{name}]", str(quantity), "must be greater than or equal to 0"))
    for name, quantity in requests.items():
        if name in limits and parse_quantity(quantity) > parse_quantity(limits[name]):
            causes.append(
                invalid(
                    f"{path}.requests", str(quantity), f"must be less than or equal to {name} limit of {limits[name]}"
                )
            )
    return causes


_RESTART = ["Always", "OnFailure", "Never"]
_DNS = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
_NODE_OPS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


def _validate_containers(path: str, containers: list[Any], seen: set[str], *, required_list: bool) -> list[Cause]:
    causes: list[Cause] = []
    if required_list and not containers:
        causes.append(required(path))
    for i, c in enumerate(containers):
        p = f"{path}[{i}]"
        name = c.get("name") or ""
        if not name:
            causes.append(required(f"{p}.name"))
        else:
            causes += name_errors(f"{p}.name", name, label=True)
            if name in seen:
                causes.append(duplicate(f"{p}.name", name))
            seen.add(name)
        if not c.get("image"):
            causes.append(required(f"{p}.image"))
        causes += _resource_errors(f"{p}.resources", c.get("resources") or {})
        for j, port in enumerate(c.get("ports") or []):
            cp = port.get("containerPort")
            if not isinstance(cp, int) or not 1 <= cp <= 65535:
                causes.append(invalid(f"{p}.ports[{j}].containerPort", cp, "must be between 1 and 65535, inclusive"))
            hp = port.get("hostPort", 0) or 0
            if not isinstance(hp, int) or not 0 <= hp <= 65535:
                causes.append(invalid(f"{p}.ports[{j}].hostPort", hp, "must be between 1 and 65535, inclusive"))
            if port.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
                causes.append(not_supported(f"{p}.ports[{j}].protocol", port.get("protocol"), ["SCTP", "TCP", "UDP"]))
    return causes


def validate_node_selector_terms(path: str, terms: list[Any]) -> list[Cause]:
    causes: list[Cause] = []
    for i, term in enumerate(terms):
        for j, expr in enumerate((term or {}).get("matchExpressions") or []):
            op = expr.get("operator")
            ep = f"{path}[{i}].matchExpressions[{j}]"
            if op not in _NODE_OPS:
                causes.append(not_supported(f"{ep}.operator", op, _NODE_OPS))
                continue
            values = expr.get("values") or []
            if op in ("In", "NotIn") and not values:
                causes.append(required(f"{ep}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
            if op in ("Exists", "DoesNotExist") and values:
                causes.append(
                    forbidden(f"{ep}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
                )
            if op in ("Gt", "Lt") and len(values) != 1:
                causes.append(
                    required(f"{ep}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
                )
            causes += qualified_name_errors(f"{ep}.key", str(expr.get("key", "")))
    return causes


def _validate_affinity(affinity: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    node = affinity.get("nodeAffinity") or {}
    req = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        terms = req.get("nodeSelectorTerms") or []
        p = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        if not terms:
            causes.append(required(p, "must have at least one node selector term"))
        causes += validate_node_selector_terms(p, terms)
    for i, pref in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        p = f"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        weight = pref.get("weight")
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            causes.append(invalid(f"{p}.weight", weight, "must be in the range 1-100"))
        causes += validate_node_selector_terms(f"{p}.preference", [pref.get("preference") or {}])
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind) or {}
        base = f"spec.affinity.{kind}"
        for i, term in enumerate(section.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            causes += _validate_pod_affinity_term(f"{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", term)
        for i, weighted in enumerate(section.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            p = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            weight = weighted.get("weight")
            if not isinstance(weight, int) or not 1 <= weight <= 100:
                causes.append(invalid(f"{p}.weight", weight, "must be in the range 1-100"))
            causes += _validate_pod_affinity_term(f"{p}.podAffinityTerm", weighted.get("podAffinityTerm") or {})
    return causes


def _validate_pod_affinity_term(path: str, term: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if not term.get("topologyKey"):
        causes.append(required(f"{path}.topologyKey", "can not be empty"))
    else:
        causes += qualified_name_errors(f"{path}.topologyKey", term["topologyKey"])
    causes += selector_errors(f"{path}.labelSelector", term.get("labelSelector"))
    causes += selector_errors(f"{path}.namespaceSelector", term.get("namespaceSelector"))
    return causes


def validate_pod(pod: dict[str, Any]) -> list[Cause]:
    """ValidatePodCreate for the fields a scheduler reads."""
    causes = validate_metadata(pod, namespaced=True)
    spec = pod.get("spec") or {}
    seen: set[str] = set()
    causes += _validate_containers("spec.containers", spec.get("containers") or [], seen, required_list=True)
    causes += _validate_containers("spec.initContainers", spec.get("initContainers") or [], seen, required_list=False)
    if spec.get("restartPolicy") not in _RESTART:
        causes.append(not_supported("spec.restartPolicy", spec.get("restartPolicy"), _RESTART))
    if spec.get("dnsPolicy") not in _DNS:
        causes.append(not_supported("spec.dnsPolicy", spec.get("dnsPolicy"), _DNS))
    causes += validate_labels("spec.nodeSelector", spec.get("nodeSelector"))
    if spec.get("nodeName"):
        causes += name_errors("spec.nodeName", spec["nodeName"])
    for i, t in enumerate(spec.get("tolerations") or []):
        p = f"spec.tolerations[{i}]"
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            causes.append(not_supported(f"{p}.operator", op, ["Equal", "Exists"]))
        if t.get("key"):
            causes += qualified_name_errors(f"{p}.key", t["key"])
        elif op != "Exists":
            causes.append(
                invalid(
                    f"{p}.operator",
                    op,
                    'operator must be Exists when `key` is empty, which means "match all values and all keys"',
                )
            )
        if op == "Exists" and t.get("value"):
            causes.append(invalid(f"{p}.operator", t.get("value"), "value must be empty when `operator` is 'Exists'"))
        if t.get("effect") and t["effect"] not in TAINT_EFFECTS:
            causes.append(not_supported(f"{p}.effect", t["effect"], TAINT_EFFECTS))
    causes += _validate_affinity(spec.get("affinity") or {})
    for i, c in enumerate(spec.get("topologySpreadConstraints") or []):
        p = f"spec.topologySpreadConstraints[{i}]"
        skew = c.get("maxSkew")
        if not isinstance(skew, int) or skew <= 0:
            causes.append(invalid(f"{p}.maxSkew", skew, "must be greater than zero"))
        if not c.get("topologyKey"):
            causes.append(required(f"{p}.topologyKey", "can not be empty"))
        when = c.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            causes.append(not_supported(f"{p}.whenUnsatisfiable", when, ["DoNotSchedule", "ScheduleAnyway"]))
        min_domains = c.get("minDomains")
        if min_domains is not None:
            if not isinstance(min_domains, int) or min_domains <= 0:
                causes.append(invalid(f"{p}.minDomains", min_domains, "must be greater than 0"))
            elif when != "DoNotSchedule":
                causes.append(
                    invalid(
                        f"{p}.minDomains",
                        min_domains,
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
                    )
                )
        causes += selector_errors(f"{p}.labelSelector", c.get("labelSelector"))
    names: set[str] = set()
    for i, v in enumerate(spec.get("volumes") or []):
        name = (v or {}).get("name") or ""
        if not name:
            causes.append(required(f"spec.volumes[{i}].name"))
        elif name in names:
            causes.append(duplicate(f"spec.volumes[{i}].name", name))
        names.add(name)
    gates: set[str] = set()
    for i, g in enumerate(spec.get("schedulingGates") or []):
        name = (g or {}).get("name") or ""
        causes += qualified_name_errors(f"spec.schedulingGates[{i}].name", name)
        if name in gates:
            causes.append(duplicate(f"spec.schedulingGates[{i}].name", name))
        gates.add(name)
    if isinstance(spec.get("resources"), dict):
        causes += _resource_errors("spec.resources", spec["resources"])
    if isinstance(spec.get("workloadRef"), dict):
        causes += _workload_reference_errors("spec.workloadRef", spec["workloadRef"])
    if isinstance(spec.get("schedulingGroup"), dict):
        causes += _scheduling_group_errors("spec.schedulingGroup", spec["schedulingGroup"])
    causes += _pod_resource_claims_errors(spec)
    return causes


def _pod_resource_claims_errors(spec: dict[str, Any]) -> list[Cause]:
    """validatePodResourceClaims (DNS-label names, unique, exactly one source) and, per container,
    validateResourceClaimNames (each ``resources.claims`` entry names one of them, once per request)."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, claim in enumerate(c if isinstance(c, dict) else {} for c in spec.get("resourceClaims") or []):
        p = f"spec.resourceClaims[{i}]"
        name = str(claim.get("name") or "")
        if not name:
            causes.append(required(f"{p}.name"))
        elif name in names:
            causes.append(duplicate(f"{p}.name", name))
        else:
            causes += [invalid(f"{p}.name", name, m) for m in dns_label_messages(name)]
            names.add(name)
        shown = "core.PodResourceClaim{...}"
        sources = [f for f in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(f) is not None]
        if len(sources) == 2:
            detail = "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
            causes.append(Cause(p, "FieldValueInvalid", f"Invalid value: {shown}: {detail}"))
        if not sources:
            detail = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            causes.append(Cause(p, "FieldValueInvalid", f"Invalid value: {shown}: {detail}"))
        for source in sources:
            value = str(claim[source])
            causes += [invalid(f"{p}.{source}", value, m) for m in subdomain_messages(value)]
    for field in ("containers", "initContainers"):
        for i, container in enumerate(c if isinstance(c, dict) else {} for c in spec.get(field) or []):
            claims = (container.get("resources") or {}).get("claims") or []
            causes += _container_claim_errors(claims, names, f"spec.{field}[{i}].resources.claims")
    return causes


def _container_claim_errors(claims: list[Any], pod_claims: set[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, claim in enumerate(c if isinstance(c, dict) else {} for c in claims):
        p = f"{path}[{i}]"
        name, request = str(claim.get("name") or ""), str(claim.get("request") or "")
        key = name
        if request:
            causes += [invalid(f"{p}.request", request, m) for m in dns_label_messages(request)]
            key += "/" + request
        if not name:
            causes.append(required(p))
            continue
        if key in seen:
            causes.append(duplicate(p, key))
        seen.add(key)
        if name not in pod_claims:
            listed = f": {', '.join(sorted(pod_claims))}" if pod_claims else " which is empty"
            detail = f"must be one of the names in pod.spec.resourceClaims{listed}"
            causes.append(Cause(p, "FieldValueNotFound", f'Not found: "{name}": {detail}'))
    return causes


def _scheduling_group_errors(path: str, group: dict[str, Any]) -> list[Cause]:
    """v1.36's PodSchedulingGroup, a one-member union: the PodGroup's name (a DNS subdomain) is required."""
    name = group.get("podGroupName")
    if name is None:
        return [invalid(path, "", "must specify one of: `podGroupName`")]
    return [required(f"{path}.podGroupName")] if not name else name_errors(f"{path}.podGroupName", str(name))


def _workload_reference_errors(path: str, ref: dict[str, Any]) -> list[Cause]:
    """validateWorkloadReference: a Workload's name (DNS subdomain), a pod group and a replica key (DNS labels)."""
    causes = name_errors(f"{path}.name", str(ref.get("name") or ""))
    causes += name_errors(f"{path}.podGroup", str(ref.get("podGroup") or ""), label=True)
    if ref.get("podGroupReplicaKey"):
        causes += name_errors(f"{path}.podGroupReplicaKey", str(ref["podGroupReplicaKey"]), label=True)
    return causes


_POD_UPDATE_MSG = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def validate_pod_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """ValidatePodUpdate: a pod's spec is immutable except images, deadlines, added tolerations, removed gates."""
    causes = validate_pod(new)
    new_spec = dict(new.get("spec") or {})
    old_spec = dict(old.get("spec") or {})
    if old_spec.get("nodeName") and new_spec.get("nodeName") != old_spec.get("nodeName"):
        return [*causes, invalid("spec.nodeName", new_spec.get("nodeName"), "field is immutable once the pod is bound")]
    for field in ("activeDeadlineSeconds", "terminationGracePeriodSeconds"):
        new_spec.pop(field, None)
        old_spec.pop(field, None)
    for field in ("containers", "initContainers"):
        if field in new_spec and field in old_spec and len(new_spec[field]) == len(old_spec[field]):
            new_spec[field] = [
                {**c, "image": o.get("image")} for c, o in zip(new_spec[field], old_spec[field], strict=True)
            ]
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = new_spec.get("tolerations") or []
    if all(t in new_tolerations for t in old_tolerations):
        new_spec["tolerations"] = old_tolerations
    old_gates = old_spec.get("schedulingGates") or []
    if all(g in old_gates for g in new_spec.get("schedulingGates") or []):
        new_spec["schedulingGates"] = old_gates
    for spec in (new_spec, old_spec):
        if not spec.get("schedulingGates"):
            spec.pop("schedulingGates", None)
        if not spec.get("tolerations"):
            spec.pop("tolerations", None)
    if new_spec != old_spec:
        causes.append(forbidden("spec", _POD_UPDATE_MSG))
    return causes
