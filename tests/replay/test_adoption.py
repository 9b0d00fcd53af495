"""Workload controllers meet what the replay did not make: a start snapshot's pods (a real ``kss export`` of a
running cluster, hand-written orphans) are adopted as kube-controller-manager adopts them; StatefulSets create their
claims (``create_object``) and VolumeBinding binds them to volumes, static or provisioned, on the replay's objects."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.statefulset_pods import revision_name
from kss_sim.kube.objects import Obj
from kss_sim.replay.engine import Replay
from kss_sim.replay.model import DELETED, RUNNING
from kss_sim.replay.sources import load_source
from kss_sim.replay.workload import parse_workload
from tests.conftest import Server, start_server

KSS = Path(sys.executable).with_name("kss")
NS = "shop"


def _node(name: str, cpu: str = "4") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def _template(app: str) -> Obj:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [container]}}


def _workload(kind: str, name: str, spec: Obj, namespace: str = NS) -> Obj:
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _replay(start: list[Obj], events: list[Obj] | None = None) -> Replay:
    doc = {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "adoption"},
        "spec": {"epoch": "2025-03-01T00:00:00Z", "start": start, "events": events or []},
    }
    return Replay(parse_workload(json.dumps(doc)))


# --- a real kss export of a cluster running every kind ---------------------------------------------------------
@pytest.fixture(scope="module")
def running_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A kss serve with its scheduler, controllers and kubelet, running a Deployment of 3, a StatefulSet of 2, a
    DaemonSet on both nodes and a Job of 2 parallel pods."""
    workdir = tmp_path_factory.mktemp("adoption-server")
    server = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}")
    try:
        url = server.url
        for node in (_node("n1"), _node("n2")):
            assert httpx.post(f"{url}/api/v1/nodes", json=node, timeout=10).status_code == 201
        assert httpx.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": NS}}, timeout=10).status_code == 201
        objects = [
            _workload("Deployment", "web", {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                                            "template": _template("web")}),
            _workload("StatefulSet", "db", {"replicas": 2, "serviceName": "db",
                                            "selector": {"matchLabels": {"app": "db"}}, "template": _template("db")}),
            _workload("DaemonSet", "agent", {"selector": {"matchLabels": {"app": "agent"}},
                                             "template": _template("agent")}),
            _workload("Job", "batch", {"parallelism": 2, "completions": 4, "template": {
                **_template("batch"), "spec": {**_template("batch")["spec"], "restartPolicy": "Never"}}}),
        ]  # fmt: skip
        plural = {"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets"}
        for obj in objects:
            group = "batch/v1" if obj["kind"] == "Job" else "apps/v1"
            resource = "jobs" if obj["kind"] == "Job" else plural[obj["kind"]]
            r = httpx.post(f"{url}/apis/{group}/namespaces/{NS}/{resource}", json=obj, timeout=10)
            assert r.status_code == 201, r.text
        deadline = time.monotonic() + 60
        while True:
            pods = httpx.get(f"{url}/api/v1/namespaces/{NS}/pods", timeout=10).json()["items"]
            bound = [p for p in pods if p["spec"].get("nodeName")]
            if len(bound) == 3 + 2 + 2 + 2:
                break
            assert time.monotonic() < deadline, (
                f"only {len(bound)} pods placed: {[p['metadata']['name'] for p in pods]}"
            )
            time.sleep(0.3)
        yield server
    finally:
        server.stop()


