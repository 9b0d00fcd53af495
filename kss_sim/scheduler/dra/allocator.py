"""The structured-parameters allocator (k8s.io/dynamic-resource-allocation/structured), pure.

A port of ``internal/experimental`` (the superset of upstream's three implementations); where the ``stable`` or
``incubating`` implementation that upstream would pick for the enabled features behaves differently, the variant
decides (:func:`~kss_sim.scheduler.dra.features.allocator_variant`). Same walk as upstream: claims in order, each
claim's requests in order, for each needed device the pools, their slices and devices in order, backtracking
on failure; the first complete solution wins.

``Allocator.allocate`` returns the AllocationResult dicts, ``None`` when the claims do not fit on the node, and
raises :class:`NodeAllocationError` (``ErrFailedAllocationOnNode``: unschedulable on this node only) or
:class:`AllocationError` (anything else: the whole attempt fails) with upstream's messages.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, NamedTuple

from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra.allocated import AllocatedState, ConsumedCapacity, DeviceID, insert_consumed, remove_consumed
from kss_sim.scheduler.dra.capacity import CapacityRequestError, consumed_from_request, consumed_texts, request_fits
from kss_sim.scheduler.dra.constraints import Constraint, DistinctAttributeConstraint, MatchAttributeConstraint
from kss_sim.scheduler.dra.devices import DeviceInfo, SliceInfo
from kss_sim.scheduler.dra.features import Features, allocator_variant
from kss_sim.scheduler.dra.pools import Pool, PoolGatherError, gather_pools, node_matches
from kss_sim.scheduler.dra.requests import (
    ALLOCATION_RESULTS_MAX_SIZE,
    MODE_ALL,
    MODE_EXACT_COUNT,
    Candidate,
    RequestData,
    RequestView,
)
from kss_sim.scheduler.dra.results import DeviceResult, NodeSelectorError, build_allocation_result
from kss_sim.scheduler.dra.selectors import DeviceMatchCache, SelectorCompileError, SelectorRuntimeError


class AllocationError(Exception):
    """Allocation cannot be attempted (bad claim, class or selector): the scheduling attempt fails with an error."""


class NodeAllocationError(AllocationError):
    """``ErrFailedAllocationOnNode``: only this node is affected; the message is the node's unschedulable reason."""


class _ResultsMaxSizeExceeded(Exception):
    """``errAllocationResultMaxSizeExceeded``: backtrack further, another subrequest may need fewer devices."""


class _Indices(NamedTuple):
    """``deviceIndices``: one device wanted by a request or subrequest of a claim."""

    claim: int
    request: int
    sub: int
    device: int


RequestKey = tuple[int, int, int]  # requestIndices: claim, request, subrequest
ConstraintSpec = tuple[type[MatchAttributeConstraint] | type[DistinctAttributeConstraint], list[str], str]


def kobj(obj: Mapping[str, Any]) -> str:
    """``klog.KObj``: ``namespace/name``, or ``name`` alone for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{ns}/{name}" if ns else str(name)


class Allocator:
    """``structured.NewAllocator``: built once per pod from the cluster's state, then asked node after node."""

    def __init__(
        self,
        features: Features,
        allocated_state: AllocatedState,
        classes: Mapping[str, Obj],
        slices: Sequence[Obj],
        cel_cache: DeviceMatchCache | None = None,
    ) -> None:
        self.features = features
        self.variant = allocator_variant(features)
        self.allocated_state = allocated_state
        self.classes = classes
        self.cel_cache = cel_cache if cel_cache is not None else DeviceMatchCache()
        self.index = self.cel_cache.slice_index(slices)
        # Counters left per pool name once allocated devices are subtracted (computed once, as upstream caches it).
        self.available_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.num_allocate_one_invocations = 0
        # Checked claims by identity (the dict held): request data and constraint specs that no node changes.
        self.checked_claims: dict[int, tuple[Obj, list[tuple[RequestKey, RequestData]], list[ConstraintSpec]]] = {}

    def allocate(self, node: Obj, claims: Sequence[Obj]) -> list[Obj] | None:
        """``Allocate``: one AllocationResult per claim, or None when they cannot all be allocated on ``node``."""
        return _Run(self, node, claims).allocate()


