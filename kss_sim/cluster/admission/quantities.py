"""Quantities in their canonical form, as kube-apiserver stores them.

A ``resource.Quantity`` is decoded from whatever the client sent (``64000m``, ``1024Ki``, ``2``) and encoded back
with ``Quantity.String()``: the same number in the shortest exact form of the format it was written in (decimal
SI, binary SI or a decimal exponent). So a node sent with ``cpu: 64000m`` reads back as ``cpu: "64"`` and a
container's ``memory: 1024Ki`` as ``1Mi``. ``canonicalize_quantities`` applies that to every quantity field of the
typed kinds; custom resources (PodGroup) keep what was sent, as kube-apiserver keeps unstructured objects.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from kss_sim.cluster.admission.go_values import quantity_text
from kss_sim.kube.quantity import QuantityError, parse_quantity

_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_NANO = 10**9


def _format_of(text: str) -> str:
    """The format ``ParseQuantity`` infers from the suffix: BinarySI, DecimalExponent or DecimalSI."""
    stripped = text.strip()
    if stripped.endswith(_BINARY_SUFFIXES):
        return "BinarySI"
    tail = stripped.lstrip("+-0123456789.")
    if tail[:1] in ("e", "E"):
        return "DecimalExponent"
    return "DecimalSI"


def _decimal(value: Fraction, exponent_only: bool) -> str:
    negative = value < 0
    # Precision finer than nano is rounded up (away from zero), as ParseQuantity does.
    mantissa = math.ceil(abs(value) * _NANO)
    exponent = -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3  # the exponent becomes a multiple of three, the mantissa grows to match
    mantissa *= 10**shift
    exponent -= shift
    if exponent_only:
        suffix = f"e{exponent}" if exponent else ""
    else:
        suffix = _DECIMAL_SUFFIXES.get(exponent, f"e{exponent}")
    return f"{'-' if negative else ''}{mantissa}{suffix}"


# Pure, and the same few quantities come with every pod of a template: each is worked out once (typed: 1 and 1.0
# are different quantities to render).
@functools.lru_cache(maxsize=4096, typed=True)
def canonical_quantity(raw: str | int | float) -> str:
    """``Quantity.String()`` of ``raw`` (``64000m`` -> ``64``, ``1024Ki`` -> ``1Mi``, ``0.5`` -> ``500m``);
    ``QuantityError`` if it is not a quantity."""
    value = parse_quantity(raw)
    if value == 0:
        return "0"
    fmt = _format_of(raw) if isinstance(raw, str) else "DecimalSI"
    if fmt == "BinarySI":
        # Small or fractional binary values are shown in decimal SI, so nothing is rounded.
        if -1024 < value < 1024 or value.denominator != 1:
            return _decimal(value, exponent_only=False)
        number = abs(int(value))
        power = 0
        while number % 1024 == 0 and power < len(_BINARY_SUFFIXES):
            number //= 1024
            power += 1
        suffix = _BINARY_SUFFIXES[power - 1] if power else ""
        return f"{'-' if value < 0 else ''}{number}{suffix}"
    return _decimal(value, exponent_only=fmt == "DecimalExponent")


def _canonical_map(values: Any) -> None:
    if not isinstance(values, dict):
        return
    for name, raw in list(values.items()):
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            continue
        try:
            values[name] = canonical_quantity(quantity_text(raw))
        except QuantityError:
            continue  # check_decodable has refused what matters; leave the rest as sent


def _canonical_field(parent: Any, key: str) -> None:
    if isinstance(parent, dict):
        raw = parent.get(key)
        if isinstance(raw, str | int | float) and not isinstance(raw, bool):
            with contextlib.suppress(QuantityError):  # left as sent, as the map form above
                parent[key] = canonical_quantity(quantity_text(raw))


def _dicts(items: Any) -> Iterable[dict[str, Any]]:
    return (i for i in items if isinstance(i, dict)) if isinstance(items, list) else ()


def _requirements(resources: Any) -> None:
    if isinstance(resources, dict):
        _canonical_map(resources.get("requests"))
        _canonical_map(resources.get("limits"))


def _claim_spec(spec: Any) -> None:
    if isinstance(spec, dict):
        _requirements(spec.get("resources"))


def canonicalize_pod_spec(spec: Any) -> None:
    """The quantities of a PodSpec: containers' and the pod's resources, overhead, volume sizes."""
    if not isinstance(spec, dict):
        return
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in _dicts(spec.get(field)):
            _requirements(container.get("resources"))
    _requirements(spec.get("resources"))
    _canonical_map(spec.get("overhead"))
    for volume in _dicts(spec.get("volumes")):
        _canonical_field(volume.get("emptyDir"), "sizeLimit")
        ephemeral = volume.get("ephemeral")
        if isinstance(ephemeral, dict) and isinstance(ephemeral.get("volumeClaimTemplate"), dict):
            _claim_spec(ephemeral["volumeClaimTemplate"].get("spec"))


def _template_spec(template: Any) -> None:
    if isinstance(template, dict):
        canonicalize_pod_spec(template.get("spec"))


def _claim(pvc: Any) -> None:
    if not isinstance(pvc, dict):
        return
    _claim_spec(pvc.get("spec"))
    status = pvc.get("status")
    if isinstance(status, dict):
        _canonical_map(status.get("capacity"))
        _canonical_map(status.get("allocatedResources"))


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _workload(obj: dict[str, Any]) -> None:
    spec = _spec(obj)
    _template_spec(spec.get("template"))
    for claim in _dicts(spec.get("volumeClaimTemplates")):
        _claim(claim)


def _cron_job(obj: dict[str, Any]) -> None:
    job_template = _spec(obj).get("jobTemplate")
    if isinstance(job_template, dict):
        _workload(job_template)


def _node(obj: dict[str, Any]) -> None:
    status = obj.get("status")
    if isinstance(status, dict):
        _canonical_map(status.get("capacity"))
        _canonical_map(status.get("allocatable"))


_METRIC_SOURCES = ("resource", "containerResource", "pods", "object", "external")


def _metric_values(metrics: Any, section: str) -> None:
    """A metric list's quantities: each source's ``section`` (a spec's ``target``, a status's ``current``)."""
    for metric in _dicts(metrics):
        for source in _METRIC_SOURCES:
            values = metric.get(source)
            if isinstance(values, dict):
                _canonical_field(values.get(section), "value")
                _canonical_field(values.get(section), "averageValue")


def _horizontal_pod_autoscaler(obj: dict[str, Any]) -> None:
    _metric_values(_spec(obj).get("metrics"), "target")
    status = obj.get("status")
    if isinstance(status, dict):
        _metric_values(status.get("currentMetrics"), "current")


_CANONICALIZERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "Pod": lambda obj: canonicalize_pod_spec(obj.get("spec")),
    "Node": _node,
    "PersistentVolume": lambda obj: _canonical_map(_spec(obj).get("capacity")),
    "PersistentVolumeClaim": _claim,
    "Deployment": _workload,
    "ReplicaSet": _workload,
    "ReplicationController": _workload,
    "StatefulSet": _workload,
    "DaemonSet": _workload,
    "Job": _workload,
    "CronJob": _cron_job,
    "HorizontalPodAutoscaler": _horizontal_pod_autoscaler,
}


def canonicalize_quantities(kind: str, obj: dict[str, Any]) -> None:
    """Every quantity field of ``obj`` (a ``kind``) rewritten in place in its canonical form."""
    canonicalizer = _CANONICALIZERS.get(kind)
    if canonicalizer is not None:
        canonicalizer(obj)