def test_a_kss_export_of_running_workloads_replays_without_a_second_set_of_pods(
    running_cluster: Server, tmp_path: Path
) -> None:
    snapshot = tmp_path / "snap.yaml"
    proc = subprocess.run(
        [str(KSS), "export", "--server", running_cluster.url, "-o", str(snapshot)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    exported = yaml.safe_load(snapshot.read_text())
    mine = [p for p in exported["pods"] if p["metadata"]["namespace"] == NS]
    assert len(mine) == 9 and all(p["metadata"].get("ownerReferences") for p in mine), "export keeps owners"
    web = next(d for d in exported["deployments"] if d["metadata"]["name"] == "web")
    scaled = copy.deepcopy(web)
    scaled["spec"]["replicas"] = 5
    timed = {"kind": "TimedWorkload", "spec": {"start": "snap.yaml", "events": [{"at": "1h", "update": scaled}]}}
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(timed))

    run = Replay(load_source([tmp_path / "w.yaml"]))
    result = run.run()
    records = [r for r in result.pods if r.key.startswith(f"{NS}/")]
    snapshot_pods = {f"{NS}/{p['metadata']['name']}": p for p in mine}
    started = [r for r in records if r.arrival == 0.0]
    assert {r.key for r in started} == set(snapshot_pods), "nothing made beside the snapshot's pods at the start"
    for r in started:
        assert (r.outcome, r.attempts) == (RUNNING, 0)
        assert r.node == snapshot_pods[r.key]["spec"]["nodeName"]
    # Scaling the Deployment to 5 makes exactly two pods, in the snapshot's ReplicaSet.
    web_rs = {r.owner for r in started if r.key.startswith(f"{NS}/web-")}
    assert len(web_rs) == 1
    later = [r for r in records if r.arrival > 0]
    assert [(r.arrival, r.owner, r.outcome) for r in later] == [(3600.0, next(iter(web_rs)), RUNNING)] * 2
    assert run.controllers is not None and run.controllers.pods_created == 2
    rs_name = next(iter(web_rs)).rsplit("/", 1)[1]
    status = run.controllers.get("ReplicaSet", NS, rs_name)
    assert status is not None and status["spec"]["replicas"] == 5 and status["status"]["readyReplicas"] == 5
    assert run.controllers.get("ReplicaSet", NS, rs_name) is not None
    names = [o["metadata"]["name"] for o in run.controllers.objects() if o["kind"] == "ReplicaSet"]
    assert names == [rs_name], "the snapshot's ReplicaSet joined its Deployment: no new one, none running alone"


# --- hand-written starts: orphans, ordinals, Jobs from their status ---------------------------------------------
def _pod(name: str, app: str, node: str | None, namespace: str = NS) -> Obj:
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", **_template(app)}
    pod["metadata"].update(name=name, namespace=namespace)
    if node:
        pod["spec"]["nodeName"] = node
    return pod


def test_orphans_are_adopted_by_selector_and_statefulsets_only_take_their_ordinals() -> None:
    """Pods mirrored without ownerReferences (as the syncer strips them) are adopted by the owner whose selector
    matches; a StatefulSet takes ``db-0`` but not ``db-extra``, and makes only the ordinal missing."""
    rs = _workload("ReplicaSet", "front", {"replicas": 2, "selector": {"matchLabels": {"app": "front"}},
                                           "template": _template("front")})  # fmt: skip
    sts = _workload("StatefulSet", "db", {"replicas": 2, "serviceName": "db", "template": _template("db"),
                                          "selector": {"matchLabels": {"app": "db"}}})  # fmt: skip
    # db-0 is at the set's revision (its name the hash of the template as the API stores it): kept, not rolled. A
    # pod at another revision, or without the label, is replaced, as upstream's RollingUpdate does.
    revision = revision_name(ClusterStore(None).create("StatefulSet", copy.deepcopy(sts)))
    db0 = _pod("db-0", "db", "n1")
    db0["metadata"]["labels"]["controller-revision-hash"] = revision
    start = [
        _node("n1"),
        _pod("front-aaaaa", "front", "n1"),
        _pod("front-bbbbb", "front", None),
        _pod("front-ccccc", "front", "n1", namespace="other"),  # another namespace: never this ReplicaSet's
        db0,
        _pod("db-extra", "db", "n1"),
        rs,
        sts,
    ]
    run = _replay(start, [{"at": "10m", "delete": {"kind": "Pod", "namespace": NS, "name": "front-aaaaa"}}])
    result = run.run()
    by_key = {r.key: r for r in result.pods}
    made = [r for r in result.pods if r.owner.startswith(("ReplicaSet/", "StatefulSet/"))]
    assert len(made) == 2 and (made[0].key, made[0].arrival) == (f"{NS}/db-1", 0.0)
    replacement = made[1]  # front-aaaaa's, deleted at 10 min
    assert replacement.key.startswith(f"{NS}/front-") and replacement.key[-5:] not in ("aaaaa", "bbbbb")
    assert (replacement.arrival, replacement.owner, replacement.node) == (600.0, f"ReplicaSet/{NS}/front", "n1")
    assert by_key[f"{NS}/front-bbbbb"].node == "n1", "the pending orphan is adopted and placed"
    assert by_key[f"{NS}/front-aaaaa"].outcome == DELETED
    assert (by_key[f"{NS}/db-0"].outcome, by_key[f"{NS}/db-0"].attempts) == (RUNNING, 0)
    assert by_key[f"{NS}/db-1"].bound_at == 0.0
    assert run.controllers is not None
    assert run.controllers.get("ReplicaSet", NS, "front")["status"]["replicas"] == 2
    assert run.controllers.get("StatefulSet", NS, "db")["status"]["replicas"] == 2


def test_a_snapshot_job_goes_on_from_its_status() -> None:
    """A Job that counted 2 of 3 completions makes one more pod (its finished pod in the snapshot is not active);
    a Job marked Complete makes none."""
    spec: Obj = {"completions": 3, "parallelism": 2, "template": _template("j")}
    spec["template"]["spec"]["restartPolicy"] = "Never"
    halfway = _workload("Job", "halfway", copy.deepcopy(spec))
    halfway["metadata"]["uid"] = "u-halfway"
    halfway["status"] = {"succeeded": 2, "startTime": "2025-03-01T00:00:00Z"}
    done = _workload("Job", "done", copy.deepcopy(spec))
    done["status"] = {"succeeded": 3, "conditions": [{"type": "Complete", "status": "True",
                                                      "lastTransitionTime": "2025-02-28T23:00:00Z"}]}  # fmt: skip
    finished = _pod("halfway-xxxxx", "j", "n1")
    finished["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "halfway", "uid": "u-halfway", "controller": True}
    ]
    finished["status"] = {"phase": "Succeeded"}
    run = _replay([_node("n1"), finished, halfway, done])
    run.run()
    made = [r for r in run.records.values() if r.owner == f"Job/{NS}/halfway" and r.key != f"{NS}/halfway-xxxxx"]
    assert [(r.arrival, r.node) for r in made] == [(0.0, "n1")]
    assert not [r for r in run.records.values() if r.owner == f"Job/{NS}/done"]
    assert run.controllers is not None
    assert run.controllers.get("Job", NS, "done")["status"]["succeeded"] == 3


# --- StatefulSet claims and VolumeBinding -------------------------------------------------------------------------
HOSTNAME = "kubernetes.io/hostname"


def _local_pv(name: str, node: str, size: str = "10Gi") -> Obj:
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                 "local": {"path": f"/mnt/{name}"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}},
    }  # fmt: skip


