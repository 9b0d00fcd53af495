"""What a replay measures over time (a row per sample) and its summary.

:class:`Metrics` is an observer (``kss_sim.replay.model.Observer``): at every sample it reads the run's nodes, queue and
pods and appends a row (the columns of ``timeseries.csv``, docs/replay.md):

- ``t``: virtual seconds;
- ``<R>_requested`` / ``<R>_allocatable`` summed over nodes, for ``cpu`` (cores), ``memory`` and
  ``ephemeral-storage`` (bytes), ``pods`` (pods on nodes / the nodes' pod capacity), every scalar resource any node
  offers, and ``gpu``: whole GPUs, extended ``*/gpu`` resources and DRA GPU devices together (``gpus.py``);
- ``pods_pending``, ``pods_running``, ``pods_unschedulable`` (pending after at least one failed attempt);
- ``queue_active``, ``queue_backoff``, ``queue_unschedulable``, ``queue_gated``;
- ``gpu_fragmentation`` (the FGD paper's measure, in GPUs: ``fragmentation.py``) and ``gpu_fragmentation_ratio``
  (fragmented / free GPUs);
- ``nodes_empty`` (no pods), ``nodes_full`` (some resource the node offers has no room left: CPU, memory, pods,
  or every GPU taken) and ``nodes_partial`` (the others).

Nodes are read again only when they changed (their NodeInfo's generation, object, or DRA devices held), so a
sample of a large, quiet cluster is cheap. :func:`summarize` turns the run's result and the rows into
``summary.json``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

import orjson

from kss_sim.kube.versions import kube_version
from kss_sim.replay.fragmentation import MILLI, NodeRoom, TargetWorkload, TaskShape, target_workload
from kss_sim.replay.gpus import (
    GPU_SPEC_ANNOTATION,
    DeviceIndex,
    is_gpu_resource,
    node_model,
    objects_by_kind,
    task_shape,
)
from kss_sim.replay.model import EVICTION_REASONS, NullObserver, PodRecord, ReplayResult, ReplayState
from kss_sim.replay.workload import TimedWorkload
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.record import Attempt

Row = dict[str, float]

BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
TAIL_COLUMNS = (
    "pods_pending",
    "pods_running",
    "pods_unschedulable",
    "queue_active",
    "queue_backoff",
    "queue_unschedulable",
    "queue_gated",
    "gpu_fragmentation",
    "gpu_fragmentation_ratio",
    "nodes_empty",
    "nodes_partial",
    "nodes_full",
)
QUEUES = ("active", "backoff", "unschedulable", "gated")
FAILED_RESULTS = frozenset({"unschedulable", "error"})
# Kinds whose pod template makes pods, and the field that says how many (absent: 1).
_TEMPLATE_KINDS = {
    "Deployment": "replicas",
    "ReplicaSet": "replicas",
    "StatefulSet": "replicas",
    "Job": "completions",
    "DaemonSet": "",
}


def workload_pods(workload: TimedWorkload) -> Iterable[dict[str, Any]]:
    """Every pod the workload makes, a template once per replica (CronJobs: one Job's worth)."""
    objs = list(workload.start) + [e.obj for e in workload.events if e.action == "create" and e.obj is not None]
    for obj in objs:
        kind = obj.get("kind")
        if kind == "Pod":
            yield obj
            continue
        spec = obj.get("spec") or {}
        if kind == "CronJob":
            kind, spec = "Job", ((spec.get("jobTemplate") or {}).get("spec") or {})
        if kind not in _TEMPLATE_KINDS or not isinstance(spec.get("template"), dict):
            continue
        field = _TEMPLATE_KINDS[kind]
        count = spec.get(field) if field else 1
        if count is None:
            count = spec.get("parallelism", 1) if kind == "Job" else 1
        template = dict(spec["template"])
        meta = dict(template.get("metadata") or {})
        meta.setdefault("namespace", (obj.get("metadata") or {}).get("namespace") or "default")
        template["metadata"] = meta
        for _ in range(max(0, int(count))):
            yield template


def workload_shapes(workload: TimedWorkload) -> list[TaskShape]:
    """One FGD task shape per pod the workload makes."""
    objs = list(workload.start) + [e.obj for e in workload.events if e.obj is not None]
    objects = objects_by_kind(objs)
    # Traces repeat a few shapes thousands of times: compute each from the fields it depends on once.
    shapes: dict[bytes, TaskShape] = {}
    out: list[TaskShape] = []
    for pod in workload_pods(workload):
        key = _shape_key(pod)
        shape = shapes.get(key) if key is not None else None
        if shape is None:
            shape = task_shape(pod, objects)
            if key is not None:
                shapes[key] = shape
        out.append(shape)
    return out


def _shape_key(pod: Mapping[str, Any]) -> bytes | None:
    """Everything ``task_shape`` reads of a pod, serialised (None when it cannot be)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    parts = (
        meta.get("namespace"),
        (meta.get("annotations") or {}).get(GPU_SPEC_ANNOTATION),
        [(c.get("name"), c.get("restartPolicy"), c.get("resources")) for c in spec.get("containers") or []],
        [(c.get("name"), c.get("restartPolicy"), c.get("resources")) for c in spec.get("initContainers") or []],
        spec.get("resources"),
        spec.get("overhead"),
        spec.get("resourceClaims"),
        spec.get("affinity"),
        pod.get("status"),
    )
    try:
        return orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None


class _NodeEntry:
    """A node's share of the totals, and what it was computed from (the objects kept, so they stay comparable by
    identity: the engine replaces a NodeInfo or a node object when the node changes)."""

    __slots__ = ("generation", "info", "node", "used", "values")

    def __init__(self, info: NodeInfo, used: int, values: dict[str, float]) -> None:
        self.info = info
        self.node = info.node
        self.generation = info.generation
        self.used = used
        self.values = values


_generation = attrgetter("generation")


class Metrics(NullObserver):
    """Samples the run into rows (see the module's docstring); ``rows`` and ``columns()`` after the run."""

    def __init__(
        self,
        interval: float = 3600.0,
        *,
        workload: TimedWorkload | None = None,
        target: TargetWorkload | None = None,
    ) -> None:
        self.interval = interval  # the engine's sample_interval; kept for the report
        self.target = target
        if self.target is None and workload is not None:
            self.target = target_workload(workload_shapes(workload))
        self.rows: list[Row] = []
        self._nodes: dict[str, _NodeEntry] = {}
        self._totals: dict[str, float] = {}
        self._devices = DeviceIndex()
        self._failed: set[str] = set()  # uids whose last attempt failed and that may still be pending
        self._resources: dict[str, None] = {}  # scalar resources seen, in order of appearance
        # The node list of the last node scan and (its length, the sum of its generations, the devices held).
        self._scanned_list: object = None
        self._scanned: tuple[int, int, dict[str, int] | None] | None = None

    # --- observer -------------------------------------------------------------------------------------------------
    def on_start(self, state: ReplayState) -> None:
        if self.target is None:
            # No workload given: the pods the scheduler knows at the start stand for the target workload.
            objects = {kind: state.cluster.objects.get(kind, {}) for kind in ("ResourceClaimTemplate", "ResourceClaim")}
            self.target = target_workload(task_shape(pod, objects) for pod in state.cluster.pods.values())

    def on_attempt(self, state: ReplayState, attempt: Attempt, pod: PodInfo) -> None:
        if attempt.result in FAILED_RESULTS:
            self._failed.add(pod.uid)
        else:
            self._failed.discard(pod.uid)

    def on_sample(self, state: ReplayState) -> None:
        self._refresh_nodes(state)
        row: Row = {"t": _number(state.now)}
        totals = self._totals
        for name in (*BASE_RESOURCES, *sorted(self._resources), "gpu"):
            scale = 1000 if name == "cpu" else 1
            row[f"{name}_requested"] = _number(totals.get(f"{name}_requested", 0) / scale)
            row[f"{name}_allocatable"] = _number(totals.get(f"{name}_allocatable", 0) / scale)
        row["pods_pending"] = state.pending_pods()
        row["pods_running"] = state.running_pods()
        row["pods_unschedulable"] = self._unschedulable(state.pods)
        counts = state.queue_counts()
        for queue in QUEUES:
            row[f"queue_{queue}"] = counts.get(queue, 0)
        fragmented = max(0.0, totals.get("fragmentation", 0.0)) / MILLI
        free = totals.get("gpu_allocatable", 0) - totals.get("gpu_requested", 0)
        row["gpu_fragmentation"] = _number(fragmented)
        row["gpu_fragmentation_ratio"] = _number(fragmented / free if free > 0 else 0.0)
        for state_name in ("empty", "partial", "full"):
            row[f"nodes_{state_name}"] = int(totals.get(f"nodes_{state_name}", 0))
        if self.rows and self.rows[-1]["t"] == row["t"]:
            self.rows[-1] = row  # the end of the run fell on a sample time
        else:
            self.rows.append(row)

    # --- reading ----------------------------------------------------------------------------------------------------
    def columns(self) -> list[str]:
        """The rows' columns in order (every row has each of them)."""
        names: list[str] = ["t"]
        for name in (*BASE_RESOURCES, *sorted(self._resources), "gpu"):
            names += [f"{name}_requested", f"{name}_allocatable"]
        return names + list(TAIL_COLUMNS)

    def table(self) -> list[Row]:
        """The rows, every one with every column (a resource first seen later reads 0 before)."""
        cols = self.columns()
        return [{c: row.get(c, 0) for c in cols} for row in self.rows]

    # --- inner workings ---------------------------------------------------------------------------------------------
    def _unschedulable(self, pods: Mapping[str, PodRecord]) -> int:
        gone = [uid for uid in self._failed if (rec := pods.get(uid)) is None or rec.bound_at is not None
                or rec.finished_at is not None]  # fmt: skip
        self._failed.difference_update(gone)
        return len(self._failed)

    def _refresh_nodes(self, state: ReplayState) -> None:
        self._devices.refresh(state.cluster)
        held = self._devices.allocated_per_node(state.cluster)
        cache = self._nodes
        source = state.nodes
        nodes = list(source)
        # Nothing changed since the last scan (the same node list, whose NodeInfos' generations only grow, and the
        # same DRA devices held): every node would be skipped below. Most samples of a long run are such.
        seen = (len(nodes), sum(map(_generation, nodes)), dict(held) if held else None)
        if source is self._scanned_list and seen == self._scanned:
            return
        self._scanned_list, self._scanned = source, seen
        # The hot loop of a sample (every node, every sample): plain attribute tests, no calls for unchanged nodes.
        for ni in nodes:
            used = held.get(ni.name, 0) if held else 0
            entry = cache.get(ni.name)
            if (
                entry is not None
                and entry.info is ni
                and entry.generation == ni.generation
                and entry.node is ni.node
                and entry.used == used
            ):
                continue
            values = self._node_values(ni, used)
            if entry is not None:
                self._add(entry.values, -1)
            self._add(values, +1)
            cache[ni.name] = _NodeEntry(ni, used, values)
        if len(nodes) != len(cache):
            present = {ni.name for ni in nodes}
            for name in [n for n in cache if n not in present]:
                self._add(cache.pop(name).values, -1)

    def _add(self, values: Mapping[str, float], sign: int) -> None:
        totals = self._totals
        for k, v in values.items():
            totals[k] = totals.get(k, 0) + sign * v

    def _node_values(self, ni: NodeInfo, dra_used: int) -> dict[str, float]:
        alloc, req = ni.allocatable, ni.requested
        values: dict[str, float] = {
            "cpu_requested": req.milli_cpu,
            "cpu_allocatable": alloc.milli_cpu,
            "memory_requested": req.memory,
            "memory_allocatable": alloc.memory,
            "ephemeral-storage_requested": req.ephemeral_storage,
            "ephemeral-storage_allocatable": alloc.ephemeral_storage,
            "pods_requested": len(ni.pods),
            "pods_allocatable": alloc.allowed_pod_number,
        }
        ext_total = ext_used = 0
        for name, amount in alloc.scalar_resources.items():
            self._resources.setdefault(name, None)
            values[f"{name}_allocatable"] = amount
            values[f"{name}_requested"] = req.scalar_resources.get(name, 0)
            if is_gpu_resource(name):
                ext_total += amount
                ext_used += min(amount, req.scalar_resources.get(name, 0))
        gpu_total = ext_total + self._devices.devices.get(ni.name, 0)
        gpu_used = ext_used + dra_used
        values["gpu_allocatable"] = gpu_total
        values["gpu_requested"] = gpu_used
        free_cpu, free_memory = alloc.milli_cpu - req.milli_cpu, alloc.memory - req.memory
        if gpu_total > gpu_used and self.target is not None:
            room = NodeRoom(free_cpu, free_memory, (MILLI,) * (gpu_total - gpu_used),
                            node_model(ni.node, self._devices, ni.name))  # fmt: skip
            values["fragmentation"] = self.target.node_fragmentation(room)
        if not ni.pods:
            values["nodes_empty"] = 1
        elif (
            free_cpu <= 0
            or free_memory <= 0
            or len(ni.pods) >= alloc.allowed_pod_number
            or (gpu_total > 0 and gpu_used >= gpu_total)
        ):
            values["nodes_full"] = 1
        else:
            values["nodes_partial"] = 1
        return values


# --- the summary ------------------------------------------------------------------------------------------------------
def nearest_rank(sorted_values: Sequence[float], percent: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``percent`` % of the values at or below it."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(percent / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def time_weighted(times: Sequence[float], values: Sequence[float]) -> float:
    """The mean of a step function: each sample's value holds until the next sample (the last one's weight is zero
    unless it is the only one)."""
    if not values:
        return 0.0
    total = span = 0.0
    for i in range(len(values) - 1):
        width = times[i + 1] - times[i]
        total += values[i] * width
        span += width
    return total / span if span > 0 else sum(values) / len(values)


def _peak_mean(times: Sequence[float], values: Sequence[float]) -> dict[str, float]:
    return {"peak": _number(max(values, default=0.0)), "mean": _number(time_weighted(times, values))}


def summarize(result: ReplayResult, metrics: Metrics | None) -> dict[str, Any]:
    """``summary.json``: the run's counts, waits, allocation and fragmentation (docs/replay.md)."""
    pods = result.pods
    waits = sorted(w for w in (p.wait for p in pods) if w is not None)
    scheduled = len(waits)
    summary: dict[str, Any] = {
        "workload": result.workload,
        "seed": result.seed,
        "kubeVersion": result.kube_version,
        # False: a version kss has no reference kube-scheduler for (ported from upstream, not measured).
        "kubeVersionMeasured": kube_version(result.kube_version).measured,
        "config": config_summary(result.config),
        "pods": len(pods),
        "scheduled": scheduled,
        "neverScheduled": len(pods) - scheduled,
        "virtualSeconds": _number(result.virtual_seconds),
        "attempts": result.attempts,
        "wallSeconds": round(result.wall_seconds, 3),
        "waitSeconds": {
            "p50": _number(nearest_rank(waits, 50)),
            "p95": _number(nearest_rank(waits, 95)),
            "p99": _number(nearest_rank(waits, 99)),
            "max": _number(waits[-1] if waits else 0.0),
            "mean": _number(sum(waits) / scheduled if scheduled else 0.0),
        },
        "preemptions": sum(p.preemptions for p in pods),
        "outcomes": _outcomes(pods),
        "evictions": _evictions(pods),
        "allocation": {},
        "fragmentation": {"peak": 0, "mean": 0, "end": 0},
    }
    if metrics is None or not metrics.rows:
        return summary
    rows = metrics.table()
    times = [row["t"] for row in rows]
    resources = [c[: -len("_allocatable")] for c in metrics.columns() if c.endswith("_allocatable")]
    for name in resources:
        pairs = [(row["t"], row[f"{name}_requested"] / row[f"{name}_allocatable"]) for row in rows
                 if row[f"{name}_allocatable"] > 0]  # fmt: skip
        if pairs:
            summary["allocation"][name] = {
                **_peak_mean([t for t, _ in pairs], [r for _, r in pairs]),
                # The amounts behind the shares, in timeseries.csv's units (cpu in cores).
                "peakRequested": _number(max(row[f"{name}_requested"] for row in rows)),
                "allocatable": _number(max(row[f"{name}_allocatable"] for row in rows)),
            }
    frag = [row["gpu_fragmentation"] for row in rows]
    ratio = [row["gpu_fragmentation_ratio"] for row in rows]
    summary["fragmentation"] = {**_peak_mean(times, frag), "end": frag[-1],
                                "ratio": {**_peak_mean(times, ratio), "end": ratio[-1]}}  # fmt: skip
    return summary


def _outcomes(pods: Iterable[PodRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for pod in pods:
        counts[pod.outcome] = counts.get(pod.outcome, 0) + 1
    return dict(sorted(counts.items()))


def _evictions(pods: Iterable[PodRecord]) -> dict[str, int]:
    """Evicted pods by reason (every reason, 0 when none) and in all."""
    counts = dict.fromkeys(EVICTION_REASONS, 0)
    for pod in pods:
        if pod.evicted_at is not None:
            counts[pod.reason] = counts.get(pod.reason, 0) + 1
    return {"total": sum(counts.values()), **counts}


def config_summary(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration in a few words: its profiles' scheduler names, and the document itself."""
    profiles = [str(p.get("schedulerName") or "default-scheduler") for p in config.get("profiles") or []]
    return {"profiles": profiles or ["default-scheduler"], "document": dict(config)}


def _number(value: float) -> float:
    """A float as the outputs write it: integers as integers, else rounded to 6 decimals (stable across runs)."""
    if isinstance(value, int):
        return value
    if math.isfinite(value) and value == int(value):
        return int(value)
    return round(value, 6)
