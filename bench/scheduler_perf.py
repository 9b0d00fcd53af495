"""kube-scheduler's own benchmark cases (test/integration/scheduler_perf, v1.35) run by kss, beside upstream's
thresholds: offline (the engine as ``kss simulate`` runs it) and through ``kss serve`` (every object created through
the Kubernetes API).

Usage: ``.venv/bin/python bench/scheduler_perf.py [--mode offline|serve|both] [--case NAME ...] [--scale F]
[--concurrency 8] [--timeout S] [--py-spy DIR] [--record]``. Through the server it prints the server's CPU seconds
over the measured span too (the steadier figure on a shared machine); ``--py-spy DIR`` profiles that span (read it
with ``bench/serve_profile.py DIR/<case>``; the scheduler's process, when it runs in one, in
``DIR/<case>/scheduler-<pid>``). ``--record`` (offline): every attempt recorded as the server records
it (every plugin's verdict on every node) and its matrices encoded as the results writer stores them (the server
always records).

Each case is our own reading of upstream's ``performance-config.yaml`` (its ``performance``-labelled workload) and
templates: the same node shape (4 CPU, 32Gi, 110 pods; zones where upstream labels them, given round robin where
upstream picks at random), the same pod templates (100m CPU, 500Mi), the same counts of initial and measured pods
and the default scheduler configuration (adaptive percentageOfNodesToScore). Only the measured pods are timed, as
upstream's ``collectMetrics`` op: offline, from the first measured pod's attempt to the last; through the server, from
the first measured create to the last measured pod bound, the creates sent by ``--concurrency`` clients.
Upstream's figure is the average of per-second scheduling rates over the measured op; ours is measured pods / wall
time over the same span, which differs from it by the ramp at the edges (a second or two of a 10 s case).
``--scale 0.1`` divides every count by ten (a quick look; thresholds then do not apply).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine  # puts the checkout on the path too
from _serve import Profiler, post_all, start

from kss_sim.results.codec import encode_matrices
from kss_sim.simulation.runner import ScenarioRun

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
REQUESTS = {"cpu": "100m", "memory": "500Mi"}


# --- the objects of upstream's templates ------------------------------------------------------------------------
def node(name: str, *, labels: dict[str, str] | None = None, pods: str = "110") -> Obj:
    """templates/node-default.yaml (node-with-name.yaml: ``pods`` 90000); allocatable as kube-apiserver defaults
    it from capacity."""
    capacity = {"pods": pods, "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def pod(name: str, namespace: str, *, labels: dict[str, str] | None = None, requests: bool = True, **spec: Any) -> Obj:
    """templates/pod-default.yaml and its variants: one pause container with port 80 and 100m/500Mi (requests
    equal to limits) unless ``requests`` is False (daemonset-pod.yaml asks for nothing)."""
    container: Obj = {"name": "pause", "image": "registry.k8s.io/pause:3.10.1"}
    if requests:
        container["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
        container["resources"] = {"limits": dict(REQUESTS), "requests": dict(REQUESTS)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {"containers": [container], **spec},
    }


def zoned_nodes(count: int, zones: list[str] | None) -> list[Obj]:
    """``createNodes`` with node-default.yaml; ``zones``: labelNodePrepareStrategy's values for topology zone."""
    return [
        node(f"scheduler-perf-{i:05d}", labels={ZONE: zones[i % len(zones)]} if zones else None) for i in range(count)
    ]


def spread_pod(name: str, namespace: str, when: str) -> Obj:
    """pod-with-topology-spreading.yaml (DoNotSchedule) or pod-with-preferred-topology-spreading.yaml."""
    constraint = {
        "maxSkew": 5,
        "topologyKey": ZONE,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"color": "blue"}},
    }
    return pod(name, namespace, labels={"color": "blue"}, topologySpreadConstraints=[constraint])


def anti_affinity_pod(name: str, namespace: str) -> Obj:
    """pod-with-pod-anti-affinity.yaml: no two green pods of sched-0/sched-1 on one host."""
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["sched-1", "sched-0"],
    }
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pod(name, namespace, labels={"color": "green"}, affinity=affinity)


