"""End to end: v1.36's Workloads and PodGroups (scheduling.k8s.io/v1alpha2) mirrored from one ``kss serve
--kube-version 1.36`` (the source) into another by ``python -m syncer``, GenericWorkload on both sides: the objects
keep their kind and spec, a PodGroup's status is not copied, pods keep their schedulingGroup, and scheduler-plugins'
PodGroup of the same name is mirrored apart."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from syncer.translate import SOURCE_UID_ANNOTATION
from tests.conftest import free_port, launch_server, start_servers
from tests.syncer.proxy import RecordingProxy
from tests.syncer.test_e2e import Mirror, core, eventually, pod_body

WL = ("scheduling.k8s.io", "v1alpha2", "default", "workloads")
PG = ("scheduling.k8s.io", "v1alpha2", "default", "podgroups")
CRD_PG = ("scheduling.x-k8s.io", "v1alpha1", "default", "podgroups")
V1_36 = {
    "KSS_KUBE_VERSION": "1.36",
    "KSS_FEATURE_GATES": "GenericWorkload=true",
    "KSS_RUNTIME_CONFIG": "scheduling.k8s.io/v1alpha2=true",
}


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    source_env = {"KSS_SCHEDULER_ENABLED": "false", "KSS_CONTROLLERS": "false", "KSS_WATCH_BOOKMARK_SECONDS": "1"}
    simulator_env = {"KSS_SCHEDULER_ENABLED": "false", "KSS_CONTROLLERS": "false", "KSS_KUBELET": "false"}
    source, simulator = start_servers(
        launch_server(tmp_path, f"sqlite:///{tmp_path / 'source.db'}", env={**source_env, **V1_36}),
        launch_server(tmp_path, f"sqlite:///{tmp_path / 'simulator.db'}", env={**simulator_env, **V1_36}),
    )
    proxy = RecordingProxy(source.url).start()
    m = Mirror(tmp_path, source, simulator, proxy, core(source.url), core(simulator.url), free_port())
    yield m
    if m.process is not None and m.process.poll() is None:
        m.process.terminate()
        try:
            m.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            m.process.kill()
    proxy.stop()
    simulator.stop()
    source.stop()


def custom(url: str) -> client.CustomObjectsApi:
    cfg = client.Configuration()
    cfg.host = url
    return client.CustomObjectsApi(client.ApiClient(cfg))


def _get(api: client.CustomObjectsApi, where: tuple[str, str, str, str], name: str) -> dict[str, Any] | None:
    try:
        return api.get_namespaced_custom_object(*where, name)  # type: ignore[no-any-return]
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def test_v1_36_workloads_and_pod_groups_are_mirrored(mirror: Mirror) -> None:
    src, sim = custom(mirror.source.url), custom(mirror.simulator.url)
    workload = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "train"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
    }
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "gang"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}},
            "schedulingPolicy": {"gang": {"minCount": 2}},
        },
    }
    src.create_namespaced_custom_object(*WL, workload)
    src.create_namespaced_custom_object(*PG, group)
    condition = {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": "",
                 "lastTransitionTime": "2026-04-22T00:00:00Z"}  # fmt: skip
    src.patch_namespaced_custom_object_status(*PG, "gang", {"status": {"conditions": [condition]}})
    crd = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "gang"},
           "spec": {"minMember": 5}}  # fmt: skip
    src.create_namespaced_custom_object(*CRD_PG, crd)
    body = pod_body("worker-0")
    body["spec"]["schedulingGroup"] = {"podGroupName": "gang"}
    created = httpx.post(f"{mirror.source.url}/api/v1/namespaces/default/pods", json=body, timeout=10)
    assert created.status_code == 201, created.text
    source_uid = src.get_namespaced_custom_object(*PG, "gang")["metadata"]["uid"]
    mirror.start_syncer()

    mirrored = eventually(lambda: _get(sim, PG, "gang"), what="the v1alpha2 PodGroup")
    assert (mirrored["apiVersion"], mirrored["kind"]) == ("scheduling.k8s.io/v1alpha2", "PodGroup")
    assert mirrored["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert mirrored["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == source_uid
    assert mirrored["status"] == {}, "the source scheduler's conditions are not the simulator's"
    copied = eventually(lambda: _get(sim, WL, "train"), what="the v1alpha2 Workload")
    assert copied["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert eventually(lambda: _get(sim, CRD_PG, "gang"), what="the CRD PodGroup")["spec"] == {"minMember": 5}
    pods = eventually(lambda: mirror.sim_pods().get("worker-0") and mirror.sim_pods(), what="the member pod")
    assert pods["worker-0"]["spec"]["schedulingGroup"] == {"podGroupName": "gang"}

    src.delete_namespaced_custom_object(*PG, "gang")
    eventually(lambda: _get(sim, PG, "gang") is None, what="the deletion")
    assert _get(sim, CRD_PG, "gang") is not None, "the other kind of the same name stays"
    assert mirror.proxy.mutating() == [], "the syncer never writes to the source"
