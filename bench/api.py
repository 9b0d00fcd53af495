"""API latency under load: 50 concurrent clients creating pods in a real ``kss serve`` while its scheduler runs.

Usage: ``.venv/bin/python bench/api.py [--clients 50] [--pods 3000 | --duration S] [--rate R] [--nodes 100]``.
Starts ``kss serve`` on a free port with a fresh SQLite file (``KSS_SQLITE_SYNCHRONOUS`` FULL unless ``--sync``)
and the scheduler on, creates the nodes, then lets every client create pods (``POST``, each client on its own
keep-alive connection) until the count or the duration is reached: ``--rate R`` sends R creates/s over all clients
on a fixed schedule (open loop), without it each client sends as soon as its last request is answered. Prints the
latency percentiles, throughput, errors (anything but 201, or no answer), CPU of server and clients, how many pods
were bound when the load stopped and how long the scheduler took to bind the rest. ``BENCH_KEEP_LOG=FILE`` keeps
the server's log.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _serve import RawClient, latency_line, start

NAMESPACE = "bench"


def node(name: str) -> dict[str, Any]:
    """A roomy node: the pods of the run never run out of space."""
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "500"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": f"z{hash(name) % 3}"}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str) -> dict[str, Any]:
    """A small pending pod."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ]
        },
    }


async def create_nodes(client: httpx.AsyncClient, count: int) -> None:
    """Create ``count`` nodes, 16 at a time."""
    sem = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with sem:
            r = await client.post("/api/v1/nodes", json=node(f"node-{i:04d}"))
            if r.status_code != 201:
                raise SystemExit(f"creating node {i}: {r.status_code} {r.text}")

    await asyncio.gather(*(one(i) for i in range(count)))


async def load(
    url: str, clients: int, pods: int | None, duration: float | None, rate: float
) -> tuple[list[float], int, float]:
    """Run the clients; returns (latencies in seconds, errors, seconds).

    ``rate`` > 0: each client sends at ``rate / clients`` per second on a fixed schedule (open loop) and a
    latency is counted from the planned send time, so a late client shows up in the figures. ``rate`` 0: each
    client sends its next request as soon as the previous one is answered (closed loop, the server's capacity).
    """
    latencies: list[float] = []
    errors = [0]
    next_index = [0]
    samples: list[str] = []
    interval = clients / rate if rate > 0 else 0.0
    start_at = time.perf_counter()
    deadline = start_at + duration if duration else None

    async def worker(n: int) -> None:
        client = RawClient(url)
        planned = start_at + interval * n / clients  # spread the clients over one interval
        try:
            while True:
                if pods is not None and next_index[0] >= pods:
                    return
                if interval:
                    delay = planned - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    t0 = planned
                    planned += interval
                else:
                    t0 = time.perf_counter()
                if pods is not None and next_index[0] >= pods:
                    return
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                i = next_index[0]
                next_index[0] += 1
                body = orjson.dumps(pod(f"p-{i:06d}"))
                try:
                    status, payload = await client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
                    ok = status == 201
                    if not ok and len(samples) < 3:
                        samples.append(f"{status} {payload[:300]!r}")
                except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
                    ok = False
                    if len(samples) < 3:
                        samples.append(repr(exc))
                latencies.append(time.perf_counter() - t0)
                if not ok:
                    errors[0] += 1
        finally:
            await client.close()

    await asyncio.gather(*(worker(n) for n in range(clients)))
    for sample in samples:
        print(f"error: {sample}")
    return latencies, errors[0], time.perf_counter() - start_at


def count_bound(url: str) -> tuple[int, int]:
    """(pods bound, pods) in the benchmark's namespace."""
    r = httpx.get(f"{url}/api/v1/namespaces/{NAMESPACE}/pods", timeout=120)
    items = r.json()["items"]
    return sum(1 for p in items if (p.get("spec") or {}).get("nodeName")), len(items)


def main() -> int:
    """Parse arguments, start the server, run the load, print the figures."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    p.add_argument("--pods", type=int, default=3000, help="pods to create in all (default 3000)")
    p.add_argument("--duration", type=float, help="create pods for this many seconds instead of a fixed count")
    p.add_argument(
        "--rate", type=float, default=0, help="creates per second over all clients (open loop); 0: as fast as answered"
    )
    p.add_argument("--nodes", type=int, default=100, help="nodes in the cluster (default 100)")
    p.add_argument("--sync", choices=["FULL", "NORMAL"], default="FULL", help="KSS_SQLITE_SYNCHRONOUS (FULL)")
    p.add_argument("--no-scheduler", action="store_true", help="run with the scheduler off (API alone)")
    p.add_argument("--py-spy", type=Path, help="sample the server with py-spy during the load (collapsed stacks)")
    p.add_argument("--settle", type=float, default=300, help="wait this long for every pod to be bound (300 s)")
    args = p.parse_args()
    env = {"KSS_SQLITE_SYNCHRONOUS": args.sync, "KSS_SCHEDULER_ENABLED": "false" if args.no_scheduler else "true"}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        served = start(Path(tmp), env)
        try:
            asyncio.run(_nodes(served.url, args.nodes))
            pods = None if args.duration else args.pods
            spy = None
            if args.py_spy:
                spy_cmd = [str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw", "--threads"]
                spy_cmd += ["--gil", "--nonblocking", "--rate", "200", "-o", str(args.py_spy)]
                spy_cmd += ["--pid", str(served.process.pid)]
                spy = subprocess.Popen(spy_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1)
            cpu0 = served.cpu_seconds()
            own0 = time.process_time()
            latencies, errors, seconds = asyncio.run(load(served.url, args.clients, pods, args.duration, args.rate))
            cpu = served.cpu_seconds() - cpu0
            own = time.process_time() - own0
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait()
            bound, total = count_bound(served.url)
            print(
                f"clients {args.clients}, {f'{args.rate:g} creates/s' if args.rate else 'closed loop'}, "
                f"nodes {args.nodes}, synchronous={args.sync}, scheduler {'off' if args.no_scheduler else 'on'}"
            )
            print(f"creates: {len(latencies)} in {seconds:.1f} s ({len(latencies) / seconds:.0f}/s), errors {errors}")
            print(f"latency: {latency_line(latencies)}")
            print(
                f"CPU during the load: server {cpu:.1f} s ({cpu / seconds * 100:.0f}% of one core), "
                f"clients {own:.1f} s ({own / seconds * 100:.0f}%)"
            )
            print(f"bound when the load stopped: {bound}/{total}")
            if not args.no_scheduler and bound < total:
                t0 = time.perf_counter()
                deadline = t0 + args.settle
                while bound < total and time.perf_counter() < deadline:
                    time.sleep(1)
                    bound, total = count_bound(served.url)
                print(f"bound {bound}/{total} after {time.perf_counter() - t0:.1f} s more")
            print(f"server peak RSS {served.peak_rss_mb():.0f} MB, database {served.db_size_mb():.1f} MB")
        finally:
            served.stop()
            if os.environ.get("BENCH_KEEP_LOG"):
                shutil.copy(served.log, os.environ["BENCH_KEEP_LOG"])
    return 0


async def _nodes(url: str, count: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        await create_nodes(client, count)


if __name__ == "__main__":
    sys.exit(main())
