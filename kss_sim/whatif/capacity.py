"""Cluster capacity on the engine: how many more copies of a pod fit, and how many nodes a workload needs.

:func:`count_replicas` asks cluster-capacity's question: copies of one pod (``<pod>-capacity-<n>``, n from 1) are
scheduled one at a time through the configured profile, each bound one assumed on its node, until one fails (or
``limit`` copies are placed). They go through the one scheduling loop (``kss_sim/scheduler/loop.py``) as every
host's pods do, its host here a probe (:class:`CapacityProbe`) that writes no binding. The answer is the count,
the copies per node, and the failing attempt's message, which is kube-scheduler's FailedScheduling text. Nothing
is evicted: when the failing attempt's PostFilter finds preemption victims, the run stops there all the same (the
copies fit only by evicting pods) and says so.

:func:`nodes_for_replicas` and :func:`nodes_for_workload` add nodes of one shape (``<node>-added-<i>``) and search
for the smallest number that is enough: all the replicas fit, or every pod of a timed workload gets scheduled (or
its p95 wait stays under a bound) when it is replayed. The search doubles the count until it is enough, then
bisects, assuming that a node more never makes things worse.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kss_sim.cluster.admission.defaults.core import default_node, default_pod, prepare_pod_create
from kss_sim.cluster.errors import ApiError
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import KubeVersion
from kss_sim.replay.model import PodRecord
from kss_sim.replay.workload import TimedWorkload, WorkloadError
from kss_sim.scheduler.cycle import ScheduleOptions
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.record import Attempt
from kss_sim.simulation.runner import ScenarioRun

# Where the offline run (kss_sim.simulation.runner.cluster_objects_from) expects each kind the scheduler reads.
_SCENARIO_KEYS = {
    "PersistentVolumeClaim": "persistentVolumeClaims",
    "PersistentVolume": "persistentVolumes",
    "StorageClass": "storageClasses",
    "CSINode": "csiNodes",
    "CSIDriver": "csiDrivers",
    "Namespace": "namespaces",
    "PriorityClass": "priorityClasses",
    "PodDisruptionBudget": "podDisruptionBudgets",
    "Service": "services",
    "ReplicaSet": "replicaSets",
    "StatefulSet": "statefulSets",
    "ReplicationController": "replicationControllers",
    "PodGroup": "podGroups",
    "Workload": "workloads",
    "DeviceClass": "deviceClasses",
    "ResourceSlice": "resourceSlices",
    "ResourceClaim": "resourceClaims",
    "ResourceClaimTemplate": "resourceClaimTemplates",
}

HOSTNAME_LABEL = "kubernetes.io/hostname"

# CapacityReport.stop_type values (cluster-capacity's words where it has them)
UNSCHEDULABLE = "Unschedulable"
LIMIT_REACHED = "LimitReached"
ERROR = "Error"
WAITING = "WaitingOnPermit"
GATED = "SchedulingGated"


@dataclass
class CapacityReport:
    """How many copies of ``pod`` fit and why the next one does not."""

    pod: str  # the pod's name (the copies' base)
    count: int
    per_node: dict[str, int]  # node -> copies placed there, by node name
    stop_type: str
    stop_message: str
    victims: list[str] = field(default_factory=list)  # preemption victims the failing copy's PostFilter chose

    @property
    def stop_reason(self) -> str:
        """``<type>: <message>``, as cluster-capacity's "Termination reason" line reads."""
        return f"{self.stop_type}: {self.stop_message}"

    def to_dict(self) -> Obj:
        return {
            "pod": self.pod,
            "count": self.count,
            "perNode": dict(self.per_node),
            "stopType": self.stop_type,
            "stopMessage": self.stop_message,
            "victims": list(self.victims),
        }


@dataclass
class NodeSearch:
    """The smallest number of added nodes found enough (None: not even ``max_nodes``), and every count tried."""

    template: str  # the node shape's name
    nodes: int | None
    max_nodes: int
    tried: dict[int, bool]  # added nodes -> enough?
    detail: dict[int, Obj] = field(default_factory=dict)  # added nodes -> what was measured there

    def to_dict(self) -> Obj:
        return {
            "nodeShape": self.template,
            "nodes": self.nodes,
            "maxNodes": self.max_nodes,
            "tried": [{"nodes": k, "enough": ok, **self.detail.get(k, {})} for k, ok in sorted(self.tried.items())],
        }


def _name_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or str(meta.get("generateName") or "").rstrip("-") or "")


def prepare_pod(manifest: Obj, objects: Iterable[Obj]) -> Obj:
    """The pod as kube-apiserver would store it: defaults, priority admission (the objects' PriorityClasses),
    namespace ``default``, no node. ``WorkloadError`` when it is no pod or admission refuses it."""
    if not isinstance(manifest, dict) or manifest.get("kind") != "Pod":
        raise WorkloadError(["the pod file must hold one Pod manifest"])
    pod = copy.deepcopy(manifest)
    name = _name_of(pod)
    if not name:
        raise WorkloadError(["metadata.name: Required value"])
    meta = pod.setdefault("metadata", {})
    meta["name"] = name
    meta.pop("generateName", None)
    meta.setdefault("namespace", "default")
    pod.setdefault("spec", {}).pop("nodeName", None)
    if not pod["spec"].get("containers"):
        raise WorkloadError(["spec.containers: Required value"])
    default_pod(pod)
    classes = [o for o in objects if o.get("kind") == "PriorityClass"]
    try:
        prepare_pod_create(pod, classes)
    except ApiError as exc:
        raise WorkloadError([str(exc)]) from None
    return pod


