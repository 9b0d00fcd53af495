"""TokenReview, SubjectAccessReview and SelfSubjectAccessReview: delegated authentication and authorization (what
kube-scheduler's own HTTPS endpoint and ``kubectl auth can-i`` ask) answered, never stored."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from kss_sim.cluster.api import protobuf, protobuf_codec
from kss_sim.cluster.api.protobuf import PROTOBUF
from tests.conftest import API_TOKEN, KubectlRunner, asgi_client

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def _token_review(token: str) -> dict[str, object]:
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}


async def test_the_configured_token_is_authenticated_and_no_other(locked: FastAPI) -> None:
    async with asgi_client(locked, authorization=f"Bearer {API_TOKEN}") as client:
        ok = await client.post(TOKEN_REVIEWS, json=_token_review(API_TOKEN))
        assert ok.status_code == 201, ok.text
        assert ok.json()["status"]["authenticated"] is True
        assert "system:masters" in ok.json()["status"]["user"]["groups"]
        wrong = await client.post(TOKEN_REVIEWS, json=_token_review("not-it"))
        assert wrong.json()["status"] == {"authenticated": False, "error": "invalid bearer token"}
        # as client-go sends it: protobuf, answered in protobuf
        body = protobuf_codec.encode(_token_review(API_TOKEN))
        assert body is not None
        r = await client.post(
            TOKEN_REVIEWS, content=body, headers={"content-type": PROTOBUF, "accept": f"{PROTOBUF}, application/json"}
        )
        assert r.status_code == 201 and protobuf.decode(r.content)["status"]["authenticated"] is True


async def test_access_reviews_are_allowed_and_reviews_are_not_stored(client: httpx.AsyncClient) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "kss-admin", "resourceAttributes": {"verb": "get", "resource": "pods"}},
    }
    r = await client.post(ACCESS_REVIEWS, json=review)
    assert r.status_code == 201, r.text
    assert r.json()["status"]["allowed"] is True
    assert (await client.post(TOKEN_REVIEWS, json=_token_review("any"))).json()["status"]["authenticated"] is True
    # a review names what it asks about
    r = await client.post(ACCESS_REVIEWS, json={**review, "spec": {"user": "x"}})
    assert r.status_code == 422, r.text
    r = await client.post(TOKEN_REVIEWS, json={"kind": "TokenReview", "spec": {}})
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "spec.token"
    # create only: no list, get or delete
    for method, url in (("GET", TOKEN_REVIEWS), ("GET", f"{ACCESS_REVIEWS}/x"), ("DELETE", f"{TOKEN_REVIEWS}/x")):
        assert (await client.request(method, url)).status_code == 405
    resources = (await client.get("/apis/authorization.k8s.io/v1")).json()["resources"]
    assert {r["name"]: r["verbs"] for r in resources}["subjectaccessreviews"] == ["create"]


def test_kubectl_auth_can_i(kubectl: KubectlRunner) -> None:
    assert kubectl("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    assert kubectl("auth", "can-i", "delete", "nodes", "--all-namespaces").stdout.strip() == "yes"
