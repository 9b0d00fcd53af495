"""Objects' uids, drawn in blocks: random version-4 UUIDs, never handed out twice (threads, a forked child)."""

from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor

from kss_sim.cluster.admission import uids


def test_uids_are_random_version_4_uuids_in_their_text_form() -> None:
    drawn = [uids.new_uid() for _ in range(3 * uids.BLOCK + 7)]
    for text in drawn:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
    assert len(set(drawn)) == len(drawn)


def test_threads_drawing_at_once_never_get_the_same_uid() -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        batches = list(pool.map(lambda _: [uids.new_uid() for _ in range(500)], range(8)))
    everything = [u for batch in batches for u in batch]
    assert len(set(everything)) == len(everything) == 4000


def test_a_forked_child_does_not_hand_out_its_parents_uids() -> None:
    uids.new_uid()  # the block is filled: the child must not take from it
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.close(read)
        os.write(write, "\n".join(uids.new_uid() for _ in range(10)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        theirs = set(pipe.read().split("\n"))
    os.waitpid(child, 0)
    ours = {uids.new_uid() for _ in range(10)}
    assert len(theirs) == 10 and not theirs & ours