def read_node_template(doc: Any) -> Obj:
    """A Node manifest to copy (``WorkloadError`` otherwise)."""
    if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        doc = doc["items"][0] if len(doc["items"]) == 1 else None
    if not isinstance(doc, dict) or doc.get("kind") != "Node":
        raise WorkloadError(["the node file must hold one Node manifest"])
    if not _name_of(doc):
        raise WorkloadError(["metadata.name: Required value"])
    alloc = (doc.get("status") or {}).get("allocatable") or (doc.get("status") or {}).get("capacity")
    if not isinstance(alloc, dict) or not alloc:
        raise WorkloadError(["status.allocatable: Required value: the node shape needs its resources"])
    return doc


def added_nodes(template: Obj, count: int) -> list[Obj]:
    """``count`` copies of ``template`` named ``<node>-added-<i>`` (i from 1), each with its own hostname label."""
    base = _name_of(template)
    nodes = []
    for i in range(1, count + 1):
        node = copy.deepcopy(template)
        name = f"{base}-added-{i}"
        meta = node.setdefault("metadata", {})
        meta["name"] = name
        meta.pop("generateName", None)
        meta.pop("uid", None)
        meta.pop("resourceVersion", None)
        meta.setdefault("labels", {})[HOSTNAME_LABEL] = name
        default_node(node)
        nodes.append(node)
    return nodes


def _scenario(objects: Iterable[Obj], config: Obj | None) -> Obj:
    """The offline run's scenario of a cluster: its nodes, the pods bound in it, the objects the plugins read.
    Pending pods are left out: the question is what fits beside what runs now."""
    scenario: Obj = {"config": config, "nodes": [], "pods": []}
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Node":
            node = copy.deepcopy(obj)
            default_node(node)
            scenario["nodes"].append(node)
        elif kind == "Pod":
            if (obj.get("spec") or {}).get("nodeName"):
                scenario["pods"].append(obj)
        elif kind in _SCENARIO_KEYS:
            scenario.setdefault(_SCENARIO_KEYS[kind], []).append(obj)
    return scenario


class CapacityProbe(ScenarioRun):
    """A host of the scheduling loop that binds nothing: the offline run's cluster and writer (no binding written, a
    scheduled copy stays assumed on its node in the cache), with the probe's options (no records, no binding
    cycle, kube-scheduler's seeded random tie-break instead of the golden runs' by name)."""

    def __init__(
        self,
        objects: Iterable[Obj],
        *,
        config: Obj | None,
        feature_gates: dict[str, bool] | None,
        kube_version: KubeVersion | None,
        seed: int,
    ) -> None:
        super().__init__(
            _scenario(objects, config), record=False, feature_gates=feature_gates, kube_version=kube_version, seed=seed
        )

    def options(self) -> ScheduleOptions:
        return ScheduleOptions(record=False, tie_break="random", run_binding_cycle=False)

    def try_pod(self, pod: PodInfo) -> Attempt:
        """One attempt for ``pod`` through the loop (a ``gated`` one when PreEnqueue keeps it out of the queue)."""
        qpi = self._enqueue(pod)
        if qpi is None:
            return self._gated(pod)
        att = self.loop.schedule(qpi, pod, 1)
        self.actions.concluded_attempts.clear()  # nothing reports them: the caller reads the attempt
        return att


