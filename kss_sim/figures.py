"""How a run's figures read for people, one way everywhere: report.html, compare.html, the UI's Runs and Compare
pages and the CLI's summaries, so one run reads the same in each (its wait mean "9 min 7 s" on every one of them,
never "9 min 6 s" on one, its fragmentation "3.69" and never "3.69231", its virtual time "15 h" and never
"15:00:00").

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
