"""Export and import of v1.37's Workloads and PodGroups (scheduling.k8s.io/v1beta1, ported, not measured): an export
at 1.37 writes them in v1beta1 under their own keys, as the API serves them, and reads them back; a kubectl List of
them is read by its apiVersion."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import pod

V1BETA1 = "/apis/scheduling.k8s.io/v1beta1/namespaces/default"

WORKLOAD: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "job", "namespace": "default"},
    "spec": {
        "podGroupTemplates": [
            {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}}}
        ]
    },
}
POD_GROUP: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "job-workers-0", "namespace": "default"},
    "spec": {
        "workloadRef": {"workloadName": "job", "templateName": "workers"},
        "schedulingPolicy": {"gang": {"minCount": 2}},
    },
}


@pytest.fixture
async def v137(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of a server at v1.37, GenericWorkload on and its beta API enabled (scheduler off)."""
    application: FastAPI = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'v137.db'}",
            scheduler_enabled=False,
            controllers=False,
            kube_version="1.37",
            feature_gates={"GenericWorkload": True},
            runtime_config="scheduling.k8s.io/v1beta1=true",  # a beta API: off by default, as upstream
        )
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


async def test_v1_37_exports_its_workload_api_in_v1beta1_and_reads_it_back(v137: httpx.AsyncClient) -> None:
    assert (await v137.post(f"{V1BETA1}/workloads", json=WORKLOAD)).status_code == 201
    assert (await v137.post(f"{V1BETA1}/podgroups", json=POD_GROUP)).status_code == 201
    body = pod("worker-0")
    body["spec"]["schedulingGroup"] = {"podGroupName": "job-workers-0"}
    assert (await v137.post("/api/v1/namespaces/default/pods", json=body)).status_code == 201
    snap = (await v137.get("/simulator/v1/export")).json()
    assert not {"workloads", "workloadsV1alpha2", "podGroupsV1alpha2"} & set(snap)
    (workload,) = snap["workloadsV1beta1"]
    (group,) = snap["podGroupsV1beta1"]
    assert (workload["apiVersion"], group["apiVersion"]) == ("scheduling.k8s.io/v1beta1",) * 2
    assert workload["spec"]["podGroupTemplates"][0]["disruptionMode"] == {"all": {}}
    assert group["spec"]["workloadRef"] == {"workloadName": "job", "templateName": "workers"}
    assert group["spec"]["disruptionMode"] == {"single": {}}

    answer = await v137.post("/simulator/v1/import", json=snap, params={"replace": "true"})
    assert answer.status_code == 200, answer.text
    again = (await v137.get("/simulator/v1/export")).json()
    for key in ("workloadsV1beta1", "podGroupsV1beta1"):
        assert [i["spec"] for i in again[key]] == [i["spec"] for i in snap[key]], key
    assert again["pods"][0]["spec"]["schedulingGroup"] == {"podGroupName": "job-workers-0"}


async def test_a_kubectl_list_of_v1beta1_objects_is_read_by_its_apiversion(v137: httpx.AsyncClient) -> None:
    items = [{k: v for k, v in POD_GROUP.items() if k not in ("apiVersion", "kind")}]  # as typed Go lists omit them
    listed = [WORKLOAD, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroupList", "items": items}]
    answer = await v137.post("/simulator/v1/import", json=listed)
    assert answer.status_code == 200, answer.text
    group = (await v137.get(f"{V1BETA1}/podgroups/job-workers-0")).json()
    assert group["spec"]["workloadRef"] == {"workloadName": "job", "templateName": "workers"}
    assert (await v137.get(f"{V1BETA1}/workloads/job")).status_code == 200


async def test_an_import_with_a_disruption_mode_of_two_members_is_refused(v137: httpx.AsyncClient) -> None:
    both = {**POD_GROUP, "spec": {**POD_GROUP["spec"], "disruptionMode": {"single": {}, "all": {}}}}
    answer = await v137.post("/simulator/v1/import", json=[both])
    assert answer.status_code == 422, answer.text
    (cause,) = answer.json()["details"]["causes"]
    assert cause["field"] == "[0].spec.disruptionMode"
    assert "exactly one of `single`, `all` is required" in cause["message"]
    assert (await v137.get(f"{V1BETA1}/podgroups/job-workers-0")).status_code == 404


async def test_v1_36_s_workload_api_objects_are_refused_at_v1_37(v137: httpx.AsyncClient) -> None:
    v1alpha2 = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "old", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    answer = await v137.post("/simulator/v1/import", json={"podGroupsV1alpha2": [v1alpha2]})
    assert answer.status_code == 422, answer.text
    (cause,) = answer.json()["details"]["causes"]
    assert cause["field"] == "podGroupsV1alpha2[0]"
    assert cause["message"].endswith(
        "the kind PodGroup (scheduling.k8s.io/v1alpha2) is not served: Kubernetes v1.37 does not have it "
        "(it has scheduling.k8s.io/v1beta1)"
    )
    assert (await v137.get(f"{V1BETA1}/podgroups/old")).status_code == 404
