"""The 1,200-node trace scheduled by ``kss serve``: every object created through the Kubernetes API.

Usage: ``.venv/bin/python bench/serve_trace.py [--nodes FILE] [--pods FILE] [--concurrency 16]``.
Starts ``kss serve`` on a free port with a fresh SQLite file (``KSS_SQLITE_SYNCHRONOUS`` FULL unless
``--sync NORMAL``) and the scheduler on, watches pods, creates the nodes and then the pods in file order with
``--concurrency`` requests in flight (like ``kubectl apply -f``, which sends one at a time, but faster), and waits
until every pod is bound or marked unschedulable (PodScheduled=False). Prints the wall time (first create to last
pod settled), pods/s, the server's peak RSS and CPU time, and the database size.

``--py-spy DIR`` profiles the server over the same span (``--py-spy-tail``: from the last create on, the scheduler's
backlog with the API idle): two py-spy recorders (``DIR/gil.txt``: the thread holding the GIL; ``DIR/all.txt``:
every thread, idle ones included) and each thread's CPU seconds from ``/proc`` (``DIR/threads.json``);
``bench/serve_profile.py DIR`` prints the split.

Pods reach the scheduler in commit order; with concurrency > 1 that is file order up to the requests in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _serve import WORKLOADS, Profiler, latency_line, machine_busy_seconds, post_all, start

TRACE = WORKLOADS / "alibaba-gpu-trace"


def load_yaml(path: Path) -> list[dict[str, Any]]:
    """Every document of a multi-document YAML file."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(path.read_text(), Loader=loader) if d]


def collection_path(obj: dict[str, Any]) -> str:
    """Where to POST ``obj``."""
    if obj["kind"] == "Node":
        return "/api/v1/nodes"
    if obj["kind"] == "Pod":
        return f"/api/v1/namespaces/{obj['metadata'].get('namespace') or 'default'}/pods"
    raise SystemExit(f"unexpected kind {obj['kind']}")


async def create_all(url: str, objects: list[dict[str, Any]], concurrency: int) -> list[float]:
    """POST every object, ``concurrency`` at a time, taking them in order; returns the latencies."""
    return await post_all(url, [(collection_path(o), orjson.dumps(o)) for o in objects], concurrency)


class PodWatch:
    """Follows every pod through a watch; knows which are bound and which were found unschedulable."""

    def __init__(self, url: str, resource_version: str) -> None:
        self.bound: set[str] = set()
        self.unschedulable: set[str] = set()
        self.changed = threading.Event()
        self.error: BaseException | None = None
        self._url = url
        self._rv = resource_version
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            params = {"watch": "1", "resourceVersion": self._rv, "timeoutSeconds": "7200"}
            with (
                httpx.Client(timeout=httpx.Timeout(30, read=None)) as c,
                c.stream("GET", f"{self._url}/api/v1/pods", params=params) as r,
            ):
                for line in r.iter_lines():
                    if self._stop:
                        return
                    if line:
                        self._event(orjson.loads(line))
        except BaseException as exc:  # reported by the main thread
            if not self._stop:
                self.error = exc
                self.changed.set()

    def _event(self, event: dict[str, Any]) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if event.get("type") == "ERROR":
            raise RuntimeError(f"watch error: {obj}")
        if (obj.get("spec") or {}).get("nodeName"):
            self.bound.add(key)
            self.unschedulable.discard(key)
        else:
            for c in (obj.get("status") or {}).get("conditions") or []:
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    self.unschedulable.add(key)
        self.changed.set()

    def settled(self) -> int:
        """Pods bound or found unschedulable."""
        return len(self.bound | self.unschedulable)

    def stop(self) -> None:
        """Stop following (the thread ends with the connection)."""
        self._stop = True


