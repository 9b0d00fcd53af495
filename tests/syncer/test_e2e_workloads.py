"""End to end: a Deployment (its ReplicaSet and pods made by the source's own controllers, as kube-controller-manager
makes them) mirrored by ``python -m syncer --workloads`` into a ``kss serve`` whose controllers then run it: the
mirrored ReplicaSet adopts the mirrored pods, the Deployment adopts the ReplicaSet, a scale in the source is
followed by the simulator's controllers. Without the flag only the pods are mirrored, as before."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from syncer.translate import SOURCE_UID_ANNOTATION
from tests.conftest import KSS, free_port, launch_server, start_servers
from tests.syncer.proxy import RecordingProxy
from tests.syncer.test_e2e import REPO, Mirror, core, eventually, node_body, raw

LABELS = {"app": "web"}


def apps(url: str) -> client.AppsV1Api:
    cfg = client.Configuration()
    cfg.host = url
    return client.AppsV1Api(client.ApiClient(cfg))


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    # The source plays production with kube-controller-manager (its controllers on) and no scheduler, so the test
    # decides which pods are bound there.
    source, simulator = start_servers(
        launch_server(
            tmp_path,
            f"sqlite:///{tmp_path / 'source.db'}",
            env={"KSS_SCHEDULER_ENABLED": "false", "KSS_WATCH_BOOKMARK_SECONDS": "1"},
        ),
        launch_server(tmp_path, f"sqlite:///{tmp_path / 'simulator.db'}"),
    )
    proxy = RecordingProxy(source.url).start()
    m = Mirror(tmp_path, source, simulator, proxy, core(source.url), core(simulator.url), free_port())
    try:
        yield m
    finally:
        if m.process is not None and m.process.poll() is None:
            m.process.terminate()
            try:
                m.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                m.process.kill()
        proxy.stop()
        simulator.stop()
        source.stop()


def _deployment(replicas: int) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    return {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": LABELS},
            "template": {"metadata": {"labels": LABELS}, "spec": {"containers": [container]}},
        },
    }


def _items(api: client.CoreV1Api, path: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in raw(api, path)["items"]}


def _source_deployment(m: Mirror, replicas: int) -> dict[str, dict[str, Any]]:
    """Create the source's Deployment and wait for its controllers to make the ReplicaSet and pods."""
    for name in ("node-a", "node-b"):
        m.src.create_node(node_body(name))
    apps(m.source.url).create_namespaced_deployment("default", _deployment(replicas))
    return eventually(lambda: len(m.src_pods()) == replicas and m.src_pods(), what="the source's pods")


def _bind(api: client.CoreV1Api, name: str, node: str) -> None:
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": node}}
    api.create_namespaced_pod_binding(name, "default", body, _preload_content=False)


def _controller_uid(obj: dict[str, Any]) -> str | None:
    refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
    return refs[0]["uid"] if refs else None


def test_a_deployment_is_run_by_the_simulators_controllers_on_the_mirrored_pods(mirror: Mirror) -> None:
    source_pods = _source_deployment(mirror, 3)
    existing = sorted(source_pods)[0]
    _bind(mirror.src, existing, "node-b")  # production's load, already placed
    source_sets = _items(mirror.src, "/apis/apps/v1/namespaces/default/replicasets")
    assert len(source_sets) == 1
    (rs_name,) = source_sets
    mirror.start_syncer("--workloads")

    def adopted() -> dict[str, dict[str, Any]] | None:
        sets = _items(mirror.sim, "/apis/apps/v1/namespaces/default/replicasets")
        deployments = _items(mirror.sim, "/apis/apps/v1/namespaces/default/deployments")
        pods = mirror.sim_pods()
        if "web" not in deployments or rs_name not in sets or _controller_uid(sets[rs_name]) is None:
            return None
        rs_uid = sets[rs_name]["metadata"]["uid"]
        if set(pods) != set(source_pods) or any(_controller_uid(p) != rs_uid for p in pods.values()):
            return None
        return {"sets": sets, "deployment": deployments["web"], "pods": pods}

    seen = eventually(adopted, what="the ReplicaSet to adopt the mirrored pods and the Deployment the ReplicaSet")
    assert list(seen["sets"]) == [rs_name], "the Deployment adopted the mirrored ReplicaSet instead of making one"
    assert _controller_uid(seen["sets"][rs_name]) == seen["deployment"]["metadata"]["uid"]
    assert seen["pods"][existing]["spec"]["nodeName"] == "node-b", "the existing load keeps its node"
    made = [
        e for e in raw(mirror.sim, "/api/v1/namespaces/default/events")["items"] if e["reason"] == "SuccessfulCreate"
    ]
    assert made == [], "the simulator's ReplicaSet adopted the pods, it created none"
    source_uid = apps(mirror.source.url).read_namespaced_deployment("web", "default").metadata.uid
    assert seen["deployment"]["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == source_uid
    # The simulator's own account: its scheduler placed the others, its kubelet runs them, its controllers count.
    eventually(
        lambda: (
            (raw(mirror.sim, "/apis/apps/v1/namespaces/default/deployments/web").get("status") or {}).get(
                "availableReplicas"
            )
            == 3
        ),
        what="the simulator's Deployment status",
    )
    assert (apps(mirror.source.url).read_namespaced_deployment("web", "default").status.available_replicas or 0) < 3

    # Production scales up: its controllers make two pods; the simulator's make their own two for the same spec.
    apps(mirror.source.url).patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    eventually(lambda: len(mirror.src_pods()) == 5, what="the source's new pods")
    eventually(lambda: len(mirror.sim_pods()) == 5, what="the simulator to follow the scale")
    eventually(lambda: mirror.metric("Pod", "left_to_controller") >= 2, what="the source's new pods to be left out")
    pods = mirror.sim_pods()
    assert set(source_pods) <= set(pods), "the mirrored pods stay"
    assert not (set(mirror.src_pods()) - set(source_pods)) & set(pods), "no copy of the source's new pods"
    sets = _items(mirror.sim, "/apis/apps/v1/namespaces/default/replicasets")
    assert list(sets) == [rs_name] and sets[rs_name]["spec"]["replicas"] == 5
    assert {_controller_uid(p) for p in pods.values()} == {sets[rs_name]["metadata"]["uid"]}

    # And down again: the simulator's ReplicaSet removes pods by its own ranking, the source's deletions are not
    # applied on top of it.
    apps(mirror.source.url).patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 2}})
    eventually(lambda: len(mirror.src_pods()) == 2, what="the source's scale-down")
    eventually(lambda: len(mirror.sim_pods()) == 2, what="the simulator to follow the scale-down")
    assert mirror.metric("Pod", "failed") == mirror.metric("Deployment", "failed") == 0
    assert mirror.proxy.mutating() == [], "the syncer never writes to the source"


