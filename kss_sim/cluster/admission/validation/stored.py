"""Validation of the kinds kss stores without acting on them (configuration, services, storage attachments, RBAC):
the object's metadata and the rules of kube-apiserver's validation that shape what clients read back (keys,
ports, references). Registered in ``core``'s tables when imported (admission imports it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kss_sim.cluster.admission.validation import core
from kss_sim.cluster.admission.validation.metadata import validate_metadata
from kss_sim.cluster.errors import Cause, duplicate, forbidden, invalid, not_supported, required
from kss_sim.kube.objects import Obj

_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CONFIG_KEY_MESSAGE = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_RBAC_GROUP = "rbac.authorization.k8s.io"


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _config_keys(path: str, data: Any, seen: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    for key in _dict(data):
        if not _CONFIG_KEY.match(key) or key in (".", ".."):
            causes.append(invalid(f"{path}[{key}]", key, _CONFIG_KEY_MESSAGE))
        elif key in seen:
            causes.append(invalid(f"{path}[{key}]", key, "duplicate of key present in data"))
        seen.add(key)
    return causes


def validate_config_map(cm: Obj) -> list[Cause]:
    """ValidateConfigMap: valid keys, none in both data and binaryData."""
    seen: set[str] = set()
    return [
        *validate_metadata(cm, namespaced=True),
        *_config_keys("data", cm.get("data"), seen),
        *_config_keys("binaryData", cm.get("binaryData"), seen),
    ]


def validate_secret(secret: Obj) -> list[Cause]:
    """ValidateSecret: valid keys."""
    return [*validate_metadata(secret, namespaced=True), *_config_keys("data", secret.get("data"), set())]


def validate_namespaced(obj: Obj) -> list[Cause]:
    """Metadata only (ServiceAccount, Endpoints)."""
    return validate_metadata(obj, namespaced=True)


def validate_service(svc: Obj) -> list[Cause]:
    """ValidateService: a supported type, ports (named when more than one, unique, in range) unless ExternalName."""
    causes = validate_metadata(svc, namespaced=True, label_name=True)
    spec = _dict(svc.get("spec"))
    kind = spec.get("type") or "ClusterIP"
    if kind not in _SERVICE_TYPES:
        causes.append(not_supported("spec.type", kind, _SERVICE_TYPES))
    ports = _list(spec.get("ports"))
    if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
        causes.append(required("spec.ports"))
    if kind == "ExternalName" and not spec.get("externalName"):
        causes.append(required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = _dict(port)
        path = f"spec.ports[{i}]"
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            causes.append(required(f"{path}.name"))
        elif name in names:
            causes.append(duplicate(f"{path}.name", name))
        names.add(name)
        number = port.get("port")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append(invalid(f"{path}.port", number, "must be between 1 and 65535, inclusive"))
        protocol = port.get("protocol") or "TCP"
        if protocol not in _PROTOCOLS:
            causes.append(not_supported(f"{path}.protocol", protocol, _PROTOCOLS))
    return causes


def validate_replication_controller(rc: Obj) -> list[Cause]:
    """ValidateReplicationController: a non-negative replica count and a selector its template's labels match."""
    causes = validate_metadata(rc, namespaced=True)
    spec = _dict(rc.get("spec"))
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        causes.append(invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    selector = _dict(spec.get("selector"))
    if not selector:
        causes.append(required("spec.selector"))
    template = spec.get("template")
    if isinstance(template, dict):
        labels = _dict(_dict(template.get("metadata")).get("labels"))
        if selector and any(labels.get(k) != v for k, v in selector.items()):
            causes.append(
                invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")
            )
    elif isinstance(replicas, int) and replicas > 0:
        causes.append(required("spec.template"))
    return causes


def validate_csi_driver(driver: Obj) -> list[Cause]:
    """ValidateCSIDriver: the name (the driver's) and the modes."""
    causes = validate_metadata(driver, namespaced=False)
    for i, mode in enumerate(_list(_dict(driver.get("spec")).get("volumeLifecycleModes"))):
        if mode not in ("Persistent", "Ephemeral"):
            causes.append(not_supported(f"spec.volumeLifecycleModes[{i}]", mode, ["Ephemeral", "Persistent"]))
    return causes


def validate_csi_storage_capacity(capacity: Obj) -> list[Cause]:
    """ValidateCSIStorageCapacity: a storage class name."""
    causes = validate_metadata(capacity, namespaced=True)
    if not capacity.get("storageClassName"):
        causes.append(required("storageClassName"))
    return causes


def validate_volume_attachment(attachment: Obj) -> list[Cause]:
    """ValidateVolumeAttachment: an attacher, a node and exactly one source."""
    causes = validate_metadata(attachment, namespaced=False)
    spec = _dict(attachment.get("spec"))
    for field in ("attacher", "nodeName"):
        if not spec.get(field):
            causes.append(required(f"spec.{field}"))
    source = _dict(spec.get("source"))
    given = [k for k in ("persistentVolumeName", "inlineVolumeSpec") if source.get(k)]
    if len(given) != 1:
        causes.append(forbidden("spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    return causes


def validate_endpoint_slice(slice_: Obj) -> list[Cause]:
    """ValidateEndpointSlice: a supported address type, each endpoint with addresses."""
    causes = validate_metadata(slice_, namespaced=True)
    address_type = slice_.get("addressType") or ""
    if not address_type:
        causes.append(required("addressType"))
    elif address_type not in ("FQDN", "IPv4", "IPv6"):
        causes.append(not_supported("addressType", address_type, ["FQDN", "IPv4", "IPv6"]))
    for i, endpoint in enumerate(_list(slice_.get("endpoints"))):
        if not _list(_dict(endpoint).get("addresses")):
            causes.append(required(f"endpoints[{i}].addresses", "must contain at least 1 address"))
    return causes


def _validate_rules(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(_list(obj.get("rules"))):
        if not _list(_dict(rule).get("verbs")):
            causes.append(required(f"rules[{i}].verbs", "verbs must contain at least one value"))
    return causes


def validate_role(role: Obj) -> list[Cause]:
    """ValidateRole: each rule has verbs."""
    return [*validate_metadata(role, namespaced=True), *_validate_rules(role)]


def validate_cluster_role(role: Obj) -> list[Cause]:
    """ValidateClusterRole: each rule has verbs."""
    return [*validate_metadata(role, namespaced=False), *_validate_rules(role)]


def _validate_binding(binding: Obj, *, namespaced: bool) -> list[Cause]:
    causes = validate_metadata(binding, namespaced=namespaced)
    ref = _dict(binding.get("roleRef"))
    kinds = ["ClusterRole", "Role"] if namespaced else ["ClusterRole"]
    if ref.get("apiGroup") != _RBAC_GROUP:
        causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), [_RBAC_GROUP]))
    if ref.get("kind") not in kinds:
        causes.append(not_supported("roleRef.kind", ref.get("kind", ""), kinds))
    if not ref.get("name"):
        causes.append(required("roleRef.name"))
    for i, subject in enumerate(_list(binding.get("subjects"))):
        subject = _dict(subject)
        path = f"subjects[{i}]"
        if not subject.get("name"):
            causes.append(required(f"{path}.name"))
        kind = subject.get("kind")
        if kind not in ("Group", "ServiceAccount", "User"):
            causes.append(not_supported(f"{path}.kind", kind or "", ["Group", "ServiceAccount", "User"]))
        elif kind == "ServiceAccount" and not namespaced and not subject.get("namespace"):
            causes.append(required(f"{path}.namespace"))
    return causes


def validate_role_binding(binding: Obj) -> list[Cause]:
    """ValidateRoleBinding: a reference to a Role or ClusterRole, known subject kinds."""
    return _validate_binding(binding, namespaced=True)


def validate_cluster_role_binding(binding: Obj) -> list[Cause]:
    """ValidateClusterRoleBinding: a reference to a ClusterRole, known subject kinds, namespaced service accounts."""
    return _validate_binding(binding, namespaced=False)


def _binding_update(validate: Callable[[Obj], list[Cause]]) -> Callable[[Obj, Obj], list[Cause]]:
    def check(new: Obj, old: Obj) -> list[Cause]:
        causes = validate(new)
        if new.get("roleRef") != old.get("roleRef"):
            causes.append(invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
        return causes

    return check


VALIDATORS: dict[str, Callable[[Obj], list[Cause]]] = {
    "ConfigMap": validate_config_map,
    "Secret": validate_secret,
    "ServiceAccount": validate_namespaced,
    "Service": validate_service,
    "Endpoints": validate_namespaced,
    "ReplicationController": validate_replication_controller,
    "CSIDriver": validate_csi_driver,
    "CSIStorageCapacity": validate_csi_storage_capacity,
    "VolumeAttachment": validate_volume_attachment,
    "EndpointSlice": validate_endpoint_slice,
    "Role": validate_role,
    "ClusterRole": validate_cluster_role,
    "RoleBinding": validate_role_binding,
    "ClusterRoleBinding": validate_cluster_role_binding,
}
UPDATE_VALIDATORS: dict[str, Callable[[Obj, Obj], list[Cause]]] = {
    "RoleBinding": _binding_update(validate_role_binding),
    "ClusterRoleBinding": _binding_update(validate_cluster_role_binding),
}
core.VALIDATORS.update(VALIDATORS)
core.UPDATE_VALIDATORS.update(UPDATE_VALIDATORS)
