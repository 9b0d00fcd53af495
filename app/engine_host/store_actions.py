"""The engine host's side of the cluster store: what it needs of the store, and the engine's pod actions done
through it.

``ClusterStoreLike`` is the part of ``app.cluster.store.ClusterStore`` the host uses. ``StoreActions`` carries out
what plugins ask of the cluster outside the cycle (``PodActions``): the binding (written after the cycle by
``SchedulerService``), victim deletions, nominations and VolumeBinding's PreBind writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from app.cluster.errors import Conflict
from app.cluster.pod_writes import SCHEDULER_MANAGER
from app.engine_host import volumes
from app.scheduler.dra.dra_manager import ClaimConflict
from app.scheduler.framework import Code, PodActions, Status
from app.scheduler.nodeinfo import PodInfo

if TYPE_CHECKING:
    from app.engine_host.scheduler_thread import SchedulerService


class Pending(Protocol):
    """Writes staged inside ``ClusterStoreLike.deferred()`` (app.cluster.store.PendingWrites)."""

    def done(self) -> bool: ...

    def wait(self) -> None: ...


class ClusterStoreLike(Protocol):
    """What the scheduler needs from the cluster store (app.cluster.store.ClusterStore)."""

    def list(self, kind: str, namespace: str | None = None) -> Any: ...

    def select(self, kind: str) -> Any: ...  # stored entries (``.obj``: the store's read-only dict)

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None: ...

    def bind_pod(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: dict[str, str] | None = None,
        copy: bool = True,
    ) -> dict[str, Any]: ...

    def delete(self, kind: str, namespace: str | None, name: str) -> Any: ...

    def add_listener(
        self,
        callback: Callable[[str, str, dict[str, Any]], None],
        kinds: Iterable[str] | None = None,
        *,
        copy: bool = True,
    ) -> None: ...

    def remove_listener(self, callback: Callable[[str, str, dict[str, Any]], None]) -> None: ...

    def patch(self, kind: str, namespace: str | None, name: str, patch: Any, patch_type: str = "merge") -> Any: ...

    def update_pod_status(
        self, namespace: str, name: str, status: dict[str, Any], *, annotations: dict[str, str] | None = None
    ) -> Any: ...

    def deferred(self) -> contextlib.AbstractContextManager[Pending]: ...

    def create_event(
        self, involved: dict[str, Any], reason: str, message: str, *, type: str = "Normal",
        component: str = "default-scheduler", action: str = "",
    ) -> Any: ...  # fmt: skip


class StoreActions(PodActions):
    """Pod actions of the engine carried out through the cluster store."""

    def __init__(self, service: SchedulerService) -> None:
        self.service = service
        # pod uid -> (namespace, name, node) to bind after the cycle (or after the pod's wait in Permit ends).
        self.bindings: dict[str, tuple[str, str, str]] = {}

    def bind(self, pod: PodInfo, node_name: str) -> Status:
        # The binding is written after the cycle, with the result annotations, in one change
        # (SchedulerService._bind); a refusal then is handled as a failed binding cycle.
        self.bindings[pod.uid] = (pod.namespace, pod.name, node_name)
        return Status()

    def delete_victim(self, victim: PodInfo, preemptor: PodInfo) -> Status:
        svc = self.service
        try:
            svc.store.delete("Pod", victim.namespace, victim.name)
        except Exception as exc:
            return Status(Code.ERROR, f"deleting victim {victim.key}: {exc}")
        svc.record_event(
            victim.pod,
            "Preempted",
            f"Preempted by pod {preemptor.uid} on node {victim.node_name}",
            event_type="Normal",
        )
        svc.preemption_victims.append(victim.key)
        return Status()

    def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        for h in self.service.handles:
            h.add_nominated_pod(pod, node_name)

    def bind_volumes(
        self,
        pod: PodInfo,
        node_name: str,
        static: list[tuple[dict[str, Any], dict[str, Any]]],
        dynamic: list[dict[str, Any]],
    ) -> Status:
        """VolumeBinding's PreBind: bind the chosen PVs, provision the rest, as the cluster's controllers would."""
        store: Any = self.service.store
        try:
            for pv, claim in static:
                claim_meta = claim.get("metadata") or {}
                volumes.bind_claim(
                    store, (pv.get("metadata") or {}).get("name", ""), pod.namespace, claim_meta.get("name", "")
                )
            for claim in dynamic:
                pv, updated_claim = volumes.provision(store, claim, node_name)
                volumes.bind_claim(
                    store,
                    pv["metadata"]["name"],
                    pod.namespace,
                    (claim.get("metadata") or {}).get("name", ""),
                    pv=pv,
                    pvc=updated_claim,
                )
        except Exception as exc:  # a claim or volume changed meanwhile: the binding cycle fails and retries
            return Status(Code.ERROR, f"binding volumes: {exc}")
        return Status()

    def update_resource_claim(self, claim: dict[str, Any], *, status: bool) -> dict[str, Any]:
        """DynamicResources' claim writes (PreBind's allocation and reservedFor, Unreserve, PostFilter's
        deallocation) through the store, as kube-scheduler's client makes them; a stale resourceVersion is a
        ClaimConflict the plugin retries."""
        store: Any = self.service.store
        try:
            written: dict[str, Any] = store.update(
                "ResourceClaim", claim, subresource="status" if status else None, manager=SCHEDULER_MANAGER
            )
        except Conflict as exc:
            raise ClaimConflict(str(exc)) from exc
        return written

    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.service.store.get("ResourceClaim", namespace, name)
