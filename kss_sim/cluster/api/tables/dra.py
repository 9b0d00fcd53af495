"""Table columns of the resource.k8s.io/v1 kinds, as kube-apiserver v1.35's printers (pkg/printers/internalversion)
render them for ``kubectl get``. Registered into ``tables``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from kss_sim.cluster.api.tables import core as tables
from kss_sim.cluster.api.tables.core import Column, _age, _name
from kss_sim.kube.objects import Obj

_NAME: Column = ("Name", "string", 0, "Name must be unique within a namespace. Is required when creating resources, "
                 "although some resources may allow a client to request the generation of an appropriate name "
                 "automatically. Name is primarily intended for creation idempotence and configuration definition. "
                 "Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/"
                 "names#names")  # fmt: skip
_AGE: Column = ("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object "
                "was created.")  # fmt: skip


def _section(obj: Any, key: str) -> Obj:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def resource_claim_state(claim: Obj) -> str:
    """resourceClaimState: ``deleted``, then ``pending`` or ``allocated`` with ``reserved`` while pods use it."""
    deleting = bool(_section(claim, "metadata").get("deletionTimestamp"))
    status = _section(claim, "status")
    states = ["deleted"] if deleting else []
    if not isinstance(status.get("allocation"), dict):
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _name_age_row(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), _age(obj, now)]


def _claim_row(claim: Obj, now: datetime) -> list[Any]:
    return [_name(claim), resource_claim_state(claim), _age(claim, now)]


def _slice_row(resource_slice: Obj, now: datetime) -> list[Any]:
    spec = _section(resource_slice, "spec")
    node = spec.get("nodeName")
    return [
        _name(resource_slice),
        str(node) if node else "",
        str(spec.get("driver") or ""),
        str(_section(spec, "pool").get("name") or ""),
        _age(resource_slice, now),
    ]


COLUMNS: dict[str, tuple[list[Column], Callable[[Obj, datetime], list[Any]]]] = {
    "DeviceClass": ([_NAME, _AGE], _name_age_row),
    "ResourceClaim": (
        [_NAME, ("State", "string", 0, "A summary of the current state (allocated, pending, reserved, etc.)."), _AGE],
        _claim_row,
    ),
    "ResourceClaimTemplate": ([_NAME, _AGE], _name_age_row),
    "ResourceSlice": (
        [
            _NAME,
            ("Node", "string", 0, "NodeName identifies the node which provides the resources in this pool. A field "
             "selector can be used to list only ResourceSlice objects belonging to a certain node."),
            ("Driver", "string", 0, "Driver identifies the DRA driver providing the capacity information. A field "
             "selector can be used to list only ResourceSlice objects with a certain driver name."),
            ("Pool", "string", 0, "Name is used to identify the pool. For node-local devices, this is often the node "
             "name, but this is not required."),
            _AGE,
        ],
        _slice_row,
    ),
}  # fmt: skip

tables.register(COLUMNS)
