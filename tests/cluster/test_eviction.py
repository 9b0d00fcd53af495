"""The ``pods/eviction`` subresource in process (controllers off: the PDB status each test needs is written through
its ``status`` subresource, as the disruption controller would): every branch of kube-apiserver's eviction checks,
JSON and protobuf bodies, and protobuf DeleteOptions on DELETE."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fastapi import FastAPI

from kss_sim.cluster.api.protobuf import MAGIC, PROTOBUF
from kss_sim.cluster.storage.store import ClusterStore
from tests.cluster.factories import pod

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


async def running_pod(
    client: httpx.AsyncClient, name: str, *, ready: bool = True, phase: str = "Running", grace: int = 0
) -> None:
    """A pod on n1 with that status; no grace period by default, so an evicted one is gone at once."""
    body = pod(name, labels={"app": "web"}, node_name="n1", terminationGracePeriodSeconds=grace)
    created = await client.post(PODS, json=body)
    assert created.status_code == 201, created.text
    status = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    r = await client.patch(
        f"{PODS}/{name}/status", json={"status": status}, headers={"content-type": "application/merge-patch+json"}
    )
    assert r.status_code == 200, r.text


async def budget(
    client: httpx.AsyncClient,
    name: str = "web",
    *,
    allowed: int,
    current: int,
    desired: int,
    observed: int | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A PDB over app=web with the status the disruption controller would have written."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": desired, "selector": {"matchLabels": {"app": "web"}}, **spec},
    }
    created = await client.post(PDBS, json=body)
    assert created.status_code == 201, created.text
    pdb: dict[str, Any] = created.json()
    pdb["status"] = {
        "observedGeneration": pdb["metadata"]["generation"] if observed is None else observed,
        "disruptionsAllowed": allowed,
        "currentHealthy": current,
        "desiredHealthy": desired,
        "expectedPods": current,
    }
    r = await client.put(f"{PDBS}/{name}/status", json=pdb)
    assert r.status_code == 200, r.text
    written: dict[str, Any] = r.json()
    return written


def eviction(name: str, **delete_options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


async def evict(client: httpx.AsyncClient, name: str, body: Any = None, **params: str) -> httpx.Response:
    return await client.post(f"{PODS}/{name}/eviction", json=eviction(name) if body is None else body, params=params)


async def exists(client: httpx.AsyncClient, name: str) -> bool:
    return (await client.get(f"{PODS}/{name}")).status_code == 200


async def test_discovery_lists_pods_eviction_as_policy_v1(client: httpx.AsyncClient) -> None:
    core = {r["name"]: r for r in (await client.get("/api/v1")).json()["resources"]}
    assert core["pods/eviction"] == {
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
        "verbs": ["create"],
    }


async def test_no_budget_evicts_with_the_disruption_target_condition_first(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    await running_pod(client, "p")
    store: ClusterStore = app.state.store
    since = store.resource_version
    r = await evict(client, "p")
    assert r.status_code == 201, r.text
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    assert not await exists(client, "p")
    changes = [(c.type, c.obj) for c in store.events_since(since) if c.kind == "Pod"]
    assert [t for t, _ in changes] == ["MODIFIED", "DELETED"]
    (condition,) = [c for c in changes[0][1]["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )


async def test_a_budget_with_a_disruption_left_takes_it_and_records_the_pod(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    await budget(client, allowed=1, current=3, desired=2)
    r = await evict(client, "p")
    assert r.status_code == 201, r.text
    assert not await exists(client, "p")
    status = (await client.get(f"{PDBS}/web")).json()["status"]
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["p"]
    (condition,) = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed",
        "False",
        "InsufficientPods",
    )


async def test_evictions_in_flight_together_take_the_budget_once(client: httpx.AsyncClient) -> None:
    for name in ("a", "b", "c"):
        await running_pod(client, name)
    await budget(client, allowed=1, current=3, desired=2)
    answers = await asyncio.gather(*(evict(client, name) for name in ("a", "b", "c")))
    assert sorted(r.status_code for r in answers) == [201, 429, 429]
    status = (await client.get(f"{PDBS}/web")).json()["status"]
    assert status["disruptionsAllowed"] == 0 and len(status["disruptedPods"]) == 1


async def test_a_budget_at_zero_is_429_and_changes_nothing(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    before = await budget(client, allowed=0, current=2, desired=2)
    r = await evict(client, "p")
    assert r.status_code == 429, r.text
    assert "retry-after" not in r.headers  # kubectl drain retries after its own 5 s
    assert r.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": VIOLATION,
        "reason": "TooManyRequests",
        "code": 429,
        "details": {
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget web needs 2 healthy pods and has 2 currently",
                }
            ]
        },
    }
    assert await exists(client, "p")
    assert (await client.get(f"{PDBS}/web")).json() == before


async def test_a_budget_its_controller_has_not_seen_is_429_with_retry_after(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    await budget(client, allowed=5, current=3, desired=2, observed=0)
    r = await evict(client, "p")
    assert r.status_code == 429 and r.headers["retry-after"] == "10"
    details = r.json()["details"]
    assert details["retryAfterSeconds"] == 10
    assert details["causes"][0]["message"] == "The disruption budget web is still being processed by the server."
    assert await exists(client, "p")


async def test_a_negative_budget_is_403(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    await budget(client, allowed=-1, current=1, desired=2)
    r = await evict(client, "p")
    assert r.status_code == 403, r.text
    assert r.json()["message"].endswith("pdb disruptions allowed is negative")


async def test_a_pod_that_is_not_ready_bypasses_a_budget_that_has_its_healthy_pods(
    client: httpx.AsyncClient,
) -> None:
    await running_pod(client, "sick", ready=False)
    before = await budget(client, allowed=0, current=2, desired=2)
    r = await evict(client, "sick")
    assert r.status_code == 201, r.text
    assert not await exists(client, "sick")
    assert (await client.get(f"{PDBS}/web")).json() == before  # no disruption taken for it


async def test_a_pod_that_is_not_ready_under_a_short_budget_is_429_unless_always_allow(
    client: httpx.AsyncClient,
) -> None:
    await running_pod(client, "sick", ready=False)
    await budget(client, allowed=0, current=1, desired=2)
    assert (await evict(client, "sick")).status_code == 429
    patch = {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}
    r = await client.patch(f"{PDBS}/web", json=patch, headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    pdb = r.json()
    pdb["status"]["observedGeneration"] = pdb["metadata"]["generation"]
    assert (await client.put(f"{PDBS}/web/status", json=pdb)).status_code == 200
    assert (await evict(client, "sick")).status_code == 201
    assert not await exists(client, "sick")


async def test_an_evicted_pod_ends_gracefully_with_the_evictions_grace_period_or_its_own(
    client: httpx.AsyncClient,
) -> None:
    await running_pod(client, "own", grace=30)
    await running_pod(client, "asked", grace=30)
    assert (await evict(client, "own")).status_code == 201
    assert (await evict(client, "asked", eviction("asked", gracePeriodSeconds=5))).status_code == 201
    for name, seconds in (("own", 30), ("asked", 5)):
        terminating = (await client.get(f"{PODS}/{name}")).json()
        assert terminating["metadata"]["deletionGracePeriodSeconds"] == seconds
        assert any(c["type"] == "DisruptionTarget" for c in terminating["status"]["conditions"])
    # Being deleted already: a second eviction changes nothing (kubectl drain's retry) and needs no budget.
    await budget(client, allowed=0, current=2, desired=2)
    assert (await evict(client, "own")).status_code == 201
    assert (await client.get(f"{PODS}/own")).json()["metadata"]["deletionGracePeriodSeconds"] == 30


async def test_pending_finished_and_terminating_pods_bypass_the_budget(client: httpx.AsyncClient) -> None:
    await running_pod(client, "pending", phase="Pending")
    await running_pod(client, "done", phase="Succeeded")
    await budget(client, allowed=0, current=2, desired=2)
    for name in ("pending", "done"):
        r = await evict(client, name)
        assert r.status_code == 201, r.text
        assert not await exists(client, name)
    # Terminating: a finalizer holds it after its DELETE; the eviction deletes it again (it stays, marked).
    await running_pod(client, "going")
    hold = {"metadata": {"finalizers": ["example.com/hold"]}}
    r = await client.patch(f"{PODS}/going", json=hold, headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert (await client.delete(f"{PODS}/going")).status_code == 200
    assert (await evict(client, "going")).status_code == 201
    assert (await client.get(f"{PODS}/going")).json()["metadata"]["deletionTimestamp"]


async def test_more_than_one_budget_is_500(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    await budget(client, "a", allowed=1, current=3, desired=2)
    await budget(client, "b", allowed=1, current=3, desired=2)
    r = await evict(client, "p")
    assert r.status_code == 500
    assert r.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        "code": 500,
    }
    assert await exists(client, "p")


async def test_an_empty_selector_covers_no_pod(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    created = await client.post(
        PDBS,
        json={"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "all"},
              "spec": {"minAvailable": 5, "selector": {}}},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    assert (await evict(client, "p")).status_code == 201


async def test_a_missing_pod_is_404(client: httpx.AsyncClient) -> None:
    r = await evict(client, "ghost")
    assert r.status_code == 404
    assert (r.json()["reason"], r.json()["message"]) == ("NotFound", 'pods "ghost" not found')


async def test_bad_bodies_are_400_and_change_nothing(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    not_json = await client.post(f"{PODS}/p/eviction", content=b"{nope", headers={"content-type": "application/json"})
    assert not_json.status_code == 400
    assert not_json.json()["message"].startswith("the object provided is unrecognized (must be of type Eviction)")
    other_name = await evict(client, "p", eviction("q"))
    assert other_name.status_code == 400
    assert other_name.json()["message"] == "name in URL does not match name in Eviction object"
    other_kind = await evict(client, "p", {**eviction("p"), "kind": "Pod"})
    assert other_kind.status_code == 400
    bad_policy = await evict(client, "p", eviction("p", propagationPolicy="Sometimes"))
    assert bad_policy.status_code == 422
    assert (await client.get(f"{PODS}/p/eviction")).status_code == 405
    assert await exists(client, "p")


async def test_dry_run_checks_and_writes_nothing(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    before = await budget(client, allowed=1, current=3, desired=2)
    r = await evict(client, "p", dryRun="All")
    assert r.status_code == 201, r.text
    assert await exists(client, "p")
    assert "conditions" in (await client.get(f"{PODS}/p")).json()["status"]
    assert all(c["type"] != "DisruptionTarget" for c in (await client.get(f"{PODS}/p")).json()["status"]["conditions"])
    assert (await client.get(f"{PDBS}/web")).json() == before


async def test_a_stale_resource_version_precondition_is_409(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    r = await evict(client, "p", eviction("p", preconditions={"resourceVersion": "1"}))
    assert r.status_code == 409, r.text
    assert await exists(client, "p")


# --- protobuf, as client-go sends it ---------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = b""
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def _field(number: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _unknown(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return MAGIC + _field(1, type_meta) + _field(2, raw)


async def test_protobuf_eviction_and_delete_options(client: httpx.AsyncClient) -> None:
    await running_pod(client, "p")
    await running_pod(client, "q")
    # Eviction{metadata{name: p, namespace: default}, deleteOptions{gracePeriodSeconds: 0, dryRun: []}}
    meta = _field(1, b"p") + _field(3, b"default")
    body = _unknown("policy/v1", "Eviction", _field(1, meta) + _field(2, _field(1, 0)))
    r = await client.post(f"{PODS}/p/eviction", content=body, headers={"content-type": PROTOBUF})
    assert r.status_code == 201, r.text
    assert not await exists(client, "p")
    # DeleteOptions{gracePeriodSeconds: 0, propagationPolicy: Background}, in the client's group version.
    options = _unknown("v1", "DeleteOptions", _field(1, 0) + _field(4, b"Background"))
    r = await client.request("DELETE", f"{PODS}/q", content=options, headers={"content-type": PROTOBUF})
    assert r.status_code == 200, r.text
    assert not await exists(client, "q")
    # A precondition it carries is honoured.
    await running_pod(client, "q")
    options = _unknown("v1", "DeleteOptions", _field(2, _field(1, b"not-the-uid")))
    r = await client.request("DELETE", f"{PODS}/q", content=options, headers={"content-type": PROTOBUF})
    assert r.status_code == 409, r.text
