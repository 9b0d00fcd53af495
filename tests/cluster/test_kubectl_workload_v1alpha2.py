"""v1.36's Workload and PodGroup (scheduling.k8s.io/v1alpha2) with the real kubectl against ``kss serve
--kube-version 1.36 --feature-gates GenericWorkload=true,GangScheduling=true --runtime-config
scheduling.k8s.io/v1alpha2=true`` (issue #32's done-when; the alpha API needs the flag, as on kube-apiserver): the
kinds in discovery, and a gang of minCount 3 held, then bound together; one that cannot fit binds none (what each
member and the group then say: test_kubectl_podgroup_cycle.py)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest

from tests.conftest import KUBECTL, KubectlRunner, Server, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

WORKLOAD = """
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: training, namespace: default}
spec:
  controllerRef: {apiGroup: batch, kind: Job, name: training}
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang: {minCount: 3}
"""
POD_GROUP = """
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: training-workers-0, namespace: default}
spec:
  podGroupTemplateRef:
    workload: {workloadName: training, podGroupTemplateName: workers}
  schedulingPolicy:
    gang: {minCount: 3}
"""


@pytest.fixture(scope="module")
def v136(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``kss serve`` at v1.36 with the workload-scheduling gates on (its scheduler running)."""
    workdir = tmp_path_factory.mktemp("kss-v136")
    srv = start_server(
        workdir,
        f"sqlite:///{workdir / 'kss.db'}",
        env={
            "KSS_KUBE_VERSION": "1.36",
            "KSS_FEATURE_GATES": "GenericWorkload=true,GangScheduling=true",
            "KSS_RUNTIME_CONFIG": "scheduling.k8s.io/v1alpha2=true",
            "KSS_CONTROLLERS": "false",
            "KSS_KUBELET": "false",
        },
    )
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def kubectl136(v136: Server) -> KubectlRunner:
    return KubectlRunner(v136.kubeconfig)


def test_kubectl_sees_v1_36_and_its_workload_kinds(kubectl136: KubectlRunner) -> None:
    version = json.loads(kubectl136("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == "v1.36.2"
    listed = kubectl136("api-resources", "--api-group=scheduling.k8s.io", "--no-headers").stdout.splitlines()
    rows = {tuple(line.split()) for line in listed}
    assert ("workloads", "scheduling.k8s.io/v1alpha2", "true", "Workload") in rows
    assert ("podgroups", "scheduling.k8s.io/v1alpha2", "true", "PodGroup") in rows
    assert not any("v1alpha1" in line for line in listed)


def test_kubectl_applies_gets_and_refuses_changes_to_workloads(kubectl136: KubectlRunner) -> None:
    assert "workload.scheduling.k8s.io/training created" in kubectl136("apply", "-f", "-", input=WORKLOAD).stdout
    assert (
        "podgroup.scheduling.k8s.io/training-workers-0 created"
        in kubectl136("apply", "-f", "-", input=POD_GROUP).stdout
    )
    group = json.loads(kubectl136("get", "podgroups.scheduling.k8s.io", "training-workers-0", "-o", "json").stdout)
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert "training" in kubectl136("get", "workloads", "--no-headers").stdout
    changed = kubectl136("apply", "-f", "-", input=WORKLOAD.replace("minCount: 3", "minCount: 4"), check=False)
    assert changed.returncode != 0
    assert "spec.podGroupTemplates: Invalid value" in changed.stderr and "field is immutable" in changed.stderr


def _gang_manifests(group: str, min_count: int, members: list[str], cpu: str) -> str:
    docs = [
        f"""apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: {group}, namespace: default}}
spec:
  schedulingPolicy:
    gang: {{minCount: {min_count}}}
"""
    ]
    docs += [_member(name, group, cpu) for name in members]
    return "---\n".join(docs)


def _member(name: str, group: str, cpu: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  schedulingGroup: {{podGroupName: {group}}}
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: {cpu}}}}}}}]
"""


def _nodes_of(kubectl: KubectlRunner, names: list[str]) -> list[str]:
    out = kubectl("get", "pods", *names, "-o", "jsonpath={range .items[*]}{.spec.nodeName}{','}{end}").stdout
    return out.split(",")[: len(names)]


def _wait_bound(kubectl: KubectlRunner, names: list[str], timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while "" in (placed := _nodes_of(kubectl, names)):
        assert time.monotonic() < deadline, placed
        time.sleep(0.2)
    return placed


def test_kubectl_a_gang_of_three_holds_two_pods_and_binds_all_three_with_the_third(kubectl136: KubectlRunner) -> None:
    nodes = "---\n".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: gang-n{i}}}\nstatus:\n  capacity: {{cpu: '1', memory: 4Gi, "
        "pods: '110'}\n"
        for i in range(3)
    )
    kubectl136("apply", "-f", "-", input=nodes)
    kubectl136("apply", "-f", "-", input=_gang_manifests("trio", 3, ["trio-0", "trio-1"], "600m"))
    time.sleep(2.0)  # the scheduler would have bound them by now were they not held
    assert _nodes_of(kubectl136, ["trio-0", "trio-1"]) == ["", ""]
    kubectl136("apply", "-f", "-", input=_member("trio-2", "trio", "600m"))
    placed = _wait_bound(kubectl136, ["trio-0", "trio-1", "trio-2"])
    assert len(set(placed)) == 3


def test_kubectl_a_gang_that_cannot_fit_binds_none(kubectl136: KubectlRunner) -> None:
    # 2 CPUs each: no node has them; the other two fit but wait for a quorum that never comes.
    manifests = _gang_manifests("wide", 3, ["wide-0", "wide-1"], "600m") + "---\n" + _member("wide-2", "wide", "2")
    kubectl136("apply", "-f", "-", input=manifests)
    deadline = time.monotonic() + 30
    while "Insufficient cpu" not in kubectl136("get", "pod", "wide-2", "-o", "yaml").stdout:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert _nodes_of(kubectl136, ["wide-0", "wide-1", "wide-2"]) == ["", "", ""]
