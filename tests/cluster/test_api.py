"""The Kubernetes HTTP API in process: discovery, CRUD, patch, selectors, paging, tables and Status errors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.cluster.factories import node, pod

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def test_discovery_lists_kinds_with_short_names_and_scope(client: httpx.AsyncClient) -> None:
    assert (await client.get("/version")).json()["major"] == "1"
    assert (await client.get("/api")).json()["versions"] == ["v1"]
    core = {r["name"]: r for r in (await client.get("/api/v1")).json()["resources"]}
    assert core["pods"]["shortNames"] == ["po"] and core["pods"]["namespaced"] is True
    assert core["nodes"]["shortNames"] == ["no"] and core["nodes"]["namespaced"] is False
    assert core["pods/binding"]["verbs"] == ["create"]
    assert "watch" in core["events"]["verbs"]
    groups = {g["name"] for g in (await client.get("/apis")).json()["groups"]}
    assert groups == {
        "storage.k8s.io",
        "scheduling.k8s.io",
        "policy",
        "scheduling.x-k8s.io",
        "apps",
        "autoscaling",
        "batch",
        "coordination.k8s.io",
        "resource.k8s.io",
        "discovery.k8s.io",
        "rbac.authorization.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "apiextensions.k8s.io",
        "events.k8s.io",
    }
    short = {
        r["name"]: r.get("shortNames")
        for gv in ("storage.k8s.io/v1", "scheduling.k8s.io/v1", "policy/v1")
        for r in (await client.get(f"/apis/{gv}")).json()["resources"]
    }
    assert (short["storageclasses"], short["priorityclasses"], short["poddisruptionbudgets"]) == (
        ["sc"],
        ["pc"],
        ["pdb"],
    )


async def test_create_get_list_update_delete_round_trip(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/namespaces/default/pods", json=pod("rt", labels={"app": "a"}))
    assert r.status_code == 201, r.text
    created = r.json()
    got = (await client.get("/api/v1/namespaces/default/pods/rt")).json()
    assert got == created
    listing = (await client.get("/api/v1/pods")).json()
    assert listing["kind"] == "PodList" and [p["metadata"]["name"] for p in listing["items"]] == ["rt"]
    got["metadata"]["labels"]["app"] = "b"
    r = await client.put("/api/v1/namespaces/default/pods/rt", json=got)
    assert r.status_code == 200 and r.json()["metadata"]["labels"] == {"app": "b"}
    stale = await client.put("/api/v1/namespaces/default/pods/rt", json=created)
    assert stale.status_code == 409 and stale.json()["reason"] == "Conflict"
    r = await client.delete("/api/v1/namespaces/default/pods/rt")
    assert r.status_code == 200
    missing = await client.get("/api/v1/namespaces/default/pods/rt")
    assert missing.status_code == 404
    assert missing.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "rt" not found',
        "reason": "NotFound",
        "details": {"name": "rt", "kind": "pods"},
        "code": 404,
    }


async def test_generate_name(client: httpx.AsyncClient) -> None:
    body = pod("x")
    body["metadata"] = {"generateName": "web-"}
    r = await client.post("/api/v1/namespaces/default/pods", json=body)
    assert (
        r.status_code == 201
        and r.json()["metadata"]["name"].startswith("web-")
        and len(r.json()["metadata"]["name"]) == 9
    )


async def test_patch_formats(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/nodes", json=node("pn", labels={"a": "1"}))
    merge = await client.patch(
        "/api/v1/nodes/pn",
        content=json.dumps({"metadata": {"labels": {"b": "2", "a": None}}}),
        headers={"content-type": "application/merge-patch+json"},
    )
    assert merge.json()["metadata"]["labels"] == {"b": "2"}
    jp = await client.patch(
        "/api/v1/nodes/pn",
        content=json.dumps([{"op": "add", "path": "/spec/taints", "value": [{"key": "k", "effect": "NoSchedule"}]}]),
        headers={"content-type": "application/json-patch+json"},
    )
    assert jp.json()["spec"]["taints"] == [{"key": "k", "effect": "NoSchedule"}]
    smp = await client.patch(
        "/api/v1/nodes/pn",
        content=json.dumps(
            {"spec": {"unschedulable": True}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
        ),
        headers={"content-type": "application/strategic-merge-patch+json"},
    )
    assert smp.json()["spec"]["unschedulable"] is True
    assert smp.json()["status"]["conditions"][0]["status"] == "True"  # status changes only through /status
    status = await client.patch(
        "/api/v1/nodes/pn/status",
        content=json.dumps({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        headers={"content-type": "application/strategic-merge-patch+json"},
    )
    cond = status.json()["status"]["conditions"]
    assert len(cond) == 1 and cond[0]["status"] == "False" and cond[0]["reason"] == "KubeletReady"
    failed = await client.patch(
        "/api/v1/nodes/pn",
        content=json.dumps([{"op": "test", "path": "/spec/unschedulable", "value": False}]),
        headers={"content-type": "application/json-patch+json"},
    )
    assert failed.status_code == 422


async def test_binding_subresource(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/namespaces/default/pods", json=pod("tobind"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "tobind"},
        "target": {"kind": "Node", "name": "n1"},
    }
    nominated = {"status": {"nominatedNodeName": "n2"}}
    patched = await client.patch(
        "/api/v1/namespaces/default/pods/tobind/status",
        json=nominated,
        headers={"content-type": "application/merge-patch+json"},
    )
    assert patched.json()["status"]["nominatedNodeName"] == "n2"
    r = await client.post("/api/v1/namespaces/default/pods/tobind/binding", json=binding)
    assert r.status_code == 201 and r.json()["status"] == "Success"
    bound = (await client.get("/api/v1/namespaces/default/pods/tobind")).json()
    assert bound["spec"]["nodeName"] == "n1"
    assert "nominatedNodeName" not in bound["status"]  # ClearingNominatedNodeNameAfterBinding, on in v1.35
    again = await client.post("/api/v1/namespaces/default/pods/tobind/binding", json=binding)
    assert again.status_code == 409 and again.json()["reason"] == "Conflict"


async def test_label_and_field_selectors(client: httpx.AsyncClient) -> None:
    for name, labels, node_name in (
        ("s1", {"tier": "web", "env": "prod"}, "n1"),
        ("s2", {"tier": "db"}, None),
        ("s3", {"tier": "web"}, None),
    ):
        await client.post("/api/v1/namespaces/sel/pods", json=pod(name, labels=labels, node_name=node_name))

    async def names(**params: str) -> list[str]:
        r = await client.get("/api/v1/namespaces/sel/pods", params=params)
        assert r.status_code == 200, r.text
        return [p["metadata"]["name"] for p in r.json()["items"]]

    assert await names(labelSelector="tier=web") == ["s1", "s3"]
    assert await names(labelSelector="tier in (db,cache)") == ["s2"]
    assert await names(labelSelector="tier,!env") == ["s2", "s3"]
    assert await names(labelSelector="env notin (prod)") == ["s2", "s3"]
    assert await names(fieldSelector="spec.nodeName=") == ["s2", "s3"]
    assert await names(fieldSelector="spec.nodeName=n1,status.phase=Pending") == ["s1"]
    assert await names(fieldSelector="metadata.name!=s1") == ["s2", "s3"]
    bad = await client.get("/api/v1/pods", params={"fieldSelector": "spec.bogus=1"})
    assert bad.status_code == 400 and bad.json()["reason"] == "BadRequest"


async def test_limit_and_continue(client: httpx.AsyncClient) -> None:
    for i in range(5):
        await client.post("/api/v1/nodes", json=node(f"page-{i}"))
    first = (await client.get("/api/v1/nodes", params={"limit": 2})).json()
    assert [n["metadata"]["name"] for n in first["items"]] == ["page-0", "page-1"]
    assert first["metadata"]["remainingItemCount"] == 3
    second = (await client.get("/api/v1/nodes", params={"limit": 2, "continue": first["metadata"]["continue"]})).json()
    assert [n["metadata"]["name"] for n in second["items"]] == ["page-2", "page-3"]
    last = (await client.get("/api/v1/nodes", params={"limit": 2, "continue": second["metadata"]["continue"]})).json()
    assert [n["metadata"]["name"] for n in last["items"]] == ["page-4"] and "continue" not in last["metadata"]


async def test_table_output_for_pods_and_nodes(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/nodes", json=node("tn", labels={"node-role.kubernetes.io/worker": ""}))
    await client.patch(
        "/api/v1/nodes/tn",
        content=b'{"spec":{"unschedulable":true}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    await client.post("/api/v1/namespaces/default/pods", json=pod("tp", node_name="tn"))
    pods = (await client.get("/api/v1/namespaces/default/pods", headers={"accept": TABLE})).json()
    assert pods["kind"] == "Table"
    assert [c["name"] for c in pods["columnDefinitions"]] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    assert [c["priority"] for c in pods["columnDefinitions"]][4:6] == [0, 1]
    assert pods["rows"][0]["cells"][:4] == ["tp", "0/1", "Pending", "0"]
    assert pods["rows"][0]["cells"][6] == "tn"
    assert pods["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    nodes = (await client.get("/api/v1/nodes/tn", headers={"accept": TABLE})).json()
    assert [c["name"] for c in nodes["columnDefinitions"]][:5] == ["Name", "Status", "Roles", "Age", "Version"]
    assert nodes["rows"][0]["cells"][1:3] == ["Ready,SchedulingDisabled", "worker"]
    generic = (await client.get("/apis/scheduling.k8s.io/v1/priorityclasses", headers={"accept": TABLE})).json()
    assert generic["rows"][0]["cells"][0] == "system-cluster-critical"


async def test_deleting_a_node_leaves_its_pods_to_the_pod_gc(client: httpx.AsyncClient) -> None:
    """As kube-apiserver: the pods stay bound to the missing node until the pod GC's quarantine ends
    (tests/controllers/test_pod_gc.py)."""
    await client.post("/api/v1/nodes", json=node("doomed"))
    await client.post("/api/v1/namespaces/default/pods", json=pod("on-it", node_name="doomed"))
    await client.post("/api/v1/namespaces/default/pods", json=pod("elsewhere"))
    assert (await client.delete("/api/v1/nodes/doomed")).status_code == 200
    assert (await client.get("/api/v1/nodes/doomed")).status_code == 404
    names = [p["metadata"]["name"] for p in (await client.get("/api/v1/pods")).json()["items"]]
    assert names == ["elsewhere", "on-it"]


async def test_delete_collection(client: httpx.AsyncClient) -> None:
    for i in range(3):
        await client.post("/api/v1/namespaces/dc/pods", json=pod(f"d{i}", labels={"batch": "x" if i < 2 else "y"}))
    r = await client.delete("/api/v1/namespaces/dc/pods", params={"labelSelector": "batch=x"})
    assert r.status_code == 200 and len(r.json()["items"]) == 2
    assert [p["metadata"]["name"] for p in (await client.get("/api/v1/namespaces/dc/pods")).json()["items"]] == ["d2"]


async def test_watch_replays_from_a_resource_version_and_expires(client: httpx.AsyncClient) -> None:
    start = (await client.get("/api/v1/pods")).json()["metadata"]["resourceVersion"]
    await client.post("/api/v1/namespaces/default/pods", json=pod("w1"))
    await client.delete("/api/v1/namespaces/default/pods/w1")
    r = await client.get("/api/v1/pods", params={"watch": "true", "resourceVersion": start, "timeoutSeconds": "1"})
    events = [json.loads(line) for line in r.text.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w1"), ("DELETED", "w1")]
    for i in range(80):  # the app fixture keeps a 50-event window
        await client.post("/api/v1/nodes", json=node(f"churn-{i}"))
    r = await client.get("/api/v1/pods", params={"watch": "true", "resourceVersion": start, "timeoutSeconds": "1"})
    [error] = [json.loads(line) for line in r.text.splitlines()]
    assert error["type"] == "ERROR" and error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"


async def test_oversized_body_is_413(client: httpx.AsyncClient) -> None:
    body = pod("big")
    body["metadata"]["annotations"] = {"blob": "x" * (3 * 1024 * 1024 + 10)}
    r = await client.post("/api/v1/namespaces/default/pods", json=body)
    assert r.status_code == 413 and r.json()["reason"] == "RequestEntityTooLarge"


def _pod_with(**changes: Any) -> dict[str, Any]:
    body = pod("bad")
    for path, value in changes.items():
        target = body
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
        if isinstance(target, list):
            target[int(keys[-1])] = value
        else:
            target[keys[-1]] = value
    return body


BAD_INPUT: list[tuple[str, str, str | bytes | dict[str, Any] | list[Any], int, str, str | None]] = [
    # (case, url, body, code, reason, field of the first cause)
    ("not json", "/api/v1/namespaces/default/pods", b"{not json", 400, "BadRequest", None),
    ("empty body", "/api/v1/namespaces/default/pods", b"", 400, "BadRequest", None),
    ("json array", "/api/v1/namespaces/default/pods", [1, 2], 400, "BadRequest", None),
    (
        "wrong kind",
        "/api/v1/namespaces/default/pods",
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x"}},
        400,
        "BadRequest",
        None,
    ),
    ("namespace mismatch", "/api/v1/namespaces/default/pods", pod("x", namespace="other"), 400, "BadRequest", None),
    (
        "labels not strings",
        "/api/v1/namespaces/default/pods",
        _pod_with(metadata={"name": "x", "labels": {"a": 1}}),
        400,
        "BadRequest",
        None,
    ),
    (
        "quantity 1.5.3Gi",
        "/api/v1/namespaces/default/pods",
        _pod_with(**{"spec__containers__0__resources": {"requests": {"memory": "1.5.3Gi"}}}),
        400,
        "BadRequest",
        None,
    ),
    ("node capacity garbage", "/api/v1/nodes", node("q", cpu="lots"), 400, "BadRequest", None),
    ("bad name", "/api/v1/namespaces/default/pods", pod("Not_A_Name"), 422, "Invalid", "metadata.name"),
    ("no name", "/api/v1/namespaces/default/pods", _pod_with(metadata={}), 422, "Invalid", "metadata.name"),
    (
        "no containers",
        "/api/v1/namespaces/default/pods",
        _pod_with(spec__containers=[]),
        422,
        "Invalid",
        "spec.containers",
    ),
    (
        "no image",
        "/api/v1/namespaces/default/pods",
        _pod_with(spec__containers=[{"name": "c"}]),
        422,
        "Invalid",
        "spec.containers[0].image",
    ),
    (
        "negative cpu",
        "/api/v1/namespaces/default/pods",
        _pod_with(**{"spec__containers__0__resources": {"requests": {"cpu": "-1"}}}),
        422,
        "Invalid",
        "spec.containers[0].resources.requests[cpu]",
    ),
    (
        "request above limit",
        "/api/v1/namespaces/default/pods",
        _pod_with(**{"spec__containers__0__resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}),
        422,
        "Invalid",
        "spec.containers[0].resources.requests",
    ),
    (
        "restart policy",
        "/api/v1/namespaces/default/pods",
        _pod_with(spec__restartPolicy="Sometimes"),
        422,
        "Invalid",
        "spec.restartPolicy",
    ),
    (
        "bad selector operator",
        "/api/v1/namespaces/default/pods",
        _pod_with(
            spec__affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}
                    ]
                }
            }
        ),
        422,
        "Invalid",
        None,
    ),
    (
        "bad label value",
        "/api/v1/namespaces/default/pods",
        _pod_with(metadata={"name": "x", "labels": {"a": "no spaces allowed"}}),
        422,
        "Invalid",
        "metadata.labels",
    ),
    (
        "toleration effect",
        "/api/v1/namespaces/default/pods",
        _pod_with(spec__tolerations=[{"key": "k", "operator": "Exists", "effect": "Sometimes"}]),
        422,
        "Invalid",
        "spec.tolerations[0].effect",
    ),
    (
        "spread skew",
        "/api/v1/namespaces/default/pods",
        _pod_with(
            spec__topologySpreadConstraints=[{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]
        ),
        422,
        "Invalid",
        "spec.topologySpreadConstraints[0].maxSkew",
    ),
    (
        "taint without effect",
        "/api/v1/nodes",
        {"metadata": {"name": "t"}, "spec": {"taints": [{"key": "k"}]}},
        422,
        "Invalid",
        "spec.taints[0].effect",
    ),
    (
        "declared features unsorted",
        "/api/v1/nodes",
        {"metadata": {"name": "t"}, "status": {"declaredFeatures": ["UserNamespacesHostNetworkSupport", "Alpha"]}},
        422,
        "Invalid",
        "status.declaredFeatures[1]",
    ),
    (
        "declared feature repeated",
        "/api/v1/nodes",
        {"metadata": {"name": "t"}, "status": {"declaredFeatures": ["Alpha", "Alpha"]}},
        422,
        "Invalid",
        "status.declaredFeatures[1]",
    ),
    (
        "declared feature in lower case",
        "/api/v1/nodes",
        {"metadata": {"name": "t"}, "status": {"declaredFeatures": ["Alpha/sub", "alpha"]}},
        422,
        "Invalid",
        "status.declaredFeatures[1]",
    ),
    (
        "pv without capacity",
        "/api/v1/persistentvolumes",
        {"metadata": {"name": "v"}, "spec": {"accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/"}}},
        422,
        "Invalid",
        "spec.capacity",
    ),
    (
        "pvc without storage",
        "/api/v1/namespaces/default/persistentvolumeclaims",
        {"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"]}},
        422,
        "Invalid",
        "spec.resources[storage]",
    ),
    (
        "storage class mode",
        "/apis/storage.k8s.io/v1/storageclasses",
        {"metadata": {"name": "s"}, "provisioner": "p", "volumeBindingMode": "Later"},
        422,
        "Invalid",
        "volumeBindingMode",
    ),
    (
        "priority too high",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {"metadata": {"name": "huge"}, "value": 2000000000},
        422,
        "Invalid",
        "value",
    ),
    (
        "pdb both bounds",
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        {"metadata": {"name": "b"}, "spec": {"minAvailable": 1, "maxUnavailable": 1}},
        422,
        "Invalid",
        "spec",
    ),
    (
        "unknown priority class",
        "/api/v1/namespaces/default/pods",
        _pod_with(spec__priorityClassName="nope"),
        403,
        "Forbidden",
        None,
    ),
    ("already exists", "/api/v1/namespaces/default/pods", pod("exists"), 409, "AlreadyExists", None),
    ("unknown kind", "/api/v1/namespaces/default/widgets", pod("x"), 404, "NotFound", None),
    (
        "unknown group",
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        {"metadata": {"name": "d"}},
        404,
        "NotFound",
        None,
    ),
]


@pytest.mark.parametrize(("case", "url", "body", "code", "reason", "field"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
async def test_bad_input_gets_a_status_and_changes_nothing(
    client: httpx.AsyncClient, case: str, url: str, body: Any, code: int, reason: str, field: str | None
) -> None:
    await client.post("/api/v1/namespaces/default/pods", json=pod("exists"))
    before = await client.get("/api/v1/namespaces")
    rv_before = before.json()["metadata"]["resourceVersion"]
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = await client.post(url, content=content, headers={"content-type": "application/json"})
    status = r.json()
    assert (r.status_code, status["kind"], status["status"], status["reason"], status["code"]) == (
        code,
        "Status",
        "Failure",
        reason,
        code,
    ), status
    if field is not None:
        assert status["details"]["causes"][0]["field"] == field, status
    after = (await client.get("/api/v1/namespaces")).json()
    assert after["metadata"]["resourceVersion"] == rv_before
    assert after["items"] == before.json()["items"]


async def test_bound_pod_node_name_is_immutable_on_update(client: httpx.AsyncClient) -> None:
    created = (await client.post("/api/v1/namespaces/default/pods", json=pod("imm", node_name="n1"))).json()
    created["spec"]["nodeName"] = "n2"
    r = await client.put("/api/v1/namespaces/default/pods/imm", json=created)
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "spec.nodeName"
    assert (await client.get("/api/v1/namespaces/default/pods/imm")).json()["spec"]["nodeName"] == "n1"


async def test_events_field_selectors_for_describe(client: httpx.AsyncClient) -> None:
    created = (await client.post("/api/v1/namespaces/default/pods", json=pod("described"))).json()
    store = client._transport.app.state.store  # type: ignore[attr-defined]
    store.create_event(created, "Scheduled", "Successfully assigned default/described to n1")
    store.create_event({"kind": "Pod", "metadata": {"name": "other", "namespace": "default"}}, "X", "y")
    uid = created["metadata"]["uid"]
    selector = ",".join(
        [
            "involvedObject.name=described",
            "involvedObject.namespace=default",
            f"involvedObject.uid={uid}",
            "involvedObject.kind=Pod",
        ]
    )
    r = await client.get("/api/v1/namespaces/default/events", params={"fieldSelector": selector})
    assert [e["reason"] for e in r.json()["items"]] == ["Scheduled"]
