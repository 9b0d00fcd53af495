"""The scheduler in ``kss serve`` keeps the store's own read-only dicts (its listener is added with ``copy=False``):
its cache, its listers (``ClusterObjects``) and the pods it queues hold the very objects the store published. So
nothing on the scheduler's side (the engine, every in-tree plugin, the host's writes) may change a dict it was
handed: a change would be a change of the stored version, seen by every reader and watch.

Each run below records, as every version is published, the object and its JSON at that moment (a second listener,
``copy=False`` too), drives the scheduler through one family of outcomes, and checks at the end that every version
still serialises to the same JSON: binding and the kubelet's status writes, an unschedulable pod, preemption (victims
deleted, a nomination), pending pods updated, nodes updated and deleted, pods deleted, static and dynamically
provisioned volumes (VolumeBinding's PreBind), DRA claims (allocation, reservation, deallocation), a Workload gang
(held, then bound together) and PodTopologySpread / InterPodAffinity over the shared pods."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import orjson
import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.kubelet import KubeletController
from kss_sim.engine_host.scheduler_thread import SchedulerService
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import kube_version
from tests.scheduler.factories import make_node, make_pod

GATES = {"GenericWorkload": True, "GangScheduling": True}


class PublishedVersions:
    """Every version the store publishes, with its JSON as published (the listener runs in the committer)."""

    def __init__(self, store: ClusterStore) -> None:
        self.seen: list[tuple[str, str, Obj, bytes]] = []
        store.add_listener(self._on_change, copy=False)

    def _on_change(self, event_type: str, kind: str, obj: Obj) -> None:
        self.seen.append((kind, str((obj.get("metadata") or {}).get("name")), obj, orjson.dumps(obj)))

    def changed(self) -> list[str]:
        """The versions whose dict no longer serialises to what it was published as."""
        return [f"{kind} {name}" for kind, name, obj, raw in self.seen if orjson.dumps(obj) != raw]


Cluster = tuple[ClusterStore, PublishedVersions, Callable[[], None]]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A store with the gang gates on, its published versions recorded, a scheduler and the kubelet; the third
    value waits until both are idle."""
    yield from _cluster(None)


@pytest.fixture
def cluster_v1_35() -> Iterator[Cluster]:
    """The same at v1.35, for its Workload (scheduling.k8s.io/v1alpha1) and pods' spec.workloadRef."""
    yield from _cluster("1.35")


def _cluster(version: str | None) -> Iterator[Cluster]:
    gates = kube_version(version).effective_gates(GATES)
    store = ClusterStore(None, feature_gates=gates, kube_version=version)
    versions = PublishedVersions(store)
    scheduler = SchedulerService(store, seed=1, feature_gates=gates, kube_version=kube_version(version))
    kubelet = KubeletController(store)
    scheduler.start()
    kubelet.start()

    def settle() -> None:
        assert scheduler.wait_idle(20.0) and kubelet.wait_idle(20.0)
        store.flush()

    try:
        yield store, versions, settle
    finally:
        kubelet.stop()
        scheduler.stop()


def _placed(store: ClusterStore) -> dict[str, tuple[str | None, str | None]]:
    pods, _ = store.list("Pod", "default")
    return {
        p["metadata"]["name"]: (p["spec"].get("nodeName"), (p.get("status") or {}).get("nominatedNodeName"))
        for p in pods
    }


def _wait_bound(store: ClusterStore, names: list[str], timeout: float = 20.0) -> dict[str, str | None]:
    deadline = time.monotonic() + timeout
    while True:
        placed = {name: node for name, (node, _) in _placed(store).items() if name in names}
        if all(placed.get(name) for name in names) or time.monotonic() > deadline:
            return placed
        time.sleep(0.05)


def test_binding_preemption_updates_and_deletions_leave_the_shared_objects_unchanged(
    cluster: tuple[ClusterStore, PublishedVersions, Callable[[], None]],
) -> None:
    store, versions, settle = cluster
    for priority_class, value in (("low", 10), ("high", 1000)):
        store.create("PriorityClass", {"metadata": {"name": priority_class}, "value": value})
    for name in ("n1", "n2"):
        node = make_node(name=name, labels={"topology.kubernetes.io/zone": f"z-{name}"})
        node["status"]["allocatable"] = node["status"]["capacity"] = {"cpu": "2", "memory": "4Gi", "pods": "10"}
        store.create("Node", node)
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "low"}},
            }
        ],
        "priorityClassName": "low",
        "terminationGracePeriodSeconds": 0,  # victims go at once, not after a grace period on the wall clock
    }
    for i in range(4):
        store.create("Pod", make_pod(name=f"low-{i}", labels={"app": "low"}, requests={"cpu": "900m"}, spec=spread))
    store.create("Pod", make_pod(name="huge", requests={"cpu": "16"}), "default")
    settle()
    # A pending pod's labels change (queue update); a node is relabelled.
    store.patch("Pod", "default", "huge", {"metadata": {"labels": {"tier": "x"}}})
    store.patch("Node", None, "n2", {"metadata": {"labels": {"disk": "ssd"}}})
    settle()
    # Preemption: a high-priority pod with required anti-affinity to nothing that runs, room only after victims go.
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "nothing"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    vip = make_pod(name="vip", requests={"cpu": "1500m"}, affinity=anti, spec={"priorityClassName": "high"})
    store.create("Pod", vip, "default")
    settle()
    placed = _placed(store)
    assert placed["huge"] == (None, None)
    assert placed["vip"][0] or placed["vip"][1]
    assert len([n for n, (node, _) in placed.items() if n.startswith("low-") and node]) == 2
    # Deletions: a bound pod, the unschedulable one, a node with its pods.
    store.delete("Pod", "default", "huge")
    bound = next(n for n, (node, _) in _placed(store).items() if n.startswith("low-") and node)
    store.delete("Pod", "default", bound)
    store.create("Pod", make_pod(name="late", requests={"cpu": "100m"}), "default")
    settle()
    store.delete("Node", None, "n1")
    settle()
    assert versions.seen and versions.changed() == []


