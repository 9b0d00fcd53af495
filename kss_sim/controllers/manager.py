"""The controllers ``kss serve`` runs, started and stopped together (kube-controller-manager's part)."""

from __future__ import annotations

import time
from typing import Any

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.cronjob import CronJobController
from kss_sim.controllers.daemonset import DaemonSetController
from kss_sim.controllers.deployment import DeploymentController
from kss_sim.controllers.disruption import DisruptionController
from kss_sim.controllers.garbage_collector import GarbageCollector
from kss_sim.controllers.horizontal import DOWNSCALE_STABILIZATION, SYNC_PERIOD, HorizontalController
from kss_sim.controllers.job import JobController
from kss_sim.controllers.kubelet import KubeletController
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.namespace import NamespaceController
from kss_sim.controllers.node_lease import NodeLeaseController
from kss_sim.controllers.node_lifecycle import NODE_MONITOR_GRACE_PERIOD, NodeLifecycleController
from kss_sim.controllers.persistent_volume import PersistentVolumeController
from kss_sim.controllers.pod_gc import QUARANTINE_SECONDS, TERMINATED_POD_GC_THRESHOLD, PodGCController
from kss_sim.controllers.podgroup import PodGroupController
from kss_sim.controllers.replicaset import ReplicaSetController
from kss_sim.controllers.resourceclaim import ResourceClaimController
from kss_sim.controllers.statefulset import StatefulSetController
from kss_sim.controllers.taint_eviction import TaintEvictionController
from kss_sim.controllers.ttl_after_finished import TTLAfterFinishedController
from kss_sim.kube.versions import gate_enabled

# The workload controllers and what cleans up after them: what a host on another clock (a replay) runs too.
WORKLOAD_CONTROLLERS: tuple[type[ReconcileLoop[Any]], ...] = (
    DeploymentController,
    ReplicaSetController,
    StatefulSetController,
    DaemonSetController,
    JobController,
    CronJobController,
    TTLAfterFinishedController,
    GarbageCollector,
)


class ControllerManager:
    """Every controller over one store; ``start``/``stop`` with the app, ``wait_idle`` for tests and tools."""

    def __init__(
        self,
        store: ClusterStore,
        *,
        clock: Clock = utc_now,
        controllers: bool = True,
        kubelet: bool = True,
        node_monitor_grace_period: float = NODE_MONITOR_GRACE_PERIOD,
        terminated_pod_gc_threshold: int = TERMINATED_POD_GC_THRESHOLD,
        pod_gc_quarantine: float = QUARANTINE_SECONDS,
        hpa_sync_period: float = SYNC_PERIOD,
        hpa_downscale_stabilization: float = DOWNSCALE_STABILIZATION,
    ) -> None:
        """The controllers of a cluster, stopped: with ``controllers`` kube-controller-manager's (and the PodGroup
        one), with ``kubelet`` the simulated kubelet and its node Leases (``KSS_CONTROLLERS``, ``KSS_KUBELET``);
        the other settings are the node lifecycle controller's, pod GC's and the horizontal pod autoscaler's
        (``kss_sim.config.Settings``)."""
        self.controllers: list[ReconcileLoop[Any]] = []
        if controllers:
            self.controllers += [
                controller(store, clock=clock) for controller in (*WORKLOAD_CONTROLLERS, PodGroupController)
            ]
            self.controllers += [
                NodeLifecycleController(store, clock=clock, grace_period=node_monitor_grace_period),
                TaintEvictionController(store, clock=clock),
                DisruptionController(store, clock=clock),
                NamespaceController(store, clock=clock),
                PersistentVolumeController(store, clock=clock),
                PodGCController(
                    store,
                    clock=clock,
                    terminated_pod_gc_threshold=terminated_pod_gc_threshold,
                    quarantine_seconds=pod_gc_quarantine,
                ),
                HorizontalController(
                    store,
                    clock=clock,
                    sync_period=hpa_sync_period,
                    downscale_stabilization=hpa_downscale_stabilization,
                ),
            ]
            # kube-controller-manager starts the resourceclaim controller only with DRA on.
            if gate_enabled(store.feature_gates, "DynamicResourceAllocation"):
                self.controllers.append(ResourceClaimController(store, clock=clock))
        if kubelet:
            self.controllers += [KubeletController(store, clock=clock), NodeLeaseController(store, clock=clock)]

    def memory_counts(self) -> dict[str, int]:
        """Each controller's backlog (``ReconcileLoop.backlog``) by name, the sizes that are not zero: for a memory
        census (a controller falling behind shows here)."""
        return {
            f"{controller.name}_{what}": n
            for controller in self.controllers
            for what, n in controller.backlog().items()
            if n
        }

    def start(self) -> None:
        """Start every controller (each first reconciles everything it owns)."""
        for controller in self.controllers:
            controller.start()

    def stop(self) -> None:
        """Stop every controller (a reconcile under way finishes first)."""
        for controller in reversed(self.controllers):
            controller.stop()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every controller has reconciled what it saw, also what one's writes made another see."""
        deadline = time.monotonic() + timeout
        while True:
            if not all(c.wait_idle(max(0.0, deadline - time.monotonic())) for c in self.controllers):
                return False
            # One controller's writes wake another (its listener runs before the write returns): all idle at
            # once, after each has been waited for, means nothing is in flight.
            if all(c.is_idle() for c in self.controllers):
                return True
