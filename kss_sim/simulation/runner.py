"""Offline scenario runs: the scheduling loop on a scenario file, results in the golden format (FORMAT.md).

A run is a host of ``SchedulingLoop`` as kss serve and kss replay are: the scenario's nodes and bound pods reach
the loop as events, each pending pod enters the queue and is handed to the loop, which concludes the attempt
through ``ScenarioWriter`` (this module keeps only the file order and what is recorded of each attempt).
The rules of a run: pending pods in file order, each placed before the next; ties broken by node
name; every node evaluated unless the scenario is about sampling; the k-th bound pod starts at
2025-01-12T13:46:40Z + k s; a pod that fits nowhere may preempt and is then retried once at once.
A pod a Permit plugin holds is reported when its wait ends: allowed (bound, in the order it was allowed) or
rejected; the run's clock stands still while pods are scheduled, so a wait that nothing ends times out after the
last pod, the clock jumping to each deadline in turn.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import marshal
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.extender_http import extenders_for
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import KubeVersion
from kss_sim.scheduler import queue as q
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.dra.dra_manager import dra_manager_for
from kss_sim.scheduler.framework import Status
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.loop import LoopWriter, SchedulingLoop
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import dynamic_resources as dra_plugin
from kss_sim.scheduler.podgroup_cycle import scheduling_group_name
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.runtime import Framework

START_EPOCH = datetime(2025, 1, 12, 13, 46, 40, tzinfo=UTC)
_START_NAIVE = START_EPOCH.replace(tzinfo=None)
DETAIL_LEVELS = ("full", "compact", "summary", "placements")


def oracle(version: KubeVersion) -> str:
    """Who produced a result document: kss's port, at the release it ran as."""
    return f"kss (Python port of kube-scheduler {version.git_version})"


def cluster_objects_from(scenario: dict[str, Any]) -> ClusterObjects:
    """Listers for a scenario's non-node objects."""
    co = ClusterObjects()

    def key(obj: dict[str, Any], namespaced: bool) -> str:
        meta = obj.get("metadata") or {}
        return f"{meta.get('namespace') or 'default'}/{meta.get('name')}" if namespaced else str(meta.get("name"))

    for obj in scenario.get("persistentVolumeClaims") or []:
        co.pvcs[key(obj, True)] = obj
    for obj in scenario.get("persistentVolumes") or []:
        co.pvs[key(obj, False)] = obj
    for obj in scenario.get("storageClasses") or []:
        co.storage_classes[key(obj, False)] = obj
    for obj in scenario.get("csiNodes") or []:
        co.csi_nodes[key(obj, False)] = obj
    for obj in scenario.get("csiDrivers") or []:
        co.csi_drivers[key(obj, False)] = obj
    for obj in scenario.get("namespaces") or []:
        co.namespaces[key(obj, False)] = obj
    for obj in scenario.get("priorityClasses") or []:
        co.priority_classes[key(obj, False)] = obj
    co.pdbs = list(scenario.get("podDisruptionBudgets") or [])
    co.services = list(scenario.get("services") or [])
    co.replica_sets = list(scenario.get("replicaSets") or [])
    co.stateful_sets = list(scenario.get("statefulSets") or [])
    co.replication_controllers = list(scenario.get("replicationControllers") or [])
    for kind, field_name in (("PodGroup", "podGroups"), ("Workload", "workloads")):
        for obj in scenario.get(field_name) or []:
            # v1.36's scheduling.k8s.io/v1alpha2 objects go by the scheduler's own names for them; v1.37's v1beta1
            # ones are held in that form too.
            if obj.get("apiVersion") == _V1BETA1:
                from kss_sim.cluster.kinds.workload_v1beta1 import in_stored_version  # the cluster, only then

                obj = in_stored_version(obj)
            co.put_object(f"{kind}.v1alpha2" if obj.get("apiVersion") == _V1ALPHA2 else kind, obj)
    # The pod lister (the gang plugins' query) sees every pod of the run from the start: all are created before
    # scheduling begins. Filled only for scenarios with groups, which are the only ones that read it.
    if _uses_pod_lister(co):
        for pod in [*(scenario.get("pods") or []), *(scenario.get("pending") or [])]:
            if _visible(pod):
                co.put_pod(pod)
    # DRA objects (kss issue #18's golden keys); claims are copied, since the run writes their status.
    for kind, field_name in _DRA_KEYS:
        for obj in scenario.get(field_name) or []:
            co.put_object(kind, _copy_object(obj) if kind == "ResourceClaim" else obj)
    return co