def test_volume_binding_and_provisioning_leave_the_shared_objects_unchanged(
    cluster: tuple[ClusterStore, PublishedVersions, Callable[[], None]],
) -> None:
    store, versions, settle = cluster
    for name in ("n1", "n2"):
        store.create("Node", make_node(name=name))
    store.create(
        "StorageClass",
        {
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )
    store.create(
        "StorageClass",
        {"metadata": {"name": "fast"}, "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"},
    )
    on_n2 = {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}
            ]
        }
    }
    store.create(
        "PersistentVolume",
        {
            "metadata": {"name": "pv-1"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "local": {"path": "/data"},
                "nodeAffinity": on_n2,
            },
        },
    )
    for claim, storage_class in (("static", "local"), ("dynamic", "fast")):
        store.create(
            "PersistentVolumeClaim",
            {
                "metadata": {"name": claim, "namespace": "default"},
                "spec": {
                    "storageClassName": storage_class,
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "5Gi"}},
                },
            },
        )
        volume = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]
        store.create("Pod", make_pod(name=f"with-{claim}", spec={"volumes": volume}), "default")
    placed = _wait_bound(store, ["with-static", "with-dynamic"])
    settle()
    assert placed["with-static"] == "n2" and placed["with-dynamic"]
    provisioned = store.get("PersistentVolumeClaim", "default", "dynamic")
    assert provisioned is not None and provisioned["spec"].get("volumeName")
    assert versions.changed() == []


def _slice(node: str, models: list[str]) -> Obj:
    return {
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": m}}} for i, m in enumerate(models)],
        },
    }


def _claim(name: str, model: str) -> Obj:
    selector = {"cel": {"expression": f'device.attributes["gpu.example.com"].model == "{model}"'}}
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "selectors": [selector]}}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {"requests": [request]}}}


def _claiming_pod(name: str, claim: str) -> Obj:
    pod = make_pod(name=name)
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    return pod


def test_dra_claims_allocated_reserved_and_released_leave_the_shared_objects_unchanged(
    cluster: tuple[ClusterStore, PublishedVersions, Callable[[], None]],
) -> None:
    store, versions, settle = cluster
    for name in ("n1", "n2"):
        store.create("Node", make_node(name=name))
    store.create("DeviceClass", {"metadata": {"name": "gpu.example.com"}, "spec": {}})
    store.create("ResourceSlice", _slice("n1", ["t4"]))
    store.create("ResourceSlice", _slice("n2", ["a100"]))
    store.create("ResourceClaim", _claim("a100", "a100"))
    store.create("ResourceClaim", _claim("h100", "h100"))
    store.create("Pod", _claiming_pod("trainer", "a100"), "default")
    store.create("Pod", _claiming_pod("waiting", "h100"), "default")
    assert _wait_bound(store, ["trainer"])["trainer"] == "n2"
    settle()
    claim = store.get("ResourceClaim", "default", "a100")
    assert claim is not None and claim["status"]["reservedFor"][0]["name"] == "trainer"
    # The claim's pod goes: a second pod takes the claim over.
    store.delete("Pod", "default", "trainer")
    store.create("Pod", _claiming_pod("second", "a100"), "default")
    settle()
    assert versions.changed() == []


def test_a_workload_gang_held_then_bound_leaves_the_shared_objects_unchanged(
    cluster_v1_35: Cluster,
) -> None:
    store, versions, settle = cluster_v1_35
    for i in range(3):
        store.create("Node", make_node(name=f"n{i}", allocatable={"cpu": "1"}))
    members = [f"w{i}" for i in range(3)]
    ref = {"workloadRef": {"name": "train", "podGroup": "workers"}}
    for name in members[:2]:
        store.create("Pod", make_pod(name=name, requests={"cpu": "500m"}, spec=ref), "default")
    settle()
    store.create(
        "Workload",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 3}}}]},
        },
    )
    store.create("Pod", make_pod(name="w2", requests={"cpu": "500m"}, spec=ref), "default")
    placed = _wait_bound(store, members)
    settle()
    assert len({placed[name] for name in members}) == 3
    assert versions.changed() == []


def test_the_check_sees_a_change_made_to_a_shared_object() -> None:
    # Not vacuous: a listener that writes into what it is handed shows up.
    store = ClusterStore(None)
    versions = PublishedVersions(store)
    store.add_listener(lambda _t, _k, obj: obj["metadata"].setdefault("labels", {}).update(x="y"), copy=False)
    store.create("Node", make_node(name="n1"))
    store.flush()
    assert versions.changed() == ["Node n1"]
