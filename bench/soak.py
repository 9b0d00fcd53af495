"""Churn soak: does ``kss serve``'s memory plateau under steady create/delete churn with watches open? (issue #35)

Usage: ``.venv/bin/python bench/soak.py [--minutes 30] [--writers 10] [--watches 10] [--nodes 20] [--every 30]``.
Starts ``kss serve`` (scheduler, controllers and kubelet on, a fresh SQLite file), creates ``--nodes`` nodes, opens
``--watches`` watches (half on pods, half on Events, all namespaces, following the stream as informers do), then
runs ``--writers`` writers, each creating a pod, waiting until it is bound, and deleting it (the default graceful
delete: the kubelet ends it after its 1 s grace period), over and over for ``--minutes``. Every ``--every``
seconds it prints the server's RSS (and its child processes', the scheduler's with ``KSS_SCHEDULER_PROCESS``), the
pods created so far, how many Events and pods the cluster holds, and
the database size. At the end: RSS at the first 5 minutes against the end, as the ratio issue #35 sets the bar
at (within 10 %).

``--trace-scheduler DIR``: the scheduler's process traces its allocations and writes a ``tracemalloc`` snapshot
into DIR every minute (``KSS_SCHEDULER_TRACEMALLOC``; it runs several times slower), to compare by traceback.
``--census-scheduler DIR``: it writes a census of its memory into DIR every minute (``KSS_SCHEDULER_MEMORY_CENSUS``:
RSS, glibc's heap, pymalloc's arenas and pools by size class, objects by type), to tell a table from the allocator.
``--census-api DIR``: the API process does the same (``KSS_API_MEMORY_CENSUS``), with its tables' sizes, the
controllers' backlogs and the cyclic garbage among the objects its collector policy froze.

Events live for ``KSS_EVENT_TTL_SECONDS`` (kube-apiserver's one hour by default), so a run shorter than that
grows the cluster's Events throughout; ``--event-ttl`` sets it for the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser
from _serve import RawClient, Served, start

NAMESPACE = "soak"


def rss_mb(served: Served) -> float:
    """The server's resident set size now, in MB."""
    for line in Path(f"/proc/{served.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def node(name: str) -> dict[str, Any]:
    """A Ready node with room for many small pods."""
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "500"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str) -> bytes:
    """A small pod that ends 1 s after its delete."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "soak"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}],
        },
    }
    return orjson.dumps(body)


class Watcher(threading.Thread):
    """Follows one watch stream (re-opened from its last resourceVersion when the server ends it)."""

    def __init__(self, url: str, path: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.path, self.stop = url, path, stop
        self.events = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        rv = httpx.get(f"{self.url}{self.path}", params={"limit": "1"}).json()["metadata"]["resourceVersion"]
        try:
            with httpx.Client(timeout=httpx.Timeout(10.0, read=None)) as client:
                while not self.stop.is_set():
                    params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true"}
                    with client.stream("GET", f"{self.url}{self.path}", params=params) as response:
                        for line in response.iter_lines():
                            if self.stop.is_set():
                                return
                            if not line:
                                continue
                            event = orjson.loads(line)
                            if event["type"] == "ERROR":
                                raise RuntimeError(f"watch error: {event['object']}")
                            rv = event["object"]["metadata"]["resourceVersion"]
                            self.events += 1
        except BaseException as exc:
            if not self.stop.is_set():
                self.error = exc


async def writer(url: str, index: int, deadline: float, created: list[int]) -> None:
    """Create a pod, wait for its binding, delete it; until the deadline."""
    client = RawClient(url)
    base = f"/api/v1/namespaces/{NAMESPACE}/pods"
    n = 0
    try:
        while time.monotonic() < deadline:
            name = f"w{index}-{n}"
            n += 1
            status, payload = await client.request("POST", base, pod(name))
            if status != 201:
                raise SystemExit(f"POST {name}: {status} {payload[:300]!r}")
            created[0] += 1
            for _ in range(600):  # bound within a minute, or the soak has found a problem
                status, payload = await client.request("GET", f"{base}/{name}")
                if status == 200 and orjson.loads(payload)["spec"].get("nodeName"):
                    break
                await asyncio.sleep(0.05)
            else:
                raise SystemExit(f"pod {name} was not bound within a minute")
            status, payload = await client.request("DELETE", f"{base}/{name}")
            if status not in (200, 202):
                raise SystemExit(f"DELETE {name}: {status} {payload[:300]!r}")
    finally:
        await client.close()


def count(url: str, path: str) -> int:
    """How many objects a list holds: a page of one and the count of the rest (``remainingItemCount``), so that
    counting 20,000 Events does not have the server build a 20 MB answer each sample (its buffers were in the RSS
    read after it: swings of 20-30 MB that were the bench's, not the churn's)."""
    page = httpx.get(f"{url}{path}", params={"limit": 1}, timeout=60).json()
    return len(page.get("items", [])) + int(page.get("metadata", {}).get("remainingItemCount") or 0)


async def soak(served: Served, args: Any) -> list[tuple[float, float, int, int, int, float, float]]:
    """Run the writers, sampling every ``args.every`` seconds; the samples (t, rss, created, events, pods, db,
    children's rss)."""
    start_time = time.monotonic()
    deadline = start_time + args.minutes * 60
    created = [0]
    tasks = [asyncio.create_task(writer(served.url, i, deadline, created)) for i in range(args.writers)]
    samples: list[tuple[float, float, int, int, int, float, float]] = []
    print(
        f"{'min':>6} {'RSS MB':>8} {'pods created':>13} {'Events':>8} {'pods':>6} {'db MB':>7} {'children MB':>12}",
        flush=True,
    )
    while time.monotonic() < deadline and not any(t.done() for t in tasks):
        await asyncio.sleep(min(args.every, max(0.0, deadline - time.monotonic())))
        t = (time.monotonic() - start_time) / 60
        rss, children = rss_mb(served), served.children_rss_mb()  # before the counts below ask anything of the server
        events = await asyncio.to_thread(count, served.url, f"/api/v1/namespaces/{NAMESPACE}/events")
        pods = await asyncio.to_thread(count, served.url, f"/api/v1/namespaces/{NAMESPACE}/pods")
        sample = (t, rss, created[0], events, pods, served.db_size_mb(), children)
        samples.append(sample)
        print(
            f"{t:6.1f} {rss:8.1f} {created[0]:13d} {events:8d} {pods:6d} {sample[5]:7.1f} {children:12.1f}", flush=True
        )
    for task in tasks:
        if task.done() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    await asyncio.gather(*tasks)
    return samples


def main() -> int:
    """Run the soak and print the plateau figure."""
    p = parser(__doc__)
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--writers", type=int, default=10)
    p.add_argument("--watches", type=int, default=10)
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    p.add_argument("--event-ttl", type=float, default=None, help="KSS_EVENT_TTL_SECONDS for the run")
    p.add_argument("--trace-scheduler", default=None, help="a directory for the scheduler process's snapshots")
    p.add_argument("--census-scheduler", default=None, help="a directory for the scheduler process's censuses")
    p.add_argument("--census-api", default=None, help="a directory for the API process's censuses")
    args = p.parse_args()
    env = {"KSS_EVENT_TTL_SECONDS": str(args.event_ttl)} if args.event_ttl is not None else {}
    if args.trace_scheduler is not None:
        env["KSS_SCHEDULER_TRACEMALLOC"] = str(Path(args.trace_scheduler).resolve())
    if args.census_scheduler is not None:
        env["KSS_SCHEDULER_MEMORY_CENSUS"] = str(Path(args.census_scheduler).resolve())
    if args.census_api is not None:
        env["KSS_API_MEMORY_CENSUS"] = str(Path(args.census_api).resolve())
    with tempfile.TemporaryDirectory(prefix="kss-soak-") as tmp:
        served = start(Path(tmp), env)
        stop = threading.Event()
        watchers: list[Watcher] = []
        try:
            with httpx.Client(base_url=served.url, timeout=60) as client:
                client.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
                for i in range(args.nodes):
                    client.post("/api/v1/nodes", json=node(f"soak-node-{i:03d}")).raise_for_status()
            for i in range(args.watches):
                watchers.append(Watcher(served.url, "/api/v1/pods" if i % 2 == 0 else "/api/v1/events", stop))
                watchers[-1].start()
            samples = asyncio.run(soak(served, args))
        finally:
            stop.set()
            served.stop()
        for w in watchers:
            with contextlib.suppress(RuntimeError):
                w.join(timeout=5)
            if w.error is not None:
                print(f"watch {w.path} failed: {w.error!r}")
        after_five = [s for s in samples if s[0] >= 5.0]
        if after_five:
            first, last = after_five[0], samples[-1]
            print(
                f"RSS at {first[0]:.1f} min {first[1]:.0f} MB, at {last[0]:.1f} min {last[1]:.0f} MB: "
                f"{(last[1] / first[1] - 1) * 100:+.1f} %; {last[2]} pods created "
                f"({last[2] / (last[0] * 60):.1f}/s), watch events seen {sum(w.events for w in watchers)}"
            )
            if first[6] or last[6]:  # the scheduler in a process of its own: its memory is the server's too
                both_first, both_last = first[1] + first[6], last[1] + last[6]
                print(
                    f"with its child processes: {both_first:.0f} MB at {first[0]:.1f} min, {both_last:.0f} MB at "
                    f"{last[0]:.1f} min: {(both_last / both_first - 1) * 100:+.1f} %"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
