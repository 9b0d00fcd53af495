"""``kss serve``'s workload controllers in a replay (kss_sim/replay/world.py): over an in-memory store, on the stand-in
engine's virtual clock (test_controllers' ``FakeEngine``), pods handed to and from the engine; seeded names, run
times, adoption, the API's refusals, and when a run ends."""

from __future__ import annotations

from collections.abc import Callable

import orjson

from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import kube_version
from kss_sim.replay.engine import Replay
from kss_sim.replay.model import DELETED
from kss_sim.replay.workload import parse_workload
from kss_sim.replay.world_objects import check_workload_object
from tests.replay.test_controllers import (
    FakeEngine,
    _node_doc,
    _replay,
    deployment,
    job,
    node,
    pod_template,
    statefulset,
    workload_obj,
)


def test_a_deployment_makes_owned_spread_pods_and_replaces_those_of_a_removed_node_at_once() -> None:
    engine = FakeEngine(["n1", "n2", "n3"])
    engine.apply("create", deployment("web", 3))
    engine.run(until=59.0)
    names = engine.names()
    assert len(names) == 3 and sorted(engine.node_of.values()) == ["n1", "n2", "n3"]
    rs_name = names[0].rsplit("-", 1)[0]
    assert all(engine.owner_of[n] == f"ReplicaSet/default/{rs_name}" for n in names)
    rs = engine.controllers.get("ReplicaSet", "default", rs_name)
    assert rs is not None and rs["metadata"]["ownerReferences"][0]["name"] == "web"
    status = engine.controllers.get("Deployment", "default", "web")
    assert status is not None and status["status"]["availableReplicas"] == 3
    engine.call_at(60.0, lambda: engine.remove_node("n2"))
    engine.run(until=61.0)
    assert [t for t, _ in engine.events("create")] == [0.0, 0.0, 0.0, 60.0]
    assert len(engine.pods) == 3 and sorted(set(engine.node_of.values())) == ["n1", "n3"]
    assert sorted(p["metadata"]["name"] for p in engine.controllers.store.list("Pod", "default")[0]) == engine.names()


def test_the_same_seed_gives_the_same_names_and_another_seed_others() -> None:
    def names(seed: int) -> list[str]:
        engine = FakeEngine(["n1"], seed=seed)
        engine.apply("create", deployment("web", 3))
        engine.run(until=1.0)
        return engine.names()

    assert names(1) == names(1)
    assert names(1) != names(2)


def test_a_job_runs_its_completions_in_waves_for_the_workloads_run_for_and_completes() -> None:
    engine = FakeEngine(["n1"])
    engine.apply("create", job("batch", completions=4, parallelism=2), run_for=600.0)
    engine.run(until=1300.0)
    assert [t for t, _ in engine.events("create")] == [0.0, 0.0, 600.0, 600.0]
    assert [t for t, _ in engine.events("succeed")] == [600.0, 600.0, 1200.0, 1200.0]
    status = engine.controllers.get("Job", "default", "batch")
    assert status is not None
    assert status["status"]["succeeded"] == 4 and status["status"]["completionTime"] == "2025-03-01T00:20:00Z"
    assert [c["type"] for c in status["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]


def test_a_templates_run_duration_annotation_is_the_pods_run_time() -> None:
    engine = FakeEngine(["n1"])
    d = deployment("web", 1)
    d["spec"]["template"]["metadata"]["annotations"] = {"kss.sigs.k8s.io/run-duration": "90s"}
    engine.apply("create", d, run_for=600.0)
    engine.run(until=1.0)
    assert list(engine.run_for.values()) == [90.0]


def test_an_orphan_that_arrived_first_is_adopted_and_counted() -> None:
    engine = FakeEngine(["n1"])
    orphan: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "old-web", "namespace": "default", "uid": "uid-old-web", "labels": {"app": "web"}},
        "spec": {**pod_template({"app": "web"})["spec"], "nodeName": "n1"},
    }
    engine.controllers.pod_arrived(orphan)
    rs = workload_obj(
        "ReplicaSet",
        "web",
        {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": pod_template({"app": "web"})},
    )
    engine.apply("create", rs)
    engine.run(until=1.0)
    assert len(engine.events("create")) == 1  # one more pod: the orphan is the other
    adopted = engine.controllers.store.get("Pod", "default", "old-web")
    assert adopted is not None and adopted["metadata"]["ownerReferences"][0]["name"] == "web"
    stored = engine.controllers.get("ReplicaSet", "default", "web")
    assert stored is not None and stored["status"]["replicas"] == 2


def test_objects_the_api_refuses_are_named_with_the_apis_own_messages() -> None:
    bad_schedule = workload_obj(
        "CronJob", "c", {"schedule": "@sometimes", "jobTemplate": {"spec": {"template": pod_template({})}}}
    )
    assert any("spec.schedule" in p for p in check_workload_object(bad_schedule))
    no_template = workload_obj("Deployment", "d", {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}})
    assert check_workload_object(no_template)
    assert check_workload_object(deployment("fine", 2)) == []
    assert check_workload_object({"kind": "Pod"}) == [
        "kind: 'Pod' is not a workload kind"
        " (CronJob, DaemonSet, Deployment, HorizontalPodAutoscaler, Job, ReplicaSet, StatefulSet)"
    ]


