"""The pages' pod index: caught up from the change log (one row per changed pod), and kept warm by its thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.db import make_engine, upgrade_database
from kss_sim.web import pod_index
from kss_sim.web.pod_index import PodIndex, PodRow, pod_row
from kss_sim.web.ports import ResourceAmounts


class CountingStore:
    """A real store whose full lists and row computations are counted."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.selects = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def select(self, kind: str, *args: Any, **kwargs: Any) -> Any:
        self.selects += 1
        return self.store.select(kind, *args, **kwargs)


def pod(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }


def open_store(tmp_path: Path) -> ClusterStore:
    engine = make_engine(f"sqlite:///{tmp_path / 'kss.db'}", sqlite_synchronous="NORMAL")
    upgrade_database(engine)
    return ClusterStore.open(engine)


def relabel(store: ClusterStore, name: str, value: str) -> None:
    current = store.get("Pod", "default", name)
    assert current is not None
    current["metadata"]["labels"] = {"v": value}
    store.update("Pod", current)


def test_catch_up_computes_one_row_per_changed_pod_from_its_last_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path)
    rows_made: list[str] = []
    index = PodIndex(lambda obj: ResourceAmounts())
    counting = CountingStore(store)
    for name in ("a", "b", "gone"):
        store.create("Pod", pod(name))
    index.get(counting)
    assert counting.selects == 1
    for value in ("1", "2", "3"):
        relabel(store, "a", value)
    store.delete("Pod", "default", "gone")
    store.create("Pod", pod("late"))
    store.delete("Pod", "default", "late")
    store.create("Pod", pod("new"))

    def counted_row(obj: dict[str, Any], requests: Any) -> PodRow:
        rows_made.append(obj["metadata"]["name"])
        return pod_row(obj, requests)

    monkeypatch.setattr(pod_index, "pod_row", counted_row)
    snap = index.get(counting)
    assert counting.selects == 1, "caught up from the log, not listed again"
    assert sorted(rows_made) == ["a", "new"], "one row per pod still there, none for created-then-deleted"
    assert [r.name for r in snap.rows] == ["a", "b", "new"]
    assert snap.rows[0].labels == {"v": "3"}
    assert snap.resource_version == store.resource_version


def test_keep_warm_builds_at_once_and_catches_up_only_while_viewed(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    for i in range(20):
        store.create("Pod", pod(f"p{i}"))
    counting = CountingStore(store)
    index = PodIndex(lambda obj: ResourceAmounts())
    stop = threading.Event()
    warm = threading.Thread(
        target=index.keep_warm,
        args=(lambda: counting, stop),
        kwargs={"interval": 0.05, "viewed_within": 0.5},
        daemon=True,
    )
    warm.start()
    try:
        deadline = time.monotonic() + 10
        while counting.selects == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert counting.selects == 1, "built before any page asked"

        # Nobody has viewed a page: changes are left for the next page to read.
        relabel(store, "p0", "unseen")
        time.sleep(0.3)
        assert index._snapshot is not None and index._snapshot.resource_version < store.resource_version

        # A page reads it: from then on it follows the store by itself.
        first = index.get(counting)
        relabel(store, "p1", "seen")
        deadline = time.monotonic() + 10
        while index._snapshot.resource_version < store.resource_version and time.monotonic() < deadline:
            time.sleep(0.01)
        assert index._snapshot.resource_version == store.resource_version
        assert index._snapshot is not first
        assert {r.name: r.labels for r in index._snapshot.rows}["p1"] == {"v": "seen"}
        assert counting.selects == 1, "caught up, never listed again"

        # Viewed too long ago: it stops following.
        time.sleep(0.6)
        relabel(store, "p2", "later")
        time.sleep(0.3)
        assert index._snapshot.resource_version < store.resource_version
    finally:
        stop.set()
        warm.join(timeout=5)
    assert not warm.is_alive(), "the thread ends when told"