@dataclass(slots=True)
class _Undo:
    run: _Run
    claim: int
    base: str
    sub: str
    candidate: Candidate
    multiple: bool
    previous: int

    def __call__(self) -> None:
        run, dev = self.run, self.candidate.device
        for c in run.constraints[self.claim]:
            c.remove(self.base, self.sub, dev.attributes, dev.id)
        run.allocating_devices[dev.id].discard(self.claim)
        if self.multiple:
            consumed = run.results[self.claim][self.previous].consumed
            if consumed:
                remove_consumed(run.allocating_capacity, dev.id, consumed)
        elif run.features.partitionable_devices and dev.consumes_counters:
            run.deallocate_counters(self.candidate)
        del run.results[self.claim][self.previous :]


class _Run:
    """Upstream's ``allocator``: the state of one ``Allocate`` call."""

    def __init__(self, owner: Allocator, node: Obj, claims: Sequence[Obj]) -> None:
        self.owner = owner
        self.features = owner.features
        self.variant = owner.variant
        self.cache = owner.cel_cache
        self.node = node
        self.claims = list(claims)
        self.pools: list[Pool] = []
        self.device_matches: dict[tuple[DeviceID, RequestKey], bool] = {}
        self.constraints: list[list[Constraint]] = [[] for _ in self.claims]
        self.consumed_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.request_data: dict[RequestKey, RequestData] = {}
        self.allocating_devices: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, ConsumedCapacity] = {}
        self.results: list[list[DeviceResult]] = [[] for _ in self.claims]
        self.searching = False

    # --- Allocate ---------------------------------------------------------------------------------------------

    def allocate(self) -> list[Obj] | None:
        try:
            self.pools = gather_pools(self.owner.index, self.node, self.features, self.variant)
        except PoolGatherError as exc:
            raise AllocationError(f"gather pool information: {exc}") from None
        for claim_index, claim in enumerate(self.claims):
            if not self._reuse_check(claim_index, claim):
                self._check_claim(claim_index, claim)
        # Verdicts gathered while checking requests are not reused for the search (upstream starts afresh); from
        # here on they are the same whenever asked, so the search reads the per-device verdicts directly.
        self.device_matches = {}
        self.searching = True
        try:
            done = self._allocate_one(_Indices(0, 0, 0, 0), False)
        except _ResultsMaxSizeExceeded:
            done = False
        if not done:
            if self.features.release >= 35 and any(p.is_invalid for p in self.pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        out: list[Obj] = []
        for i, claim in enumerate(self.claims):
            try:
                result = build_allocation_result(
                    claim,
                    self.results[i],
                    [self._chosen(i, r) for r in range(len(_requests(claim)))],
                    self.node,
                    # v1.34's allocators write no tolerations into the results (v1.35's non-stable ones do).
                    with_tolerations=self.variant != "stable" and self.features.release >= 35,
                    with_binding=self.features.device_binding,
                    name_from_slice=self.variant != "experimental",
                )
            except NodeSelectorError as exc:
                name = (claim.get("metadata") or {}).get("name") or ""
                raise AllocationError(f"create NodeSelector for claim {name}: {exc}") from None
            out.append(result)
        return out

    def _chosen(self, claim_index: int, request_index: int) -> RequestData:
        """The request's data, or that of the subrequest the search settled on."""
        data = self.request_data[(claim_index, request_index, 0)]
        if data.parent is not None:
            data = self.request_data[(claim_index, request_index, data.selected_sub_index)]
        return data

    def _reuse_check(self, claim_index: int, claim: Obj) -> bool:
        """Take the checked requests of a claim seen on an earlier node, when nothing in them depends on the node.

        Requests for "all" devices depend on the node's pools and are checked again on every node.
        """
        seen = self.owner.checked_claims.get(id(claim))
        if seen is None or seen[0] is not claim:
            return False
        for (_, request_index, sub_index), data in seen[1]:
            self.request_data[(claim_index, request_index, sub_index)] = replace(data, all_devices=[])
        self.constraints[claim_index] = [kind(names, attribute) for kind, names, attribute in seen[2]]
        return True

    def _remember_check(self, claim_index: int, claim: Obj, specs: list[ConstraintSpec]) -> None:
        entries = [((0, key[1], key[2]), data) for key, data in self.request_data.items() if key[0] == claim_index]
        if any(data.request.allocation_mode == MODE_ALL for _, data in entries):
            return
        self.owner.checked_claims[id(claim)] = (claim, [(k, replace(d)) for k, d in entries], specs)

    def _check_claim(self, claim_index: int, claim: Obj) -> None:
        """The first loop of ``Allocate``: request data, the devices a claim needs at least, its constraints."""
        name = kobj(claim)
        min_devices = 0
        for request_index, request in enumerate(_requests(claim)):
            key: RequestKey = (claim_index, request_index, 0)
            subrequests = list(request.get("firstAvailable") or [])
            request_name = request.get("name") or ""
            if not self.features.prioritized_list and subrequests:
                raise AllocationError(
                    f"claim {name}, request {request_name}: has subrequests, "
                    "but the DRAPrioritizedList feature is disabled"
                )
            if self.variant == "experimental" and not self.features.consumable_capacity:
                if (request.get("exactly") or {}).get("capacity") is not None:
                    raise AllocationError(
                        f"claim {name}, request {request_name}: has capacity requests, "
                        "but the DRAConsumableCapacity feature is disabled"
                    )
                for sub in subrequests:
                    if sub.get("capacity") is not None:
                        raise AllocationError(
                            f"claim {name}, subrequest {sub.get('name') or ''}: has capacity requests, "
                            "but the DRAConsumableCapacity feature is disabled"
                        )
            if subrequests:
                parent = RequestView.exact(request)
                fewest: int | None = None
                for i, sub in enumerate(subrequests):
                    # Upstream checks subrequest i under the key of subrequest i-1 (0 for the first two): kept,
                    # since it decides which cached verdicts an "All" subrequest sees.
                    data = self._check_request(RequestView.sub(sub), parent, key)
                    key = (claim_index, request_index, i)
                    self.request_data[key] = data
                    fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
                min_devices += fewest or 0
            else:
                data = self._check_request(RequestView.exact(request), None, key)
                self.request_data[key] = data
                min_devices += data.num_devices
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {name}: number of requested devices {min_devices} exceeds the claim limit of "
                f"{ALLOCATION_RESULTS_MAX_SIZE}"
            )
        specs: list[ConstraintSpec] = []
        for i, c in enumerate(((claim.get("spec") or {}).get("devices") or {}).get("constraints") or []):
            if c.get("matchAttribute") is not None:
                specs.append((MatchAttributeConstraint, list(c.get("requests") or []), str(c["matchAttribute"])))
            elif c.get("distinctAttribute") is not None and self.variant == "experimental":
                specs.append((DistinctAttributeConstraint, list(c.get("requests") or []), str(c["distinctAttribute"])))
            else:
                raise AllocationError(f"claim {name}, constraint #{i}: empty constraint (unsupported constraint type?)")
        self.constraints[claim_index] = [kind(names, attribute) for kind, names, attribute in specs]
        self._remember_check(claim_index, claim, specs)

    def _check_request(self, request: RequestView, parent: RequestView | None, key: RequestKey) -> RequestData:
        """``validateDeviceRequest``."""
        claim = kobj(self.claims[key[0]])
        data = RequestData(request=request, parent=parent)
        for i, selector in enumerate(request.selectors):
            if selector.get("cel") is None:
                raise AllocationError(
                    f"claim {claim}, request {request.name}, selector #{i}: "
                    "CEL expression empty (unsupported selector type?)"
                )
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(
                f"claim {claim}, request {request.name}: admin access is requested, but the feature is disabled"
            )
        class_name = request.device_class_name
        if not class_name:
            raise AllocationError(
                f"claim {claim}, request {request.name}: missing device class name (unsupported request type?)"
            )
        device_class = self.owner.classes.get(class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {claim}, request {request.name}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        data.device_class = device_class
        if request.allocation_mode == MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == MODE_ALL:
            for pool in self.pools:
                if pool.is_incomplete:
                    raise AllocationError(
                        f"claim {claim}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently being updated"
                    )
                if pool.is_invalid:
                    raise AllocationError(
                        f"claim {claim}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently invalid"
                    )
                for s in pool.slices:
                    for dev in s.devices:
                        if not self._eligible(key, data, s, dev):
                            continue
                        # Upstream leaves the pool out here, and would crash counting counters against it.
                        data.all_devices.append(Candidate(dev, s, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {claim}, request {request.name}: unsupported count mode {request.allocation_mode}"
            )
        return data

    # --- the search -------------------------------------------------------------------------------------------

    def _allocate_one(self, r: _Indices, allocate_subrequest: bool) -> bool:
        """``allocateOne``: try each eligible device for one wanted device, recursing to the next."""
        self.owner.num_allocate_one_invocations += 1
        if r.claim >= len(self.claims):
            return True
        requests = _requests(self.claims[r.claim])
        if r.request >= len(requests):
            try:
                return self._allocate_one(_Indices(r.claim + 1, 0, 0, 0), False)
            except _ResultsMaxSizeExceeded:
                # Not fatal: other choices in earlier claims may leave room for a smaller subrequest here.
                return False
        key: RequestKey = (r.claim, r.request, r.sub)
        data = self.request_data[key]
        if not allocate_subrequest and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (r.claim, r.request, sub) in self.request_data:
                try:
                    success = self._allocate_one(r._replace(sub=sub), True)
                except _ResultsMaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    data.selected_sub_index = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _ResultsMaxSizeExceeded
            return False

        request = data.request
        do_all = request.allocation_mode == MODE_ALL
        if do_all and not data.all_devices:
            return False
        if r.device >= data.num_devices:
            return self._allocate_one(_Indices(r.claim, r.request + 1, 0, 0), False)
        if len(self.results[r.claim]) + data.num_devices - r.device > ALLOCATION_RESULTS_MAX_SIZE:
            raise _ResultsMaxSizeExceeded

        if do_all:
            undo = self._allocate_device(r, data.all_devices[r.device], must=True)
            if undo is None:
                # The devices for "all" are fixed: if one cannot be had, nothing can.
                return False
            # Upstream goes on without the subrequest index here.
            return self._continue(_Indices(r.claim, r.request, 0, r.device + 1), allocate_subrequest, undo)

        for pool in self.pools:
            if self.features.release < 35:
                # v1.34 searches incomplete pools too, and fails the attempt on reaching an invalid one.
                if pool.is_invalid:
                    raise AllocationError(f"pool {pool.pool_id.pool} is invalid: {pool.invalid_reason}")
            elif pool.is_incomplete or pool.is_invalid:
                continue
            for s in pool.slices:
                for dev in s.devices:
                    if request.admin_access:
                        if r.claim in self.allocating_devices.get(dev.id, ()):
                            continue
                    elif self._in_use(dev.id):
                        continue
                    if not self._eligible(key, data, s, dev):
                        continue
                    undo = self._allocate_device(r, Candidate(dev, s, pool), must=False)
                    if undo is None:
                        continue
                    if self._continue(r._replace(device=r.device + 1), allocate_subrequest, undo):
                        return True
        return False

    def _continue(self, nxt: _Indices, allocate_subrequest: bool, undo: _Undo) -> bool:
        """Recurse with a device taken; give it back unless that led to a solution."""
        try:
            done = self._allocate_one(nxt, allocate_subrequest)
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _in_use(self, device: DeviceID) -> bool:
        return device in self.owner.allocated_state.allocated_devices or bool(self.allocating_devices.get(device))

    def _capacity_in_use(self, device: DeviceID) -> bool:
        return device in self.owner.allocated_state.aggregated_capacity or device in self.allocating_capacity

    def _capacity_fits(self, request: RequestView, dev: DeviceInfo) -> bool:
        """``CmpRequestOverCapacity`` with what allocated claims and this search hold of the device."""
        held = self.owner.allocated_state.aggregated_capacity.get(dev.id) or {}
        return request_fits(held, request.capacity, dev.capacity, self.allocating_capacity.get(dev.id))

    def _eligible(self, key: RequestKey, data: RequestData, s: SliceInfo, dev: DeviceInfo) -> bool:
        """A device the request may take: selectable, and (with consumable capacity) room for what it asks."""
        if not self._is_selectable(key, data, s, dev):
            return False
        if not self.features.consumable_capacity:
            return True
        try:
            return self._capacity_fits(data.request, dev)
        except CapacityRequestError:
            return False

    def _is_selectable(self, key: RequestKey, data: RequestData, s: SliceInfo, dev: DeviceInfo) -> bool:
        """``isSelectable``: the class's and the request's selectors, and per-device node selection."""
        if not self.features.device_binding and dev.binding_conditions:
            return False
        match_key = (dev.id, key)
        if not self.searching:
            known = self.device_matches.get(match_key)
            if known is not None:
                return known
        verdict = True
        if data.device_class is not None:
            class_selectors = ((data.device_class.get("spec") or {}).get("selectors")) or []
            verdict = self._selectors_match(key, dev, data.device_class, class_selectors)
        if verdict:
            verdict = self._selectors_match(key, dev, None, data.request.selectors)
        if verdict and s.per_device_node_selection:
            try:
                verdict = node_matches(
                    self.node,
                    dev.node_name or "",
                    dev.all_nodes,
                    dev.node_selector,
                    cache=s.parsed_node_selectors,
                    cache_key=s.devices.index(dev),
                )
            except PoolGatherError as exc:
                raise AllocationError(str(exc)) from None
        if not self.searching:
            self.device_matches[match_key] = verdict
        return verdict

    def _selectors_match(
        self,
        key: RequestKey,
        dev: DeviceInfo,
        device_class: Mapping[str, Any] | None,
        selectors: Sequence[Mapping[str, Any]],
    ) -> bool:
        """``selectorsMatch``: every selector true; errors name the class or the claim."""
        for i, selector in enumerate(selectors):
            expression = str((selector.get("cel") or {}).get("expression") or "")
            verdict = dev.verdicts.get(expression)
            if verdict is True:
                continue
            if verdict is False:
                return False
            try:
                if not self.cache.matches(expression, dev.id.driver, dev):
                    return False
            except (SelectorCompileError, SelectorRuntimeError) as exc:
                owner = (
                    f"class {(device_class.get('metadata') or {}).get('name') or ''}"
                    if device_class is not None
                    else f"claim {kobj(self.claims[key[0]])}"
                )
                kind = "compile" if isinstance(exc, SelectorCompileError) else "runtime"
                raise AllocationError(f"{owner}: selector #{i}: CEL {kind} error: {exc}") from None
        return True

    def _allocate_device(self, r: _Indices, cand: Candidate, *, must: bool) -> _Undo | None:
        """``allocateDevice``: take the device if free, within counters, tolerated and within the constraints.

        Returns how to give it back, or None. Upstream's order of checks is kept, including that counters taken
        before a taint or constraint refuses the device are not given back.
        """
        data = self.request_data[(r.claim, r.request, r.sub)]
        request = data.request
        dev = cand.device
        multiple = self.features.consumable_capacity and bool(dev.allow_multiple_allocations)
        if not multiple and request.admin_access and r.claim in self.allocating_devices.get(dev.id, ()):
            return None
        if not request.admin_access and self._in_use(dev.id):
            return None
        if not self.features.partitionable_devices and dev.consumes_counters:
            return None
        skip_counters = multiple and self._capacity_in_use(dev.id)
        if not skip_counters and dev.consumes_counters and not self._take_counters(cand):
            return None
        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent.name, request.name
        if self.features.device_taints and _taint_prevents_allocation(dev, request):
            return None
        constraints = self.constraints[r.claim]
        for i, c in enumerate(constraints):
            if c.add(base, sub, dev.attributes, dev.id):
                continue
            if must:
                raise AllocationError(
                    f"claim {kobj(self.claims[r.claim])}, request {request.name}: cannot add device {dev.id} "
                    "because a claim constraint would not be satisfied"
                )
            for e in range(i):
                constraints[e].remove(base, sub, dev.attributes, dev.id)
            return None
        holders = self.allocating_devices.setdefault(dev.id, set())
        if not multiple:
            holders.add(r.claim)
        consumed: ConsumedCapacity = {}
        texts: dict[str, str] = {}
        share_id: str | None = None
        if self.features.consumable_capacity:
            # v1.34's allocateDevice checks the capacity of the slice's device at the index of the device wanted
            # (r.device), not of the device taken: kept, it decides placements there.
            probe = dev
            if self.features.release < 35 and r.device < len(cand.slice.devices):
                probe = cand.slice.devices[r.device]
            try:
                fits = self._capacity_fits(request, probe)
            except CapacityRequestError:
                return None
            if not fits:
                return None
            if multiple:
                consumed = consumed_from_request(request.capacity, dev.capacity)
                texts = consumed_texts(request.capacity, dev.capacity)
                share_id = str(uuid.uuid4())
                insert_consumed(self.allocating_capacity, dev.id, consumed)
        previous = len(self.results[r.claim])
        self.results[r.claim].append(
            DeviceResult(
                request=request.name,
                parent_request=data.parent.name if data.parent is not None else "",
                device=dev,
                slice=cand.slice,
                admin_access=request.admin_access,
                share_id=share_id,
                consumed=consumed or None,
                consumed_texts=texts or None,
            )
        )
        return _Undo(self, r.claim, base, sub, cand, multiple, previous)

    # --- partitionable devices ----------------------------------------------------------------------------

    def _take_counters(self, cand: Candidate) -> bool:
        """``checkAvailableCounters``: count the device's consumption; refuse (and uncount) if a counter runs out.

        From v1.35 the counters are the pool's (every slice of it); v1.34's are those the device's own slice shares
        (a device whose slice shares none always fits)."""
        pool = cand.pool
        if pool is None:
            return True
        key = self._counters_key(cand)
        available = self.owner.available_counters.get(key)
        if available is None:
            if self.features.release < 35:
                shared = dict(cand.slice.shared_counters)
                slices: Sequence[Any] = (cand.slice,)
            else:
                shared = pool.counter_sets
                slices = (*pool.slices, *pool.slices_not_targeting_node)
            available = {name: dict(counters) for name, counters in shared.items()}
            allocated = self.owner.allocated_state.allocated_devices
            for s in slices:
                for d in s.devices:
                    if d.id not in allocated:
                        continue
                    for set_name, counters in d.consumes_counters:
                        left = available.get(set_name)
                        if left is None:
                            continue
                        for name, amount in counters.items():
                            if name in left:
                                left[name] -= amount
            self.owner.available_counters[key] = available
        consumed = self.consumed_counters.setdefault(key, {})
        for set_name, counters in cand.device.consumes_counters:
            used = consumed.setdefault(set_name, {})
            for name, amount in counters.items():
                used[name] = used.get(name, Fraction(0)) + amount
        for set_name, counters in available.items():
            used = consumed.get(set_name) or {}
            for name, amount in counters.items():
                if amount < used.get(name, Fraction(0)):
                    self.deallocate_counters(cand)
                    return False
        return True

    def _counters_key(self, cand: Candidate) -> str:
        """What the counters are kept by: the pool's name, v1.34's the slice's."""
        assert cand.pool is not None
        return cand.slice.name if self.features.release < 35 else cand.pool.pool_id.pool

    def deallocate_counters(self, cand: Candidate) -> None:
        """``deallocateCountersForDevice``."""
        if cand.pool is None:
            return
        consumed = self.consumed_counters.get(self._counters_key(cand)) or {}
        for set_name, counters in cand.device.consumes_counters:
            used = consumed.setdefault(set_name, {})
            for name, amount in counters.items():
                used[name] = used.get(name, Fraction(0)) - amount


def _requests(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(((claim.get("spec") or {}).get("devices") or {}).get("requests") or [])


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``resourceclaim.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def _taint_prevents_allocation(dev: DeviceInfo, request: RequestView) -> bool:
    """``taintPreventsAllocation``: a NoSchedule or NoExecute taint that no toleration of the request covers."""
    for taint in dev.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
            _tolerates(t, taint) for t in request.tolerations
        ):
            return True
    return False
