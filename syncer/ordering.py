"""The order a list of the source reaches the simulator in, within a kind (``kinds.ORDER`` orders the kinds).

Pods the source has not scheduled go after every pod it has, across every scope (namespace) of the list: the
simulator's scheduler then places them against the whole running load, as the source's scheduler sees it. In
list order one could arrive first and be placed on a node whose running pods come after it, bound to that node
whatever it holds by then: the node would end up holding more than its allocatable. ``kss import`` and every list
of ``kss sync`` (its first and each one after a watch expired) follow this rule; watch events keep their order,
which is the source's history.
"""

from __future__ import annotations

from collections.abc import Iterable

from syncer.kinds import POD
from syncer.sink import ADDED, MODIFIED, Event
from syncer.translate import is_scheduled


def waits_for_running_pods(event: Event) -> bool:
    """Whether ``event`` writes a pod the source has not scheduled: it goes after the list's scheduled pods."""
    return event.kind is POD and event.type in (ADDED, MODIFIED) and not is_scheduled(event.obj)


def running_first(events: Iterable[Event]) -> tuple[list[Event], list[Event]]:
    """``events`` split, each part in its order, into what goes now and the pods that wait for the running ones."""
    now: list[Event] = []
    later: list[Event] = []
    for event in events:
        (later if waits_for_running_pods(event) else now).append(event)
    return now, later
