"""What a live replay (``live.py``) saw, and how it shows it: the pods it saw on the server, the end summary, and
the progress line on the terminal."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TextIO


def clock_text(seconds: float) -> str:
    """Virtual time as ``day D HH:MM:SS``."""
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    return f"day {days} {hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


@dataclass(slots=True)
class LivePod:
    """One pod seen on the server during the run (times are virtual seconds)."""

    key: str
    uid: str
    seen: float
    run_for: float | None = None
    bound: float | None = None
    node: str | None = None
    finished: float | None = None  # deleted by the driver at bound + runFor
    gone: float | None = None  # seen deleted (by anyone)
    created_by_event: bool = False  # a bare pod of the workload (the run waits for its runFor); else a controller's


@dataclass
class LiveSummary:
    """What the run did."""

    speed: float
    started_at: float = 0.0  # wall clock (time.time()) at virtual time 0
    virtual_reached: float = 0.0
    events_applied: int = 0
    events_total: int = 0
    start_objects: int = 0
    pods: dict[str, LivePod] = field(default_factory=dict)  # by uid
    pods_finished: int = 0  # deleted at bound + runFor
    objects_ended: int = 0  # deleted at endAt
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def pods_bound(self) -> int:
        return sum(1 for p in self.pods.values() if p.bound is not None)

    def lines(self) -> list[str]:
        pending = sum(1 for p in self.pods.values() if p.bound is None and p.gone is None)
        state = "interrupted" if self.interrupted else "done"
        return [
            f"live replay {state} at {clock_text(self.virtual_reached)} (speed {self.speed:g}x)",
            f"events: {self.events_applied} of {self.events_total} applied"
            + (f", {self.start_objects} starting objects" if self.start_objects else ""),
            f"pods: {len(self.pods)} seen, {self.pods_bound} bound, {self.pods_finished} finished (runFor), "
            f"{pending} pending; objects ended (endAt): {self.objects_ended}",
            *(
                [
                    f"pod timings sent scaled to the speed: grace periods and tolerationSeconds / {self.speed:g} "
                    "(the server's controllers' own periods stay on its wall clock)"
                ]
                if self.speed != 1
                else []
            ),
            f"errors: {len(self.errors)}",
        ]


class Progress:
    """One updating line on a terminal, a line every few seconds otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._every = 0.2 if self.tty else 5.0
        self._last = float("-inf")
        self._shown = False

    def update(self, text: str, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self._every:
            return
        self._last = now
        if self.tty:
            self.stream.write("\r\x1b[2K" + text)
            self._shown = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def clear(self) -> None:
        """Before another line is printed: leave the updating line."""
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self._shown = False

    def done(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self._shown = False
        self.stream.flush()
