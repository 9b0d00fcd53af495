"""The scheduling loop: kube-scheduler's end of the cycle, once for every host (kss serve, kss replay).

kube-scheduler's ``eventhandlers.go`` turns the informers' events into the cache's and the queue's changes, and
``schedule_one.go`` ends each attempt: a bound pod leaves the queue, a failed one goes back with the plugins that
rejected it (and keeps preemption's nomination), a pod held in Permit ends its attempt when its wait does.
``SchedulingLoop`` is that part: it owns the listers (``ClusterObjects``), the scheduler cache, the scheduling queue,
the profiles' frameworks and handles, the nominated pods and the pods waiting in Permit. It takes a clock and one
writer (``LoopWriter``: the API writes of an attempt's outcome, and the plugins' ``PodActions``) from its host.

What stays with the hosts: how events reach the loop and when it runs (a thread and the store's change stream in
``kss serve``; a virtual clock and a workload's timers in ``kss replay``), what a pod is "as the API has it now",
and what is recorded of each attempt. A pod's path: the host pops it (:meth:`pop`), hands it over as it is now
(:meth:`schedule`), and the loop runs the cycle and concludes the attempt through the writer; a pod held in Permit is
concluded by :meth:`conclude_waiting` once :meth:`settle_waiting` finds its wait over.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler import queue as q
from kss_sim.scheduler.binding_cycle import Settled
from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_events import assigned_pod_update_event, node_update_events
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.extender import Extender
from kss_sim.scheduler.filter_timing import PluginObserver
from kss_sim.scheduler.framework import Handle, PodActions
from kss_sim.scheduler.kube_scheduler_configuration import SchedulerConfig
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.podgroup_cycle import scheduling_group_name
from kss_sim.scheduler.profiles import build_profiles
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.runtime import Framework
from kss_sim.scheduler.waiting import WaitingPods

# Kinds kept in ClusterObjects' tables: (attribute, namespaced, the queue event an add or update raises).
_TABLES: dict[str, tuple[str, bool, str | None]] = {
    "PersistentVolume": ("pvs", False, ev.PV_CHANGE),
    "PersistentVolumeClaim": ("pvcs", True, ev.PVC_CHANGE),
    "StorageClass": ("storage_classes", False, ev.STORAGE_CLASS_CHANGE),
    "CSINode": ("csi_nodes", False, ev.CSI_NODE_CHANGE),
    "CSIDriver": ("csi_drivers", False, None),
    "Namespace": ("namespaces", False, ev.NAMESPACE_CHANGE),
    "PriorityClass": ("priority_classes", False, None),
}
# Kinds kept as lists (plugins match their selectors).
_LISTS = {"PodDisruptionBudget": "pdbs", "Service": "services", "ReplicationController": "replication_controllers"}
# Kinds read by name through ClusterObjects.get_object: (add event, update event). Upstream registers no deletions
# for them (a claim is deallocated, an update, before it goes).
_NAMED: dict[str, tuple[str | None, str | None]] = {
    "PodGroup": ("PodGroup/Add", "PodGroup/Update"),
    "Workload": ("Workload/Add", "Workload/Update"),
    # v1.36's scheduling.k8s.io/v1alpha2 PodGroup (the cluster registry's name): upstream's fwk.PodGroup events.
    "PodGroup.v1alpha2": ("PodGroup/Add", "PodGroup/Update"),
    "DeviceClass": ("DeviceClass/AddOrUpdate", "DeviceClass/AddOrUpdate"),
    "ResourceSlice": ("ResourceSlice/AddOrUpdate", "ResourceSlice/AddOrUpdate"),
    "ResourceClaim": ("ResourceClaim/AddOrUpdate", "ResourceClaim/AddOrUpdate"),
    "ResourceClaimTemplate": (None, None),
}
# Every kind :meth:`SchedulingLoop.handle` takes besides pods.
OBJECT_KINDS = frozenset(("Node", *_TABLES, *_LISTS, *_NAMED))

# kss serve's shadow of another scheduler's binding: recorded in full, ties broken by name (no draw from the loop's
# random source, which its own attempts use), and stopped after selectHost.
JUDGE_OPTIONS = ScheduleOptions(record=True, tie_break="name", judge_only=True)

BACKOFF_FLUSH_SECONDS = 1.0  # flushBackoffQCompleted's period
UNSCHEDULABLE_FLUSH_SECONDS = 30.0  # flushUnschedulablePodsLeftover's period


class LoopWriter(PodActions):
    """What a host writes for the loop: the plugins' pod actions, and an attempt's outcome (the API writes of
    kube-scheduler's binding cycle and ``handleSchedulingFailure``)."""

    # The loop's handles (set by the loop with each configuration): the nominator a nomination goes into.
    handles: Sequence[Handle] = ()
    # Set by the loop: told of a pod whose nomination an offline host changed (no pod update reaches the loop).
    nomination_changed: Callable[[PodInfo, str], None] | None = None

    def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        """A nomination (DefaultPreemption's PostFilter, a failed attempt's): recorded by the host, then into the
        nominator. A host that wrote it over another nomination tells the loop (the pod left its old node)."""
        before = _nominated_node_name(pod)
        self.record_nomination(pod, node_name)
        for h in self.handles:
            h.add_nominated_pod(pod, node_name)
        if before and _nominated_node_name(pod) != before and self.nomination_changed is not None:
            self.nomination_changed(pod, before)

    def record_nomination(self, pod: PodInfo, node_name: str) -> None:
        """The host's record of a nomination on the pod (kss serve writes it with PodScheduled=False instead)."""

    def clear_nominated_node(self, pod: PodInfo) -> None:
        """``ClearNominatedNodeName`` in an offline host, which owns its pods: the status field goes at once, and
        the loop hears of the change as kube-scheduler hears of the pod's update (kss serve writes the status
        instead, and the update comes back as the store's event)."""
        status = pod.pod.get("status") or {}
        before = status.pop("nominatedNodeName", None)
        if before and self.nomination_changed is not None:
            self.nomination_changed(pod, str(before))

    @abstractmethod
    def write_binding(self, pod: PodInfo, att: Attempt, current: Obj) -> str | None:
        """Write the binding of a scheduled attempt (``current``: the pod as the API has it now); the reason the
        API refused it, or None (kube-scheduler's failed binding cycle follows a refusal)."""

    @abstractmethod
    def scheduled(self, pod: PodInfo, att: Attempt) -> None:
        """The pod is bound (the Scheduled event, the pod running)."""

    @abstractmethod
    def unschedulable(self, pod: PodInfo, att: Attempt) -> None:
        """The attempt failed: PodScheduled=False with its message (and nomination), the FailedScheduling event."""

    def concluded(self, pod: PodInfo, att: Attempt) -> None:
        """Every attempt once final, after :meth:`scheduled` or :meth:`unschedulable` (records, observers)."""

    @abstractmethod
    def pod_after_wait(self, pod: PodInfo) -> Obj | None:
        """The pod as the API has it now, after its wait in Permit; None when it is gone meanwhile."""

    def forget_waiting(self, pod: PodInfo, att: Attempt) -> None:
        """A pod gone while it waited in Permit: drop what its attempt left behind."""

    def pod_group_condition(self, namespace: str, name: str, condition: dict[str, str]) -> None:
        """A v1.36 PodGroup cycle's outcome: ``condition`` (type, status, reason, message) set on the PodGroup's status
        (``updatePodGroupCondition``); hosts without the API object ignore it."""

    def malformed_object(self, kind: str, namespace: str, name: str, problem: str) -> None:
        """An object the attempt found malformed (``Attempt.malformed_objects``): kss serve warns on the object itself
        (issue #35); hosts without Events ignore it."""


def unschedulable_plugins(att: Attempt) -> set[str]:
    """The plugins a failed attempt's pod waits on (``QueuedPodInfo.UnschedulablePlugins``): the one that rejected
    it at Permit or after, else the Filter plugins that rejected a node, else the PreFilter plugins that did not
    pass; none for an error (any event may help)."""
    if att.rejected_by:
        return {att.rejected_by}
    if att.result != "unschedulable" or (att.pod_group or {}).get("rejectedByGroup"):
        return set()  # an error, or the pod's PodGroup failed while it fitted (errPodGroupUnschedulable)
    pure = att.matrices_only()
    if pure is not None:
        # From the matrix when it holds the whole record: the texts would be "<plugin>: <reason>" on every
        # rejected node (5,000 of them built for a failed preemptor), split at their first colon.
        fm = pure[0]
        plugins = {name.split(":", 1)[0] for name in fm.failing_plugins()} if fm is not None else set()
    else:
        # (Distinct texts first: on a full cluster every node has one, mostly the same few.)
        plugins = {text.split(":", 1)[0] for text in set(att.filter_fail.values())}
    if not plugins and att.prefilter_status != "success":
        plugins = {p for p, v in att.prefilter.items() if v not in ("success", "skip")}
    return plugins


def failure_nomination(att: Attempt) -> str | None:
    """The ``NominatingInfo`` a failed attempt hands ``handleSchedulingFailure``: the node the pod is nominated to,
    "" to clear its nomination (``ModeOverride`` with no node: every error, a Reserve or Permit failure, preemption
    that found no candidate), None to leave it as it is (``ModeNoop``: PostFilter changed nothing; v1.34 with
    NominatedNodeNameForExpectation, for all but PostFilter's clearing)."""
    if att.nominated_node:
        return att.nominated_node
    if att.postfilter_clears_nomination:
        return ""
    if att.keeps_nomination:
        return None
    if att.clears_nomination or att.result == "error":
        return ""
    return None


def _nominated_node_name(pod: PodInfo) -> str:
    return str((pod.pod.get("status") or {}).get("nominatedNodeName") or "")


def pod_as_seen(pod: PodInfo, *, node_name: str = "", nominated: str = "") -> PodInfo:
    """A copy of ``pod`` on ``node_name`` or nominated to ``nominated``: the object an event about it carries for
    the queueing hints (an assumed pod forgotten, a nominee gone from its node), which read where it was."""
    spec = {**pod.spec, "nodeName": node_name} if node_name else pod.spec
    status = dict(pod.pod.get("status") or {})
    if nominated:
        status["nominatedNodeName"] = nominated
    return PodInfo({**pod.pod, "spec": spec, "status": status})


def _namespace_and_name(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def clear_lower_nominations(writer: LoopWriter, pod: PodInfo, node_name: str) -> None:
    """A preemptor nominated to ``node_name`` takes it from lower-priority pods nominated there
    (``deleteNominatedPodIfExists`` of the pods it outranks); their status loses the nomination."""
    for h in writer.handles:
        for other in list(h.nominated_pods_for_node(node_name)):
            if other.uid != pod.uid and other.priority < pod.priority:
                h.delete_nominated_pod(other)
                writer.clear_nominated_node(other)


def object_key(obj: Obj, namespaced: bool) -> str:
    """How ClusterObjects keys an object: ``namespace/name`` (namespace defaulted) or the name."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}" if namespaced else str(meta.get("name"))


class SchedulingLoop:
    """One scheduler: its cache, queue, frameworks and waiting pods, fed events and popped pods by its host."""

    def __init__(
        self,
        config: SchedulerConfig,
        writer: LoopWriter,
        *,
        clock: Callable[[], float],
        options: ScheduleOptions,
        extenders: Callable[[SchedulerConfig], Sequence[Extender]] = lambda config: (),
        feature_gates: dict[str, bool] | None = None,
        seed: int | None = None,
        nominate_on_failure: bool = True,
        plugin_observer: PluginObserver | None = None,
        plugin_metrics_sample_percent: int | None = None,
        cluster: ClusterObjects | None = None,
        allow_missing_plugins: bool = False,
    ) -> None:
        self.writer = writer
        writer.nomination_changed = self._note_nomination_changed
        # Pods whose nomination an offline host changed during the attempt (their old priority): their queue events
        # are raised once the attempt is concluded, as the pods' updates reach kube-scheduler after it.
        self._nominations_changed: list[PodInfo] = []
        self.clock = clock
        self.options = options
        self.extenders = extenders
        self.feature_gates = dict(feature_gates or {})
        self.seed = seed
        # handleSchedulingFailure's AddNominatedPod: a failed attempt's nomination (or its clearing) is written into
        # the pod and the nominator by the loop. kss serve writes it to the pod's status with PodScheduled=False
        # instead (its nominator has it from PostFilter; a clearing still takes the pod out of it here).
        self.nominate_on_failure = nominate_on_failure
        self.plugin_observer = plugin_observer
        self.plugin_metrics_sample_percent = plugin_metrics_sample_percent
        self.allow_missing_plugins = allow_missing_plugins
        # The listers: empty, fed by :meth:`handle`, unless the host fills them itself (kss simulate's scenario).
        self.cluster = cluster if cluster is not None else ClusterObjects()
        # Every gate resolved at the configuration's Kubernetes version (the explicit ones over its defaults).
        self.gates = config.kube_version.effective_gates(self.feature_gates)
        self.cache = SchedulerCache(pod_level_resources=self.gates["PodLevelResources"])
        self.handles: list[Handle] = []
        self.frameworks: dict[str, Framework] = {}
        self.nominated: dict[str, list[PodInfo]] = {}
        # Pods held in Permit survive a configuration swap (the new scheduler takes the same map over); the loop
        # keeps what it needs to finish each one's attempt: uid -> (queued pod, its cycle).
        self.waiting_pods = WaitingPods()
        self._held: dict[str, tuple[q.QueuedPodInfo, int]] = {}
        self.config = config
        self.queue = q.queue_for_profiles(
            lambda: self.frameworks,
            config,
            clock=clock,
            pop_from_backoff=self.gates.get("SchedulerPopFromBackoffQ", False),
        )
        self.scheduler = self._build(config)

    # --- configuration --------------------------------------------------------------------------
    def _build(self, config: SchedulerConfig) -> Scheduler:
        self.handles, frameworks = build_profiles(
            config,
            self.cluster,
            self.writer,
            nominated=self.nominated,
            activator=self._activate,
            feature_gates=self.feature_gates,
            plugin_observer=self.plugin_observer,
            allow_missing=self.allow_missing_plugins,
        )
        self.frameworks = frameworks
        self.writer.handles = self.handles
        for profile, fwk in frameworks.items():
            if self.plugin_metrics_sample_percent is not None:
                fwk.plugin_metrics_sample_percent = self.plugin_metrics_sample_percent
            self.queue.register_plugin_events(fwk.events_by_plugin(), profile)
        return Scheduler(
            frameworks,
            self.cache.snapshot,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            seed=self.seed,
            cache=self.cache,
            extenders=self.extenders(config),
            clock=self.clock,
            waiting_pods=self.waiting_pods,
        )

    def swap_config(self, config: SchedulerConfig) -> None:
        """New frameworks from the next cycle on; the cache, the queue and the pods waiting in Permit stay (the
        queue takes the new backoff bounds)."""
        self.config = config
        self.gates = config.kube_version.effective_gates(self.feature_gates)
        self.scheduler = self._build(config)
        self.queue.initial_backoff = config.pod_initial_backoff_seconds
        self.queue.max_backoff = config.pod_max_backoff_seconds

    def _activate(self, pods: list[PodInfo]) -> None:
        """``handle.Activate``: pending pods to activeQ now (a gang plugin waking a group's siblings)."""
        self.queue.activate([p.key for p in pods])

    def responsible_for(self, pod: PodInfo) -> bool:
        """``responsibleForPod``: one of this scheduler's profiles is the pod's scheduler."""
        return (pod.spec.get("schedulerName") or "default-scheduler") in self.frameworks

    # --- events (eventhandlers.go) --------------------------------------------------------------
    def handle(self, event_type: str, kind: str, obj: Obj) -> bool:
        """A Node's or a listed object's ADDED / MODIFIED / DELETED: into the cache or the listers, and the queue
        event it raises (deletions of listed objects raise none). False for a kind the scheduler does not read."""
        deleted = event_type == "DELETED"
        if kind == "Node":
            name = (obj.get("metadata") or {}).get("name") or ""
            old = self.cache.node(name)
            if deleted:
                self.cache.remove_node(name)
                self.queue.move_all_to_active_or_backoff(ev.NODE_DELETE, old=old)
            elif event_type == "ADDED" or old is None:
                self.cache.add_node(obj)
                self.queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=obj)
            else:
                self.cache.update_node(obj)
                declared = self.gates.get("NodeDeclaredFeatures", False)
                for change in node_update_events(old, obj, declared_features=declared):
                    self.queue.move_all_to_active_or_backoff(change, old=old, new=obj)
            return True
        co = self.cluster
        event: str | None = None
        before = self.find(kind, *_namespace_and_name(obj)) if not deleted else None
        if kind in _TABLES:
            attr, namespaced, event = _TABLES[kind]
            table: dict[str, Obj] = getattr(co, attr)
            if deleted:
                table.pop(object_key(obj, namespaced), None)
            else:
                table[object_key(obj, namespaced)] = obj
        elif kind in _LISTS:
            attr = _LISTS[kind]
            key = object_key(obj, True)
            kept = [o for o in getattr(co, attr) if object_key(o, True) != key]
            setattr(co, attr, kept if deleted else [*kept, obj])
        elif kind in _NAMED:
            if deleted:
                co.delete_object(kind, obj)
            else:
                co.put_object(kind, obj)
                event = _NAMED[kind][0 if event_type == "ADDED" else 1]
        else:
            return False
        if event is not None and not deleted:
            self.queue.move_all_to_active_or_backoff(event, old=before, new=obj)
        return True

    def find(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The listed object of a kind :meth:`handle` keeps (not nodes), or None."""
        co = self.cluster
        if kind in _TABLES:
            attr, namespaced, _ = _TABLES[kind]
            found: Obj | None = getattr(co, attr).get(f"{namespace or 'default'}/{name}" if namespaced else name)
            return found
        if kind in _LISTS:
            key = f"{namespace or 'default'}/{name}"
            return next((o for o in getattr(co, _LISTS[kind]) if object_key(o, True) == key), None)
        if kind in _NAMED:
            return co.get_object(kind, namespace, name)
        return None

    def add_unscheduled_pod(self, pod: PodInfo) -> bool:
        """``addPodToSchedulingQueue``: a pending pod of this scheduler's into the queue (False: another
        scheduler's pod, left alone)."""
        if not self.responsible_for(pod):
            return False
        self.queue.add(pod)
        if self.gates.get("GangScheduling", False):
            # As kube-scheduler with the gate: a new pending pod may complete a gang others wait for.
            self.queue.move_all_to_active_or_backoff(ev.UNSCHEDULED_POD_ADD, new=pod)
        return True

    def update_unscheduled_pod(self, pod: PodInfo) -> None:
        """``updatePodInSchedulingQueue``: a pending pod's scheduling-relevant change."""
        self.queue.update(pod)

    def reject_waiting(self, pod: PodInfo) -> bool:
        """``RejectWaitingPod`` for a deleted pod: True when it waited in Permit (its host then concludes the
        waits that ended, :meth:`settle_waiting`, before :meth:`delete_unscheduled_pod`)."""
        return self.scheduler.reject_waiting_pod(pod.uid)

    def assumed_pod_deleted(self, pod: PodInfo) -> bool:
        """``handleAssumedPodDeletion``: a pod this loop assumed (its binding not seen yet) is being deleted. One
        waiting in Permit is rejected (True: its host then concludes the waits that ended, :meth:`settle_waiting`);
        one in PreBind or Bind is forgotten at once, its node freed, though its binding goes on (and fails). Either
        way its node is an assigned pod's deletion to the others. False, and nothing done, for a pod not assumed."""
        if not self.cache.is_assumed(pod.uid):
            return False
        assumed = self.cache.get_pod(pod.uid)
        waiting = self.scheduler.reject_waiting_pod(pod.uid)
        if not waiting and assumed is not None:
            self.cache.forget_pod(pod.uid, assumed.node_name)
        self.queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=assumed or pod)
        return waiting

    def delete_unscheduled_pod(self, pod: PodInfo) -> None:
        """``deletePodFromSchedulingQueue``: out of the queue and the nominator; a nominated pod's deletion is an
        assigned pod's to the pods of lower or equal priority (they counted it on its node as if it were bound)."""
        self.queue.delete(pod.key)
        self._held.pop(pod.uid, None)
        for h in self.handles:
            h.delete_nominated_pod(pod)
        nominated = (pod.pod.get("status") or {}).get("nominatedNodeName")
        if nominated and not pod.node_name and self.responsible_for(pod):
            self._nominee_left(pod)

    def nomination_changed(self, before: PodInfo, after: PodInfo) -> None:
        """``updatePodInSchedulingQueue``'s ``hasNominatedNodeNameChanged`` (since v1.33): a pending pod's nomination
        changed or cleared (``before``: the pod with its old one) is, to the pods of lower or equal priority, an
        assigned pod's deletion from its old node (they counted it there as if it were bound)."""
        old = _nominated_node_name(before)
        if not old or old == _nominated_node_name(after):
            return
        if self.responsible_for(before) and self.cache.get_pod(after.uid) is None:  # an assumed pod's update: none
            self._nominee_left(before)

    def _note_nomination_changed(self, pod: PodInfo, before: str) -> None:
        self._nominations_changed.append(pod_as_seen(pod, nominated=before))

    def _raise_nominations_changed(self) -> None:
        """The queue events of the nominations an offline host changed during the attempt just concluded."""
        while self._nominations_changed:
            self._nominee_left(self._nominations_changed.pop(0))

    def _nominee_left(self, pod: PodInfo) -> None:
        """A nominated pod (``pod`` as nominated) gone from its node: AssignedPodDelete to the pods of its priority
        or lower (``getLEPriorityPreCheck``)."""
        priority = pod.priority
        self.queue.move_all_to_active_or_backoff(
            ev.POD_DELETE, pre_check=lambda other: other.priority <= priority, old=pod
        )

    def add_assigned_pod(self, pod: PodInfo) -> None:
        """``addPodToCache`` / ``updatePodInCache``: a bound pod into the cache (its assumed copy confirmed), out of
        the nominator, and the event its arrival or change raises."""
        known = self.cache.get_pod(pod.uid)
        self.cache.add_pod(pod)
        for h in self.handles:
            h.delete_nominated_pod(pod)
        event = ev.POD_ADD if known is None else assigned_pod_update_event(known, pod)
        self.queue.move_all_to_active_or_backoff(event, old=known, new=pod)

    def delete_assigned_pod(self, uid: str) -> bool:
        """``deletePodFromCache``: a bound pod gone frees its node (AssignedPodDelete); False when the cache did not
        have it."""
        removed = self.cache.remove_pod(uid)
        if removed is None:
            return False
        self.queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=removed)
        return True

    # --- attempts (schedule_one.go) -------------------------------------------------------------
    def pop(self) -> q.QueuedPodInfo | None:
        """The next pod to try, or None when activeQ has none now."""
        return self.queue.pop(timeout=0)

    def skip(self, qpi: q.QueuedPodInfo) -> None:
        """A popped pod that is gone or bound already (``skipPodSchedule``): done with it."""
        self.queue.done(qpi.key)

    def schedule(self, qpi: q.QueuedPodInfo, pod: PodInfo, attempt_no: int) -> Attempt:
        """One attempt for the popped ``qpi``, ``pod`` as the API has it now, concluded through the writer unless a
        Permit plugin holds it (``result == "waiting"``: :meth:`conclude_waiting` ends it)."""
        qpi.pod_info = pod
        cycle = self.queue.scheduling_cycle
        queued_for = max(0.0, self.clock() - qpi.timestamp)
        att = self.scheduler.schedule_one(pod, attempt_no, self.options)
        att.queued_for = queued_for
        for kind, namespace, name, problem in att.malformed_objects:
            self.writer.malformed_object(kind, namespace, name, problem)
        if att.result == "waiting":
            # Held in Permit: still in flight in the queue, its attempt finished when the wait ends.
            self._held[pod.uid] = (qpi, cycle)
        else:
            self._conclude(qpi, pod, att, cycle, pod.pod)
        return att

    def judge(self, pod: PodInfo) -> Attempt:
        """kss's own cycle for a pending pod another scheduler just bound, with the pod's profile when kss has it,
        else the first: where it would have gone, nothing assumed, reserved or bound (``judge_only``); the pod
        stays out of the queue and nothing is concluded."""
        if not self.responsible_for(pod):
            spec = {**pod.spec, "schedulerName": next(iter(self.frameworks))}
            pod = PodInfo({**pod.pod, "spec": spec})
        return self.scheduler.schedule_one(pod, 0, JUDGE_OPTIONS)

    # --- PodGroup scheduling cycles (v1.36's schedule_one_podgroup.go) ---------------------------
    def pod_group_of(self, pod: PodInfo) -> str:
        """The PodGroup whose cycle schedules ``pod`` (its ``spec.schedulingGroup``, at v1.36 with GenericWorkload),
        "" for a pod scheduled on its own."""
        if self.config.kube_version.minor < 36 or not self.gates.get("GenericWorkload", False):
            return ""
        return scheduling_group_name(pod)

    def pop_pod_group(self, qpi: q.QueuedPodInfo) -> list[q.QueuedPodInfo]:
        """``podGroupInfoForPod``: the popped pod and the other pods of its group that are neither bound nor
        assumed, taken from the queue (a gated or in-flight one stays), by priority (highest first), then by when
        each first entered activeQ."""
        lead = qpi.pod_info
        members = [qpi]
        for obj in self.cluster.pods_of_scheduling_group(lead.namespace, self.pod_group_of(lead)):
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            if key == qpi.key or (obj.get("spec") or {}).get("nodeName"):
                continue
            if self.cache.get_pod(str(meta.get("uid") or "")) is not None:
                continue  # assumed (waiting in Permit, or binding)
            popped = self.queue.pop_specific(key)
            if popped is not None:
                members.append(popped)
        members.sort(key=lambda m: (-m.pod_info.priority, m.initial_attempt_timestamp or 0.0))
        return members

    def schedule_pod_group(self, members: list[tuple[q.QueuedPodInfo, PodInfo, int]]) -> list[Attempt]:
        """One PodGroup scheduling cycle for ``members`` (from :meth:`pop_pod_group`: queued pod, the pod as the
        API has it now, attempt number), each attempt concluded as :meth:`schedule` concludes one, then the group's
        PodGroupScheduled condition written. The attempts, in the members' order."""
        cycle = self.queue.scheduling_cycle
        now = self.clock()
        lead = members[0][1]
        name = self.pod_group_of(lead)
        for qpi, pod, _ in members:
            qpi.pod_info = pod
        outcome = self.scheduler.schedule_pod_group(
            [(pod, attempt_no) for _, pod, attempt_no in members], self.options, lead.namespace, name
        )
        for (qpi, pod, _), att in zip(members, outcome.attempts, strict=True):
            att.queued_for = max(0.0, now - qpi.timestamp)
            for kind, namespace, obj_name, problem in att.malformed_objects:
                self.writer.malformed_object(kind, namespace, obj_name, problem)
            if att.result == "waiting":
                self._held[pod.uid] = (qpi, cycle)
            else:
                self._conclude(qpi, pod, att, cycle, pod.pod)
        if outcome.condition is not None:
            self.writer.pod_group_condition(lead.namespace, name, outcome.condition)
        return outcome.attempts

    def _conclude(self, qpi: q.QueuedPodInfo, pod: PodInfo, att: Attempt, cycle: int, current: Obj) -> None:
        """The end of an attempt: bound and done, or (binding refused too) back to the queue as unschedulable."""
        if att.result == "scheduled":
            refused = self.writer.write_binding(pod, att, current)
            if refused is not None:
                self._binding_failed(pod, att, refused)
        if att.result == "scheduled":
            self.queue.done(qpi.key)
            self.writer.scheduled(pod, att)
        else:
            self._requeue(qpi, pod, att, cycle)
        self.writer.concluded(pod, att)
        self._raise_nominations_changed()

    def _requeue(self, qpi: q.QueuedPodInfo, pod: PodInfo, att: Attempt, cycle: int) -> None:
        qpi.unschedulable_plugins = unschedulable_plugins(att)
        nomination = failure_nomination(att)
        if nomination and self.nominate_on_failure:
            self.nominate(pod, nomination)
        elif nomination == "":
            # AddNominatedPod with no node: out of the nominator; the status loses it (kss serve: in unschedulable).
            for h in self.handles:
                h.delete_nominated_pod(pod)
            if self.nominate_on_failure:
                self.writer.clear_nominated_node(pod)
        self.writer.unschedulable(pod, att)
        self.queue.add_unschedulable_if_not_present(qpi, cycle)

    def binding_refused(self, qpi: q.QueuedPodInfo, pod: PodInfo, att: Attempt, cycle: int, reason: str) -> None:
        """A binding concluded as written (``scheduled``) that the store refused when it committed it (a host whose
        store answers the binding late: ``KSS_SCHEDULER_PROCESS``): concluded again as :meth:`_conclude` concludes
        a binding refused at once, the failed binding cycle."""
        self._binding_failed(pod, att, reason)
        self._requeue(qpi, pod, att, cycle)
        self.writer.concluded(pod, att)

    def _binding_failed(self, pod: PodInfo, att: Attempt, reason: str) -> None:
        """kube-scheduler's failed binding cycle: the assumed pod forgotten (its node freed for the others, unless
        another binder's placement of it has been seen meanwhile) and the attempt an error."""
        message = f"binding rejected: {reason}"
        assumed = self.cache.get_pod(pod.uid)
        if self.cache.forget_pod(pod.uid, att.suggested_host or ""):
            self.queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=assumed)
        att.bind = {plugin: message for plugin in att.bind} or {"DefaultBinder": message}
        att.result = "error"
        att.message = message
        att.bound_to = None

    def nominate(self, pod: PodInfo, node_name: str) -> None:
        """The preemptor keeps its nomination; lower-priority pods nominated to that node lose theirs."""
        clear_lower_nominations(self.writer, pod, node_name)
        self.writer.set_nominated_node(pod, node_name)

    def attempt_failed(self, qpi: q.QueuedPodInfo) -> None:
        """An attempt that raised: back to the queue, any event may help."""
        qpi.unschedulable_plugins = set()
        self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle)
        self._raise_nominations_changed()

    # --- Permit ---------------------------------------------------------------------------------
    def settle_waiting(self) -> list[Settled]:
        """The pods whose wait in Permit ended (allowed: bound by PreBind/Bind; rejected or timed out: unreserved),
        to be concluded by :meth:`conclude_waiting`."""
        if not len(self.waiting_pods):
            return []
        return self.scheduler.resolve_waiting()

    def held(self, uid: str) -> tuple[q.QueuedPodInfo, int] | None:
        """The queued pod and the scheduling cycle of a pod held in Permit (until :meth:`conclude_waiting` ends it):
        what :meth:`binding_refused` needs of an attempt concluded after its wait."""
        return self._held.get(uid)

    def conclude_waiting(self, settled: list[Settled]) -> list[Settled]:
        """End the attempts of ``settled`` (a pod gone meanwhile is forgotten): those concluded. A released
        reservation is an assigned pod's deletion to the others, raised after the pod is back in the queue so the
        event does not send it to backoffQ itself (``handleBindingCycleError``)."""
        concluded = []
        for done in settled:
            att, pod = done.attempt, done.pod
            entry = self._held.pop(pod.uid, None)
            current = self.writer.pod_after_wait(pod) if entry is not None else None
            if entry is None or current is None:
                self.writer.forget_waiting(pod, att)
                continue
            qpi, cycle = entry
            self._conclude(qpi, pod, att, cycle, current)
            if att.result != "scheduled":
                released = pod_as_seen(pod, node_name=att.suggested_host or "")
                self.queue.move_all_to_active_or_backoff(ev.POD_DELETE, skip=frozenset({pod.key}), old=released)
            concluded.append(done)
        return concluded

    def resolve_waiting(self) -> list[Settled]:
        """:meth:`settle_waiting` and :meth:`conclude_waiting` at once: the attempts concluded."""
        if not len(self.waiting_pods):
            return []  # settle_waiting's own check, asked after every offline attempt
        return self.conclude_waiting(self.settle_waiting())

    def next_permit_deadline(self) -> float | None:
        """When the earliest wait in Permit times out, on the loop's clock."""
        return self.scheduler.next_permit_deadline()

    def waiting(self) -> list[dict[str, Any]]:
        """Pods held in Permit now (pod, node, pending plugins, waited and remaining seconds)."""
        return self.scheduler.waiting()

    # --- the queue's periodic flushes -----------------------------------------------------------
    def flush_backoff(self) -> None:
        """``flushBackoffQCompleted`` (every second)."""
        self.queue.flush_backoff_completed()

    def flush_unschedulable(self) -> None:
        """``flushUnschedulablePodsLeftover`` (every 30 s)."""
        self.queue.flush_unschedulable_left_over()


class LoopHost:
    """What a host of the loop shows of it: the loop's parts as the host's own attributes (read by the API's views,
    the replay's observers and tests). A host sets ``self.loop`` in its constructor."""

    loop: SchedulingLoop

    @property
    def queue(self) -> q.SchedulingQueue:
        return self.loop.queue

    @property
    def cache(self) -> SchedulerCache:
        return self.loop.cache

    @property
    def scheduler(self) -> Scheduler:
        return self.loop.scheduler

    @property
    def cluster(self) -> ClusterObjects:
        return self.loop.cluster

    @property
    def handles(self) -> list[Handle]:
        return self.loop.handles

    @property
    def frameworks(self) -> dict[str, Framework]:
        return self.loop.frameworks

    @property
    def waiting_pods(self) -> WaitingPods:
        return self.loop.waiting_pods
