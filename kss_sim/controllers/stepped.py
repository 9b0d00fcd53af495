"""Controllers run in the caller's thread, on a clock the caller moves: how a host that owns time (a replay on its
virtual clock) runs the same controllers ``kss serve`` runs in threads.

Every loop is attached to the store (``ReconcileLoop.attach``: subscribed, no thread). At each instant the host
calls ``settle``: every controller drains its queue in a fixed order, again and again while one's writes gave
another something to do, so the outcome is one deterministic sequence of reconciles. Timers (a CronJob's next
schedule, a Job's deadline, a retry's backoff) are the loops' own: ``next_due`` tells the host when to move the
clock and settle again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from kss_sim.controllers.loop import ReconcileLoop

# A controller pair that keep undoing each other would spin forever at one instant; a real cluster would spin too,
# but a run must end: past this many rounds the instant is left unsettled (and logged by the caller).
MAX_ROUNDS = 10_000


class SteppedControllers:
    """Several controllers over one store, driven by the caller: ``attach``, then ``settle`` at each instant."""

    def __init__(self, controllers: Sequence[ReconcileLoop[Any]]) -> None:
        self.controllers = list(controllers)

    def attach(self) -> None:
        """Subscribe every controller and queue everything the store holds (each reconciles it at ``settle``)."""
        for controller in self.controllers:
            controller.attach()

    def detach(self) -> None:
        """Unsubscribe every controller."""
        for controller in reversed(self.controllers):
            controller.detach()

    def settle(self) -> bool:
        """Reconcile until no controller has a change, a queued key or a due timer left; False when that took
        more than ``MAX_ROUNDS`` rounds (the controllers fight) and work is left."""
        for _ in range(MAX_ROUNDS):
            for controller in self.controllers:
                controller.drain()
            if not any(controller.has_work() for controller in self.controllers):
                return True
        return False

    def next_due(self) -> datetime | None:
        """The clock time of the earliest timer of any controller, or None."""
        due = [when for controller in self.controllers if (when := controller.next_due()) is not None]
        return min(due) if due else None