def count_replicas(
    pod: Obj,
    objects: Iterable[Obj],
    *,
    config: Obj | None = None,
    feature_gates: dict[str, bool] | None = None,
    kube_version: KubeVersion | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> CapacityReport:
    """Schedule copies of ``pod`` (prepared by :func:`prepare_pod`) into the cluster of ``objects`` until one fails
    or ``limit`` are placed. Ties among the best nodes are broken by kube-scheduler's reservoir sampling, seeded."""
    probe = CapacityProbe(objects, config=config, feature_gates=feature_gates, kube_version=kube_version, seed=seed)
    base = _name_of(pod)
    per_node: dict[str, int] = {}
    count = 0

    def report(stop_type: str, message: str, victims: list[str] | None = None) -> CapacityReport:
        return CapacityReport(base, count, dict(sorted(per_node.items())), stop_type, message, victims or [])

    while limit is None or count < limit:
        copy_pod = copy.deepcopy(pod)
        name = f"{base}-capacity-{count + 1}"
        copy_pod["metadata"]["name"] = name
        copy_pod["metadata"]["uid"] = f"capacity-{count + 1}-{base}"
        att = probe.try_pod(PodInfo(copy_pod))
        if att.result == "gated":
            return report(GATED, str(att.pre_enqueue))
        if att.result == "scheduled" and att.bound_to is not None:
            count += 1
            per_node[att.bound_to] = per_node.get(att.bound_to, 0) + 1
            continue
        if att.result == "waiting":
            return report(WAITING, f"pod {name} waits in Permit on {att.waiting_on}: {att.message}")
        if att.result == "unschedulable":
            message = att.message
            if att.nominated_node:
                message += f" (it would fit on {att.nominated_node} by preempting {', '.join(att.victims)})"
            return report(UNSCHEDULABLE, message, att.victims)
        return report(ERROR, att.message or att.result)
    return report(LIMIT_REACHED, f"Maximum number of pods simulated: {limit}")


def smallest_enough(enough: Callable[[int], bool], max_count: int) -> tuple[int | None, dict[int, bool]]:
    """The smallest k in 0..max_count with ``enough(k)``, by doubling then bisection (``enough`` assumed monotone).
    Returns it (None if even ``max_count`` is not enough) and every k tried."""
    tried: dict[int, bool] = {}

    def check(k: int) -> bool:
        if k not in tried:
            tried[k] = enough(k)
        return tried[k]

    if check(0):
        return 0, tried
    low, high = 0, 1  # low: known not enough
    while not check(min(high, max_count)):
        if high >= max_count:
            return None, tried
        low, high = high, high * 2
    high = min(high, max_count)
    while high - low > 1:
        mid = (low + high) // 2
        if check(mid):
            high = mid
        else:
            low = mid
    return high, tried


def nodes_for_replicas(
    pod: Obj,
    objects: Iterable[Obj],
    template: Obj,
    replicas: int,
    *,
    config: Obj | None = None,
    feature_gates: dict[str, bool] | None = None,
    kube_version: KubeVersion | None = None,
    max_nodes: int = 1000,
    seed: int = 0,
) -> tuple[NodeSearch, CapacityReport]:
    """The fewest nodes of ``template``'s shape to add so that ``replicas`` copies of ``pod`` fit; with the report
    at that count (or at ``max_nodes`` when even that is not enough)."""
    objects = list(objects)
    reports: dict[int, CapacityReport] = {}

    def enough(k: int) -> bool:
        rep = count_replicas(
            pod, [*objects, *added_nodes(template, k)], config=config, feature_gates=feature_gates,
            kube_version=kube_version, limit=replicas, seed=seed,
        )  # fmt: skip
        reports[k] = rep
        return rep.count >= replicas

    k, tried = smallest_enough(enough, max_nodes)
    detail = {n: {"fit": r.count} for n, r in reports.items()}
    search = NodeSearch(_name_of(template), k, max_nodes, tried, detail)
    return search, reports[k if k is not None else max(tried)]


def nearest_rank(values: list[float], percentile: float) -> float:
    """The nearest-rank percentile (the smallest value with at least ``percentile`` % of values at or below it)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * percentile // 100))
    return ordered[int(rank) - 1]


def workload_waits(pods: Iterable[PodRecord]) -> tuple[int, int, float | None]:
    """(pods, never scheduled, p95 wait) of a run, a pod never bound counting as an endless wait (so the p95 is
    finite only when at least 95 % of the pods were bound)."""
    waits = [rec.bound_at - rec.arrival if rec.bound_at is not None else float("inf") for rec in pods]
    never = sum(1 for w in waits if w == float("inf"))
    return len(waits), never, nearest_rank(waits, 95) if waits else None


def with_added_nodes(workload: TimedWorkload, template: Obj, count: int) -> TimedWorkload:
    """The workload with ``count`` nodes of ``template``'s shape in its starting cluster."""
    return TimedWorkload(
        name=workload.name,
        start=[*workload.start, *added_nodes(template, count)],
        events=list(workload.events),
        scheduler_config=workload.scheduler_config,
        epoch=workload.epoch,
        source=workload.source,
    )


def nodes_for_workload(
    workload: TimedWorkload,
    template: Obj,
    *,
    p95_wait_under: float | None = None,
    config: Obj | None = None,
    feature_gates: dict[str, bool] | None = None,
    kube_version: KubeVersion | None = None,
    max_nodes: int = 1000,
    seed: int = 0,
    until: float | None = None,
) -> NodeSearch:
    """The fewest nodes of ``template``'s shape to add to ``workload``'s start so that, replayed, every pod of it
    is scheduled at some point (or, with ``p95_wait_under``, its p95 wait is under that many seconds; a pod never
    bound counts as waiting for ever)."""
    from kss_sim.replay.engine import Replay  # the engine is needed only here

    detail: dict[int, Obj] = {}

    def enough(k: int) -> bool:
        result = Replay(
            with_added_nodes(workload, template, k), scheduler_config=config, feature_gates=feature_gates,
            seed=seed, until=until, kube_version=kube_version,
        ).run()  # fmt: skip
        total, never, p95 = workload_waits(result.pods)
        detail[k] = {"pods": total, "neverScheduled": never, "waitP95": p95 if p95 != float("inf") else None}
        if p95_wait_under is not None:
            return p95 is not None and p95 < p95_wait_under
        return never == 0

    k, tried = smallest_enough(enough, max_nodes)
    return NodeSearch(_name_of(template), k, max_nodes, tried, detail)
