"""The StatefulSet controller (app/controllers/statefulset.py) over an in-memory ClusterStore: ordered creation
and scale-down, Parallel, ordinals.start, claims from volumeClaimTemplates, rolling updates with a partition, the
retention policy's owners, the status, and restarts that change nothing (or pick up a rollout where it was)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.statefulset import StatefulSetController
from kss_sim.kube.objects import Obj


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def statefulset(name: str = "web", replicas: int = 3, *, spec: Obj | None = None, claims: bool = True) -> Obj:
    """A StatefulSet of ``replicas`` selecting ``app=<name>``, serviceName ``<name>``, one claim template ``www``."""
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "img:1", "volumeMounts": [{"name": "www", "mountPath": "/d"}]}
                    ]
                },
            },
        },
    }
    if claims:
        body["spec"]["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "www", "labels": {"tier": "data"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }
        ]
    body["spec"].update(spec or {})
    return body


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(clock: Clock) -> ClusterStore:
    return ClusterStore(None, clock=clock)


@pytest.fixture
def controller(mem: ClusterStore, clock: Clock) -> Iterator[StatefulSetController]:
    c = StatefulSetController(mem, clock=clock)
    yield c
    c.stop()


def settle(c: StatefulSetController) -> None:
    assert c.wait_idle(), "the controller did not settle"


def names(store: ClusterStore, app: str = "web") -> list[str]:
    pods, _ = store.list("Pod", "default", label_selector=f"app={app}")
    return sorted(p["metadata"]["name"] for p in pods)


def pod(store: ClusterStore, name: str) -> Obj:
    body = store.get("Pod", "default", name)
    assert body is not None, name
    return body


def make_ready(store: ClusterStore, name: str, clock: Clock) -> None:
    """What a kubelet would report for a started, ready pod."""
    stamp = clock.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}]}
    store.patch("Pod", "default", name, {"status": status}, "merge", subresource="status")


def make_unready(store: ClusterStore, name: str) -> None:
    status = {"conditions": [{"type": "Ready", "status": "False"}]}
    store.patch("Pod", "default", name, {"status": status}, "merge", subresource="status")


def ready_until_stable(
    store: ClusterStore, c: StatefulSetController, clock: Clock, app: str = "web"
) -> list[list[str]]:
    """Make every pod ready, one settle at a time, until nothing changes; returns the pods seen after each step."""
    seen: list[list[str]] = []
    for _ in range(20):
        settle(c)
        current = names(store, app)
        seen.append(current)
        waiting = [n for n in current if (pod(store, n).get("status") or {}).get("phase") != "Running"]
        if not waiting:
            settle(c)
            if names(store, app) == current:
                return seen
            continue
        for name in waiting:
            make_ready(store, name, clock)
    raise AssertionError(f"never stable: {seen}")


def sts_status(store: ClusterStore, name: str = "web") -> Obj:
    body = store.get("StatefulSet", "default", name)
    assert body is not None
    return dict(body.get("status") or {})


def set_image(store: ClusterStore, image: str, name: str = "web") -> None:
    containers = [{"name": "c", "image": image, "volumeMounts": [{"name": "www", "mountPath": "/d"}]}]
    store.patch("StatefulSet", "default", name, {"spec": {"template": {"spec": {"containers": containers}}}}, "merge")


def deletions(store: ClusterStore) -> list[str]:
    events, _ = store.list("Event", "default")
    ordered = sorted(
        (e for e in events if e["reason"] == "SuccessfulDelete"), key=lambda e: int(e["metadata"]["resourceVersion"])
    )
    return [e["message"].split()[2] for e in ordered]


def test_ordered_ready_creates_each_pod_after_its_predecessors_are_running_and_ready(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", statefulset())
    controller.start()
    settle(controller)
    assert names(mem) == ["web-0"]  # web-1 waits for web-0
    make_ready(mem, "web-0", clock)
    settle(controller)
    assert names(mem) == ["web-0", "web-1"]
    mem.patch("Pod", "default", "web-1", {"status": {"phase": "Running"}}, "merge", subresource="status")
    settle(controller)
    assert names(mem) == ["web-0", "web-1"]  # Running is not enough: Ready too
    make_ready(mem, "web-1", clock)
    settle(controller)
    make_ready(mem, "web-2", clock)
    settle(controller)

    status = sts_status(mem)
    assert status["replicas"] == 3 and status["readyReplicas"] == 3 and status["availableReplicas"] == 3
    assert status["currentReplicas"] == 3 and status["updatedReplicas"] == 3
    assert status["currentRevision"] == status["updateRevision"]
    assert status["updateRevision"].startswith("web-")
    assert status["observedGeneration"] == 1
    web1 = pod(mem, "web-1")
    labels = web1["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "web-1"
    assert labels["apps.kubernetes.io/pod-index"] == "1"
    assert labels["controller-revision-hash"] == status["updateRevision"]
    assert web1["spec"]["hostname"] == "web-1" and web1["spec"]["subdomain"] == "web"
    sts = mem.get("StatefulSet", "default", "web")
    assert sts is not None
    assert web1["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]


def test_claims_from_templates_are_created_before_their_pods_and_mounted(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", statefulset(replicas=2))
    controller.start()
    ready_until_stable(mem, controller, clock)

    claims, _ = mem.list("PersistentVolumeClaim", "default")
    assert sorted(c["metadata"]["name"] for c in claims) == ["www-web-0", "www-web-1"]
    for claim in claims:
        assert claim["metadata"]["labels"] == {"tier": "data", "app": "web"}  # the template's, plus the selector's
        assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"
        assert not claim["metadata"].get("ownerReferences")  # Retain/Retain
        claim_rv = int(claim["metadata"]["resourceVersion"])
        pod_name = claim["metadata"]["name"].removeprefix("www-")
        assert claim_rv < int(pod(mem, pod_name)["metadata"]["resourceVersion"])
    volumes = pod(mem, "web-0")["spec"]["volumes"]
    assert {"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}} in volumes
    events, _ = mem.list("Event", "default")
    assert any(e["message"] == "create Claim www-web-0 Pod web-0 in StatefulSet web success" for e in events)


def test_ordinals_start_names_the_pods_from_it(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", statefulset(replicas=2, spec={"ordinals": {"start": 5}}, claims=False))
    controller.start()
    ready_until_stable(mem, controller, clock)
    assert names(mem) == ["web-5", "web-6"]
    assert pod(mem, "web-6")["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "6"


def test_scale_down_removes_the_highest_ordinal_first_and_waits_for_every_pod_to_be_healthy(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", statefulset(replicas=3, claims=False))
    controller.start()
    ready_until_stable(mem, controller, clock)
    make_unready(mem, "web-0")
    settle(controller)
    mem.patch("StatefulSet", "default", "web", {"spec": {"replicas": 1}}, "merge")
    settle(controller)
    assert names(mem) == ["web-0", "web-1", "web-2"]  # web-0 is not Ready: nothing goes
    make_ready(mem, "web-0", clock)
    settle(controller)
    assert names(mem) == ["web-0"]
    assert deletions(mem) == ["web-2", "web-1"]
    assert sts_status(mem)["replicas"] == 1


def test_parallel_creates_and_deletes_every_pod_at_once(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", statefulset(replicas=3, spec={"podManagementPolicy": "Parallel"}, claims=False))
    controller.start()
    settle(controller)
    assert names(mem) == ["web-0", "web-1", "web-2"]  # none Ready yet
    mem.patch("StatefulSet", "default", "web", {"spec": {"replicas": 0}}, "merge")
    settle(controller)
    assert names(mem) == []
    assert sts_status(mem)["replicas"] == 0


def test_rolling_update_goes_from_the_highest_ordinal_down_to_the_partition(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
    mem.create("StatefulSet", statefulset(replicas=3, spec={"updateStrategy": strategy}))
    controller.start()
    ready_until_stable(mem, controller, clock)
    old_revision = sts_status(mem)["currentRevision"]

    set_image(mem, "img:2")
    ready_until_stable(mem, controller, clock)
    assert deletions(mem) == ["web-2", "web-1"]  # highest first, web-0 below the partition
    images = {n: pod(mem, n)["spec"]["containers"][0]["image"] for n in names(mem)}
    assert images == {"web-0": "img:1", "web-1": "img:2", "web-2": "img:2"}
    status = sts_status(mem)
    assert status["currentRevision"] == old_revision != status["updateRevision"]
    assert status["updatedReplicas"] == 2 and status["currentReplicas"] == 1
    assert pod(mem, "web-1")["metadata"]["labels"]["controller-revision-hash"] == status["updateRevision"]

    # A pod below the partition comes back at the current revision.
    mem.delete("Pod", "default", "web-0")
    ready_until_stable(mem, controller, clock)
    assert pod(mem, "web-0")["spec"]["containers"][0]["image"] == "img:1"
    assert pod(mem, "web-0")["metadata"]["labels"]["controller-revision-hash"] == old_revision

    mem.patch(
        "StatefulSet", "default", "web", {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}, "merge"
    )
    ready_until_stable(mem, controller, clock)
    status = sts_status(mem)
    assert status["currentRevision"] == status["updateRevision"]
    assert status["updatedReplicas"] == 3 and status["currentReplicas"] == 3
    assert all(pod(mem, n)["spec"]["containers"][0]["image"] == "img:2" for n in names(mem))


def test_a_rolling_update_replaces_one_pod_at_a_time(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    mem.create("StatefulSet", statefulset(replicas=3, claims=False))
    controller.start()
    ready_until_stable(mem, controller, clock)
    set_image(mem, "img:2")
    settle(controller)
    assert names(mem) == ["web-0", "web-1", "web-2"]  # web-2 recreated, not Ready
    assert pod(mem, "web-2")["spec"]["containers"][0]["image"] == "img:2"
    assert pod(mem, "web-1")["spec"]["containers"][0]["image"] == "img:1"  # waits for web-2
    assert deletions(mem) == ["web-2"]
    ready_until_stable(mem, controller, clock)
    assert deletions(mem) == ["web-2", "web-1", "web-0"]


def test_retention_policy_delete_sets_the_owners_the_garbage_collector_follows(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    policy = {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Delete"}}
    mem.create("StatefulSet", statefulset(replicas=2, spec=policy))
    controller.start()
    ready_until_stable(mem, controller, clock)
    sts = mem.get("StatefulSet", "default", "web")
    assert sts is not None
    claim = mem.get("PersistentVolumeClaim", "default", "www-web-1")
    assert claim is not None
    (ref,) = claim["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref["controller"]) == ("StatefulSet", sts["metadata"]["uid"], True)

    web1_uid = pod(mem, "web-1")["metadata"]["uid"]
    mem.patch("StatefulSet", "default", "web", {"spec": {"replicas": 1}}, "merge")
    settle(controller)
    assert names(mem) == ["web-0"]
    claim = mem.get("PersistentVolumeClaim", "default", "www-web-1")
    assert claim is not None
    (ref,) = claim["metadata"]["ownerReferences"]  # scaled away: owned by its (deleted) pod alone
    assert (ref["kind"], ref["name"], ref["uid"]) == ("Pod", "web-1", web1_uid)

    # Scaling back up waits while the claim still belongs to the pod that is gone (the collector deletes it).
    mem.patch("StatefulSet", "default", "web", {"spec": {"replicas": 2}}, "merge")
    settle(controller)
    assert names(mem) == ["web-0"]
    mem.delete("PersistentVolumeClaim", "default", "www-web-1")
    ready_until_stable(mem, controller, clock)
    assert names(mem) == ["web-0", "web-1"]


def test_a_restarted_controller_writes_nothing_and_resumes_a_partitioned_rollout(
    mem: ClusterStore, controller: StatefulSetController, clock: Clock
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    mem.create("StatefulSet", statefulset(replicas=3, spec={"updateStrategy": strategy}))
    controller.start()
    ready_until_stable(mem, controller, clock)
    set_image(mem, "img:2")
    ready_until_stable(mem, controller, clock)
    version = mem.resource_version
    controller.stop()

    again = StatefulSetController(mem, clock=clock)
    again.start()
    try:
        settle(again)
        assert mem.resource_version == version
        # The old template is recovered from a pod at that revision.
        mem.delete("Pod", "default", "web-1")
        clock.now += timedelta(seconds=1)
        ready_until_stable(mem, again, clock)
        assert pod(mem, "web-1")["spec"]["containers"][0]["image"] == "img:1"
        assert pod(mem, "web-2")["spec"]["containers"][0]["image"] == "img:2"
    finally:
        again.stop()


def test_orphans_are_adopted_only_by_a_set_of_their_namespace_whether_it_comes_before_or_after_them(
    mem: ClusterStore, controller: StatefulSetController
) -> None:
    def orphan(name: str, namespace: str = "default") -> Obj:
        labels = {"app": "web"}
        spec = {"containers": [{"name": "c", "image": "img:1"}]}
        return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": spec}

    def controller_of(namespace: str, name: str) -> str | None:
        body = mem.get("Pod", namespace, name)
        assert body is not None, name
        refs = body["metadata"].get("ownerReferences") or []
        return next((r["name"] for r in refs if r.get("controller")), None)

    controller.start()
    mem.create("Pod", orphan("web-0"))
    mem.create("Pod", orphan("web-0", "other"))
    settle(controller)
    assert controller_of("default", "web-0") is None  # no set yet
    mem.create("StatefulSet", statefulset(replicas=1, spec={"podManagementPolicy": "Parallel"}, claims=False))
    settle(controller)
    assert controller_of("default", "web-0") == "web"  # the set arrived after its orphan
    assert names(mem) == ["web-0"]
    mem.create("Pod", orphan("web-5"))  # an orphan arriving with the set there: adopted, then scaled away
    mem.create("Pod", orphan("web-6", "other"))
    settle(controller)
    assert names(mem) == ["web-0"]
    assert controller_of("other", "web-0") is None and controller_of("other", "web-6") is None
