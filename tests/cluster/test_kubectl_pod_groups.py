"""PodGroup and Workload through the real kubectl and the official client's CustomObjectsApi, against ``kss serve``
without the GenericWorkload gate and with it (servers of this module at v1.35, whose Workload this is:
scheduling.k8s.io/v1alpha1 and pods' spec.workloadRef; tests/cluster/test_kubectl_workload_v1alpha2.py has v1.36's)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.conftest import KUBECTL, KubectlRunner, Server, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

PG = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")
WL = ("scheduling.k8s.io", "v1alpha1", "workloads")

POD_GROUP = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: nginx, namespace: kpg}
spec:
  minMember: 3
  minResources: {cpu: "3", memory: 3Gi}
  scheduleTimeoutSeconds: 10
"""
WORKLOAD = """
apiVersion: scheduling.k8s.io/v1alpha1
kind: Workload
metadata: {name: training, namespace: kwl}
spec:
  controllerRef: {apiGroup: batch, kind: Job, name: training}
  podGroups:
  - name: workers
    policy:
      gang: {minCount: 4}
  - name: driver
    policy:
      basic: {}
"""
GROUPED_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: worker-0
  namespace: {namespace}
  labels: {{scheduling.x-k8s.io/pod-group: nginx}}
spec:
  workloadRef: {{name: training, podGroup: workers}}
  containers: [{{name: c, image: busybox}}]
"""


def _server_at_v1_35(workdir: Path, **env: str) -> Server:
    """A ``kss serve`` at --kube-version 1.35 (v1.35's Workload API), API only."""
    return start_server(
        workdir,
        f"sqlite:///{workdir / 'kss.db'}",
        env={
            "KSS_KUBE_VERSION": "1.35",
            "KSS_SCHEDULER_ENABLED": "false",
            "KSS_CONTROLLERS": "false",
            "KSS_KUBELET": "false",
            **env,
        },
    )


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Started with --feature-gates' environment twin: GenericWorkload=true, and
    --runtime-config scheduling.k8s.io/v1alpha1=true (an alpha API is off by default)."""
    srv = _server_at_v1_35(
        tmp_path_factory.mktemp("kss-gated"),
        KSS_FEATURE_GATES="GenericWorkload=true",
        KSS_RUNTIME_CONFIG="scheduling.k8s.io/v1alpha1=true",
    )
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def gated_kubectl(gated: Server) -> KubectlRunner:
    return KubectlRunner(gated.kubeconfig)


@pytest.fixture(scope="module")
def ungated_kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubectlRunner]:
    """kubectl against a server with GenericWorkload at v1.35's default (off)."""
    srv = _server_at_v1_35(tmp_path_factory.mktemp("kss-ungated"))
    yield KubectlRunner(srv.kubeconfig)
    srv.stop()


def _rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.splitlines()[1:]}


# ---------------------------------------------------------------------------------------------- kubectl


def test_pod_groups_apply_get_describe_patch_delete(kubectl: KubectlRunner) -> None:
    assert "podgroup.scheduling.x-k8s.io/nginx created" in kubectl("apply", "-f", "-", input=POD_GROUP).stdout
    assert "unchanged" in kubectl("apply", "-f", "-", input=POD_GROUP).stdout
    again = kubectl("apply", "-f", "-", input=POD_GROUP.replace("minMember: 3", "minMember: 4")).stdout
    assert "podgroup.scheduling.x-k8s.io/nginx configured" in again

    lines = kubectl("get", "pg", "-n", "kpg").stdout.splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "MINMEMBER", "RUNNING", "SUCCEEDED", "FAILED", "AGE"]
    assert lines[1].split()[:2] == ["nginx", "4"], "no status yet: empty cells"
    kubectl(
        "patch", "pgs", "nginx", "-n", "kpg", "--subresource", "status", "--type", "merge",
        "-p", '{"status":{"phase":"Running","running":3,"succeeded":0,"failed":1}}',
    )  # fmt: skip
    assert _rows(kubectl("get", "podgroups", "-n", "kpg").stdout)["nginx"][:6] == [
        "nginx", "Running", "4", "3", "0", "1",
    ]  # fmt: skip

    described = kubectl("describe", "podgroup", "nginx", "-n", "kpg").stdout
    assert "Name:         nginx" in described and "Kind:         PodGroup" in described
    assert "Min Member:  4" in described and "Phase:" in described and "Events:" in described

    kubectl("label", "pg", "nginx", "-n", "kpg", "team=a")
    kubectl(
        "patch",
        "pg",
        "nginx",
        "-n",
        "kpg",
        "--type",
        "json",
        "-p",
        '[{"op":"replace","path":"/spec/minMember","value":5}]',
    )
    got = json.loads(kubectl("get", "pg", "nginx", "-n", "kpg", "-o", "json").stdout)
    assert got["metadata"]["labels"] == {"team": "a"} and got["spec"]["minMember"] == 5
    assert got["metadata"]["generation"] == 3 and got["status"]["phase"] == "Running"
    # A custom resource takes no strategic merge patch, as on kube-apiserver (kubectl patch's default type).
    smp = kubectl("patch", "pg", "nginx", "-n", "kpg", "-p", '{"spec":{"minMember":6}}', check=False)
    assert smp.returncode != 0 and "application/strategic-merge-patch+json is not supported" in smp.stderr

    assert 'podgroup.scheduling.x-k8s.io "nginx" deleted' in kubectl("delete", "pg", "nginx", "-n", "kpg").stdout
    assert kubectl("get", "pg", "-n", "kpg", "-o", "name").stdout.strip() == ""