def _class(name: str, provisioner: str) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def _stateful(replicas: int, class_name: str, **spec: Any) -> Obj:
    claim = {"metadata": {"name": "data", "labels": {"tier": "storage"}},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class_name,
                      "resources": {"requests": {"storage": "5Gi"}}}}  # fmt: skip
    return _workload("StatefulSet", "db", {"replicas": replicas, "serviceName": "db",
                                           "selector": {"matchLabels": {"app": "db"}}, "template": _template("db"),
                                           "volumeClaimTemplates": [claim], **spec})  # fmt: skip


def test_statefulset_claims_follow_their_local_volumes_with_wait_for_first_consumer() -> None:
    """Claims data-db-<i> are created before the pods; VolumeBinding places each pod where a volume can bind
    (never n1, which has none), binds claim and volume, and db-0 made again after its deletion (once the old one's
    grace period is over) goes back to its volume's node."""
    start = [_node("n1"), _node("n2"), _node("n3"), _class("local", "kubernetes.io/no-provisioner"),
             _local_pv("pv-on-n3", "n3"), _local_pv("pv-on-n2", "n2")]  # fmt: skip
    sts = _stateful(2, "local", persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"})
    run = _replay(start, [{"at": 0, "create": sts}, {"at": "1h", "delete": {"kind": "Pod", "namespace": NS,
                                                                            "name": "db-0"}}])  # fmt: skip
    result = run.run()
    placed = [(r.key, r.arrival, r.node, r.outcome) for r in result.pods]
    first = placed[0][2]
    assert first in ("n2", "n3")
    other = "n2" if first == "n3" else "n3"
    assert placed == [
        (f"{NS}/db-0", 0.0, first, DELETED),
        (f"{NS}/db-1", 0.0, other, RUNNING),
        (f"{NS}/db-0", 3630.0, first, RUNNING),  # made again under its name once the old one is gone (30 s)
    ]
    claims = run.cluster.pvcs
    assert sorted(claims) == [f"{NS}/data-db-0", f"{NS}/data-db-1"]
    for ordinal, node in ((0, first), (1, other)):
        claim = claims[f"{NS}/data-db-{ordinal}"]
        assert claim["metadata"]["labels"] == {"tier": "storage", "app": "db"}
        refs = claim["metadata"]["ownerReferences"]  # whenDeleted: Delete: the set, as a controller reference
        assert [(r["kind"], r["name"], r["controller"]) for r in refs] == [("StatefulSet", "db", True)]
        assert claim["status"]["phase"] == "Bound"
        volume = run.cluster.pvs[claim["spec"]["volumeName"]]
        assert volume["metadata"]["name"] == f"pv-on-{node}"
        assert volume["status"]["phase"] == "Bound" and volume["spec"]["claimRef"]["name"] == f"data-db-{ordinal}"
    volumes = run.bound[f"{NS}/db-1"].pod["spec"]["volumes"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}} in volumes


