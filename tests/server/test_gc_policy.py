"""The idle-time reclaim of ``kss serve``: cyclic garbage among frozen objects collected, and the C heap's free
pages handed back to the system (glibc keeps them after a peak otherwise)."""

from __future__ import annotations

import gc
import os
import sys
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
