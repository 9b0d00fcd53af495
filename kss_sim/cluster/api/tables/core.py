"""Server-side ``meta.k8s.io/v1`` Table output: the columns kubectl prints, as kube-apiserver's printers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from kss_sim.cluster.crd.kinds import CustomKindInfo
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.kube.objects import Obj

Column = tuple[str, str, int, str]  # name, type, priority, description
NONE = "<none>"


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: the AGE column format (``45s``, ``5m10s``, ``3h``, ``12d``)."""
    if seconds < -1:
        return "<invalid>"
    s = int(max(seconds, 0))
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{hours // (24 * 365)}y"


def _age(obj: Obj, now: datetime) -> str:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    return _since(ts, now)


def _since(ts: Any, now: datetime) -> str:
    if not ts:
        return "<unknown>"
    try:
        created = datetime.strptime(str(ts), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    return human_duration((now - created).total_seconds())


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _pod_status(pod: Obj) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    if (pod.get("spec") or {}).get("schedulingGates"):
        reason = "SchedulingGated"
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_row(pod: Obj, now: datetime) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    total = len(spec.get("containers") or [])
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    gates = spec.get("readinessGates") or []
    gates_cell = NONE
    if gates:
        true_types = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
        gates_cell = f"{sum(1 for g in gates if g.get('conditionType') in true_types)}/{len(gates)}"
    return [
        _name(pod),
        f"{ready}/{total}",
        _pod_status(pod),
        str(restarts),
        _age(pod, now),
        status.get("podIP") or NONE,
        spec.get("nodeName") or NONE,
        status.get("nominatedNodeName") or NONE,
        gates_cell,
    ]


_NODE_CONDITIONS = ("Ready",)


def _node_row(node: Obj, now: datetime) -> list[Any]:
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    shown = []
    for ctype in _NODE_CONDITIONS:
        cond = conditions.get(ctype)
        if cond is not None:
            shown.append(ctype if cond.get("status") == "True" else f"Not{ctype}")
    if not shown:
        shown.append("Unknown")
    if spec.get("unschedulable"):
        shown.append("SchedulingDisabled")
    labels = (node.get("metadata") or {}).get("labels") or {}
    roles = sorted(
        {k.partition("/")[2] for k in labels if k.startswith("node-role.kubernetes.io/") and k.partition("/")[2]}
        | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set())
    )
    info = status.get("nodeInfo") or {}
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((a.get("address") for a in addresses if a.get("type") == kind), None) or NONE

    return [
        _name(node),
        ",".join(shown),
        ",".join(roles) or NONE,
        _age(node, now),
        info.get("kubeletVersion") or "",
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _event_row(ev: Obj, now: datetime) -> list[Any]:
    involved = ev.get("involvedObject") or {}
    last = ev.get("lastTimestamp") or ev.get("eventTime") or (ev.get("metadata") or {}).get("creationTimestamp")
    return [
        _since(last, now),
        ev.get("type") or "",
        ev.get("reason") or "",
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        ev.get("message") or "",
    ]


def _q(value: Any) -> str:
    return NONE if value is None else str(value)


_ACCESS_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def _access_modes(modes: Any) -> str:
    """GetAccessModesAsString: the short forms, in a fixed order, each once."""
    given = set(modes or [])
    return ",".join(short for mode, short in _ACCESS_MODES if mode in given)


def _pvc_row(pvc: Obj, now: datetime) -> list[Any]:
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    volume = spec.get("volumeName") or ""
    # Capacity and access modes are the bound volume's: empty while the claim is unbound.
    capacity = str((status.get("capacity") or {}).get("storage") or "") if volume else ""
    modes = _access_modes(status.get("accessModes")) if volume else ""
    return [
        _name(pvc),
        status.get("phase", ""),
        volume,
        capacity,
        modes,
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(pvc, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _pv_row(pv: Obj, now: datetime) -> list[Any]:
    spec, status = pv.get("spec") or {}, pv.get("status") or {}
    ref = spec.get("claimRef") or {}
    phase = "Terminating" if (pv.get("metadata") or {}).get("deletionTimestamp") else status.get("phase", "")
    return [
        _name(pv),
        str((spec.get("capacity") or {}).get("storage") or ""),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        phase,
        f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else "",
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason") or "",
        _age(pv, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _field(obj: Obj, part: str, name: str) -> Any:
    """A custom resource column's JSONPath value (``.status.phase``), None (an empty cell) when absent."""
    section = obj.get(part)
    return section.get(name) if isinstance(section, dict) else None


def _pod_group_row(pg: Obj, now: datetime) -> list[Any]:
    return [
        _name(pg),
        _field(pg, "status", "phase"),
        _field(pg, "spec", "minMember"),
        _field(pg, "status", "running"),
        _field(pg, "status", "succeeded"),
        _field(pg, "status", "failed"),
        _age(pg, now),
    ]


_COLUMNS: dict[str, tuple[list[Column], Callable[[Obj, datetime], list[Any]]]] = {
    "Pod": (
        [
            ("Name", "string", 0, "Name must be unique within a namespace."),
            ("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
            ("Status", "string", 0, "The aggregate status of the containers in this pod."),
            ("Restarts", "string", 0, "The number of times the containers in this pod have been restarted."),
            ("Age", "string", 0, "CreationTimestamp of the object."),
            ("IP", "string", 1, "IP address allocated to the pod."),
            ("Node", "string", 1, "NodeName the pod is bound to."),
            ("Nominated Node", "string", 1, "Node the pod is nominated to by preemption."),
            ("Readiness Gates", "string", 1, "Readiness gates of the pod."),
        ],
        _pod_row,
    ),
    "Node": (
        [
            ("Name", "string", 0, "Name must be unique."),
            ("Status", "string", 0, "The status of the node."),
            ("Roles", "string", 0, "The roles of the node."),
            ("Age", "string", 0, "CreationTimestamp of the object."),
            ("Version", "string", 0, "Kubelet Version reported by the node."),
            ("Internal-IP", "string", 1, "List of addresses reachable to the node."),
            ("External-IP", "string", 1, "List of addresses reachable to the node."),
            ("OS-Image", "string", 1, "OS Image reported by the node."),
            ("Kernel-Version", "string", 1, "Kernel Version reported by the node."),
            ("Container-Runtime", "string", 1, "Container Runtime Version reported by the node."),
        ],
        _node_row,
    ),
    "Namespace": (
        [
            ("Name", "string", 0, "Name must be unique."),
            ("Status", "string", 0, "The status of the namespace."),
            ("Age", "string", 0, "CreationTimestamp of the object."),
        ],
        lambda o, now: [_name(o), (o.get("status") or {}).get("phase", ""), _age(o, now)],
    ),
    "Event": (
        [
            ("Last Seen", "string", 0, "Time when last event occurred."),
            ("Type", "string", 0, "Type of this event."),
            ("Reason", "string", 0, "Reason why this event was generated."),
            ("Object", "string", 0, "The object this event is about."),
            ("Message", "string", 0, "A human-readable description of the status of this operation."),
        ],
        _event_row,
    ),
    "PriorityClass": (
        [
            ("Name", "string", 0, "Name must be unique."),
            ("Value", "integer", 0, "The value of this priority class."),
            ("Global-Default", "boolean", 0, "Whether this is the default priority class."),
            ("Age", "string", 0, "CreationTimestamp of the object."),
            ("PreemptionPolicy", "string", 0, "The preemption policy of this class."),
        ],
        lambda o, now: [
            _name(o),
            o.get("value", 0),
            bool(o.get("globalDefault")),
            _age(o, now),
            o.get("preemptionPolicy", ""),
        ],
    ),
    "StorageClass": (
        [
            ("Name", "string", 0, "Name must be unique."),
            ("Provisioner", "string", 0, "The provisioner of the class."),
            ("ReclaimPolicy", "string", 0, "Reclaim policy of volumes of this class."),
            ("VolumeBindingMode", "string", 0, "When volumes are bound."),
            ("AllowVolumeExpansion", "string", 0, "Whether volumes may grow."),
            ("Age", "string", 0, "CreationTimestamp of the object."),
        ],
        lambda o, now: [
            _name(o),
            o.get("provisioner", ""),
            o.get("reclaimPolicy", ""),
            o.get("volumeBindingMode", ""),
            str(bool(o.get("allowVolumeExpansion"))).lower(),
            _age(o, now),
        ],
    ),
    "PersistentVolumeClaim": (
        [
            ("Name", "string", 0, "Name must be unique within a namespace."),
            ("Status", "string", 0, "Phase of the claim."),
            ("Volume", "string", 0, "The bound volume."),
            ("Capacity", "string", 0, "Capacity of the bound volume."),
            ("Access Modes", "string", 0, "Access modes of the bound volume."),
            ("StorageClass", "string", 0, "Storage class of the claim."),
            ("VolumeAttributesClass", "string", 0, "Volume attributes class of the claim."),
            ("Age", "string", 0, "CreationTimestamp of the object."),
            ("VolumeMode", "string", 1, "Volume mode of the claim."),
        ],
        _pvc_row,
    ),
    "PersistentVolume": (
        [
            ("Name", "string", 0, "Name must be unique."),
            ("Capacity", "string", 0, "Capacity of the volume."),
            ("Access Modes", "string", 0, "Access modes of the volume."),
            ("Reclaim Policy", "string", 0, "What happens to the volume when its claim is released."),
            ("Status", "string", 0, "Phase of the volume."),
            ("Claim", "string", 0, "The claim bound to the volume."),
            ("StorageClass", "string", 0, "Storage class of the volume."),
            ("VolumeAttributesClass", "string", 0, "Volume attributes class of the volume."),
            ("Reason", "string", 0, "Why the volume is in this phase."),
            ("Age", "string", 0, "CreationTimestamp of the object."),
            ("VolumeMode", "string", 1, "Volume mode of the volume."),
        ],
        _pv_row,
    ),
    "PodDisruptionBudget": (
        [
            ("Name", "string", 0, "Name must be unique within a namespace."),
            ("Min Available", "string", 0, "The minimum number of pods that must be available."),
            ("Max Unavailable", "string", 0, "The maximum number of pods that may be unavailable."),
            ("Allowed Disruptions", "integer", 0, "Number of pod disruptions currently allowed."),
            ("Age", "string", 0, "CreationTimestamp of the object."),
        ],
        lambda o, now: [
            _name(o),
            "N/A" if (o.get("spec") or {}).get("minAvailable") is None else str(o["spec"]["minAvailable"]),
            "N/A" if (o.get("spec") or {}).get("maxUnavailable") is None else str(o["spec"]["maxUnavailable"]),
            (o.get("status") or {}).get("disruptionsAllowed", 0),
            _age(o, now),
        ],
    ),
    # The PodGroup CRD's additionalPrinterColumns (scheduler-plugins), as kube-apiserver renders a custom resource:
    # a missing value is an empty cell, a ``date`` column an age.
    "PodGroup": (
        [
            ("Name", "string", 0, "Name must be unique within a namespace."),
            ("Phase", "string", 0, "Current phase of PodGroup."),
            ("MinMember", "integer", 0, "MinMember defines the minimal number of members/tasks to run the pod group."),
            ("Running", "integer", 0, "The number of actively running pods."),
            ("Succeeded", "integer", 0, "The number of pods which reached phase Succeeded."),
            ("Failed", "integer", 0, "The number of pods which reached phase Failed."),
            ("Age", "date", 0, "Age is the time PodGroup was created."),
        ],
        _pod_group_row,
    ),
}

_GENERIC: tuple[list[Column], Callable[[Obj, datetime], list[Any]]] = (
    [("Name", "string", 0, "Name must be unique."), ("Age", "string", 0, "CreationTimestamp of the object.")],
    lambda o, now: [_name(o), _age(o, now)],
)


def _row_object(info: KindInfo, obj: Obj, include_object: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(
    info: KindInfo,
    objects: Iterable[Obj],
    resource_version: int | None,
    *,
    include_object: str = "Metadata",
    continue_token: str = "",
    remaining: int | None = None,
    now: datetime | None = None,
) -> Obj:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (all columns; kubectl hides priority>0 unless ``-o wide``)."""
    if isinstance(info, CustomKindInfo):
        columns, row = custom.columns(info)
    else:
        columns, row = _COLUMNS.get(info.kind, _GENERIC)
    moment = now or datetime.now(UTC)
    meta: Obj = {}
    if resource_version is not None:
        meta["resourceVersion"] = str(resource_version)
    if continue_token:
        meta["continue"] = continue_token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    rows = []
    for obj in objects:
        entry: Obj = {"cells": row(obj, moment)}
        shown = _row_object(info, obj, include_object)
        if shown is not None:
            entry["object"] = shown
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": [
            {
                "name": name,
                "type": typ,
                "format": "name" if name == "Name" else "",
                "description": desc,
                "priority": prio,
            }
            for name, typ, prio, desc in columns
        ],
        "rows": rows,
    }


def register(columns: dict[str, tuple[list[Column], Callable[[Obj, datetime], list[Any]]]]) -> None:
    """Add the columns of more kinds (a module of printers per family of kinds registers its own)."""
    _COLUMNS.update(columns)


# The workload kinds' and the DRA kinds' printers live in their own modules, which register them here.
from kss_sim.cluster.api.tables import autoscaling, custom, dra, stored, workloads  # noqa: E402, F401
