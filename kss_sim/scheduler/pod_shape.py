"""Stored Pods whose fields have the wrong types (issue #35): found before the engine reads them.

kube-apiserver decodes every Pod into Go structs, so kube-scheduler never meets ``ownerReferences: "x"``; kss keeps
JSON. ``pod_defect`` checks the type of every pod field the engine reads. A pending pod with a malformed field gets
an Error attempt (``Scheduler.schedule_one``) and backs off; a bound one is left out of its node's accounting
(``SchedulerCache.add_pod``), as a pod kube-scheduler's informer could not decode never reaches its cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kss_sim.kube.quantity import is_valid_quantity
from kss_sim.scheduler.node_shape import kind_of

# A check returns None, or the path below the value checked ("" for the value itself, ".key", "[0].name") and what
# is wrong there.
_Problem = tuple[str, str] | None
# The PodInfo memo key of ``pod_defect``'s answer (a pod's object never changes under one PodInfo).
POD_DEFECT_MEMO = "kss:pod-defect"
_Check = Callable[[Any], _Problem]


def _string(value: Any) -> _Problem:
    return None if isinstance(value, str) else ("", f"must be a string, not {kind_of(value)}")


def _integer(value: Any) -> _Problem:
    ok = isinstance(value, int) and not isinstance(value, bool)
    return None if ok else ("", f"must be an integer, not {kind_of(value)}")


def _boolean(value: Any) -> _Problem:
    return None if isinstance(value, bool) else ("", f"must be a boolean, not {kind_of(value)}")


def _object(value: Any) -> _Problem:
    return None if isinstance(value, dict) else ("", f"must be an object, not {kind_of(value)}")


def _string_map(value: Any) -> _Problem:
    if not isinstance(value, dict):
        return "", f"must be an object, not {kind_of(value)}"
    for k, v in value.items():
        if not isinstance(v, str):
            return f".{k}", f"must be a string, not {kind_of(v)}"
    return None


def _quantities(value: Any) -> _Problem:
    if not isinstance(value, dict):
        return "", f"must be an object, not {kind_of(value)}"
    for name, quantity in value.items():
        if not is_valid_quantity(quantity):
            return f".{name}", f"not a quantity: {quantity!r}"
    return None


def _fields(**checks: _Check) -> _Check:
    """An object whose named fields, when set, pass their checks."""

    def check(value: Any) -> _Problem:
        if not isinstance(value, dict):
            return "", f"must be an object, not {kind_of(value)}"
        # The fields the object sets (a few of the checks' dozens); only when one is wrong, the checks in their
        # order, so the problem reported is the first of them.
        for field, v in value.items():
            field_check = checks.get(field)
            if field_check is not None and v is not None and field_check(v) is not None:
                break
        else:
            return None
        for field, field_check in checks.items():
            v = value.get(field)
            if v is not None:
                problem = field_check(v)
                if problem is not None:
                    return f".{field}{problem[0]}", problem[1]
        return None

    return check


def _array(item: _Check) -> _Check:
    def check(value: Any) -> _Problem:
        if not isinstance(value, list):
            return "", f"must be an array, not {kind_of(value)}"
        for i, v in enumerate(value):
            problem = item(v) if v is not None else ("", "must not be null")
            if problem is not None:
                return f"[{i}]{problem[0]}", problem[1]
        return None

    return check


_CONTAINER = _fields(
    name=_string,
    image=_string,
    restartPolicy=_string,
    resources=_fields(requests=_quantities, limits=_quantities),
    ports=_array(_fields(hostPort=_integer, containerPort=_integer, protocol=_string, hostIP=_string)),
)
_CONTAINER_STATUS = _fields(name=_string, resources=_fields(requests=_quantities, limits=_quantities))
_POD = _fields(
    metadata=_fields(
        name=_string,
        namespace=_string,
        uid=_string,
        labels=_string_map,
        annotations=_string_map,
        ownerReferences=_array(_fields(kind=_string, name=_string, uid=_string, controller=_boolean)),
    ),
    spec=_fields(
        nodeName=_string,
        schedulerName=_string,
        priority=_integer,
        priorityClassName=_string,
        preemptionPolicy=_string,
        nodeSelector=_string_map,
        affinity=_fields(nodeAffinity=_object, podAffinity=_object, podAntiAffinity=_object),
        tolerations=_array(
            _fields(key=_string, operator=_string, value=_string, effect=_string, tolerationSeconds=_integer)
        ),
        containers=_array(_CONTAINER),
        initContainers=_array(_CONTAINER),
        overhead=_quantities,
        resources=_fields(requests=_quantities, limits=_quantities),
        volumes=_array(_fields(name=_string, persistentVolumeClaim=_fields(claimName=_string))),
        topologySpreadConstraints=_array(
            _fields(maxSkew=_integer, topologyKey=_string, whenUnsatisfiable=_string, labelSelector=_object)
        ),
        schedulingGates=_array(_fields(name=_string)),
        resourceClaims=_array(_object),
    ),
    status=_fields(
        nominatedNodeName=_string,
        conditions=_array(_fields(type=_string, status=_string, reason=_string)),
        containerStatuses=_array(_CONTAINER_STATUS),
        initContainerStatuses=_array(_CONTAINER_STATUS),
        allocatedResources=_quantities,
    ),
)


def pod_defect(pod: Any) -> str | None:
    """What is wrong with a stored pod (``spec.tolerations: [0].key: must be a string, not number``), or None."""
    problem = _POD(pod)
    if problem is None:
        return None
    path, what = problem
    return f"pod has a malformed object: {path.lstrip('.')}: {what}" if path else f"pod {what}"