def test_statefulset_claims_are_provisioned_on_the_chosen_node() -> None:
    """A provisioner's class and no volumes: each claim gets a PV pinned to the node its pod went to, bound both
    ways; the claims without a retention policy carry no owner (Retain)."""
    start = [_node("n1"), _node("n2"), _class("fast", "csi.example.com")]
    run = _replay(start, [{"at": 0, "create": _stateful(2, "fast")}])
    result = run.run()
    nodes = {r.key: r.node for r in result.pods}
    assert set(nodes) == {f"{NS}/db-0", f"{NS}/db-1"} and all(nodes.values())
    for ordinal in (0, 1):
        claim = run.cluster.pvcs[f"{NS}/data-db-{ordinal}"]
        assert "ownerReferences" not in claim["metadata"]
        assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == nodes[f"{NS}/db-{ordinal}"]
        volume = run.cluster.pvs[claim["spec"]["volumeName"]]
        assert volume["metadata"]["name"] == f"pvc-{claim['metadata']['uid']}"
        assert volume["spec"]["storageClassName"] == "fast" and volume["spec"]["capacity"] == {"storage": "5Gi"}
        terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == [nodes[f"{NS}/db-{ordinal}"]]
        assert (claim["status"]["phase"], volume["status"]["phase"]) == ("Bound", "Bound")


