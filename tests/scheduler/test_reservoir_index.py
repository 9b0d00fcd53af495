"""``selectHost``'s reservoir sampling among tied nodes draws exactly as ``randrange`` would: a seeded ``kss serve``
places pods on the same nodes, and leaves the generator in the same state for the next cycle."""

from __future__ import annotations

import random

from kss_sim.scheduler.batch_cycle import reservoir_index


def _randrange_reservoir(rng: random.Random, count: int) -> int:
    """The reference: upstream's loop, ``rand.Intn(cntOfMaxScore) == 0`` per further tie, with ``randrange``."""
    chosen = 0
    for i in range(2, count + 1):
        if rng.randrange(i) == 0:
            chosen = i - 1
    return chosen


def test_reservoir_index_makes_randranges_choices_and_leaves_the_same_state() -> None:
    counts = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 64, 65, 100, 127, 128, 129, 257, 1000]
    for seed in range(20):
        ours, reference = random.Random(seed), random.Random(seed)
        picks = []
        for count in counts:
            pick = reservoir_index(ours, count)
            assert pick == _randrange_reservoir(reference, count), (seed, count)
            assert ours.getstate() == reference.getstate(), (seed, count)
            picks.append(pick)
        assert len(set(picks)) > 5  # the choices vary: the comparison above compares something


def test_reservoir_index_is_uniform_over_the_ties() -> None:
    rng = random.Random(5)
    counts = [0] * 4
    for _ in range(8000):
        counts[reservoir_index(rng, 4)] += 1
    assert all(1800 < c < 2200 for c in counts), counts
