"""DynamicResources: ResourceClaims allocated by the scheduler (kube-scheduler v1.35's ``dynamicresources``).

PreEnqueue waits for the pod's claims to exist; PreFilter reads them, checks their device classes and builds the
structured-parameters allocator (``kss_sim.scheduler.dra``) over the slices, classes and devices already allocated;
Filter keeps nodes where allocated claims are available (their ``nodeSelector``) and the allocator can place the
others; Score (from v1.35: ``DynamicResourcesBeforeScoring`` is v1.33 and v1.34's plugin, which has none) prefers
nodes where ``firstAvailable`` requests got an earlier subrequest; Reserve marks the chosen
allocations in flight; PreBind writes ``status.allocation`` and ``status.reservedFor`` (through the host's pod
actions, retried on conflicts); Unreserve undoes both; PostFilter deallocates a claim that is unavailable where the
pod could go, when no other pod uses it.

Extended resources backed by DRA (DRAExtendedResource, on from v1.36, ``kss_sim.scheduler.dra.extended_resources``):
a pod requesting a resource some DeviceClass serves gets a claim of its own, in memory during the cycle (last among
its claims); Filter gives it, per node, one request per container where the node's allocatable lacks the resource
(none where a device plugin provides it); PreBind creates it (a generated name), allocates and reserves it, and
records it in the pod's ``status.extendedResourceClaimStatus``.

A claim of the pod's written in an earlier cycle is found and reused when it has no requests yet; one with requests
makes every node fail, and PostFilter deletes it (the next attempt starts anew); Unreserve deletes one already
written (after a failed PreBind).

Left out: device binding conditions (DRADeviceBindingConditions, off by default) and the Filter timeout
(DRASchedulerFilterTimeout: the allocator here is not interruptible; ``filterTimeout`` is accepted and validated).
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from kss_sim.kube.labels import NodeSelector, aggregate_message
from kss_sim.kube.versions import KubeVersion, gate_enabled
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch, NodeColumns
from kss_sim.scheduler.dra import (
    AllocatedState,
    AllocationError,
    Allocator,
    DeviceMatchCache,
    NodeAllocationError,
    features_from_gates,
)
from kss_sim.scheduler.dra import dra_manager as dm
from kss_sim.scheduler.dra import extended_resources as er
from kss_sim.scheduler.dra.quick import QuickCheck
from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    SKIP,
    CycleState,
    FilterPlugin,
    Handle,
    NodeScore,
    NodeToStatus,
    Plugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
    Status,
    error,
    skip,
    success,
    unresolvable,
    unschedulable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.helper import default_normalize_batch, default_normalize_score

log = logging.getLogger("kss.scheduler")

NAME = "DynamicResources"
STATE_KEY = NAME
ERR_NOT_FOUND = "not found"
MSG_NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
MSG_DEALLOCATED = "deallocation of ResourceClaim completed"
MSG_DELETED = "deletion of ResourceClaim completed"
MSG_STILL_NOT_SCHEDULABLE = "still not schedulable"
MSG_CANNOT_ALLOCATE_ALL = "cannot allocate all claims"
MSG_NOT_AVAILABLE_ON_NODE = "resourceclaim not available on the node"
DEFAULT_FILTER_TIMEOUT = "10s"
DEFAULT_BINDING_TIMEOUT = "10m0s"  # DynamicResourcesBindingTimeoutDefault, 600 s
FINALIZER = "resource.kubernetes.io/delete-protection"
FIRST_AVAILABLE_MAX_SIZE = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize
CONFLICT_RETRIES = 5  # retry.DefaultRetry's steps

_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go ``time.Duration`` string ("10s", "1m30s", "-1.5h"); ValueError when malformed."""
    s = text
    sign = 1.0
    if s[:1] in ("+", "-"):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def has_resource_claims(pod: PodInfo) -> bool:
    """The pod lists ``spec.resourceClaims``."""
    return bool(pod.spec.get("resourceClaims"))


def _binding_conditions(gates: Mapping[str, bool]) -> bool:
    return gate_enabled(gates, "DRADeviceBindingConditions") and gate_enabled(gates, "DRAResourceClaimDeviceStatus")


class ClaimLookupError(Exception):
    """Why a pod's claims cannot be used yet (``foreachPodResourceClaim``'s errors, upstream's wording)."""


