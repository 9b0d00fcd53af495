"""PodGroup (scheduler-plugins' CRD) and Workload (v1.35 alpha, GenericWorkload) over the API and in the store:
discovery with the gate off and on, validation as 422 causes, patches, tables, watches, pods' spec.workloadRef."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from kss_sim.cluster.errors import BadRequest, Invalid
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import pod

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
PG_PATH = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
WL_PATH = "/apis/scheduling.k8s.io/v1alpha1/namespaces/default/workloads"
MERGE = {"content-type": "application/merge-patch+json"}
GATES_ON = {"GenericWorkload": True}
# The Workload of these tests is v1.35's (scheduling.k8s.io/v1alpha1, pods' spec.workloadRef): v1.36 has neither.
V1_35 = "1.35"


def pod_group(name: str, **spec: Any) -> dict[str, Any]:
    """A PodGroup manifest (``spec`` as given)."""
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def workload(name: str, *groups: dict[str, Any], controller: dict[str, str] | None = None) -> dict[str, Any]:
    """A Workload manifest with these pod groups."""
    spec: dict[str, Any] = {"podGroups": list(groups)}
    if controller is not None:
        spec["controllerRef"] = controller
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def gang(name: str, min_count: int) -> dict[str, Any]:
    return {"name": name, "policy": {"gang": {"minCount": min_count}}}


def basic(name: str) -> dict[str, Any]:
    return {"name": name, "policy": {"basic": {}}}


def causes(response: httpx.Response) -> list[tuple[str, str, str]]:
    """(field, reason, message) of a 422 Status."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["kind"] == "Status" and body["reason"] == "Invalid"
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


async def _client_at_v1_35(database: Path, gated: bool) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of an application at v1.35 (scheduler off), with GenericWorkload on or at its default."""
    application: FastAPI = create_app(
        Settings(
            database_url=f"sqlite:///{database}",
            scheduler_enabled=False,
            controllers=False,
            kube_version=V1_35,
            feature_gates=GATES_ON if gated else {},
            # Alpha APIs are off by default, as upstream: the gate alone does not serve the kind.
            runtime_config={"scheduling.k8s.io/v1alpha1": "true"} if gated else {},
        )
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield c


@pytest.fixture
async def gated_client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """GenericWorkload on, with v1.35's Workload API."""
    async for c in _client_at_v1_35(tmp_path / "gated.db", gated=True):
        yield c


@pytest.fixture
async def ungated_client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """GenericWorkload at v1.35's default (off)."""
    async for c in _client_at_v1_35(tmp_path / "ungated.db", gated=False):
        yield c


# ---------------------------------------------------------------------------------------------- discovery


async def test_without_the_gate_workloads_are_absent_from_discovery_and_the_api(
    ungated_client: httpx.AsyncClient,
) -> None:
    group = (await ungated_client.get("/apis/scheduling.k8s.io")).json()
    assert [v["version"] for v in group["versions"]] == ["v1"]
    assert (await ungated_client.get("/apis/scheduling.k8s.io/v1alpha1")).status_code == 404
    groups = {g["name"]: g for g in (await ungated_client.get("/apis")).json()["groups"]}
    assert [v["version"] for v in groups["scheduling.k8s.io"]["versions"]] == ["v1"]
    openapi = (await ungated_client.get("/openapi/v3")).json()["paths"]
    assert "apis/scheduling.k8s.io/v1alpha1" not in openapi and "apis/scheduling.x-k8s.io/v1alpha1" in openapi
    assert (await ungated_client.get("/openapi/v3/apis/scheduling.k8s.io/v1alpha1")).status_code == 404
    created = await ungated_client.post(WL_PATH, json=workload("w", basic("a")))
    assert (
        created.status_code == 404 and created.json()["message"] == "the server could not find the requested resource"
    )
    assert (await ungated_client.get(WL_PATH)).status_code == 404


