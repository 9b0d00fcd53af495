"""PrioritySort: higher priority first, then the earlier queued pod."""

from __future__ import annotations

from dataclasses import dataclass

from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.priority_sort import PrioritySort
from tests.scheduler.factories import make_handle, make_pod


@dataclass
class _Queued:
    pod_info: PodInfo
    timestamp: float


def _q(name: str, priority: int, ts: float) -> _Queued:
    return _Queued(PodInfo(make_pod(name=name, priority=priority)), ts)


def test_higher_priority_wins_regardless_of_time() -> None:
    plugin = PrioritySort(make_handle(), {})
    assert plugin.less(_q("hi", 10, 5.0), _q("lo", 1, 1.0))
    assert not plugin.less(_q("lo", 1, 1.0), _q("hi", 10, 5.0))


def test_equal_priority_earlier_timestamp_first_and_ties_are_not_less() -> None:
    plugin = PrioritySort(make_handle(), {})
    assert plugin.less(_q("a", 0, 1.0), _q("b", 0, 2.0))
    assert not plugin.less(_q("b", 0, 2.0), _q("a", 0, 1.0))
    assert not plugin.less(_q("a", 0, 1.0), _q("b", 0, 1.0))


def test_missing_priority_counts_as_zero() -> None:
    plugin = PrioritySort(make_handle(), {})
    assert plugin.less(_Queued(PodInfo(make_pod(name="p")), 2.0), _q("neg", -1, 1.0))