def test_claim_retention_policy_deletes_claims_and_the_pv_controller_reclaims_their_volumes() -> None:
    """whenScaled: Delete takes db-1's claim with it when the set shrinks (its provisioned volume, reclaimPolicy
    Delete, goes too); scaled up again, db-1 gets a new claim and volume. whenDeleted: Delete takes db-0's claim
    with the set; a Retain volume is then Released, not offered to a new claim."""
    start = [_node("n1"), _class("fast", "csi.example.com"), _class("local", "kubernetes.io/no-provisioner"),
             _local_pv("pv-local", "n1")]  # fmt: skip
    policy = {"whenScaled": "Delete", "whenDeleted": "Delete"}
    scaled = _stateful(2, "fast", persistentVolumeClaimRetentionPolicy=policy)
    one = copy.deepcopy(scaled)
    one["spec"]["replicas"] = 1
    kept = _stateful(1, "local", persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"})
    kept["metadata"]["name"] = "cache"
    kept["spec"]["selector"] = {"matchLabels": {"app": "cache"}}
    kept["spec"]["template"] = _template("cache")
    run = _replay(start, [{"at": 0, "create": scaled}, {"at": 0, "create": kept}])
    run.run()
    first = run.cluster.pvcs[f"{NS}/data-db-1"]
    first_volume = first["spec"]["volumeName"]
    assert first_volume in run.cluster.pvs and run.cluster.pvs["pv-local"]["status"]["phase"] == "Bound"

    run = _replay(
        start,
        [
            {"at": 0, "create": scaled},
            {"at": 0, "create": kept},
            {"at": "1h", "update": one},
            {"at": "2h", "update": scaled},
            {"at": "3h", "delete": {"kind": "StatefulSet", "namespace": NS, "name": "cache"}},
        ],
    )
    result = run.run()
    db1 = [(r.arrival, r.outcome) for r in result.pods if r.key == f"{NS}/db-1"]
    assert db1 == [(0.0, DELETED), (7200.0, RUNNING)]
    again = run.cluster.pvcs[f"{NS}/data-db-1"]
    assert again["metadata"]["uid"] != first["metadata"]["uid"], "a new claim, not the deleted one"
    assert first_volume not in run.cluster.pvs, "the deleted claim's volume (reclaimPolicy Delete) is gone"
    assert again["spec"]["volumeName"] in run.cluster.pvs
    assert f"{NS}/data-db-0" in run.cluster.pvcs, "ordinal 0 was never condemned: its claim stays"
    assert f"{NS}/data-cache-0" not in run.cluster.pvcs
    assert run.cluster.pvs["pv-local"]["status"]["phase"] == "Released"


def test_a_mirrored_deployment_without_owner_references_adopts_its_replicaset_and_pods() -> None:
    """As the syncer mirrors a cluster (ownerReferences stripped): the Deployment adopts the orphan ReplicaSet its
    selector matches, the ReplicaSet its pods; nothing new is made, and a template change rolls out from it."""
    deployment = _workload("Deployment", "web", {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                                 "template": _template("web")})  # fmt: skip
    rs_template = _template("web")
    rs_template["metadata"]["labels"]["pod-template-hash"] = "5d8c9"
    selector = {"matchLabels": {"app": "web", "pod-template-hash": "5d8c9"}}
    rs = _workload("ReplicaSet", "web-5d8c9", {"replicas": 2, "template": rs_template, "selector": selector})
    rs["metadata"]["labels"] = dict(rs_template["metadata"]["labels"])
    rs["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    pods = []
    for name in ("web-5d8c9-aaaaa", "web-5d8c9-bbbbb"):
        pod = _pod(name, "web", "n1")
        pod["metadata"]["labels"]["pod-template-hash"] = "5d8c9"
        pods.append(pod)
    rolled = copy.deepcopy(deployment)
    rolled["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    run = _replay([_node("n1"), *pods, rs, deployment], [{"at": "1h", "update": rolled}])
    result = run.run()
    assert [r.key for r in result.pods if r.arrival == 0.0] == [f"{NS}/web-5d8c9-aaaaa", f"{NS}/web-5d8c9-bbbbb"]
    assert run.controllers is not None
    sets = [o for o in run.controllers.objects() if o["kind"] == "ReplicaSet"]
    sizes = {s["metadata"]["name"]: s["spec"]["replicas"] for s in sets}
    assert sizes.pop("web-5d8c9") == 0, "the rollout scaled the adopted ReplicaSet down"
    assert list(sizes.values()) == [2], "and one new ReplicaSet up"
    assert {r.outcome for r in result.pods if r.arrival == 0.0} == {DELETED}


def test_a_pod_naming_its_owner_by_a_uid_the_hand_written_owner_lacks_is_the_owners_by_kind_and_name() -> None:
    """The replay's store gives the ReplicaSet a uid of its own; the pod naming it by another uid stays its own (the
    garbage collector would delete a pod whose owner's uid is not there)."""
    rs = _workload("ReplicaSet", "front", {"replicas": 2, "selector": {"matchLabels": {"app": "front"}},
                                           "template": _template("front")})  # fmt: skip
    pod = _pod("front-aaaaa", "front", "n1")
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "front", "uid": "written-by-hand", "controller": True}
    pod["metadata"]["ownerReferences"] = [ref]
    run = _replay([_node("n1"), pod, rs])
    result = run.run()
    assert (result.pods[0].key, result.pods[0].outcome) == (f"{NS}/front-aaaaa", RUNNING)
    assert len(result.pods) == 2 and all(r.outcome == RUNNING for r in result.pods)


def test_a_snapshot_jobs_update_naming_the_uid_it_came_with_applies_to_it() -> None:
    """The snapshot's Job names its generated selector by its uid there; the replay's store gives it another, and its
    pod and a later update naming the old one still refer to it."""
    spec: Obj = {"completions": 4, "parallelism": 1, "template": _template("j"),
                 "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-j"}}}  # fmt: skip
    spec["template"]["spec"]["restartPolicy"] = "Never"
    generated = {"batch.kubernetes.io/controller-uid": "u-j", "controller-uid": "u-j",
                 "batch.kubernetes.io/job-name": "j", "job-name": "j"}  # fmt: skip
    spec["template"]["metadata"]["labels"].update(generated)
    job = _workload("Job", "j", spec)
    job["metadata"]["uid"] = "u-j"
    pod = _pod("j-aaaaa", "j", "n1")
    pod["metadata"]["labels"].update(generated)
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u-j", "controller": True}
    ]
    wider = copy.deepcopy(job)
    wider["spec"]["parallelism"] = 2
    run = _replay([_node("n1"), pod, job], [{"at": "10m", "update": wider}])
    result = run.run()
    first = result.pods[0]
    assert (first.key, first.arrival, first.outcome) == (f"{NS}/j-aaaaa", 0.0, RUNNING)
    assert [r.arrival for r in result.pods] == [0.0, 600.0]
    assert run.controllers is not None
    stored = run.controllers.get("Job", NS, "j")
    assert stored is not None and stored["spec"]["parallelism"] == 2 and stored["metadata"]["uid"] != "u-j"
