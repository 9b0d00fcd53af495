"""CPU per write of the store's per-pod writes, the generic path against the cheaper one, in one process.

    .venv/bin/python bench/store_writes.py [--rounds 10] [--writes 200]

Each round times ``--writes`` writes of one path on a fresh in-memory store (setup not timed), the paths
alternating round by round, and prints the thread CPU per write (min and median over rounds):

- the scheduler's binding with result annotations: each annotation key checked again (as before) / its check
  kept per key;
- an Event as ``create_event`` records it: through ``ClusterStore.create`` (as before) / built by the server;
- the kubelet's status write (Running) of a bound pod with result annotations: a merge patch through
  ``ClusterStore.patch`` (as before) / ``merge_pod_status``;
- a group commit of those writes to SQLite (rolled back): ``write_changes`` as before (a statement per run of
  one operation, built on each call) / grouped per uid, with statements built once.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, insert, update

from kss_sim.cluster.admission import pipeline
from kss_sim.cluster.admission.validation.metadata import qualified_name_errors
from kss_sim.cluster.errors import Cause
from kss_sim.cluster.storage import pod_writes, repository
from kss_sim.cluster.storage.models import ClusterObject, ClusterState
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.cluster.storage.versions import DEFAULT_MANAGER
from kss_sim.controllers.pod_status import running_status
from kss_sim.db import make_engine, upgrade_database
from kss_sim.kube.objects import Obj

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
    now = store._versions.timestamp()
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
            store._pod_writes._create_built_event(event, pod_writes.SCHEDULER_MANAGER, event["firstTimestamp"])

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


def _write_changes_before(conn: Connection, changes: list[repository.Change], resource_version: int) -> None:
    """``repository.write_changes`` as it was before (7281e48): a run of one operation per executemany, the
    statements built on each call."""
    run: list[dict[str, Any]] = []
    run_op = ""

    def flush() -> None:
        if not run:
            return
        if run_op == "insert":
            conn.execute(insert(ClusterObject), run)
        elif run_op == "update":
            conn.execute(repository._UPDATE, run)
        else:
            conn.execute(repository._DELETE, run)

    for change in changes:
        if change.op != run_op:
            flush()
            run, run_op = [], change.op
        run.append(repository._params(change.op, change.row))
    flush()
    conn.execute(update(ClusterState).where(ClusterState.id == 1).values(resource_version=resource_version))


def _commit(grouped: bool, pods_per_batch: int) -> Callable[[ClusterStore, list[Obj]], Callable[[], None]]:
    """Transactions of ``pods_per_batch`` pods' writes as the tail makes them: per pod its binding, its status
    and its Event (the pods exist before). Timed per pod."""

    def prepare(store: ClusterStore, pods: list[Obj]) -> Callable[[], None]:
        existing: list[repository.Change] = []
        batches: list[list[repository.Change]] = [[]]
        for i, pod in enumerate(pods):
            meta = pod["metadata"]
            text = orjson_text(pod)
            existing.append(
                repository.Change("insert", repository.Row(meta["uid"], "Pod", "default", meta["name"], i, text))
            )
            if len(batches[-1]) >= 3 * pods_per_batch:
                batches.append([])
            for step in range(2):
                row = repository.Row(meta["uid"], "Pod", "default", meta["name"], 10_000 + 2 * i + step, text)
                batches[-1].append(repository.Change("update", row))
            event = repository.Row(f"e{i}", "Event", "default", f"e{i}", 20_000 + i, '{"kind":"Event"}')
            batches[-1].append(repository.Change("insert", event))
        directory = tempfile.mkdtemp(prefix="kss-bench-")
        engine = make_engine(f"sqlite:///{Path(directory) / 'kss.db'}")
        upgrade_database(engine)
        with engine.begin() as conn:
            repository.write_changes(conn, existing, 1)
        write = repository.write_changes if grouped else _write_changes_before

        def run() -> None:
            with engine.connect() as conn:
                for batch in batches:
                    transaction = conn.begin()
                    write(conn, batch, 30_000)
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


def _binding(cached: bool) -> Callable[[ClusterStore, list[Obj]], Callable[[], None]]:
    """The scheduler's binding with its result annotations (new keys on every pod); ``cached=False`` checks each
    annotation key again, as before."""

    def prepare(store: ClusterStore, pods: list[Obj]) -> Callable[[], None]:
        names = [f"q{i}" for i in range(len(pods))]
        for name in names:
            store.create("Pod", _pod(name), "default")
        check = pipeline._annotation_key_errors

        def uncached(key: str) -> tuple[Cause, ...]:
            return tuple(qualified_name_errors("metadata.annotations", key.lower()))

        def run() -> None:
            pipeline._annotation_key_errors = check if cached else uncached  # type: ignore[assignment]
            try:
                for name in names:
                    store.bind_pod("default", name, "n1", annotations=ANNOTATIONS, copy=False)
            finally:
                pipeline._annotation_key_errors = check

        return run

    return prepare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    pairs = [
        ("Event", _event_generic, _event_built),
        ("binding with result annotations", _binding(False), _binding(True)),
        ("kubelet status", _status_patch, _status_merge),
        ("commit, 1 pod per batch (SQL per pod)", _commit(False, 1), _commit(True, 1)),
        ("commit, 50 pods per batch (SQL per pod)", _commit(False, 50), _commit(True, 50)),
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
