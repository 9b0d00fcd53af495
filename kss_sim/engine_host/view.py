"""The scheduler as the web pages see it: ``kss_sim.web.ports.SchedulerView`` over the scheduler service.

Everything crosses as plain data (``ResourceAmounts``, ``NodeAllocation``, ``ConfigRejection``), so the web room
never reads the engine's cache, ``NodeInfo`` or ``Resource`` and never catches the engine's exceptions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from kss_sim.engine_host.dra_explain import DraListers, explain_on_node, summarize_in_cluster
from kss_sim.engine_host.scheduler_thread import SchedulerService
from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra.dra_manager import ClaimNotFound, dra_manager_for
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError
from kss_sim.scheduler.plugins import out_of_tree
from kss_sim.scheduler.resources import Resource, calculate_pod_resource
from kss_sim.web.ports import (
    ConfigRejection,
    DraRequestExplanation,
    DraRequestSummary,
    NodeAllocation,
    PluginTimeoutRow,
    ProfilePlugins,
    ResourceAmounts,
    WaitingPodRow,
)

# How long a plugin's timeout stays in the UI's banner.
PLUGIN_TIMEOUT_BANNER_SECONDS = 600.0


def amounts(resource: Resource) -> ResourceAmounts:
    """A copy of the engine's ``Resource`` as plain amounts."""
    return ResourceAmounts(
        resource.milli_cpu,
        resource.memory,
        resource.ephemeral_storage,
        resource.allowed_pod_number,
        dict(resource.scalar_resources),
    )


class QueueCounts(Protocol):
    def pending_counts(self) -> dict[str, int]: ...


class ViewedHost(Protocol):
    """What the pages' view reads of either scheduler host (the thread's service, the process's proxy) alike."""

    @property
    def queue(self) -> QueueCounts: ...

    def config_document(self) -> Obj: ...

    def defaulted_config_document(self) -> Obj: ...

    def plugins_in_effect(self) -> list[ProfilePlugins]: ...


class HostView:
    """The part of the pages' view that is the same whichever host runs the scheduler: what is computed from the
    objects alone, and what the host answers itself (its queue's counts, its configuration)."""

    def __init__(self, host: ViewedHost) -> None:
        self._host = host

    def pod_requests(self, pod: Obj) -> ResourceAmounts:
        """What a pod adds to its node's requested resources (``PodInfo.CalculateResource``)."""
        return amounts(calculate_pod_resource(pod)[0])

    def node_allocatable(self, node: Obj) -> ResourceAmounts:
        """A node's allocatable resources (its capacity when it states none), as the scheduler's cache reads them."""
        status = node.get("status") or {}
        return amounts(Resource.from_raw(status.get("allocatable") or status.get("capacity") or {}))

    def out_of_tree_plugins(self) -> frozenset[str]:
        """Users' plugins: registered from their modules or offered by installed packages' entry points."""
        return frozenset(out_of_tree.known_plugins())

    def queue_counts(self) -> dict[str, int]:
        """Pods per scheduling queue."""
        return self._host.queue.pending_counts()

    def config_document(self) -> Obj:
        """The running KubeSchedulerConfiguration."""
        return self._host.config_document()

    def defaulted_config_document(self) -> Obj:
        """The running configuration after kube-scheduler's defaulting."""
        return self._host.defaulted_config_document()

    def plugins_in_effect(self) -> list[ProfilePlugins]:
        """Per profile, each extension point's plugins in run order with their score weights."""
        return self._host.plugins_in_effect()


class EngineView(HostView):
    """Reads the scheduler service for the pages: its cache's allocation, its queue, its configuration."""

    def __init__(self, service: SchedulerService) -> None:
        super().__init__(service)
        self._service = service

    def node_allocations(self) -> dict[str, NodeAllocation]:
        """Each node in the scheduler's cache: requested and allocatable resources and how many pods it holds."""
        # node_info_list is replaced wholesale by the scheduler thread, so this list is a stable view.
        return {
            ni.name: NodeAllocation(amounts(ni.requested), amounts(ni.allocatable), len(ni.pods))
            for ni in list(self._service.cache.snapshot.node_info_list)
        }

    def node_pods(self, name: str) -> list[str]:
        """``namespace/name`` of the pods on one node in the scheduler's cache (none for a node it lacks)."""
        ni = self._service.cache.snapshot.node_info_map.get(name)
        return [p.key for p in list(ni.pods)] if ni is not None else []

    def waiting_pods(self) -> list[WaitingPodRow]:
        """Pods waiting in Permit, oldest first (read from the scheduler thread's map: a copy, so a stable view)."""
        return [
            WaitingPodRow(
                row["pod"], row["node"], tuple(row["pendingPlugins"]), row["waitingSeconds"], row["remainingSeconds"]
            )
            for row in self._service.waiting()
        ]

    def plugin_timeouts(self) -> list[PluginTimeoutRow]:
        """The plugin calls of the last ten minutes that ran past KSS_PLUGIN_TIMEOUT, latest first."""
        now = time.time()
        return [
            PluginTimeoutRow(r.plugin, r.extension_point, r.pod, r.timeout, now - r.at)
            for r in list(self._service.plugin_timeouts)
            if now - r.at < PLUGIN_TIMEOUT_BANNER_SECONDS
        ]

    def _dra_listers(self) -> DraListers:
        """The DRA manager's claims, classes, slices and allocated devices, as they are now."""
        manager = dra_manager_for(self._service.cluster)

        def claim(namespace: str, name: str) -> Obj | None:
            try:
                return manager.get_claim(namespace, name)
            except ClaimNotFound:
                return None

        for _ in range(3):  # the scheduler thread may change the in-flight allocations while they are copied
            try:
                allocated = manager.list_all_allocated_devices()
                break
            except RuntimeError:
                continue
        else:
            allocated = set()
        return DraListers(claim, manager.device_classes(), manager.resource_slices(), allocated)

    def explain_dra(self, pod: Obj, nodes: Sequence[str]) -> dict[str, list[DraRequestExplanation]]:
        """Per node (those in the scheduler's cache), the pod's claim requests against its devices, read from the DRA
        manager's listers and allocated devices as they are now."""
        listers = self._dra_listers()
        node_infos = self._service.cache.snapshot.node_info_map
        out: dict[str, list[DraRequestExplanation]] = {}
        for name in nodes:
            ni = node_infos.get(name)
            if ni is not None:
                out[name] = explain_on_node(pod, ni.node, listers)
        return out

    def summarize_dra(self, pod: Obj) -> list[DraRequestSummary]:
        """The pod's claim requests against every node in the scheduler's cache at once."""
        listers = self._dra_listers()
        nodes: list[Obj] = []
        for _ in range(3):  # the scheduler thread may add or remove nodes while they are copied
            try:
                nodes = [ni.node for ni in list(self._service.cache.snapshot.node_info_map.values())]
                break
            except RuntimeError:
                continue
        return summarize_in_cluster(pod, nodes, listers)

    def apply_config(self, text: str) -> ConfigRejection | None:
        """Validate and apply a configuration; None when applied, else the field that is wrong (nothing changed)."""
        try:
            self._service.update_config(text)
        except ConfigError as exc:
            return ConfigRejection(exc.field, exc.detail)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # A document of the wrong shape can fail before validation names a field.
            return ConfigRejection("<document>", f"{type(exc).__name__}: {exc}")
        return None