_DRA_KEYS = (
    ("DeviceClass", "deviceClasses"),
    ("ResourceSlice", "resourceSlices"),
    ("ResourceClaim", "resourceClaims"),
    ("ResourceClaimTemplate", "resourceClaimTemplates"),
)


_V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
_V1BETA1 = "scheduling.k8s.io/v1beta1"


def _uses_pod_lister(co: ClusterObjects) -> bool:
    """Scenarios with pod groups or workloads: their plugins read the pod lister."""
    objects = co.objects  # asked for every bound pod: no generator
    return bool(
        objects.get("PodGroup")
        or objects.get("Workload")
        or objects.get("PodGroup.v1alpha2")
        or objects.get("Workload.v1alpha2")
    )


_ATOMS = frozenset((str, int, float, bool, type(None)))


def _copy_object(obj: Any) -> Any:
    """A deep copy of a plain Kubernetes object (the engine writes into the pods and nodes it is given): through
    ``marshal`` (C, ~1.5x faster than the walk below for a pod) when the object holds only the plain types it takes
    (exactly, no subclass; version 2 keeps no shared references: a part the YAML used twice is copied twice, as the
    walk does), else by ``_copy_tree``."""
    try:
        return marshal.loads(marshal.dumps(obj, 2))
    except ValueError:  # a value of another type (a datetime from YAML, say)
        return _copy_tree(obj)


def _copy_tree(obj: Any) -> Any:
    """A deep copy of a plain Kubernetes object, ~2-3x faster than ``copy.deepcopy``: dicts and lists copied,
    strings and numbers shared, anything else deep-copied."""
    kind = type(obj)
    if kind is dict:
        return {k: v if type(v) in _ATOMS else _copy_tree(v) for k, v in obj.items()}
    if kind is list:
        return [v if type(v) in _ATOMS else _copy_tree(v) for v in obj]
    if kind in _ATOMS:
        return obj
    return copy.deepcopy(obj)


