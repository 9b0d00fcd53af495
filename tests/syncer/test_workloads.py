"""Workload kinds over fakes: asked for by flag, mirrored after the pods they adopt, their dependents left to the
simulator's controllers once the controller is mirrored, Jobs translated for a new uid."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from syncer.importer import run_import
from syncer.kinds import (
    APPLICATION_OBJECTS,
    CRON_JOB,
    DAEMON_SET,
    DEFAULT,
    DEPLOYMENT,
    JOB,
    NODE,
    ORDER,
    POD,
    PVC,
    REPLICA_SET,
    STATEFUL_SET,
    WORKLOADS,
    parse_kinds,
)
from syncer.objects import Obj
from syncer.runner import Syncer, SyncOptions
from syncer.sink import ADDED, DELETED, MODIFIED, SYNCED, Event, Sink
from syncer.translate import SOURCE_UID_ANNOTATION, desired
from tests.syncer.fakes import FakeSource, FakeTarget, page, pod

HASH = "7d4b9c8f6"  # the source's pod-template-hash


def _no_pvc(_namespace: str, _name: str) -> str | None:
    return None


def owned_by(obj: Obj, kind: str, name: str, *, api_version: str = "apps/v1") -> Obj:
    """``obj`` with a controller reference to the source object ``kind``/``name`` (uid ``src-<name>``)."""
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"src-{name}", "controller": True}
    obj["metadata"]["ownerReferences"] = [ref]
    return obj


def template(labels: dict[str, str]) -> Obj:
    return {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def deployment(name: str = "web", *, replicas: int = 3, rv: str = "1") -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "uid": f"src-{name}", "resourceVersion": rv},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template({"app": name})},
        "status": {"replicas": replicas, "readyReplicas": 1, "observedGeneration": 4},
    }


def replica_set(deploy: str = "web", *, replicas: int = 3, rv: str = "1") -> Obj:
    labels = {"app": deploy, "pod-template-hash": HASH}
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{deploy}-{HASH}",
            "namespace": "default",
            "uid": f"src-{deploy}-{HASH}",
            "resourceVersion": rv,
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": "2"},
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template(labels)},
        "status": {"replicas": replicas, "readyReplicas": 1},
    }
    return owned_by(rs, "Deployment", deploy)


def rs_pod(name: str, *, node: str | None = None, rv: str = "1") -> Obj:
    p = pod(name, node=node, rv=rv, labels={"app": "web", "pod-template-hash": HASH})
    return owned_by(p, "ReplicaSet", f"web-{HASH}")


def job(name: str = "train", *, finished: bool = False, manual: bool = False) -> Obj:
    uid = f"src-{name}"
    generated = {
        "batch.kubernetes.io/controller-uid": uid,
        "controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "job-name": name,
    }
    spec: Obj = {"parallelism": 2, "completions": 4, "template": template({"team": "ml", **generated})}
    if manual:
        spec["manualSelector"] = True
        spec["selector"] = {"matchLabels": {"team": "ml"}}
        spec["template"] = template({"team": "ml"})
    else:
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    conditions = [{"type": "Complete", "status": "True"}] if finished else []
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "1"},
        "spec": spec,
        "status": {"active": 0 if finished else 2, "succeeded": 4 if finished else 1, "conditions": conditions},
    }


def workload_sink(target: FakeTarget, kinds: tuple[Any, ...] = (POD, *WORKLOADS)) -> Sink:
    sink = Sink(target)
    sink.mirrored_kinds = frozenset(k.name for k in kinds)
    return sink


def test_workload_kinds_are_asked_for_and_come_after_the_pods_they_adopt() -> None:
    assert not any(k.workload for k in parse_kinds(None)), "by default only pods, not their controllers"
    assert parse_kinds(None) == DEFAULT
    everything = parse_kinds(None, workloads=True)
    assert everything == tuple(k for k in ORDER if k in DEFAULT or k in WORKLOADS or k in APPLICATION_OBJECTS)
    assert everything[-6:] == (REPLICA_SET, DEPLOYMENT, STATEFUL_SET, DAEMON_SET, JOB, CRON_JOB)
    # ServiceAccounts, ConfigMaps, Secrets and Services come with the workloads, before the pods.
    assert set(APPLICATION_OBJECTS) <= set(everything) and not set(APPLICATION_OBJECTS) & set(DEFAULT)
    assert max(everything.index(k) for k in APPLICATION_OBJECTS) < everything.index(POD)
    assert parse_kinds("sa,cm,secrets,svc") == APPLICATION_OBJECTS
    assert parse_kinds("po,rs,sts,ds,job,cj") == (POD, REPLICA_SET, STATEFUL_SET, DAEMON_SET, JOB, CRON_JOB)
    # A Deployment brings its ReplicaSets, a CronJob its Jobs: without them the simulator's controller would run
    # beside copies it does not manage.
    assert parse_kinds("deploy") == parse_kinds("deployments") == (REPLICA_SET, DEPLOYMENT)
    assert parse_kinds("cronjobs") == (JOB, CRON_JOB)
    assert parse_kinds("pods", workloads=True) == (*APPLICATION_OBJECTS, POD, *WORKLOADS)
    assert all(k.optional and not k.mirror_status for k in WORKLOADS), "discovery asked; status never copied"
    assert DEPLOYMENT.path("ns", "web") == "/apis/apps/v1/namespaces/ns/deployments/web"
    assert CRON_JOB.group_version_path == "/apis/batch/v1"
    with pytest.raises(ValueError, match="unknown kind 'deployment-ish'"):
        parse_kinds("deployment-ish")


def test_copies_lose_owner_references_and_workloads_their_status() -> None:
    rs = desired(REPLICA_SET, replica_set(), keep_binding=False, pvc_uid=_no_pvc)
    assert "ownerReferences" not in rs["metadata"] and "status" not in rs
    assert rs["metadata"]["annotations"] == {
        "deployment.kubernetes.io/revision": "2",
        SOURCE_UID_ANNOTATION: f"src-web-{HASH}",
    }
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": HASH}}, "hash kept"
    # Any kind: a dangling reference would have the simulator's garbage collector delete the copy.
    claim = owned_by(pod("data-db-0"), "StatefulSet", "db")
    claim.update(kind="PersistentVolumeClaim", spec={"accessModes": ["ReadWriteOnce"]})
    assert "ownerReferences" not in desired(PVC, claim, keep_binding=False, pvc_uid=_no_pvc)["metadata"]


def test_a_job_is_copied_without_the_selector_and_labels_generated_from_the_source_uid() -> None:
    copy = desired(JOB, job(), keep_binding=False, pvc_uid=_no_pvc)
    assert "selector" not in copy["spec"] and "status" not in copy
    assert copy["spec"]["template"]["metadata"]["labels"] == {"team": "ml"}
    assert copy["spec"]["parallelism"] == 2 and copy["spec"]["completions"] == 4
    manual = desired(JOB, job(manual=True), keep_binding=False, pvc_uid=_no_pvc)
    assert manual["spec"]["selector"] == {"matchLabels": {"team": "ml"}}, "a manual selector is the user's"


def test_pods_and_replica_sets_are_copied_then_left_to_the_simulators_controllers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kss.syncer")
    target = FakeTarget()
    sink = workload_sink(target)
    # The first list, in apply order: pods, then their ReplicaSet, then its Deployment.
    for name, node in (("web-a", "n1"), ("web-b", None), ("web-c", None)):
        sink.apply(Event(ADDED, POD, rs_pod(name, node=node), initial=True))
    sink.apply(Event(ADDED, REPLICA_SET, replica_set(), initial=True))
    sink.apply(Event(ADDED, DEPLOYMENT, deployment(), initial=True))
    creates = [(kind, name) for verb, kind, name in target.calls if verb == "create"]
    assert creates == [("Pod", "web-a"), ("Pod", "web-b"), ("Pod", "web-c"), ("ReplicaSet", f"web-{HASH}"),
                       ("Deployment", "web")]  # fmt: skip
    assert all("ownerReferences" not in o["metadata"] for o in target.objects.values()), "orphans, to be adopted"
    assert not target.objects[("Deployment", "default", "web")]["status"], "the source status is not sent"
    writes_before = len(target.writes())

    # The source scales up: its ReplicaSet grows and makes a pod. The Deployment's spec is mirrored; the rest is
    # what the simulator's Deployment and ReplicaSet controllers do for themselves.
    sink.apply(Event(MODIFIED, DEPLOYMENT, deployment(replicas=4, rv="2")))
    sink.apply(Event(MODIFIED, REPLICA_SET, replica_set(replicas=4, rv="2")))
    sink.apply(Event(ADDED, POD, rs_pod("web-d", rv="2")))
    sink.apply(Event(MODIFIED, POD, rs_pod("web-b", rv="3")))  # the source scheduled it, say
    assert target.writes()[writes_before:] == [("patch", "Deployment", "web")]
    assert target.objects[("Deployment", "default", "web")]["spec"]["replicas"] == 4
    assert target.find("Pod", "web-d", "default") is None
    assert f"left out Pod default/web-d: its ReplicaSet default/web-{HASH} is run by the simulator's controller" in (
        caplog.messages
    )

    # The source scales down and deletes a pod it had when the syncer started: the simulator's ReplicaSet chooses
    # its own; the copy is only forgotten (gone from a re-list alike).
    sink.apply(Event(DELETED, POD, rs_pod("web-c")))
    sink.apply(Event(SYNCED, POD, namespace=None, present=frozenset({"src-web-a"})))
    assert target.find("Pod", "web-c", "default") is not None and target.find("Pod", "web-b", "default") is not None
    assert sink.state.get("src-web-c") is None and sink.state.get("src-web-b") is None
    assert target.writes()[writes_before:] == [("patch", "Deployment", "web")]

    # The Deployment goes from the source: it is deleted in the simulator (its garbage collector takes the rest).
    sink.apply(Event(DELETED, DEPLOYMENT, deployment()))
    assert target.find("Deployment", "web", "default") is None


def test_without_the_workload_kinds_pods_are_copied_as_before() -> None:
    target = FakeTarget()
    sink = workload_sink(target, kinds=(NODE, POD))
    sink.apply(Event(ADDED, POD, rs_pod("web-a"), initial=True))
    sink.apply(Event(ADDED, POD, rs_pod("web-b", rv="2")))
    sink.apply(Event(MODIFIED, POD, {**rs_pod("web-b", rv="3"), "spec": {"containers": [], "priority": 5}}))
    sink.apply(Event(DELETED, POD, rs_pod("web-a")))
    assert target.find("Pod", "web-a", "default") is None
    assert target.find("Pod", "web-b", "default")["spec"]["priority"] == 5  # type: ignore[index]


def test_static_pods_owned_by_their_node_are_not_anyones_workload() -> None:
    target = FakeTarget()
    sink = workload_sink(target, kinds=(NODE, POD, *WORKLOADS))
    sink.apply(Event(ADDED, NODE, {"metadata": {"name": "n1", "uid": "src-n1", "resourceVersion": "1"}}))
    static = owned_by(pod("etcd-n1", node="n1"), "Node", "n1", api_version="v1")
    sink.apply(Event(ADDED, POD, static, initial=True))
    sink.apply(Event(MODIFIED, POD, {**static, "metadata": {**static["metadata"], "labels": {"tier": "control"}}}))
    assert target.find("Pod", "etcd-n1", "default") is not None


def test_jobs_pods_are_never_copied_and_finished_jobs_are_left_out() -> None:
    target = FakeTarget()
    sink = workload_sink(target)
    job_pod = owned_by(pod("train-x2x9z", node="n1"), "Job", "train", api_version="batch/v1")
    sink.apply(Event(ADDED, POD, job_pod, initial=True))
    sink.apply(Event(ADDED, JOB, job(), initial=True))
    sink.apply(Event(ADDED, JOB, job("done", finished=True), initial=True))
    cron_job = owned_by(job("nightly-2911"), "CronJob", "nightly", api_version="batch/v1")
    sink.apply(Event(ADDED, JOB, cron_job, initial=True))
    assert [(kind, name) for verb, kind, name in target.writes()] == [("Job", "train")]
    assert sink.metrics.total("left_to_controller") == 2 and sink.metrics.total("ignored_finished") == 1
    # With Jobs not mirrored, a Job's pods are copied as they always were.
    plain = Sink(FakeTarget())
    plain.mirrored_kinds = frozenset({"Pod"})
    plain.apply(Event(ADDED, POD, job_pod, initial=True))
    assert plain.metrics.total("created") == 1


def test_the_syncer_lists_workloads_after_pods_and_tells_the_sink() -> None:
    kinds = parse_kinds("pods,deploy")
    lists = {k.name: [[page(rv="9")]] for k in kinds}
    lists["Pod"] = [[page(rs_pod("web-a"), rv="9")]]
    lists["ReplicaSet"] = [[page(replica_set(), rv="9")]]
    lists["Deployment"] = [[page(deployment(), rv="9")]]
    source = FakeSource(lists=lists, watches={"Pod": [[{"type": "ADDED", "object": rs_pod("web-new")}]]})
    target = FakeTarget()
    syncer = Syncer(source, target, SyncOptions(kinds=kinds))
    syncer.start()
    try:
        deadline = time.monotonic() + 10
        while syncer.metrics.total("left_to_controller") < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        syncer.shutdown()
    assert [c[0] for c in source.list_calls] == ["Pod", "ReplicaSet", "Deployment"]
    creates = [(kind, name) for verb, kind, name in target.calls if verb == "create"]
    assert creates == [("Pod", "web-a"), ("ReplicaSet", f"web-{HASH}"), ("Deployment", "web")]
    assert target.find("Pod", "web-new", "default") is None


def test_the_one_shot_import_copies_workloads_with_the_same_rules() -> None:
    source = FakeSource(
        lists={
            "Pod": [[page(rs_pod("web-a"), owned_by(pod("train-1"), "Job", "train", api_version="batch/v1"))]],
            "ReplicaSet": [[page(replica_set())]],
            "Deployment": [[page(deployment())]],
            "Job": [[page(job())]],
        }
    )
    target = FakeTarget()
    target.unserved = {"StatefulSet"}
    report = run_import(source, target, kinds=parse_kinds("pods,deploy,sts,job"))
    assert report.objects == {"Pod": 2, "ReplicaSet": 1, "Deployment": 1, "Job": 1}
    assert sorted(name for _, kind, name in target.writes()) == ["train", "web", f"web-{HASH}", "web-a"]


def test_after_a_restart_copies_adopted_by_a_mirrored_controller_stay_its_own() -> None:
    target = FakeTarget()
    first = workload_sink(target)
    first.apply(Event(ADDED, POD, rs_pod("web-a"), initial=True))
    first.apply(Event(ADDED, REPLICA_SET, replica_set(), initial=True))
    rs_copy = target.objects[("ReplicaSet", "default", f"web-{HASH}")]
    pod_copy = target.objects[("Pod", "default", "web-a")]
    # What the simulator's ReplicaSet controller does: it adopts the copy.
    pod_copy["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "uid": rs_copy["metadata"]["uid"], "controller": True}
    ]
    restarted = workload_sink(target)
    assert restarted.seed((POD, REPLICA_SET)) == 2
    # Gone from the source during a watch gap: only the controller found at start-up says whose it is.
    restarted.apply(Event(SYNCED, POD, namespace=None, present=frozenset()))
    restarted.apply(Event(ADDED, POD, rs_pod("web-new")))
    assert target.find("Pod", "web-a", "default") is not None, "the simulator's ReplicaSet decides about it"
    assert target.find("Pod", "web-new", "default") is None
    assert restarted.metrics.total("left_to_controller") == 2