def test_pod_group_errors_reach_kubectl_as_kube_apiserver_words_them(kubectl: KubectlRunner) -> None:
    bad = kubectl(
        "apply", "-f", "-", input=POD_GROUP.replace("minMember: 3", "minMember: 0").replace('"3"', "lots"), check=False
    )
    assert bad.returncode != 0
    assert 'The PodGroup "nginx" is invalid' in bad.stderr
    assert "spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to 1" in bad.stderr
    assert 'spec.minResources.cpu: Invalid value: "lots": spec.minResources.cpu in body should match' in bad.stderr
    typo = kubectl("create", "-f", "-", input=POD_GROUP.replace("minMember:", "minMembr:"), check=False)
    assert typo.returncode != 0 and 'unknown field "spec.minMembr"' in typo.stderr
    assert kubectl("get", "pg", "nginx", "-n", "kpg", check=False).returncode != 0, "nothing was written"


def test_pod_groups_watch(kubectl: KubectlRunner, server: Server) -> None:
    kubectl("create", "namespace", "kpg-watch")
    watcher = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(server.kubeconfig), "get", "pg", "-n", "kpg-watch", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KUBECACHEDIR": str(Path(server.kubeconfig).parent / "kubecache")},
    )
    try:
        time.sleep(1.5)
        kubectl("apply", "-f", "-", input=POD_GROUP.replace("kpg", "kpg-watch"))
        deadline = time.monotonic() + 15
        seen = ""
        assert watcher.stdout is not None
        while time.monotonic() < deadline and "nginx" not in seen:
            seen += watcher.stdout.readline()
        assert "nginx" in seen and "3" in seen.split()
    finally:
        watcher.kill()
        watcher.wait()