def _visible(pod: dict[str, Any]) -> bool:
    """Succeeded and Failed pods are invisible to the scheduler (its informer filters them)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class ScenarioWriter(LoopWriter):
    """The loop's writer in an offline run: a binding is the bound pod's startTime (and its claims as PreBind writes
    them), victims leave the cache at once, nominations are written into the pod; each concluded attempt is kept
    for the run to report, in the order the loop concluded them."""

    def __init__(self, run: ScenarioRun) -> None:
        self.run = run
        # (attempt, its pod, the bound pod's startTime) as concluded, taken by ScenarioRun._concluded.
        self.concluded_attempts: list[tuple[Attempt, PodInfo]] = []
        self.deleted: list[str] = []
        # Victims deleted during a PodGroup cycle: they leave the cache once the cycle is over, as the group's
        # snapshot (taken once, at its start) still holds them upstream.
        self.held_victims: list[PodInfo] | None = None

    # --- the attempt's outcome (LoopWriter) -----------------------------------------------------
    def write_binding(self, pod: PodInfo, att: Attempt, current: Obj) -> str | None:
        return None

    def scheduled(self, pod: PodInfo, att: Attempt) -> None:
        pass  # the run's bookkeeping of a bound pod follows the attempt's observers (concluded)

    def unschedulable(self, pod: PodInfo, att: Attempt) -> None:
        pass

    def concluded(self, pod: PodInfo, att: Attempt) -> None:
        self.concluded_attempts.append((att, pod))

    def pod_after_wait(self, pod: PodInfo) -> Obj | None:
        return pod.pod  # nothing else writes to a pod during a run

    # --- the plugins' pod actions ---------------------------------------------------------------
    def bind(self, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def delete_victim(
        self, victim: PodInfo, preemptor: PodInfo, preempting_group: dict[str, Any] | None = None
    ) -> Status:
        if self.held_victims is not None:
            self.held_victims.append(victim)
        else:
            self.run.loop.cache.remove_pod(victim.uid)
        for h in self.handles:
            h.delete_nominated_pod(victim)
        self.deleted.append(victim.key)
        if self.handles:
            # R5-DRA: the resourceclaim controller drops the victim from its claims' reservedFor at once.
            dra_plugin.release_claims_of_deleted_pod(self.handles[0], victim)
        return Status()

    def record_nomination(self, pod: PodInfo, node_name: str) -> None:
        pod.pod.setdefault("status", {})["nominatedNodeName"] = node_name


class VirtualClock:
    """The offline run's clock: it stands still while pods are scheduled and jumps to Permit deadlines."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ScenarioRun:
    """Runs one scenario through the scheduling loop (``SchedulingLoop``), pod by pod in file order."""

    def __init__(
        self,
        scenario: dict[str, Any],
        *,
        record: bool = True,
        allow_missing_plugins: bool = False,
        feature_gates: dict[str, bool] | None = None,
        kube_version: KubeVersion | None = None,
        seed: int | None = None,  # the Random of selectHost's random tie-break (a probe's options; files break by name)
    ) -> None:
        self.scenario = scenario
        self.record = record
        # A scenario may name the gates of its run (the dra family's ``featureGates``); they win over the caller's.
        feature_gates = {**(feature_gates or {}), **(scenario.get("featureGates") or {})}
        config = parse_config(scenario.get("config"), feature_gates, kube_version)
        family = (scenario.get("meta") or {}).get("family")
        self.sampling = family == "sampling"
        self.config = config
        self.cluster = cluster_objects_from(scenario)
        self.actions = ScenarioWriter(self)
        self.clock = VirtualClock()
        self.loop = SchedulingLoop(
            config,
            self.actions,
            clock=self.clock,
            options=self.options(),
            extenders=lambda config: extenders_for(config.extenders),
            feature_gates=feature_gates,
            seed=seed,
            cluster=self.cluster,
            allow_missing_plugins=allow_missing_plugins,
        )
        arrived: dict[str, None] = {}
        for node in scenario.get("nodes") or []:
            self.loop.handle("ADDED", "Node", _copy_object(node))
            arrived[str((node.get("metadata") or {}).get("name") or "")] = None
        # An image's size is the first listing node's in the order the nodes arrived (the file's), not the node tree's.
        self.loop.cache.snapshot.cache_order = list(arrived)
        for pod in scenario.get("pods") or []:
            if _visible(pod):
                self.loop.add_assigned_pod(PodInfo(_copy_object(pod)))
        self.bound_count = 0
        self.on_attempt: Callable[[Attempt, PodInfo], None] | None = None
        # What PreBind wrote into each bound pod's claims (R6-DRA), by attempt: the golden ``allocations`` key.
        self.claim_allocations: dict[int, dict[str, Any]] = {}

    @property
    def scheduler(self) -> Scheduler:
        return self.loop.scheduler

    @property
    def frameworks(self) -> dict[str, Framework]:
        return self.loop.frameworks

    def options(self) -> ScheduleOptions:
        return ScheduleOptions(
            record=self.record,
            score_single_feasible=True,
            tie_break="name",
            run_binding_cycle=False,
            percentage_of_nodes_to_score=None if self.sampling else 100,
        )

    def run(self) -> list[tuple[Attempt, str | None]]:
        """Schedule every pending pod; returns each attempt with the startTime given to a bound pod."""
        with _fewer_collections():
            return list(self.attempts())

    def attempts(self) -> Iterator[tuple[Attempt, str | None]]:
        """Schedule every pending pod, yielding each attempt (with a bound pod's startTime) as it finishes.

        A caller that drops each attempt once it is done with it keeps memory flat (a recorded attempt on a
        1,200-node cluster holds ~40 KB of matrices).
        """
        loop = self.loop
        raws = list(self.scenario.get("pending") or [])
        # Pods already tried in a PodGroup cycle with an earlier member of their group.
        tried: set[str] = set()
        # Each pending pod is copied as its turn comes (the scenario's own dicts are never written to).
        for i, raw in enumerate(raws):
            pod = PodInfo(_copy_object(raw))
            if pod.key in tried:
                continue
            qpi = self._enqueue(pod)
            if qpi is None:
                yield self._gated(pod), None
                continue
            group = loop.pod_group_of(pod)
            tried_order: list[str] = []
            if group:
                tried_order = self._pod_group_cycle(qpi, group, raws[i + 1 :], tried)
            else:
                att = loop.schedule(qpi, pod, 1)
                if att.result not in ("scheduled", "waiting") and att.nominated_node:
                    # The preemptor is retried once at once (its victims are gone already).
                    retry = loop.queue.pop_specific(pod.key)
                    if retry is not None:
                        loop.schedule(retry, pod, 2)
            loop.resolve_waiting()
            yield from self._concluded(tried_order)
        # Pods still held in Permit time out: the clock jumps to each next deadline.
        while (deadline := loop.next_permit_deadline()) is not None:
            self.clock.now = max(self.clock.now, deadline)
            loop.resolve_waiting()
            yield from self._concluded()

    def _enqueue(self, pod: PodInfo) -> q.QueuedPodInfo | None:
        """``pod`` into the queue and out again, in flight; None when PreEnqueue gates it (it stays gated)."""
        return self.loop.queue.add_in_flight(pod)

    def _gated(self, pod: PodInfo) -> Attempt:
        """A pod that PreEnqueue rejects (scheduling gates) never enters a scheduling cycle: reported as gated, and
        out of the queue (it is tried again only if it is pending again later in the file)."""
        queued = self.loop.queue.unschedulable[pod.key]
        self.loop.queue.delete(pod.key)
        fwk = self.scheduler.framework_for(pod)
        st = queued.gating_status or Status()
        att = Attempt(
            pod=pod.key, attempt=1, priority=pod.priority, profile=fwk.profile_name if fwk else "", result="gated"
        )
        att.pre_enqueue = f"{st.plugin}: {st.message()}"
        return att

    def _pod_group_cycle(self, lead: q.QueuedPodInfo, group: str, later: list[Any], tried: set[str]) -> list[str]:
        """v1.36's PodGroup cycle for ``lead`` and its group's later pending pods (those PreEnqueue lets in), by
        priority, then file order (the order they entered the queue); each is tried once, there. The members' keys
        in the order tried."""
        pod = lead.pod_info
        members = [lead]
        for raw in later:
            other = PodInfo(_copy_object(raw))
            if other.namespace != pod.namespace or scheduling_group_name(other) != group or other.key in tried:
                continue
            queued = self._enqueue(other)
            if queued is None:
                self.loop.queue.delete(other.key)  # gated: reported at its own turn
            else:
                members.append(queued)
        members.sort(key=lambda m: -m.pod_info.priority)  # stable: file order among equals
        tried.update(m.key for m in members)
        self.actions.held_victims = []
        try:
            self.loop.schedule_pod_group([(m, m.pod_info, 1) for m in members])
        finally:
            held, self.actions.held_victims = self.actions.held_victims, None
            for victim in held:
                self.loop.cache.remove_pod(victim.uid)
        return [m.key for m in members]

    def _concluded(self, tried_order: Sequence[str] = ()) -> Iterator[tuple[Attempt, str | None]]:
        """The attempts the loop concluded since the last call, each given to ``after`` (a bound pod's startTime) as
        it is reported; a pod that failed leaves the queue (the run tries each pending pod at its turn only).

        After a PodGroup cycle its members come first, in the order tried (``tried_order``): the first ones waited
        in Permit for the member that met the quorum, so the loop concluded them after it; kube-scheduler binds
        them in the order tried."""
        done = self.actions.concluded_attempts
        self.actions.concluded_attempts = []
        if tried_order:
            rank = {key: i for i, key in enumerate(tried_order)}
            done.sort(key=lambda entry: rank.get(entry[1].key, len(rank)))  # stable: the rest as concluded
        for att, pod in done:
            if att.result != "scheduled":
                self.loop.queue.delete(pod.key)
            yield att, self.after(pod, att)

    def after(self, pod: PodInfo, att: Attempt) -> str | None:
        """A concluded attempt seen by ``on_attempt``; a bound pod gets its startTime (returned), its claims and its
        place in the pod lister."""
        if self.on_attempt is not None:
            self.on_attempt(att, pod)
        if att.result != "scheduled" or att.bound_to is None:
            return None
        self._write_claims(pod, att)
        self.bound_count += 1
        # "%Y-%m-%dT%H:%M:%SZ" (whole seconds, naive isoformat is the same text and cheaper than strftime).
        start = (_START_NAIVE + timedelta(seconds=self.bound_count)).isoformat() + "Z"
        ni = self.scheduler.snapshot.get(att.bound_to)
        if ni is not None:
            for existing in reversed(ni.pods):  # the pod just bound is the node's last
                if existing.uid == pod.uid:
                    existing.pod.setdefault("status", {})["startTime"] = start
                    existing.pod["status"].pop("nominatedNodeName", None)
                    if _uses_pod_lister(self.cluster):
                        self.cluster.put_pod(existing.pod)  # bound now, as the informer would tell
                    break
        for h in self.loop.handles:
            h.delete_nominated_pod(pod)
        return start

    def _write_claims(self, pod: PodInfo, att: Attempt) -> None:
        """R6-DRA: a bound pod's claims stored as DynamicResources' PreBind writes them (the binding cycle does not
        run offline), the claim made for its extended resources (DRAExtendedResource) included."""
        if not dra_plugin.has_resource_claims(pod) and not dra_manager_for(self.loop.cluster).in_flight:
            return  # no claim to write (bind_claims_after_reserve's own first check, without finding the plugin)
        fwk = self.frameworks.get(att.profile)
        plugin = fwk.plugins_by_name.get(dra_plugin.NAME) if fwk is not None else None
        if isinstance(plugin, dra_plugin.DynamicResourcesBeforeScoring):  # every release's form writes claims
            written = plugin.bind_claims_after_reserve(pod)
            if written:
                self.claim_allocations[id(att)] = written


