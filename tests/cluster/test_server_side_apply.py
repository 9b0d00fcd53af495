"""Server-side apply and managedFields over the API, as kube-apiserver answers them (in-process app)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import yaml

from tests.cluster.factories import pod

APPLY = {"content-type": "application/apply-patch+yaml"}
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"


def deployment(replicas: int = 2, *, labels: dict[str, str] | None = None, image: str = "nginx:1.27") -> str:
    """A Deployment configuration as a user applies it (YAML)."""
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", **({"labels": labels} if labels else {})},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}]},
            },
        },
    }
    return yaml.safe_dump(body)


async def apply(
    client: httpx.AsyncClient, url: str, body: str, manager: str | None = "tester", **params: str
) -> httpx.Response:
    query = {**({"fieldManager": manager} if manager is not None else {}), **params}
    return await client.patch(url, content=body.encode(), headers=APPLY, params=query)


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """managedFields by (manager, operation)."""
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields") or []}


async def test_apply_creates_the_object_then_merges_into_it_with_an_apply_entry(client: httpx.AsyncClient) -> None:
    r = await apply(client, f"{DEPLOYMENTS}/web", deployment())
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["spec"]["replicas"] == 2 and created["metadata"]["uid"]
    entry = entries(created)[("tester", "Apply")]
    assert entry["apiVersion"] == "apps/v1" and entry["fieldsType"] == "FieldsV1" and entry["time"]
    assert entry["fieldsV1"] == {
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},  # LabelSelector is an atomic struct
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                        }
                    }
                },
            },
        }
    }
    r = await apply(client, f"{DEPLOYMENTS}/web", deployment(4, image="nginx:1.28"))
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["replicas"] == 4
    assert r.json()["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert r.json()["metadata"]["generation"] == 2
    assert list(entries(r.json())) == [("tester", "Apply")]


async def test_an_apply_that_changes_nothing_writes_nothing(client: httpx.AsyncClient) -> None:
    first = (await apply(client, f"{DEPLOYMENTS}/web", deployment())).json()
    again = await apply(client, f"{DEPLOYMENTS}/web", deployment())
    assert again.status_code == 200
    assert again.json()["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again.json()["metadata"]["managedFields"] == first["metadata"]["managedFields"]


async def test_apply_needs_a_field_manager_and_force_only_goes_with_apply(client: httpx.AsyncClient) -> None:
    r = await apply(client, f"{DEPLOYMENTS}/web", deployment(), manager=None)
    assert r.status_code == 422
    assert r.json()["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    assert r.json()["details"]["causes"][0]["field"] == "fieldManager"
    assert (await client.get(f"{DEPLOYMENTS}/web")).status_code == 404
    await apply(client, f"{DEPLOYMENTS}/web", deployment())
    r = await client.patch(
        f"{DEPLOYMENTS}/web",
        json={"spec": {"replicas": 9}},
        headers={"content-type": "application/merge-patch+json"},
        params={"force": "true"},
    )
    assert r.status_code == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in r.json()["message"]
    assert (await client.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 2


async def test_a_field_another_manager_changed_is_a_conflict_until_forced(client: httpx.AsyncClient) -> None:
    await apply(client, f"{DEPLOYMENTS}/web", deployment())
    scaled = await client.patch(
        f"{DEPLOYMENTS}/web",
        json={"spec": {"replicas": 5}},
        headers={"content-type": "application/merge-patch+json"},
        params={"fieldManager": "kubectl-scale"},
    )
    owners = entries(scaled.json())
    assert owners[("kubectl-scale", "Update")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in owners[("tester", "Apply")]["fieldsV1"]["f:spec"]  # an Update takes the field

    r = await apply(client, f"{DEPLOYMENTS}/web", deployment(3))
    assert r.status_code == 409
    status = r.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-scale" using apps/v1: .spec.replicas'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-scale" using apps/v1',
            "field": ".spec.replicas",
        }
    ]
    assert (await client.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 5

    # The same value is no conflict: both own it.
    same = await apply(client, f"{DEPLOYMENTS}/web", deployment(5))
    assert same.status_code == 200
    forced = await apply(client, f"{DEPLOYMENTS}/web", deployment(3), force="true")
    assert forced.status_code == 200, forced.text
    assert forced.json()["spec"]["replicas"] == 3
    owners = entries(forced.json())
    assert ("kubectl-scale", "Update") not in owners  # its only field was taken
    assert "f:replicas" in owners[("tester", "Apply")]["fieldsV1"]["f:spec"]


async def test_conflicts_with_several_managers_are_listed_by_manager(client: httpx.AsyncClient) -> None:
    await apply(client, f"{DEPLOYMENTS}/web", deployment(labels={"tier": "a"}))
    await client.patch(
        f"{DEPLOYMENTS}/web",
        json={"spec": {"replicas": 7}, "metadata": {"labels": {"tier": "b"}}},
        headers={"content-type": "application/merge-patch+json"},
        params={"fieldManager": "editor"},
    )
    r = await apply(client, f"{DEPLOYMENTS}/web", deployment(2, labels={"tier": "c"}), manager="other")
    assert r.status_code == 409
    assert r.json()["message"] == (
        'Apply failed with 2 conflicts: conflicts with "editor" using apps/v1:\n'
        "- .metadata.labels.tier\n- .spec.replicas"
    )


async def test_a_field_left_out_is_removed_unless_another_applier_owns_it(client: httpx.AsyncClient) -> None:
    await apply(client, f"{DEPLOYMENTS}/web", deployment(labels={"a": "1", "b": "2", "shared": "x"}))
    await apply(client, f"{DEPLOYMENTS}/web", deployment(labels={"shared": "x"}), manager="second")
    r = await apply(client, f"{DEPLOYMENTS}/web", deployment(labels={"a": "1"}))
    assert r.json()["metadata"]["labels"] == {"a": "1", "shared": "x"}
    owners = entries(r.json())
    assert owners[("second", "Apply")]["fieldsV1"]["f:metadata"] == {"f:labels": {"f:shared": {}}}
    # A container the applier no longer lists goes; one another applier added stays.
    two = yaml.safe_load(deployment())
    two["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    await apply(client, f"{DEPLOYMENTS}/web", yaml.safe_dump(two))
    sidecar_only = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "log", "image": "fluentbit"}]}}},
    }
    await apply(client, f"{DEPLOYMENTS}/web", yaml.safe_dump(sidecar_only), manager="logging")
    r = await apply(client, f"{DEPLOYMENTS}/web", deployment())
    names = [c["name"] for c in r.json()["spec"]["template"]["spec"]["containers"]]
    assert names == ["nginx", "log"]


async def test_keyed_lists_merge_item_by_item_and_atomic_lists_are_replaced(client: httpx.AsyncClient) -> None:
    mine = yaml.safe_load(deployment())
    pod_spec = mine["spec"]["template"]["spec"]
    pod_spec["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    pod_spec["tolerations"] = [{"key": "a", "operator": "Exists"}]
    assert (await apply(client, f"{DEPLOYMENTS}/web", json.dumps(mine))).status_code == 201
    other = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "nginx", "env": [{"name": "B", "value": "2"}]}],
                    "tolerations": [{"key": "b", "operator": "Exists"}],
                }
            }
        },
    }
    r = await apply(client, f"{DEPLOYMENTS}/web", json.dumps(other), manager="other", force="true")
    assert r.status_code == 200, r.text
    spec = r.json()["spec"]["template"]["spec"]
    assert [e["name"] for e in spec["containers"][0]["env"]] == ["A", "B"]
    assert spec["containers"][0]["image"] == "nginx:1.27"
    assert [t["key"] for t in spec["tolerations"]] == ["b"]  # atomic: replaced whole, and taken
    mine_now = entries(r.json())[("tester", "Apply")]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
    assert "f:tolerations" not in mine_now


async def test_dry_run_apply_answers_the_result_and_stores_nothing(client: httpx.AsyncClient) -> None:
    r = await apply(client, f"{DEPLOYMENTS}/web", deployment(), dryRun="All")
    assert r.status_code == 201 and r.json()["spec"]["replicas"] == 2
    assert (await client.get(f"{DEPLOYMENTS}/web")).status_code == 404
    stored = (await apply(client, f"{DEPLOYMENTS}/web", deployment())).json()
    r = await apply(client, f"{DEPLOYMENTS}/web", deployment(6), dryRun="All")
    assert r.status_code == 200 and r.json()["spec"]["replicas"] == 6
    after = (await client.get(f"{DEPLOYMENTS}/web")).json()
    assert after["spec"]["replicas"] == 2
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


async def test_bad_configurations_get_upstream_errors_and_change_nothing(client: httpx.AsyncClient) -> None:
    wrong_version = deployment().replace("apps/v1", "apps/v1beta1")
    r = await apply(client, f"{DEPLOYMENTS}/web", wrong_version)
    assert r.status_code == 400
    assert r.json()["message"] == (
        "Incorrect version specified in apply patch. Specified patch version: apps/v1beta1, expected: apps/v1"
    )
    with_managed = yaml.safe_load(deployment())
    with_managed["metadata"]["managedFields"] = [{"manager": "x"}]
    r = await apply(client, f"{DEPLOYMENTS}/web", yaml.safe_dump(with_managed))
    assert r.status_code == 400 and r.json()["message"] == "metadata.managedFields must be nil"
    nameless = yaml.safe_load(deployment())
    del nameless["spec"]["template"]["spec"]["containers"][0]["name"]
    r = await apply(client, f"{DEPLOYMENTS}/web", yaml.safe_dump(nameless))
    assert r.status_code == 500
    assert r.json()["message"].startswith("failed to create typed patch object (default/web; apps/v1, Kind=Deployment)")
    assert 'omits key field "name"' in r.json()["message"]
    r = await apply(client, f"{DEPLOYMENTS}/web", "spec: [unclosed")
    assert r.status_code == 400 and r.json()["message"].startswith("error decoding YAML")
    assert (await client.get(f"{DEPLOYMENTS}/web")).status_code == 404


async def test_apply_to_a_custom_resource_treats_lists_as_atomic(client: httpx.AsyncClient) -> None:
    url = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/gang"
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "gang"},
        "spec": {"minMember": 3, "minResources": {"cpu": "3"}},
    }
    r = await apply(client, url, yaml.safe_dump(group))
    assert r.status_code == 201, r.text
    assert entries(r.json())[("tester", "Apply")]["fieldsV1"] == {
        "f:spec": {"f:minMember": {}, "f:minResources": {"f:cpu": {}}}
    }
    group["spec"]["minMember"] = 4
    r = await apply(client, url, yaml.safe_dump(group))
    assert r.json()["spec"]["minMember"] == 4


async def test_writes_without_apply_record_update_entries(client: httpx.AsyncClient) -> None:
    headers = {"user-agent": "kubectl/v1.35.0 (linux/amd64) kubernetes/abcdef"}
    r = await client.post(PODS, json=pod("tracked", labels={"app": "x"}), headers=headers)
    created = r.json()["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in created] == [("kubectl", "Update")]
    fields = created[0]["fieldsV1"]
    assert fields["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    assert 'k:{"name":"c"}' in fields["f:spec"]["f:containers"]  # an empty PodSpec has its containers (null)
    assert "." not in fields["f:spec"]["f:containers"]
    assert "f:status" not in fields and "f:name" not in fields["f:metadata"]

    r = await client.patch(
        f"{PODS}/tracked",
        json={"metadata": {"labels": {"app": "y", "extra": "1"}}},
        headers={"content-type": "application/strategic-merge-patch+json"},
        params={"fieldManager": "kubectl-label"},
    )
    owners = entries(r.json())
    assert owners[("kubectl-label", "Update")]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:app": {}, "f:extra": {}}}}
    assert owners[("kubectl", "Update")]["fieldsV1"]["f:metadata"] == {"f:labels": {}}  # still owns the map

    # A status write is its own entry, for the status subresource.
    current = r.json()
    current["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    r = await client.put(f"{PODS}/tracked/status", json=current, params={"fieldManager": "kube-scheduler"})
    status_entry = next(e for e in r.json()["metadata"]["managedFields"] if e["manager"] == "kube-scheduler")
    assert status_entry["subresource"] == "status" and status_entry["operation"] == "Update"
    assert list(status_entry["fieldsV1"]["f:status"]["f:conditions"]) == [".", 'k:{"type":"PodScheduled"}']

    # A PUT without managedFields keeps them; ``[{}]`` clears them before the write is tracked.
    current = r.json()
    del current["metadata"]["managedFields"]
    current["metadata"]["annotations"] = {"note": "1"}
    r = await client.put(f"{PODS}/tracked", json=current, params={"fieldManager": "kubectl-edit"})
    assert {m for m, _ in entries(r.json())} == {"kubectl", "kubectl-label", "kube-scheduler", "kubectl-edit"}
    current = r.json()
    current["metadata"]["managedFields"] = [{}]
    current["metadata"]["annotations"] = {"note": "2"}
    r = await client.put(f"{PODS}/tracked", json=current, params={"fieldManager": "kubectl-edit"})
    assert [(e["manager"], e["fieldsV1"]) for e in r.json()["metadata"]["managedFields"]] == [
        ("kubectl-edit", {"f:metadata": {"f:annotations": {"f:note": {}}}})
    ]


async def test_a_binding_records_no_manager(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    before = (await client.post(PODS, json=pod("bindme"))).json()["metadata"]["managedFields"]
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bindme"}, "target": {"name": "n1"}}
    assert (await client.post(f"{PODS}/bindme/binding", json=binding)).status_code == 201
    after = (await client.get(f"{PODS}/bindme")).json()
    assert after["spec"]["nodeName"] == "n1"
    assert after["metadata"]["managedFields"] == before
