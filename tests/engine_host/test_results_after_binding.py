"""A read of the results just after a binding the API shows finds its attempt, with a store that acknowledges
bindings late (the scheduler process's mirror: the loop records an attempt only once its batch is acknowledged,
and looks for acknowledgements between cycles): ``record_in_flight``, which a flush of the rows runs first, is the
barrier."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.engine_host.scheduler_thread import SchedulerService
from kss_sim.scheduler.record import Attempt
from tests.scheduler.factories import make_node, make_pod


class _LateAcknowledgement:
    """A batch's pending writes whose acknowledgement arrives only once ``ack`` is set (and tells nobody)."""

    def __init__(self, pending: Any, ack: threading.Event) -> None:
        self.pending, self.ack = pending, ack

    def done(self) -> bool:
        return self.ack.is_set() and bool(self.pending.done())

    def wait(self) -> None:
        self.ack.wait(30.0)
        self.pending.wait()


class _LateStore:
    """The store, but acknowledging each batch of the scheduler's writes only once ``ack`` is set."""

    refuses_bindings_late = True

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.ack = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[_LateAcknowledgement]:
        with self.store.deferred() as pending:
            yield _LateAcknowledgement(pending, self.ack)


def test_attempts_on_their_way_are_recorded_before_a_read_of_the_results(store: ClusterStore) -> None:
    late = _LateStore(store)
    recorded: list[Attempt] = []
    scheduler = SchedulerService(late, on_attempt=recorded.append)  # type: ignore[arg-type]
    scheduler.start()
    try:
        store.create("Node", make_node(name="n1"))
        store.create("Pod", make_pod(name="p"), "default")
        deadline = time.monotonic() + 20.0
        while not (store.get("Pod", "default", "p") or {}).get("spec", {}).get("nodeName"):
            assert time.monotonic() < deadline, "the pod was not bound"
            time.sleep(0.01)
        returned = threading.Event()

        def read_barrier() -> None:
            if scheduler.record_in_flight(20.0):
                returned.set()

        threading.Thread(target=read_barrier, daemon=True).start()
        assert not returned.wait(0.3), "the barrier waits for the attempt on its way"
        assert recorded == [], "recorded only once acknowledged"

        late.ack.set()

        assert returned.wait(10.0)
        assert [a.pod for a in recorded] == ["default/p"], "recorded before the barrier let the read go"
    finally:
        late.ack.set()
        scheduler.stop()
