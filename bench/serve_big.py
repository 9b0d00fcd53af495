"""A production-sized cluster through ``kss serve``: 5,000 nodes, then 50,000 pods created in bursts (issue #20).

Usage: ``.venv/bin/python bench/serve_big.py [--nodes 5000] [--pods 50000] [--burst 500] [--interval 5]
[--concurrency 32]``.
Starts ``kss serve`` on a free port with a fresh SQLite file (``KSS_SQLITE_SYNCHRONOUS`` FULL unless ``--sync``),
scheduler, controllers and kubelet on (the defaults), creates the namespaces and the nodes (three zones, a few
instance types, a tenth with GPUs), then the pods in bursts: a burst of ``--burst`` creates every ``--interval``
seconds (on a fixed schedule: a burst that starts late is counted), each burst's creates ``--concurrency`` in flight.
Pods come in a handful of shapes as Deployments make them: web servers spread over zones (ScheduleAnyway), APIs
preferring other nodes than their replicas, workers and batch pods with plain requests, caches that must not share
a node with a replica (required anti-affinity), GPU pods on GPU nodes.

One watch on every pod (in the same event loop as the creates) notes when each pod is first seen bound or
PodScheduled=False. Printed: each pod's lag (its create answered -> seen settled) p50/p99/max, the lag at the end
(last create answered -> last pod settled), pods bound / unschedulable, the attempts recorded in the results
database (rows, pods with a row, and when the last pod's row appeared), create latency during the bursts
(p50/p99/max, per request from its send) and how late the client's own event loop woke meanwhile (the part
of those figures that is the load generator's or the machine's), bursts that started late, the server's CPU, peak
RSS (``VmHWM``) and the database size. ``--py-spy DIR`` profiles the server from the first pod create to the last
pod settled, as ``bench/serve_trace.py`` does (``bench/serve_profile.py DIR`` prints the split).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _serve import Profiler, RawClient, Served, latency_line, percentile, start

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
# (instance type, cpu, memory, share of the nodes); GPU nodes come on top of these.
INSTANCE_TYPES = (
    ("m6i.4xlarge", "16", "64Gi", 0.4),
    ("m6i.8xlarge", "32", "128Gi", 0.35),
    ("r6i.8xlarge", "32", "256Gi", 0.25),
)
GPU_EVERY = 10  # every tenth node is a GPU node (p4d-like: 8 GPUs)
NAMESPACES = tuple(f"team-{i:02d}" for i in range(10))
ROLLOUTS = 4  # apps whose pods are being created at the same time


def node_object(i: int) -> dict[str, Any]:
    """Node ``i``: a zone, an instance type, the well-known labels and capacity a cloud node reports."""
    name = f"node-{i:05d}"
    zone = ZONES[i % len(ZONES)]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone,
    }
    if i % GPU_EVERY == GPU_EVERY - 1:
        itype, cpu, memory, extra = "p4d.24xlarge", "96", "1152Gi", {"nvidia.com/gpu": "8"}
        labels["accelerator"] = "nvidia-a100"
        taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    else:
        r = (i * 0.6180339887) % 1.0  # a fixed spread of the types over the nodes
        itype, cpu, memory = INSTANCE_TYPES[-1][:3]
        acc = 0.0
        for t, c, m, share in INSTANCE_TYPES:
            acc += share
            if r < acc:
                itype, cpu, memory = t, c, m
                break
        extra, taints = {}, []
    labels["node.kubernetes.io/instance-type"] = itype
    capacity = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "200Gi", **extra}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"podCIDR": f"10.{(i >> 8) & 255}.{i & 255}.0/24", **({"taints": taints} if taints else {})},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


@dataclass(frozen=True)
class Shape:
    """A kind of workload: its share of the pods, how many replicas each app has, its requests and its rules."""

    name: str
    share: float
    replicas: int
    cpu: str
    memory: str
    gpus: int = 0
    spread_zones: bool = False  # topologySpreadConstraints over zones, ScheduleAnyway
    prefer_apart: bool = False  # preferred anti-affinity to its replicas on the hostname
    require_apart: bool = False  # required anti-affinity to its replicas on the hostname


SHAPES = (
    Shape("web", 0.40, 100, "250m", "256Mi", spread_zones=True),
    Shape("api", 0.20, 50, "500m", "1Gi", prefer_apart=True),
    Shape("worker", 0.22, 200, "1", "2Gi"),
    Shape("batch", 0.13, 250, "2", "8Gi"),
    Shape("cache", 0.03, 30, "500m", "4Gi", require_apart=True),
    Shape("gpu", 0.02, 20, "8", "64Gi", gpus=1),
)


def pod_objects(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` pods: the apps of every shape in a shuffled order, each app's replicas in a run as its Deployment
    creates them, ``ROLLOUTS`` apps at a time interleaved ten replicas at a time (rollouts overlap)."""
    rng = random.Random(seed)
    apps: list[list[dict[str, Any]]] = []
    for shape in SHAPES:
        total = max(1, round(count * shape.share))
        for a in range(0, total, shape.replicas):
            app = f"{shape.name}-{a // shape.replicas:03d}"
            namespace = NAMESPACES[len(apps) % len(NAMESPACES)]
            template_hash = f"{rng.getrandbits(32):08x}"
            replicas = min(shape.replicas, total - a)
            apps.append([pod_object(shape, app, namespace, template_hash) for _ in range(replicas)])
    rng.shuffle(apps)
    out: list[dict[str, Any]] = []
    waiting = iter(apps)
    active = [app for _, app in zip(range(ROLLOUTS), waiting, strict=False)]
    while active:
        for k, members in enumerate(active):
            out.extend(members[:10])
            del members[:10]
            if not members:
                active[k] = next(waiting, [])
        active = [a for a in active if a]
    return out[:count]