async def test_pod_groups_are_discovered_as_the_crd_names_them(client: httpx.AsyncClient) -> None:
    group = (await client.get("/apis/scheduling.x-k8s.io")).json()
    assert group["preferredVersion"] == {"groupVersion": "scheduling.x-k8s.io/v1alpha1", "version": "v1alpha1"}
    resources = {r["name"]: r for r in (await client.get("/apis/scheduling.x-k8s.io/v1alpha1")).json()["resources"]}
    assert set(resources) == {"podgroups", "podgroups/status"}
    pgs = resources["podgroups"]
    assert (pgs["kind"], pgs["singularName"], pgs["namespaced"], pgs["shortNames"]) == (
        "PodGroup",
        "podgroup",
        True,
        ["pg", "pgs"],
    )
    assert resources["podgroups/status"]["verbs"] == ["get", "patch", "update"]
    doc = (await client.get("/openapi/v3/apis/scheduling.x-k8s.io/v1alpha1")).json()
    patch = doc["paths"]["/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups/{name}"]["patch"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}


async def test_with_the_gate_workloads_are_discovered_beside_priority_classes(gated_client: httpx.AsyncClient) -> None:
    group = (await gated_client.get("/apis/scheduling.k8s.io")).json()
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha1"]
    assert group["preferredVersion"]["version"] == "v1"
    resources = (await gated_client.get("/apis/scheduling.k8s.io/v1alpha1")).json()["resources"]
    assert [(r["name"], r["kind"], r["namespaced"]) for r in resources] == [("workloads", "Workload", True)]
    openapi = (await gated_client.get("/openapi/v3")).json()["paths"]
    assert "apis/scheduling.k8s.io/v1alpha1" in openapi
    assert (await gated_client.get("/openapi/v3/apis/scheduling.k8s.io/v1alpha1")).status_code == 200


# ---------------------------------------------------------------------------------------------- PodGroup


