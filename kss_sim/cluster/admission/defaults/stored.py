"""Defaulting of the kinds kss stores without acting on them (SetDefaults_* of core/v1 and storage/v1), so they
read back as from kube-apiserver; allocation (a Service's cluster IP and node ports) is not done."""

from __future__ import annotations

import base64
from collections.abc import Callable

from kss_sim.cluster.admission.defaults.core import default_pod_spec
from kss_sim.kube.objects import Obj


def _dict(parent: Obj, key: str) -> Obj:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def default_service(obj: Obj) -> None:
    """SetDefaults_Service: ClusterIP, no session affinity, TCP ports targeting their own number, Cluster traffic
    policies."""
    spec = _dict(obj, "spec")
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
    if spec["type"] in ("NodePort", "LoadBalancer") and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec["type"] != "ExternalName" and not spec.get("internalTrafficPolicy"):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    status = _dict(obj, "status")
    _dict(status, "loadBalancer")


def default_replication_controller(obj: Obj) -> None:
    """SetDefaults_ReplicationController: the selector and labels from the template's labels, one replica."""
    spec = _dict(obj, "spec")
    template = spec.get("template")
    if isinstance(template, dict):
        labels = _dict(template, "metadata").get("labels") or {}
        if labels and not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _dict(obj, "metadata")
        if labels and not meta.get("labels"):
            meta["labels"] = dict(labels)
        default_pod_spec(_dict(template, "spec"))
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    status = _dict(obj, "status")
    status.setdefault("replicas", 0)


def default_csi_driver(obj: Obj) -> None:
    """SetDefaults_CSIDriver: attach required, no pod info, no capacity tracking, Persistent volumes, the fsGroup
    policy of volumes with an fsType, no republishing, no SELinux mount."""
    spec = _dict(obj, "spec")
    for key, value in (
        ("attachRequired", True),
        ("podInfoOnMount", False),
        ("storageCapacity", False),
        ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
        ("requiresRepublish", False),
        ("seLinuxMount", False),
    ):
        if spec.get(key) is None:
            spec[key] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def default_secret(obj: Obj) -> None:
    """SetDefaults_Secret: Opaque; ``stringData`` merged into ``data`` (base64, over the same keys there) and not
    stored, as the v1 to internal conversion does (it is write-only)."""
    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = dict(obj.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


def default_volume_attachment(obj: Obj) -> None:
    """A VolumeAttachment's status is a struct whose ``attached`` has no omitempty: always rendered."""
    _dict(obj, "spec")
    _dict(obj, "status").setdefault("attached", False)


DEFAULTERS: dict[str, Callable[[Obj], None]] = {
    "Service": default_service,
    "ReplicationController": default_replication_controller,
    "CSIDriver": default_csi_driver,
    "Secret": default_secret,
    "VolumeAttachment": default_volume_attachment,
}
# Kinds whose spec is a struct (always rendered).
WITH_SPEC = frozenset(DEFAULTERS) - {"Secret"}
