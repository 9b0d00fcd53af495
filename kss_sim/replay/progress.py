"""The replay's progress line on stderr: virtual time reached, pods placed of those arrived, pods placed per second.

On a terminal the line is rewritten in place (at most ten times a second); otherwise (a log, CI) a line is printed
every few seconds. It is an observer like any other, so it sees the run as the metrics do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from kss_sim.replay.model import NullObserver, ReplayState
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.record import Attempt


def virtual_clock_text(seconds: float) -> str:
    """``day 37 04:12`` (days counted from 0, as a trace's day index)."""
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    return f"day {days} {hours:02d}:{rest // 60:02d}"


class Progress(NullObserver):
    """Writes the progress line to ``stream``."""

    def __init__(
        self,
        stream: TextIO,
        *,
        tty: bool | None = None,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.every = every if every is not None else (0.1 if self.tty else 5.0)
        self.clock = clock
        self.placed = 0
        self._started = clock()
        self._last = self._started
        self._width = 0
        self._open = False  # a line rewritten in place on the terminal, not yet ended

    def line(self, state: ReplayState) -> str:
        elapsed = max(self.clock() - self._started, 1e-9)
        return (
            f"{virtual_clock_text(state.now)} · {self.placed:,}/{len(state.pods):,} pods placed · "
            f"{self.placed / elapsed:,.0f} pods/s"
        )

    def _write(self, state: ReplayState, *, final: bool = False) -> None:
        text = self.line(state)
        if self.tty:
            # Marked open before the write: Ctrl-C can land between the write and the next statement.
            self._open = not final
            self.stream.write("\r" + text.ljust(self._width) + ("\n" if final else ""))
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def _maybe(self, state: ReplayState) -> None:
        now = self.clock()
        if now - self._last >= self.every:
            self._last = now
            self._write(state)

    def on_attempt(self, state: ReplayState, attempt: Attempt, pod: PodInfo) -> None:
        if attempt.result == "scheduled":
            self.placed += 1
        self._maybe(state)

    def on_sample(self, state: ReplayState) -> None:
        self._maybe(state)

    def on_end(self, state: ReplayState) -> None:
        self._write(state, final=True)

    def end_line(self) -> None:
        """End the line a run left open when it stopped before its end (Ctrl-C, an error), so that what is printed
        next starts a line of its own instead of running on after the pods/s."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False
