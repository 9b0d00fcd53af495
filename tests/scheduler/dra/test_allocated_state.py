"""The DRA manager's ``gather_allocated_state`` (DRAConsumableCapacity on), kept up to date from claim changes,
against gathering every claim afresh as upstream's ``GatherAllocatedState`` does."""

from __future__ import annotations

import gc
import random
import weakref
from fractions import Fraction
from typing import Any

import pytest

from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import parse_quantity
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.dra import AllocatedState, DeviceID
from kss_sim.scheduler.dra.dra_manager import RESOURCE_CLAIM, DraManager, dra_manager_for

DRIVER = "driver-a"


def claim(name: str, results: list[Obj] | None, version: int = 1) -> Obj:
    obj: Obj = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": str(version)}
    }
    obj["status"] = {} if results is None else {"allocation": {"devices": {"results": results}}}
    return obj


def result(device: str, *, share: str | None = None, consumed: str | None = None, admin: bool = False) -> Obj:
    out: Obj = {"request": "r", "driver": DRIVER, "pool": "pool", "device": device}
    if share is not None:
        out["shareID"] = share
    if consumed is not None:
        out["consumedCapacity"] = {"memory": consumed}
    if admin:
        out["adminAccess"] = True
    return out


def gathered_afresh(manager: DraManager) -> AllocatedState:
    """Every claim's latest version walked, in the listers' order."""
    state = AllocatedState(allocated_devices=set(), allocated_shared_device_ids=set(), aggregated_capacity={})
    for c in manager.list_claims():
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            device = DeviceID(r["driver"], r["pool"], r["device"])
            if r.get("shareID") is None:
                state.allocated_devices.add(device)  # type: ignore[union-attr]
            elif r.get("consumedCapacity") is not None:
                held = state.aggregated_capacity.setdefault(device, {})
                for name, q in r["consumedCapacity"].items():
                    held[name] = held.get(name, Fraction(0)) + parse_quantity(q)
    return state


def assert_same(manager: DraManager) -> None:
    got, want = manager.gather_allocated_state(), gathered_afresh(manager)
    assert set(got.allocated_devices) == set(want.allocated_devices)
    assert got.aggregated_capacity == want.aggregated_capacity


def random_results(rng: random.Random) -> list[Obj] | None:
    if rng.random() < 0.3:
        return None
    results = []
    for _ in range(rng.randint(1, 3)):
        device = f"gpu-{rng.randint(0, 4)}"
        kind = rng.random()
        if kind < 0.4:
            results.append(result(device, admin=rng.random() < 0.2))
        elif kind < 0.9:
            results.append(result(device, share=f"s{rng.randint(0, 99)}", consumed=rng.choice(("0", "1Gi", "4Gi"))))
        else:
            results.append(result(device, share="s"))  # a share without consumedCapacity
    return results


@pytest.mark.parametrize("seed", range(20))
def test_allocated_state_kept_from_claim_changes_equals_gathering_every_claim(seed: int) -> None:
    rng = random.Random(seed)
    cluster = ClusterObjects()
    for i in range(3):
        cluster.put_object(RESOURCE_CLAIM, claim(f"c{i}", random_results(rng)))
    manager = DraManager(cluster)
    assert_same(manager)
    versions: dict[str, int] = {}
    for _ in range(60):
        name = f"c{rng.randint(0, 5)}"
        versions[name] = versions.get(name, 1) + 1
        action = rng.random()
        current: Any = cluster.get_object(RESOURCE_CLAIM, "default", name)
        if action < 0.15 and current is not None:
            cluster.delete_object(RESOURCE_CLAIM, current)
        elif action < 0.3 and current is not None:
            # PreBind's write, assumed before the informer brings it; sometimes restored.
            manager.assume_claim(claim(name, random_results(rng), versions[name]))
            if rng.random() < 0.5:
                manager.restore_claim("default", name)
        else:
            cluster.put_object(RESOURCE_CLAIM, claim(name, random_results(rng), versions[name]))
        assert_same(manager)


def test_a_cluster_is_freed_with_its_dra_manager() -> None:
    # The registry keys managers by cluster; a manager holding its cluster would keep every run's cluster alive.
    cluster = ClusterObjects()
    manager = dra_manager_for(cluster)
    assert dra_manager_for(cluster) is manager
    gone = weakref.ref(cluster)
    del cluster, manager
    gc.collect()
    assert gone() is None