def claim_name_for(pod: PodInfo, pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name (None: intentionally not created) and whether the pod must own it."""
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"]), False
    if pod_claim.get("resourceClaimTemplateName"):
        for status in (pod.pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == pod_claim.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name else None), True
        raise ClaimLookupError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    raise ClaimLookupError(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{pod_claim.get("name")}": '
        "none of the supported fields are set"
    )


def _kobj(obj: Mapping[str, Any]) -> str:
    """``klog.KObj``: namespace/name."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _status(claim: dict[str, Any]) -> dict[str, Any]:
    st: dict[str, Any] = claim.setdefault("status", {})
    return st


@dataclass(slots=True)
class _ClaimInfo:
    """``informationForClaim``."""

    available_on_nodes: NodeSelector | None = None  # from the allocation's nodeSelector
    allocation: dict[str, Any] | None = None  # chosen by Reserve, written by PreBind


@dataclass(slots=True)
class _StateData:
    """``stateData``: the pod's claims (in ``spec.resourceClaims`` order) and what the cycle learnt about them."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    allocator: Allocator | None = None
    # Per node, the allocated claims whose nodeSelector it fails (Filter's ``unavailableClaims``, kept by node:
    # recording runs every filter on every node, so PostFilter counts only nodes where this plugin's verdict is the
    # one kube-scheduler saw).
    unavailable_on_node: dict[str, list[int]] = field(default_factory=dict)
    informations: list[_ClaimInfo] = field(default_factory=list)
    node_allocations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The claims to allocate (fixed for the cycle), the count-based verdict for them, and where that verdict said
    # "fits" without asking the allocator (its results are computed when Score or Reserve need them): node dicts
    # by name, and node lists (NodeColumns) of batch verdicts.
    pending: list[dict[str, Any]] = field(default_factory=list)
    quick: QuickCheck | None = None
    quick_nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    quick_columns: list[NodeColumns] = field(default_factory=list)
    # Some claim has a firstAvailable request: scores need the allocation results.
    score_needs_results: bool = False
    # DRAExtendedResource: the index of the pod's extended-resource claim in ``claims`` (the last one), the pod's
    # scalar requests, and per node the claim as Filter shaped it (None: nothing from DRA there) and its mappings.
    extended_index: int | None = None
    # The extended-resource claim's uid at PreFilter (its allocation in flight is kept under it until PreBind).
    initial_extended_uid: str = ""
    scalar_requests: dict[str, int] = field(default_factory=dict)
    node_extended: dict[str, tuple[dict[str, Any] | None, list[dict[str, str]]]] = field(default_factory=dict)

    def clone(self) -> _StateData:
        # Shared between clones, as upstream's.
        return self

    def to_allocate(self) -> list[tuple[int, dict[str, Any]]]:
        return [(i, c) for i, c in enumerate(self.claims) if dm.allocation_of(c) is None]

    def has_user_claims(self) -> bool:
        return self.extended_index != 0 and bool(self.claims)


class DynamicResourcesBeforeScoring(
    PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, ReservePlugin, PreBindPlugin
):
    """``dynamicresources.DynamicResources`` of v1.33 and v1.34, which has no Score (``DynamicResources`` adds it, as
    v1.35 did): what both have."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        # The run's gates at its version: a gate not set takes that version's default, as upstream's would.
        gates = handle.kube_version.effective_gates(handle.feature_gates)
        self.enabled = gates["DynamicResourceAllocation"]
        self.prioritized_list = gates["DRAPrioritizedList"]
        self.extended_resource = gates["DRAExtendedResource"]
        self.allocator_features = features_from_gates(gates, handle.kube_version.minor)
        # Reserve to PreBind: the request mappings of an extended-resource claim in flight, by its temporary uid (what
        # PreBind writes into the pod's status; offline runs bind without the cycle state).
        self._extended_mappings: dict[str, list[dict[str, str]]] = {}
        # Parsed slices, compiled selectors and per-device verdicts, kept across cycles (upstream's CEL cache).
        self.match_cache = DeviceMatchCache(consumable_capacity=self.allocator_features.consumable_capacity)
        # The manager of the listers last seen (PreFilter asks for it for every pod from v1.36, DRAExtendedResource).
        self._manager_cluster: object = None
        self._manager: dm.DraManager | None = None

    @property
    def manager(self) -> dm.DraManager:
        # Looked up again when the handle's listers are other ones: a host may replace them.
        cluster = self.handle.cluster
        manager = self._manager
        if manager is None or self._manager_cluster is not cluster:
            manager = self._manager = dm.dra_manager_for(cluster)
            self._manager_cluster = cluster
        return manager

    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """v1 defaults under the default version's gates (``defaulted_args_under``)."""
        return cls.defaulted_args_under(args, {})

    @classmethod
    def defaulted_args_under(cls, args: dict[str, Any], gates: Mapping[str, bool]) -> dict[str, Any]:
        """``SetDefaults_DynamicResourcesArgs`` under ``gates`` (absent: the default version's): ``filterTimeout``
        10s with DRASchedulerFilterTimeout (from v1.34), ``bindingTimeout`` 10m with DRADeviceBindingConditions and
        DRAResourceClaimDeviceStatus (both on from v1.36)."""
        out = dict(args)
        if out.get("filterTimeout") is None and gate_enabled(gates, "DRASchedulerFilterTimeout"):
            out["filterTimeout"] = DEFAULT_FILTER_TIMEOUT
        if out.get("bindingTimeout") is None and _binding_conditions(gates):
            out["bindingTimeout"] = DEFAULT_BINDING_TIMEOUT
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidateDynamicResourcesArgs`` under the default version's gates (``validate_args_under``)."""
        return cls.validate_args_under(args, {})

    @classmethod
    def validate_args_under(cls, args: dict[str, Any], gates: Mapping[str, bool]) -> list[tuple[str, str]]:
        """``ValidateDynamicResourcesArgs`` under ``gates``: ``filterTimeout`` zero or positive; ``bindingTimeout``
        at least 1 s, and only with the binding-conditions gates on."""
        errors: list[tuple[str, str]] = []
        timeout = args.get("filterTimeout")
        if timeout is not None:
            try:
                seconds = parse_go_duration(str(timeout))
            except ValueError as exc:
                errors.append(("filterTimeout", f'Invalid value: "{timeout}": {exc}'))
            else:
                if seconds < 0:
                    errors.append(("filterTimeout", f'Invalid value: "{timeout}": must be zero or positive'))
        binding = args.get("bindingTimeout")
        if binding is not None and not _binding_conditions(gates):
            errors.append(
                (
                    "bindingTimeout",
                    "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
                )
            )
        elif binding is not None:
            try:
                seconds = parse_go_duration(str(binding))
            except ValueError as exc:
                errors.append(("bindingTimeout", f'Invalid value: "{binding}": {exc}'))
            else:
                if seconds < 1:
                    errors.append(("bindingTimeout", f'Invalid value: "{binding}": must be at least 1 second'))
        return errors

    def events_to_register(self) -> list[str] | None:
        """``EventsToRegister``: nodes added or relabelled, claims added or changed (deallocation frees devices), the
        pod's own update naming its generated claim, classes and slices added or changed."""
        if not self.enabled:
            return []
        return [
            "Node/Add",
            "Node/UpdateNodeLabel",  # with queueing hints no taint change
            "Node/UpdateNodeAllocatable",
            "ResourceClaim/AddOrUpdate",
            "Pod/Update",
            "DeviceClass/AddOrUpdate",
            "ResourceSlice/AddOrUpdate",
        ]

    def _state(self, state: CycleState) -> _StateData | None:
        s = state.get(STATE_KEY)
        return s if isinstance(s, _StateData) else None

    # --- claims of a pod ----------------------------------------------------------------------------
    def _pod_claims(self, pod: PodInfo) -> list[dict[str, Any]]:
        """``podResourceClaims``: the claims in ``spec.resourceClaims`` order; ClaimLookupError when one is not
        usable yet."""
        claims: list[dict[str, Any]] = []
        manager = self.manager
        for pod_claim in pod.spec.get("resourceClaims") or []:
            name, must_check_owner = claim_name_for(pod, pod_claim)
            if name is None:
                continue
            try:
                claim = manager.get_claim(pod.namespace, name)
            except dm.ClaimNotFound as exc:
                raise ClaimLookupError(str(exc)) from exc
            meta = claim.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                raise ClaimLookupError(f'resourceclaim "{meta.get("name")}" is being deleted')
            if must_check_owner and (
                (meta.get("namespace") or "default") != pod.namespace or not dm.controlled_by(claim, pod.uid)
            ):
                raise ClaimLookupError(
                    f"ResourceClaim {meta.get('namespace')}/{meta.get('name')} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
            claims.append(claim)
        return claims

    # --- PreEnqueue ---------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not self.enabled or not has_resource_claims(pod):
            return success()
        try:
            self._pod_claims(pod)
        except ClaimLookupError as exc:
            return unresolvable(str(exc))
        return success()

    # --- PreFilter ----------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not self.enabled:
            return None, SKIP
        # An empty state first: the later points read it even when the pod has no claims.
        s = _StateData()
        state.write(STATE_KEY, s)
        claims: list[dict[str, Any]] = []
        if has_resource_claims(pod):
            try:
                claims = self._pod_claims(pod)
            except ClaimLookupError as exc:
                return None, unresolvable(str(exc))
        extended = self._pre_filter_extended_resources(pod, s)
        if extended is not None:
            s.extended_index = len(claims)
            s.initial_extended_uid = str((extended.get("metadata") or {}).get("uid") or "")
            claims = [*claims, extended]
        if not claims:
            return None, SKIP
        manager = self.manager
        s.informations = [_ClaimInfo() for _ in claims]
        to_allocate = 0
        for index, claim in enumerate(claims):
            allocation = dm.allocation_of(claim)
            if allocation is not None:
                # resourceclaim.CanBeReserved is always true: an allocated claim can be shared.
                selector = allocation.get("nodeSelector")
                if selector is not None:
                    parsed = NodeSelector(selector)
                    if parsed.errors:
                        return None, error(aggregate_message(parsed.errors))
                    s.informations[index].available_on_nodes = parsed
                continue
            to_allocate += 1
            uid = str((claim.get("metadata") or {}).get("uid") or "")
            if manager.claim_has_pending_allocation(uid):
                return None, unresolvable(f"resource claim {_kobj(claim)} is in the process of being allocated")
            if index == s.extended_index:
                continue  # its requests are made per node, from classes known to exist
            st = self._check_requests(claim, manager)
            if st is not None:
                return None, st
        if to_allocate:
            try:
                s.allocator = self._new_allocator(manager)
            except Exception as exc:  # NewAllocator's error
                return None, error(str(exc))
        s.claims = claims
        if s.allocator is not None:
            s.pending = [c for _, c in s.to_allocate()]
            # The extended-resource claim differs per node: no count-based verdicts for it.
            s.quick = QuickCheck.for_claims(s.allocator, s.pending) if s.extended_index is None else None
        s.score_needs_results = any(
            request.get("exactly") is None and request.get("firstAvailable")
            for claim in claims
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
        )
        return None, success()

    def _pre_filter_extended_resources(self, pod: PodInfo, s: _StateData) -> dict[str, Any] | None:
        """``preFilterExtendedResources``: the pod's claim for the extended resources a DeviceClass serves (one
        written in an earlier cycle, else a new one in memory); None when the pod requests none."""
        if not self.extended_resource:
            return None
        classes = self.manager.extended_resource_classes()
        # Most pods request no resource a class serves: that is seen from the names, before any quantity is parsed.
        if not er.requests_a_name_of(pod.pod, classes):
            return None
        requests = er.pod_scalar_requests(pod.pod)
        if not er.has_class_mapped_request(requests, classes):
            return None
        s.scalar_requests = requests
        written = er.find_extended_resource_claim(pod.name, pod.uid, self.manager.list_claims())
        return written if written is not None else er.in_memory_claim(pod.pod)

    def _filter_extended_resources(
        self, s: _StateData, pod: PodInfo, node_info: NodeInfo
    ) -> tuple[dict[str, Any] | None, list[dict[str, str]], Status | None]:
        """``filterExtendedResources``: the extended-resource claim with the requests DRA must serve on this node
        (None: a device plugin provides them all there, or there is no such claim)."""
        if s.extended_index is None:
            return None, [], None
        claim = s.claims[s.extended_index]
        if ((claim.get("spec") or {}).get("devices") or {}).get("requests") is not None:
            # Written in an earlier cycle whose binding failed: upstream deletes it in PostFilter and starts anew.
            return None, [], unresolvable("cannot schedule extended resource claim")
        classes = self.manager.extended_resource_classes()
        allocatable = node_info.allocatable.scalar_resources
        from_dra: list[str] = []
        for name, quantity in s.scalar_requests.items():
            if not er.is_dra_extended_resource_name(name) or quantity == 0:
                continue
            if name in classes and allocatable.get(name, 0) == 0:
                from_dra.append(name)
            elif name not in allocatable:
                return None, [], unresolvable("cannot fit resource")
        if not from_dra or dm.allocation_of(claim) is not None:
            return None, [], None
        requests, mappings = er.requests_and_mappings(pod.pod, from_dra, classes)
        node_claim = json_copy(claim)
        node_claim.setdefault("spec", {}).setdefault("devices", {})["requests"] = requests
        return node_claim, mappings, None

    def _check_requests(self, claim: dict[str, Any], manager: dm.DraManager) -> Status | None:
        """Every request's device class must exist (``validateDeviceClass``); subrequests need DRAPrioritizedList."""
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            name = str(request.get("name") or "")
            exactly = request.get("exactly")
            first = request.get("firstAvailable") or []
            if exactly is not None:
                st = self._check_class(manager, str(exactly.get("deviceClassName") or ""), name)
                if st is not None:
                    return st
            elif first:
                if not self.prioritized_list:
                    return unresolvable(
                        f"resource claim {_kobj(claim)}, request {name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                for sub in first:
                    st = self._check_class(manager, str(sub.get("deviceClassName") or ""), f"{name}/{sub.get('name')}")
                    if st is not None:
                        return st
            else:
                return unresolvable(f"resource claim {_kobj(claim)}, request {name}: unknown request type")
        return None

    @staticmethod
    def _check_class(manager: dm.DraManager, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return error(f"request {request_name}: unsupported request type")
        if manager.device_class(class_name) is None:
            return unresolvable(f"request {request_name}: device class {class_name} does not exist")
        return None

    def _new_allocator(self, manager: dm.DraManager) -> Allocator:
        """``structured.NewAllocator`` over the devices allocated now (in flight included), classes and slices."""
        if self.allocator_features.consumable_capacity:
            allocated = manager.gather_allocated_state()
        else:
            allocated = AllocatedState(allocated_devices=manager.list_all_allocated_devices())
        return Allocator(
            self.allocator_features, allocated, manager.device_classes(), manager.resource_slices(), self.match_cache
        )

    # --- Filter -------------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if not self.enabled:
            return success()
        s = self._state(state)
        if s is None:
            return error(ERR_NOT_FOUND)
        if not s.claims:
            return success()
        node_extended, mappings, st = self._filter_extended_resources(s, pod, node_info)
        if st is not None:
            return st
        if node_extended is None and not s.has_user_claims():
            return success()
        node = node_info.node
        unavailable: list[int] = []
        for index, info in enumerate(s.informations):
            if info.available_on_nodes is not None and not info.available_on_nodes.matches_node(node):
                unavailable.append(index)
        allocations: list[dict[str, Any]] | None = None
        if s.allocator is not None:
            verdict = s.quick.node_verdict(node) if s.quick is not None else None
            if verdict is False:
                return unresolvable(MSG_CANNOT_ALLOCATE_ALL)
            if verdict is None:
                pending = s.pending
                if node_extended is not None:
                    extended = s.claims[s.extended_index] if s.extended_index is not None else None
                    pending = [node_extended if c is extended else c for c in pending]
                try:
                    result = s.allocator.allocate(node, pending)
                except NodeAllocationError as exc:
                    # Not fatal: other nodes may do; the reason is shown only if all fail.
                    return unresolvable(str(exc))
                except AllocationError as exc:
                    return error(str(exc))
                if result is None or len(result) != len(s.pending):
                    return unresolvable(MSG_CANNOT_ALLOCATE_ALL)
                allocations = list(result)
        if unavailable:
            s.unavailable_on_node[node_info.name] = unavailable
            return unresolvable(MSG_NOT_AVAILABLE_ON_NODE)
        if allocations is not None:
            s.node_allocations[node_info.name] = allocations
        elif s.allocator is not None:
            s.quick_nodes[node_info.name] = node
        if s.extended_index is not None:
            s.node_extended[node_info.name] = (node_extended, mappings)
        return success()

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        """``filter``'s verdicts on a batch: counts where they decide (``kss_sim.scheduler.dra.quick``), the allocator
        on the other nodes; None (the per-node loop) for an allocator error or claims allocated already with a
        node selector."""
        if not self.enabled:
            return np.ones(len(batch), np.bool_)
        s = self._state(state)
        if s is None:
            return None
        if not s.claims or (s.allocator is None and all(i.available_on_nodes is None for i in s.informations)):
            return np.ones(len(batch), np.bool_)
        if s.quick is None or any(i.available_on_nodes is not None for i in s.informations):
            return None  # an extended-resource claim too (no QuickCheck): its requests are per node
        decided, fits = s.quick.column_verdicts(batch.cols, batch.idx)
        mask = decided & fits
        if batch.cols not in s.quick_columns:
            s.quick_columns.append(batch.cols)
        nodes = batch.nodes
        for j in np.flatnonzero(~decided).tolist():
            node_info = nodes[j]
            try:
                result = s.allocator.allocate(node_info.node, s.pending) if s.allocator is not None else None
            except NodeAllocationError:
                continue  # rejected; ``filter`` gives the message
            except AllocationError:
                return None
            if result is not None and len(result) == len(s.pending):
                s.node_allocations[node_info.name] = list(result)
                mask[j] = True
        return mask

    def _allocations_on(self, s: _StateData, node_name: str) -> list[dict[str, Any]] | None:
        """The allocation results for a node Filter accepted: kept, or asked of the allocator now where the counts
        said the claims fit (the allocator gives the same answer whenever asked during the cycle)."""
        got = s.node_allocations.get(node_name)
        if got is not None or s.allocator is None:
            return got
        node = s.quick_nodes.get(node_name)
        if node is None:
            for cols in s.quick_columns:
                position = cols.position.get(node_name)
                if position is not None:
                    node = cols.infos[position].node
                    break
        if node is None:
            return None
        result = s.allocator.allocate(node, s.pending)
        if result is None:
            return None
        s.node_allocations[node_name] = list(result)
        return s.node_allocations[node_name]

    # --- PostFilter ---------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        if not self.enabled:
            return None, unschedulable("plugin disabled")
        s = self._state(state)
        if s is None:
            return None, error(ERR_NOT_FOUND)
        if not s.claims:
            return None, unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE)
        unavailable: set[int] = set()
        for node_name, st in statuses.statuses.items():
            if st.plugin == NAME and st.message() == MSG_NOT_AVAILABLE_ON_NODE:
                unavailable.update(s.unavailable_on_node.get(node_name, ()))
        # The pod's extended-resource claim written in an earlier cycle (its binding failed): deleted, so that the
        # next attempt starts anew from a claim in memory.
        earlier = self._written_extended_claim(s)
        # Upstream picks among the unavailable claims at random (map order); the lowest index here.
        for index in sorted(unavailable):
            if index == s.extended_index:
                if earlier is not None:
                    break
                continue
            claim = s.claims[index]
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                updated = copy.deepcopy(claim)
                for key in ("reservedFor", "allocation", "devices"):
                    _status(updated).pop(key, None)
                try:
                    self._write_claim(updated, status=True)
                except Exception as exc:
                    return None, error(str(exc))
                return None, unschedulable(MSG_DEALLOCATED)
        if earlier is not None:
            try:
                self._delete_claim(earlier)
            except Exception as exc:
                return None, error(str(exc))
            return None, unschedulable(MSG_DELETED)
        return None, unschedulable(MSG_STILL_NOT_SCHEDULABLE)

    @staticmethod
    def _written_extended_claim(s: _StateData) -> dict[str, Any] | None:
        """The pod's extended-resource claim when it exists in the API (not only in memory)."""
        if s.extended_index is None:
            return None
        claim = s.claims[s.extended_index]
        return None if (claim.get("metadata") or {}).get("name") == er.SPECIAL_CLAIM_NAME else claim

    # --- Reserve / Unreserve ------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self.enabled:
            return success()
        s = self._state(state)
        if s is None:
            return error(ERR_NOT_FOUND)
        if not s.claims:
            return success()
        pending = s.to_allocate()
        if not pending:
            # Allocated claims are reserved for real in PreBind; a pod that loses that race tries again.
            return success()
        if s.allocator is None:
            return success()
        try:
            allocations = self._allocations_on(s, node_name)
        except AllocationError as exc:
            return error(str(exc))
        if not allocations:
            if all(index == s.extended_index for index, _ in pending):
                return success()  # a device plugin provides the extended resources on this node
            return error("claim allocation not found for node")
        if len(allocations) != len(pending):
            return error(
                f"internal error, have {len(allocations)} allocations, {len(pending)} claims to allocate, "
                f"want {len(pending)} claims"
            )
        manager = self.manager
        for (index, claim), allocation in zip(pending, allocations, strict=True):
            s.informations[index].allocation = allocation
            if index == s.extended_index:
                node_claim, mappings = s.node_extended.get(node_name, (None, []))
                claim = node_claim or claim
                self._extended_mappings[str((claim.get("metadata") or {}).get("uid") or "")] = mappings
            allocated = json_copy(claim)
            finalizers = allocated.setdefault("metadata", {}).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            _status(allocated)["allocation"] = allocation
            manager.signal_claim_pending_allocation(str(allocated["metadata"].get("uid") or ""), allocated)
        return success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        if not self.enabled:
            return
        s = self._state(state)
        if s is None or not s.claims:
            return
        manager = self.manager
        for index, claim in enumerate(s.claims):
            if index == s.extended_index:
                continue
            meta = claim.get("metadata") or {}
            # An allocation in flight is not any more: the assume cache goes back to the informer's claim.
            if manager.remove_claim_pending_allocation(str(meta.get("uid") or "")):
                manager.restore_claim(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            if dm.allocation_of(claim) is not None and dm.reserved_for_pod(claim, pod.uid):
                # Upstream removes the entry with a strategic merge patch that needs no resourceVersion.
                updated = copy.deepcopy(claim)
                st = _status(updated)
                st["reservedFor"] = [r for r in st.get("reservedFor") or [] if r.get("uid") != pod.uid]
                try:
                    self._write_claim(updated, status=True, unconditional=True)
                except Exception:  # retried when the pod is scheduled again
                    log.exception("unreserve %s", _kobj(claim))
        self._unreserve_extended_resource_claim(s)

    def _unreserve_extended_resource_claim(self, s: _StateData) -> None:
        """``unreserveExtendedResourceClaim``: its allocation in flight dropped; a claim already written to the API
        (by PreBind, or in an earlier cycle) is deleted, so that none is left behind for a pod that is not bound."""
        if s.extended_index is None:
            return
        claim = s.claims[s.extended_index]
        meta = claim.get("metadata") or {}
        self._extended_mappings.pop(s.initial_extended_uid, None)
        if self.manager.remove_claim_pending_allocation(s.initial_extended_uid):
            self.manager.restore_claim(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if self._written_extended_claim(s) is None:
            return
        try:
            self._delete_claim(claim)
        except Exception:  # the next attempt finds it and PostFilter deletes it then
            log.exception("delete %s", _kobj(claim))

    # --- PreBind ------------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self.enabled:
            return skip()
        s = self._state(state)
        if s is None:
            return error(ERR_NOT_FOUND)
        if not s.claims:
            return skip()
        return success()

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self.enabled:
            return success()
        s = self._state(state)
        if s is None:
            return error(ERR_NOT_FOUND)
        for index, claim in enumerate(s.claims):
            if dm.reserved_for_pod(claim, pod.uid):
                continue
            allocation = s.informations[index].allocation
            try:
                if index == s.extended_index:
                    if allocation is None and ((claim.get("spec") or {}).get("devices") or {}).get("requests") is None:
                        continue  # a device plugin provides the extended resources on this node
                    s.claims[index] = self._bind_extended_resource_claim(s, claim, allocation, pod, node_name)
                    continue
                s.claims[index] = self.bind_claim(claim, allocation, pod)
            except Exception as exc:
                return error(str(exc))
        return success()

    def _bind_extended_resource_claim(
        self, s: _StateData, claim: dict[str, Any], allocation: dict[str, Any] | None, pod: PodInfo, node_name: str
    ) -> dict[str, Any]:
        """``bindClaim`` for the pod's extended-resource claim: created first when it exists only in memory (the
        node's shape of it), then allocated and reserved as any claim; the pod's status names it."""
        meta = claim.get("metadata") or {}
        if meta.get("name") != er.SPECIAL_CLAIM_NAME:
            return self._bind_earlier_extended_resource_claim(claim, allocation, pod)
        node_claim, _ = s.node_extended.get(node_name, (None, []))
        if node_claim is None:
            raise LookupError(f"extended resource claim not found for node {node_name}")
        return self._create_extended_resource_claim(node_claim, allocation, pod, s)

    def _create_extended_resource_claim(
        self, node_claim: dict[str, Any], allocation: dict[str, Any] | None, pod: PodInfo, s: _StateData | None = None
    ) -> dict[str, Any]:
        """The in-memory claim created under a generated name, allocated and reserved; the pod's status names it
        and maps each container's resources to its requests (``patchPodExtendedResourceClaimStatus``). The cycle's
        state ``s`` tracks the created claim at once, so that Unreserve deletes it when a later write fails."""
        initial_uid = str((node_claim.get("metadata") or {}).get("uid") or "")
        mappings = self._extended_mappings.pop(initial_uid, [])
        try:
            created = self._create_claim(node_claim)
            if s is not None and s.extended_index is not None:
                s.claims[s.extended_index] = created
            written = self.bind_claim(created, allocation, pod)
        finally:
            self.manager.remove_claim_pending_allocation(initial_uid)
        self._record_extended_claim_status(pod, written, mappings)
        return written

    def _bind_earlier_extended_resource_claim(
        self, claim: dict[str, Any], allocation: dict[str, Any] | None, pod: PodInfo
    ) -> dict[str, Any]:
        """The pod's claim written in an earlier cycle without requests, reused: allocated and reserved under its
        own name (its spec stays as written), and named in the pod's status."""
        mappings = self._extended_mappings.pop(str((claim.get("metadata") or {}).get("uid") or ""), [])
        written = self.bind_claim(claim, allocation, pod)
        self._record_extended_claim_status(pod, written, mappings)
        return written

    def _record_extended_claim_status(
        self, pod: PodInfo, written: dict[str, Any], mappings: list[dict[str, str]]
    ) -> None:
        """``patchPodExtendedResourceClaimStatus``: the claim's name and each container's request mappings."""
        if not mappings:
            raise LookupError(
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus"
            )
        value = {"requestMappings": mappings, "resourceClaimName": str(written["metadata"]["name"])}
        if self.handle.actions is not None:
            self.handle.actions.update_extended_resource_claim_status(pod, value)
        pod.pod.setdefault("status", {})["extendedResourceClaimStatus"] = value

    def _create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """The claim created through the host's actions; offline, named as the API server would name it and put
        into the listers."""
        new = json_copy(claim)
        meta = new.setdefault("metadata", {})
        new.pop("status", None)
        actions = self.handle.actions
        if actions is not None:
            meta.pop("name", None)
            meta.pop("uid", None)
            created = actions.create_resource_claim(new)
            if created is not None:
                return created
        meta["name"] = er.generated_name(claim)
        meta["uid"] = f"uid-resourceclaim-{meta.get('namespace') or 'default'}-{meta['name']}"
        meta["resourceVersion"] = "0"
        return store_claim_in_memory(self.handle, new)

    def bind_claim(self, claim: dict[str, Any], allocation: dict[str, Any] | None, pod: PodInfo) -> dict[str, Any]:
        """``bindClaim``: write the allocation Reserve chose (if any) and the pod into ``reservedFor``, reading the
        claim again after a conflict; the written claim is assumed, the allocation is no longer in flight."""
        manager = self.manager
        uid = str((claim.get("metadata") or {}).get("uid") or "")
        written: dict[str, Any] | None = None
        try:
            current = json_copy(claim)
            for attempt in range(CONFLICT_RETRIES):
                if attempt:
                    fresh = self._read_claim(current)
                    if fresh is None:
                        raise LookupError(f"get updated claim {_kobj(current)} after conflict: not found")
                    current = json_copy(fresh)
                try:
                    written = self._reserve_once(current, allocation, pod)
                    return written
                except dm.ClaimConflict:
                    if attempt == CONFLICT_RETRIES - 1:
                        raise
            raise AssertionError("unreachable")
        finally:
            if written is not None:
                problem = manager.assume_claim(written)
                if problem is not None:
                    log.debug("claim not stored in assume cache: %s", problem)
            if allocation is not None:
                manager.remove_claim_pending_allocation(uid)

    def _reserve_once(self, claim: dict[str, Any], allocation: dict[str, Any] | None, pod: PodInfo) -> dict[str, Any]:
        meta = claim.setdefault("metadata", {})
        if meta.get("deletionTimestamp"):
            raise LookupError(f"claim {_kobj(claim)} got deleted in the meantime")
        if allocation is not None:
            if dm.allocation_of(claim) is not None:
                raise LookupError(f"claim {_kobj(claim)} got allocated elsewhere in the meantime")
            finalizers = meta.get("finalizers") or []
            if FINALIZER not in finalizers:
                meta["finalizers"] = [*finalizers, FINALIZER]
                try:
                    claim = json_copy(self._write_claim(claim, status=False))
                except dm.ClaimConflict:
                    raise
                except Exception as exc:
                    raise RuntimeError(f"add finalizer to claim {_kobj(claim)}: {exc}") from exc
            _status(claim)["allocation"] = allocation
        st = _status(claim)
        st["reservedFor"] = [*(st.get("reservedFor") or []), {"resource": "pods", "name": pod.name, "uid": pod.uid}]
        try:
            return self._write_claim(claim, status=True)
        except dm.ClaimConflict:
            raise
        except Exception as exc:
            what = "add allocation and reservation to claim" if allocation is not None else "add reservation to claim"
            raise RuntimeError(f"{what} {_kobj(claim)}: {exc}") from exc

    def bind_claims_after_reserve(self, pod: PodInfo) -> dict[str, Any]:
        """What PreBind writes for a pod Reserve kept, without its cycle state (offline runs, rule R6-DRA): each
        claim allocated in flight gets its allocation and the pod in ``reservedFor``, each claim allocated already
        only the pod, and the pod's extended-resource claim in flight is created. Returns ``{"ns/claim": allocation or
        "reserved"}`` for the claims of ``spec.resourceClaims`` written."""
        if not self.enabled:
            return {}
        manager = self.manager
        if not manager.in_flight and not has_resource_claims(pod):
            return {}  # no claim of its own, nor an extended-resource claim in flight or earlier to bind (below)
        written: dict[str, Any] = {}
        for claim in self._pod_claims(pod):
            uid = str((claim.get("metadata") or {}).get("uid") or "")
            pending = manager.in_flight.get(uid)
            allocation = dm.allocation_of(pending) if pending is not None else None
            if allocation is None and dm.reserved_for_pod(claim, pod.uid):
                continue
            self.bind_claim(claim, allocation, pod)
            written[dm.claim_key(claim)] = allocation if allocation is not None else "reserved"
        if self.extended_resource:
            # Not among the claims returned: those are the ones the pod lists (the golden ``allocations`` key).
            pending = manager.in_flight.get(er.in_memory_claim_uid(pod.uid))
            if pending is not None:
                self._create_extended_resource_claim(pending, dm.allocation_of(pending), pod)
            elif manager.in_flight and (
                (earlier := er.find_extended_resource_claim(pod.name, pod.uid, manager.list_claims())) is not None
            ):
                # (With nothing in flight an earlier claim has nothing to bind: the walk over the claims is skipped.)
                pending = manager.in_flight.get(str((earlier.get("metadata") or {}).get("uid") or ""))
                if pending is not None:
                    self._bind_earlier_extended_resource_claim(earlier, dm.allocation_of(pending), pod)
        return written

    # --- writes -------------------------------------------------------------------------------------
    def _write_claim(self, claim: dict[str, Any], *, status: bool, unconditional: bool = False) -> dict[str, Any]:
        """The claim written through the host's actions; offline, straight into the listers as the informer would
        deliver it (a new resourceVersion)."""
        actions = self.handle.actions
        if actions is not None:
            if unconditional:
                claim = copy.deepcopy(claim)
                claim.setdefault("metadata", {}).pop("resourceVersion", None)
            written = actions.update_resource_claim(claim, status=status)
            if written is not None:
                return written
        return store_claim_in_memory(self.handle, claim)

    def _delete_claim(self, claim: dict[str, Any]) -> None:
        """``deleteClaim``: the delete protection removed first (re-read after a conflict), then the claim deleted."""
        current = json_copy(claim)
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                fresh = self._read_claim(current)
                if fresh is None:
                    raise LookupError(f"get resourceclaim {_kobj(current)}: not found")
                current = json_copy(fresh)
            meta = current.setdefault("metadata", {})
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
            try:
                current = self._write_claim(current, status=False)
                break
            except dm.ClaimConflict:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
        meta = current.get("metadata") or {}
        actions = self.handle.actions
        if actions is not None and actions.delete_resource_claim(
            str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        ):
            return
        self.handle.cluster.delete_object(dm.RESOURCE_CLAIM, current)

    def _read_claim(self, claim: dict[str, Any]) -> dict[str, Any] | None:
        meta = claim.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        actions = self.handle.actions
        if actions is not None:
            fresh = actions.get_resource_claim(namespace, name)
            if fresh is not None:
                return fresh
        return self.handle.cluster.get_object(dm.RESOURCE_CLAIM, namespace, name)


class DynamicResources(DynamicResourcesBeforeScoring, ScorePlugin):
    """``dynamicresources.DynamicResources`` from v1.35 on: Score prefers nodes where ``firstAvailable`` requests got
    an earlier subrequest."""

    @classmethod
    def at_version(cls, version: KubeVersion) -> type[Plugin]:
        """The plugin as ``version``'s kube-scheduler has it: without Score before v1.35."""
        return cls if version.minor >= 35 else DynamicResourcesBeforeScoring

    # --- Score --------------------------------------------------------------------------------------
    def _scores_from_v1_36(self) -> bool:
        """v1.36 reads an allocated claim's result from its status (v1.35 indexes the node's results by claim, and
        fails a pod with an allocated claim before one to allocate) and scores only with DRAPrioritizedList on."""
        return self.handle.kube_version.minor >= 36

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        v1_36 = self._scores_from_v1_36()
        if not self.enabled or (v1_36 and not self.prioritized_list):
            return 0, success()
        s = self._state(state)
        if s is None:
            return 0, error(ERR_NOT_FOUND)
        if not s.claims:
            return 0, success()
        if s.allocator is None:
            return 0, success()
        if not s.score_needs_results and node_info.name not in s.node_allocations:
            # Without firstAvailable requests only the number of results counts (one per claim to allocate).
            return _compute_score(s.claims, [{} for _ in s.pending], results_of_pending_only=v1_36)
        try:
            allocations = self._allocations_on(s, node_info.name)
        except AllocationError as exc:
            return 0, error(str(exc))
        if allocations is None:
            return 0, success()
        return _compute_score(s.claims, allocations, results_of_pending_only=v1_36)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        if self.enabled and self._state(state) is None:
            return [], error(ERR_NOT_FOUND)
        return super().score_nodes(state, pod, nodes)

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        s = self._state(state)
        if self.enabled and s is None:
            return None
        if s is None or not s.claims or (self._scores_from_v1_36() and not self.prioritized_list):
            return np.zeros(len(batch), np.int64)
        results_suffice = len(s.claims) <= len(s.pending) or self._scores_from_v1_36()
        if s.allocator is None or (not s.score_needs_results and results_suffice):
            # No results or no firstAvailable request: every node scores 0 (see ``score``).
            return np.zeros(len(batch), np.int64)
        return None  # per node (score_nodes), errors included

    def has_normalize(self) -> bool:
        return True

    def normalize_batch(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray | None:
        return default_normalize_batch(MAX_NODE_SCORE, False, scores)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return success()


def json_copy(obj: Any) -> Any:
    """A deep copy of a JSON tree (dicts, lists, scalars), as ``copy.deepcopy`` makes it at a third of the cost:
    claims are copied several times per bound pod."""
    kind = type(obj)
    if kind is dict:
        return {k: json_copy(v) for k, v in obj.items()}
    if kind is list:
        return [json_copy(v) for v in obj]
    return copy.deepcopy(obj) if kind not in _SCALARS else obj


_SCALARS = (str, int, float, bool, type(None))


def store_claim_in_memory(handle: Handle, claim: dict[str, Any]) -> dict[str, Any]:
    """A claim write kept in the scheduler's listers (offline runs): the next resourceVersion, as the informer
    would bring the written object."""
    written: dict[str, Any] = json_copy(claim)
    meta = written.setdefault("metadata", {})
    meta["resourceVersion"] = str(dm.resource_version(written) + 1)
    handle.cluster.put_object(dm.RESOURCE_CLAIM, written)
    return written


def release_claims_of_deleted_pod(handle: Handle, pod: PodInfo) -> list[dict[str, Any]]:
    """The resourceclaim controller's part when a pod is gone (offline runs, rule R5-DRA): the pod leaves its claims'
    ``reservedFor``, and a claim nobody reserves any more is deallocated. Returns the claims written (a host with a
    queue raises their update events)."""
    written: list[dict[str, Any]] = []
    names: list[str | None] = []
    for pod_claim in pod.spec.get("resourceClaims") or []:
        try:
            names.append(claim_name_for(pod, pod_claim)[0])
        except ClaimLookupError:
            continue
    # The claim DynamicResources made for the pod's extended resources (DRAExtendedResource).
    names.append(((pod.pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))
    for name in names:
        claim = handle.cluster.get_object(dm.RESOURCE_CLAIM, pod.namespace, name) if name else None
        if claim is None or not dm.reserved_for_pod(claim, pod.uid):
            continue
        updated = copy.deepcopy(claim)
        st = _status(updated)
        st["reservedFor"] = [r for r in st.get("reservedFor") or [] if r.get("uid") != pod.uid]
        if not st["reservedFor"]:
            for key in ("reservedFor", "allocation", "devices"):
                st.pop(key, None)
        written.append(store_claim_in_memory(handle, updated))
    return written


def _compute_score(
    claims: list[dict[str, Any]], allocations: list[dict[str, Any]], *, results_of_pending_only: bool = False
) -> tuple[int, Status]:
    """``computeScore``: per ``firstAvailable`` request, ``8 - i`` for its i-th subrequest that got allocated.

    The node's allocation results exist only for the claims that needed allocation, in their order. v1.35 walks the
    claims in pod order against them by claim index (an allocated claim before one to allocate makes it fail);
    ``results_of_pending_only`` (v1.36) takes an allocated claim's result from its status and walks the node's
    results for the others only.
    """
    score = 0
    next_result = 0
    for i, claim in enumerate(claims):
        allocation = dm.allocation_of(claim) if results_of_pending_only else None
        if allocation is None:
            index = next_result if results_of_pending_only else i
            if index >= len(allocations):
                needing = " needing allocation" if results_of_pending_only else ""
                return 0, error(f"number of allocations {len(allocations)} is smaller than number of claims{needing}")
            allocation = allocations[index]
            next_result += 1
        allocated_subrequests = {
            str(res.get("request") or "")
            for res in ((allocation.get("devices") or {}).get("results") or [])
            if str(res.get("request") or "").count("/") == 1
        }
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            if request.get("exactly") is not None:
                continue
            for j, sub in enumerate(request.get("firstAvailable") or []):
                if f"{request.get('name')}/{sub.get('name')}" in allocated_subrequests:
                    score += FIRST_AVAILABLE_MAX_SIZE - j
    return score, success()
