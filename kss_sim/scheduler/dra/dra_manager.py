"""The scheduler's shared DRA state (``dynamicresources.DefaultDRAManager``): device classes, ResourceSlices, and
ResourceClaims as an assume cache with in-flight allocations and the set of allocated devices.

Objects come from the listers (``ClusterObjects.objects`` of kinds DeviceClass, ResourceSlice, ResourceClaim), fed by
the host as informers feed kube-scheduler. On top of them:

- the assume cache: a claim this scheduler just wrote (PreBind's status update) is read back as written until the
  informer brings that version or a newer one (``AssumeClaimAfterAPICall`` / ``AssumedClaimRestore``);
- in-flight allocations: claims Reserve allocated whose PreBind has not written them yet (by uid); another pod
  needing such a claim waits, and their devices count as allocated;
- allocated devices: every device of every allocated claim (assumed versions included), kept up to date from the
  listers' and the assume cache's changes rather than recomputed per pod (``allocatedDevices``); devices allocated
  with admin access are not counted.

One manager serves every profile of a scheduler (``Handle.SharedDRAManager``): :func:`dra_manager_for` keys it on
the ClusterObjects they share.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import parse_quantity
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.dra.allocated import (
    AllocatedState,
    ConsumedCapacity,
    DeviceID,
    SharedDeviceID,
    add_consumed,
    insert_consumed,
)
from kss_sim.scheduler.dra.extended_resources import classes_by_resource_name

DEVICE_CLASS = "DeviceClass"
RESOURCE_SLICE = "ResourceSlice"
RESOURCE_CLAIM = "ResourceClaim"
DRA_KINDS = (DEVICE_CLASS, RESOURCE_SLICE, RESOURCE_CLAIM)


class ClaimConflict(Exception):
    """A claim write refused because the claim changed meanwhile (HTTP 409): PreBind reads it again and retries."""


class ClaimNotFound(LookupError):
    """``assumecache.NotFoundError``: no such claim in the informer cache."""

    def __init__(self, key: str) -> None:
        super().__init__(f'could not find ResourceClaim "{key}"')


def resource_version(obj: Mapping[str, Any]) -> int:
    """The object's resourceVersion as the assume cache compares it (an integer; 0 when unset or not a number)."""
    raw = (obj.get("metadata") or {}).get("resourceVersion") or "0"
    try:
        return int(raw)
    except ValueError:
        return 0


def claim_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def allocation_of(claim: Mapping[str, Any]) -> dict[str, Any] | None:
    """``claim.status.allocation`` (None when not allocated)."""
    allocation: dict[str, Any] | None = (claim.get("status") or {}).get("allocation")
    return allocation


def allocated_devices_of(claim: Mapping[str, Any]) -> frozenset[DeviceID]:
    """``foreachAllocatedDevice`` without consumable capacity: the devices allocated exclusively to the claim
    (results with admin access are shared with others and skipped)."""
    allocation = allocation_of(claim)
    if not allocation:
        return frozenset()
    out: set[DeviceID] = set()
    for result in (allocation.get("devices") or {}).get("results") or []:
        if result.get("adminAccess"):
            continue
        out.add(DeviceID(str(result.get("driver") or ""), str(result.get("pool") or ""),
                                str(result.get("device") or "")))  # fmt: skip
    return frozenset(out)


_Share = tuple[DeviceID, str, ConsumedCapacity | None]  # a shared device, the shareID, its consumedCapacity


