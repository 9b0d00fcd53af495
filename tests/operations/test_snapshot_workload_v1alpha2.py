"""Export and import of v1.36's Workloads and PodGroups (scheduling.k8s.io/v1alpha2): their own snapshot keys, a
round trip with pods' schedulingGroup, kubectl's List form told apart from v1.35's Workload by its apiVersion, and a
snapshot of them refused whole by a v1.35 simulator."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import pod

V1ALPHA2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"
Client = Callable[[str], AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def client_at(tmp_path: Path) -> Client:
    """An in-process client of a server at a Kubernetes version, GenericWorkload on and its
    alpha API enabled (scheduler off)."""

    @asynccontextmanager
    async def start(version: str) -> AsyncIterator[httpx.AsyncClient]:
        application: FastAPI = create_app(
            Settings(
                database_url=f"sqlite:///{tmp_path / f'{version}-{len(list(tmp_path.iterdir()))}.db'}",
                scheduler_enabled=False,
                controllers=False,
                kube_version=version,
                feature_gates={"GenericWorkload": True},
                runtime_config="api/alpha=true",  # the Workload API is alpha: off by default, as upstream
            )
        )
        async with application.router.lifespan_context(application):
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
                yield c

    return start


WORKLOAD: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1alpha2",
    "kind": "Workload",
    "metadata": {"name": "job", "namespace": "default"},
    "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
}
POD_GROUP: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1alpha2",
    "kind": "PodGroup",
    "metadata": {"name": "job-workers-0", "namespace": "default"},
    "spec": {
        "podGroupTemplateRef": {"workload": {"workloadName": "job", "podGroupTemplateName": "workers"}},
        "schedulingPolicy": {"gang": {"minCount": 2}},
    },
}


async def _load(c: httpx.AsyncClient) -> None:
    assert (await c.post(f"{V1ALPHA2}/workloads", json=WORKLOAD)).status_code == 201
    assert (await c.post(f"{V1ALPHA2}/podgroups", json=POD_GROUP)).status_code == 201
    body = pod("worker-0")
    body["spec"]["schedulingGroup"] = {"podGroupName": "job-workers-0"}
    assert (await c.post("/api/v1/namespaces/default/pods", json=body)).status_code == 201


async def test_v1_36_export_import_round_trip_keeps_workloads_pod_groups_and_scheduling_groups(
    client_at: Client,
) -> None:
    async with client_at("1.36") as source:
        await _load(source)
        snap = (await source.get("/simulator/v1/export")).json()
    assert "workloads" not in snap, "v1.36 has no v1alpha1 Workload"
    assert [w["metadata"]["name"] for w in snap["workloadsV1alpha2"]] == ["job"]
    assert [g["metadata"]["name"] for g in snap["podGroupsV1alpha2"]] == ["job-workers-0"]
    async with client_at("1.36") as target:
        answer = await target.post("/simulator/v1/import", json=snap)
        assert answer.status_code == 200, answer.text
        again = (await target.get("/simulator/v1/export")).json()
        for key in ("workloadsV1alpha2", "podGroupsV1alpha2"):
            assert [i["spec"] for i in again[key]] == [i["spec"] for i in snap[key]], key
        assert again["pods"][0]["spec"]["schedulingGroup"] == {"podGroupName": "job-workers-0"}


async def test_a_kubectl_list_is_read_by_apiversion_and_refused_whole_by_v1_35(client_at: Client) -> None:
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [WORKLOAD, POD_GROUP, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}],
    }
    async with client_at("1.36") as v136:
        answer = await v136.post("/simulator/v1/import", json=listed)
        assert answer.status_code == 200, answer.text
        assert (await v136.get(f"{V1ALPHA2}/workloads/job")).status_code == 200
        assert (await v136.get(f"{V1ALPHA2}/podgroups/job-workers-0")).status_code == 200
    async with client_at("1.35") as v135:
        answer = await v135.post("/simulator/v1/import", json=listed)
        assert answer.status_code == 422, answer.text
        causes = answer.json()["details"]["causes"]
        assert [c["field"] for c in causes] == ["[0].items[0]", "[0].items[1]"]
        assert all("Kubernetes v1.35 does not have it" in c["message"] for c in causes)
        assert (await v135.get("/api/v1/namespaces/team")).status_code == 404, "nothing was imported"


async def test_v1_37_s_beta_objects_are_refused_at_v1_36(client_at: Client) -> None:
    v1beta1 = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "new", "namespace": "default"},
        "spec": {"workloadRef": {"workloadName": "job", "templateName": "workers"}},
    }
    async with client_at("1.36") as v136:
        answer = await v136.post("/simulator/v1/import", json=[v1beta1])
        assert answer.status_code == 422, answer.text
        (cause,) = answer.json()["details"]["causes"]
        assert cause["message"].endswith(
            "the kind PodGroup (scheduling.k8s.io/v1beta1) is not served: Kubernetes v1.36 does not have it "
            "(it has scheduling.k8s.io/v1alpha2)"
        )
        assert (await v136.get(f"{V1ALPHA2}/podgroups/new")).status_code == 404
