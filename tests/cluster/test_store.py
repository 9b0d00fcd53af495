"""The in-process ClusterStore: defaulting, admission, versions, listeners, write-through and watch replay."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import Engine

from kss_sim.cluster.errors import AlreadyExists, Conflict, Expired, Forbidden, Invalid, NotFound
from kss_sim.cluster.storage.store import ClusterStore
from tests.cluster.factories import node, objects_of_every_kind, pod


@pytest.fixture
def database_url(backend_url: str) -> str:
    """Every store test runs on SQLite and, when configured, on PostgreSQL."""
    return backend_url


def test_builtin_namespaces_and_priority_classes_exist_from_the_start(store: ClusterStore) -> None:
    names = {ns["metadata"]["name"] for ns in store.list("Namespace")[0]}
    assert {"default", "kube-system"} <= names
    classes = {pc["metadata"]["name"]: pc["value"] for pc in store.list("PriorityClass")[0]}
    assert classes == {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


def test_pod_create_applies_kube_apiserver_defaults(store: ClusterStore) -> None:
    created = store.create("Pod", pod("web", limits={"cpu": "500m", "memory": "1Gi"}))
    spec = created["spec"]
    assert created["metadata"]["namespace"] == "default"
    assert created["metadata"]["uid"] and created["metadata"]["creationTimestamp"]
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["enableServiceLinks"] is True
    assert spec["priority"] == 0 and spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert created["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    assert {t["key"] for t in spec["tolerations"]} == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


def test_host_network_pods_get_host_ports_and_tcp(store: ClusterStore) -> None:
    body = pod("hn", hostNetwork=True)
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 8080}]
    port = store.create("Pod", body)["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}


def test_priority_comes_from_the_class_and_the_global_default(store: ClusterStore) -> None:
    store.create("PriorityClass", {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"})
    high = store.create("Pod", pod("a", priorityClassName="high"))
    assert (high["spec"]["priority"], high["spec"]["preemptionPolicy"]) == (1000, "Never")
    store.create("PriorityClass", {"metadata": {"name": "fallback"}, "value": 7, "globalDefault": True})
    plain = store.create("Pod", pod("b"))
    assert (plain["spec"]["priorityClassName"], plain["spec"]["priority"]) == ("fallback", 7)
    with pytest.raises(Forbidden, match="no PriorityClass with name missing was found"):
        store.create("Pod", pod("c", priorityClassName="missing"))
    with pytest.raises(Forbidden, match="must not be provided in pod spec"):
        store.create("Pod", pod("d", priorityClassName="high", priority=5))


def test_match_label_keys_are_merged_into_selectors(store: ClusterStore) -> None:
    term = {
        "topologyKey": "zone",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["rev"],
        "mismatchLabelKeys": ["team"],
    }
    spread = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["rev", "absent"],
    }
    body = pod(
        "m",
        labels={"app": "web", "rev": "r1", "team": "t"},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        topologySpreadConstraints=[spread],
    )
    created = store.create("Pod", body)
    affinity_selector = created["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]["labelSelector"]
    assert affinity_selector["matchExpressions"] == [
        {"key": "rev", "operator": "In", "values": ["r1"]},
        {"key": "team", "operator": "NotIn", "values": ["t"]},
    ]
    spread_selector = created["spec"]["topologySpreadConstraints"][0]["labelSelector"]
    assert spread_selector["matchExpressions"] == [{"key": "rev", "operator": "In", "values": ["r1"]}]


def test_node_allocatable_defaults_to_capacity_and_node_reports_ready(store: ClusterStore) -> None:
    created = store.create("Node", node("n1", cpu="8"))
    assert created["status"]["allocatable"] == created["status"]["capacity"]
    assert created["status"]["conditions"][0]["type"] == "Ready"


def test_storage_class_and_pvc_defaults(store: ClusterStore) -> None:
    sc = store.create(
        "StorageClass",
        {
            "metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "p",
        },
    )
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    pvc = store.create(
        "PersistentVolumeClaim",
        {
            "metadata": {"name": "c"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )
    assert pvc["spec"]["storageClassName"] == "std"
    assert pvc["status"]["phase"] == "Pending"


def test_a_new_persistent_volume_is_available_as_the_pv_controller_would_make_it(store: ClusterStore) -> None:
    pv = dict(objects_of_every_kind("avail"))["PersistentVolume"]
    pv["status"] = {"phase": "Bound"}  # status is the controller's: ignored on create
    assert store.create("PersistentVolume", pv)["status"] == {"phase": "Available"}


def test_resource_versions_increase_across_kinds(store: ClusterStore) -> None:
    versions = [
        int(store.create(kind, obj)["metadata"]["resourceVersion"]) for kind, obj in objects_of_every_kind("rv")
    ]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert store.resource_version == versions[-1]


def test_update_with_stale_resource_version_conflicts(store: ClusterStore) -> None:
    first = store.create("Node", node("n"))
    fresh = dict(first, metadata={**first["metadata"], "labels": {"a": "1"}})
    store.update("Node", fresh)
    with pytest.raises(Conflict, match="the object has been modified"):
        store.update("Node", first | {"metadata": {**first["metadata"], "labels": {"b": "2"}}})
    assert store.get("Node", None, "n")["metadata"]["labels"] == {"a": "1"}  # type: ignore[index]


def test_bind_pod_sets_node_and_refuses_a_second_binding(store: ClusterStore) -> None:
    store.create("Pod", pod("b"))
    bound = store.bind_pod("default", "b", "node-1")
    assert bound["spec"]["nodeName"] == "node-1"
    assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in bound["status"]["conditions"])
    with pytest.raises(Conflict, match='already assigned to node "node-1"'):
        store.bind_pod("default", "b", "node-2")
    with pytest.raises(Invalid, match=r"spec\.nodeName"):
        store.patch("Pod", "default", "b", {"spec": {"nodeName": "node-2"}})


def test_returned_objects_are_copies(store: ClusterStore) -> None:
    created = store.create("Pod", pod("copy"))
    created["metadata"]["labels"] = {"mutated": "yes"}
    listed, _ = store.list("Pod")
    listed[0]["spec"]["containers"] = []
    stored = store.get("Pod", "default", "copy")
    assert stored is not None and "labels" not in stored["metadata"] and stored["spec"]["containers"]


def test_listeners_hear_every_committed_change_in_order(store: ClusterStore) -> None:
    heard: list[tuple[str, str, str]] = []
    store.add_listener(lambda t, kind, obj: heard.append((t, kind, obj["metadata"]["name"])))
    store.create("Node", node("ln"))
    store.create("Pod", pod("lp"))
    store.bind_pod("default", "lp", "ln")
    with pytest.raises(AlreadyExists):
        store.create("Pod", pod("lp"))
    store.delete("Node", None, "ln")
    assert heard == [
        ("ADDED", "Node", "ln"),
        ("ADDED", "Pod", "lp"),
        ("MODIFIED", "Pod", "lp"),
        ("DELETED", "Pod", "lp"),
        ("DELETED", "Node", "ln"),
    ]


def test_deleting_a_namespace_deletes_its_contents(store: ClusterStore) -> None:
    for kind, obj in objects_of_every_kind("cascade"):
        store.create(kind, obj)
    store.delete("Namespace", None, "ns-cascade")
    for kind in ("Pod", "PersistentVolumeClaim", "Event", "PodDisruptionBudget"):
        assert store.list(kind, "ns-cascade")[0] == []
    assert store.get("Node", None, "node-cascade") is not None
    with pytest.raises(Forbidden):
        store.delete("Namespace", None, "default")


def test_events_since_replays_and_expires(engine: Engine) -> None:
    small = ClusterStore.open(engine, watch_window=10)
    start = small.resource_version
    for i in range(5):
        small.create("Node", node(f"w{i}"))
    assert [e.object["metadata"]["name"] for e in small.events_since(start)] == [f"w{i}" for i in range(5)]
    for i in range(30):
        small.create("Node", node(f"x{i}"))
    with pytest.raises(Expired) as info:
        small.events_since(start)
    assert info.value.code == 410 and info.value.reason == "Expired"


def test_write_through_survives_reopening(engine: Engine, store: ClusterStore) -> None:
    for kind, obj in objects_of_every_kind("durable"):
        store.create(kind, obj)
    store.patch("Node", None, "node-durable", {"spec": {"unschedulable": True}})
    store.delete("PersistentVolume", None, "pv-durable")
    reopened = ClusterStore.open(engine)
    assert reopened.resource_version == store.resource_version
    for kind, _ in objects_of_every_kind("durable"):
        assert reopened.list(kind) == store.list(kind)


def test_rejected_requests_change_nothing(store: ClusterStore) -> None:
    before = store.resource_version
    with pytest.raises(Invalid):
        store.create("Pod", pod("Bad_Name"))
    with pytest.raises(NotFound):
        store.delete("Pod", "default", "nope")
    with pytest.raises(Invalid):
        store.create("Pod", pod("x", namespace="brand-new", restartPolicy="Sometimes"))
    assert store.resource_version == before
    assert store.get("Namespace", None, "brand-new") is None


def test_concurrent_writers_lose_nothing(store: ClusterStore) -> None:
    store.create("Node", node("counter"))

    def bump(worker: int) -> None:
        for _ in range(20):
            while True:
                current = store.get("Node", None, "counter")
                assert current is not None
                labels: dict[str, Any] = current["metadata"].setdefault("annotations", {})
                labels["count"] = str(int(labels.get("count", "0")) + 1)
                try:
                    store.update("Node", current)
                    break
                except Conflict:
                    continue
            store.create("Pod", pod(f"w{worker}-{labels['count']}"))

    threads = [threading.Thread(target=bump, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = store.get("Node", None, "counter")
    assert final is not None and final["metadata"]["annotations"]["count"] == "160"
    assert len(store.list("Pod")[0]) == 160
    versions = [e.resource_version for e in store.events_since(0)]
    assert versions == sorted(set(versions))


@pytest.mark.parametrize(("version", "kept"), [("1.35", False), ("1.36", True)])
def test_a_store_given_a_version_and_no_gates_has_that_versions_gate_defaults(version: str, kept: bool) -> None:
    # DRADeviceTaints is off by default in v1.35 and on in v1.36: a device's taints are dropped only in v1.35.
    store = ClusterStore(None, kube_version=version)
    device = {"name": "gpu-0", "taints": [{"key": "broken", "effect": "NoSchedule"}]}
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "slice"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "resourceSliceCount": 1}},
    }
    body["spec"]["devices"] = [device]
    created = store.create("ResourceSlice", body)
    assert ("taints" in created["spec"]["devices"][0]) is kept
    assert store.feature_gates["DRADeviceTaints"] is kept
