"""The workload controllers under both ways of running them (app/controllers/loop.py, stepped.py): in threads as
``kss serve`` runs them, and attached and settled in the test's thread as a host that owns the clock (a replay)
runs them. Each scenario runs in both modes and asserts the same outcome; the stepped mode's timers and retries
follow the clock the test moves, never the wall clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.loop import ReconcileLoop
from kss_sim.controllers.manager import WORKLOAD_CONTROLLERS
from kss_sim.controllers.stepped import SteppedControllers
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node
from tests.controllers.workloads import FakeClock, deployment, make_ready, pods_of, set_phase, template

MODES = ("threaded", "stepped")


class Cluster:
    """A store on a moved clock with every workload controller, run in ``mode``; ``settle`` waits for quiet."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.clock = FakeClock()
        self.store = ClusterStore(None, clock=self.clock)
        self.controllers: list[ReconcileLoop[Any]] = [c(self.store, clock=self.clock) for c in WORKLOAD_CONTROLLERS]
        self.stepped = SteppedControllers(self.controllers)
        if mode == "threaded":
            for controller in self.controllers:
                controller.start()
        else:
            self.stepped.attach()

    def close(self) -> None:
        if self.mode == "threaded":
            for controller in reversed(self.controllers):
                controller.stop()
        else:
            self.stepped.detach()

    def settle(self) -> None:
        if self.mode == "stepped":
            assert self.stepped.settle()
            return
        for _ in range(100):
            assert all(c.wait_idle() for c in self.controllers), "a controller did not settle"
            if all(c.is_idle() for c in self.controllers):
                return
        raise AssertionError("the controllers kept waking each other")

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        if self.mode == "threaded":
            for controller in self.controllers:
                controller.poke()
        self.settle()

    def list(self, kind: str) -> list[Obj]:
        return self.store.list(kind, "default")[0]

    def names(self, kind: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.list(kind))

    def get(self, kind: str, name: str) -> Obj:
        got = self.store.get(kind, "default", name)
        assert got is not None, f"{kind} {name} is gone"
        return got

    def ready_all(self) -> None:
        """End the pods being deleted, as their kubelet at the end of their grace period (there is none here),
        and make the others Ready."""
        for pod in self.list("Pod"):
            if pod["metadata"].get("deletionTimestamp"):
                grace_over = DeleteOptions(grace_period_seconds=0, graceful=True)
                self.store.delete("Pod", "default", pod["metadata"]["name"], options=grace_over)
            elif (pod.get("status") or {}).get("phase") != "Running":
                make_ready(self.store, pod, at=self.clock())


@pytest.fixture(params=MODES)
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    c = Cluster(str(request.param))
    yield c
    c.close()


def test_a_deployment_rolls_out_and_rolls_over_the_same_in_both_modes(cluster: Cluster) -> None:
    cluster.store.create("Deployment", deployment("web", 3, {"app": "web"}))
    cluster.settle()
    [first] = cluster.list("ReplicaSet")
    assert len(pods_of(cluster.store, first)) == 3
    cluster.ready_all()
    cluster.settle()
    status = cluster.get("Deployment", "web")["status"]
    assert (status["replicas"], status["availableReplicas"], status["updatedReplicas"]) == (3, 3, 3)

    new_template = template({"app": "web"}, image="registry.k8s.io/pause:3.9")
    cluster.store.patch("Deployment", "default", "web", {"spec": {"template": new_template}})
    for _ in range(20):  # the rolling update waits for each new pod to be ready
        cluster.settle()
        cluster.ready_all()
        cluster.settle()
        if cluster.get("Deployment", "web")["status"].get("updatedReplicas") == 3 and len(cluster.list("Pod")) == 3:
            break
    sets = {rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: rs for rs in cluster.list("ReplicaSet")}
    assert sorted(sets) == ["1", "2"]
    assert sets["1"]["spec"]["replicas"] == 0 and sets["2"]["spec"]["replicas"] == 3
    assert len(pods_of(cluster.store, sets["2"])) == 3 and not pods_of(cluster.store, sets["1"])
    status = cluster.get("Deployment", "web")["status"]
    assert (status["replicas"], status["availableReplicas"], status["updatedReplicas"]) == (3, 3, 3)


