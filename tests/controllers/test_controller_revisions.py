"""ControllerRevisions of the StatefulSet and DaemonSet controllers over an in-memory ClusterStore: one revision per
distinct template (data, labels, name, owner, number), a rollback reusing the old revision with its number bumped
(the strategic merge patch ``kubectl rollout undo`` sends), ``revisionHistoryLimit``, and pods at the revision."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.daemonset import DaemonSetController
from kss_sim.controllers.garbage_collector import GarbageCollector
from kss_sim.controllers.statefulset import StatefulSetController
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node
from tests.controllers import test_daemonset as ds_helpers
from tests.controllers import test_statefulset as sts_helpers
from tests.controllers.test_statefulset import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(clock: Clock) -> ClusterStore:
    return ClusterStore(None, clock=clock)


@pytest.fixture
def sts_controller(mem: ClusterStore, clock: Clock) -> Iterator[StatefulSetController]:
    c = StatefulSetController(mem, clock=clock)
    yield c
    c.stop()


@pytest.fixture
def ds_controller(mem: ClusterStore, clock: Clock) -> Iterator[DaemonSetController]:
    c = DaemonSetController(mem, clock=clock)
    yield c
    c.stop()


def revisions(store: ClusterStore) -> list[Obj]:
    """The namespace's ControllerRevisions, by revision number."""
    items, _ = store.list("ControllerRevision", "default")
    return sorted(items, key=lambda r: int(r["revision"]))


def numbered(store: ClusterStore) -> list[tuple[int, str]]:
    return [(int(r["revision"]), r["metadata"]["name"]) for r in revisions(store)]


def undo(store: ClusterStore, kind: str, name: str, revision: Obj) -> None:
    """What ``kubectl rollout undo`` sends: the revision's data as a strategic merge patch."""
    store.patch(kind, "default", name, revision["data"], "strategic")


def _sts_rollout(mem: ClusterStore, c: StatefulSetController, clock: Clock) -> None:
    sts_helpers.ready_until_stable(mem, c, clock)
    status = sts_helpers.sts_status(mem)
    assert status["currentRevision"] == status["updateRevision"] and status["updatedReplicas"] == 2


