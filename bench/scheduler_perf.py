"""kube-scheduler's own benchmark cases (test/integration/scheduler_perf, v1.35) run by kss, beside upstream's
thresholds: offline (the engine as ``kss simulate`` runs it) and through ``kss serve`` (every object created through
the Kubernetes API).

Usage: ``.venv/bin/python bench/scheduler_perf.py [--mode offline|serve|both] [--case NAME ...] [--scale F]
[--concurrency 8] [--timeout S] [--py-spy DIR] [--record] [--churn-every N] [--kube-version 1.35]``. Through the server
it prints the server's CPU seconds over the measured span too (the steadier figure on a shared machine); ``--py-spy
DIR`` profiles that span (read it with ``bench/serve_profile.py DIR/<case>``; the scheduler's process, when it runs in
one, in ``DIR/<case>/scheduler-<pid>``). ``--record`` (offline): every attempt recorded as the server
records it (every plugin's verdict on every node) and its matrices encoded as the results writer stores them (the server
always records). ``--churn-every N`` (offline): a churn tick after every N measured pods instead of the threshold's
pace (PreemptionAsync with ``--churn-every 1``: a preemptor per measured pod, the cluster filling with preemptors as
it does through a server that falls behind; the line's churn figures count the preemptions).

Each case is our own reading of upstream's ``performance-config.yaml`` (its ``performance``-labelled workload) and
templates: the same node shape (4 CPU, 32Gi, 110 pods; zones where upstream labels them, given round robin where
upstream picks at random), the same pod templates (100m CPU, 500Mi), the same counts of initial and measured pods
and the default scheduler configuration (adaptive percentageOfNodesToScore). Only the measured pods are timed, as
upstream's ``collectMetrics`` op: offline, from the first measured pod's attempt to the last; through the server, from
the first measured create to the last measured pod bound, the creates sent by ``--concurrency`` clients.
Upstream's figure is the average of per-second scheduling rates over the measured op; ours is measured pods / wall
time over the same span, which differs from it by the ramp at the edges (a second or two of a 10 s case).
``--scale 0.1`` divides every count by ten (a quick look; thresholds then do not apply).

**Churn** (PreemptionAsync, SchedulingWithMixedChurn): upstream's ``churn`` op runs a ticker beside the measured
pods, one object of each template every interval of wall time (200 ms: a 3-CPU priority-10 pod that must preempt
three low-priority pods; 1 s, recreate: a node that holds no pod, an unschedulable 9-CPU priority-10 pod and a
Service, created on one tick and deleted on the next). Through the server a client thread does exactly that
(``ChurnClient``), from the first measured create to the last measured pod bound. Offline there is no wall clock to
tick beside the engine (its virtual clock stands still while pods are scheduled), so the ticks are placed between
measured pods: one every ``threshold x interval`` measured pods (114 and 710), the churn a scheduler running at
exactly upstream's threshold meets; a tick's pods are pending pods at that point (a preemptor is retried at once once
its victims are gone, as ``kss simulate`` does), its nodes and Services go through the loop's event handler, a
deleted pod leaves the cache if it was bound (a pod that failed has left the queue already: the offline run tries a
pending pod once, where upstream's would wait in the unschedulable queue for an event that never helps it).
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

from kss_sim.kube.versions import kube_version, versions_help
from kss_sim.results.codec import encode_matrices
from kss_sim.simulation.runner import ScenarioRun

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
REQUESTS = {"cpu": "100m", "memory": "500Mi"}


# --- the objects of upstream's templates ------------------------------------------------------------------------
def node(name: str, *, labels: dict[str, str] | None = None, pods: str = "110") -> Obj:
    """templates/node-default.yaml (node-with-name.yaml: ``pods`` 90000); allocatable as kube-apiserver defaults
    it from capacity."""
    metadata = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    return _ready_node(metadata, {"pods": pods, "cpu": "4", "memory": "32Gi"})


def _ready_node(metadata: Obj, capacity: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def pod(
    name: str,
    namespace: str,
    *,
    labels: dict[str, str] | None = None,
    requests: bool = True,
    cpu: str = "100m",
    limits: bool = True,
    **spec: Any,
) -> Obj:
    """templates/pod-default.yaml and its variants: one pause container with port 80 and ``cpu``/500Mi (requests
    equal to limits unless ``limits`` is False) unless ``requests`` is False (daemonset-pod.yaml asks for nothing)."""
    container: Obj = {"name": "pause", "image": "registry.k8s.io/pause:3.10.1"}
    if requests:
        wanted = {**REQUESTS, "cpu": cpu}
        container["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
        container["resources"] = {"limits": dict(wanted), "requests": dict(wanted)} if limits else {"requests": wanted}
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


# Upstream's priority templates set ``spec.priority`` with no class (its test server runs without the Priority
# admission plugin); kss admits priorities through their class, so these pods also name a class of the same value.
HIGH_PRIORITY = 10
HIGH_PRIORITY_CLASS = "scheduler-perf-priority-10"


def priority_class() -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": HIGH_PRIORITY_CLASS},
        "value": HIGH_PRIORITY,
    }


def low_priority_pod(name: str, namespace: str) -> Obj:
    """pod-low-priority.yaml: 900m (four fill a node to 3.6 of its 4 CPU), ended at once when preempted."""
    return pod(name, namespace, cpu="900m", terminationGracePeriodSeconds=0)


def high_priority_pod(name: str, namespace: str) -> Obj:
    """pod-high-priority.yaml: priority 10, 3 CPU: it fits a full node only once three low-priority pods go."""
    return pod(name, namespace, cpu="3000m", priority=HIGH_PRIORITY, priorityClassName=HIGH_PRIORITY_CLASS)


def high_priority_large_cpu_pod(name: str, namespace: str) -> Obj:
    """pod-high-priority-large-cpu.yaml: priority 10, 9 CPU requested (no limits): fits no node, preempting or not."""
    return pod(name, namespace, cpu="9", limits=False, priority=HIGH_PRIORITY, priorityClassName=HIGH_PRIORITY_CLASS)


def churn_node(name: str, namespace: str) -> Obj:
    """churn/node-default.yaml: a Ready node with capacity for no pod (no label, no CPU)."""
    return _ready_node({"name": name}, {"pods": "0"})


def churn_service(name: str, namespace: str) -> Obj:
    """churn/service-default.yaml: selects app=foo (no pod of these cases), TCP 8080."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app": "foo"}, "ports": [{"protocol": "TCP", "port": 8080, "targetPort": 8080}]},
    }


