"""The garbage collector (app/controllers/garbage_collector.py) over an in-memory ClusterStore, with the store's
finalizer-aware deletion (app/cluster/admission/deletion.py): background, foreground (down a chain, held by a blocking
dependent's own finalizer), orphan, dangling references, several owners, and a restart that finds work left."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.garbage_collector import GarbageCollector
from kss_sim.controllers.owned import owner_reference
from kss_sim.kube.objects import Obj
from tests.cluster.factories import pod


def template(app: str) -> Obj:
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def replica_set(name: str, *, owner: Obj | None = None) -> Obj:
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template(name)},
    }
    if owner is not None:
        body["metadata"]["ownerReferences"] = [owner_reference(owner)]
    return body


def deployment(name: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template(name)},
    }


def owned_pod(name: str, *owners: Obj, finalizers: list[str] | None = None) -> Obj:
    body = pod(name)
    body["metadata"]["ownerReferences"] = [owner_reference(o, controller=i == 0) for i, o in enumerate(owners)]
    if finalizers:
        body["metadata"]["finalizers"] = finalizers
    return body


@pytest.fixture
def store() -> ClusterStore:
    return ClusterStore(None)


@pytest.fixture
def gc(store: ClusterStore) -> Iterator[GarbageCollector]:
    collector = GarbageCollector(store)
    collector.start()
    yield collector
    collector.stop()


def settle(gc: GarbageCollector) -> None:
    assert gc.wait_idle(), "the garbage collector did not settle"


def names(store: ClusterStore, kind: str) -> list[str]:
    return [o["metadata"]["name"] for o in store.list(kind, "default")[0]]


def test_background_deletion_removes_dependents_and_keeps_the_other_owners_ones(
    store: ClusterStore, gc: GarbageCollector
) -> None:
    rs = store.create("ReplicaSet", replica_set("web"))
    other = store.create("ReplicaSet", replica_set("other"))
    store.create("Pod", owned_pod("web-1", rs))
    store.create("Pod", owned_pod("shared", rs, other))
    store.create("Pod", pod("loner"))
    settle(gc)
    deleted = store.delete("ReplicaSet", "default", "web")
    assert "deletionTimestamp" not in deleted["metadata"]  # no finalizer: removed at once
    settle(gc)
    assert names(store, "Pod") == ["loner", "shared"]
    shared = store.get("Pod", "default", "shared")
    assert shared is not None
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["other"]


def test_foreground_deletion_waits_for_a_blocking_dependent_then_removes_the_owner(
    store: ClusterStore, gc: GarbageCollector
) -> None:
    rs = store.create("ReplicaSet", replica_set("web"))
    store.create("Pod", owned_pod("web-1", rs))
    store.create("Pod", owned_pod("held", rs, finalizers=["example.com/hold"]))
    settle(gc)
    marked = store.delete("ReplicaSet", "default", "web", options=DeleteOptions(propagation_policy="Foreground"))
    meta = marked["metadata"]
    assert meta["finalizers"] == ["foregroundDeletion"]
    assert meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
    assert meta["generation"] == 2  # markAsDeleting moves the generation once
    settle(gc)
    # The plain pod went; the held one is being deleted and blocks its owner.
    assert names(store, "Pod") == ["held"]
    held = store.get("Pod", "default", "held")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    still = store.get("ReplicaSet", "default", "web")
    assert still is not None and still["metadata"]["finalizers"] == ["foregroundDeletion"]
    # Its last finalizer removed by an update: the API removes the pod, then the collector frees the owner.
    store.patch("Pod", "default", "held", {"metadata": {"finalizers": None}})
    settle(gc)
    assert names(store, "Pod") == []
    assert store.get("ReplicaSet", "default", "web") is None


def test_foreground_goes_down_a_chain(store: ClusterStore, gc: GarbageCollector) -> None:
    deploy = store.create("Deployment", deployment("web"))
    rs = store.create("ReplicaSet", replica_set("web-1", owner=deploy))
    store.create("Pod", owned_pod("web-1-a", rs, finalizers=["example.com/hold"]))
    settle(gc)
    store.delete("Deployment", "default", "web", options=DeleteOptions(propagation_policy="Foreground"))
    settle(gc)
    # The ReplicaSet has dependents of its own, so it was deleted in the foreground too.
    middle = store.get("ReplicaSet", "default", "web-1")
    assert middle is not None and middle["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert store.get("Deployment", "default", "web") is not None
    store.patch("Pod", "default", "web-1-a", {"metadata": {"finalizers": []}})
    settle(gc)
    assert names(store, "Pod") == [] and names(store, "ReplicaSet") == [] and names(store, "Deployment") == []


def test_orphan_deletion_keeps_dependents_without_the_reference(store: ClusterStore, gc: GarbageCollector) -> None:
    rs = store.create("ReplicaSet", replica_set("web"))
    other = store.create("ReplicaSet", replica_set("other"))
    store.create("Pod", owned_pod("web-1", rs))
    store.create("Pod", owned_pod("shared", rs, other))
    settle(gc)
    marked = store.delete("ReplicaSet", "default", "web", options=DeleteOptions(propagation_policy="Orphan"))
    assert marked["metadata"]["finalizers"] == ["orphan"]
    settle(gc)
    assert store.get("ReplicaSet", "default", "web") is None
    assert names(store, "Pod") == ["shared", "web-1"]
    lone = store.get("Pod", "default", "web-1")
    shared = store.get("Pod", "default", "shared")
    assert lone is not None and "ownerReferences" not in lone["metadata"]
    assert shared is not None and [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["other"]


def test_a_dependent_created_with_a_dangling_owner_is_collected(store: ClusterStore, gc: GarbageCollector) -> None:
    rs = store.create("ReplicaSet", replica_set("web"))
    ghost = {**rs, "metadata": {**rs["metadata"], "uid": "not-the-uid"}}
    store.create("Pod", owned_pod("orphaned", ghost))
    store.create("Pod", owned_pod("kept", rs, ghost))
    settle(gc)
    assert names(store, "Pod") == ["kept"]
    kept = store.get("Pod", "default", "kept")
    assert kept is not None and [r["uid"] for r in kept["metadata"]["ownerReferences"]] == [rs["metadata"]["uid"]]


def test_a_restarted_collector_finds_dependents_of_owners_deleted_meanwhile(store: ClusterStore) -> None:
    rs = store.create("ReplicaSet", replica_set("web"))
    store.create("Pod", owned_pod("web-1", rs))
    store.delete("ReplicaSet", "default", "web")  # nobody collects yet
    assert names(store, "Pod") == ["web-1"]
    collector = GarbageCollector(store)
    collector.start()
    try:
        settle(collector)
        assert names(store, "Pod") == []
    finally:
        collector.stop()


def test_an_orphan_finalizer_left_from_before_is_carried_out_at_start(store: ClusterStore) -> None:
    rs = store.create("ReplicaSet", replica_set("web"))
    store.create("Pod", owned_pod("web-1", rs))
    store.delete("ReplicaSet", "default", "web", options=DeleteOptions(propagation_policy="Orphan"))
    assert store.get("ReplicaSet", "default", "web") is not None  # waits for a collector
    collector = GarbageCollector(store)
    collector.start()
    try:
        settle(collector)
        assert store.get("ReplicaSet", "default", "web") is None
        left = store.get("Pod", "default", "web-1")
        assert left is not None and "ownerReferences" not in left["metadata"]
    finally:
        collector.stop()


def test_events_are_not_collected_with_their_owner_as_upstream_ignores_them(store: ClusterStore) -> None:
    rs = store.create("ReplicaSet", replica_set("web"))
    store.create("Pod", owned_pod("web-1", rs))
    event: Obj = {
        "metadata": {"name": "web.1", "namespace": "default", "ownerReferences": [owner_reference(rs)]},
        "involvedObject": {"kind": "ReplicaSet", "namespace": "default", "name": "web"},
        "reason": "Example",
        "message": "an Event naming an owner",
        "type": "Normal",
    }
    store.create("Event", event)
    store.create("Event", {**event, "metadata": {**event["metadata"], "name": "web.2"}})
    collector = GarbageCollector(store)
    collector.start()  # the resync at start does not look at Events either
    try:
        settle(collector)
        store.delete("ReplicaSet", "default", "web")
        settle(collector)
        assert names(store, "Pod") == []
        assert names(store, "Event") == ["web.1", "web.2"]  # upstream's graph builder never watches Events
    finally:
        collector.stop()


def test_a_bound_dependent_pod_is_deleted_gracefully_over_its_own_grace_period(
    store: ClusterStore, gc: GarbageCollector
) -> None:
    """Upstream's deleteObject sends DeleteOptions without a grace period: a running pod terminates (its kubelet
    ends it) rather than vanishing; an unbound one goes at once."""
    rs = store.create("ReplicaSet", replica_set("web"))
    bound = owned_pod("bound", rs)
    bound["spec"].update(nodeName="n1", terminationGracePeriodSeconds=45)
    store.create("Pod", bound)
    store.create("Pod", owned_pod("unbound", rs))
    settle(gc)
    store.delete("ReplicaSet", "default", "web")
    settle(gc)
    assert names(store, "Pod") == ["bound"]
    terminating = store.get("Pod", "default", "bound")
    assert terminating is not None
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 45
    assert terminating["metadata"]["deletionTimestamp"]
