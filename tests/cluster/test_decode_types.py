"""Bodies of the wrong JSON types are refused as kube-apiserver's typed decoder refuses them (400, encoding/json's
message), never a 500 and never stored; every served kind has its version's schema."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from kss_sim.cluster.admission import decode_types
from kss_sim.cluster.kinds.registry import KINDS
from kss_sim.kube.versions import VERSIONS
from tests.cluster.factories import node, pod

PODS = "/api/v1/namespaces/default/pods"


@pytest.mark.parametrize("version", list(VERSIONS))
def test_every_served_kind_has_a_schema_in_every_version(version: str) -> None:
    schema = decode_types.schema(version)
    missing = [k.kind for k in KINDS if not k.custom and k.kind not in schema.roots]
    assert not missing
    # Every struct a field names is in the schema (the generator followed every reference).
    named = {code.lstrip("[{")[1:] for fields in schema.structs.values() for code in fields.values() if "@" in code}
    assert named <= set(schema.structs)


def test_a_field_the_version_lacks_is_found_however_deep_and_only_there() -> None:
    # The walk looks only where such a field can be (a memo per version): it still reaches a container inside a
    # Deployment's pod template, and a health's message inside a pod's status.
    container = {"name": "c", "image": "x", "restartPolicyRules": [], "ports": [{"containerPort": 80}]}
    deployment = {"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [container]}}}}
    assert decode_types.absent_fields("Deployment", deployment, kube_version="1.33", prune=True) == [
        "spec.template.spec.containers[0].restartPolicyRules"
    ]
    assert container == {"name": "c", "image": "x", "ports": [{"containerPort": 80}]}
    health = {"resourceID": "r", "health": "Healthy", "message": "fine"}
    status = {"name": "c", "allocatedResourcesStatus": [{"name": "n", "resources": [health]}]}
    pod_body = {"spec": {"schedulingGroup": {}}, "status": {"containerStatuses": [status]}}
    assert decode_types.absent_fields("Pod", pod_body, kube_version="1.35", prune=False) == [
        "spec.schedulingGroup",
        "status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].message",
    ]
    # v1.36 lacks no field another version has but the one served everywhere (spec.workloadRef).
    assert decode_types.absent_fields("Pod", {"spec": {"workloadRef": {}}}, kube_version="1.36", prune=False) == []


def _decode_error(kind: str, text: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal {text}'


def _with_container(**fields: Any) -> dict[str, Any]:
    return pod("bad", containers=[{"name": "c", "image": "x", **fields}])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            pod("bad", containers=[{"name": 5, "image": "x"}]),
            "number into Go struct field Container.spec.containers.name of type string",
        ),
        (
            _with_container(ports="x"),
            "string into Go struct field Container.spec.containers.ports of type []v1.ContainerPort",
        ),
        (pod("bad", tolerations=[5]), "number into Go struct field PodSpec.spec.tolerations of type v1.Toleration"),
        (pod("bad", affinity="x"), "string into Go struct field PodSpec.spec.affinity of type v1.Affinity"),
        (
            pod(
                "bad",
                affinity={
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}
                },
            ),
            "string into Go struct field NodeSelector.spec.affinity.nodeAffinity."
            "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms of type []v1.NodeSelectorTerm",
        ),
        (
            pod("bad", schedulingGates=[{"name": 5}]),
            "number into Go struct field PodSchedulingGate.spec.schedulingGates.name of type string",
        ),
        (
            pod("bad", hostNetwork="yes"),
            "string into Go struct field PodSpec.spec.hostNetwork of type bool",
        ),
        (
            pod("bad", terminationGracePeriodSeconds="x"),
            "string into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64",
        ),
    ],
)
async def test_pod_fields_of_the_wrong_type_are_a_400_and_nothing_is_stored(
    client: httpx.AsyncClient, body: dict[str, Any], message: str
) -> None:
    r = await client.post(PODS, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["reason"] == "BadRequest" and r.json()["message"] == _decode_error("Pod", message)
    assert (await client.get(f"{PODS}/bad")).status_code == 404


async def test_a_null_container_is_an_empty_one_that_validation_refuses(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS, json=pod("bad", containers=[None]))
    assert r.status_code == 422, r.text
    assert r.json()["message"] == (
        'Pod "bad" is invalid: [spec.containers[0].name: Required value, spec.containers[0].image: Required value]'
    )
    assert (await client.get(f"{PODS}/bad")).status_code == 404


async def test_node_taints_of_the_wrong_type_are_a_400(client: httpx.AsyncClient) -> None:
    body = node("bad")
    body["spec"] = {"taints": [5]}
    r = await client.post("/api/v1/nodes", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _decode_error(
        "Node", "number into Go struct field NodeSpec.spec.taints of type v1.Taint"
    )
    assert (await client.get("/api/v1/nodes/bad")).status_code == 404


@pytest.mark.parametrize("version", list(VERSIONS))
def test_named_go_types_are_every_versions_own(version: str) -> None:
    go_types = decode_types.schema(version).go_types
    assert go_types["core.v1.Taint"]["effect"] == "v1.TaintEffect"
    assert go_types["core.v1.Capabilities"]["add"] == "[]v1.Capability"
    assert go_types["meta.v1.ObjectMeta"]["uid"] == "types.UID"
    assert "key" not in go_types["core.v1.Taint"], "a plain string is named by its code"


async def test_a_taint_effect_of_the_wrong_type_names_its_go_type(client: httpx.AsyncClient) -> None:
    body = node("bad")
    body["spec"] = {"taints": [{"key": "k", "effect": 5}]}
    r = await client.post("/api/v1/nodes", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _decode_error(
        "Node", "number into Go struct field Taint.spec.taints.effect of type v1.TaintEffect"
    )


@pytest.mark.parametrize(
    ("add", "text"),
    [
        ("x", "string into Go struct field Capabilities.spec.containers.securityContext.capabilities.add of type "
         "[]v1.Capability"),
        ([5], "number into Go struct field Capabilities.spec.containers.securityContext.capabilities.add of type "
         "v1.Capability"),
    ],
)  # fmt: skip
async def test_a_list_of_a_named_type_names_it_for_the_list_and_for_an_item(
    client: httpx.AsyncClient, add: Any, text: str
) -> None:
    r = await client.post(PODS, json=_with_container(securityContext={"capabilities": {"add": add}}))
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _decode_error("Pod", text)


async def test_a_uid_of_the_wrong_type_is_a_types_uid(client: httpx.AsyncClient) -> None:
    body = pod("bad")
    body["metadata"]["uid"] = 5
    r = await client.post(PODS, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _decode_error(
        "Pod", "number into Go struct field ObjectMeta.metadata.uid of type types.UID"
    )


async def test_a_replica_count_beyond_int32_is_refused(client: httpx.AsyncClient) -> None:
    template = {"metadata": {"labels": {"a": "b"}}, "spec": pod()["spec"]}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "big"},
        "spec": {"replicas": 2147483648, "selector": {"matchLabels": {"a": "b"}}, "template": template},
    }
    url = "/apis/apps/v1/namespaces/default/deployments"
    r = await client.post(url, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 2147483648 '
        "into Go struct field DeploymentSpec.spec.replicas of type int32"
    )
    assert (await client.get(f"{url}/big")).status_code == 404
    body["spec"]["replicas"] = 2147483647  # the largest int32 decodes
    assert (await client.post(url, json=body)).status_code == 201


async def test_a_merge_patch_of_the_wrong_type_changes_nothing(client: httpx.AsyncClient) -> None:
    assert (await client.post(PODS, json=pod("p"))).status_code == 201
    before = (await client.get(f"{PODS}/p")).json()
    r = await client.patch(
        f"{PODS}/p",
        content=b'{"spec":{"tolerations":"x"}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert r.status_code == 400, r.text
    assert "of type []v1.Toleration" in r.json()["message"]
    assert (await client.get(f"{PODS}/p")).json() == before


@pytest.mark.parametrize(
    ("path", "patch", "message"),
    [
        ("/status", b'{"status":{"phase":5,"conditions":"x"}}', "PodStatus.status.phase of type v1.PodPhase"),
        (
            "",
            b'{"metadata":{"ownerReferences":"x"}}',
            "ObjectMeta.metadata.ownerReferences of type []v1.OwnerReference",
        ),
        ("", b'{"metadata":{"finalizers":[5]}}', "ObjectMeta.metadata.finalizers of type string"),
        ("", b'{"spec":{"containers":[{"name":"c","image":5}]}}', "Container.spec.containers.image of type string"),
    ],
)
async def test_patches_whose_result_has_the_wrong_types_are_refused(
    client: httpx.AsyncClient, path: str, patch: bytes, message: str
) -> None:
    assert (await client.post(PODS, json=pod("p"))).status_code == 201
    before = (await client.get(f"{PODS}/p")).json()
    for content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        r = await client.patch(f"{PODS}/p{path}", content=patch, headers={"content-type": content_type})
        assert r.status_code == 400, r.text
        assert r.json()["message"].endswith(f"into Go struct field {message}")
    assert (await client.get(f"{PODS}/p")).json() == before


async def test_yaml_nested_deeper_than_the_decoder_goes_is_a_400(client: httpx.AsyncClient) -> None:
    body = "apiVersion: v1\nkind: Pod\nmetadata: {name: deep}\nx: " + "[" * 2000 + "]" * 2000
    r = await client.post(PODS, content=body, headers={"content-type": "application/yaml"})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == "the object provided is unrecognized: yaml parse error: exceeded max depth"
    assert (await client.get(f"{PODS}/deep")).status_code == 404


async def test_a_binding_with_a_target_of_the_wrong_type_is_a_400(client: httpx.AsyncClient) -> None:
    assert (await client.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    assert (await client.post(PODS, json=pod("p"))).status_code == 201
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": 5}
    r = await client.post(f"{PODS}/p/binding", json=binding)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _decode_error(
        "Binding", "number into Go struct field Binding.target of type v1.ObjectReference"
    )
    assert "nodeName" not in (await client.get(f"{PODS}/p")).json()["spec"]
    binding["target"] = {"kind": "Node", "name": "n1"}
    assert (await client.post(f"{PODS}/p/binding", json=binding)).status_code == 201
    assert (await client.get(f"{PODS}/p")).json()["spec"]["nodeName"] == "n1"


# Found by the fuzzing suite (tests/fuzz): each answered 500 before.


async def test_delete_options_of_the_wrong_type_are_a_400(client: httpx.AsyncClient) -> None:
    assert (await client.post(PODS, json=pod("p"))).status_code == 201
    for options, text in [
        ({"preconditions": True}, "bool into Go struct field DeleteOptions.preconditions of type v1.Preconditions"),
        (
            {"preconditions": {"uid": 5}},
            "number into Go struct field Preconditions.preconditions.uid of type types.UID",
        ),
        ({"gracePeriodSeconds": "x"}, "string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"),
    ]:
        r = await client.request("DELETE", f"{PODS}/p", json=options)
        assert r.status_code == 400, r.text
        assert r.json()["message"] == _decode_error("DeleteOptions", text)
    assert (await client.get(f"{PODS}/p")).status_code == 200, "nothing was deleted"


async def test_an_eviction_whose_delete_options_have_the_wrong_type_is_a_400(client: httpx.AsyncClient) -> None:
    assert (await client.post(PODS, json=pod("p"))).status_code == 201
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p"},
        "deleteOptions": {"preconditions": "x"},
    }
    r = await client.post(f"{PODS}/p/eviction", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _decode_error(
        "Eviction", "string into Go struct field DeleteOptions.deleteOptions.preconditions of type v1.Preconditions"
    )


@pytest.mark.parametrize(
    ("path", "body", "text"),
    [
        (
            PODS,
            pod("p", labels={"app": 5}),
            "number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            PODS,
            {**pod("p"), "spec": {**pod("p")["spec"], "nodeSelector": {"zone": 1.5}}},
            "number into Go struct field PodSpec.spec.nodeSelector of type string",
        ),
    ],
)
async def test_a_number_in_a_map_of_strings_that_is_no_resource_list_is_a_400(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], text: str
) -> None:
    r = await client.post(path, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _decode_error("Pod", text)
    # A resource list takes numbers: they are quantities.
    fine = pod("q")
    fine["spec"]["containers"][0]["resources"] = {"requests": {"cpu": 1}}
    assert (await client.post(PODS, json=fine)).status_code == 201


async def test_server_side_apply_of_a_selector_with_numbers_is_a_400(client: httpx.AsyncClient) -> None:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs"},
        "spec": {"selector": {"matchLabels": {"app": 28341}}, "template": template},
    }
    r = await client.patch(
        "/apis/apps/v1/namespaces/default/replicasets/rs?fieldManager=t",
        content=json.dumps(body),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert r.status_code == 400, r.text
    assert (
        "cannot unmarshal number into Go struct field LabelSelector.spec.selector.matchLabels of type string"
        in (r.json()["message"])
    )


async def test_server_side_apply_of_a_wrong_type_is_a_400_before_any_conflict(client: httpx.AsyncClient) -> None:
    # The configuration is decoded before it is merged: a field of the wrong type that another manager owns is
    # refused as undecodable (400), never reported as a conflict (409), with force or without.
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}}, "template": template},
    }
    url = "/apis/apps/v1/namespaces/default/replicasets/rs"
    apply = {"Content-Type": "application/apply-patch+yaml"}
    assert (await client.patch(f"{url}?fieldManager=first", content=json.dumps(body), headers=apply)).status_code == 201
    body["spec"]["replicas"] = "two"
    for query in ("fieldManager=second", "fieldManager=second&force=true"):
        r = await client.patch(f"{url}?{query}", content=json.dumps(body), headers=apply)
        assert r.status_code == 400, r.text
        assert r.json()["message"] == _decode_error(
            "ReplicaSet", "string into Go struct field ReplicaSetSpec.spec.replicas of type int32"
        )
    assert (await client.get(url)).json()["spec"]["replicas"] == 1
    # A null in a configuration still removes a field (decoding checks a copy): the first manager gives replicas up.
    body["spec"]["replicas"] = None
    r = await client.patch(f"{url}?fieldManager=first", content=json.dumps(body), headers=apply)
    assert r.status_code == 200, r.text


async def test_a_namespace_with_a_null_name_is_a_422(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/namespaces", json={"metadata": {"name": None}})
    assert r.status_code == 422, r.text
    assert "name or generateName is required" in r.json()["message"]
