"""How a run's figures read for people, one way everywhere: report.html, compare.html, the UI's Runs and Compare
pages and the CLI's summaries, so one run reads the same in each (its wait mean "9 min 7 s" on every one of them,
never "9 min 6 s" on one, its fragmentation "3.69" and never "3.69231", its virtual time "15 h" and never
"15:00:00"); and amounts of resources as kubectl writes them (``1500m`` of CPU, ``32Gi`` of memory).

Plain functions of plain numbers, in the foundation room: the replay, what-if and web rooms all import them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

MISSING = "–"  # a figure a run does not have (no pod was bound: no wait)

_UNITS = (("d", 86400, "h", 3600), ("h", 3600, "min", 60), ("min", 60, "s", 1))


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def duration(seconds: float | None) -> str:
    """A span of time: ``0 s``, ``0.25 s``, ``52 s``, ``4 min 10 s``, ``1 h 5 min``, ``3 d 4 h``. Under a minute to
    three significant figures; longer, rounded to the nearest second and told in its two largest units."""
    value = _finite(seconds)
    if value is None:
        return MISSING
    if abs(value) < 60:
        return f"{value:.3g} s" if value != int(value) else f"{int(value)} s"
    whole = round(value)
    for unit, size, sub, sub_size in _UNITS:
        if whole >= size:
            count, rest = divmod(whole, size)
            part = rest // sub_size
            return f"{count} {unit} {part} {sub}" if part else f"{count} {unit}"
    return f"{whole} s"  # pragma: no cover - every span of a minute or more matched above


def percent(ratio: float | None) -> str:
    """A share as a percentage to one decimal: ``35.0 %``."""
    value = _finite(ratio)
    return MISSING if value is None else f"{100 * value:.1f} %"


def number(value: float | None) -> str:
    """A measure (GPU fragmentation, a mean of GPUs) to two decimals at most: ``3.69``, ``1.6``, ``3``."""
    finite = _finite(value)
    if finite is None:
        return MISSING
    text = f"{finite:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def count(value: float | None) -> str:
    """A count of things (pods, attempts, preemptions): a whole number."""
    finite = _finite(value)
    return MISSING if finite is None else str(round(finite))


# Resources counted in bytes (kubectl writes them with binary suffixes); every other one but cpu is a count.
BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage")
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def cpu(milli: float | None) -> str:
    """CPU as kubectl writes it: whole cores ``4``, else millicores ``250m``, ``1500m``; from 100 cores on, a
    fraction as cores to one decimal (``116448.5``), where millicores would run to nine digits."""
    value = _finite(milli)
    if value is None:
        return MISSING
    whole = round(value)
    if whole % 1000 == 0:
        return str(whole // 1000)
    if abs(whole) < 100_000:
        return f"{whole}m"
    return f"{whole / 1000:.1f}"


def byte_size(amount: float | None) -> str:
    """Bytes with kubectl's binary suffixes, in the largest unit they reach: whole when exact (``32Gi``, ``512Ki``),
    else to one decimal (``1.5Gi``, ``23.3Ti``, ``953.7Mi`` for 1G), so that an amount used and a total read on one
    scale (kubectl's ``1536Mi`` or ``24478092Mi`` beside ``32Gi`` would not); under 1Ki, plain bytes."""
    value = _finite(amount)
    if value is None:
        return MISSING
    whole = round(value)
    for suffix, size in _BINARY:
        if abs(whole) >= size:
            return f"{whole // size}{suffix}" if whole % size == 0 else f"{whole / size:.1f}{suffix}"
    return str(whole)


def quantity(resource: str, amount: float | None) -> str:
    """An amount of ``resource`` in its unit as kubectl writes it: ``cpu`` in cores or millicores, memory and storage
    (``hugepages-*`` too) in bytes with binary suffixes, anything else (pods, ``nvidia.com/gpu``) a count."""
    if resource == "cpu":
        return cpu(amount)
    if resource in BYTE_RESOURCES or resource.startswith("hugepages-"):
        return byte_size(amount)
    return count(amount)


def run_quantity(resource: str, amount: float | None) -> str:
    """An amount as a run's summary.json and timeseries.csv hold it (cpu in cores, the rest as :func:`quantity`)."""
    value = _finite(amount)
    return quantity(resource, None if value is None else value * 1000 if resource == "cpu" else value)


def resource_notes(resources: Iterable[str]) -> list[str]:
    """What a reader needs where a run names one device two ways: ``gpu`` (every GPU, however offered) beside
    ``nvidia.com/gpu`` (the extended resource) reads as the same thing counted twice without it."""
    names = list(resources)
    if "gpu" not in names:
        return []
    extended = [n for n in names if n.endswith("/gpu")]
    offered = (
        f"here {', '.join(extended)}, and DRA devices of GPU drivers" if extended else "DRA devices of GPU drivers"
    )
    return [
        f"gpu: every GPU of the cluster, whichever way it is offered ({offered}), in whole GPUs; "
        "the GPU fragmentation figures are measured on it"
    ]