def main() -> int:
    """Parse arguments, start the server, load the trace, wait for the scheduler, print the figures."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=Path, default=TRACE / "nodes-1200.yaml")
    p.add_argument("--pods", type=Path, default=TRACE / "pods-1200.yaml")
    p.add_argument("--concurrency", type=int, default=16, help="create requests in flight (default 16)")
    p.add_argument("--sync", choices=["FULL", "NORMAL"], default="FULL", help="KSS_SQLITE_SYNCHRONOUS (FULL)")
    p.add_argument("--timeout", type=float, default=3600, help="give up after this many seconds (3600)")
    p.add_argument("--py-spy", type=Path, metavar="DIR", help="profile the server into DIR (bench/serve_profile.py)")
    p.add_argument(
        "--py-spy-tail",
        action="store_true",
        help="with --py-spy: profile only from the last create on (the scheduler's backlog, the API idle)",
    )
    args = p.parse_args()
    nodes, pods = load_yaml(args.nodes), load_yaml(args.pods)
    keys = {f"{o['metadata'].get('namespace') or 'default'}/{o['metadata']['name']}" for o in pods}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        served = start(Path(tmp), {"KSS_SQLITE_SYNCHRONOUS": args.sync})
        watch: PodWatch | None = None
        try:
            rv = httpx.get(f"{served.url}/api/v1/pods", timeout=30).json()["metadata"]["resourceVersion"]
            watch = PodWatch(served.url, rv)
            profiler = Profiler(served.process.pid, args.py_spy) if args.py_spy and not args.py_spy_tail else None
            cpu0 = cpu_profiled0 = served.cpu_seconds()
            child0 = served.children_cpu_seconds()
            client0, busy0 = time.process_time(), machine_busy_seconds()
            t0 = time.perf_counter()
            node_latencies = asyncio.run(create_all(served.url, nodes, args.concurrency))
            t_nodes = time.perf_counter() - t0
            pod_latencies = asyncio.run(create_all(served.url, pods, args.concurrency))
            t_pods = time.perf_counter() - t0 - t_nodes
            settled_by_last_create = watch.settled()  # how far the scheduler kept pace with the creates
            if args.py_spy and args.py_spy_tail:
                profiler = Profiler(served.process.pid, args.py_spy)  # attaching takes ~1 s of the tail
                cpu_profiled0 = served.cpu_seconds()
            last_report = time.perf_counter()
            while watch.settled() < len(keys):
                if watch.error is not None:
                    raise SystemExit(f"watch failed: {watch.error!r}")
                if time.perf_counter() - t0 > args.timeout:
                    raise SystemExit(f"timed out: {watch.settled()}/{len(keys)} pods settled")
                watch.changed.wait(1.0)
                watch.changed.clear()
                if time.perf_counter() - last_report > 30:
                    last_report = time.perf_counter()
                    elapsed = last_report - t0
                    print(f"  ... {elapsed:.0f} s: {watch.settled()}/{len(keys)} settled", flush=True)
            wall = time.perf_counter() - t0
            # The scheduler's own process (KSS_SCHEDULER_PROCESS) counts as the server's.
            child_cpu = served.children_cpu_seconds() - child0
            cpu = served.cpu_seconds() - cpu0 + child_cpu
            client_cpu, busy = time.process_time() - client0, machine_busy_seconds() - busy0
            if profiler is not None:
                profiler.stop(served.cpu_seconds() - cpu_profiled0)
            print(
                f"trace {args.nodes.name} + {args.pods.name}: {len(nodes)} nodes, {len(pods)} pods, "
                f"concurrency {args.concurrency}, synchronous={args.sync}"
            )
            print(f"nodes created in {t_nodes:.1f} s ({len(nodes) / t_nodes:.0f}/s): {latency_line(node_latencies)}")
            print(f"pods created in {t_pods:.1f} s ({len(pods) / t_pods:.0f}/s): {latency_line(pod_latencies)}")
            print(f"settled when the last create returned: {settled_by_last_create}/{len(keys)}")
            bound = len(watch.bound & keys)
            print(
                f"wall time {wall:.1f} s, {len(pods) / wall:.0f} pods/s "
                f"({bound} bound, {len(keys) - bound} unschedulable)"
            )
            print(
                f"server: peak RSS {served.peak_rss_mb():.0f} MB, CPU {cpu:.1f} s"
                + (
                    f" (of which the scheduler process {child_cpu:.1f} s, its peak RSS "
                    f"{served.children_peak_rss_mb():.0f} MB)"
                    if child_cpu
                    else ""
                )
                + "; "
                f"database {served.db_size_mb():.0f} MB"
            )
            # How much of the machine the run kept busy: the wall cannot fall below (server + client CPU) / cores
            # however the server's work is spread over threads or processes.
            cores = os.cpu_count() or 1
            print(
                f"client CPU {client_cpu:.1f} s; the machine busy {busy:.1f} of {cores * wall:.1f} core-seconds "
                f"({cores} cores); floor (server + client CPU) / cores = {(cpu + client_cpu) / cores:.1f} s"
            )
        finally:
            if watch is not None:
                watch.stop()
            served.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
