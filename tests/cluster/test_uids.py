"""Objects' uids, drawn in blocks: random version-4 UUIDs, never handed out twice (threads, a forked child); seeded
within ``drawn_from``, with generateName's suffixes."""

from __future__ import annotations

import os
import random
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


def _deployment_through_the_controllers(seed: int) -> list[tuple[str, str, str]]:
    """A Deployment of 3 created and settled by the stepped controllers within ``drawn_from(Random(seed))``: the
    (kind, name, uid) of every Deployment, ReplicaSet and pod."""
    from kss_sim.cluster.storage.store import ClusterStore
    from kss_sim.controllers.manager import WORKLOAD_CONTROLLERS
    from kss_sim.controllers.stepped import SteppedControllers
    from tests.controllers.workloads import FakeClock, deployment

    clock = FakeClock()
    with uids.drawn_from(random.Random(seed)):
        store = ClusterStore(None, clock=clock)
        controllers = SteppedControllers([c(store, clock=clock) for c in WORKLOAD_CONTROLLERS])
        controllers.attach()
        store.create("Deployment", deployment("web", 3, {"app": "web"}))
        assert controllers.settle()
        controllers.detach()
    return [
        (kind, o["metadata"]["name"], o["metadata"]["uid"])
        for kind in ("Deployment", "ReplicaSet", "Pod")
        for o in store.list(kind, "default")[0]
    ]


def test_within_drawn_from_the_same_seed_gives_the_same_names_and_uids_and_outside_it_they_are_random() -> None:
    first, again, other = (_deployment_through_the_controllers(seed) for seed in (7, 7, 8))
    assert len(first) == 5 and [kind for kind, _, _ in first] == ["Deployment", "ReplicaSet", "Pod", "Pod", "Pod"]
    assert first == again
    assert [uid for _, _, uid in first] != [uid for _, _, uid in other]
    assert {name for kind, name, _ in first if kind == "Pod"} != {name for kind, name, _ in other if kind == "Pod"}
    assert all(uuid.UUID(uid).version == 4 for _, _, uid in first)
    # Outside the context the system's randomness is back.
    with uids.drawn_from(random.Random(7)):
        seeded = uids.new_uid()
    assert uids.new_uid() != seeded
