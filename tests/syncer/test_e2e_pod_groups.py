"""End to end: PodGroups and Workloads mirrored from one ``kss serve`` (the source) into another by ``python -m
syncer``, with the GenericWorkload gate on both sides, then with the simulator lacking it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from syncer.translate import SOURCE_UID_ANNOTATION
from tests.conftest import Server, free_port, launch_server, start_servers
from tests.syncer.proxy import RecordingProxy
from tests.syncer.test_e2e import Mirror, core, eventually, node_body, pod_body

PG = ("scheduling.x-k8s.io", "v1alpha1", "default", "podgroups")
WL = ("scheduling.k8s.io", "v1alpha1", "default", "workloads")
GATE = {"KSS_FEATURE_GATES": "GenericWorkload=true", "KSS_RUNTIME_CONFIG": "scheduling.k8s.io/v1alpha1=true"}


def custom(url: str) -> client.CustomObjectsApi:
    cfg = client.Configuration()
    cfg.host = url
    return client.CustomObjectsApi(client.ApiClient(cfg))


def _start(tmp_path: Path, simulator_env: dict[str, str]) -> Mirror:
    # Both ends at v1.35, whose Workload this is (scheduling.k8s.io/v1alpha1; test_e2e_workload_v1alpha2.py: v1.36's).
    v1_35 = {"KSS_KUBE_VERSION": "1.35"}
    source_env = {
        "KSS_SCHEDULER_ENABLED": "false",
        "KSS_CONTROLLERS": "false",
        "KSS_WATCH_BOOKMARK_SECONDS": "1",
        **v1_35,
    }
    # The simulator's own PodGroup controller off: the test checks what the syncer writes, nothing else.
    simulator_env = {"KSS_CONTROLLERS": "false", "KSS_KUBELET": "false", **v1_35, **simulator_env}
    source, simulator = start_servers(
        launch_server(tmp_path, f"sqlite:///{tmp_path / 'source.db'}", env={**source_env, **GATE}),
        launch_server(tmp_path, f"sqlite:///{tmp_path / 'simulator.db'}", env=simulator_env),
    )
    proxy = RecordingProxy(source.url).start()
    return Mirror(tmp_path, source, simulator, proxy, core(source.url), core(simulator.url), free_port())


def _stop(m: Mirror, servers: list[Server]) -> None:
    if m.process is not None and m.process.poll() is None:
        m.process.terminate()
        try:
            m.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            m.process.kill()
    m.proxy.stop()
    for server in servers:
        server.stop()


@pytest.fixture
def mirror_factory(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], Mirror]]:
    started: list[Mirror] = []

    def make(simulator_env: dict[str, str]) -> Mirror:
        m = _start(tmp_path, simulator_env)
        started.append(m)
        return m

    yield make
    for m in started:
        _stop(m, [m.simulator, m.source])


def _pod_group(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, "minResources": {"cpu": "2"}},
    }


def _workload(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]},
    }


def _create_grouped_pod(url: str, name: str) -> None:
    """A pod of the group and the workload (raw JSON: the client's models are newer than v1.35's workloadRef)."""
    body = pod_body(name, labels={"scheduling.x-k8s.io/pod-group": "gang"})
    body["spec"]["workloadRef"] = {"name": "train", "podGroup": "workers"}
    r = httpx.post(f"{url}/api/v1/namespaces/default/pods", json=body, timeout=10)
    assert r.status_code == 201, r.text


def _get(api: client.CustomObjectsApi, where: tuple[str, str, str, str], name: str) -> dict[str, Any] | None:
    try:
        return api.get_namespaced_custom_object(*where, name)  # type: ignore[no-any-return]
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def test_pod_groups_and_workloads_are_mirrored_read_only(mirror_factory: Callable[[dict[str, str]], Mirror]) -> None:
    mirror = mirror_factory(GATE)
    src, sim = custom(mirror.source.url), custom(mirror.simulator.url)
    mirror.src.create_node(node_body("node-a"))
    src.create_namespaced_custom_object(*PG, _pod_group("gang", 2))
    src.patch_namespaced_custom_object_status(*PG, "gang", {"status": {"phase": "Running", "running": 2}})
    src.create_namespaced_custom_object(*WL, _workload("train"))
    src.create_namespaced_custom_object(*WL, _workload("doomed"))
    for i in range(2):
        _create_grouped_pod(mirror.source.url, f"worker-{i}")
    source_uid = src.get_namespaced_custom_object(*PG, "gang")["metadata"]["uid"]
    mirror.start_syncer()

    group = eventually(lambda: _get(sim, PG, "gang"), what="the PodGroup")
    assert group["spec"] == {"minMember": 2, "minResources": {"cpu": "2"}}
    assert group["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == source_uid
    assert "status" not in group, "the source controller's status is not the simulator's"
    assert eventually(lambda: _get(sim, WL, "train"), what="the Workload")["spec"]["podGroups"][0]["name"] == "workers"
    pods = eventually(lambda: len(mirror.sim_pods()) == 2 and mirror.sim_pods(), what="the grouped pods")
    assert pods["worker-0"]["spec"]["workloadRef"] == {"name": "train", "podGroup": "workers"}
    assert pods["worker-0"]["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "gang"}

    src.patch_namespaced_custom_object(*PG, "gang", {"spec": {"minMember": 3}})
    eventually(lambda: (_get(sim, PG, "gang") or {})["spec"]["minMember"] == 3, what="the spec update")

    sim.delete_namespaced_custom_object(*WL, "train")  # a user in the simulator
    src.patch_namespaced_custom_object(*WL, "train", {"metadata": {"labels": {"later": "update"}}})
    eventually(lambda: mirror.metric("Workload", "tombstoned") >= 1, what="the update of a deleted Workload")
    assert _get(sim, WL, "train") is None, "a deletion made in the simulator is not undone"

    src.delete_namespaced_custom_object(*WL, "doomed")
    src.delete_namespaced_custom_object(*PG, "gang")
    eventually(lambda: _get(sim, PG, "gang") is None and _get(sim, WL, "doomed") is None, what="the deletions")
    assert mirror.proxy.mutating() == [], "the syncer never writes to the source"


def test_a_simulator_without_the_gate_gets_pod_groups_but_no_workloads(
    mirror_factory: Callable[[dict[str, str]], Mirror],
) -> None:
    mirror = mirror_factory({})
    src, sim = custom(mirror.source.url), custom(mirror.simulator.url)
    src.create_namespaced_custom_object(*PG, _pod_group("gang", 2))
    src.create_namespaced_custom_object(*WL, _workload("train"))
    _create_grouped_pod(mirror.source.url, "worker-0")
    mirror.start_syncer()

    eventually(lambda: _get(sim, PG, "gang"), what="the PodGroup")
    pod = eventually(lambda: mirror.sim_pods().get("worker-0"), what="the pod")
    assert "workloadRef" not in pod["spec"], "the simulator drops the disabled field"
    log = mirror.syncer_log()
    assert log.count("the simulator does not serve workloads") == 1
    assert mirror.metric("Workload", "failed") == 0 and mirror.metric("Workload", "listed") == 0
    assert not any("/workloads" in path for _, path in mirror.proxy.requests), "no Workload list or watch in the source"
