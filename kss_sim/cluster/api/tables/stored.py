"""Table columns of the kinds kss stores without acting on them (configuration, services, storage attachments,
RBAC), as kube-apiserver's printers fill them; Role and ClusterRole have none there, so its default table."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from kss_sim.cluster.api.tables import core as tables
from kss_sim.cluster.api.tables.core import NONE, Column, _age, _name
from kss_sim.kube.objects import Obj

_NAME: Column = ("Name", "string", 0, "Name must be unique within a namespace.")
_AGE: Column = ("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object "
                "was created.")  # fmt: skip
_MORE = 3  # addresses shown before " + N more..."


def _section(obj: Any, *path: str) -> Obj:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else {}


def _items(obj: Any, key: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


def _size(obj: Obj, *keys: str) -> int:
    return sum(len(value) for key in keys if isinstance(value := obj.get(key), dict | list))


def _shortened(values: list[str]) -> str:
    if not values:
        return ""
    shown = ",".join(values[:_MORE])
    return shown + (f" + {len(values) - _MORE} more..." if len(values) > _MORE else "")


def _map_selector(selector: Any) -> str:
    if not isinstance(selector, dict) or not selector:
        return NONE
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def _service_external_ip(spec: Obj, status: Obj) -> str:
    external = [str(ip) for ip in _items(spec, "externalIPs")]
    kind = spec.get("type") or "ClusterIP"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    if kind == "LoadBalancer":
        balancer = _section(status, "loadBalancer")
        ingress = [str(i.get("ip") or i.get("hostname") or "") for i in _items(balancer, "ingress")]
        found = [ip for ip in [*ingress, *external] if ip]
        return _shortened(found) if found else "<pending>"
    return ",".join(external) if external else NONE


def _service_row(svc: Obj, now: datetime) -> list[Any]:
    spec = _section(svc, "spec")
    ports = []
    for port in _items(spec, "ports"):
        node_port = port.get("nodePort")
        number = f"{port.get('port')}:{node_port}" if node_port else f"{port.get('port')}"
        ports.append(f"{number}/{port.get('protocol') or 'TCP'}")
    return [
        _name(svc),
        spec.get("type") or "ClusterIP",
        spec.get("clusterIP") or NONE,
        _service_external_ip(spec, _section(svc, "status")),
        ",".join(ports) or NONE,
        _age(svc, now),
        _map_selector(spec.get("selector")),
    ]


def _endpoints_row(ep: Obj, now: datetime) -> list[Any]:
    shown: list[str] = []
    for subset in _items(ep, "subsets"):
        addresses = [str(a.get("ip", "")) for a in _items(subset, "addresses")]
        ports = _items(subset, "ports")
        for address in addresses:
            shown.extend([f"{address}:{p.get('port')}" for p in ports] if ports else [address])
    return [_name(ep), _shortened(shown) or NONE, _age(ep, now)]


def _replication_controller_row(rc: Obj, now: datetime) -> list[Any]:
    spec, status = _section(rc, "spec"), _section(rc, "status")
    containers = [c for c in _items(_section(spec, "template", "spec"), "containers") if isinstance(c, dict)]
    return [
        _name(rc),
        spec.get("replicas") or 0,
        status.get("replicas") or 0,
        status.get("readyReplicas") or 0,
        _age(rc, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        _map_selector(spec.get("selector")),
    ]


def _csi_driver_row(driver: Obj, now: datetime) -> list[Any]:
    spec = _section(driver, "spec")
    audiences = [str(t.get("audience", "")) for t in _items(spec, "tokenRequests")]
    attach = spec.get("attachRequired")
    return [
        _name(driver),
        True if attach is None else bool(attach),
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        ",".join(audiences) if audiences else "<unset>",
        bool(spec.get("requiresRepublish")),
        ",".join(str(m) for m in _items(spec, "volumeLifecycleModes")),
        _age(driver, now),
    ]


def _endpoint_slice_row(slice_: Obj, now: datetime) -> list[Any]:
    ports = [str(p["port"]) if p.get("port") is not None else "<unset>" for p in _items(slice_, "ports")]
    addresses = [str(a) for e in _items(slice_, "endpoints") for a in _items(e, "addresses")]
    return [
        _name(slice_),
        slice_.get("addressType") or "",
        ",".join(ports) if ports else "<unset>",
        _shortened(addresses) or "<unset>",
        _age(slice_, now),
    ]


def _binding_row(binding: Obj, now: datetime) -> list[Any]:
    ref = _section(binding, "roleRef")
    subjects = [s for s in _items(binding, "subjects") if isinstance(s, dict)]

    def named(kind: str) -> str:
        return ", ".join(str(s.get("name", "")) for s in subjects if s.get("kind") == kind)

    accounts = ", ".join(
        f"{s.get('namespace', '')}/{s.get('name', '')}" for s in subjects if s.get("kind") == "ServiceAccount"
    )
    return [
        _name(binding),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _age(binding, now),
        named("User"),
        named("Group"),
        accounts,
    ]


_BINDING_COLUMNS: list[Column] = [
    _NAME,
    ("Role", "string", 0, "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
     "namespace."),
    _AGE,
    ("Users", "string", 1, "Users in the roleBinding"),
    ("Groups", "string", 1, "Groups in the roleBinding"),
    ("ServiceAccounts", "string", 1, "ServiceAccounts in the roleBinding"),
]  # fmt: skip

# kube-apiserver's default table for kinds without a printer.
_CREATED_AT: tuple[list[Column], Callable[[Obj, datetime], list[Any]]] = (
    [_NAME, ("Created At", "date", 0, "CreationTimestamp is a timestamp representing the server time when this "
             "object was created.")],
    lambda o, now: [_name(o), _section(o, "metadata").get("creationTimestamp") or ""],
)  # fmt: skip

COLUMNS: dict[str, tuple[list[Column], Callable[[Obj, datetime], list[Any]]]] = {
    "ConfigMap": (
        [_NAME, ("Data", "string", 0, "Data contains the configuration data."), _AGE],
        lambda o, now: [_name(o), _size(o, "data", "binaryData"), _age(o, now)],
    ),
    "Secret": (
        [_NAME, ("Type", "string", 0, "Used to facilitate programmatic handling of secret data."),
         ("Data", "string", 0, "Data contains the secret data."), _AGE],
        lambda o, now: [_name(o), o.get("type") or "", _size(o, "data"), _age(o, now)],
    ),
    "ServiceAccount": (
        [_NAME, ("Secrets", "string", 0, "Secrets is a list of the secrets in the same namespace that pods running "
                 "using this ServiceAccount are allowed to use."), _AGE],
        lambda o, now: [_name(o), _size(o, "secrets"), _age(o, now)],
    ),
    "Service": (
        [_NAME, ("Type", "string", 0, "type determines how the Service is exposed."),
         ("Cluster-IP", "string", 0, "clusterIP is the IP address of the service."),
         ("External-IP", "string", 0, "externalIPs is a list of IP addresses for which nodes in the cluster will "
          "also accept traffic for this service."),
         ("Port(s)", "string", 0, "The list of ports that are exposed by this service."), _AGE,
         ("Selector", "string", 1, "Route service traffic to pods with label keys and values matching this "
          "selector.")],
        _service_row,
    ),
    "Endpoints": (
        [_NAME, ("Endpoints", "string", 0, "The set of all endpoints is the union of all subsets."), _AGE],
        _endpoints_row,
    ),
    "ReplicationController": (
        [_NAME, ("Desired", "integer", 0, "Replicas is the number of desired replicas."),
         ("Current", "integer", 0, "Replicas is the most recently observed number of replicas."),
         ("Ready", "integer", 0, "The number of ready replicas for this replication controller."), _AGE,
         ("Containers", "string", 1, "Names of each container in the template."),
         ("Images", "string", 1, "Images referenced by each container in the template."),
         ("Selector", "string", 1, "Selector is a label query over pods that should match the Replicas count.")],
        _replication_controller_row,
    ),
    "CSIDriver": (
        [_NAME, ("AttachRequired", "boolean", 0, "attachRequired indicates this CSI volume driver requires an "
                 "attach operation."),
         ("PodInfoOnMount", "boolean", 0, "podInfoOnMount indicates this CSI volume driver requires additional pod "
          "information during mount operations."),
         ("StorageCapacity", "boolean", 0, "storageCapacity indicates that the CSI volume driver wants pod "
          "scheduling to consider the storage capacity that the driver deployment will report."),
         ("TokenRequests", "string", 0, "tokenRequests indicates the CSI driver needs pods' service account tokens."),
         ("RequiresRepublish", "boolean", 0, "requiresRepublish indicates the CSI driver wants NodePublishVolume "
          "being periodically called."),
         ("Modes", "string", 0, "volumeLifecycleModes defines what kind of volumes this CSI volume driver "
          "supports."), _AGE],
        _csi_driver_row,
    ),
    "CSIStorageCapacity": (
        [_NAME, ("StorageClassName", "string", 0, "storageClassName represents the name of the StorageClass that "
                 "the reported capacity applies to."),
         ("Capacity", "string", 0, "capacity is the value reported by the CSI driver in its GetCapacityResponse.")],
        lambda o, now: [_name(o), o.get("storageClassName") or "", o.get("capacity") or "<unset>"],
    ),
    "VolumeAttachment": (
        [_NAME, ("Attacher", "string", 0, "attacher indicates the name of the volume driver that MUST handle this "
                 "request."),
         ("PV", "string", 0, "persistentVolumeName represents the name of the persistent volume to attach."),
         ("Node", "string", 0, "nodeName represents the node that the volume should be attached to."),
         ("Attached", "boolean", 0, "attached indicates the volume is successfully attached."), _AGE],
        lambda o, now: [
            _name(o),
            _section(o, "spec").get("attacher") or "",
            _section(o, "spec", "source").get("persistentVolumeName") or "",
            _section(o, "spec").get("nodeName") or "",
            bool(_section(o, "status").get("attached")),
            _age(o, now),
        ],
    ),
    "EndpointSlice": (
        [_NAME, ("AddressType", "string", 0, "addressType specifies the type of address carried by this "
                 "EndpointSlice."),
         ("Ports", "string", 0, "ports specifies the list of network ports exposed by each endpoint in this slice."),
         ("Endpoints", "string", 0, "endpoints is a list of unique endpoints in this slice."), _AGE],
        _endpoint_slice_row,
    ),
    "Role": _CREATED_AT,
    "ClusterRole": _CREATED_AT,
    "RoleBinding": (_BINDING_COLUMNS, _binding_row),
    "ClusterRoleBinding": (_BINDING_COLUMNS, _binding_row),
}  # fmt: skip

tables.register(COLUMNS)
