"""v1.36's workload-scheduling API (scheduling.k8s.io/v1alpha2 Workload and PodGroup) over the API: served only by
a v1.36 simulator with GenericWorkload on, with kube-apiserver's defaults, validation, immutability and the
PodGroup's status subresource; the pod's ``spec.schedulingGroup`` (v1.36) and ``spec.workloadRef`` (v1.35) each
known only to their version; the v1.35 simulator still serves v1alpha1 and answers 404 for v1alpha2."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from kss_sim.cluster.api import protobuf_codec
from kss_sim.config import Settings
from kss_sim.main import create_app

V1ALPHA2 = "/apis/scheduling.k8s.io/v1alpha2"
WORKLOADS = f"{V1ALPHA2}/namespaces/default/workloads"
POD_GROUPS = f"{V1ALPHA2}/namespaces/default/podgroups"
CRD_POD_GROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
MERGE = {"content-type": "application/merge-patch+json"}
PROTOBUF = "application/vnd.kubernetes.protobuf"
ALPHA_APIS = "api/alpha=true"

Client = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def client_at(tmp_path: Path) -> Client:
    """An in-process client of an application at a Kubernetes version and feature gates (scheduler off), its
    alpha APIs enabled (``--runtime-config api/alpha=true``) unless ``runtime_config`` says otherwise."""

    @asynccontextmanager
    async def start(version: str, runtime_config: str = ALPHA_APIS, **gates: bool) -> AsyncIterator[httpx.AsyncClient]:
        application: FastAPI = create_app(
            Settings(
                database_url=f"sqlite:///{tmp_path / f'kss-{version}-{len(gates)}-{len(runtime_config)}.db'}",
                scheduler_enabled=False,
                controllers=False,
                kube_version=version,
                feature_gates=gates,
                runtime_config=runtime_config,
            )
        )
        async with application.router.lifespan_context(application):
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(transport=transport, base_url="http://kss") as c:
                yield c

    return start


def workload(name: str, *templates: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"podGroupTemplates": list(templates)},
    }


def gang_template(name: str, min_count: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": {"gang": {"minCount": min_count}}, **extra}


def pod_group(name: str, min_count: int, *, workload_name: str = "job", template: str = "workers") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": workload_name, "podGroupTemplateName": template}},
            "schedulingPolicy": {"gang": {"minCount": min_count}},
        },
    }


def grouped_pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


@pytest.mark.parametrize("runtime_config", ["", "scheduling.k8s.io/v1alpha2=false", "api/alpha=false"])
async def test_the_gate_alone_does_not_serve_v1alpha2_an_alpha_api_needs_the_runtime_config(
    client_at: Client, runtime_config: str
) -> None:
    async with client_at("1.36", runtime_config, GenericWorkload=True) as c:
        assert (await c.get(V1ALPHA2)).status_code == 404
        assert (await c.post(WORKLOADS, json=workload("job", gang_template("workers", 3)))).status_code == 404
        versions = [v["version"] for v in (await c.get("/apis/scheduling.k8s.io")).json()["versions"]]
        assert versions == ["v1"]
    async with client_at("1.36", "scheduling.k8s.io/v1alpha2=true", GenericWorkload=True) as c:
        assert (await c.get(V1ALPHA2)).status_code == 200
    async with client_at("1.36", "scheduling.k8s.io/v1alpha2/podgroups=true", GenericWorkload=True) as c:
        resources = [r["name"] for r in (await c.get(V1ALPHA2)).json()["resources"]]
        assert "podgroups" in resources and "workloads" not in resources


def causes(response: httpx.Response) -> list[tuple[str, str, str]]:
    assert response.status_code == 422, response.text
    return [(c["field"], c["reason"], c["message"]) for c in response.json()["details"]["causes"]]


async def test_v1_36_with_generic_workload_serves_v1alpha2_workloads_and_podgroups(client_at: Client) -> None:
    async with client_at("1.36", GenericWorkload=True) as c:
        group = (await c.get("/apis/scheduling.k8s.io")).json()
        assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha2"]
        resources = (await c.get(V1ALPHA2)).json()["resources"]
        assert [(r["name"], r["kind"], r["namespaced"]) for r in resources] == [
            ("workloads", "Workload", True),
            ("podgroups", "PodGroup", True),
            ("podgroups/status", "PodGroup", True),
        ]
        assert (await c.get("/apis/scheduling.k8s.io/v1alpha1")).status_code == 404
        # scheduler-plugins' PodGroup CRD is served beside it, a different kind of the same name.
        crd = (await c.get("/apis/scheduling.x-k8s.io/v1alpha1")).json()["resources"]
        assert crd[0]["name"] == "podgroups"
        paths = (await c.get("/openapi/v3")).json()["paths"]
        assert "apis/scheduling.k8s.io/v1alpha2" in paths and "apis/scheduling.k8s.io/v1alpha1" not in paths


@pytest.mark.parametrize(("version", "gates"), [("1.36", {}), ("1.35", {"GenericWorkload": True})])
async def test_v1alpha2_is_not_found_without_the_gate_or_before_v1_36(
    client_at: Client, version: str, gates: dict[str, bool]
) -> None:
    async with client_at(version, **gates) as c:
        assert (await c.get(V1ALPHA2)).status_code == 404
        created = await c.post(WORKLOADS, json=workload("job", gang_template("workers", 3)))
        assert created.status_code == 404, created.text
        assert created.json()["reason"] == "NotFound"
        assert (await c.get(WORKLOADS)).status_code == 404
        versions = [v["version"] for v in (await c.get("/apis/scheduling.k8s.io")).json()["versions"]]
        assert versions == (["v1", "v1alpha1"] if version == "1.35" else ["v1"])


async def test_workload_is_defaulted_as_the_typed_decoder_renders_it_and_its_templates_are_immutable(
    client_at: Client,
) -> None:
    async with client_at("1.36", GenericWorkload=True) as c:
        sent = workload("job", gang_template("workers", 3, disruptionMode="PodGroup"), {"name": "driver",
                        "schedulingPolicy": {"basic": {}}})  # fmt: skip
        created = await c.post(WORKLOADS, json=sent)
        assert created.status_code == 201, created.text
        body = created.json()
        assert body["apiVersion"] == "scheduling.k8s.io/v1alpha2" and body["kind"] == "Workload"
        # schedulingConstraints has no omitempty; disruptionMode needs WorkloadAwarePreemption (off): dropped.
        assert body["spec"]["podGroupTemplates"] == [
            {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}, "schedulingConstraints": None},
            {"name": "driver", "schedulingPolicy": {"basic": {}}, "schedulingConstraints": None},
        ]
        patched = await c.patch(
            f"{WORKLOADS}/job",
            content=orjson.dumps({"spec": {"podGroupTemplates": [gang_template("workers", 4)]}}),
            headers=MERGE,
        )
        assert [(f, r) for f, r, _ in causes(patched)] == [("spec.podGroupTemplates", "FieldValueInvalid")]
        assert causes(patched)[0][2].endswith("field is immutable")
        labelled = await c.patch(
            f"{WORKLOADS}/job", content=orjson.dumps({"metadata": {"labels": {"team": "a"}}}), headers=MERGE
        )
        assert labelled.status_code == 200, labelled.text


async def test_workload_validation_names_each_field_as_kube_apiserver_does(client_at: Client) -> None:
    async with client_at("1.36", GenericWorkload=True) as c:
        empty = await c.post(WORKLOADS, json=workload("empty"))
        assert causes(empty) == [
            ("spec.podGroupTemplates", "FieldValueRequired", "Required value: must have at least one item")
        ]
        bad = workload(
            "bad",
            {"name": "no-policy", "schedulingPolicy": {}},
            {"name": "both", "schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}},
            gang_template("zero", 0),
            gang_template("zero", -1),
        )
        assert causes(await c.post(WORKLOADS, json=bad)) == [
            (
                "spec.podGroupTemplates[0].schedulingPolicy",
                "FieldValueInvalid",
                'Invalid value: "": must specify one of: `basic`, `gang`',
            ),
            (
                "spec.podGroupTemplates[1].schedulingPolicy",
                "FieldValueInvalid",
                'Invalid value: "{`basic`, `gang`}": exactly one of `basic`, `gang` is required, but multiple fields '
                "are set",
            ),
            ("spec.podGroupTemplates[2].schedulingPolicy.gang.minCount", "FieldValueRequired", "Required value"),
            ("spec.podGroupTemplates[3]", "FieldValueDuplicate", 'Duplicate value: "zero"'),
            (
                "spec.podGroupTemplates[3].schedulingPolicy.gang.minCount",
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than zero",
            ),
        ]
        too_many = workload("many", *(gang_template(f"g{i}", 1) for i in range(9)))
        assert [r for _, r, _ in causes(await c.post(WORKLOADS, json=too_many))] == ["FieldValueTooMany"]
        mistyped = workload("typed", gang_template("workers", "3"))
        answer = await c.post(WORKLOADS, json=mistyped)
        assert answer.status_code == 400 and "cannot unmarshal string" in answer.json()["message"], answer.text


async def test_scheduling_constraints_take_one_topology_constraint_keyed_by_a_label_key(client_at: Client) -> None:
    async with client_at("1.36", GenericWorkload=True, TopologyAwareWorkloadScheduling=True) as c:
        rack = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
        good = await c.post(WORKLOADS, json=workload("racked", gang_template("workers", 2, schedulingConstraints=rack)))
        assert good.status_code == 201, good.text
        assert good.json()["spec"]["podGroupTemplates"][0]["schedulingConstraints"] == rack
        two = {"topology": [{"key": "rack"}, {"key": "Bad Key"}]}
        bad = workload(
            "bad",
            gang_template("empty", 1, schedulingConstraints={"topology": [{"key": ""}]}),
            gang_template("malformed", 1, schedulingConstraints={"topology": [{"key": "example.com/a/b"}]}),
            gang_template("prefixed", 1, schedulingConstraints={"topology": [{"key": "Example.com/rack"}]}),
            gang_template("two", 1, schedulingConstraints=two),
        )
        at = "spec.podGroupTemplates[{}].schedulingConstraints.topology"
        assert causes(await c.post(WORKLOADS, json=bad)) == [
            (f"{at.format(0)}[0].key", "FieldValueRequired", "Required value"),
            (
                f"{at.format(1)}[0].key",
                "FieldValueInvalid",
                'Invalid value: "example.com/a/b": a valid label key must consist of alphanumeric characters, '
                "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')",
            ),
            (
                f"{at.format(2)}[0].key",
                "FieldValueInvalid",
                'Invalid value: "Example.com/rack": prefix part a lowercase RFC 1123 subdomain must consist of lower '
                "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ),
            (at.format(3), "FieldValueTooMany", "Too many: 2: must have at most 1 item"),
        ]
        group = pod_group("job-workers-0", 2)
        group["spec"]["schedulingConstraints"] = {"topology": [{"key": "-rack"}]}
        assert [(f, r) for f, r, _ in causes(await c.post(POD_GROUPS, json=group))] == [
            ("spec.schedulingConstraints.topology[0].key", "FieldValueInvalid")
        ]


async def test_pod_group_status_is_the_status_subresource_and_its_policy_is_immutable(client_at: Client) -> None:
    async with client_at("1.36", GenericWorkload=True) as c:
        sent = pod_group("job-workers-0", 3)
        sent["status"] = {"conditions": [{"type": "PodGroupScheduled", "status": "True"}]}
        created = await c.post(POD_GROUPS, json=sent)
        assert created.status_code == 201, created.text
        body = created.json()
        # The status sent on create is cleared; disruptionMode's default (Pod) needs WorkloadAwarePreemption.
        assert body["status"] == {} and "disruptionMode" not in body["spec"]
        assert body["metadata"]["generation"] == 1
        condition = {
            "type": "PodGroupScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available",
            "lastTransitionTime": "2026-04-22T00:00:00Z",
        }
        status = await c.patch(
            f"{POD_GROUPS}/job-workers-0/status",
            content=orjson.dumps({"status": {"conditions": [condition]}, "spec": {"priority": 5}}),
            headers=MERGE,
        )
        assert status.status_code == 200, status.text
        assert status.json()["status"]["conditions"] == [condition]
        assert status.json()["spec"] == body["spec"]  # a status write never changes the spec
        # A write of the object itself keeps the status.
        labelled = await c.patch(
            f"{POD_GROUPS}/job-workers-0", content=orjson.dumps({"metadata": {"labels": {"a": "b"}}}), headers=MERGE
        )
        assert labelled.json()["status"]["conditions"] == [condition]
        policy = await c.patch(
            f"{POD_GROUPS}/job-workers-0",
            content=orjson.dumps({"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}),
            headers=MERGE,
        )
        assert [(f, r) for f, r, _ in causes(policy)] == [("spec.schedulingPolicy", "FieldValueInvalid")]
        missing = pod_group("orphan", 2)
        missing["spec"]["podGroupTemplateRef"]["workload"] = {"workloadName": "", "podGroupTemplateName": "Bad_Name"}
        assert [(f, r) for f, r, _ in causes(await c.post(POD_GROUPS, json=missing))] == [
            ("spec.podGroupTemplateRef.workload.workloadName", "FieldValueRequired"),
            ("spec.podGroupTemplateRef.workload.podGroupTemplateName", "FieldValueInvalid"),
        ]


async def test_with_workload_aware_preemption_a_pod_group_s_priority_comes_from_its_class(client_at: Client) -> None:
    async with client_at("1.36", GenericWorkload=True, GangScheduling=True, WorkloadAwarePreemption=True) as c:
        for name, value, default in (("high", 1000, False), ("usual", 10, True)):
            pc = {"metadata": {"name": name}, "value": value, "globalDefault": default}
            assert (await c.post("/apis/scheduling.k8s.io/v1/priorityclasses", json=pc)).status_code == 201
        high = pod_group("high-0", 2)
        high["spec"]["priorityClassName"] = "high"
        created = await c.post(POD_GROUPS, json=high)
        assert created.status_code == 201, created.text
        assert (created.json()["spec"]["priorityClassName"], created.json()["spec"]["priority"]) == ("high", 1000)
        # No class named: the global default's, its name written in too, as for a pod.
        usual = (await c.post(POD_GROUPS, json=pod_group("usual-0", 2))).json()
        assert (usual["spec"]["priorityClassName"], usual["spec"]["priority"]) == ("usual", 10)
        unknown = pod_group("unknown-0", 2)
        unknown["spec"]["priorityClassName"] = "missing"
        refused = await c.post(POD_GROUPS, json=unknown)
        assert refused.status_code == 403
        assert refused.json()["message"] == (
            'podgroups.scheduling.k8s.io "unknown-0" is forbidden: no PriorityClass with name missing was found'
        )
        contradicting = pod_group("contradicting-0", 2)
        contradicting["spec"] |= {"priorityClassName": "high", "priority": 5}
        assert (await c.post(POD_GROUPS, json=contradicting)).status_code == 403
        agreeing = pod_group("agreeing-0", 2)
        agreeing["spec"] |= {"priorityClassName": "high", "priority": 1000}
        assert (await c.post(POD_GROUPS, json=agreeing)).status_code == 201
    async with client_at("1.36", GenericWorkload=True) as c:
        # The gate off: the fields are dropped and nothing is resolved.
        plain = (await c.post(POD_GROUPS, json=pod_group("plain-0", 2))).json()
        assert "priority" not in plain["spec"] and "priorityClassName" not in plain["spec"]


async def test_both_podgroup_kinds_are_stored_apart(client_at: Client) -> None:
    async with client_at("1.36", GenericWorkload=True) as c:
        crd = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "same", "namespace": "default"},
            "spec": {"minMember": 2},
        }
        assert (await c.post(CRD_POD_GROUPS, json=crd)).status_code == 201
        assert (await c.post(POD_GROUPS, json=pod_group("same", 3))).status_code == 201
        assert (await c.get(f"{CRD_POD_GROUPS}/same")).json()["spec"] == {"minMember": 2}
        assert (await c.get(f"{POD_GROUPS}/same")).json()["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
        listed = (await c.get(POD_GROUPS)).json()
        assert listed["kind"] == "PodGroupList" and listed["apiVersion"] == "scheduling.k8s.io/v1alpha2"
        assert [i["apiVersion"] for i in listed["items"]] == ["scheduling.k8s.io/v1alpha2"]
        wrong = {**pod_group("x", 1), "apiVersion": "scheduling.x-k8s.io/v1alpha1"}
        assert (await c.post(POD_GROUPS, json=wrong)).status_code == 400


async def test_pods_join_with_scheduling_group_on_v1_36_and_workload_ref_on_v1_35(client_at: Client) -> None:
    both = grouped_pod(
        "worker-0", schedulingGroup={"podGroupName": "job-workers-0"}, workloadRef={"name": "job", "podGroup": "w"}
    )
    async with client_at("1.36", GenericWorkload=True) as c:
        created = await c.post("/api/v1/namespaces/default/pods", json=both)
        assert created.status_code == 201, created.text
        assert created.json()["spec"]["schedulingGroup"] == {"podGroupName": "job-workers-0"}
        assert "workloadRef" not in created.json()["spec"]  # tombstoned in v1.36: an unknown field
        assert created.headers["warning"] == '299 - "unknown field \\"spec.workloadRef\\""'
        strict = await c.post(
            "/api/v1/namespaces/default/pods?fieldValidation=Strict", json={**both, "metadata": {"name": "w-1"}}
        )
        assert strict.status_code == 400 and 'unknown field \\"spec.workloadRef\\"' in strict.text
        nameless = grouped_pod("worker-2", schedulingGroup={"podGroupName": ""})
        assert [f for f, _, _ in causes(await c.post("/api/v1/namespaces/default/pods", json=nameless))] == [
            "spec.schedulingGroup.podGroupName"
        ]
    async with client_at("1.36") as c:  # the gate off: dropped as kube-apiserver's dropDisabledFields does
        created = await c.post("/api/v1/namespaces/default/pods", json=grouped_pod("p", schedulingGroup={
            "podGroupName": "g"}))  # fmt: skip
        assert created.status_code == 201 and "schedulingGroup" not in created.json()["spec"]
    async with client_at("1.35", GenericWorkload=True) as c:
        created = await c.post("/api/v1/namespaces/default/pods", json=both)
        assert created.status_code == 201, created.text
        assert created.json()["spec"]["workloadRef"]["name"] == "job"
        assert "schedulingGroup" not in created.json()["spec"]
        assert "spec.schedulingGroup" in created.headers["warning"]


async def test_v1alpha2_objects_have_their_protobuf_form(client_at: Client) -> None:
    async with client_at("1.36", GenericWorkload=True) as c:
        await c.post(WORKLOADS, json=workload("job", gang_template("workers", 3)))
        answer = await c.get(f"{WORKLOADS}/job", headers={"accept": PROTOBUF})
        assert answer.status_code == 200 and answer.headers["content-type"] == PROTOBUF
        api_version, kind, decoded = protobuf_codec.decode(answer.content)
        assert (api_version, kind) == ("scheduling.k8s.io/v1alpha2", "Workload")
        assert decoded["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 3}}
        pod = grouped_pod("worker-0", schedulingGroup={"podGroupName": "job-workers-0"})
        encoded = protobuf_codec.encode(pod)
        assert encoded is not None
        created = await c.post(
            "/api/v1/namespaces/default/pods",
            content=encoded,
            headers={"content-type": PROTOBUF, "accept": "application/json"},
        )
        assert created.status_code == 201, created.text
        assert created.json()["spec"]["schedulingGroup"] == {"podGroupName": "job-workers-0"}