async def test_pod_group_round_trip_as_a_custom_resource(client: httpx.AsyncClient) -> None:
    body = pod_group("pg", minMember=3, minResources={"cpu": "3", "memory": "3Gi"}, scheduleTimeoutSeconds=10)
    body["status"] = {"phase": "Running"}
    r = await client.post(PG_PATH, json=body)
    assert r.status_code == 201, r.text
    created = r.json()
    assert "status" not in created, "the status subresource ignores a status sent on create"
    assert created["metadata"]["generation"] == 1
    assert created["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "3", "memory": "3Gi"},
        "scheduleTimeoutSeconds": 10,
    }

    status = await client.patch(
        f"{PG_PATH}/pg/status", content=b'{"status":{"phase":"Scheduling","running":1}}', headers=MERGE
    )
    assert status.status_code == 200 and status.json()["status"] == {"phase": "Scheduling", "running": 1}
    assert status.json()["metadata"]["generation"] == 1
    merged = await client.patch(
        f"{PG_PATH}/pg", content=b'{"spec":{"minMember":4},"status":{"phase":"Failed"}}', headers=MERGE
    )
    assert merged.status_code == 200
    assert merged.json()["spec"]["minMember"] == 4 and merged.json()["metadata"]["generation"] == 2
    assert merged.json()["status"]["phase"] == "Scheduling", "the main resource does not change the status"
    json_patch = await client.patch(
        f"{PG_PATH}/pg",
        content=b'[{"op":"replace","path":"/spec/minMember","value":5}]',
        headers={"content-type": "application/json-patch+json"},
    )
    assert json_patch.status_code == 200 and json_patch.json()["spec"]["minMember"] == 5
    strategic = await client.patch(
        f"{PG_PATH}/pg",
        content=b'{"spec":{"minMember":6}}',
        headers={"content-type": "application/strategic-merge-patch+json"},
    )
    assert strategic.status_code == 415 and strategic.json()["reason"] == "UnsupportedMediaType"

    listed = (await client.get(PG_PATH)).json()
    assert listed["kind"] == "PodGroupList" and listed["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["pg"]
    assert (await client.delete(f"{PG_PATH}/pg")).status_code == 200
    assert (await client.get(f"{PG_PATH}/pg")).status_code == 404


async def test_pod_group_table_has_the_crds_printer_columns(client: httpx.AsyncClient) -> None:
    await client.post(PG_PATH, json=pod_group("full", minMember=2))
    await client.patch(
        f"{PG_PATH}/full/status",
        content=b'{"status":{"phase":"Running","running":2,"succeeded":1,"failed":0}}',
        headers=MERGE,
    )
    await client.post(PG_PATH, json=pod_group("bare"))
    table = (await client.get(PG_PATH, headers={"accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Phase",
        "MinMember",
        "Running",
        "Succeeded",
        "Failed",
        "Age",
    ]
    assert [c["type"] for c in table["columnDefinitions"]][1:] == [
        "string",
        "integer",
        "integer",
        "integer",
        "integer",
        "date",
    ]
    rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
    assert rows["full"][:6] == ["full", "Running", 2, 2, 1, 0]
    assert rows["bare"][:6] == ["bare", None, None, None, None, None], "missing values are empty cells"
    assert rows["bare"][6].endswith("s")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"minMember": 0},
            [
                (
                    "spec.minMember",
                    "FieldValueInvalid",
                    "Invalid value: 0: spec.minMember in body should be greater than or equal to 1",
                )
            ],
        ),
        (
            {"minMember": "three"},
            [
                (
                    "spec.minMember",
                    "FieldValueTypeInvalid",
                    'Invalid value: "three": spec.minMember in body must be of type integer: "three"',
                )
            ],
        ),
        (
            {"minResources": {"cpu": "2", "memory": "lots", "pods": 4}},
            [
                (
                    "spec.minResources.memory",
                    "FieldValueInvalid",
                    'Invalid value: "lots": spec.minResources.memory in body should match '
                    "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)"
                    "|(\\.[0-9]+))))?$'",
                )
            ],
        ),
        (
            {"scheduleTimeoutSeconds": 1.5},
            [
                (
                    "spec.scheduleTimeoutSeconds",
                    "FieldValueTypeInvalid",
                    "Invalid value: 1.5: spec.scheduleTimeoutSeconds in body must be of type integer",
                )
            ],
        ),
    ],
)
async def test_pod_group_schema_errors_are_422_causes(
    client: httpx.AsyncClient, spec: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    r = await client.post(PG_PATH, json=pod_group("bad", **spec))
    assert causes(r) == expected
    assert r.json()["message"].startswith('PodGroup.scheduling.x-k8s.io "bad" is invalid: ')
    assert r.json()["details"]["group"] == "scheduling.x-k8s.io"
    assert (await client.get(f"{PG_PATH}/bad")).status_code == 404


async def test_pod_group_status_is_checked_and_unknown_fields_refused(client: httpx.AsyncClient) -> None:
    await client.post(PG_PATH, json=pod_group("pg", minMember=1))
    bad = await client.patch(
        f"{PG_PATH}/pg/status",
        content=b'{"status":{"running":"two","scheduleStartTime":"yesterday"}}',
        headers=MERGE,
    )
    assert [c[0] for c in causes(bad)] == ["status.running", "status.scheduleStartTime"]
    good = await client.patch(
        f"{PG_PATH}/pg/status", content=b'{"status":{"scheduleStartTime":"2025-01-01T00:00:00Z"}}', headers=MERGE
    )
    assert good.status_code == 200
    strict = await client.post(
        PG_PATH, params={"fieldValidation": "Strict"}, json=pod_group("typo", minMember=1, minMembr=2)
    )
    assert strict.status_code == 400 and 'unknown field "spec.minMembr"' in strict.json()["message"]
    warned = await client.post(PG_PATH, json=pod_group("typo", minMember=1, minMembr=2))
    assert warned.status_code == 201 and "minMembr" not in warned.json()["spec"]
    assert 'unknown field \\"spec.minMembr\\"' in warned.headers["warning"]


async def test_pod_group_watch_sees_changes(client: httpx.AsyncClient) -> None:
    start = (await client.get(PG_PATH)).json()["metadata"]["resourceVersion"]
    await client.post(PG_PATH, json=pod_group("watched", minMember=2))
    await client.patch(f"{PG_PATH}/watched", content=b'{"spec":{"minMember":3}}', headers=MERGE)
    await client.delete(f"{PG_PATH}/watched")
    r = await client.get(PG_PATH, params={"watch": "true", "resourceVersion": start, "timeoutSeconds": "1"})
    events = [orjson.loads(line) for line in r.text.splitlines() if line.strip()]
    assert [(e["type"], e["object"]["kind"], e["object"]["spec"]["minMember"]) for e in events] == [
        ("ADDED", "PodGroup", 2),
        ("MODIFIED", "PodGroup", 3),
        ("DELETED", "PodGroup", 3),
    ]


# ---------------------------------------------------------------------------------------------- Workload


async def test_workload_round_trip_and_immutable_pod_groups(gated_client: httpx.AsyncClient) -> None:
    body = workload(
        "train", gang("workers", 4), basic("driver"), controller={"apiGroup": "batch", "kind": "Job", "name": "j"}
    )
    r = await gated_client.post(WL_PATH, json=body)
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["spec"] == body["spec"] and "status" not in created and "generation" not in created["metadata"]

    labelled = await gated_client.patch(
        f"{WL_PATH}/train",
        content=b'{"metadata":{"labels":{"team":"ml"}}}',
        headers={"content-type": "application/strategic-merge-patch+json"},
    )
    assert labelled.status_code == 200 and labelled.json()["metadata"]["labels"] == {"team": "ml"}

    changed = await gated_client.patch(
        f"{WL_PATH}/train", content=b'{"spec":{"podGroups":[{"name":"workers","policy":{"basic":{}}}]}}', headers=MERGE
    )
    assert [(f, reason) for f, reason, _ in causes(changed)] == [("podGroups", "FieldValueInvalid")]
    assert causes(changed)[0][2].endswith("field is immutable")
    moved = await gated_client.patch(
        f"{WL_PATH}/train", content=b'{"spec":{"controllerRef":{"name":"k"}}}', headers=MERGE
    )
    assert [f for f, _, _ in causes(moved)] == ["controllerRef"]

    table = (await gated_client.get(WL_PATH, headers={"accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == "train"
    assert (await gated_client.delete(f"{WL_PATH}/train")).status_code == 200


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        (
            [{"name": "a", "policy": {"basic": {}, "gang": {"minCount": 2}}}],
            [
                (
                    "spec.podGroups[0].policy",
                    "FieldValueInvalid",
                    'Invalid value: "{`basic`, `gang`}": exactly one of `basic`, `gang` is required, but multiple '
                    "fields are set",
                )
            ],
        ),
        (
            [{"name": "a", "policy": {}}],
            [
                (
                    "spec.podGroups[0].policy",
                    "FieldValueRequired",
                    "Required value: exactly one of `basic`, `gang` is required",
                )
            ],
        ),
        (
            [{"name": "a", "policy": {"gang": {}}}],
            [
                (
                    "spec.podGroups[0].policy.gang.minCount",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be greater than zero",
                )
            ],
        ),
        ([], [("spec.podGroups", "FieldValueRequired", "Required value: must have at least one item")]),
        (
            [basic(f"g{i}") for i in range(9)],
            [("spec.podGroups", "FieldValueTooMany", "Too many: 9: must have at most 8 items")],
        ),
        ([basic("a"), basic("a")], [("spec.podGroups[1].name", "FieldValueDuplicate", 'Duplicate value: "a"')]),
    ],
)
async def test_workload_validation_as_v1_35(
    gated_client: httpx.AsyncClient, groups: list[dict[str, Any]], expected: list[tuple[str, str, str]]
) -> None:
    r = await gated_client.post(WL_PATH, json=workload("bad", *groups))
    assert causes(r) == expected
    assert r.json()["message"].startswith('Workload.scheduling.k8s.io "bad" is invalid: ')


async def test_workload_controller_ref_and_type_errors(gated_client: httpx.AsyncClient) -> None:
    r = await gated_client.post(
        WL_PATH, json=workload("bad", basic("Not_A_Label"), controller={"apiGroup": "Batch!", "kind": "a/b"})
    )
    assert [(f, reason) for f, reason, _ in causes(r)] == [
        ("spec.controllerRef.apiGroup", "FieldValueInvalid"),
        ("spec.controllerRef.kind", "FieldValueInvalid"),
        ("spec.controllerRef.name", "FieldValueRequired"),
        ("spec.podGroups[0].name", "FieldValueInvalid"),
    ]
    assert "may not contain '/'" in causes(r)[1][2]
    typed = await gated_client.post(WL_PATH, json=workload("bad", {"name": "a", "policy": {"gang": {"minCount": "4"}}}))
    assert typed.status_code == 400
    assert typed.json()["message"].startswith('Workload in version "v1alpha1" cannot be handled as a Workload')


# ---------------------------------------------------------------------------------------------- pods' workloadRef


def _with_ref(pod_name: str, **ref: str) -> dict[str, Any]:
    body = pod(pod_name)
    body["spec"]["workloadRef"] = ref
    return body


async def test_workload_ref_is_dropped_without_the_gate(ungated_client: httpx.AsyncClient) -> None:
    r = await ungated_client.post(
        "/api/v1/namespaces/default/pods", json=_with_ref("p", name="train", podGroup="workers")
    )
    assert r.status_code == 201 and "workloadRef" not in r.json()["spec"]
    # Not an unknown field either: no warning, as kube-apiserver drops a disabled field silently.
    assert "warning" not in r.headers


async def test_workload_ref_is_kept_validated_and_immutable_with_the_gate(gated_client: httpx.AsyncClient) -> None:
    pods = "/api/v1/namespaces/default/pods"
    r = await gated_client.post(pods, json=_with_ref("p", name="train", podGroup="workers", podGroupReplicaKey="r0"))
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["workloadRef"] == {"name": "train", "podGroup": "workers", "podGroupReplicaKey": "r0"}
    bad = await gated_client.post(pods, json=_with_ref("q", name="Train", podGroupReplicaKey="r_0"))
    assert [f for f, _, _ in causes(bad)] == [
        "spec.workloadRef.name",
        "spec.workloadRef.podGroup",
        "spec.workloadRef.podGroupReplicaKey",
    ]
    moved = await gated_client.patch(
        f"{pods}/p", content=b'{"spec":{"workloadRef":{"podGroup":"driver"}}}', headers=MERGE
    )
    assert [(f, reason) for f, reason, _ in causes(moved)] == [("spec", "FieldValueForbidden")]


def test_a_pod_keeps_its_workload_ref_after_the_gate_is_turned_off(engine: Engine) -> None:
    with_gate = ClusterStore.open(engine, feature_gates=GATES_ON, kube_version=V1_35)
    with_gate.create("Pod", _with_ref("p", name="train", podGroup="workers"))
    with_gate.create("Workload", workload("train", gang("workers", 2)))
    with_gate.flush()
    without = ClusterStore.open(engine, kube_version=V1_35)
    labelled = without.patch("Pod", "default", "p", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["spec"]["workloadRef"] == {"name": "train", "podGroup": "workers"}, "in use: kept on update"
    assert not without.serves("Workload") and without.list("Workload")[0][0]["metadata"]["name"] == "train"
    with pytest.raises(BadRequest, match="feature gate GenericWorkload is off"):
        without.create("Workload", workload("other", basic("a")))
    without.delete("Workload", "default", "train")  # what a run with the gate left can still be removed


# ---------------------------------------------------------------------------------------------- the store's readers


def test_listeners_and_lists_of_the_new_kinds() -> None:
    store = ClusterStore(None, feature_gates=GATES_ON, kube_version=V1_35)
    seen: list[tuple[str, str, str]] = []
    store.add_listener(lambda t, k, o: seen.append((t, k, o["metadata"]["name"])), ("PodGroup", "Workload"))
    store.create("PodGroup", pod_group("pg", minMember=2))
    store.create("Workload", workload("wl", gang("g", 2)))
    store.create("Pod", pod("unrelated"))
    store.patch("PodGroup", "default", "pg", {"status": {"phase": "Scheduled"}}, subresource="status")
    store.delete("Workload", "default", "wl")
    assert seen == [
        ("ADDED", "PodGroup", "pg"),
        ("ADDED", "Workload", "wl"),
        ("MODIFIED", "PodGroup", "pg"),
        ("DELETED", "Workload", "wl"),
    ]
    groups, _ = store.list("PodGroup", label_selector=None)
    assert [(g["metadata"]["name"], g["status"]) for g in groups] == [("pg", {"phase": "Scheduled"})]
    with pytest.raises(Invalid):
        store.update("PodGroup", {**groups[0], "spec": {"minMember": -1}})
    store.create("Namespace", {"metadata": {"name": "team"}})
    store.create("PodGroup", {**pod_group("inside"), "metadata": {"name": "inside", "namespace": "team"}})
    store.delete("Namespace", None, "team")
    assert [g["metadata"]["name"] for g in store.list("PodGroup")[0]] == ["pg"], "a namespace takes its groups along"