_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the 27 characters of generated names
_SERIAL = itertools.count()


def _suffix(serial: int) -> str:
    """Five characters unique per ``serial`` (< 27**5) that look random: a multiplier coprime with 27**5."""
    value = serial * 1_000_003 % 27**5
    out = []
    for _ in range(5):
        value, digit = divmod(value, 27)
        out.append(_ALPHABET[digit])
    return "".join(out)


def pod_object(shape: Shape, app: str, namespace: str, template_hash: str) -> dict[str, Any]:
    """One replica of ``app``: a Deployment's pod (labels, requests, its shape's rules), created without owner."""
    suffix = _suffix(next(_SERIAL))
    labels = {"app": app, "tier": shape.name, "pod-template-hash": template_hash}
    requests: dict[str, str] = {"cpu": shape.cpu, "memory": shape.memory}
    limits: dict[str, str] = {"memory": shape.memory}
    if shape.gpus:
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(shape.gpus)
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": shape.name,
                "image": f"registry.example.com/{shape.name}:1.{len(app) % 7}",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": requests, "limits": limits},
            }
        ],
        "terminationGracePeriodSeconds": 30,
    }
    selector = {"matchLabels": {"app": app}}
    if shape.spread_zones:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": selector,
            }
        ]
    if shape.prefer_apart:
        term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]
            }
        }
    if shape.require_apart:
        term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if shape.gpus:
        spec["nodeSelector"] = {"accelerator": "nvidia-a100"}
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{app}-{template_hash}-{suffix}", "namespace": namespace, "labels": labels},
        "spec": spec,
    }


@dataclass
class Timeline:
    """When each pod's create was answered and when the watch first saw it settled (perf_counter seconds)."""

    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    unschedulable: dict[str, float] = field(default_factory=dict)
    events: int = 0
    settled_event: asyncio.Event = field(default_factory=asyncio.Event)

    def settled(self) -> int:
        return len(self.bound.keys() | self.unschedulable.keys())

    def note(self, event: dict[str, Any], now: float) -> None:
        """One watch event: a pod bound, or found unschedulable (PodScheduled=False) and not bound yet."""
        self.events += 1
        obj = event.get("object") or {}
        if event.get("type") == "ERROR":
            raise RuntimeError(f"watch error: {obj}")
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if (obj.get("spec") or {}).get("nodeName"):
            if key not in self.bound:
                self.bound[key] = now
                self.unschedulable.pop(key, None)
                self.settled_event.set()
        elif key not in self.unschedulable:
            for c in (obj.get("status") or {}).get("conditions") or []:
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    self.unschedulable[key] = now
                    self.settled_event.set()


