"""The Events a pod's or a node's page lists: those about that object alone (name and kind), newest first."""

from __future__ import annotations

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.web.views.events import events_for
from tests.cluster.factories import node, pod


def test_the_events_about_one_object_newest_first() -> None:
    store = ClusterStore(None)
    p, p1, n = store.create("Pod", pod("p")), store.create("Pod", pod("p1")), store.create("Node", node("p"))
    store.create_event(p, "Scheduled", "to n1")
    store.create_event(p1, "Scheduled", "to n2")
    store.create_event(n, "Ready", "node p is ready", component="kubelet")
    store.create_event(p, "Pulled", "image pulled", component="kubelet")
    assert [e["reason"] for e in events_for(store, "Pod", "default", "p")] == ["Pulled", "Scheduled"]
    assert [e["message"] for e in events_for(store, "Pod", "default", "p1")] == ["to n2"]
    assert [e["reason"] for e in events_for(store, "Node", None, "p")] == ["Ready"]
    assert events_for(store, "Pod", "default", "q") == []