class TimerEngine(FakeEngine):
    """Records every timer asked for a later time: (virtual time, whether it holds the run)."""

    def __init__(self, nodes: list[str]) -> None:
        self.asked: list[tuple[float, bool]] = []
        super().__init__(nodes)

    def call_at(self, at: float, callback: Callable[[], None], *, holds_run: bool = True) -> None:
        if at > self.now:  # not a settle at the current instant
            self.asked.append((at, holds_run))
        super().call_at(at, callback, holds_run=holds_run)


def test_no_controller_timer_holds_the_run_and_each_fires_while_the_run_goes_on() -> None:
    engine = TimerEngine(["n1"])
    sts = statefulset("db", 1)
    sts["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {"resources": {}}}]  # refused
    engine.apply("create", sts)
    engine.apply("create", job("batch", activeDeadlineSeconds=100))
    engine.run(until=150.0)
    assert engine.asked and not any(holds for _, holds in engine.asked)
    assert 100.0 in {at for at, _ in engine.asked}  # the Job's deadline
    assert any(at < 1 for at, _ in engine.asked)  # the StatefulSet's retries, backing off
    assert [t for t, _ in engine.events("delete")] == [100.0]  # the deadline passed: the Job's pod deleted
    status = engine.controllers.get("Job", "default", "batch")
    assert status is not None and "DeadlineExceeded" in {c.get("reason") for c in status["status"]["conditions"]}


def test_a_replay_ends_with_its_workload_not_at_a_controllers_next_timer() -> None:
    # The Deployment's progress check is due 600 s after its rollout began (progressDeadlineSeconds); the Job's
    # deadline at 100 s is passed while its pods, still running for 200 s, hold the run.
    events = [
        {"at": 0, "create": deployment("web", 1)},
        {"at": 0, "create": job("batch", activeDeadlineSeconds=100, parallelism=2, completions=2), "runFor": "200s"},
        {"at": 60, "cordon": "n1"},
    ]
    run = _replay(events, start=[_node_doc("n1")])
    result = run.run()
    assert result.virtual_seconds == 200.0
    batch = [r for r in result.pods if r.owner == "Job/default/batch"]
    # the deadline deletes them at 100 s; each then terminates for its 30 s grace period
    assert [(r.outcome, r.terminating_at, r.finished_at) for r in batch] == [(DELETED, 100.0, 130.0)] * 2
    web = [r for r in result.pods if r.owner.startswith("ReplicaSet/default/web-")]
    assert [(r.outcome, r.bound_at) for r in web] == [("running", 0.0)]


def test_the_store_serves_the_runs_version_a_v1_35_gang_of_deployment_pods_waits_for_its_min_count() -> None:
    # v1.35's spec.workloadRef is served there (GenericWorkload on); a store at the default v1.36 would drop it from
    # the pods the ReplicaSet makes, and the two would bind though their gang wants three.
    web = deployment("web", 2)
    web["spec"]["template"]["spec"]["workloadRef"] = {"name": "w", "podGroup": "g"}
    gang = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"podGroups": [{"name": "g", "policy": {"gang": {"minCount": 3}}}]},
    }
    spec = {"start": [node("n1"), gang], "events": [{"at": 5, "create": web}]}
    doc = {"apiVersion": "kss.sigs.k8s.io/v1alpha1", "kind": "TimedWorkload", "metadata": {"name": "t"}, "spec": spec}
    gates = {"GenericWorkload": True, "GangScheduling": True}
    run = Replay(parse_workload(orjson.dumps(doc).decode()), feature_gates=gates, kube_version=kube_version("1.35"))
    result = run.run()
    assert run.controllers is not None and run.controllers.store.kube_version == "1.35"
    pods = run.controllers.store.list("Pod")[0]
    assert [p["spec"].get("workloadRef") for p in pods] == [{"name": "w", "podGroup": "g"}] * 2
    assert len(result.pods) == 2 and all(p.bound_at is None for p in result.pods)
