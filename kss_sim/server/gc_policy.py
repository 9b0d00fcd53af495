"""The process-wide garbage-collector policy of ``kss serve`` (installed at its start-up, kss_sim.serve_cli)."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
from collections.abc import Callable
from typing import Any

# Full collections of the cyclic garbage collector stop every thread for as long as it takes to walk every
# tracked object: 100-200 ms once a few thousand pods (and their watch-log versions) are held, the whole of the
# API's p99 while the scheduler runs. What survives a full collection is long-lived (objects, cache, log), so it
# is frozen out of later ones (they then walk only what is new); when the scheduler has been idle for a while it
# unfreezes and collects once (``reclaim_frozen``, the scheduler's ``on_idle``), so cyclic garbage among frozen
# objects is not kept forever.
_gc_lock = threading.Lock()

# Young collections every 20,000 allocations instead of 700 (one per ~40 requests instead of one per request):
# each collection pauses every request in flight, and the rarer they are, the fewer requests see one. The scheduler's
# process takes them too: at 700 a cycle at thousands of nodes set off collections that walked the cluster's objects
# (a tenth of its CPU at 4,500 nodes, SchedulingDaemonset).
SERVE_GC_THRESHOLDS = (20_000, 20, 10)
_gc_installed = False


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def install_gc_policy() -> None:
    """Freeze the survivors of each full collection (once per process; see the comment above)."""
    global _gc_installed
    with _gc_lock:
        if not _gc_installed:
            gc.callbacks.append(_freeze_survivors)
            _gc_installed = True


def _find_malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to hand back this way
        return None
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    result: Callable[[int], int] = trim
    return result


# glibc keeps the pages of freed memory for the process after a peak (a burst of pods, their writes and attempts):
# at 50,000 pods ~400 MB of RSS no object held (issue #20, memory census). ``malloc_trim`` hands them back.
_malloc_trim = _find_malloc_trim()


def _find_mallopt() -> Callable[[int, int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        return None
    if mallopt is None:
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    result: Callable[[int, int], int] = mallopt
    return result


_mallopt = _find_mallopt()
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def map_large_blocks_apart(threshold_bytes: int) -> bool:
    """Have glibc map every block of ``threshold_bytes`` or more on its own and unmap it when freed, at a fixed
    threshold. By default the threshold rises to the largest block freed (up to 32 MB), after which large transient
    buffers (a pipe's messages, their pickles) are carved out of the heap among long-lived small blocks and leave
    holes it cannot give back. False where glibc's ``mallopt`` is not there."""
    if _mallopt is None:
        return False
    return bool(_mallopt(_M_MMAP_THRESHOLD, threshold_bytes))


def give_back_free_heap() -> None:
    """Give the C heap's free pages back to the system (glibc only; elsewhere nothing)."""
    if _malloc_trim is not None:
        _malloc_trim(0)


# How often a process under the heap policy hands free C heap pages back (malloc_trim: a few milliseconds on a
# 400 MB heap, with the GIL released: ctypes lets it go for the call).
HEAP_TRIM_SECONDS = 30.0
# Blocks of this size or more are mapped apart from the C heap (``map_large_blocks_apart``): the scheduler's change
# stream and rows (10 kB to MBs a message), the API's list answers and request bodies.
LARGE_BLOCK_BYTES = 64 * 1024


def install_heap_policy(stop: threading.Event | None = None) -> threading.Thread:
    """The C heap's policy of a long-running process (``kss serve``'s API process and its scheduler's): large
    blocks mapped apart at a fixed threshold, and the free pages handed back every ``HEAP_TRIM_SECONDS`` until
    ``stop`` is set (a process's own thread never sets it: it ends with the process). Under steady churn neither
    process is idle for long, so the idle-time reclaim alone never ran, and glibc kept what freed versions had used
    (issue #35's soaks: the heaps' free part grew while what was in use stayed flat)."""
    map_large_blocks_apart(LARGE_BLOCK_BYTES)
    stopped = stop if stop is not None else threading.Event()

    def trim() -> None:
        while not stopped.wait(HEAP_TRIM_SECONDS):
            give_back_free_heap()

    thread = threading.Thread(target=trim, name="heap-trim", daemon=True)
    thread.start()
    return thread


def reclaim_frozen() -> None:
    """One full collection over everything, frozen objects included, then freeze the survivors again; then give
    the C heap's free pages back to the system."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    give_back_free_heap()
