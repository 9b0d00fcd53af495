"""The PV controller (kss_sim/controllers/persistent_volume.py) over an in-memory store: what an external
scheduler's VolumeBinding PreBind starts (a claimRef on a PV, ``selected-node`` on a claim) ends with both sides
bound as kube-controller-manager writes them; Immediate claims take the smallest fitting Available volume; claims
a class provisions get a ``pvc-<uid>`` volume; deleting a bound claim Releases or deletes its volume; and kss's
own scheduler path (kss_sim/engine_host/volumes.py) leaves the same stored objects."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.persistent_volume import PersistentVolumeController
from kss_sim.engine_host import volumes
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node
from tests.controllers.workloads import FakeClock

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


@pytest.fixture
def store() -> ClusterStore:
    store = ClusterStore(None, clock=FakeClock())
    store.ensure_builtins()
    return store


@pytest.fixture
def controller(store: ClusterStore) -> Iterator[PersistentVolumeController]:
    loop = PersistentVolumeController(store)
    loop.start()
    yield loop
    loop.stop()


def settle(loop: PersistentVolumeController) -> None:
    assert loop.wait_idle(), "the controller did not settle"


def storage_class(name: str, *, provisioner: str = "kubernetes.io/no-provisioner", **fields: Any) -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}} | {
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
        **fields,
    }


def volume(
    name: str, size: str, *, cls: str = "local", modes: tuple[str, ...] = ("ReadWriteOnce",), **spec: Any
) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": spec.pop("labels", {})},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(modes),
            "storageClassName": cls,
            "persistentVolumeReclaimPolicy": spec.pop("reclaim", "Retain"),
            "hostPath": {"path": f"/data/{name}"},
            **spec,
        },
    }


def claim(name: str, size: str, *, cls: str = "local", **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": cls,
            **spec,
        },
    }


def pinned_to(node_name: str) -> Obj:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}
            ]
        }
    }


def get(store: ClusterStore, kind: str, name: str) -> Obj:
    obj = store.get(kind, "default" if kind == "PersistentVolumeClaim" else None, name)
    assert obj is not None, f"{kind} {name} is gone"
    return obj


def phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def scheduler_prebinds(store: ClusterStore, pv_name: str, claim_name: str) -> None:
    """VolumeBinding's PreBind for a static volume (``GetBindVolumeToClaim``): claimRef and bound-by-controller."""
    pv, pvc = get(store, "PersistentVolume", pv_name), get(store, "PersistentVolumeClaim", claim_name)
    pv["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": claim_name,
        "uid": pvc["metadata"]["uid"],
        "apiVersion": "v1",
        "resourceVersion": pvc["metadata"]["resourceVersion"],
    }
    pv["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
    store.update("PersistentVolume", pv)


def scheduler_selects_node(store: ClusterStore, claim_name: str, node_name: str) -> None:
    """VolumeBinding's PreBind for a claim to provision: the ``selected-node`` annotation."""
    pvc = get(store, "PersistentVolumeClaim", claim_name)
    pvc["metadata"].setdefault("annotations", {})[SELECTED_NODE] = node_name
    store.update("PersistentVolumeClaim", pvc)


def reasons(store: ClusterStore, name: str) -> list[str]:
    events, _ = store.list("Event", "default")
    return [e["reason"] for e in events if e["involvedObject"]["name"] == name]


def test_a_claimref_set_by_a_scheduler_is_bound_on_both_sides(
    store: ClusterStore, controller: PersistentVolumeController
) -> None:
    store.create("StorageClass", storage_class("local"))
    store.create("PersistentVolume", volume("pv-a", "10Gi", nodeAffinity=pinned_to("node-a")))
    store.create("PersistentVolumeClaim", claim("data", "5Gi"))
    settle(controller)
    # Delayed binding: nothing is bound before a scheduler chooses.
    assert phase(get(store, "PersistentVolumeClaim", "data")) == "Pending"
    assert phase(get(store, "PersistentVolume", "pv-a")) == "Available"
    assert "WaitForFirstConsumer" in reasons(store, "data")

    scheduler_prebinds(store, "pv-a", "data")
    settle(controller)

    pv, pvc = get(store, "PersistentVolume", "pv-a"), get(store, "PersistentVolumeClaim", "data")
    assert phase(pv) == "Bound"
    assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert pv["metadata"]["annotations"] == {BOUND_BY_CONTROLLER: "yes"}
    assert pvc["spec"]["volumeName"] == "pv-a"
    assert pvc["metadata"]["annotations"] == {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
    assert pvc["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}


def test_an_immediate_claim_takes_the_smallest_available_volume_that_fits(
    store: ClusterStore, controller: PersistentVolumeController
) -> None:
    store.create("StorageClass", storage_class("fast", volumeBindingMode="Immediate"))
    store.create("PersistentVolume", volume("too-small", "1Gi", cls="fast"))
    store.create("PersistentVolume", volume("large", "20Gi", cls="fast"))
    store.create("PersistentVolume", volume("fits", "5Gi", cls="fast", labels={"tier": "gold"}))
    store.create("PersistentVolume", volume("other-class", "4Gi", cls="slow"))
    store.create("PersistentVolume", volume("read-only", "4Gi", cls="fast", modes=("ReadOnlyMany",)))
    store.create("PersistentVolume", volume("block", "4Gi", cls="fast", volumeMode="Block"))
    store.create("PersistentVolume", volume("silver", "3Gi", cls="fast", labels={"tier": "silver"}))
    store.create("PersistentVolumeClaim", claim("data", "2Gi", cls="fast", selector={"matchLabels": {"tier": "gold"}}))
    store.create("PersistentVolumeClaim", claim("any", "2Gi", cls="fast"))
    settle(controller)

    assert get(store, "PersistentVolumeClaim", "data")["spec"]["volumeName"] == "fits"
    assert get(store, "PersistentVolumeClaim", "any")["spec"]["volumeName"] == "silver"
    assert phase(get(store, "PersistentVolume", "fits")) == "Bound"
    assert phase(get(store, "PersistentVolume", "large")) == "Available"


def test_an_immediate_claim_waits_until_a_volume_fits(
    store: ClusterStore, controller: PersistentVolumeController
) -> None:
    store.create("StorageClass", storage_class("fast", volumeBindingMode="Immediate"))
    store.create("PersistentVolumeClaim", claim("data", "2Gi", cls="fast"))
    settle(controller)
    assert phase(get(store, "PersistentVolumeClaim", "data")) == "Pending"

    store.create("PersistentVolume", volume("late", "2Gi", cls="fast"))
    settle(controller)
    assert get(store, "PersistentVolumeClaim", "data")["spec"]["volumeName"] == "late"
    assert phase(get(store, "PersistentVolumeClaim", "data")) == "Bound"


def test_a_selected_node_claim_is_provisioned_on_the_nodes_topology(
    store: ClusterStore, controller: PersistentVolumeController
) -> None:
    zone = "topology.kubernetes.io/zone"
    store.create("Node", node("node-a", labels={zone: "zone-1", "kubernetes.io/hostname": "node-a"}))
    store.create(
        "StorageClass",
        storage_class(
            "zonal",
            provisioner="pd.csi.storage.gke.io",
            reclaimPolicy="Retain",
            mountOptions=["noatime"],
            allowedTopologies=[{"matchLabelExpressions": [{"key": zone, "values": ["zone-1", "zone-2"]}]}],
        ),
    )
    store.create("PersistentVolumeClaim", claim("data", "3Gi", cls="zonal"))
    settle(controller)
    assert store.list("PersistentVolume")[0] == []

    scheduler_selects_node(store, "data", "node-a")
    settle(controller)

    pvc = get(store, "PersistentVolumeClaim", "data")
    pv = get(store, "PersistentVolume", f"pvc-{pvc['metadata']['uid']}")
    assert pv["metadata"]["annotations"] == {"pv.kubernetes.io/provisioned-by": "pd.csi.storage.gke.io"}
    assert pv["spec"]["nodeAffinity"] == {
        "required": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": zone, "operator": "In", "values": ["zone-1"]}]}]
        }
    }
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["mountOptions"] == ["noatime"]
    assert pv["spec"]["capacity"] == {"storage": "3Gi"}
    assert pv["spec"]["csi"]["driver"] == "pd.csi.storage.gke.io"
    assert phase(pv) == "Bound"
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pvc["metadata"]["annotations"] == {
        SELECTED_NODE: "node-a",
        "volume.kubernetes.io/storage-provisioner": "pd.csi.storage.gke.io",
        "volume.beta.kubernetes.io/storage-provisioner": "pd.csi.storage.gke.io",
        BIND_COMPLETED: "yes",
        BOUND_BY_CONTROLLER: "yes",
    }
    assert phase(pvc) == "Bound"
    assert {"ExternalProvisioning", "ProvisioningSucceeded"} <= set(reasons(store, "data"))


def test_a_class_without_topologies_provisions_on_the_selected_node_itself(
    store: ClusterStore, controller: PersistentVolumeController
) -> None:
    store.create("Node", node("node-b"))
    store.create("StorageClass", storage_class("local-csi", provisioner="hostpath.csi.k8s.io"))
    store.create("PersistentVolumeClaim", claim("data", "1Gi", cls="local-csi"))
    scheduler_selects_node(store, "data", "node-b")
    settle(controller)

    pvc = get(store, "PersistentVolumeClaim", "data")
    pv = get(store, "PersistentVolume", pvc["spec"]["volumeName"])
    assert pv["spec"]["nodeAffinity"] == pinned_to("node-b")
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"


def test_deleting_a_bound_claim_releases_a_retained_volume_and_deletes_a_provisioned_one(
    store: ClusterStore, controller: PersistentVolumeController
) -> None:
    store.create("Node", node("node-a"))
    store.create("StorageClass", storage_class("local"))
    store.create("StorageClass", storage_class("csi", provisioner="hostpath.csi.k8s.io"))
    store.create("PersistentVolume", volume("kept", "1Gi"))
    store.create("PersistentVolumeClaim", claim("static", "1Gi"))
    store.create("PersistentVolumeClaim", claim("dynamic", "1Gi", cls="csi"))
    scheduler_prebinds(store, "kept", "static")
    scheduler_selects_node(store, "dynamic", "node-a")
    settle(controller)
    provisioned = get(store, "PersistentVolumeClaim", "dynamic")["spec"]["volumeName"]
    assert phase(get(store, "PersistentVolume", provisioned)) == "Bound"

    store.delete("PersistentVolumeClaim", "default", "static")
    store.delete("PersistentVolumeClaim", "default", "dynamic")
    settle(controller)

    assert phase(get(store, "PersistentVolume", "kept")) == "Released"
    assert store.get("PersistentVolume", None, provisioned) is None


def test_a_bound_claim_whose_volume_is_gone_is_lost(
    store: ClusterStore, controller: PersistentVolumeController
) -> None:
    store.create("StorageClass", storage_class("local"))
    store.create("PersistentVolume", volume("pv-a", "1Gi"))
    store.create("PersistentVolumeClaim", claim("data", "1Gi"))
    scheduler_prebinds(store, "pv-a", "data")
    settle(controller)
    store.delete("PersistentVolume", None, "pv-a")
    settle(controller)
    assert phase(get(store, "PersistentVolumeClaim", "data")) == "Lost"
    assert "ClaimLost" in reasons(store, "data")


def _comparable(obj: Obj) -> Obj:
    """An object without what differs between two stores by construction (uids, versions, times, managers)."""
    clone = copy.deepcopy(obj)
    meta = clone["metadata"]
    for field in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        meta.pop(field, None)
    if meta.get("name", "").startswith("pvc-"):
        meta["name"] = "pvc-<uid>"
    spec = clone.get("spec") or {}
    for field in ("uid", "resourceVersion"):
        (spec.get("claimRef") or {}).pop(field, None)
    if str(spec.get("volumeName") or "").startswith("pvc-"):
        spec["volumeName"] = "pvc-<uid>"
    if "csi" in spec:
        spec["csi"]["volumeHandle"] = "pvc-<uid>"
    return clone


def _cluster_for_both_paths(store: ClusterStore) -> None:
    store.create("Node", node("node-a", labels={"kubernetes.io/hostname": "node-a"}))
    store.create("StorageClass", storage_class("local"))
    store.create("StorageClass", storage_class("csi", provisioner="hostpath.csi.k8s.io"))
    store.create("PersistentVolume", volume("pv-a", "10Gi", nodeAffinity=pinned_to("node-a")))
    store.create("PersistentVolumeClaim", claim("static", "5Gi"))
    store.create("PersistentVolumeClaim", claim("dynamic", "2Gi", cls="csi"))


def test_kss_scheduler_and_an_external_one_leave_the_same_stored_volumes() -> None:
    ours = ClusterStore(None, clock=FakeClock())
    ours.ensure_builtins()
    _cluster_for_both_paths(ours)
    # kss's own PreBind: the binder's assumed PV (claimRef, bound-by-controller) and claim, then the controllers' work.
    pv, pvc = get(ours, "PersistentVolume", "pv-a"), get(ours, "PersistentVolumeClaim", "static")
    volumes.bind_pod_volumes(ours, "default", "node-a", [(pv, pvc)], [get(ours, "PersistentVolumeClaim", "dynamic")])

    theirs = ClusterStore(None, clock=FakeClock())
    theirs.ensure_builtins()
    _cluster_for_both_paths(theirs)
    loop = PersistentVolumeController(theirs)
    loop.start()
    try:
        settle(loop)
        scheduler_prebinds(theirs, "pv-a", "static")
        scheduler_selects_node(theirs, "dynamic", "node-a")
        settle(loop)
    finally:
        loop.stop()

    for kind in ("PersistentVolume", "PersistentVolumeClaim"):
        left = sorted((_comparable(o) for o in ours.list(kind)[0]), key=lambda o: o["metadata"]["name"])
        right = sorted((_comparable(o) for o in theirs.list(kind)[0]), key=lambda o: o["metadata"]["name"])
        assert left == right


def test_the_controller_leaves_volumes_kss_scheduler_bound_untouched(store: ClusterStore) -> None:
    _cluster_for_both_paths(store)
    pv, pvc = get(store, "PersistentVolume", "pv-a"), get(store, "PersistentVolumeClaim", "static")
    volumes.bind_pod_volumes(store, "default", "node-a", [(pv, pvc)], [get(store, "PersistentVolumeClaim", "dynamic")])
    before = {
        kind: {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in store.list(kind)[0]}
        for kind in ("PersistentVolume", "PersistentVolumeClaim")
    }
    loop = PersistentVolumeController(store)
    loop.start()
    try:
        settle(loop)
    finally:
        loop.stop()
    after = {
        kind: {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in store.list(kind)[0]}
        for kind in ("PersistentVolume", "PersistentVolumeClaim")
    }
    assert after == before


def test_an_immediate_claim_prefers_a_volume_with_fewer_access_modes_to_a_smaller_one(
    store: ClusterStore, controller: PersistentVolumeController
) -> None:
    # Upstream's access-modes index: the sets of modes are tried fewest first, the smallest volume within one.
    store.create("StorageClass", storage_class("fast", volumeBindingMode="Immediate"))
    store.create("PersistentVolume", volume("small-shared", "5Gi", cls="fast", modes=("ReadWriteOnce", "ReadOnlyMany")))
    store.create("PersistentVolume", volume("larger-exact", "8Gi", cls="fast"))
    store.create("PersistentVolumeClaim", claim("data", "2Gi", cls="fast"))
    settle(controller)
    assert get(store, "PersistentVolumeClaim", "data")["spec"]["volumeName"] == "larger-exact"


class RacingStore:
    """The store, with a write of the PV controller landing on each claim just before kss's PreBind writes it."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.raced: set[str] = set()

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        return self.store.get(kind, namespace, name)

    def create(self, kind: str, obj: Obj, namespace: str | None = None) -> Obj:
        return self.store.create(kind, obj, namespace)

    def update(self, kind: str, obj: Obj, *, subresource: str | None = None) -> Obj:
        name = obj["metadata"]["name"]
        if kind == "PersistentVolumeClaim" and name not in self.raced:
            self.raced.add(name)
            racing = {"status": {"phase": "Pending"}, "metadata": {"annotations": {"raced": "yes"}}}
            self.store.patch(kind, "default", name, racing, "merge")
        return self.store.update(kind, obj, subresource=subresource)


def test_kss_prebind_makes_again_a_write_the_pv_controller_got_in_first(store: ClusterStore) -> None:
    _cluster_for_both_paths(store)
    racing = RacingStore(store)
    pv, pvc = get(store, "PersistentVolume", "pv-a"), get(store, "PersistentVolumeClaim", "static")
    dynamic = get(store, "PersistentVolumeClaim", "dynamic")
    volumes.bind_pod_volumes(racing, "default", "node-a", [(pv, pvc)], [dynamic])
    assert racing.raced == {"static", "dynamic"}
    for name in ("static", "dynamic"):
        bound = get(store, "PersistentVolumeClaim", name)
        assert phase(bound) == "Bound" and bound["metadata"]["annotations"][BIND_COMPLETED] == "yes"


def test_kss_prebind_does_not_take_a_volume_bound_to_another_claim_meanwhile(store: ClusterStore) -> None:
    _cluster_for_both_paths(store)
    pv, pvc = get(store, "PersistentVolume", "pv-a"), get(store, "PersistentVolumeClaim", "static")
    store.create("PersistentVolumeClaim", claim("quicker", "1Gi"))
    scheduler_prebinds(store, "pv-a", "quicker")
    with pytest.raises(LookupError, match="bound to another claim"):
        volumes.bind_pod_volumes(store, "default", "node-a", [(pv, pvc)], [])
    assert get(store, "PersistentVolume", "pv-a")["spec"]["claimRef"]["name"] == "quicker"