async def watch_pods(url: str, resource_version: str, timeline: Timeline) -> None:
    """Follow ``/api/v1/pods?watch=1`` (chunked JSON lines) until cancelled, noting each event in ``timeline``."""
    rest = url.split("://", 1)[1]
    host, _, port = rest.partition(":")
    reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 24)
    path = f"/api/v1/pods?watch=1&resourceVersion={resource_version}&timeoutSeconds=7200&allowWatchBookmarks=false"
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\n\r\n".encode())
    try:
        status_line = await reader.readline()
        if b" 200 " not in status_line:
            raise RuntimeError(f"watch: {status_line!r}")
        chunked = False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
                chunked = True
        pending = b""
        while True:
            if chunked:
                size = int((await reader.readline()).split(b";")[0], 16)
                if size == 0:
                    return
                data = await reader.readexactly(size + 2)
                data = data[:-2]
            else:
                data = await reader.read(1 << 20)
                if not data:
                    return
            now = time.perf_counter()
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    timeline.note(orjson.loads(line), now)
    finally:
        writer.close()


async def create_objects(
    url: str,
    bodies: list[tuple[str, bytes]],
    concurrency: int,
    latencies: list[float],
    answered: list[float],
    sends: list[float] | None = None,
) -> None:
    """POST each body, ``concurrency`` in flight; latency per request from its send, time of each answer (and, in
    ``sends``, each send's wall-clock time, in the order of ``latencies``)."""
    next_index = [0]

    async def worker() -> None:
        client = RawClient(url)
        try:
            while next_index[0] < len(bodies):
                i = next_index[0]
                next_index[0] += 1
                path, body = bodies[i]
                t0 = time.perf_counter()
                sent = time.time()
                status, payload = await client.request("POST", path, body)
                t1 = time.perf_counter()
                latencies.append(t1 - t0)
                if sends is not None:
                    sends.append(sent)
                answered[i] = t1
                if status != 201:
                    raise SystemExit(f"POST {path}: {status} {payload[:300]!r}")
        finally:
            await client.close()

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(bodies)))))


@dataclass
class Figures:
    """What one run measured."""

    node_seconds: float = 0.0
    node_latencies: list[float] = field(default_factory=list)
    pod_latencies: list[float] = field(default_factory=list)
    pod_sends: list[float] = field(default_factory=list)  # wall-clock time of each pod create's send
    late_bursts: int = 0
    worst_burst_delay: float = 0.0
    first_create: float = 0.0
    last_create: float = 0.0
    last_settled: float = 0.0
    backlog_samples: list[tuple[float, int]] = field(default_factory=list)
    client_stalls: list[float] = field(default_factory=list)


async def note_client_stalls(stalls: list[float]) -> None:
    """How late this process's own event loop wakes from a 5 ms sleep, until cancelled: the share of a create's
    latency that is the load generator's (or the machine's) and not the server's."""
    while True:
        t0 = time.perf_counter()
        await asyncio.sleep(0.005)
        stalls.append(time.perf_counter() - t0 - 0.005)


