"""What the controllers' tests share: a store on a clock the test moves."""

from __future__ import annotations

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from tests.controllers.workloads import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    """An empty in-memory store with the built-in objects, on ``clock``."""
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    return store
