"""Table columns of HorizontalPodAutoscalers as kube-apiserver's printer fills them (printHorizontalPodAutoscaler):
the target as ``Kind/name``, each metric's current value against its target (two shown, then ``+ N more...``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kss_sim.cluster.api.tables import core as tables
from kss_sim.cluster.api.tables.core import Column, _age, _name
from kss_sim.kube.objects import Obj

_SHOWN_METRICS = 2
_UNKNOWN = "<unknown>"
# Quantity.String() of a nil quantity: what the printer shows for a current (or target) value a status (or spec)
# leaves out where it reads the value without checking it.
_NIL = "<nil>"


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _quantity(section: Obj, key: str) -> str:
    value = section.get(key)
    return _NIL if value is None else str(value)


def _current(status: Obj | None, key: str, *, checked: bool) -> str:
    """The metric's current ``key`` value: ``<unknown>`` without a status for it (or, where the printer checks the
    value too, without the value); ``<nil>`` where it reads a value the status does not have."""
    if status is None:
        return _UNKNOWN
    now = _dict(status.get("current"))
    if checked and now.get(key) is None:
        return _UNKNOWN
    return _quantity(now, key)


def _resource_target(spec: Obj, status: Obj | None) -> str:
    """A Resource or ContainerResource metric: ``name: current/target``, a raw average value or a utilization."""
    target = _dict(spec.get("target"))
    if target.get("averageValue") is not None:
        shown = f"{_current(status, 'averageValue', checked=False)}/{target['averageValue']}"
    else:
        utilization = _dict(_dict(status).get("current")).get("averageUtilization")
        value = _UNKNOWN if status is None or utilization is None else f"{utilization}%"
        goal = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
        shown = f"{value}/{goal}"
    return f"{spec.get('name')}: {shown}"


def _valued_target(spec: Obj, status: Obj | None, *, pods: bool) -> str:
    """An Object, Pods or External metric: its value or average value against the target's (``(avg)`` for an
    Object's or External's average; a Pods metric has only averages)."""
    target = _dict(spec.get("target"))
    if pods:
        return f"{_current(status, 'averageValue', checked=False)}/{_quantity(target, 'averageValue')}"
    if target.get("averageValue") is not None:
        return f"{_current(status, 'averageValue', checked=True)}/{target['averageValue']} (avg)"
    return f"{_current(status, 'value', checked=False)}/{_quantity(target, 'value')}"


_SOURCES = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}


def format_targets(specs: list[Any], statuses: list[Any]) -> str:
    """formatHPAMetrics: ``cpu: 90%/50%`` per metric (the status at the same index gives the current value), the
    first two, then `` + N more...``; ``<none>`` without any."""
    if not specs:
        return "<none>"
    shown: list[str] = []
    for i, metric in enumerate(specs):
        metric = _dict(metric)
        key = _SOURCES.get(str(metric.get("type")), "")
        found = _dict(statuses[i]).get(key) if key and i < len(statuses) else None
        status = found if isinstance(found, dict) else None
        source = _dict(metric.get(key))
        if key in ("resource", "containerResource"):
            shown.append(_resource_target(source, status))
        elif key:
            shown.append(_valued_target(source, status, pods=key == "pods"))
        else:
            shown.append("<unknown type>")
    more = len(shown) - _SHOWN_METRICS
    return ", ".join(shown[:_SHOWN_METRICS]) + (f" + {more} more..." if more > 0 else "")


def _hpa_row(hpa: Obj, now: datetime) -> list[Any]:
    spec, status = _dict(hpa.get("spec")), _dict(hpa.get("status"))
    ref = _dict(spec.get("scaleTargetRef"))
    minimum = spec.get("minReplicas")
    return [
        _name(hpa),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        format_targets(list(spec.get("metrics") or []), list(status.get("currentMetrics") or [])),
        "<unset>" if minimum is None else str(minimum),
        spec.get("maxReplicas", 0),
        status.get("currentReplicas", 0),
        _age(hpa, now),
    ]


_COLUMNS: list[Column] = [
    ("Name", "string", 0, "Name must be unique within a namespace."),
    ("Reference", "string", 0, "scaleTargetRef points to the target resource to scale, and is used to the pods for "
     "which metrics should be collected, as well as to actually change the replica count."),
    ("Targets", "string", 0, "metrics contains the specifications for which to use to calculate the desired replica "
     "count (the maximum replica count across all metrics will be used)."),
    ("MinPods", "string", 0, "minReplicas is the lower limit for the number of replicas to which the autoscaler can "
     "scale down.  It defaults to 1 pod."),
    ("MaxPods", "integer", 0, "maxReplicas is the upper limit for the number of replicas to which the autoscaler can "
     "scale up. It cannot be less that minReplicas."),
    ("Replicas", "integer", 0, "currentReplicas is current number of replicas of pods managed by this autoscaler, as "
     "last seen by the autoscaler."),
    ("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object was "
     "created."),
]  # fmt: skip

tables.register({"HorizontalPodAutoscaler": (_COLUMNS, _hpa_row)})