async def run_load(
    served: Served, args: argparse.Namespace, profiler_dir: Path | None
) -> tuple[Figures, Timeline, list[str], float]:
    """Namespaces, nodes, then the pods in bursts; wait until every pod is settled. Returns the figures, the
    timeline, the pod keys and the server's CPU seconds from the first pod create to the last pod settled."""
    figures = Figures()
    timeline = Timeline()
    admin = RawClient(served.url)
    for ns in NAMESPACES:
        status, payload = await admin.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": ns}}))
        if status != 201:
            raise SystemExit(f"namespace {ns}: {status} {payload[:200]!r}")
    await admin.close()  # idle past the server's keep-alive while the nodes go in
    nodes = [("/api/v1/nodes", orjson.dumps(node_object(i))) for i in range(args.nodes)]
    t0 = time.perf_counter()
    await create_objects(served.url, nodes, 16, figures.node_latencies, [0.0] * len(nodes))
    figures.node_seconds = time.perf_counter() - t0
    print(
        f"nodes: {args.nodes} created in {figures.node_seconds:.1f} s: {latency_line(figures.node_latencies)}",
        flush=True,
    )
    await asyncio.sleep(args.settle_nodes)  # leases and the scheduler's cache catch up before the pods

    pods = pod_objects(args.pods, args.seed)
    keys = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods]
    bodies = [(f"/api/v1/namespaces/{p['metadata']['namespace']}/pods", orjson.dumps(p)) for p in pods]
    status, payload = await admin.request("GET", "/api/v1/pods?limit=1")
    await admin.close()
    rv = orjson.loads(payload)["metadata"]["resourceVersion"]
    watcher = asyncio.create_task(watch_pods(served.url, rv, timeline))
    await asyncio.sleep(0.5)

    profiler = Profiler(served.process.pid, profiler_dir) if profiler_dir is not None else None
    cpu0 = served.cpu_seconds()
    answered = [0.0] * len(bodies)
    stall_watch = asyncio.create_task(note_client_stalls(figures.client_stalls))
    start_at = time.perf_counter()
    figures.first_create = start_at
    for b, first in enumerate(range(0, len(bodies), args.burst)):
        planned = start_at + b * args.interval
        delay = planned - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        elif -delay > 0.05:
            figures.late_bursts += 1
            figures.worst_burst_delay = max(figures.worst_burst_delay, -delay)
        figures.backlog_samples.append((time.perf_counter() - start_at, first - timeline.settled()))
        burst = bodies[first : first + args.burst]
        span = [0.0] * len(burst)
        await create_objects(served.url, burst, args.concurrency, figures.pod_latencies, span, figures.pod_sends)
        answered[first : first + len(burst)] = span
        if watcher.done():
            watcher.result()
    figures.last_create = max(answered)
    stall_watch.cancel()
    for key, t in zip(keys, answered, strict=True):
        timeline.created[key] = t
    print(f"pods: {len(bodies)} created in {figures.last_create - start_at:.1f} s", flush=True)
    deadline = time.perf_counter() + args.timeout
    last_report = time.perf_counter()
    while timeline.settled() < len(keys):
        if watcher.done():
            watcher.result()
            raise SystemExit("the watch ended early")
        if time.perf_counter() > deadline:
            raise SystemExit(f"timed out: {timeline.settled()}/{len(keys)} pods settled")
        timeline.settled_event.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(timeline.settled_event.wait(), 1.0)
        if time.perf_counter() - last_report > 15:
            last_report = time.perf_counter()
            print(f"  ... {last_report - figures.last_create:.0f} s after the last create: "
                  f"{timeline.settled()}/{len(keys)} settled", flush=True)  # fmt: skip
    figures.last_settled = max([*timeline.bound.values(), *timeline.unschedulable.values()])
    cpu = served.cpu_seconds() - cpu0
    if profiler is not None:
        profiler.stop(cpu)
    watcher.cancel()
    return figures, timeline, keys, cpu


