"""A census of a process's memory, written to a file on demand (``KSS_SCHEDULER_MEMORY_CENSUS`` for the scheduler's
process, ``KSS_API_MEMORY_CENSUS`` for the API process; issue #35).

``tracemalloc`` shows the live Python allocations; what it cannot show is memory freed into the allocators and kept
(pymalloc's arenas pinned by a few live blocks, glibc's free chunks) or allocated past them. A census puts side by
side what the kernel counts (``/proc/self/smaps_rollup``), what glibc holds (``mallinfo2``), pymalloc's arenas and
pools by size class (``sys._debugmallocstats``), the blocks Python has allocated and the tracked objects by type,
so two censuses of a soak tell a growing table from a fragmented allocator. The API process's census adds its own
tables' sizes (``counts``) and what its garbage-collector policy froze (``gc_policy``): objects frozen are not in
``gc.get_objects()``, and cyclic garbage among them is never collected unless they are unfrozen.
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


def frozen_garbage() -> tuple[int, Counter[str], Counter[str]]:
    """How many objects the collector has frozen, the cyclic garbage among them by type, found without freeing it
    (it is kept in ``gc.garbage``, so the census does not change what the process holds; the next census finds only
    what became garbage since), and every tracked object by type, frozen ones included. Everything is frozen again
    afterwards, as a full collection under ``gc_policy`` freezes it."""
    frozen = gc.get_freeze_count()
    start = len(gc.garbage)
    flags = gc.get_debug()
    gc.unfreeze()
    gc.set_debug(flags | gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        every = objects_by_type()
    finally:
        gc.set_debug(flags)
        gc.freeze()
    found: Counter[str] = Counter(type(obj).__name__ for obj in gc.garbage[start:])
    return frozen, found, every


def census(counts: Callable[[], dict[str, int]] | None = None, *, frozen: bool = False) -> str:
    """One census as text: the sections in the order above, each headed ``## name``; ``counts``'s figures (a
    process's own tables) in a section ``## counts``; with ``frozen``, the frozen objects and the cyclic garbage
    found among them (``frozen_garbage``) instead of a full collection (which would freeze everything)."""
    if frozen:
        collected = gc.collect(1)
        frozen_count, garbage, by_type = frozen_garbage()
        frozen_lines = [
            "## frozen",
            f"frozen_objects {frozen_count}",
            f"garbage_found {sum(garbage.values())}",
            f"garbage_kept {len(gc.garbage)}",
            *(f"garbage_{name} {n}" for name, n in garbage.most_common(40)),
        ]
    else:
        collected = gc.collect()
        frozen_lines = []
        by_type = objects_by_type()
    lines = [
        f"## taken {time.time():.0f} pid {os.getpid()} (gc.collect found {collected} unreachable)",
        *frozen_lines,
        "## counts",
        *(f"{name} {value}" for name, value in (counts() if counts is not None else {}).items()),
        "## smaps_rollup",
        smaps_rollup().rstrip(),
        "## glibc mallinfo2",
        *(f"{name} {value}" for name, value in glibc_heap().items()),
        "## python",
        f"allocated_blocks {sys.getallocatedblocks()}",
        f"tracked_objects {sum(by_type.values())}",
        "## objects by type",
        *(f"{name} {n}" for name, n in by_type.most_common(TYPES_LISTED)),
        "## pymalloc",
        pymalloc_stats().rstrip(),
        "## glibc malloc_info",
        glibc_arenas().rstrip(),
    ]
    return "\n".join(lines) + "\n"


def take_census_periodically(
    directory: str,
    stop: threading.Event | None = None,
    *,
    process: str = "scheduler",
    counts: Callable[[], dict[str, int]] | None = None,
    frozen: bool = False,
) -> threading.Thread:
    """Write a census into ``directory`` every ``CENSUS_EVERY_SECONDS`` (``scheduler-census-001.txt``, ... after
    ``process``) until ``stop`` is set (the scheduler's process never sets it: the thread ends with the process);
    ``counts`` and ``frozen`` as ``census`` takes them."""
    stopped = stop if stop is not None else threading.Event()

    def write() -> None:
        for n in itertools.count(1):
            if stopped.wait(CENSUS_EVERY_SECONDS):
                return
            text = census(counts, frozen=frozen)
            Path(directory, f"{process}-census-{n:03d}.txt").write_text(text)

    thread = threading.Thread(target=write, name="memory-census", daemon=True)
    thread.start()
    return thread