def _claim_holdings(claim: Mapping[str, Any]) -> tuple[frozenset[DeviceID], tuple[_Share, ...]]:
    """What an allocated claim holds with DRAConsumableCapacity on: the devices held whole, and the shares (results
    with a shareID); results with admin access hold nothing."""
    allocation = allocation_of(claim)
    if not allocation:
        return frozenset(), ()
    whole: set[DeviceID] = set()
    shares: list[_Share] = []
    for result in (allocation.get("devices") or {}).get("results") or []:
        if result.get("adminAccess"):
            continue
        device = DeviceID(
            str(result.get("driver") or ""), str(result.get("pool") or ""), str(result.get("device") or "")
        )
        share_id = result.get("shareID")
        if share_id is None:
            whole.add(device)
            continue
        consumed = result.get("consumedCapacity")
        amounts = None if consumed is None else {name: parse_quantity(str(q)) for name, q in consumed.items()}
        shares.append((device, str(share_id), amounts))
    return frozenset(whole), tuple(shares)


def _gather_claim(claim: Mapping[str, Any], state: AllocatedState, *, shared_ids: bool) -> None:
    """``foreachAllocatedDevice`` with DRAConsumableCapacity on: a result with a shareID is a share of the device
    (its consumedCapacity added to the device's aggregate; its SharedDeviceID noted only when ``shared_ids``), any
    other result holds the device; results with admin access are not counted."""
    whole, shares = _claim_holdings(claim)
    state.allocated_devices.update(whole)  # type: ignore[union-attr]
    for device, share_id, consumed in shares:
        if shared_ids:
            state.allocated_shared_device_ids.add(SharedDeviceID(*device, share_id))  # type: ignore[union-attr]
        if consumed is not None:
            insert_consumed(state.aggregated_capacity, device, consumed)


