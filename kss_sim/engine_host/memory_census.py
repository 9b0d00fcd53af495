"""A census of a process's memory, written to a file on demand (``KSS_SCHEDULER_MEMORY_CENSUS``, issue #35).

``tracemalloc`` shows the live Python allocations; what it cannot show is memory freed into the allocators and kept
(pymalloc's arenas pinned by a few live blocks, glibc's free chunks) or allocated past them. A census puts side by
side what the kernel counts (``/proc/self/smaps_rollup``), what glibc holds (``mallinfo2``), pymalloc's arenas and
pools by size class (``sys._debugmallocstats``), the blocks Python has allocated and the tracked objects by type,
so two censuses of a soak tell a growing table from a fragmented allocator.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import itertools
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

# How often the census is taken (a walk of every tracked object: ~0.5 s at a million objects, the GIL held).
CENSUS_EVERY_SECONDS = 60.0
# The object types listed (by count), most numerous first.
TYPES_LISTED = 200
_MALLINFO2_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (*_MALLINFO2_FIELDS, "keepcost")]


def _find_mallinfo2() -> Callable[[], _Mallinfo2] | None:
    name = ctypes.util.find_library("c")
    try:
        function = ctypes.CDLL(name).mallinfo2 if name else None
    except (OSError, AttributeError):  # not glibc, or older than 2.33
        return None
    if function is None:
        return None
    function.argtypes = []
    function.restype = _Mallinfo2
    result: Callable[[], _Mallinfo2] = function
    return result


_mallinfo2 = _find_mallinfo2()


def _find_libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is None or not hasattr(libc, "malloc_info"):
            return None
    except OSError:
        return None
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fopen.restype = ctypes.c_void_p
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    return libc


_libc = _find_libc()


def glibc_heap() -> dict[str, int]:
    """glibc's counters (bytes): ``arena`` the heaps' size, ``uordblks`` in use, ``fordblks`` free in them,
    ``hblkhd`` in blocks mmapped on their own; empty where there is no ``mallinfo2``."""
    if _mallinfo2 is None:
        return {}
    info = _mallinfo2()
    return {name: int(getattr(info, name)) for name in _MALLINFO2_FIELDS}


def glibc_arenas() -> str:
    """glibc's ``malloc_info`` (XML): each arena's heaps, its free chunks by size, its total and in-use bytes; which
    arena grows, and whether its free memory is in chunks too small to hand back."""
    if _libc is None:
        return ""
    with tempfile.NamedTemporaryFile(prefix="kss-census-") as report:
        stream = _libc.fopen(report.name.encode(), b"w")
        if not stream:
            return ""
        try:
            _libc.malloc_info(0, stream)
        finally:
            _libc.fclose(stream)
        return Path(report.name).read_text(errors="replace")


def objects_by_type() -> Counter[str]:
    """The objects the cyclic collector tracks, counted by type name (strings, numbers and bytes are untracked)."""
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        counts[type(obj).__name__] += 1
    return counts


def pymalloc_stats() -> str:
    """``sys._debugmallocstats()``'s report (it writes to the C stderr only: fd 2 is pointed at a file meanwhile,
    so another thread's line written to stderr in those milliseconds lands in the census)."""
    with tempfile.TemporaryFile() as report:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(report.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        report.seek(0)
        return report.read().decode(errors="replace")


def smaps_rollup() -> str:
    """The kernel's totals of this process's mappings (RSS, anonymous, ...); empty off Linux."""
    try:
        return Path("/proc/self/smaps_rollup").read_text()
    except OSError:
        return ""


def census() -> str:
    """One census as text: the sections in the order above, each headed ``## name``."""
    collected = gc.collect()
    counts = objects_by_type()
    lines = [
        f"## taken {time.time():.0f} pid {os.getpid()} (gc.collect found {collected} unreachable)",
        "## smaps_rollup",
        smaps_rollup().rstrip(),
        "## glibc mallinfo2",
        *(f"{name} {value}" for name, value in glibc_heap().items()),
        "## python",
        f"allocated_blocks {sys.getallocatedblocks()}",
        f"tracked_objects {sum(counts.values())}",
        "## objects by type",
        *(f"{name} {n}" for name, n in counts.most_common(TYPES_LISTED)),
        "## pymalloc",
        pymalloc_stats().rstrip(),
        "## glibc malloc_info",
        glibc_arenas().rstrip(),
    ]
    return "\n".join(lines) + "\n"


def take_census_periodically(directory: str, stop: threading.Event | None = None) -> threading.Thread:
    """Write a census into ``directory`` every ``CENSUS_EVERY_SECONDS`` (``scheduler-census-001.txt``, ...) until
    ``stop`` is set (the scheduler's process never sets it: the thread ends with the process)."""
    stopped = stop if stop is not None else threading.Event()

    def write() -> None:
        for n in itertools.count(1):
            if stopped.wait(CENSUS_EVERY_SECONDS):
                return
            Path(directory, f"scheduler-census-{n:03d}.txt").write_text(census())

    thread = threading.Thread(target=write, name="memory-census", daemon=True)
    thread.start()
    return thread
