"""v1.36's PodGroup scheduling cycle with the real kubectl against ``kss serve --kube-version 1.36 --feature-gates
GenericWorkload=true,GangScheduling=true``: a gang's pods are tried together, all or nothing. One that cannot fit binds
none and says why at once, each member in its PodScheduled condition (the members that fit: "pod group is
unschedulable, <their Permit status>"; the one that fits nowhere: its own FitError) and the group in its
PodGroupScheduled condition, as upstream's ``submitPodGroupAlgorithmResult`` writes them; none waits in Permit for a
quorum the cycle already knows will not come. A gang that fits binds together and its condition turns True."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import KUBECTL, KubectlRunner, Server, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")


@pytest.fixture(scope="module")
def v136(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-v136-podgroup-cycle")
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
def kubectl(v136: Server) -> KubectlRunner:
    runner = KubectlRunner(v136.kubeconfig)
    nodes = "---\n".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\nstatus:\n  capacity: {{cpu: '1', memory: 4Gi, "
        "pods: '110'}\n"
        for i in range(3)
    )
    runner("apply", "-f", "-", input=nodes)
    return runner


def _pod_group(name: str, min_count: int) -> str:
    return f"""apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: {name}, namespace: default}}
spec:
  schedulingPolicy:
    gang: {{minCount: {min_count}}}
"""


def _member(name: str, group: str, cpu: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  schedulingGroup: {{podGroupName: {group}}}
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: {cpu}}}}}}}]
"""


def _pod_scheduled(kubectl: KubectlRunner, name: str) -> dict[str, Any] | None:
    pod = json.loads(kubectl("get", "pod", name, "-o", "json").stdout)
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)


def _group_scheduled(kubectl: KubectlRunner, name: str) -> dict[str, Any] | None:
    group = json.loads(kubectl("get", "podgroups.scheduling.k8s.io", name, "-o", "json").stdout)
    conditions = (group.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodGroupScheduled"), None)


def _wait_for(check: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)
    return value


def test_a_gang_that_cannot_fit_binds_none_and_every_member_and_the_group_say_why(kubectl: KubectlRunner) -> None:
    # Two members of 600m fit (one per 1-CPU node); the third asks for 2 CPUs, which no node has.
    members = [_member("wide-0", "wide", "600m"), _member("wide-1", "wide", "600m"), _member("wide-2", "wide", "2")]
    manifests = "---\n".join([_pod_group("wide", 3), *members])
    kubectl("apply", "-f", "-", input=manifests)
    names = ["wide-0", "wide-1", "wide-2"]
    conditions = _wait_for(lambda: all(cs := [_pod_scheduled(kubectl, n) for n in names]) and cs)
    for name, condition in zip(names[:2], conditions, strict=False):
        assert condition["status"] == "False" and condition["reason"] == "Unschedulable", name
        assert condition["message"] == (
            "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
            "one or more plugins asked to wait and no plugin rejected pod"
        )
    unfit = conditions[2]
    assert unfit["status"] == "False" and unfit["reason"] == "Unschedulable"
    assert unfit["message"].startswith("0/3 nodes are available: 3 Insufficient cpu."), unfit["message"]
    group = _wait_for(lambda: _group_scheduled(kubectl, "wide"))
    assert {k: group[k] for k in ("status", "reason", "message", "observedGeneration")} == {
        "status": "False",
        "reason": "Unschedulable",
        "message": "pod group is unschedulable",
        "observedGeneration": 1,
    }
    assert group["lastTransitionTime"]
    # Nothing bound, nothing held in Permit waiting for a quorum (the cycle retries the group from backoffQ).
    time.sleep(1.5)
    out = kubectl("get", "pods", *names, "-o", "jsonpath={range .items[*]}{.spec.nodeName}{','}{end}").stdout
    assert out.split(",")[:3] == ["", "", ""]
    events = kubectl("get", "events", "--field-selector", "involvedObject.name=wide-0", "-o", "json").stdout
    reasons = {e["reason"] for e in json.loads(events)["items"]}
    assert "FailedScheduling" in reasons and "Scheduled" not in reasons
    kubectl("delete", "pods", *names, "--wait=false")


def test_a_gang_that_fits_binds_together_and_its_condition_turns_true(kubectl: KubectlRunner) -> None:
    kubectl("apply", "-f", "-", input=_pod_group("trio", 3) + "---\n" + _member("trio-0", "trio", "600m"))
    kubectl("apply", "-f", "-", input=_member("trio-1", "trio", "600m"))
    time.sleep(1.0)
    assert _group_scheduled(kubectl, "trio") is None  # gated before the queue until minCount pods exist
    kubectl("apply", "-f", "-", input=_member("trio-2", "trio", "600m"))

    def placed() -> list[str] | None:
        jsonpath = "jsonpath={range .items[*]}{.spec.nodeName}{','}{end}"
        nodes = kubectl("get", "pods", "trio-0", "trio-1", "trio-2", "-o", jsonpath).stdout.split(",")[:3]
        return nodes if "" not in nodes else None

    assert len(set(_wait_for(placed))) == 3
    group = _wait_for(lambda: _group_scheduled(kubectl, "trio"))
    assert {k: group[k] for k in ("status", "reason", "message", "observedGeneration")} == {
        "status": "True",
        "reason": "Scheduled",
        "message": "",
        "observedGeneration": 1,
    }
