"""Namespace deletion (kss_sim/controllers/namespace.py with the store's namespace registry rules) over an in-memory
store on a clock the tests move: a client's delete marks the namespace Terminating (a second one is a 409, new
content a 403), its content is deleted as a client would (a bound pod gracefully, so it stays Terminating while no
kubelet ends it), the deletion conditions say what remains, and the namespace goes once it is empty; with the
simulated kubelet the pods end after their grace period and the namespace follows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict, Invalid, NamespaceTerminating
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


def test_a_plain_update_keeps_spec_finalizers_and_finalize_changes_them_alone(store: ClusterStore) -> None:
    team = store.get("Namespace", None, "team")
    assert team is not None and team["spec"]["finalizers"] == ["kubernetes"]
    team["metadata"]["labels"]["tier"] = "gold"
    updated = store.update("Namespace", {**team, "spec": {"finalizers": ["example.com/hold"]}})
    # namespaceStrategy.PrepareForUpdate: the finalizers are the stored ones; the labels did change.
    assert updated["spec"]["finalizers"] == ["kubernetes"] and updated["metadata"]["labels"]["tier"] == "gold"
    finalized = store.update(
        "Namespace",
        {**updated, "spec": {"finalizers": ["kubernetes", "example.com/hold"]}, "status": {"phase": "Terminating"}},
        subresource="finalize",
    )
    # The finalize strategy: spec.finalizers change, the status does not.
    assert finalized["spec"]["finalizers"] == ["kubernetes", "example.com/hold"]
    assert finalized["status"] == {"phase": "Active"}
    with pytest.raises(Invalid) as bad:
        store.update("Namespace", {**finalized, "spec": {"finalizers": ["hold"]}}, subresource="finalize")
    assert 'spec.finalizers[0]: Invalid value: "hold": name is neither a standard finalizer name nor is it fully ' \
        "qualified" in bad.value.message  # fmt: skip


def test_a_new_namespace_always_gets_the_kubernetes_finalizer(store: ClusterStore) -> None:
    created = store.create("Namespace", {"metadata": {"name": "held"}, "spec": {"finalizers": ["example.com/x"]}})
    assert created["spec"]["finalizers"] == ["example.com/x", "kubernetes"]
    with pytest.raises(Invalid) as bad:
        store.create("Namespace", {"metadata": {"name": "odd"}, "spec": {"finalizers": ["hold"]}})
    assert 'spec.finalizers: Invalid value: "hold"' in bad.value.message


def test_a_terminating_namespace_goes_when_finalize_empties_its_finalizers_not_on_a_plain_update(
    store: ClusterStore,
) -> None:
    store.delete("Namespace", None, "team", options=CLIENT)
    team = store.get("Namespace", None, "team")
    assert team is not None
    store.update("Namespace", {**team, "spec": {"finalizers": []}})
    team = store.get("Namespace", None, "team")
    assert team is not None and team["spec"]["finalizers"] == ["kubernetes"]
    store.update("Namespace", {**team, "spec": {"finalizers": []}}, subresource="finalize")
    assert store.get("Namespace", None, "team") is None


RAY_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "rayclusters.ray.example.com"},
    "spec": {
        "group": "ray.example.com",
        "names": {"kind": "RayCluster", "plural": "rayclusters"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}
RAY = "RayCluster.ray.example.com"


def ray(name: str, finalizers: list[str] | None = None) -> Obj:
    body: Obj = {"apiVersion": "ray.example.com/v1", "kind": "RayCluster", "metadata": {"name": name}}
    if finalizers:
        body["metadata"]["finalizers"] = finalizers
    return body


def test_custom_objects_are_deleted_by_the_controller_and_their_finalizers_hold_the_namespace(
    store: ClusterStore, namespaces: NamespaceController, clock: FakeClock
) -> None:
    store.create("CustomResourceDefinition", RAY_CRD)
    store.create(RAY, ray("plain"), "team")
    store.create(RAY, ray("held", ["example.com/hold"]), "team")
    store.delete("Namespace", None, "team", options=CLIENT)
    assert namespaces.wait_idle()
    (held,) = store.list(RAY, "team")[0]
    assert held["metadata"]["name"] == "held" and held["metadata"]["deletionTimestamp"]
    got = conditions(store)
    assert got["NamespaceContentRemaining"] == (
        "True",
        "SomeResourcesRemain",
        "Some resources are remaining: rayclusters.ray.example.com has 1 resource instances",
    )
    assert got["NamespaceFinalizersRemaining"] == (
        "True",
        "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
    )
    assert store.get("Namespace", None, "team") is not None  # Terminating while the finalizer holds
    store.patch(RAY, "team", "held", {"metadata": {"finalizers": None}})
    assert store.list(RAY, "team")[0] == []
    clock.advance(8)  # half the 15 s finalizer estimate, and one
    namespaces.poke()
    assert namespaces.wait_idle()
    assert store.get("Namespace", None, "team") is None
