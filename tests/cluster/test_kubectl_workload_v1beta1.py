"""v1.37's Workload and PodGroup (scheduling.k8s.io/v1beta1, ported, not measured) with the real kubectl against
``kss serve --kube-version 1.37 --feature-gates GenericWorkload=true --runtime-config scheduling.k8s.io/v1beta1=true``
(the beta API is off by default, as on kube-apiserver; GangScheduling went into GenericWorkload): the kinds in
discovery, v1beta1's own fields (``workloadRef``, ``disruptionMode`` as a union), a gang of minCount 3 held, then
bound together with its PodGroupInitiallyScheduled condition; one that cannot fit binds none."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest

from tests.conftest import KUBECTL, KubectlRunner, Server, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

WORKLOAD = """
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: training, namespace: default}
spec:
  controllerRef: {apiGroup: batch, kind: Job, name: training}
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang: {minCount: 3}
    disruptionMode: {all: {}}
"""
POD_GROUP = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: training-workers-0, namespace: default}
spec:
  workloadRef: {workloadName: training, templateName: workers}
  schedulingPolicy:
    gang: {minCount: 3}
"""


@pytest.fixture(scope="module")
def v137(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``kss serve`` at v1.37 with the Workload API on (its scheduler running)."""
    workdir = tmp_path_factory.mktemp("kss-v137")
    srv = start_server(
        workdir,
        f"sqlite:///{workdir / 'kss.db'}",
        env={
            "KSS_KUBE_VERSION": "1.37",
            "KSS_FEATURE_GATES": "GenericWorkload=true",
            "KSS_RUNTIME_CONFIG": "scheduling.k8s.io/v1beta1=true",
            "KSS_CONTROLLERS": "false",
            "KSS_KUBELET": "false",
        },
    )
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def kubectl137(v137: Server) -> KubectlRunner:
    return KubectlRunner(v137.kubeconfig)


def test_kubectl_sees_v1_37_and_its_beta_workload_kinds(kubectl137: KubectlRunner) -> None:
    version = json.loads(kubectl137("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == "v1.37.0"
    listed = kubectl137("api-resources", "--api-group=scheduling.k8s.io", "--no-headers").stdout.splitlines()
    rows = {tuple(line.split()) for line in listed}
    assert ("workloads", "scheduling.k8s.io/v1beta1", "true", "Workload") in rows
    assert ("podgroups", "scheduling.k8s.io/v1beta1", "true", "PodGroup") in rows
    assert not any("v1alpha" in line for line in listed)


def test_kubectl_applies_v1beta1_fields_and_reads_them_back(kubectl137: KubectlRunner) -> None:
    assert "workload.scheduling.k8s.io/training created" in kubectl137("apply", "-f", "-", input=WORKLOAD).stdout
    created = kubectl137("apply", "-f", "-", input=POD_GROUP).stdout
    assert "podgroup.scheduling.k8s.io/training-workers-0 created" in created
    group = json.loads(kubectl137("get", "podgroups.scheduling.k8s.io", "training-workers-0", "-o", "json").stdout)
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert group["spec"]["workloadRef"] == {"workloadName": "training", "templateName": "workers"}
    assert "podGroupTemplateRef" not in group["spec"]
    assert group["spec"]["disruptionMode"] == {"single": {}}  # +default={"single": {}}
    workload = json.loads(kubectl137("get", "workloads", "training", "-o", "json").stdout)
    assert workload["spec"]["podGroupTemplates"][0]["disruptionMode"] == {"all": {}}
    changed = kubectl137("apply", "-f", "-", input=WORKLOAD.replace("minCount: 3", "minCount: 4"), check=False)
    assert changed.returncode != 0
    assert "spec.podGroupTemplates: Invalid value" in changed.stderr and "field is immutable" in changed.stderr


def test_kubectl_a_disruption_mode_with_both_members_is_refused(kubectl137: KubectlRunner) -> None:
    both = POD_GROUP.replace("training-workers-0", "both").replace(
        "  schedulingPolicy:", "  disruptionMode: {single: {}, all: {}}\n  schedulingPolicy:"
    )
    done = kubectl137("apply", "-f", "-", input=both, check=False)
    assert done.returncode != 0
    assert "spec.disruptionMode: Invalid value" in done.stderr
    assert "exactly one of `single`, `all` is required" in done.stderr
    assert "both" not in kubectl137("get", "podgroups", "--no-headers").stdout


def test_kubectl_v1alpha2_is_not_served_at_v1_37(kubectl137: KubectlRunner) -> None:
    done = kubectl137("apply", "-f", "-", input=POD_GROUP.replace("v1beta1", "v1alpha2"), check=False)
    assert done.returncode != 0
    assert 'no matches for kind "PodGroup" in version "scheduling.k8s.io/v1alpha2"' in done.stderr


def _gang_manifests(group: str, min_count: int, members: list[str], cpu: str) -> str:
    docs = [
        f"""apiVersion: scheduling.k8s.io/v1beta1
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


def _condition(kubectl: KubectlRunner, group: str) -> dict[str, str]:
    out = kubectl("get", "podgroups", group, "-o", "json").stdout
    conditions = json.loads(out).get("status", {}).get("conditions") or []
    return {c["type"]: c["status"] for c in conditions}


def test_kubectl_a_gang_of_three_holds_two_pods_and_binds_all_three_with_the_third(kubectl137: KubectlRunner) -> None:
    nodes = "---\n".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: gang-n{i}}}\nstatus:\n  capacity: {{cpu: '1', memory: 4Gi, "
        "pods: '110'}\n"
        for i in range(3)
    )
    kubectl137("apply", "-f", "-", input=nodes)
    kubectl137("apply", "-f", "-", input=_gang_manifests("trio", 3, ["trio-0", "trio-1"], "600m"))
    time.sleep(2.0)  # the scheduler would have bound them by now were they not held
    assert _nodes_of(kubectl137, ["trio-0", "trio-1"]) == ["", ""]
    kubectl137("apply", "-f", "-", input=_member("trio-2", "trio", "600m"))
    placed = _wait_bound(kubectl137, ["trio-0", "trio-1", "trio-2"])
    assert len(set(placed)) == 3
    deadline = time.monotonic() + 10
    while _condition(kubectl137, "trio").get("PodGroupInitiallyScheduled") != "True":
        assert time.monotonic() < deadline, _condition(kubectl137, "trio")
        time.sleep(0.2)
    assert "PodGroupScheduled" not in _condition(kubectl137, "trio")  # v1.36's name for it


def test_kubectl_a_gang_that_cannot_fit_binds_none(kubectl137: KubectlRunner) -> None:
    # 2 CPUs each: no node has them; the other two fit but wait for a quorum that never comes.
    manifests = _gang_manifests("wide", 3, ["wide-0", "wide-1"], "600m") + "---\n" + _member("wide-2", "wide", "2")
    kubectl137("apply", "-f", "-", input=manifests)
    deadline = time.monotonic() + 30
    while "Insufficient cpu" not in kubectl137("get", "pod", "wide-2", "-o", "yaml").stdout:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert _nodes_of(kubectl137, ["wide-0", "wide-1", "wide-2"]) == ["", "", ""]
    assert _condition(kubectl137, "wide") == {"PodGroupInitiallyScheduled": "False"}