def node_affinity_pod(name: str, namespace: str) -> Obj:
    """pod-with-node-affinity.yaml: zone1 or zone2 (every node is in zone1)."""
    expression = {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}
    required = {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}
    return pod(name, namespace, affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})


def daemonset_pod(name: str, namespace: str) -> Obj:
    """daemonset-pod.yaml: required node affinity on metadata.name, so NodeAffinity's PreFilterResult names one
    node out of the whole cluster."""
    field_term = {"key": "metadata.name", "operator": "In", "values": ["scheduler-perf-node"]}
    required = {"nodeSelectorTerms": [{"matchFields": [field_term]}]}
    return pod(
        name,
        namespace,
        requests=False,
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    )


PodMaker = Callable[[str, str], Obj]


@dataclass
class Case:
    """One performance workload: the cluster, the initial pods and the measured pods, and upstream's threshold."""

    name: str
    threshold: int
    nodes: Callable[[float], list[Obj]]
    init_pods: int
    measure_pods: int
    measure: PodMaker = field(default=lambda name, ns: pod(name, ns))
    init: PodMaker = field(default=lambda name, ns: pod(name, ns))
    init_namespace: str = "namespace-1"
    measure_namespace: str = "namespace-2"

    def objects(self, scale: float) -> tuple[list[Obj], list[Obj], list[Obj]]:
        """Nodes, initial pods and measured pods at ``scale``."""
        init = [self.init(f"init-{i:06d}", self.init_namespace) for i in range(round(self.init_pods * scale))]
        count = round(self.measure_pods * scale)
        measured = [self.measure(f"pod-{i:06d}", self.measure_namespace) for i in range(count)]
        return self.nodes(scale), init, measured


def _n(count: int, zones: list[str] | None = None) -> Callable[[float], list[Obj]]:
    return lambda scale: zoned_nodes(round(count * scale), zones)


def _daemonset_nodes(scale: float) -> list[Obj]:
    return [node("scheduler-perf-node", pods="90000"), *zoned_nodes(round(15000 * scale), None)]


MOONS = ["moon-1", "moon-2", "moon-3"]
CASES = [
    Case("SchedulingBasic/5000Nodes_10000Pods", 680, _n(5000), 1000, 10000),
    Case("SchedulingBasic/5000Nodes_50000Pods", 810, _n(5000), 5000, 50000),
    Case(
        "SchedulingDaemonset/15000Nodes",
        1100,
        _daemonset_nodes,
        0,
        30000,
        measure=daemonset_pod,
    ),
    Case(
        "TopologySpreading/5000Nodes_5000Pods",
        460,
        _n(5000, MOONS),
        5000,
        5000,
        measure=lambda name, ns: spread_pod(name, ns, "DoNotSchedule"),
    ),
    Case(
        "PreferredTopologySpreading/5000Nodes_5000Pods",
        340,
        _n(5000, MOONS),
        5000,
        5000,
        measure=lambda name, ns: spread_pod(name, ns, "ScheduleAnyway"),
    ),
    Case(
        "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
        60,
        _n(5000),
        1000,
        2000,
        measure=anti_affinity_pod,
        init=anti_affinity_pod,
        init_namespace="sched-0",
        measure_namespace="sched-1",
    ),
    Case(
        "SchedulingNodeAffinity/5000Nodes_10000Pods",
        220,
        _n(5000, ["zone1"]),
        5000,
        10000,
        measure=node_affinity_pod,
        init=node_affinity_pod,
    ),
]


# --- offline ----------------------------------------------------------------------------------------------------
def as_stored(p: Obj, uid: str) -> Obj:
    """A pod as the API server stores it (the fields the engine expects filled), for the offline run."""
    stored = orjson.loads(orjson.dumps(p))
    stored["metadata"]["uid"] = uid
    stored["spec"].setdefault("schedulerName", "default-scheduler")
    stored["spec"].setdefault("priority", 0)
    stored["status"] = {"phase": "Pending"}
    return stored


