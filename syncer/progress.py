"""A small progress bar on stderr for the one-shot import (redrawn in place on a terminal, else a line per kind)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

_WIDTH = 30


class Progress:
    """Counts objects of one kind at a time; thread-safe, redraws at most ten times a second."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        live: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._clock = clock
        self._lock = threading.Lock()
        self.label = ""
        self.total: int | None = None
        self.done = 0
        self._started = 0.0
        self._drawn = 0.0

    def start(self, label: str, total: int | None = None) -> None:
        """Begin counting ``label`` (``total`` may grow later, or stay unknown)."""
        with self._lock:
            self.label, self.total, self.done = label, total, 0
            self._started = self._drawn = self._clock()
            self._draw()

    def expect(self, total: int) -> None:
        """Update the expected total (known once the first page of a list says how many remain)."""
        with self._lock:
            self.total = total

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more objects done."""
        with self._lock:
            self.done += n
            now = self._clock()
            if self.live and now - self._drawn >= 0.1:
                self._drawn = now
                self._draw()

    def finish(self) -> float:
        """End the current label with a final line; returns its seconds."""
        with self._lock:
            seconds = self._clock() - self._started
            self.total = self.done if self.total is None else self.total
            self._draw(final=True, seconds=seconds)
            return seconds

    def _draw(self, *, final: bool = False, seconds: float | None = None) -> None:
        if not self.live and not final:
            return
        elapsed = seconds if seconds is not None else self._clock() - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if self.total:
            filled = min(_WIDTH, int(_WIDTH * self.done / self.total))
            bar = "#" * filled + "." * (_WIDTH - filled)
            count = f"{self.done}/{self.total}"
        else:
            bar = "." * _WIDTH
            count = str(self.done)
        line = f"{self.label:<22} [{bar}] {count:>13} {rate:7.0f}/s {elapsed:6.1f}s"
        end = "\n" if final else ""
        self.stream.write(("\r" if self.live else "") + line + end)
        self.stream.flush()