def attempt_entry(
    att: Attempt, start_time: str | None, detail: str, allocations: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One ``results`` entry of the golden format at the given detail level (``allocations``: what PreBind wrote
    into the bound pod's claims, kss issue #18's key)."""
    base: dict[str, Any] = {"pod": att.pod, "attempt": att.attempt, "priority": att.priority}
    if att.pod_group is not None:
        base["podGroup"] = pod_group_entry(att.pod_group)
    if att.pre_enqueue is not None:
        base.update(
            preEnqueue=att.pre_enqueue, prefilter=None, prefilterStatus="", prefilterNodes=None, feasible=None,
            prescore=None, score=None, normalizedscore=None, finalscore=None, total=None, selected=None,
            boundTo=None, postfilter=None,
        )  # fmt: skip
        return base
    if detail == "placements":
        base.update(
            selected=att.selected,
            boundTo=att.bound_to,
            boundBy=att.bound_by if att.bound_to else None,
            feasibleCount=att.feasible_count,
            fitError=att.fit_error,
            postfilter=att.postfilter,
        )
        if allocations:
            base["allocations"] = allocations
        return base
    # Summary files keep only the overall PreFilter status.
    base.update(
        prefilter=att.prefilter if detail != "summary" else {},
        prefilterStatus=att.prefilter_status,
        prefilterNodes=att.prefilter_nodes,
    )
    if detail == "full":
        base["filter"] = att.filter
    elif detail == "compact":
        base["filter"] = {
            node: {p: v for p, v in verdicts.items() if v not in ("passed", "skip")}
            for node, verdicts in att.filter.items()
            if any(v not in ("passed", "skip") for v in verdicts.values())
        }
    base["unresolvable"] = att.unresolvable
    base["filterFail"] = att.filter_fail
    base["feasible"] = sorted(att.feasible)
    if detail in ("full", "compact"):
        base["prescore"] = att.prescore
        base["score"] = att.score
        if detail == "full":
            base["normalizedscore"] = att.normalized_score
        base["finalscore"] = att.final_score
    base.update(
        total=att.total,
        selected=att.selected,
        boundTo=att.bound_to,
        boundBy=att.bound_by if att.bound_to else None,
        startTime=start_time,
        fitError=att.fit_error,
        postfilter=att.postfilter,
    )
    if allocations:
        base["allocations"] = allocations
    return base


def pod_group_entry(record: dict[str, Any]) -> dict[str, Any]:
    """The ``podGroup`` key of a pod tried in a v1.36 PodGroup cycle (tests/golden/README.md): its group, the
    cycle's outcome (the PodGroupScheduled condition's reason and message), the placement chosen (None without
    one) and whether the pod fitted but was turned back because the group did not; the node it is nominated to
    when the group waits for a preemption, and what workload-aware preemption did when it ran."""
    entry = {
        "podGroup": record["podGroup"],
        "outcome": record["outcome"],
        "message": record["message"],
        "placement": record.get("placement") or None,
        "rejectedByGroup": record["rejectedByGroup"],
    }
    for key in ("nominatedNode", "preemption"):
        if record.get(key) is not None:
            entry[key] = record[key]
    return entry


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """The cyclic garbage collector less often during a run: a cycle allocates many short-lived containers but
    hardly any reference cycles, and frequent young-generation passes cost ~5 % of a recorded run."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], 10_000), max(before[1], 50), max(before[2], 100))
    try:
        yield
    finally:
        gc.set_threshold(*before)