def test_deleting_a_deployment_takes_its_replicasets_and_pods_in_both_modes(cluster: Cluster) -> None:
    cluster.store.create("Deployment", deployment("web", 2, {"app": "web"}))
    cluster.settle()
    assert len(cluster.list("Pod")) == 2
    cluster.store.delete("Deployment", "default", "web")
    cluster.settle()
    assert cluster.list("ReplicaSet") == [] and cluster.list("Pod") == []


def job(name: str, **spec: Any) -> Obj:
    body = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": {"spec": body}, **spec},
    }


def test_a_job_runs_its_completions_and_its_ttl_removes_it_in_both_modes(cluster: Cluster) -> None:
    cluster.store.create("Job", job("batch", completions=3, parallelism=2, ttlSecondsAfterFinished=60))
    cluster.settle()
    for _ in range(5):
        running = [p for p in cluster.list("Pod") if (p.get("status") or {}).get("phase") != "Succeeded"]
        if not running:
            break
        assert len(running) <= 2  # parallelism
        for pod in running:
            set_phase(cluster.store, pod, "Succeeded", node="node-a")
        cluster.settle()
    status = cluster.get("Job", "batch")["status"]
    assert status["succeeded"] == 3
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in status.get("conditions") or [])
    cluster.advance(59)
    assert cluster.names("Job") == ["batch"]
    cluster.advance(2)  # the TTL's timer, on the moved clock
    assert cluster.names("Job") == []


def test_a_cronjob_creates_its_job_when_the_clock_reaches_the_schedule_in_both_modes(cluster: Cluster) -> None:
    cluster.clock.now = cluster.clock.now.replace(second=30)
    body = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "default"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": job("x")["spec"]}},
    }
    cluster.store.create("CronJob", body)
    cluster.settle()
    assert cluster.names("Job") == []
    if cluster.mode == "stepped":
        # The next minute, and upstream's 100 ms past it (nextScheduleTimeDuration).
        due = cluster.clock.now.replace(second=0) + timedelta(minutes=1, milliseconds=100)
        assert cluster.stepped.next_due() == due
    cluster.advance(31)
    [created] = cluster.list("Job")
    assert created["metadata"]["name"].startswith("tick-")
    assert created["metadata"]["ownerReferences"][0]["name"] == "tick"


def test_a_statefulset_creates_its_pods_in_order_in_both_modes(cluster: Cluster) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": template({"app": "db"})},
    }  # fmt: skip
    cluster.store.create("StatefulSet", body)
    cluster.settle()
    assert cluster.names("Pod") == ["db-0"]  # db-1 waits for db-0 to be ready
    cluster.ready_all()
    cluster.settle()
    assert cluster.names("Pod") == ["db-0", "db-1"]


def test_a_daemonset_runs_one_pod_per_node_in_both_modes(cluster: Cluster) -> None:
    for name in ("n1", "n2"):
        cluster.store.create("Node", node(name))
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template({"app": "agent"})},
    }
    cluster.store.create("DaemonSet", body)
    cluster.settle()
    assert sorted(_daemon_node(p) for p in cluster.list("Pod")) == ["n1", "n2"]
    cluster.store.create("Node", node("n3"))
    cluster.settle()
    assert sorted(_daemon_node(p) for p in cluster.list("Pod")) == ["n1", "n2", "n3"]


def _daemon_node(pod: Obj) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return str(terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0])


class Flaky(ReconcileLoop[str]):
    """One key whose reconcile raises a conflict once."""

    name = "flaky"

    def __init__(self, store: ClusterStore, clock: FakeClock) -> None:
        super().__init__(store, clock=clock, retry_base_seconds=0.5)
        self.calls = 0

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[str]:
        return []

    def resync(self) -> list[str]:
        return ["key"]

    def reconcile(self, key: str) -> None:
        self.calls += 1
        if self.calls == 1:
            raise Conflict("pods", "p", "the object has been modified")


def test_an_attached_loop_retries_after_its_backoff_on_its_clock_not_the_wall_clock() -> None:
    clock = FakeClock()
    loop = Flaky(ClusterStore(None, clock=clock), clock)
    loop.attach()
    try:
        assert loop.drain() == 1 and loop.calls == 1
        assert loop.next_due() == clock() + timedelta(seconds=0.5)
        assert loop.drain() == 0 and not loop.has_work()  # the clock has not moved: no retry yet
        clock.advance(0.5)
        assert loop.has_work()
        assert loop.drain() == 1 and loop.calls == 2
        assert loop.next_due() is None
    finally:
        loop.detach()
