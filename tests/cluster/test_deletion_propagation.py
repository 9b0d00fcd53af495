"""Deletion with finalizers and propagation through the Kubernetes API, as on a real cluster: the real kubectl's
``delete`` (background by default, ``--cascade=foreground``, ``--cascade=orphan``) and the official client's
V1DeleteOptions against the live app, with the garbage collector started on the app's store (the lead wires it
into ControllerManager; until then this fixture runs it, as kss_sim.main will)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from kubernetes import client, config
from kubernetes.client.rest import ApiException  # type: ignore[attr-defined]

from kss_sim.config import Settings
from kss_sim.controllers.garbage_collector import GarbageCollector
from kss_sim.kube.objects import Obj
from kss_sim.main import create_app
from kss_sim.serve_cli import kubeconfig
from tests.conftest import KUBECTL, eventually, free_port

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")


@dataclass
class Live:
    kubeconfig: Path
    api: Any
    gc: GarbageCollector

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "KUBECACHEDIR": str(self.kubeconfig.parent / "kubecache")},
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def get(self, *args: str) -> Obj | None:
        proc = self.kubectl("get", *args, "-o", "json", check=False)
        if proc.returncode != 0:
            assert "NotFound" in proc.stderr, proc.stderr
            return None
        result: Obj = json.loads(proc.stdout)
        return result


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("deletion")
    app = create_app(Settings(database_url=f"sqlite:///{tmp / 'kss.db'}", scheduler_enabled=False, controllers=False))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    gc = GarbageCollector(app.state.store)
    gc.start()
    try:
        path = tmp / "kubeconfig"
        path.write_text(kubeconfig(f"http://127.0.0.1:{port}"))
        yield Live(path, config.new_client_from_config(str(path)), gc)  # type: ignore[no-untyped-call]
    finally:
        gc.stop()
        server.should_exit = True
        thread.join(timeout=30)


def apps_api(live: Live) -> Any:
    return client.AppsV1Api(live.api)


def core_api(live: Live) -> Any:
    return client.CoreV1Api(live.api)


def batch_api(live: Live) -> Any:
    return client.BatchV1Api(live.api)


def template(app: str) -> Obj:
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def make_rs(live: Live, name: str, *, owner: Obj | None = None) -> Obj:
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}}, "template": template(name)},
    }
    if owner is not None:
        body["metadata"]["ownerReferences"] = [ref_to(owner)]
    result: Obj = apps_api(live).create_namespaced_replica_set("default", body).to_dict()
    return result


def ref_to(owner: Any) -> Obj:
    data = owner if isinstance(owner, dict) else owner.to_dict()
    meta = data["metadata"]
    return {
        "apiVersion": data.get("api_version") or data.get("apiVersion"),
        "kind": data["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def make_pod(live: Live, name: str, owner: Obj, *, finalizers: list[str] | None = None) -> None:
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "ownerReferences": [ref_to(owner)], "finalizers": finalizers or []},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    core_api(live).create_namespaced_pod("default", body)


def test_kubectl_delete_deployment_takes_its_replica_sets_and_pods_in_the_background(live: Live) -> None:
    deploy = apps_api(live).create_namespaced_deployment(
        "default",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "bg"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "bg-1"}}, "template": template("bg-1")},
        },
    )
    rs = make_rs(live, "bg-1", owner={"kind": "Deployment", **deploy.to_dict(), "api_version": "apps/v1"})
    make_pod(live, "bg-1-a", {**rs, "kind": "ReplicaSet", "api_version": "apps/v1"})
    proc = live.kubectl("delete", "deploy", "bg")
    assert proc.stdout.strip() == 'deployment.apps "bg" deleted'
    eventually(lambda: live.get("rs", "bg-1") is None and live.get("pod", "bg-1-a") is None)


def test_kubectl_cascade_foreground_keeps_the_owner_until_its_blocking_dependents_are_gone(live: Live) -> None:
    rs = {**make_rs(live, "fg"), "kind": "ReplicaSet", "api_version": "apps/v1"}
    make_pod(live, "fg-a", rs)
    make_pod(live, "fg-held", rs, finalizers=["example.com/hold"])
    live.kubectl("delete", "rs", "fg", "--cascade=foreground", "--wait=false")
    eventually(lambda: live.get("pod", "fg-a") is None)
    owner = live.get("rs", "fg")
    assert owner is not None
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert owner["metadata"]["deletionTimestamp"] and owner["metadata"]["deletionGracePeriodSeconds"] == 0
    held = live.get("pod", "fg-held")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    # A finalizer cannot be added to an object being deleted.
    refused = live.kubectl(
        "patch",
        "rs",
        "fg",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["foregroundDeletion","x/y"]}}',
        check=False,
    )
    assert refused.returncode != 0
    assert 'no new finalizers can be added if the object is being deleted, found new finalizers []string{"x/y"}' in (
        refused.stderr
    )
    live.kubectl("patch", "pod", "fg-held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    eventually(lambda: live.get("pod", "fg-held") is None and live.get("rs", "fg") is None)


def test_kubectl_cascade_orphan_leaves_the_pods_without_the_reference(live: Live) -> None:
    rs = {**make_rs(live, "orph"), "kind": "ReplicaSet", "api_version": "apps/v1"}
    make_pod(live, "orph-a", rs)
    live.kubectl("delete", "rs", "orph", "--cascade=orphan")
    assert live.get("rs", "orph") is None  # kubectl waited until it was gone
    pod = live.get("pod", "orph-a")
    assert pod is not None and "ownerReferences" not in pod["metadata"]


def test_official_client_delete_options_and_validation(live: Live) -> None:
    apps = apps_api(live)
    rs = {**make_rs(live, "opts"), "kind": "ReplicaSet", "api_version": "apps/v1"}
    make_pod(live, "opts-a", rs, finalizers=["example.com/hold"])
    with pytest.raises(ApiException) as caught:
        apps.delete_namespaced_replica_set("opts", "default", body=client.V1DeleteOptions(propagation_policy="Later"))
    assert caught.value.status == 422
    assert json.loads(str(caught.value.body))["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Later": '
        'supported values: "Foreground", "Background", "Orphan"'
    )
    assert live.get("rs", "opts") is not None  # refused: nothing changed
    apps.delete_namespaced_replica_set("opts", "default", body=client.V1DeleteOptions(propagation_policy="Foreground"))
    marked = live.get("rs", "opts")
    assert marked is not None and marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    # Deleting again with Orphan swaps the GC finalizer: the collector orphans instead and lets it go.
    apps.delete_namespaced_replica_set("opts", "default", body=client.V1DeleteOptions(propagation_policy="Orphan"))
    eventually(lambda: live.get("rs", "opts") is None)
    pod = live.get("pod", "opts-a")
    assert pod is not None
    # Orphaning takes the reference out whether or not the foreground pass had already marked the pod deleted.
    assert "ownerReferences" not in pod["metadata"]
    live.kubectl("patch", "pod", "opts-a", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    eventually(lambda: live.get("pod", "opts-a") is None)


def test_a_job_deleted_without_options_orphans_its_pods_and_warns(live: Live) -> None:
    job = batch_api(live).create_namespaced_job(
        "default",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "legacy"},
            "spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
            },
        },
    )
    make_pod(live, "legacy-a", {**job.to_dict(), "kind": "Job", "api_version": "batch/v1"})
    # No DeleteOptions at all, as a script calling the client without a body does.
    _, code, headers = batch_api(live).delete_namespaced_job_with_http_info("legacy", "default")
    assert code == 200
    assert "child pods are preserved by default when jobs are deleted" in (headers.get("Warning") or "")
    eventually(lambda: live.get("job", "legacy") is None)
    pod = live.get("pod", "legacy-a")
    assert pod is not None and "ownerReferences" not in pod["metadata"]
