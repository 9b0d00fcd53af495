"""Nothing acknowledged is lost: ``kill -9`` the server in the middle of writes, restart, compare."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx

from kss_sim.cluster.kinds.registry import kind_info
from tests.cluster.factories import node, objects_of_every_kind, pod
from tests.conftest import start_server

# Acknowledged objects must come back byte for byte, so nothing else may change them: neither the scheduler nor
# the controllers (the node lifecycle controller taints the cordoned node, the disruption controller writes the
# PodDisruptionBudget's status).
QUIET = {"KSS_SCHEDULER_ENABLED": "false", "KSS_CONTROLLERS": "false"}


def _collection(kind: str, namespace: str) -> str:
    """The URL of a kind's collection (in ``namespace`` for a namespaced kind)."""
    info = kind_info(kind)
    prefix = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
    return f"{prefix}/namespaces/{namespace}/{info.plural}" if info.namespaced else f"{prefix}/{info.plural}"


def test_kill_9_loses_no_acknowledged_write(tmp_path: Path, backend_url: str) -> None:
    database_url = backend_url  # SQLite, and PostgreSQL when KSS_TEST_POSTGRES_URL is set
    server = start_server(tmp_path, database_url, env=QUIET)
    acknowledged: dict[str, Any] = {}  # url -> last acknowledged body, or None when deleted
    try:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            for kind, obj in objects_of_every_kind("d"):
                url = _collection(kind, obj["metadata"].get("namespace", ""))
                r = c.post(url, json=obj)
                assert r.status_code == 201, r.text
                acknowledged[f"{url}/{obj['metadata']['name']}"] = r.json()
            r = c.patch(
                "/api/v1/nodes/node-d",
                json={"spec": {"unschedulable": True}},
                headers={"content-type": "application/merge-patch+json"},
            )
            acknowledged["/api/v1/nodes/node-d"] = r.json()
            assert c.delete("/api/v1/persistentvolumes/pv-d").status_code == 200
            acknowledged["/api/v1/persistentvolumes/pv-d"] = None
            c.post("/api/v1/nodes", json=node("counter"))

        stop = threading.Event()

        def writer() -> None:
            with httpx.Client(base_url=server.url, timeout=5) as wc:
                i = 0
                while not stop.is_set():
                    try:
                        r = wc.post("/api/v1/namespaces/burst/pods", json=pod(f"b{i}"))
                    except httpx.HTTPError:
                        return  # the server died under us: this write was never acknowledged
                    if r.status_code == 201:
                        acknowledged[f"/api/v1/namespaces/burst/pods/b{i}"] = r.json()
                    i += 1

        thread = threading.Thread(target=writer)
        thread.start()
        while len([k for k in acknowledged if "/burst/" in k]) < 20:
            thread.join(0.05)
        server.stop(kill=True)  # SIGKILL while the writer is still going
        stop.set()
        thread.join()
    finally:
        server.stop(kill=True)

    restarted = start_server(tmp_path, database_url, env=QUIET)
    try:
        with httpx.Client(base_url=restarted.url, timeout=10) as c:
            for url, body in acknowledged.items():
                r = c.get(url)
                if body is None:
                    assert r.status_code == 404, url
                else:
                    assert r.status_code == 200, url
                    assert r.json() == body, url
            # The resourceVersion sequence continues after the restart.
            latest = max(int(b["metadata"]["resourceVersion"]) for b in acknowledged.values() if b)
            fresh = c.post("/api/v1/nodes", json=node("after-restart")).json()
            assert int(fresh["metadata"]["resourceVersion"]) > latest
    finally:
        restarted.stop()