def run_offline(case: Case, scale: float, record: bool = False) -> tuple[int, float, float]:
    """Schedule the initial then the measured pods with the engine; (measured pods bound, their wall seconds, the
    CPU seconds this process spent on them: on a busy machine the CPU figure is the steadier one). ``record``:
    each attempt recorded and its matrices encoded (``encode_matrices``), as ``kss serve`` stores them."""
    nodes, init, measured = case.objects(scale)
    pending = [as_stored(p, f"uid-{i}") for i, p in enumerate(init + measured)]
    # The "sampling" family keeps the configuration's percentageOfNodesToScore (the default: adaptive).
    scenario = {"meta": {"name": case.name, "family": "sampling"}, "nodes": nodes, "pending": pending}
    run = ScenarioRun(scenario, record=record)
    gc.collect()
    gc.disable()
    try:
        attempts: Iterator[Any] = run.attempts()
        start = time.perf_counter() if not init else None
        cpu_start = time.process_time()
        seen = bound = 0
        for att, _ in attempts:
            if record:
                encode_matrices(att)
            if att.attempt != 1:
                continue
            seen += 1
            if seen == len(init):
                start = time.perf_counter()  # the initial pods are done: the measured op begins
                cpu_start = time.process_time()
            elif seen > len(init) and att.result == "scheduled":
                bound += 1
        assert start is not None
        return bound, time.perf_counter() - start, time.process_time() - cpu_start
    finally:
        gc.enable()


# --- through kss serve ------------------------------------------------------------------------------------------
class BoundWatch:
    """Counts the pods bound in one namespace, from a watch of every pod."""

    def __init__(self, url: str, namespace: str) -> None:
        self.bound: set[str] = set()
        self.last_bound_at = 0.0
        self.changed = threading.Event()
        self.error: BaseException | None = None
        self._stop = False
        rv = httpx.get(f"{url}/api/v1/pods", params={"limit": "1"}, timeout=60).json()["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, args=(url, namespace, rv), daemon=True)
        self._thread.start()

    def _run(self, url: str, namespace: str, rv: str) -> None:
        params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "7200"}
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(30, read=None)) as c,
                c.stream("GET", f"{url}/api/v1/namespaces/{namespace}/pods", params=params) as r,
            ):
                for line in r.iter_lines():
                    if self._stop:
                        return
                    if not line:
                        continue
                    obj = orjson.loads(line).get("object") or {}
                    if (obj.get("spec") or {}).get("nodeName"):
                        name = obj["metadata"]["name"]
                        if name not in self.bound:
                            self.bound.add(name)
                            self.last_bound_at = time.perf_counter()
                            self.changed.set()
        except BaseException as exc:  # reported by the main thread
            if not self._stop:
                self.error = exc
                self.changed.set()

    def wait_for(self, count: int, timeout: float) -> None:
        deadline = time.perf_counter() + timeout
        while len(self.bound) < count:
            if self.error is not None:
                raise SystemExit(f"watch failed: {self.error!r}")
            if time.perf_counter() > deadline:
                raise SystemExit(f"timed out: {len(self.bound)}/{count} pods bound")
            self.changed.wait(1.0)
            self.changed.clear()

    def stop(self) -> None:
        self._stop = True


def path_of(obj: Obj) -> str:
    kind = obj["kind"]
    if kind == "Node":
        return "/api/v1/nodes"
    if kind == "Namespace":
        return "/api/v1/namespaces"
    return f"/api/v1/namespaces/{obj['metadata']['namespace']}/pods"


async def create_all(url: str, objects: list[Obj], concurrency: int) -> None:
    """POST every object, ``concurrency`` requests in flight."""
    await post_all(url, [(path_of(o), orjson.dumps(o)) for o in objects], concurrency)


