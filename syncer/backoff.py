"""Capped exponential backoff, shared by the watch loops (source errors) and the sink (simulator unreachable)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before retry number ``attempt`` (1-based): ``initial * factor**(attempt-1)``, at most ``cap``."""

    initial: float = 0.5
    cap: float = 30.0
    factor: float = 2.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before the ``attempt``-th retry."""
        if attempt <= 0:
            return 0.0
        return float(min(self.cap, self.initial * self.factor ** min(attempt - 1, 64)))
