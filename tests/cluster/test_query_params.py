"""Query parameters are decoded and validated as kube-apiserver does (400 for what Go cannot parse, 422 for options
that contradict each other), and the namespaces collection cannot be deleted (405)."""

from __future__ import annotations

import httpx
import pytest

from tests.cluster.factories import pod

PODS = "/api/v1/namespaces/default/pods"
LIST_INVALID = 'ListOptions.meta.k8s.io "" is invalid: '
NEEDS_RV = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        (
            "resourceVersion=abc",
            400,
            'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": '
            "invalid syntax",
        ),
        (
            "resourceVersion=-1",
            400,
            'invalid resource version: resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": '
            "invalid syntax",
        ),
        (
            "resourceVersionMatch=Bogus",
            422,
            LIST_INVALID + f"[{NEEDS_RV}, resourceVersionMatch: Unsupported value: "
            '"Bogus": supported values: "Exact", "NotOlderThan", ""]',
        ),
        ("resourceVersionMatch=NotOlderThan", 422, LIST_INVALID + NEEDS_RV),
        ("resourceVersionMatch=Exact", 422, LIST_INVALID + NEEDS_RV),
        (
            "resourceVersionMatch=Exact&resourceVersion=0",
            422,
            LIST_INVALID + 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
            'resourceVersion "0"',
        ),
        ("limit=x", 400, 'strconv.ParseInt: parsing "x": invalid syntax'),
        (
            "timeoutSeconds=99999999999999999999",
            400,
            'strconv.ParseInt: parsing "99999999999999999999": value out of range',
        ),
        (
            "watch=1&timeoutSeconds=99999999999999999999",
            400,
            'strconv.ParseInt: parsing "99999999999999999999": value out of range',
        ),
        (
            "watch=1&resourceVersion=-1",
            400,
            'invalid resource version: resourceVersion: Invalid value: "-1": '
            'strconv.ParseUint: parsing "-1": invalid syntax',
        ),
        (
            "watch=1&resourceVersionMatch=Bogus",
            422,
            LIST_INVALID + "[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
            'sendInitialEvents is provided, resourceVersionMatch: Unsupported value: "Bogus": supported values: '
            '"NotOlderThan"]',
        ),
    ],
)
async def test_list_and_watch_options_are_refused_as_kube_apiserver_refuses_them(
    client: httpx.AsyncClient, query: str, code: int, message: str
) -> None:
    r = await client.get(f"{PODS}?{query}")
    assert r.status_code == code, r.text
    assert r.json()["kind"] == "Status" and r.json()["message"] == message


async def test_what_kube_apiserver_accepts_is_accepted(client: httpx.AsyncClient) -> None:
    assert (await client.post(PODS, json=pod("p"))).status_code == 201
    rv = (await client.get(PODS)).json()["metadata"]["resourceVersion"]
    # A limit below 1 is no limit; options a list does not take (dryRun, fieldValidation) are ignored.
    for query in ("limit=-1", "limit=0", "dryRun=Bogus", "fieldValidation=Bogus", "allowWatchBookmarks=maybe"):
        r = await client.get(f"{PODS}?{query}")
        assert r.status_code == 200 and [p["metadata"]["name"] for p in r.json()["items"]] == ["p"], query
    r = await client.get(f"{PODS}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan")
    assert r.status_code == 200, r.text
    # Any flag value but 0 and false is true, as apimachinery converts it: this is a watch (ended by its timeout).
    r = await client.get(f"{PODS}?watch=maybe&timeoutSeconds=1")
    assert r.status_code == 200 and '"type":"ADDED"' in r.text


@pytest.mark.parametrize(
    ("method", "query", "message"),
    [
        (
            "POST",
            "dryRun=Bogus",
            'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Bogus"}: '
            'supported values: "All"',
        ),
        (
            "POST",
            "fieldValidation=Bogus",
            'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": '
            'supported values: "", "Ignore", "Strict", "Warn"',
        ),
        (
            "PUT",
            "dryRun=Bogus&fieldValidation=Bogus",
            'UpdateOptions.meta.k8s.io "" is invalid: [dryRun: Unsupported value: []string{"Bogus"}: supported '
            'values: "All", fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", '
            '"Warn"]',
        ),
        (
            "DELETE",
            "dryRun=Bogus",
            'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Bogus"}: '
            'supported values: "All"',
        ),
    ],
)
async def test_write_options_are_refused_and_nothing_is_written(
    client: httpx.AsyncClient, method: str, query: str, message: str
) -> None:
    assert (await client.post(PODS, json=pod("p"))).status_code == 201
    before = (await client.get(f"{PODS}/p")).json()
    url = f"{PODS}?{query}" if method == "POST" else f"{PODS}/p?{query}"
    body = pod("q") if method == "POST" else before
    r = await client.request(method, url, json=body if method != "DELETE" else None)
    assert r.status_code == 422, r.text
    assert r.json()["reason"] == "Invalid" and r.json()["message"] == message
    assert (await client.get(f"{PODS}/p")).json() == before
    assert (await client.get(f"{PODS}/q")).status_code == 404


async def test_the_namespaces_collection_cannot_be_deleted(client: httpx.AsyncClient) -> None:
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
    before = {n["metadata"]["name"] for n in (await client.get("/api/v1/namespaces")).json()["items"]}
    r = await client.delete("/api/v1/namespaces")
    assert r.status_code == 405
    assert r.json()["reason"] == "MethodNotAllowed"
    assert r.json()["message"] == "the server does not allow this method on the requested resource (deletecollection)"
    assert {n["metadata"]["name"] for n in (await client.get("/api/v1/namespaces")).json()["items"]} == before
    core = {x["name"]: x for x in (await client.get("/api/v1")).json()["resources"]}
    assert "deletecollection" not in core["namespaces"]["verbs"]
    assert "deletecollection" in core["pods"]["verbs"]