def run_serve(
    case: Case, scale: float, concurrency: int, timeout: float, py_spy: Path | None = None
) -> tuple[int, float, float, float]:
    """The same through a fresh ``kss serve`` (SQLite, scheduler on, controllers and kubelet off: scheduler_perf
    runs no kubelet either); (measured pods bound, seconds from the first measured create to the last bound, the
    server's CPU seconds over that span, its child processes' CPU seconds: the scheduler's with
    ``KSS_SCHEDULER_PROCESS=true``, 0 otherwise). ``py_spy``: profile the server over the span
    (bench/serve_profile.py)."""
    nodes, init, measured = case.objects(scale)
    namespaces = sorted({case.init_namespace, case.measure_namespace})
    ns_objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces]
    env = {"KSS_CONTROLLERS": "false", "KSS_KUBELET": "false"}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        served = start(Path(tmp), env)
        watches: list[BoundWatch] = []
        try:
            asyncio.run(create_all(served.url, ns_objects + nodes, concurrency))
            if init:
                init_watch = BoundWatch(served.url, case.init_namespace)
                watches.append(init_watch)
                asyncio.run(create_all(served.url, init, concurrency))
                init_watch.wait_for(len(init), timeout)
            watch = BoundWatch(served.url, case.measure_namespace)
            watches.append(watch)
            already = len(watch.bound)  # init pods of the same namespace
            profilers = []
            if py_spy:
                # The server's process, and the scheduler's (its own subfolder) when it runs in a process of its own.
                profilers.append(Profiler(served.process.pid, py_spy))
                profilers += [
                    Profiler(pid, py_spy / f"scheduler-{pid}")
                    for pid in served.child_pids()
                    if b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()  # multiprocessing's
                ]
            cpu0, child0 = served.cpu_seconds(), served.children_cpu_seconds()
            start_at = time.perf_counter()
            asyncio.run(create_all(served.url, measured, concurrency))
            watch.wait_for(already + len(measured), timeout)
            cpu = served.cpu_seconds() - cpu0
            child_cpu = served.children_cpu_seconds() - child0
            for profiler in profilers:
                profiler.stop(cpu if profiler is profilers[0] else child_cpu)
            return len(watch.bound) - already, watch.last_bound_at - start_at, cpu, child_cpu
        finally:
            for w in watches:
                w.stop()
            served.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=("offline", "serve", "both"), default="offline")
    p.add_argument("--case", action="append", help="a case name or its prefix (SchedulingBasic); repeatable")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every count (default 1: upstream's)")
    p.add_argument("--concurrency", type=int, default=8, help="create requests in flight through the server (8)")
    p.add_argument("--timeout", type=float, default=3600, help="give up on a serve case after this many seconds")
    p.add_argument(
        "--py-spy",
        type=Path,
        metavar="DIR",
        help="serve: profile the server (and its scheduler process) into DIR/<case> (one case)",
    )
    p.add_argument("--record", action="store_true", help="offline: record every attempt and encode it (as serve)")
    args = p.parse_args()
    cases = [c for c in CASES if not args.case or any(c.name.startswith(prefix) for prefix in args.case)]
    if not cases:
        raise SystemExit(f"no such case; known: {', '.join(c.name for c in CASES)}")
    print(machine())
    modes = ["offline", "serve"] if args.mode == "both" else [args.mode]
    for case in cases:
        for mode in modes:
            child_cpu = 0.0
            if mode == "offline":
                bound, seconds, cpu = run_offline(case, args.scale, args.record)
                who = "CPU (recorded)" if args.record else "CPU"
            else:
                spy = args.py_spy / case.name.replace("/", "_") if args.py_spy else None
                bound, seconds, cpu, child_cpu = run_serve(case, args.scale, args.concurrency, args.timeout, spy)
                who = "server CPU"  # the clients' own CPU aside: the same two cores serve them
            cpu_note = ""
            if cpu > 0:
                total = cpu + child_cpu
                split = f" (API process {cpu:.2f} s + scheduler process {child_cpu:.2f} s)" if child_cpu else ""
                cpu_note = f"; {who} {total:.2f} s{split} = {bound / total:.0f} pods per CPU-second"
            rate = bound / seconds if seconds > 0 else float("inf")
            verdict = "" if args.scale != 1.0 else ("  ok" if rate >= case.threshold else "  BELOW")
            print(
                f"{case.name:48s} {mode:7s} {bound:6d} pods in {seconds:7.2f} s = {rate:7.0f} pods/s "
                f"(upstream threshold {case.threshold}){verdict}{cpu_note}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