def test_without_the_gate_workloads_do_not_exist_and_workload_refs_are_dropped(ungated_kubectl: KubectlRunner) -> None:
    kubectl = ungated_kubectl
    missing = kubectl("get", "workloads", check=False)
    assert missing.returncode != 0 and 'the server doesn\'t have a resource type "workloads"' in missing.stderr
    refused = kubectl("apply", "-f", "-", input=WORKLOAD, check=False)
    assert refused.returncode != 0
    assert 'no matches for kind "Workload" in version "scheduling.k8s.io/v1alpha1"' in refused.stderr
    kubectl("apply", "-f", "-", input=GROUPED_POD.format(namespace="kwl-off"))
    got = json.loads(kubectl("get", "pod", "worker-0", "-n", "kwl-off", "-o", "json").stdout)
    assert "workloadRef" not in got["spec"], "a disabled alpha field is dropped"
    assert got["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "nginx"}


def test_with_the_gate_workloads_are_served(gated_kubectl: KubectlRunner) -> None:
    assert "workload.scheduling.k8s.io/training created" in gated_kubectl("apply", "-f", "-", input=WORKLOAD).stdout
    assert "unchanged" in gated_kubectl("apply", "-f", "-", input=WORKLOAD).stdout
    lines = gated_kubectl("get", "workloads", "-n", "kwl").stdout.splitlines()
    assert lines[0].split() == ["NAME", "AGE"] and lines[1].split()[0] == "training"
    described = gated_kubectl("describe", "workload", "training", "-n", "kwl").stdout
    assert "Kind:         Workload" in described and "Min Count:  4" in described

    changed = gated_kubectl("apply", "-f", "-", input=WORKLOAD.replace("minCount: 4", "minCount: 5"), check=False)
    assert changed.returncode != 0 and 'The Workload "training" is invalid: podGroups: Invalid value' in changed.stderr
    assert "field is immutable" in changed.stderr
    both = (
        "apiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload\nmetadata: {name: both, namespace: kwl}\n"
        "spec: {podGroups: [{name: a, policy: {basic: {}, gang: {minCount: 2}}}]}\n"
    )
    refused = gated_kubectl("apply", "-f", "-", input=both, check=False)
    assert refused.returncode != 0
    assert "exactly one of `basic`, `gang` is required, but multiple fields are set" in refused.stderr

    gated_kubectl("apply", "-f", "-", input=GROUPED_POD.format(namespace="kwl"))
    got = json.loads(gated_kubectl("get", "pod", "worker-0", "-n", "kwl", "-o", "json").stdout)
    assert got["spec"]["workloadRef"] == {"name": "training", "podGroup": "workers"}
    gated_kubectl("delete", "workload", "training", "-n", "kwl")
    assert gated_kubectl("get", "workloads", "-n", "kwl", "-o", "name").stdout.strip() == ""


# ---------------------------------------------------------------------------------------------- official client


def test_custom_objects_api_creates_lists_watches_and_patches_pod_groups(server: Server) -> None:
    api_client = config.new_client_from_config(str(server.kubeconfig))
    try:
        core = client.CoreV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        core.create_namespace({"metadata": {"name": "kpg-client"}})
        start = custom.list_namespaced_custom_object(*PG[:2], "kpg-client", PG[2])["metadata"]["resourceVersion"]
        body = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "gang"},
            "spec": {"minMember": 2},
        }
        created = custom.create_namespaced_custom_object(*PG[:2], "kpg-client", PG[2], body)
        assert created["metadata"]["uid"] and created["spec"] == {"minMember": 2}
        stream = watch.Watch().stream(
            custom.list_namespaced_custom_object,
            *PG[:2],
            "kpg-client",
            PG[2],
            resource_version=start,
            timeout_seconds=1,
        )
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in stream] == [("ADDED", "gang")]
        status = custom.patch_namespaced_custom_object_status(
            *PG[:2], "kpg-client", PG[2], "gang", {"status": {"phase": "Pending"}}
        )
        assert status["status"] == {"phase": "Pending"}
        with pytest.raises(ApiException) as refused:
            custom.patch_namespaced_custom_object(*PG[:2], "kpg-client", PG[2], "gang", {"spec": {"minMember": 0}})
        assert refused.value.status == 422
        causes = json.loads(refused.value.body)["details"]["causes"]
        assert [c["field"] for c in causes] == ["spec.minMember"]
        custom.delete_namespaced_custom_object(*PG[:2], "kpg-client", PG[2], "gang")
        assert custom.list_namespaced_custom_object(*PG[:2], "kpg-client", PG[2])["items"] == []
        with pytest.raises(ApiException) as absent:
            custom.list_namespaced_custom_object(*WL[:2], "kpg-client", WL[2])
        assert absent.value.status == 404, "no Workload kind without its gate"
    finally:
        api_client.close()


def test_custom_objects_api_on_workloads_with_the_gate(gated: Server) -> None:
    api_client = config.new_client_from_config(str(gated.kubeconfig))
    try:
        custom = client.CustomObjectsApi(api_client)
        body = {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "job"},
            "spec": {"podGroups": [{"name": "all", "policy": {"gang": {"minCount": 3}}}]},
        }
        custom.create_namespaced_custom_object(*WL[:2], "default", WL[2], body)
        listed = custom.list_namespaced_custom_object(*WL[:2], "default", WL[2])
        assert [i["metadata"]["name"] for i in listed["items"]] == ["job"]
        with pytest.raises(ApiException) as refused:
            custom.patch_namespaced_custom_object(
                *WL[:2], "default", WL[2], "job", {"spec": {"podGroups": [{"name": "all", "policy": {"basic": {}}}]}}
            )
        assert refused.value.status == 422
        custom.delete_namespaced_custom_object(*WL[:2], "default", WL[2], "job")
    finally:
        api_client.close()
