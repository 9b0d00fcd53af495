"""Namespace deletion (kss_sim/controllers/namespace.py with the store's namespace registry rules) over an in-memory
store on a clock the tests move: a client's delete marks the namespace Terminating (a second one is a 409, new
content a 403), its content is deleted as a client would (a bound pod gracefully, so it stays Terminating while no
kubelet ends it), the deletion conditions say what remains, and the namespace goes once it is empty; with the
simulated kubelet the pods end after their grace period and the namespace follows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict, NamespaceTerminating
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.kubelet import KubeletController
from kss_sim.controllers.namespace import NamespaceController
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node, pod
from tests.controllers.workloads import FakeClock, deployment

CLIENT = DeleteOptions(graceful=True)  # what an API DELETE carries


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    store.create("Node", node("n1"))
    store.create("Namespace", {"metadata": {"name": "team"}})
    return store


@pytest.fixture
def namespaces(store: ClusterStore, clock: FakeClock) -> Iterator[NamespaceController]:
    loop = NamespaceController(store, clock=clock)
    loop.start()
    yield loop
    loop.stop()


def conditions(store: ClusterStore) -> dict[str, tuple[str, str, str]]:
    got = store.get("Namespace", None, "team")
    assert got is not None
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in got["status"].get("conditions") or []}


def bound_pod(name: str, grace: int) -> Obj:
    return pod(name, namespace="team", node_name="n1", terminationGracePeriodSeconds=grace)


def test_without_a_kubelet_the_namespace_waits_for_its_terminating_pods(
    store: ClusterStore, namespaces: NamespaceController
) -> None:
    store.create("Pod", bound_pod("web", 30))
    store.create("Deployment", deployment("api", 1, {"app": "api"}, namespace="team"))
    store.create("ConfigMap", {"metadata": {"name": "settings", "namespace": "team"}})
    marked = store.delete("Namespace", None, "team", options=CLIENT)
    assert marked["status"]["phase"] == "Terminating" and marked["metadata"]["deletionTimestamp"]
    with pytest.raises(Conflict) as again:
        store.delete("Namespace", None, "team", options=CLIENT)
    assert again.value.message.endswith(
        "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will "
        "automatically be purged by the system."
    )
    assert namespaces.wait_idle()
    assert store.list("ConfigMap", "team")[0] == [] and store.list("Deployment", "team")[0] == []
    (web,) = store.list("Pod", "team")[0]
    assert web["metadata"]["deletionGracePeriodSeconds"] == 30  # deleted gracefully, as a client would
    assert conditions(store) == {
        "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered", "All resources successfully discovered"),
        "NamespaceDeletionGroupVersionParsingFailure": (
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure": (
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        "NamespaceContentRemaining": (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: pods has 1 resource instances",
        ),
        "NamespaceFinalizersRemaining": (
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
    }
    with pytest.raises(NamespaceTerminating) as refused:
        store.create("ConfigMap", {"metadata": {"name": "late", "namespace": "team"}})
    assert refused.value.code == 403
    assert refused.value.message == (
        'configmaps "late" is forbidden: unable to create new content in namespace team because it is being terminated'
    )
    assert (refused.value.details or {})["causes"][0]["reason"] == "NamespaceTerminating"

    # Force-deleted (no kubelet will end it): the namespace is emptied and goes.
    store.delete("Pod", "team", "web", options=DeleteOptions(grace_period_seconds=0, graceful=True))
    assert namespaces.wait_idle()
    assert store.get("Namespace", None, "team") is None
    store.create("ConfigMap", {"metadata": {"name": "later", "namespace": "team"}})  # a new namespace, Active
    again_ns = store.get("Namespace", None, "team")
    assert again_ns is not None and again_ns["status"]["phase"] == "Active"


def test_with_the_kubelet_the_pods_end_after_their_grace_period_and_the_namespace_follows(
    store: ClusterStore, namespaces: NamespaceController, clock: FakeClock
) -> None:
    kubelet = KubeletController(store, clock=clock)
    kubelet.start()
    try:
        store.create("Pod", bound_pod("slow", 20))
        store.create("Pod", bound_pod("quick", 5))
        assert kubelet.wait_idle()
        store.delete("Namespace", None, "team", options=CLIENT)
        assert namespaces.wait_idle() and kubelet.wait_idle()
        assert sorted(p["metadata"]["name"] for p in store.list("Pod", "team")[0]) == ["quick", "slow"]
        clock.advance(6)
        kubelet.poke()
        assert kubelet.wait_idle() and namespaces.wait_idle()
        assert [p["metadata"]["name"] for p in store.list("Pod", "team")[0]] == ["slow"]
        assert conditions(store)["NamespaceContentRemaining"][2] == (
            "Some resources are remaining: pods has 1 resource instances"
        )
        clock.advance(15)
        kubelet.poke()
        assert kubelet.wait_idle() and namespaces.wait_idle()
        assert store.get("Namespace", None, "team") is None
    finally:
        kubelet.stop()


def test_the_store_s_own_delete_of_a_namespace_still_takes_everything_at_once(store: ClusterStore) -> None:
    store.create("Pod", bound_pod("web", 30))
    store.delete("Namespace", None, "team")
    assert store.get("Namespace", None, "team") is None and store.list("Pod", "team")[0] == []