def recorded(db: Path) -> tuple[int, int]:
    """(attempt rows, pods with at least one row) in the results table, read beside the running server."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute("SELECT count(*) FROM scheduling_attempts WHERE run_id IS NULL").fetchone()[0]
        pods = con.execute(
            "SELECT count(*) FROM (SELECT DISTINCT namespace, pod_name FROM scheduling_attempts WHERE run_id IS NULL)"
        ).fetchone()[0]
        return int(rows), int(pods)
    finally:
        con.close()


def main() -> int:
    """Parse arguments, start the server, run the load, print the figures."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=5000, help="nodes in the cluster (5000)")
    p.add_argument("--pods", type=int, default=50000, help="pods to create (50000)")
    p.add_argument("--burst", type=int, default=500, help="creates per burst (500)")
    p.add_argument("--interval", type=float, default=5.0, help="seconds from one burst's start to the next's (5)")
    p.add_argument("--concurrency", type=int, default=32, help="a burst's creates in flight (32)")
    p.add_argument("--sync", choices=["FULL", "NORMAL"], default="FULL", help="KSS_SQLITE_SYNCHRONOUS (FULL)")
    p.add_argument("--seed", type=int, default=1, help="the pods' names and order (1)")
    p.add_argument("--settle-nodes", type=float, default=5.0, help="pause after the nodes (5 s)")
    p.add_argument("--timeout", type=float, default=1800, help="give up this long after the last create (1800 s)")
    p.add_argument("--py-spy", type=Path, metavar="DIR", help="profile the server into DIR (bench/serve_profile.py)")
    p.add_argument("--env", action="append", default=[], metavar="KSS_X=V", help="more server settings")
    p.add_argument(
        "--latencies", type=Path, metavar="FILE", help="write each pod create's send time (epoch s) and latency (s)"
    )
    args = p.parse_args()
    env = {"KSS_SQLITE_SYNCHRONOUS": args.sync, **dict(e.split("=", 1) for e in args.env)}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        served = start(Path(tmp), env)
        try:
            figures, timeline, keys, cpu = asyncio.run(run_load(served, args, args.py_spy))
            # Recording runs behind the bindings: wait until every pod has its row.
            t_rec = time.perf_counter()
            rows, pods_recorded = recorded(served.db)
            while pods_recorded < len(keys) and time.perf_counter() - t_rec < 300:
                time.sleep(0.5)
                rows, pods_recorded = recorded(served.db)
            recorded_lag = time.perf_counter() - figures.last_create if pods_recorded >= len(keys) else float("nan")
            report(args, served, figures, timeline, keys, cpu, rows, pods_recorded, recorded_lag, env)
        finally:
            served.stop()
    return 0


def report(
    args: argparse.Namespace,
    served: Served,
    figures: Figures,
    timeline: Timeline,
    keys: list[str],
    cpu: float,
    rows: int,
    pods_recorded: int,
    recorded_lag: float,
    env: dict[str, str],
) -> None:
    """Print the figures of a run (and write each create's send time and latency to ``--latencies``)."""
    if args.latencies is not None:
        args.latencies.write_bytes(orjson.dumps(list(zip(figures.pod_sends, figures.pod_latencies, strict=True))))
    lags = sorted((timeline.bound.get(k) or timeline.unschedulable[k]) - timeline.created[k] for k in keys)
    span = figures.last_settled - figures.first_create
    bound = sum(1 for k in keys if k in timeline.bound)
    extra = " ".join(f"{k}={v}" for k, v in env.items() if k != "KSS_SQLITE_SYNCHRONOUS")
    print(
        f"{args.nodes} nodes, {len(keys)} pods in bursts of {args.burst} every {args.interval:g} s "
        f"({args.burst / args.interval:.0f} creates/s), {args.concurrency} in flight, synchronous={args.sync} {extra}"
    )
    print(f"pod creates: {latency_line(figures.pod_latencies)}; bursts late: {figures.late_bursts} "
          f"(worst {figures.worst_burst_delay:.1f} s)")  # fmt: skip
    print(f"the client's own event loop, late from a 5 ms sleep while creating: {latency_line(figures.client_stalls)}")
    print(
        f"pod lag (create answered -> seen settled): p50 {percentile(lags, 0.5):.2f} s, "
        f"p99 {percentile(lags, 0.99):.2f} s, max {lags[-1]:.2f} s, min {lags[0] * 1e3:.1f} ms"
    )
    print(
        f"lag at the end (last create -> last pod settled): {figures.last_settled - figures.last_create:.1f} s; "
        f"{bound} bound, {len(keys) - bound} unschedulable; {len(keys) / span:.0f} pods/s over {span:.1f} s"
    )
    worst_backlog = max((b for _, b in figures.backlog_samples), default=0)
    print(f"backlog at a burst's start (created, not settled): max {worst_backlog} pods")
    print(
        f"recorded: {rows} attempts, {pods_recorded}/{len(keys)} pods; "
        f"last pod's row {recorded_lag:.1f} s after the last create"
    )
    print(
        f"server: CPU {cpu:.0f} s ({cpu / span * 100:.0f}% of a core, {cpu / len(keys) * 1e3:.2f} ms per pod), "
        f"peak RSS {served.peak_rss_mb():.0f} MB, database {served.db_size_mb():.0f} MB; "
        f"watch events {timeline.events}"
    )


if __name__ == "__main__":
    sys.exit(main())
