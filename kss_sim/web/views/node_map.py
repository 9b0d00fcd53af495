"""The cluster page's overview: every node as one small cell coloured by how much of one resource is requested.

It has to stay light at 5,000 nodes, so a cell is only its name, a colour class and a tooltip; the legend counts
the nodes in each band and doubles as a filter.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kss_sim.web.formatting import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, make_bar
from kss_sim.web.ports import ResourceAmounts

# Bands of requested / allocatable: ten 10 % steps, exactly full, more than allocatable, and nothing allocatable.
BANDS: tuple[tuple[str, str], ...] = (
    *((f"h{i}", f"{i * 10}–{i * 10 + 10}%") for i in range(10)),
    ("h10", "full"),
    ("over", "over 100%"),
    ("none", "none allocatable"),
)
BAND_LEVELS = frozenset(level for level, _ in BANDS)
DENSE_FROM = 600  # nodes: from here on cells are drawn smaller so 5,000 fit in a screenful


def amounts(resource: str, requested: ResourceAmounts, allocatable: ResourceAmounts, pod_count: int) -> tuple[int, int]:
    """(requested, allocatable) of one resource on one node, in the resource's own unit."""
    if resource == CPU:
        return requested.milli_cpu, allocatable.milli_cpu
    if resource == MEMORY:
        return requested.memory, allocatable.memory
    if resource == PODS:
        return pod_count, allocatable.pods
    if resource == EPHEMERAL_STORAGE:
        return requested.ephemeral_storage, allocatable.ephemeral_storage
    return requested.scalar_resources.get(resource, 0), allocatable.scalar_resources.get(resource, 0)


def band_of(used: int, total: int) -> str:
    """The colour band of ``used`` out of ``total``."""
    if total <= 0:
        return "over" if used > 0 else "none"
    if used > total:
        return "over"
    return f"h{min(10, used * 10 // total)}"


def share(used: int, total: int) -> float:
    """``used / total`` for sorting (a node with nothing allocatable but something requested sorts first)."""
    if total <= 0:
        return float("inf") if used > 0 else -1.0
    return used / total


def resource_names(allocatables: Iterable[ResourceAmounts]) -> list[str]:
    """cpu, memory, pods, then ephemeral storage and the extended resources any node offers."""
    extended: set[str] = set()
    storage = False
    for amounts_ in allocatables:
        extended.update(amounts_.scalar_resources)
        storage = storage or amounts_.ephemeral_storage > 0
    return [CPU, MEMORY, PODS, *([EPHEMERAL_STORAGE] if storage else []), *sorted(extended)]


@dataclass(frozen=True, slots=True)
class NodeCell:
    """One node in the overview: its page, its band, and its numbers as a tooltip."""

    name: str
    css: str  # the band, then "x" when cordoned and "nr" when not Ready
    title: str


@dataclass(frozen=True, slots=True)
class LegendBand:
    """One colour of the legend and how many of the shown nodes fall in it."""

    level: str
    label: str
    count: int


def node_cell(name: str, resource: str, used: int, total: int, *, cordoned: bool, ready: bool) -> NodeCell:
    """A cell with the tooltip ``name · resource used / total (percent)`` and the node's state."""
    level = band_of(used, total)
    bar = make_bar(resource, used, total)
    percent = f" ({used * 100 / total:.0f}%)" if total > 0 else ""
    notes = ("" if ready else " · NotReady") + (" · cordoned" if cordoned else "")
    css = level + (" x" if cordoned else "") + ("" if ready else " nr")
    return NodeCell(name, css, f"{name} · {resource} {bar.used_text} / {bar.total_text}{percent}{notes}")


@dataclass(slots=True)
class NodeMap:
    """The overview: the cells of the nodes shown, the legend with counts, and how densely to draw them."""

    resource: str
    cells: list[NodeCell]
    legend: list[LegendBand]
    band: str  # the band the cells are filtered to ("" for all)
    dense: bool


def node_map(resource: str, cells: list[NodeCell], band: str) -> NodeMap:
    """The overview of ``cells`` (every node the other filters keep), narrowed to ``band`` when one is chosen."""
    counts = dict.fromkeys(BAND_LEVELS, 0)
    for cell in cells:
        counts[cell.css.split(" ", 1)[0]] += 1
    legend = [LegendBand(level, label, counts[level]) for level, label in BANDS]
    if band:
        cells = [c for c in cells if c.css.split(" ", 1)[0] == band]
    return NodeMap(resource, cells, legend, band, dense=len(cells) >= DENSE_FROM)
