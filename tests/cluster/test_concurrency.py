"""Many clients writing at once over HTTP: no lost update, resourceVersions unique and increasing."""

from __future__ import annotations

import threading

import httpx

from tests.cluster.factories import node, pod
from tests.conftest import Server

WORKERS = 8
ROUNDS = 10


def test_concurrent_creates_and_updates_lose_nothing(server: Server) -> None:
    with httpx.Client(base_url=server.url) as c:
        c.post("/api/v1/nodes", json=node("shared-counter"))
    versions: list[list[int]] = [[] for _ in range(WORKERS)]
    conflicts = [0]

    def work(worker: int) -> None:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            for i in range(ROUNDS):
                r = c.post("/api/v1/namespaces/conc/pods", json=pod(f"w{worker}-{i}"))
                assert r.status_code == 201, r.text
                versions[worker].append(int(r.json()["metadata"]["resourceVersion"]))
                while True:  # optimistic concurrency: read, modify, write, retry on 409
                    current = c.get("/api/v1/nodes/shared-counter").json()
                    annotations = current["metadata"].setdefault("annotations", {})
                    annotations["count"] = str(int(annotations.get("count", "0")) + 1)
                    r = c.put("/api/v1/nodes/shared-counter", json=current)
                    if r.status_code == 409:
                        assert r.json()["reason"] == "Conflict"
                        conflicts[0] += 1
                        continue
                    assert r.status_code == 200, r.text
                    versions[worker].append(int(r.json()["metadata"]["resourceVersion"]))
                    break

    threads = [threading.Thread(target=work, args=(w,)) for w in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    with httpx.Client(base_url=server.url) as c:
        final = c.get("/api/v1/nodes/shared-counter").json()
        pods = c.get("/api/v1/namespaces/conc/pods").json()["items"]
    assert final["metadata"]["annotations"]["count"] == str(WORKERS * ROUNDS)
    assert len(pods) == WORKERS * ROUNDS
    every = [v for per_worker in versions for v in per_worker]
    assert len(every) == len(set(every)), "a resourceVersion was handed out twice"
    for per_worker in versions:
        assert per_worker == sorted(per_worker), "versions seen by one client went backwards"
