"""NamespaceLifecycle on the subresource creates, over HTTP: a ``pods/binding`` or ``pods/eviction`` POST in a
namespace being deleted is refused with kube-apiserver's 403 (its ``NamespaceTerminating`` cause, which kubectl drain
looks for), and one in a namespace that does not exist is the namespace's 404, none made on demand; nothing about
the pod changes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

POD = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": "pause"}]}}


def binding(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": "n1"}}


def eviction(name: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}


async def make_pod(client: httpx.AsyncClient, namespace: str, name: str) -> None:
    body = {**POD, "metadata": {"name": name}}
    assert (await client.post(f"/api/v1/namespaces/{namespace}/pods", json=body)).status_code == 201


@pytest.fixture
async def closing(client: httpx.AsyncClient) -> str:
    """A namespace being deleted (the namespace controller is off, so it stays Terminating) with pods ``idle`` (not
    bound) and ``busy`` (bound to n1)."""
    await client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    await client.post(
        "/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "closing"}}
    )
    await make_pod(client, "closing", "idle")
    await make_pod(client, "closing", "busy")
    bound = await client.post("/api/v1/namespaces/closing/pods/busy/binding", json=binding("busy"))
    assert bound.status_code == 201
    assert (await client.delete("/api/v1/namespaces/closing")).status_code == 200
    return "closing"


@pytest.mark.parametrize(("pod", "subresource", "body"), [("idle", "binding", binding), ("busy", "eviction", eviction)])
async def test_a_subresource_create_in_a_terminating_namespace_is_forbidden(
    client: httpx.AsyncClient, closing: str, pod: str, subresource: str, body: Any
) -> None:
    before = (await client.get(f"/api/v1/namespaces/{closing}/pods/{pod}")).json()
    answer = await client.post(f"/api/v1/namespaces/{closing}/pods/{pod}/{subresource}", json=body(pod))
    assert answer.status_code == 403
    assert answer.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "{pod}" is forbidden: unable to create new content in namespace closing because it is '
        "being terminated",
        "reason": "Forbidden",
        "details": {
            "name": pod,
            "kind": "pods",
            "causes": [
                {
                    "reason": "NamespaceTerminating",
                    "message": "namespace closing is being terminated",
                    "field": "metadata.namespace",
                }
            ],
        },
        "code": 403,
    }
    after = (await client.get(f"/api/v1/namespaces/{closing}/pods/{pod}")).json()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.parametrize(("subresource", "body"), [("binding", binding), ("eviction", eviction)])
async def test_a_subresource_create_in_a_missing_namespace_is_the_namespaces_not_found(
    client: httpx.AsyncClient, subresource: str, body: Any
) -> None:
    answer = await client.post(f"/api/v1/namespaces/ghost/pods/p/{subresource}", json=body("p"))
    assert answer.status_code == 404
    assert answer.json()["message"] == 'namespaces "ghost" not found'
    assert answer.json()["details"] == {"name": "ghost", "kind": "namespaces"}
    assert (await client.get("/api/v1/namespaces/ghost")).status_code == 404  # none made on demand


async def test_an_active_namespace_binds_and_evicts_as_before(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    await make_pod(client, "default", "p")
    assert (await client.post("/api/v1/namespaces/default/pods/p/binding", json=binding("p"))).status_code == 201
    assert (await client.post("/api/v1/namespaces/default/pods/p/eviction", json=eviction("p"))).status_code == 201