class DraManager:
    """``DefaultDRAManager`` over a scheduler's listers."""

    def __init__(self, cluster: ClusterObjects) -> None:
        # Weakly: the registry (_MANAGERS) keys managers by their cluster, which a strong reference here would keep
        # alive for ever (every replay, capacity probe or sweep run's cluster, with its objects).
        self._cluster_ref = weakref.ref(cluster)
        # claim key -> the object this scheduler wrote, shown instead of the informer's while not older.
        self._assumed: dict[str, Obj] = {}
        # claim uid -> the claim with the allocation Reserve chose (``inFlightAllocations``).
        self.in_flight: dict[str, Obj] = {}
        # ``allocatedDevices``: claim key -> its devices as last seen (latest version), and their union.
        self._devices_by_claim: dict[str, frozenset[DeviceID]] = {}
        self._allocated: set[DeviceID] = set()
        # ``GatherAllocatedState``'s part from the claims, kept up to date the same way (gathering every claim per
        # pod made a cycle linear in the claims): each claim's holdings, how many claims hold a device whole, and
        # the consumed capacities of the shares by device and claim. Kept from the first gathering on (None before):
        # only DRAConsumableCapacity gathers.
        self._holdings_by_claim: dict[str, tuple[frozenset[DeviceID], tuple[_Share, ...]]] | None = None
        self._whole_holders: Counter[DeviceID] = Counter()
        self._held_whole: set[DeviceID] = set()  # the devices counted there (a set copies cheaper, hashes kept)
        self._consumed_by_device: dict[DeviceID, dict[str, list[ConsumedCapacity]]] = {}
        # The extended-resource mapping, asked by every pod's PreFilter from v1.36 on: built again only after a
        # DeviceClass changes (as ExtendedResourceCache follows the class informer), not per pod.
        self._extended_classes: dict[str, Obj] | None = None
        for claim in self._claims().values():
            self._track(claim_key(claim), claim)
        cluster.object_listeners.append(self._on_object)

    # --- listers --------------------------------------------------------------------------------

    @property
    def _cluster(self) -> ClusterObjects:
        cluster = self._cluster_ref()
        if cluster is None:  # only a caller that kept the manager past its scheduler can see this
            raise RuntimeError("the DRA manager's cluster is gone")
        return cluster

    def _claims(self) -> dict[str, Obj]:
        return self._cluster.objects.get(RESOURCE_CLAIM, {})

    def device_class(self, name: str) -> Obj | None:
        """``DeviceClasses().Get``."""
        return self._cluster.objects.get(DEVICE_CLASS, {}).get(f"default/{name}")

    def device_classes(self) -> dict[str, Obj]:
        """Every DeviceClass by name."""
        return {str((c.get("metadata") or {}).get("name")): c for c in self._cluster.list_objects(DEVICE_CLASS)}

    def extended_resource_classes(self) -> dict[str, Obj]:
        """``DeviceClassResolver``: the class serving each extended resource name (DRAExtendedResource)."""
        if self._extended_classes is None:
            self._extended_classes = classes_by_resource_name(self._cluster.list_objects(DEVICE_CLASS))
        return self._extended_classes

    def resource_slices(self) -> list[Obj]:
        """``ResourceSlices().ListWithDeviceTaintRules`` (no DeviceTaintRules: DRADeviceTaintRules is off), in the
        order the informer has them."""
        return self._cluster.list_objects(RESOURCE_SLICE)

    # --- the claim assume cache -----------------------------------------------------------------
    def get_claim(self, namespace: str, name: str) -> Obj:
        """``ResourceClaims().Get``: the latest version (assumed or informer); ClaimNotFound when absent."""
        key = f"{namespace or 'default'}/{name}"
        informer = self._claims().get(key)
        if informer is None:
            raise ClaimNotFound(key)
        return self._latest(key, informer)

    def list_claims(self) -> list[Obj]:
        return [self._latest(key, obj) for key, obj in self._claims().items()]

    def _latest(self, key: str, informer: Obj) -> Obj:
        assumed = self._assumed.get(key)
        if assumed is None:
            return informer
        if resource_version(informer) > resource_version(assumed):
            # The informer went past what was assumed: the assumed copy is no longer needed.
            del self._assumed[key]
            return informer
        return assumed

    def assume_claim(self, claim: Obj) -> str | None:
        """``AssumeClaimAfterAPICall``: the claim as an API write returned it; the error text when refused."""
        key = claim_key(claim)
        informer = self._claims().get(key)
        if informer is None:
            return f'could not find ResourceClaim "{key}"'
        latest = self._latest(key, informer)
        if resource_version(claim) < resource_version(latest):
            return (f'ResourceClaim "{key}" is out of sync (stored: {resource_version(latest)}, '
                    f"assume: {resource_version(claim)})")  # fmt: skip
        self._assumed[key] = claim
        self._track(key, claim)
        return None

    def restore_claim(self, namespace: str, name: str) -> None:
        """``AssumedClaimRestore``: back to the informer's version."""
        key = f"{namespace or 'default'}/{name}"
        if self._assumed.pop(key, None) is not None:
            informer = self._claims().get(key)
            self._track(key, informer)

    # --- in-flight allocations ------------------------------------------------------------------
    def claim_has_pending_allocation(self, uid: str) -> bool:
        return uid in self.in_flight

    def signal_claim_pending_allocation(self, uid: str, allocated_claim: Obj) -> None:
        self.in_flight[uid] = allocated_claim

    def remove_claim_pending_allocation(self, uid: str) -> bool:
        return self.in_flight.pop(uid, None) is not None

    # --- allocated devices ----------------------------------------------------------------------
    def gather_allocated_state(self) -> AllocatedState:
        """``GatherAllocatedState`` (DRAConsumableCapacity on): devices held whole, and the capacity consumed per
        shared device, by allocated claims and allocations in flight. As in v1.35, the SharedDeviceIDs are those
        of allocations in flight only (the tracker's own set of them is not passed on)."""
        if self._holdings_by_claim is None:
            self._holdings_by_claim = {}
            for key, claim in self._claims().items():
                self._track_holdings(key, self._latest(key, claim))
        aggregated: dict[DeviceID, ConsumedCapacity] = {}
        for device, by_claim in self._consumed_by_device.items():
            total: ConsumedCapacity = {}
            for consumed in by_claim.values():
                for amounts in consumed:
                    add_consumed(total, amounts)
            aggregated[device] = total
        state = AllocatedState(
            allocated_devices=set(self._held_whole),
            allocated_shared_device_ids=set(),
            aggregated_capacity=aggregated,
        )
        for claim in self.in_flight.values():
            _gather_claim(claim, state, shared_ids=True)
        return state

    def list_all_allocated_devices(self) -> set[DeviceID]:
        """``ListAllDeviceIDs``: devices of allocated claims and of allocations in flight (a new set)."""
        allocated = set(self._allocated)
        for claim in self.in_flight.values():
            allocated.update(allocated_devices_of(claim))
        return allocated

    def _on_object(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if kind == DEVICE_CLASS:
            self._extended_classes = None
        if kind != RESOURCE_CLAIM:
            return
        obj = new if new is not None else old
        if obj is None:
            return
        key = claim_key(obj)
        if new is None:
            self._assumed.pop(key, None)
            self._track(key, None)
            return
        self._track(key, self._latest(key, new))

    def _track(self, key: str, claim: Obj | None) -> None:
        """The claim's latest version changed: move its devices in or out of the allocated set and the holdings."""
        if self._holdings_by_claim is not None:
            self._track_holdings(key, claim)
        devices = allocated_devices_of(claim) if claim is not None else frozenset()
        before = self._devices_by_claim.get(key, frozenset())
        if devices == before:
            return
        # Set semantics as upstream's: a device leaves with the claim that held it.
        self._allocated.difference_update(before)
        self._allocated.update(devices)
        if devices:
            self._devices_by_claim[key] = devices
        else:
            self._devices_by_claim.pop(key, None)

    def _track_holdings(self, key: str, claim: Obj | None) -> None:
        assert self._holdings_by_claim is not None
        holdings = _claim_holdings(claim) if claim is not None else (frozenset(), ())
        before = self._holdings_by_claim.get(key, (frozenset(), ()))
        if holdings == before:
            return
        # Union semantics, as a gathering over every claim has them: a device stays held while some claim holds it.
        self._whole_holders.subtract(before[0])
        self._whole_holders.update(holdings[0])
        self._held_whole.update(holdings[0])
        for device in before[0] - holdings[0]:
            if self._whole_holders[device] <= 0:
                del self._whole_holders[device]
                self._held_whole.discard(device)
        for device, _, consumed in before[1]:
            if consumed is not None:
                by_claim = self._consumed_by_device.get(device)
                if by_claim is not None and by_claim.pop(key, None) is not None and not by_claim:
                    del self._consumed_by_device[device]
        for device, _, consumed in holdings[1]:
            if consumed is not None:
                self._consumed_by_device.setdefault(device, {}).setdefault(key, []).append(consumed)
        if holdings[0] or holdings[1]:
            self._holdings_by_claim[key] = holdings
        else:
            self._holdings_by_claim.pop(key, None)


_MANAGERS: weakref.WeakKeyDictionary[ClusterObjects, DraManager] = weakref.WeakKeyDictionary()


def dra_manager_for(cluster: ClusterObjects) -> DraManager:
    """The one DRA manager of the scheduler whose listers are ``cluster`` (created on first use)."""
    manager = _MANAGERS.get(cluster)
    if manager is None:
        manager = _MANAGERS[cluster] = DraManager(cluster)
    return manager


def reserved_for_pod(claim: Mapping[str, Any], pod_uid: str) -> bool:
    """``resourceclaim.IsReservedForPod``."""
    return any(r.get("uid") == pod_uid for r in (claim.get("status") or {}).get("reservedFor") or [])


def controlled_by(claim: Mapping[str, Any], owner_uid: str) -> bool:
    """``metav1.IsControlledBy``: the claim's controller ownerReference names this uid."""
    refs: Iterable[Mapping[str, Any]] = (claim.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("uid") == owner_uid for ref in refs)
