"""v1.36's Workload and PodGroup (scheduling.k8s.io/v1alpha2) with the real kubectl against ``kss serve
--kube-version 1.36 --feature-gates GenericWorkload=true,GangScheduling=true`` (issue #32's done-when)."""

from __future__ import annotations

import json
import os
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
