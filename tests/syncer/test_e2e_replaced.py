"""End to end: a source pod deleted and made again under the same name while ``kss sync``'s watches were down.

A source ``kss serve`` plays production; the syncer reaches it through a proxy that parks its watches while the
source changes more than its watch window keeps (20 events), so the syncer's watches expire (410) and it lists
again. The relist returns the new pod (a new uid, as a StatefulSet's replacement pod or ``kubectl replace --force``
has) before its end finds the old uid gone: the simulator must end with a copy of the new pod.
"""

from __future__ import annotations

from typing import Any

from syncer.translate import SOURCE_UID_ANNOTATION
from tests.syncer.test_e2e import SELECTED_NODE, Mirror, eventually, mirror, node_body, pod_body  # noqa: F401

HOLD = "example.com/hold"


def _replace_during_a_watch_gap(ends: Mirror, name: str) -> str:
    """Park the syncer's watches, delete ``name`` and create it again in the source (bound to node-b), then make
    the watches' versions expire and let them through; returns the new pod's uid."""
    ends.proxy.hold_watches()
    # Nine kinds and PodGroup, as in test_e2e's forced 410: every watch ends within --watch-timeout and is parked.
    eventually(lambda: ends.proxy.held >= 10, timeout=20, what="all ten watches to be parked")
    ends.src.delete_namespaced_pod(name, "default", grace_period_seconds=0)  # gone at once, as replace --force
    replacement = pod_body(name, node="node-b", labels={"app": "web", "generation": "b"}, owned=False)
    created: Any = ends.src.create_namespaced_pod("default", replacement)
    for i in range(22):  # past the source's watch window: the parked watches' versions are gone
        ends.src.create_namespaced_pod("default", pod_body(f"gap-{i}", owned=False))
    ends.proxy.release_watches()
    eventually(lambda: ends.metric("Pod", "relisted_gone") >= 1, what="a 410 and a re-list")
    return str(created.metadata.uid)


def _start(ends: Mirror, name: str) -> dict[str, Any]:
    for node in ("node-a", "node-b"):
        ends.src.create_node(node_body(node, cpu="64"))
    ends.src.create_namespaced_pod("default", pod_body(name, node="node-a", owned=False))
    ends.start_syncer()
    eventually(ends.in_step, what="the first list to be mirrored")
    old = ends.sim_pods()[name]
    assert old["spec"]["nodeName"] == "node-a", "running in the source at start: arrives bound"
    return old


def _assert_copy_of_the_replacement(ends: Mirror, name: str, new_uid: str, old: dict[str, Any]) -> None:
    eventually(ends.in_step, what="the simulator to be in step after the re-list")
    copy = ends.sim_pods()[name]
    assert copy["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == new_uid
    assert copy["metadata"]["uid"] != old["metadata"]["uid"], "a new object, not the old copy adopted"
    assert copy["metadata"]["labels"].get("generation") == "b"
    # Made while the syncer was not watching: as every pod created while syncing, the simulator's scheduler places it.
    placed = eventually(
        lambda: ends.sim_pods()[name]["metadata"]["annotations"].get(SELECTED_NODE), what="the simulator to place it"
    )
    assert ends.sim_pods()[name]["spec"]["nodeName"] == placed
    assert ends.proxy.mutating() == [], "the syncer never writes to the source"


def test_pod_replaced_during_a_watch_gap_is_a_copy_of_the_new_pod_after_the_relist(mirror: Mirror) -> None:  # noqa: F811
    old = _start(mirror, "web-0")
    new_uid = _replace_during_a_watch_gap(mirror, "web-0")
    _assert_copy_of_the_replacement(mirror, "web-0", new_uid, old)


def test_old_copy_held_by_a_finalizer_is_waited_for_not_adopted(mirror: Mirror) -> None:  # noqa: F811
    old = _start(mirror, "db-0")
    # A finalizer on the simulator's copy (a user's, or a controller's): its deletion only marks it.
    mirror.sim.patch_namespaced_pod("db-0", "default", {"metadata": {"finalizers": [HOLD]}})
    new_uid = _replace_during_a_watch_gap(mirror, "db-0")

    def terminating() -> dict[str, Any] | None:
        pod = mirror.sim_pods().get("db-0")
        return pod if pod and pod["metadata"].get("deletionTimestamp") else None

    eventually(terminating, what="the old copy to be deleted (and held by its finalizer)")
    assert mirror.metric("Pod", "adopted") == 0, "the object being deleted is not adopted as the new pod's copy"
    eventually(lambda: "being deleted" in mirror.syncer_log(), what="the syncer to wait for the name")
    mirror.sim.patch_namespaced_pod("db-0", "default", {"metadata": {"finalizers": None}})
    _assert_copy_of_the_replacement(mirror, "db-0", new_uid, old)
