"""Formatting shared by the web pages: YAML as kubectl prints it, bars, ages and paging (amounts of resources are
kss_sim.figures's, as everywhere)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import orjson
import yaml

from kss_sim import figures
from kss_sim.kube import raw_numbers
from kss_sim.web.ports import ResourceAmounts

T = TypeVar("T")

PAGE_SIZE = 100
# Resource names as Kubernetes spells them.
CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):  # type: ignore[valid-type,misc]
    """The safe dumper, and a number beyond float64 that a ControllerRevision's data keeps as its text (``1e1000``)
    written as that text."""


def _kept_number(dumper: yaml.SafeDumper, value: Any) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", raw_numbers.text_of(value))


_Dumper.add_representer(orjson.Fragment, _kept_number)


def to_yaml(obj: Any) -> str:
    """YAML as kubectl prints it: keys in stored order, block style."""
    return str(yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120))


# ---------------------------------------------------------------------------------------------- small values


@dataclass(frozen=True, slots=True)
class Bar:
    """One resource bar: requested against allocatable."""

    resource: str
    used: int
    total: int
    used_text: str
    total_text: str

    @property
    def percent(self) -> float:
        """Share of allocatable in use, 0-100 (capped for drawing)."""
        if self.total <= 0:
            return 100.0 if self.used > 0 else 0.0
        return min(100.0, self.used * 100.0 / self.total)

    @property
    def ratio(self) -> float:
        """Requested / allocatable, uncapped (0 when nothing is allocatable)."""
        return self.used / self.total if self.total > 0 else 0.0

    @property
    def over(self) -> bool:
        """More requested than allocatable (a node that shrank, or pods bound by hand)."""
        return self.used > self.total

    @property
    def level(self) -> str:
        """A CSS class for the fill colour."""
        p = self.percent
        return "full" if self.over or p >= 90 else ("high" if p >= 70 else "ok")


def make_bar(resource: str, used: int, total: int) -> Bar:
    """A bar with amounts written in the resource's unit (kss_sim.figures.quantity)."""
    return Bar(resource, used, total, figures.quantity(resource, used), figures.quantity(resource, total))


def resource_bars(requested: ResourceAmounts, allocatable: ResourceAmounts, pod_count: int) -> list[Bar]:
    """cpu, memory, pods, then ephemeral storage and extended resources when the node has or uses them."""
    bars = [
        make_bar(CPU, requested.milli_cpu, allocatable.milli_cpu),
        make_bar(MEMORY, requested.memory, allocatable.memory),
        make_bar(PODS, pod_count, allocatable.pods),
    ]
    if allocatable.ephemeral_storage or requested.ephemeral_storage:
        bars.append(make_bar(EPHEMERAL_STORAGE, requested.ephemeral_storage, allocatable.ephemeral_storage))
    for name in sorted(set(allocatable.scalar_resources) | set(requested.scalar_resources)):
        bars.append(make_bar(name, requested.scalar_resources.get(name, 0), allocatable.scalar_resources.get(name, 0)))
    return bars


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """``kubectl``-style age of an RFC 3339 timestamp (``45s``, ``12m``, ``3h``, ``2d``)."""
    if not timestamp:
        return ""
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return ""
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 120:
        return f"{max(seconds, 0)}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def duration_text(seconds: float) -> str:
    """A wait or a time left as people read it: ``52 s``, ``4 min 10 s``, ``1 h 5 min`` (static/js/app.js's
    countdowns print the same)."""
    total = max(0, int(seconds))  # whole seconds gone by (a countdown shows 0 s only once it is over)
    if total == 0 and seconds > 0:
        return "<1 s"
    if total < 120:
        return f"{total} s"
    if total < 3600:
        minutes, secs = divmod(total, 60)
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, rest = divmod(total, 3600)
    return f"{hours} h {rest // 60} min" if rest // 60 else f"{hours} h"


@dataclass(slots=True)
class Page(Generic[T]):
    """One page of a longer list."""

    items: list[T]
    page: int
    page_size: int
    total: int

    @property
    def pages(self) -> int:
        """How many pages the whole list has (at least one)."""
        return max(1, -(-self.total // self.page_size))

    @property
    def first(self) -> int:
        """1-based index of the first item shown (0 when empty)."""
        return 0 if not self.items else (self.page - 1) * self.page_size + 1

    @property
    def last(self) -> int:
        """1-based index of the last item shown."""
        return (self.page - 1) * self.page_size + len(self.items)


def paginate(items: Sequence[T], page: int, page_size: int = PAGE_SIZE) -> Page[T]:
    """Slice ``items`` to ``page`` (clamped to the last page)."""
    pages = max(1, -(-len(items) // page_size))
    page = min(max(page, 1), pages)
    return Page(list(items[(page - 1) * page_size : page * page_size]), page, page_size, len(items))