def test_without_the_flag_only_the_pods_are_mirrored(mirror: Mirror) -> None:
    source_pods = _source_deployment(mirror, 2)
    mirror.start_syncer()
    eventually(lambda: set(mirror.sim_pods()) == set(source_pods), what="the pods")
    pods = mirror.sim_pods()
    assert all("ownerReferences" not in p["metadata"] for p in pods.values()), "orphans, as before"
    assert not raw(mirror.sim, "/apis/apps/v1/namespaces/default/deployments")["items"]
    assert not raw(mirror.sim, "/apis/apps/v1/namespaces/default/replicasets")["items"]
    assert not any(path.startswith("/apis/apps/") for _, path in mirror.proxy.requests), "apps/v1 never asked"


def test_kss_import_workloads_copies_a_deployment_and_a_job_for_the_simulator_to_run(mirror: Mirror) -> None:
    source_pods = _source_deployment(mirror, 2)
    batch = client.BatchV1Api(apps(mirror.source.url).api_client)
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    template = {"metadata": {"labels": {"team": "ml"}}, "spec": {"restartPolicy": "Never", "containers": [container]}}
    batch.create_namespaced_job("default", {"metadata": {"name": "train"}, "spec": {"template": template}})
    source_job = raw(mirror.src, "/apis/batch/v1/namespaces/default/jobs/train")
    source_uid = source_job["metadata"]["uid"]
    # One of its pods, as the Job controller makes them (whether or not the source runs one).
    job_pod = {
        "metadata": {
            "name": "train-x7k2p",
            "labels": {
                "team": "ml",
                "batch.kubernetes.io/controller-uid": source_uid,
                "batch.kubernetes.io/job-name": "train",
            },
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": source_uid, "controller": True}
            ],
        },
        "spec": template["spec"],
    }
    mirror.src.create_namespaced_pod("default", job_pod)
    source_config = mirror.workdir / "source.kubeconfig"
    source_config.write_text(mirror.source.kubeconfig.read_text().replace(mirror.source.url, mirror.proxy.url))
    done = subprocess.run(
        [
            str(KSS),
            "import",
            "--kubeconfig",
            str(source_config),
            "--target-url",
            mirror.simulator.url,
            "--workloads",
            "--log-level",
            "INFO",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    def adopted() -> bool:
        pods = {n: p for n, p in mirror.sim_pods().items() if n in source_pods}
        sets = _items(mirror.sim, "/apis/apps/v1/namespaces/default/replicasets")
        return len(pods) == 2 and len(sets) == 1 and all(_controller_uid(p) for p in pods.values())

    eventually(adopted, what="the imported Deployment's pods to be adopted")
    job = raw(mirror.sim, "/apis/batch/v1/namespaces/default/jobs/train")
    assert source_uid not in str(job["spec"]), "neither the selector nor the template's labels name the source uid"
    assert job["spec"]["template"]["metadata"]["labels"].get("team") == "ml"
    assert job["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == source_uid
    assert "train-x7k2p" not in mirror.sim_pods(), "the source Job's pods are its own, the simulator's Job makes its"
    assert not any(source_uid in str(p["metadata"].get("labels")) for p in mirror.sim_pods().values())
    # The source is a kss serve with its own Job controller: if it made a pod before it saw the test's, it keeps its
    # own and deletes the test's as one too many (parallelism 1), so which pod the import meets depends on that race
    # (the cause of a failure in about one run in ten when this named train-x7k2p alone). Either way it is left out.
    left_out = re.findall(r"left out Pod default/(train-\w+): its Job runs in the simulator", done.stderr)
    assert left_out, done.stderr
    assert not set(left_out) & set(mirror.sim_pods())
    assert mirror.proxy.mutating() == []
