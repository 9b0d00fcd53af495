"""CPU per write of the store's per-pod writes, the generic path against the cheaper one, in one process.

    .venv/bin/python bench/store_writes.py [--rounds 10] [--writes 200]

Each round times ``--writes`` writes of one path on a fresh in-memory store (setup not timed), the paths
alternating round by round, and prints the thread CPU per write (min and median over rounds):

- an Event as ``create_event`` records it: through ``ClusterStore.create`` (as before) / built by the server;
- the kubelet's status write (Running) of a bound pod with result annotations: a merge patch through
  ``ClusterStore.patch`` (as before) / ``merge_pod_status``;
- a group commit of those writes to SQLite: the runs in order (as before) / grouped per uid.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.cluster import pod_writes, repository
from app.cluster.store import DEFAULT_MANAGER, ClusterStore
from app.controllers.pod_status import running_status
from app.db import make_engine, upgrade_database

Obj = dict[str, Any]
# Result annotations of the size kss serve writes (2.4 kB per pod above 50 nodes).
ANNOTATIONS = {f"kss.sigs.k8s.io/result-{k}": "x" * 230 for k in range(10)}


def _pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}}
            ]
        },
    }


def _bound_pods(count: int) -> tuple[ClusterStore, list[Obj]]:
    store = ClusterStore(None)
    store.create("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    pods = []
    for i in range(count):
        store.create("Pod", _pod(f"p{i}"), "default")
        pods.append(store.bind_pod("default", f"p{i}", "n1", annotations=ANNOTATIONS))
    return store, pods


def _event(store: ClusterStore, pod: Obj, seq: int) -> Obj:
    """The Event ``create_event`` builds for a binding (its name made unique by ``seq``)."""
    meta = pod["metadata"]
    now = store._timestamp()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{seq:016x}", "namespace": "default"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": meta["name"],
            "uid": meta["uid"],
            "apiVersion": "v1",
            "resourceVersion": meta["resourceVersion"],
        },
        "reason": "Scheduled",
        "message": f"Successfully assigned default/{meta['name']} to n1",
        "type": "Normal",
        "source": {"component": "default-scheduler"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler",
        "action": "Binding",
    }


def _event_generic(store: ClusterStore, pods: list[Obj]) -> Callable[[], None]:
    events = [_event(store, p, i) for i, p in enumerate(pods)]

    def run() -> None:
        for event in events:
            store.create("Event", event, "default", manager=pod_writes.SCHEDULER_MANAGER)

    return run


def _event_built(store: ClusterStore, pods: list[Obj]) -> Callable[[], None]:
    events = [_event(store, p, i) for i, p in enumerate(pods)]

    def run() -> None:
        for event in events:
            pod_writes._create_built_event(store, event, pod_writes.SCHEDULER_MANAGER, event["firstTimestamp"])

    return run


def _statuses(pods: list[Obj]) -> list[tuple[Obj, Obj]]:
    now = "2026-11-25T09:00:00Z"
    return [
        (p, running_status(p, now=now, host_ips=["10.0.0.1"], pod_ips=[f"10.1.{i // 250}.{i % 250}"]))
        for i, p in enumerate(pods)
    ]


def _status_patch(store: ClusterStore, pods: list[Obj]) -> Callable[[], None]:
    writes = _statuses(pods)

    def run() -> None:
        for pod, status in writes:
            body = {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]}, "status": status}
            store.patch("Pod", "default", pod["metadata"]["name"], body, "merge", subresource="status")

    return run


def _status_merge(store: ClusterStore, pods: list[Obj]) -> Callable[[], None]:
    writes = _statuses(pods)

    def run() -> None:
        for pod, status in writes:
            meta = pod["metadata"]
            store.merge_pod_status(
                "default", meta["name"], status, resource_version=meta["resourceVersion"], manager=DEFAULT_MANAGER
            )

    return run


def _commit(grouped: bool) -> Callable[[ClusterStore, list[Obj]], Callable[[], None]]:
    """One transaction of a batch as the tail makes it: per pod its binding, its status and its Event."""

    def prepare(store: ClusterStore, pods: list[Obj]) -> Callable[[], None]:
        changes: list[repository.Change] = []
        for i, pod in enumerate(pods):
            meta = pod["metadata"]
            row = repository.Row(meta["uid"], "Pod", "default", meta["name"], 2 * i, orjson_text(pod))
            changes.append(repository.Change("insert", row))
        for i, pod in enumerate(pods):
            meta = pod["metadata"]
            for step in range(2):
                row = repository.Row(
                    meta["uid"], "Pod", "default", meta["name"], 10_000 + 2 * i + step, orjson_text(pod)
                )
                changes.append(repository.Change("update", row))
            event = repository.Row(f"e{i}", "Event", "default", f"e{i}", 20_000 + i, '{"kind":"Event"}')
            changes.append(repository.Change("insert", event))
        directory = tempfile.mkdtemp(prefix="kss-bench-")
        engine = make_engine(f"sqlite:///{Path(directory) / 'kss.db'}")
        upgrade_database(engine)
        with engine.begin() as conn:
            repository.write_changes(conn, changes[: len(pods)], 1)  # the pods exist before the batch
        batch = changes[len(pods) :]

        def run() -> None:
            with engine.connect() as conn:
                transaction = conn.begin()
                if grouped:
                    repository.write_changes(conn, batch, 30_000)
                else:
                    repository._write_in_order(conn, batch)
                transaction.rollback()

        return run

    return prepare


def orjson_text(obj: Obj) -> str:
    import orjson

    return orjson.dumps(obj).decode()


def _measure(prepare: Callable[[ClusterStore, list[Obj]], Callable[[], None]], writes: int) -> float:
    store, pods = _bound_pods(writes)
    run = prepare(store, pods)
    start = time.thread_time()
    run()
    return (time.thread_time() - start) / writes * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    pairs = [
        ("Event", _event_generic, _event_built),
        ("kubelet status", _status_patch, _status_merge),
        ("commit (per pod: 2 updates + 1 Event)", _commit(False), _commit(True)),
    ]
    print(f"{args.rounds} rounds x {args.writes} writes, thread CPU per write (µs): min / median")
    for label, before, after in pairs:
        times: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            times["before"].append(_measure(before, args.writes))
            times["after"].append(_measure(after, args.writes))
        b, a = times["before"], times["after"]
        print(
            f"{label:40s} before {min(b):7.1f} / {statistics.median(b):7.1f}"
            f"   after {min(a):7.1f} / {statistics.median(a):7.1f}"
        )


if __name__ == "__main__":
    main()