def test_statefulset_keeps_a_revision_per_template_and_its_pods_carry_its_name(
    mem: ClusterStore, sts_controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", sts_helpers.statefulset(replicas=2))
    sts_controller.start()
    _sts_rollout(mem, sts_controller, clock)
    sts = mem.get("StatefulSet", "default", "web")
    assert sts is not None
    (first,) = revisions(mem)
    name = first["metadata"]["name"]
    assert first["revision"] == 1 and sts["status"]["updateRevision"] == name
    assert name == f"web-{first['metadata']['labels']['controller-revision-hash']}"
    assert first["metadata"]["labels"]["app"] == "web"  # the template's labels
    owner = first["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("StatefulSet", sts["metadata"]["uid"], True)
    template = first["data"]["spec"]["template"]
    assert template["$patch"] == "replace" and template["spec"] == sts["spec"]["template"]["spec"]
    assert list(first["data"]) == ["spec"] and list(first["data"]["spec"]) == ["template"]
    assert {sts_helpers.pod(mem, n)["metadata"]["labels"]["controller-revision-hash"] for n in ["web-0", "web-1"]} == {
        name
    }

    sts_helpers.set_image(mem, "img:2")
    _sts_rollout(mem, sts_controller, clock)
    assert [n for n, _ in numbered(mem)] == [1, 2]
    second = revisions(mem)[1]
    assert sts_helpers.sts_status(mem)["currentRevision"] == second["metadata"]["name"]
    assert second["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "img:2"


def test_statefulset_undo_reuses_the_old_revision_with_its_number_bumped(
    mem: ClusterStore, sts_controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", sts_helpers.statefulset(replicas=2))
    sts_controller.start()
    _sts_rollout(mem, sts_controller, clock)
    sts_helpers.set_image(mem, "img:2")
    _sts_rollout(mem, sts_controller, clock)
    first, second = revisions(mem)

    undo(mem, "StatefulSet", "web", first)
    _sts_rollout(mem, sts_controller, clock)
    assert numbered(mem) == [(2, second["metadata"]["name"]), (3, first["metadata"]["name"])]
    status = sts_helpers.sts_status(mem)
    assert status["updateRevision"] == status["currentRevision"] == first["metadata"]["name"]
    for name in ["web-0", "web-1"]:
        pod = sts_helpers.pod(mem, name)
        assert pod["metadata"]["labels"]["controller-revision-hash"] == first["metadata"]["name"]
        assert pod["spec"]["containers"][0]["image"] == "img:1"


def test_statefulset_history_beyond_the_limit_goes_oldest_first(
    mem: ClusterStore, sts_controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", sts_helpers.statefulset(replicas=2, spec={"revisionHistoryLimit": 1}))
    sts_controller.start()
    _sts_rollout(mem, sts_controller, clock)
    for image in ["img:2", "img:3", "img:4"]:
        sts_helpers.set_image(mem, image)
        _sts_rollout(mem, sts_controller, clock)
    # The live revision (current = update) and one more.
    assert [n for n, _ in numbered(mem)] == [3, 4]


def test_statefulset_partition_makes_pods_below_it_from_the_current_revision_after_a_restart(
    mem: ClusterStore, sts_controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", sts_helpers.statefulset(replicas=2))
    sts_controller.start()
    _sts_rollout(mem, sts_controller, clock)
    strategy = {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}}
    mem.patch("StatefulSet", "default", "web", {"spec": strategy}, "merge")
    sts_helpers.set_image(mem, "img:2")
    sts_helpers.ready_until_stable(mem, sts_controller, clock)
    sts_controller.stop()
    mem.delete("Pod", "default", "web-0")  # the new controller remakes it from the current revision's template

    again = StatefulSetController(mem, clock=clock)
    again.start()
    try:
        sts_helpers.ready_until_stable(mem, again, clock)
    finally:
        again.stop()
    assert sts_helpers.pod(mem, "web-0")["spec"]["containers"][0]["image"] == "img:1"
    assert sts_helpers.pod(mem, "web-1")["spec"]["containers"][0]["image"] == "img:2"
    assert len(revisions(mem)) == 2


def _ds_setup(mem: ClusterStore, c: DaemonSetController, clock: Clock, **spec: object) -> None:
    for i in range(2):
        mem.create("Node", node(f"n{i}"))
    mem.create("DaemonSet", ds_helpers.daemonset(spec=dict(spec)))
    c.start()
    ds_helpers._roll(mem, c, clock, 2)


def _ds_image(mem: ClusterStore, image: str) -> None:
    containers = [{"name": "agent", "image": image}]
    mem.patch("DaemonSet", "default", "agent", {"spec": {"template": {"spec": {"containers": containers}}}}, "merge")


def test_daemonset_revisions_label_its_pods_and_undo_brings_the_old_hash_back(
    mem: ClusterStore, ds_controller: DaemonSetController, clock: Clock
) -> None:
    _ds_setup(mem, ds_controller, clock)
    (first,) = revisions(mem)
    first_hash = first["metadata"]["labels"]["controller-revision-hash"]
    assert first["metadata"]["name"] == f"agent-{first_hash}" and first["revision"] == 1
    assert first["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in ds_helpers.daemon_pods(mem)} == {first_hash}

    clock.now += timedelta(seconds=1)
    _ds_image(mem, "agent:2")
    ds_helpers._roll(mem, ds_controller, clock, 2)
    assert [n for n, _ in numbered(mem)] == [1, 2]

    undo(mem, "DaemonSet", "agent", first)
    ds_helpers._roll(mem, ds_controller, clock, 2)
    assert [(n, name) for n, name in numbered(mem)][1] == (3, first["metadata"]["name"])
    assert len(revisions(mem)) == 2
    pods = ds_helpers.daemon_pods(mem)
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {first_hash}
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"agent:1"}


def test_daemonset_history_beyond_the_limit_goes_oldest_first(
    mem: ClusterStore, ds_controller: DaemonSetController, clock: Clock
) -> None:
    _ds_setup(mem, ds_controller, clock, revisionHistoryLimit=1)
    for image in ["agent:2", "agent:3", "agent:4"]:
        clock.now += timedelta(seconds=1)
        _ds_image(mem, image)
        ds_helpers._roll(mem, ds_controller, clock, 2)
    assert [n for n, _ in numbered(mem)] == [3, 4]


def test_statefulset_and_daemonset_deletes_of_bound_pods_are_graceful(
    mem: ClusterStore, sts_controller: StatefulSetController, ds_controller: DaemonSetController, clock: Clock
) -> None:
    mem.create("Node", node("n0"))
    mem.create("StatefulSet", sts_helpers.statefulset(replicas=2, claims=False))
    mem.create("DaemonSet", ds_helpers.daemonset())
    sts_controller.start()
    ds_controller.start()
    sts_helpers.ready_until_stable(mem, sts_controller, clock)
    sts_helpers.settle(sts_controller)
    ds_helpers.settle(ds_controller)
    (agent,) = ds_helpers.daemon_pods(mem)
    for pod_name in ("web-0", "web-1", agent["metadata"]["name"]):
        mem.bind_pod("default", pod_name, "n0")

    mem.patch("StatefulSet", "default", "web", {"spec": {"replicas": 1}}, "merge")
    mem.patch("Node", None, "n0", {"spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}}, "merge")
    sts_helpers.settle(sts_controller)
    ds_helpers.settle(ds_controller)
    for pod_name in ("web-1", agent["metadata"]["name"]):
        terminating = mem.get("Pod", "default", pod_name)
        assert terminating is not None, pod_name  # a kubelet removes it at the end of its grace period
        assert (
            terminating["metadata"]["deletionTimestamp"] and terminating["metadata"]["deletionGracePeriodSeconds"] == 30
        )


def test_deleting_a_statefulset_takes_its_revisions_with_it(
    mem: ClusterStore, sts_controller: StatefulSetController, clock: Clock
) -> None:
    collector = GarbageCollector(mem, clock=clock)
    mem.create("StatefulSet", sts_helpers.statefulset(replicas=1, claims=False))
    sts_controller.start()
    collector.start()
    try:
        sts_helpers.ready_until_stable(mem, sts_controller, clock)
        assert len(revisions(mem)) == 1
        mem.delete("StatefulSet", "default", "web")
        assert collector.wait_idle()
        assert revisions(mem) == []
    finally:
        collector.stop()