def run_scenario(
    scenario: dict[str, Any],
    detail: str = "full",
    *,
    allow_missing_plugins: bool = False,
    record_all: bool = False,
    on_attempt: Callable[[Attempt, PodInfo], None] | None = None,
    feature_gates: dict[str, bool] | None = None,
    kube_version: KubeVersion | None = None,
) -> dict[str, Any]:
    """Run a scenario and return the result document (same shape as an ``.expected.json``) at ``kube_version``
    (default: the default version).

    ``record_all`` keeps every plugin's verdict even at the ``placements`` level (for ``--record-db``);
    ``on_attempt`` sees each attempt as it finishes.
    """
    if detail not in DETAIL_LEVELS:
        raise ValueError(f"unknown detail level {detail!r}; use one of {', '.join(DETAIL_LEVELS)}")
    run = ScenarioRun(
        scenario,
        record=record_all or detail != "placements",
        allow_missing_plugins=allow_missing_plugins,
        feature_gates=feature_gates,
        kube_version=kube_version,
    )
    run.on_attempt = on_attempt
    # Each entry is built as its attempt finishes, so the attempt (and its record) is freed at once.
    with _fewer_collections():
        results = [
            attempt_entry(att, start, detail, run.claim_allocations.pop(id(att), None)) for att, start in run.attempts()
        ]
    first = next(iter(run.frameworks.values()))
    names = first.plugin_names()
    return {
        "oracle": oracle(run.config.kube_version),
        "detail": detail,
        "weights": {p: first.weights.get(p, 1) for p in sorted(names.get("score", []))},
        "plugins": {point: names.get(point, []) for point in sorted(names)},
        "results": results,
    }
