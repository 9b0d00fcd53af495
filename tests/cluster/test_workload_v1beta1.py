"""v1.37's Workload API (scheduling.k8s.io/v1beta1, ported, not measured) over the API: served by a v1.37 simulator
with GenericWorkload on and the beta group version enabled, from the v1alpha2 objects the store holds: v1beta1's
fields in and out (``workloadRef``, ``disruptionMode`` as a union, its default), v1alpha2's fields unknown there,
the store's errors worded with v1beta1's paths, the status subresource; v1alpha2 is not served at 1.37."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app

V1BETA1 = "/apis/scheduling.k8s.io/v1beta1"
WORKLOADS = f"{V1BETA1}/namespaces/default/workloads"
POD_GROUPS = f"{V1BETA1}/namespaces/default/podgroups"


@pytest.fixture
async def v137(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    application: FastAPI = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'kss.db'}",
            scheduler_enabled=False,
            controllers=False,
            kube_version="1.37",
            feature_gates={"GenericWorkload": True},
            runtime_config="scheduling.k8s.io/v1beta1=true",
        )
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss") as c:
            yield c


def pod_group(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec},
    }


async def test_v1beta1_is_served_and_v1alpha2_is_not(v137: httpx.AsyncClient) -> None:
    resources = (await v137.get(V1BETA1)).json()["resources"]
    assert {(r["name"], r["kind"]) for r in resources} >= {
        ("workloads", "Workload"),
        ("podgroups", "PodGroup"),
        ("podgroups/status", "PodGroup"),
    }
    assert (await v137.get("/apis/scheduling.k8s.io/v1alpha2")).status_code == 404
    created = await v137.post(
        "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups",
        json={**pod_group("old"), "apiVersion": "scheduling.k8s.io/v1alpha2"},
    )
    assert created.status_code == 404, created.text


async def test_a_pod_group_is_written_and_read_in_v1beta1(v137: httpx.AsyncClient) -> None:
    ref = {"workloadName": "job", "templateName": "workers"}
    created = await v137.post(POD_GROUPS, json=pod_group("g", workloadRef=ref))
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert body["spec"]["workloadRef"] == ref and "podGroupTemplateRef" not in body["spec"]
    assert body["spec"]["disruptionMode"] == {"single": {}}  # +default={"single": {}}
    listed = (await v137.get(POD_GROUPS)).json()
    assert listed["kind"] == "PodGroupList" and listed["items"][0]["spec"]["workloadRef"] == ref
    # Without a template reference, the field is left out (omitempty), not null.
    alone = (await v137.post(POD_GROUPS, json=pod_group("alone", disruptionMode={"all": {}}))).json()
    assert "workloadRef" not in alone["spec"] and alone["spec"]["disruptionMode"] == {"all": {}}
    # The status subresource, in v1beta1's form too.
    status = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                              "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}  # fmt: skip
    current = (await v137.get(f"{POD_GROUPS}/g")).json()
    updated = await v137.put(f"{POD_GROUPS}/g/status", json={**current, "status": status})
    assert updated.status_code == 200, updated.text
    assert updated.json()["status"]["conditions"][0]["type"] == "PodGroupInitiallyScheduled"
    assert updated.json()["spec"]["workloadRef"] == ref


async def test_v1alpha2_fields_are_unknown_in_v1beta1(v137: httpx.AsyncClient) -> None:
    old_ref = {"workload": {"workloadName": "job", "podGroupTemplateName": "workers"}}
    strict = await v137.post(
        POD_GROUPS, json=pod_group("g", podGroupTemplateRef=old_ref), params={"fieldValidation": "Strict"}
    )
    assert strict.status_code == 400, strict.text
    assert strict.json()["message"] == (
        'PodGroup in version "v1beta1" cannot be handled as a PodGroup: strict decoding error: '
        'unknown field "spec.podGroupTemplateRef"'
    )
    mode = await v137.post(POD_GROUPS, json=pod_group("m", disruptionMode={}))
    assert mode.status_code == 422, mode.text
    assert "spec.disruptionMode: Invalid value" in mode.json()["message"]
    assert "must specify one of: `single`, `all`" in mode.json()["message"]


async def test_the_stores_errors_name_v1beta1s_fields(v137: httpx.AsyncClient) -> None:
    answer = await v137.post(POD_GROUPS, json=pod_group("g", workloadRef={"workloadName": "", "templateName": ""}))
    assert answer.status_code == 422, answer.text
    assert answer.json()["message"] == (
        'PodGroup.scheduling.k8s.io "g" is invalid: [spec.workloadRef.workloadName: Required value, '
        "spec.workloadRef.templateName: Required value]"
    )
    assert [c["field"] for c in answer.json()["details"]["causes"]] == [
        "spec.workloadRef.workloadName",
        "spec.workloadRef.templateName",
    ]


async def test_a_workload_keeps_its_templates_disruption_mode_and_is_immutable(v137: httpx.AsyncClient) -> None:
    template = {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}, "disruptionMode": {"all": {}}}
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"podGroupTemplates": [template]},
    }
    created = await v137.post(WORKLOADS, json=workload)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["podGroupTemplates"][0]["disruptionMode"] == {"all": {}}
    patch = {"spec": {"podGroupTemplates": [{**template, "disruptionMode": {"single": {}}}]}}
    changed = await v137.patch(f"{WORKLOADS}/job", json=patch, headers={"content-type": "application/merge-patch+json"})
    assert changed.status_code == 422, changed.text
    assert "spec.podGroupTemplates: Invalid value" in changed.json()["message"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # v1alpha2's string where v1beta1 has its union struct: the decoder refuses it, nothing stored.
        (
            {"disruptionMode": "Pod"},
            "string into Go struct field PodGroupSpec.spec.disruptionMode of type v1beta1.DisruptionMode",
        ),
        (
            {"disruptionMode": {"all": True}},
            "bool into Go struct field DisruptionMode.spec.disruptionMode.all of type v1beta1.AllDisruptionMode",
        ),
        (
            {"workloadRef": "job"},
            "string into Go struct field PodGroupSpec.spec.workloadRef of type v1beta1.WorkloadReference",
        ),
        # A part v1beta1 shares with v1alpha2: decoded as the stored kind, named as v1beta1's type.
        (
            {"schedulingPolicy": 5},
            "number into Go struct field PodGroupSpec.spec.schedulingPolicy of type v1beta1.PodGroupSchedulingPolicy",
        ),
    ],
)
async def test_a_pod_group_the_v1beta1_decoder_refuses(
    v137: httpx.AsyncClient, spec: dict[str, Any], message: str
) -> None:
    answer = await v137.post(POD_GROUPS, json={**pod_group("g"), "spec": {"schedulingPolicy": {"basic": {}}, **spec}})
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"] == (
        f'PodGroup in version "v1beta1" cannot be handled as a PodGroup: json: cannot unmarshal {message}'
    )
    assert (await v137.get(f"{POD_GROUPS}/g")).status_code == 404


async def test_a_workload_templates_string_disruption_mode_is_refused(v137: httpx.AsyncClient) -> None:
    template = {"name": "workers", "schedulingPolicy": {"basic": {}}, "disruptionMode": "PodGroup"}
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"podGroupTemplates": [template]},
    }
    answer = await v137.post(WORKLOADS, json=workload)
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"] == (
        'Workload in version "v1beta1" cannot be handled as a Workload: json: cannot unmarshal string into Go struct '
        "field PodGroupTemplate.spec.podGroupTemplates.disruptionMode of type v1beta1.DisruptionMode"
    )
    # A patch that would leave the stored pod group with v1alpha2's string is refused alike.
    assert (await v137.post(POD_GROUPS, json=pod_group("g"))).status_code == 201
    patched = await v137.patch(
        f"{POD_GROUPS}/g",
        json={"spec": {"disruptionMode": "PodGroup"}},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert patched.status_code == 400, patched.text
    assert "of type v1beta1.DisruptionMode" in patched.json()["message"]
    assert (await v137.get(f"{POD_GROUPS}/g")).json()["spec"]["disruptionMode"] == {"single": {}}


async def test_the_openapi_document_describes_v1beta1s_types(v137: httpx.AsyncClient) -> None:
    """kubectl explain's schemas: Workload and PodGroup in v1beta1's form (a union disruption mode, workloadRef)."""
    paths = (await v137.get("/openapi/v3")).json()["paths"]
    assert "apis/scheduling.k8s.io/v1beta1" in paths
    schemas = (await v137.get("/openapi/v3/apis/scheduling.k8s.io/v1beta1")).json()["components"]["schemas"]
    kinds = {(g["kind"], g["version"]) for s in schemas.values() for g in s.get("x-kubernetes-group-version-kind", [])}
    assert kinds == {("Workload", "v1beta1"), ("PodGroup", "v1beta1")}
    spec = schemas["io.k8s.api.PodGroupSpec"]["properties"]
    assert "workloadRef" in spec and "podGroupTemplateRef" not in spec
    assert spec["disruptionMode"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.DisruptionMode"}]
    assert set(schemas["io.k8s.api.DisruptionMode"]["properties"]) == {"single", "all"}
    assert "podGroupTemplates" in schemas["io.k8s.api.WorkloadSpec"]["properties"]


@pytest.mark.parametrize("path", [POD_GROUPS, f"{POD_GROUPS}/g", f"{POD_GROUPS}?watch=true&timeoutSeconds=1"])
async def test_v1beta1_kinds_are_answered_in_json_or_not_at_all_when_protobuf_is_asked(
    v137: httpx.AsyncClient, path: str
) -> None:
    """kss has no protobuf messages of v1.37's scheduling.k8s.io/v1beta1: a client that takes JSON too (client-go's
    typed clients) is answered in JSON, one that takes protobuf alone is told 406, as a server without a protobuf
    serializer for the kind tells it."""
    protobuf = "application/vnd.kubernetes.protobuf"
    assert (await v137.post(POD_GROUPS, json=pod_group("g"))).status_code == 201
    second = await v137.get(path, headers={"accept": f"{protobuf}, application/json"})
    assert second.status_code == 200 and second.headers["content-type"].startswith("application/json")
    assert "PodGroup" in second.text
    alone = await v137.get(path, headers={"accept": protobuf})
    assert alone.status_code == 406
    assert b"NotAcceptable" in alone.content  # a Status, in protobuf as the client asked
