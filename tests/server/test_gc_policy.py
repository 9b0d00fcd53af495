"""The idle-time reclaim of ``kss serve``: cyclic garbage among frozen objects collected, and the C heap's free
pages handed back to the system (glibc keeps them after a peak otherwise)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
import weakref

import pytest

from kss_sim.server import gc_policy


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_frozen_cyclic_garbage_is_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.other: Node | None = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    gc.freeze()
    try:
        del a, b
        gc.collect()
        assert gone() is not None, "frozen: a plain collection leaves the cycle"
        gc_policy.reclaim_frozen()
        assert gone() is None
    finally:
        gc.unfreeze()


@pytest.mark.skipif(not sys.platform.startswith("linux") or gc_policy._malloc_trim is None, reason="glibc only")
def test_the_heap_pages_freed_after_a_peak_go_back_to_the_system() -> None:
    # 150 MB of 2 kB blocks (malloc's heap, below its mmap threshold), all freed but one at the top, which keeps
    # the heap from shrinking by itself: only a trim returns the pages in between.
    blocks = [bytes(2048) for _ in range(75_000)]
    top = bytes(2048)
    del blocks
    before = _rss_bytes()
    gc_policy.reclaim_frozen()
    after = _rss_bytes()
    assert len(top) == 2048
    assert before - after > 100 * 1024 * 1024, (before, after)


# Run in a fresh interpreter: a block comes out of the heap's free space whatever its size (the threshold only
# decides how the heap grows), and this process's heap has free space after the tests before.
_LARGE_BLOCK_PROBE = """
import ctypes, ctypes.util, sys
from kss_sim.engine_host.memory_census import glibc_heap
from kss_sim.server import gc_policy
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if not glibc_heap():
    print("no mallinfo2")
    sys.exit(0)
if sys.argv[1] == "fixed":
    assert gc_policy.map_large_blocks_apart(64 * 1024)
libc.free(libc.malloc(8 * 1024 * 1024))
before = glibc_heap()["hblkhd"]
block = libc.malloc(256 * 1024)
print("mapped", glibc_heap()["hblkhd"] - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize(("threshold", "mapped"), [("fixed", True), ("glibc's own", False)])
def test_large_blocks_are_mapped_apart_even_after_a_larger_one_was_freed(threshold: str, mapped: bool) -> None:
    """glibc raises its mmap threshold to the largest mapped block freed: without a fixed threshold a 256 kB block
    after a freed 8 MB one grows the heap (and leaves a hole there when freed); with it, it is mapped on its own."""
    out = subprocess.run(
        [sys.executable, "-c", _LARGE_BLOCK_PROBE, threshold.split()[0]],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ).stdout.split()
    if out[:2] == ["no", "mallinfo2"]:
        pytest.skip("glibc older than 2.33")
    assert (int(out[1]) >= 256 * 1024) is mapped


def test_the_heap_policy_maps_large_blocks_apart_and_trims_every_period_until_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``kss serve``'s processes, the API's and the scheduler's, trim their heaps on a timer: under steady churn
    neither is idle for long enough for the idle-time reclaim (issue #35's soak)."""
    trims: list[float] = []
    thresholds: list[int] = []
    monkeypatch.setattr(gc_policy, "HEAP_TRIM_SECONDS", 0.02)
    monkeypatch.setattr(gc_policy, "give_back_free_heap", lambda: trims.append(time.monotonic()))
    monkeypatch.setattr(gc_policy, "map_large_blocks_apart", lambda threshold: thresholds.append(threshold) or True)
    stop = threading.Event()
    thread = gc_policy.install_heap_policy(stop)
    deadline = time.monotonic() + 20
    while len(trims) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert len(trims) >= 3
    assert thresholds == [gc_policy.LARGE_BLOCK_BYTES]
    stopped_at = len(trims)
    time.sleep(0.1)
    assert len(trims) == stopped_at, "no trim after the stop"
