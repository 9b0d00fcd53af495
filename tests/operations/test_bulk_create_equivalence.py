"""The bulk create (``mode=create``) stores each object exactly as a create of it alone would: the same bytes,
managedFields, resourceVersions and watch events, the status it carries in place of the server's where it keeps it.
"""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime

import orjson
import pytest

from kss_sim.cluster.admission import uids
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.engine_host.scheduler_thread import SchedulerService
from kss_sim.kube.objects import Obj
from kss_sim.operations import snapshot
from kss_sim.operations.import_export import OperationsService

RUNNING = {
    "phase": "Running",
    "conditions": [
        {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-11-20T08:00:00Z"},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-11-20T08:00:00Z"},
    ],
    "hostIP": "10.0.0.1",
    "podIP": "100.64.0.9",
    "podIPs": [{"ip": "100.64.0.9"}],
    "startTime": "2026-11-20T08:00:00Z",
    "containerStatuses": [
        {
            "name": "web",
            "state": {"running": {"startedAt": "2026-11-20T08:00:01Z"}},
            "lastState": {},
            "ready": True,
            "restartCount": 0,
            "image": "ghcr.io/example/web:1.42.0",
            "imageID": "ghcr.io/example/web@sha256:0f3a",
            "containerID": "containerd://9e1b",
            "started": True,
        }
    ],
    "qosClass": "Burstable",
}


def _pod(name: str, *, node: str | None, token: str, status: Obj | None) -> Obj:
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "generateName": "web-7d9f-",
            "labels": {"app": "web", "pod-template-hash": "7d9f"},
            "annotations": {"syncer.kss.dev/source-uid": f"src-{name}", "prometheus.io/scrape": "true"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f", "uid": "rs-1", "controller": True}
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "ghcr.io/example/web:1.42.0",
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
                    "volumeMounts": [{"name": token, "readOnly": True, "mountPath": "/var/run/secrets/token"}],
                }
            ],
            "volumes": [{"name": token, "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                {"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"},
            ],
            "priorityClassName": "high",
        },
    }
    if node:
        obj["spec"]["nodeName"] = node
    if status is not None:
        obj["status"] = status
    return obj


def _node(name: str, zone: str) -> Obj:
    capacity = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"providerID": f"aws:///{zone}/{name}", "taints": [{"key": "dedicated", "effect": "NoSchedule"}]},
        "status": {
            "capacity": capacity,
            "allocatable": {**capacity, "cpu": "15890m"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": name}],
            "images": [{"names": ["ghcr.io/example/web:1.42.0"], "sizeBytes": 123456789}],
            "nodeInfo": {"kubeletVersion": "v1.35.0", "architecture": "amd64", "operatingSystem": "linux"},
        },
    }


def _objects() -> list[Obj]:
    """Varied objects as ``kss import`` sends them, kinds mixed (the bulk create orders them)."""
    return [
        _node("n1", "us-east-1a"),
        _pod("web-7d9f-aaaaa", node="n1", token="kube-api-access-aaaaa", status=RUNNING),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}},
        _pod("web-7d9f-bbbbb", node=None, token="kube-api-access-bbbbb", status={"phase": "Pending"}),
        _node("n2", "us-east-1b"),
        _pod("web-7d9f-ccccc", node="n2", token="kube-api-access-ccccc", status=RUNNING),
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "gp3"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "team-a"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "gp3",
                "resources": {"requests": {"storage": "10Gi"}},
            },
            "status": {"phase": "Pending"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "team-a", "labels": {"app": "web"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "ghcr.io/example/web:1.42.0"}]},
                },
            },
            "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 1},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "nightly", "namespace": "team-a"},
            "spec": {
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "job", "image": "busybox:1.36"}]}
                }
            },
        },
    ]


def _fixed_clock() -> datetime:
    return datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


def _numbered_uids(monkeypatch: pytest.MonkeyPatch) -> None:
    """New objects' uids 1, 2, 3, ... from now on."""
    counter = itertools.count(1)
    monkeypatch.setattr(uids, "new_uid", lambda: f"00000000-0000-4000-8000-{next(counter):012d}")


def _store() -> ClusterStore:
    store = ClusterStore(None, clock=_fixed_clock)
    store.ensure_builtins()
    return store


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_each_object_is_stored_as_a_create_of_it_alone_stores_it(monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    _numbered_uids(monkeypatch)
    bulk = _store()
    start = bulk.resource_version
    service = OperationsService(bulk, SchedulerService(bulk), None, Settings())
    # As JSON (kss import's pages) the parsed objects are taken as they are; as YAML they are copied first.
    page = snapshot.dump({"apiVersion": "v1", "kind": "List", "items": _objects()}, fmt)
    answer = service.create_objects(page)
    assert answer["failed"] == 0, answer

    _numbered_uids(monkeypatch)
    alone = _store()
    assert alone.resource_version == start
    expected: list[tuple[str, str, int, bytes]] = []
    for obj in sorted(_objects(), key=lambda o: snapshot.CREATE_ORDER.index(o["kind"])):
        kind, meta = obj["kind"], obj["metadata"]
        created = alone.create(kind, copy.deepcopy(obj), meta.get("namespace"))
        raw = alone.read(kind, meta.get("namespace"), meta["name"]).raw
        if obj.get("status") and (kind != "Pod" or obj["spec"].get("nodeName")):
            # The status sent is kept in place of the server's; everything else is the create's.
            raw = orjson.dumps({**orjson.loads(raw), "status": obj["status"]})
        expected.append(("ADDED", kind, int(created["metadata"]["resourceVersion"]), raw))
    got = [(e.type, e.kind, e.resource_version, e.raw) for e in bulk.events_since(start)]
    assert got == expected
    # What is served afterwards is what the watch saw, and the answer names each object's uid, in the order sent.
    uid_of = {}
    for _, kind, _, raw in got:
        obj = orjson.loads(raw)
        meta = obj["metadata"]
        assert bulk.read(kind, meta.get("namespace"), meta["name"]).raw == raw
        uid_of[(kind, meta["name"])] = meta["uid"]
    assert [i["uid"] for i in answer["items"]] == [uid_of[(o["kind"], o["metadata"]["name"])] for o in _objects()]
