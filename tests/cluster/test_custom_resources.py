"""CustomResourceDefinitions over the API, as kube-apiserver's apiextensions-apiserver serves them: the CRD's own
validation and status, then its kind served (discovery, CRUD, schema validation, pruning, defaults, the status
and scale subresources, printer columns), its objects deleted with it and kept across a restart."""

from __future__ import annotations

import copy
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import create_engine

from kss_sim.cluster.storage.store import ClusterStore

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
QUEUES = "/apis/kueue.example.com/v1beta1/clusterqueues"
RAYS = "/apis/ray.example.com/v1/namespaces/default/rayclusters"

CLUSTER_QUEUE_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterqueues.kueue.example.com"},
    "spec": {
        "group": "kueue.example.com",
        "names": {"kind": "ClusterQueue", "plural": "clusterqueues", "shortNames": ["cq"], "categories": ["kueue"]},
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Cohort", "type": "string", "jsonPath": ".spec.cohort"},
                    {"name": "Strategy", "type": "string", "jsonPath": ".spec.queueingStrategy", "priority": 1},
                    {"name": "Pending Workloads", "type": "integer", "jsonPath": ".status.pendingWorkloads"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "cohort": {"type": "string", "maxLength": 63},
                                    "queueingStrategy": {
                                        "type": "string",
                                        "enum": ["StrictFIFO", "BestEffortFIFO"],
                                        "default": "BestEffortFIFO",
                                    },
                                    "resourceGroups": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["coveredResources"],
                                            "properties": {
                                                "coveredResources": {"type": "array", "items": {"type": "string"}},
                                                "nominalQuota": {"x-kubernetes-int-or-string": True},
                                            },
                                        },
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"pendingWorkloads": {"type": "integer", "format": "int32"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}

RAY_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "rayclusters.ray.example.com"},
    "spec": {
        "group": "ray.example.com",
        "names": {"kind": "RayCluster", "plural": "rayclusters"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.workers",
                        "statusReplicasPath": ".status.readyWorkers",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["image"],
                                "properties": {
                                    "image": {"type": "string", "pattern": "^[a-z]"},
                                    "workers": {"type": "integer", "minimum": 0, "maximum": 100},
                                    "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "suspend": {"type": "boolean", "nullable": True},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"readyWorkers": {"type": "integer"}, "selector": {"type": "string"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


def _ray(name: str = "r1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.example.com/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"image": "rayproject/ray", "workers": 2, **spec},
    }


async def _install(client: httpx.AsyncClient, crd: dict[str, Any]) -> dict[str, Any]:
    created = await client.post(CRDS, json=crd)
    assert created.status_code == 201, created.text
    return dict(created.json())


async def test_a_new_crd_is_established_with_its_names_accepted(client: httpx.AsyncClient) -> None:
    crd = await _install(client, CLUSTER_QUEUE_CRD)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "ClusterQueue"
    assert crd["status"]["acceptedNames"]["singular"] == "clusterqueue"
    assert crd["status"]["acceptedNames"]["listKind"] == "ClusterQueueList"
    assert crd["status"]["storedVersions"] == ["v1beta1"]
    assert crd["metadata"]["generation"] == 1
    listed = (await client.get(CRDS)).json()
    assert [i["metadata"]["name"] for i in listed["items"]] == ["clusterqueues.kueue.example.com"]


async def test_a_crd_with_a_non_structural_schema_is_refused(client: httpx.AsyncClient) -> None:
    crd = copy.deepcopy(CLUSTER_QUEUE_CRD)
    del crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["cohort"]["type"]
    answer = await client.post(CRDS, json=crd)
    assert answer.status_code == 422
    status = answer.json()
    assert status["details"]["kind"] == "CustomResourceDefinition"
    assert status["details"]["group"] == "apiextensions.k8s.io"
    assert (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[cohort].type: Required value: "
        "must not be empty for specified object fields"
    ) in status["message"]
    assert (await client.get(f"{CRDS}/clusterqueues.kueue.example.com")).status_code == 404


async def test_a_schema_or_bool_decodes_in_both_forms_and_validation_judges_it(client: httpx.AsyncClient) -> None:
    # additionalProperties, items and dependencies each decode a schema or a bool/list (their own UnmarshalJSON in
    # Go): a bool is not a decode error (400) but the CRD's validation's to judge (422, kube's words).
    crd = copy.deepcopy(CLUSTER_QUEUE_CRD)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    spec["labels"] = {"type": "object", "additionalProperties": False}
    spec["tags"] = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    answer = await client.post(CRDS, json=crd)
    assert answer.status_code == 422, answer.text
    message = answer.json()["message"]
    path = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties"
    assert f"{path}[labels].additionalProperties: Forbidden: additionalProperties cannot be set to false" in message
    assert (
        f"{path}[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity "
        "becomes quadratic"
    ) in message
    spec["labels"] = {"type": "object", "additionalProperties": True}
    del spec["tags"]["uniqueItems"]
    answer = await client.post(CRDS, json=crd)
    assert answer.status_code == 201, answer.text
    stored = answer.json()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert stored["properties"]["labels"]["additionalProperties"] is True


async def test_crd_names_scope_and_storage_versions_are_validated(client: httpx.AsyncClient) -> None:
    crd = copy.deepcopy(RAY_CRD)
    crd["metadata"]["name"] = "rays.ray.example.com"
    crd["spec"]["scope"] = "Global"
    crd["spec"]["versions"].append({**crd["spec"]["versions"][0], "name": "v2"})
    answer = await client.post(CRDS, json=crd)
    assert answer.status_code == 422
    message = answer.json()["message"]
    assert 'metadata.name: Invalid value: "rays.ray.example.com": must be spec.names.plural+"."+spec.group' in message
    assert 'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"' in message
    assert "must have exactly one version marked as storage version" in message


async def test_the_kinds_of_a_crd_are_discovered(client: httpx.AsyncClient) -> None:
    assert (await client.get("/apis/kueue.example.com")).status_code == 404
    await _install(client, CLUSTER_QUEUE_CRD)
    groups = {g["name"]: g for g in (await client.get("/apis")).json()["groups"]}
    assert groups["kueue.example.com"]["preferredVersion"]["version"] == "v1beta1"
    assert "apiextensions.k8s.io" in groups
    assert (await client.get("/apis/kueue.example.com")).json()["versions"][0]["groupVersion"] == (
        "kueue.example.com/v1beta1"
    )
    resources = (await client.get("/apis/kueue.example.com/v1beta1")).json()["resources"]
    main, status = resources
    assert main["name"] == "clusterqueues" and main["kind"] == "ClusterQueue" and not main["namespaced"]
    assert main["shortNames"] == ["cq"] and main["categories"] == ["kueue"]
    assert status["name"] == "clusterqueues/status"


async def test_custom_objects_are_pruned_defaulted_and_kept_from_setting_status(client: httpx.AsyncClient) -> None:
    await _install(client, CLUSTER_QUEUE_CRD)
    created = await client.post(
        QUEUES,
        json={
            "apiVersion": "kueue.example.com/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "team-a"},
            "spec": {"cohort": "all", "unknownField": 1, "resourceGroups": [{"coveredResources": ["cpu"], "x": 1}]},
            "status": {"pendingWorkloads": 5},
        },
    )
    assert created.status_code == 201, created.text
    obj = created.json()
    assert obj["spec"] == {
        "cohort": "all",
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["cpu"]}],
    }
    assert "status" not in obj
    assert obj["metadata"]["generation"] == 1
    assert created.headers.get_list("warning") == [
        '299 - "unknown field \\"spec.resourceGroups[0].x\\""',
        '299 - "unknown field \\"spec.unknownField\\""',
    ] or sorted(created.headers.get_list("warning")) == sorted(
        ['299 - "unknown field \\"spec.resourceGroups[0].x\\""', '299 - "unknown field \\"spec.unknownField\\""']
    )
    # The status subresource writes only the status; the main resource ignores it.
    status = await client.put(f"{QUEUES}/team-a/status", json={**obj, "status": {"pendingWorkloads": 3}})
    assert status.status_code == 200, status.text
    assert status.json()["status"] == {"pendingWorkloads": 3}
    assert status.json()["metadata"]["generation"] == 1
    updated = await client.put(
        f"{QUEUES}/team-a", json={**status.json(), "spec": {"cohort": "b"}, "status": {"pendingWorkloads": 9}}
    )
    assert updated.json()["status"] == {"pendingWorkloads": 3}
    assert updated.json()["metadata"]["generation"] == 2
    listed = (await client.get(QUEUES)).json()
    assert listed["kind"] == "ClusterQueueList" and listed["apiVersion"] == "kueue.example.com/v1beta1"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["team-a"]


async def test_strict_field_validation_refuses_unknown_fields(client: httpx.AsyncClient) -> None:
    await _install(client, RAY_CRD)
    answer = await client.post(f"{RAYS}?fieldValidation=Strict", json=_ray(extra=1))
    assert answer.status_code == 400
    assert answer.json()["message"] == (
        'RayCluster in version "v1" cannot be handled as a RayCluster: strict decoding error: '
        'unknown field "spec.extra"'
    )
    # Fields under x-kubernetes-preserve-unknown-fields and additionalProperties are kept.
    kept = await client.post(
        f"{RAYS}?fieldValidation=Strict", json=_ray(config={"any": {"thing": 1}}, labels={"a": "b"}, suspend=None)
    )
    assert kept.status_code == 201, kept.text
    assert kept.json()["spec"]["config"] == {"any": {"thing": 1}}
    assert kept.json()["spec"]["labels"] == {"a": "b"}


async def test_objects_violating_their_schema_are_refused_with_the_field_path(client: httpx.AsyncClient) -> None:
    await _install(client, RAY_CRD)
    cases = {
        'spec.workers: Invalid value: "string": spec.workers in body must be of type integer: "string"': _ray(
            workers="two"
        ),
        "spec.workers: Invalid value: 101: spec.workers in body should be less than or equal to 100": _ray(workers=101),
        "spec.image: Invalid value: \"Ray\": spec.image in body should match '^[a-z]'": _ray(image="Ray"),
        'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"': _ray(
            labels={"a": 1}
        ),
    }
    for message, body in cases.items():
        answer = await client.post(RAYS, json=body)
        assert answer.status_code == 422, (message, answer.text)
        status = answer.json()
        assert status["message"] == f'RayCluster.ray.example.com "r1" is invalid: {message}', status["message"]
        assert status["details"]["causes"][0]["field"] == message.split(":")[0]
    missing = _ray()
    del missing["spec"]["image"]
    answer = await client.post(RAYS, json=missing)
    assert answer.status_code == 422
    assert "spec.image: Required value" in answer.json()["message"]
    assert (await client.get(RAYS)).json()["items"] == []


async def test_the_scale_subresource_reads_and_writes_the_crd_paths(client: httpx.AsyncClient) -> None:
    await _install(client, RAY_CRD)
    created = (await client.post(RAYS, json=_ray())).json()
    await client.put(f"{RAYS}/r1/status", json={**created, "status": {"readyWorkers": 1, "selector": "app=ray"}})
    scale = (await client.get(f"{RAYS}/r1/scale")).json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "app=ray"}
    patched = await client.patch(
        f"{RAYS}/r1/scale",
        content=b'{"spec":{"replicas":5}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert (await client.get(f"{RAYS}/r1")).json()["spec"]["workers"] == 5
    too_many = await client.patch(
        f"{RAYS}/r1/scale",
        content=b'{"spec":{"replicas":500}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert too_many.status_code == 422


async def test_printer_columns_make_the_table(client: httpx.AsyncClient) -> None:
    await _install(client, CLUSTER_QUEUE_CRD)
    await client.post(
        QUEUES,
        json={"apiVersion": "kueue.example.com/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {}},
    )
    table = (await client.get(QUEUES, headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Cohort", "Strategy", "Pending Workloads"]
    assert [c["priority"] for c in table["columnDefinitions"]] == [0, 0, 1, 0]
    assert table["rows"][0]["cells"] == ["q", None, "BestEffortFIFO", None]
    await _install(client, RAY_CRD)
    await client.post(RAYS, json=_ray())
    table = (await client.get(RAYS, headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]


async def test_deleting_a_crd_deletes_its_objects_and_its_kind(client: httpx.AsyncClient) -> None:
    await _install(client, RAY_CRD)
    assert (await client.post(RAYS, json=_ray())).status_code == 201
    deleted = await client.delete(f"{CRDS}/rayclusters.ray.example.com")
    assert deleted.status_code == 200
    assert (await client.get(RAYS)).status_code == 404
    assert (await client.get("/apis/ray.example.com/v1")).status_code == 404
    await _install(client, RAY_CRD)
    assert (await client.get(RAYS)).json()["items"] == []


async def test_unknown_groups_and_resources_are_404(client: httpx.AsyncClient) -> None:
    assert (await client.get("/apis/nothing.example.com/v1/things")).status_code == 404
    await _install(client, RAY_CRD)
    assert (await client.get("/apis/ray.example.com/v1/rayjobs")).status_code == 404
    assert (await client.get("/apis/ray.example.com/v2/rayclusters")).status_code == 404


def test_custom_objects_survive_a_restart(engine: Any, database_url: str) -> None:
    store = ClusterStore.open(engine)
    store.create("CustomResourceDefinition", copy.deepcopy(RAY_CRD))
    store.create("RayCluster.ray.example.com", _ray(), "default")
    store.flush()
    reopened = ClusterStore.open(create_engine(database_url))
    assert reopened.get("RayCluster.ray.example.com", "default", "r1") is not None
    assert reopened.custom_kind("RayCluster.ray.example.com") is not None


async def test_a_crd_whose_names_are_taken_in_its_group_is_not_established(client: httpx.AsyncClient) -> None:
    await _install(client, RAY_CRD)
    rival = copy.deepcopy(RAY_CRD)
    rival["metadata"]["name"] = "rayclusters2.ray.example.com"
    rival["spec"]["names"] = {"kind": "RayCluster2", "plural": "rayclusters2", "shortNames": ["raycluster"]}
    crd = await _install(client, rival)
    conditions = {c["type"]: (c["status"], c["reason"]) for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": ("False", "NameConflict"), "Established": ("False", "NotAccepted")}
    assert (await client.get("/apis/ray.example.com/v1/namespaces/default/rayclusters2")).status_code == 404


async def test_custom_objects_are_watched_and_go_with_their_namespace(app: FastAPI, client: httpx.AsyncClient) -> None:
    await _install(client, RAY_CRD)
    listed = (await client.get(RAYS)).json()
    rv = listed["metadata"]["resourceVersion"]
    await client.post(RAYS, json=_ray())
    watched = await client.get(f"{RAYS}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    events = [line for line in watched.text.splitlines() if line]
    assert len(events) == 1 and '"type":"ADDED"' in events[0] and '"kind":"RayCluster"' in events[0]
    assert (await client.delete("/api/v1/namespaces/default")).status_code in (403, 422)  # built-in: kept
    other = "/apis/ray.example.com/v1/namespaces/team/rayclusters"
    assert (await client.post(other, json=_ray("t1"))).status_code == 201
    assert (await client.delete("/api/v1/namespaces/team")).status_code == 200
    # Terminating until emptied (no namespace controller runs here): finalized as it would, the namespace goes
    # and its custom objects with it.
    store: ClusterStore = app.state.store
    team = store.get("Namespace", None, "team")
    assert team is not None and team["status"]["phase"] == "Terminating"
    assert (await client.get(f"{other}/t1")).status_code == 200
    store.update("Namespace", {**team, "spec": {"finalizers": []}}, subresource="finalize")
    assert store.get("Namespace", None, "team") is None
    assert (await client.get(f"{other}/t1")).status_code == 404


async def test_server_side_apply_and_merge_patches_work_on_custom_objects(client: httpx.AsyncClient) -> None:
    await _install(client, RAY_CRD)
    applied = await client.patch(
        f"{RAYS}/r1?fieldManager=me",
        content=b"apiVersion: ray.example.com/v1\nkind: RayCluster\nmetadata: {name: r1}\n"
        b"spec: {image: ray, workers: 1}\n",
        headers={"content-type": "application/apply-patch+yaml"},
    )
    assert applied.status_code == 201, applied.text
    assert applied.json()["metadata"]["managedFields"][0]["manager"] == "me"
    patched = await client.patch(
        f"{RAYS}/r1", content=b'{"spec":{"workers":4}}', headers={"content-type": "application/merge-patch+json"}
    )
    assert patched.json()["spec"] == {"image": "ray", "workers": 4}
    assert patched.json()["metadata"]["generation"] == 2
    strategic = await client.patch(
        f"{RAYS}/r1",
        content=b'{"spec":{"workers":4}}',
        headers={"content-type": "application/strategic-merge-patch+json"},
    )
    assert strategic.status_code == 415


async def test_cel_rules_of_the_schema_are_enforced(client: httpx.AsyncClient) -> None:
    crd = copy.deepcopy(RAY_CRD)
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["maxWorkers"] = {"type": "integer"}
    spec_schema["x-kubernetes-validations"] = [
        {"rule": "!has(self.maxWorkers) || self.workers <= self.maxWorkers", "message": "workers above maxWorkers"},
        {"rule": "self.image == oldSelf.image", "message": "image is immutable"},
    ]
    broken = copy.deepcopy(crd)
    broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = [{"rule": "self.x +"}]
    refused = await client.post(CRDS, json=broken)
    assert refused.status_code == 422
    assert (
        "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: "
        in (refused.json()["message"])
    )
    assert "compilation failed" in refused.json()["message"]
    await _install(client, crd)
    too_many = await client.post(RAYS, json=_ray(workers=5, maxWorkers=4))
    assert too_many.status_code == 422
    assert too_many.json()["message"] == (
        'RayCluster.ray.example.com "r1" is invalid: spec: Invalid value: "object": workers above maxWorkers'
    )
    assert (await client.post(RAYS, json=_ray(workers=3, maxWorkers=4))).status_code == 201
    changed = await client.patch(
        f"{RAYS}/r1", content=b'{"spec":{"image":"other"}}', headers={"content-type": "application/merge-patch+json"}
    )
    assert changed.status_code == 422
    assert 'spec: Invalid value: "object": image is immutable' in changed.json()["message"]
    kept = await client.patch(
        f"{RAYS}/r1", content=b'{"spec":{"workers":4}}', headers={"content-type": "application/merge-patch+json"}
    )
    assert kept.status_code == 200, kept.text


async def test_every_served_version_reads_and_writes_the_same_objects(client: httpx.AsyncClient) -> None:
    crd = copy.deepcopy(RAY_CRD)
    beta = {**copy.deepcopy(crd["spec"]["versions"][0]), "name": "v1beta1", "storage": False}
    crd["spec"]["versions"].append(beta)
    await _install(client, crd)
    group = (await client.get("/apis/ray.example.com")).json()
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1"
    beta_rays = "/apis/ray.example.com/v1beta1/namespaces/default/rayclusters"
    created = await client.post(beta_rays, json={**_ray(), "apiVersion": "ray.example.com/v1beta1"})
    assert created.status_code == 201, created.text
    assert created.json()["apiVersion"] == "ray.example.com/v1beta1"
    assert (await client.get(f"{RAYS}/r1")).json()["apiVersion"] == "ray.example.com/v1"
    assert (await client.get(f"{beta_rays}/r1")).json()["apiVersion"] == "ray.example.com/v1beta1"
    listed = (await client.get(beta_rays)).json()
    assert listed["apiVersion"] == "ray.example.com/v1beta1"
    assert [i["apiVersion"] for i in listed["items"]] == ["ray.example.com/v1beta1"]


def test_a_kind_with_a_long_group_is_stored_on_every_backend(backend_url: str) -> None:
    """A custom kind is stored under ``Kind.group``: a 59-character kind in a long group (kube allows a 253-character
    DNS subdomain) must fit the database's kind column on PostgreSQL too, where column widths are enforced."""
    from kss_sim.db import make_engine, upgrade_database

    group = "scheduling-" + "x" * 40 + ".platform-team." + "y" * 60 + ".example.com"
    kind = "K" + "a" * 58  # its listKind (kind + "List") is a DNS-1035 label too: at most 63
    crd = copy.deepcopy(RAY_CRD)
    crd["metadata"]["name"] = f"widgets.{group}"
    crd["spec"]["group"] = group
    crd["spec"]["names"] = {"kind": kind, "plural": "widgets"}
    engine = make_engine(backend_url)
    upgrade_database(engine)
    try:
        store = ClusterStore.open(engine)
        store.create("CustomResourceDefinition", crd)
        key = f"{kind}.{group}"
        assert len(key) > 63
        body = _ray("w1")
        body["apiVersion"], body["kind"] = f"{group}/v1", kind
        store.create(key, body, "default")
        store.flush()
        reopened = ClusterStore.open(make_engine(backend_url))
        assert reopened.get(key, "default", "w1") is not None
    finally:
        engine.dispose()