PodMaker = Callable[[str, str], Obj]


@dataclass
class Churn:
    """Upstream's ``churn`` op: every ``interval_ms`` one object of each template, in ``namespace``; "create" makes
    new ones on every tick (``number`` ticks at most, 0: no limit), "recreate" (upstream's ``number`` 1 only) makes
    them on one tick and deletes them on the next."""

    mode: str
    interval_ms: int
    templates: list[PodMaker]
    namespace: str = "namespace-1"
    number: int = 0

    def ticks(self, t: int) -> bool:
        """Whether tick ``t`` happens at all (a "create" churn stops after ``number`` ticks)."""
        return self.mode != "create" or not self.number or t <= self.number

    def tick(self, t: int) -> list[tuple[str, Obj]]:
        """What tick ``t`` (counted from 1) does: ("create" or "delete", the object), in template order."""
        creating = self.mode == "create" or t % 2 == 1
        serial = t if self.mode == "create" else (t + 1) // 2  # a recreate deletes what the tick before made
        verb = "create" if creating else "delete"
        return [(verb, make(f"churn-{i}-{serial:05d}", self.namespace)) for i, make in enumerate(self.templates)]


@dataclass
class Case:
    """One performance workload: the cluster, the initial pods, the churn beside the measured pods, and the measured
    pods, with upstream's threshold."""

    name: str
    threshold: int
    nodes: Callable[[float], list[Obj]]
    init_pods: int
    measure_pods: int
    measure: PodMaker = field(default=lambda name, ns: pod(name, ns))
    init: PodMaker = field(default=lambda name, ns: pod(name, ns))
    init_namespace: str = "namespace-1"
    measure_namespace: str = "namespace-2"
    churn: Churn | None = None

    def objects(self, scale: float) -> tuple[list[Obj], list[Obj], list[Obj]]:
        """Nodes, initial pods and measured pods at ``scale``."""
        init = [self.init(f"init-{i:06d}", self.init_namespace) for i in range(round(self.init_pods * scale))]
        count = round(self.measure_pods * scale)
        measured = [self.measure(f"pod-{i:06d}", self.measure_namespace) for i in range(count)]
        return self.nodes(scale), init, measured

    def churn_every(self) -> int:
        """Offline, measured pods between two churn ticks: as many as a scheduler at exactly upstream's threshold
        schedules in one interval (the churn such a scheduler meets; a faster one meets less in real time)."""
        assert self.churn is not None
        return max(1, round(self.threshold * self.churn.interval_ms / 1000))


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
    # PreemptionAsync's three performance workloads differ only in feature gates (SchedulerAsyncPreemption,
    # SchedulerAsyncAPICalls: when the preemption's and binding's API calls are made) that kss does not model;
    # one case stands for the three (threshold 570 each).
    Case(
        "PreemptionAsync/5000Nodes",
        570,
        _n(5000),
        20000,
        5000,
        init=low_priority_pod,
        measure_namespace="namespace-3",
        churn=Churn("create", 200, [high_priority_pod], namespace="namespace-2"),
    ),
    Case(
        "SchedulingWithMixedChurn/5000Nodes_10000Pods",
        710,
        _n(5000),
        0,
        10000,
        init_namespace="namespace-0",
        churn=Churn("recreate", 1000, [churn_node, high_priority_large_cpu_pod, churn_service]),
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


@dataclass
class Outcome:
    """One run of a case: the measured pods bound, their wall seconds, the CPU seconds spent on them (offline: this
    process's; through the server: the API process's, and the scheduler process's in ``child_cpu``), and the churn
    over the measured span: objects created and deleted, churn pods bound, and offline the churn pods tried and the
    pods preempted; through the server, the scheduler's failed attempts over the span (its ``/metrics``)."""

    bound: int
    seconds: float
    cpu: float
    child_cpu: float = 0.0
    churn_created: int = 0
    churn_deleted: int = 0
    churn_bound: int = 0
    churn_tried: int = 0
    preempted: int = 0
    failed_attempts: int | None = None


def offline_pending(case: Case, init: list[Obj], measured: list[Obj], every: int) -> list[Obj]:
    """The pods in the order the offline run tries them: the initial ones, then the measured ones with the pods of
    churn tick t right after measured pod ``t * every`` (ticks only while measured pods remain)."""
    pending = list(init)
    for i, p in enumerate(measured, 1):
        pending.append(p)
        if case.churn is not None and i % every == 0 and i < len(measured) and case.churn.ticks(i // every):
            pending.extend(
                obj for verb, obj in case.churn.tick(i // every) if verb == "create" and obj["kind"] == "Pod"
            )
    return pending


def run_offline(
    case: Case, scale: float, record: bool = False, churn_every: int | None = None, version: str | None = None
) -> Outcome:
    """Schedule the initial then the measured pods with the engine, the churn between measured pods (every
    ``churn_every`` of them, default ``Case.churn_every``: nodes and services through the loop's event handler,
    pods as pending pods at their tick, a deleted churn pod out of the cache). The CPU figure is the steadier one on
    a busy machine. ``record``: each attempt recorded and its matrices encoded (``encode_matrices``), as
    ``kss serve`` stores them. ``version``: the Kubernetes version to schedule as (default: kss's)."""
    nodes, init, measured = case.objects(scale)
    every = churn_every or (case.churn_every() if case.churn else 0)
    raw = offline_pending(case, init, measured, every)
    pending = [as_stored(p, f"uid-{i}") for i, p in enumerate(raw)]
    uids = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["metadata"]["uid"] for p in pending}
    churn_ns = case.churn.namespace if case.churn else None
    # The "sampling" family keeps the configuration's percentageOfNodesToScore (the default: adaptive).
    scenario = {"meta": {"name": case.name, "family": "sampling"}, "nodes": nodes, "pending": pending}
    run = ScenarioRun(scenario, record=record, kube_version=kube_version(version) if version else None)
    loop = run.loop
    out = Outcome(0, 0.0, 0.0)
    bound_churn: set[str] = set()
    gc.collect()
    gc.disable()
    try:
        attempts: Iterator[Any] = run.attempts()
        start = time.perf_counter() if not init else None
        cpu_start = time.process_time()
        deleted_before = 0
        seen = measured_seen = 0
        for att, _ in attempts:
            if record:
                encode_matrices(att)
            if churn_ns is not None and att.pod.startswith(churn_ns + "/"):
                out.churn_tried += att.attempt == 1
                if att.result == "scheduled":
                    bound_churn.add(att.pod)
                continue
            if att.attempt != 1:
                continue
            seen += 1
            if seen == len(init):
                start = time.perf_counter()  # the initial pods are done: the measured op begins
                cpu_start = time.process_time()
                deleted_before = len(run.actions.deleted)
            elif seen > len(init):
                measured_seen += 1
                if att.result == "scheduled":
                    out.bound += 1
                tick = measured_seen // every if every else 0
                if (
                    case.churn
                    and measured_seen % every == 0
                    and measured_seen < len(measured)
                    and case.churn.ticks(tick)
                ):
                    _churn_offline(loop, case.churn.tick(tick), uids, bound_churn, out)
        assert start is not None
        out.seconds = time.perf_counter() - start
        out.cpu = time.process_time() - cpu_start
        out.churn_bound = len(bound_churn)
        out.preempted = len(run.actions.deleted) - deleted_before
        return out
    finally:
        gc.enable()


def _churn_offline(
    loop: Any, actions: list[tuple[str, Obj]], uids: dict[str, str], bound: set[str], out: Outcome
) -> None:
    """One churn tick between two measured pods: a node or service through the loop's event handler, a deleted
    pod out of the cache if it was bound (a created pod is already pending at this point: ``offline_pending``)."""
    for verb, obj in actions:
        kind = obj["kind"]
        if verb == "create":
            out.churn_created += 1
            if kind != "Pod":
                loop.handle("ADDED", kind, obj)
            continue
        out.churn_deleted += 1
        if kind == "Pod":
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            if key in bound:
                loop.delete_assigned_pod(uids[key])
            # else: it failed and left the queue already (the offline run tries a pending pod once)
        else:
            loop.handle("DELETED", kind, obj)


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
    if kind == "PriorityClass":
        return "/apis/scheduling.k8s.io/v1/priorityclasses"
    resource = {"Pod": "pods", "Service": "services"}[kind]
    return f"/api/v1/namespaces/{obj['metadata']['namespace']}/{resource}"


async def create_all(url: str, objects: list[Obj], concurrency: int) -> None:
    """POST every object, ``concurrency`` requests in flight."""
    await post_all(url, [(path_of(o), orjson.dumps(o)) for o in objects], concurrency)


class ChurnClient:
    """Upstream's churn op through the API: a thread that, every ``interval_ms`` of wall time, creates (or, on a
    recreate's second tick, deletes) one object of each template, as scheduler_perf's ticker does; a tick that
    falls due while the last one is still running is skipped (Go's ticker drops it too)."""

    def __init__(self, url: str, churn: Churn) -> None:
        self.url = url
        self.churn = churn
        self.created = self.deleted = 0
        self.error: str | None = None
        self.ticked = threading.Event()  # set once the first tick is done
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        interval = self.churn.interval_ms / 1000
        t = 0
        with httpx.Client(base_url=self.url, timeout=60) as client:
            next_at = time.perf_counter() + interval  # the client made: its setup is not the first tick's delay
            while not self._stop.wait(max(0.0, next_at - time.perf_counter())):
                t += 1
                if not self.churn.ticks(t):
                    return
                for verb, obj in self.churn.tick(t):
                    if verb == "create":
                        r = client.post(path_of(obj), content=orjson.dumps(obj))
                        self.created += r.status_code == 201
                    else:
                        r = client.delete(f"{path_of(obj)}/{obj['metadata']['name']}")
                        self.deleted += r.status_code in (200, 202, 404)  # 404: a preempted or already gone pod
                    if r.status_code >= 400 and r.status_code != 404 and self.error is None:
                        self.error = f"{verb} {obj['kind']} {obj['metadata']['name']}: {r.status_code} {r.text[:200]}"
                self.ticked.set()
                now = time.perf_counter()
                next_at += interval * max(1, int((now - next_at) // interval) + 1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)


def run_serve(
    case: Case, scale: float, concurrency: int, timeout: float, py_spy: Path | None = None, version: str | None = None
) -> Outcome:
    """The same through a fresh ``kss serve`` (SQLite, scheduler on, controllers and kubelet off: scheduler_perf
    runs no kubelet either), the churn by a client thread at upstream's interval from the first measured create to
    the last measured pod bound. The seconds run from the first measured create to the last bound; the CPU is the
    server's over that span (``child_cpu``: its child processes', the scheduler's with ``KSS_SCHEDULER_PROCESS``).
    ``py_spy``: profile the server over the span (bench/serve_profile.py)."""
    nodes, init, measured = case.objects(scale)
    namespaces = {case.init_namespace, case.measure_namespace} | ({case.churn.namespace} if case.churn else set())
    setup: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in sorted(namespaces)]
    if case.churn is not None:
        setup.append(priority_class())
    env = {"KSS_CONTROLLERS": "false", "KSS_KUBELET": "false"}
    if version:
        env["KSS_KUBE_VERSION"] = version
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        served = start(Path(tmp), env)
        watches: list[BoundWatch] = []
        churner: ChurnClient | None = None
        try:
            asyncio.run(create_all(served.url, setup + nodes, concurrency))
            if init:
                init_watch = BoundWatch(served.url, case.init_namespace)
                watches.append(init_watch)
                asyncio.run(create_all(served.url, init, concurrency))
                init_watch.wait_for(len(init), timeout)
            watch = BoundWatch(served.url, case.measure_namespace)
            watches.append(watch)
            churn_watch = BoundWatch(served.url, case.churn.namespace) if case.churn else None
            if churn_watch is not None:
                watches.append(churn_watch)
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
            failed0 = failed_attempts(served.url)
            start_at = time.perf_counter()
            churner = ChurnClient(served.url, case.churn) if case.churn else None
            asyncio.run(create_all(served.url, measured, concurrency))
            try:
                watch.wait_for(already + len(measured), timeout)
            except SystemExit as exc:
                if churner is None:
                    raise
                churner.stop()  # what the churn had done by then: a slow server meets more of it
                bound_churn = len(churn_watch.bound) if churn_watch is not None else 0
                raise SystemExit(
                    f"{exc}; churn by then: {churner.created} created, {churner.deleted} deleted, "
                    f"{bound_churn} churn pods bound"
                ) from exc
            cpu = served.cpu_seconds() - cpu0
            child_cpu = served.children_cpu_seconds() - child0
            for profiler in profilers:
                profiler.stop(cpu if profiler is profilers[0] else child_cpu)
            out = Outcome(len(watch.bound) - already, watch.last_bound_at - start_at, cpu, child_cpu)
            out.failed_attempts = failed_attempts(served.url) - failed0
            if churner is not None:
                churner.stop()
                if churner.error is not None:
                    raise SystemExit(f"churn failed: {churner.error}")
                out.churn_created, out.churn_deleted = churner.created, churner.deleted
                out.churn_bound = len(churn_watch.bound) if churn_watch is not None else 0
            return out
        finally:
            if churner is not None:
                churner.stop()
            for w in watches:
                w.stop()
            served.stop()


def failed_attempts(url: str) -> int:
    """The scheduler's attempts so far that did not bind (``scheduler_schedule_attempts_total`` but "scheduled")."""
    total = 0.0
    for line in httpx.get(f"{url}/metrics", timeout=60).text.splitlines():
        if line.startswith("scheduler_schedule_attempts_total{") and 'result="scheduled"' not in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def report_line(case: Case, mode: str, out: Outcome, who: str, scale: float) -> str:
    """One case's line: pods/s beside upstream's threshold (judged at full scale only), the CPU, the churn."""
    cpu_note = ""
    if out.cpu > 0:
        total = out.cpu + out.child_cpu
        split = f" (API process {out.cpu:.2f} s + scheduler process {out.child_cpu:.2f} s)" if out.child_cpu else ""
        cpu_note = f"; {who} {total:.2f} s{split} = {out.bound / total:.0f} pods per CPU-second"
    rate = out.bound / out.seconds if out.seconds > 0 else float("inf")
    verdict = "" if scale != 1.0 else ("  ok" if rate >= case.threshold else "  BELOW")
    churn_note = ""
    if case.churn is not None:
        churn_note = (
            f"; churn: {out.churn_created} created, {out.churn_deleted} deleted, {out.churn_bound} churn pods bound"
        )
        if mode == "offline":
            churn_note += f" of {out.churn_tried} tried, {out.preempted} pods preempted"
    if out.failed_attempts is not None:
        churn_note += f"; {out.failed_attempts} failed attempts"
    return (
        f"{case.name:48s} {mode:7s} {out.bound:6d} pods in {out.seconds:7.2f} s = {rate:7.0f} pods/s "
        f"(upstream threshold {case.threshold}){verdict}{cpu_note}{churn_note}"
    )


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
    p.add_argument("--kube-version", help=f"the Kubernetes version to schedule as: {versions_help()} (default: kss's)")
    p.add_argument(
        "--churn-every",
        type=int,
        metavar="N",
        help="offline: a churn tick after every N measured pods (default: the threshold's pace; 1: PreemptionAsync "
        "with a preemptor per measured pod, the pace the server meets when it falls behind)",
    )
    args = p.parse_args()
    cases = [c for c in CASES if not args.case or any(c.name.startswith(prefix) for prefix in args.case)]
    if not cases:
        raise SystemExit(f"no such case; known: {', '.join(c.name for c in CASES)}")
    print(machine())
    modes = ["offline", "serve"] if args.mode == "both" else [args.mode]
    for case in cases:
        for mode in modes:
            if mode == "offline":
                out = run_offline(case, args.scale, args.record, args.churn_every, version=args.kube_version)
                who = "CPU (recorded)" if args.record else "CPU"
            else:
                spy = args.py_spy / case.name.replace("/", "_") if args.py_spy else None
                out = run_serve(case, args.scale, args.concurrency, args.timeout, spy, args.kube_version)
                who = "server CPU"  # the clients' own CPU aside: the same two cores serve them
            print(report_line(case, mode, out, who, args.scale), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
