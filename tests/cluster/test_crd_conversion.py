"""A CRD with ``spec.conversion.strategy: Webhook``: kss calls a real HTTPS conversion webhook (a server on the
loopback address, its self-signed certificate the CRD's ``caBundle``) with ``ConversionReview``s as
kube-apiserver does, stores the storage version and answers each request in its own; the webhook's failures are
kube's 500s; and the CRD's conversion settings are validated as kube validates them."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from kss_sim.server.tls import ensure_certificate

GROUP = "conv.kss.example"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
V1 = f"/apis/{GROUP}/v1/namespaces/default/widgets"
V2 = f"/apis/{GROUP}/v2/namespaces/default/widgets"


class Webhook:
    """A conversion webhook: v1's ``spec.replicas`` is v2's ``spec.count``; ``mode`` makes it misbehave."""

    def __init__(self, tmp_path: Path) -> None:
        cert, key = ensure_certificate(tmp_path, ["127.0.0.1"])
        self.ca_bundle = base64.b64encode(cert.read_bytes()).decode()
        self.reviews: list[dict[str, Any]] = []
        self.mode = "convert"
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.reviews.append(review)
                body = json.dumps(hook.answer(review)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/convert"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, review: dict[str, Any]) -> dict[str, Any]:
        request = review["request"]
        desired = request["desiredAPIVersion"]
        converted = []
        for obj in request["objects"]:
            spec = dict(obj.get("spec") or {})
            if desired.endswith("/v2") and "replicas" in spec:
                spec["count"] = spec.pop("replicas")
            elif desired.endswith("/v1") and "count" in spec:
                spec["replicas"] = spec.pop("count")
            out = {**obj, "apiVersion": desired, "spec": spec}
            out["metadata"] = {**obj["metadata"], "labels": {"converted": "yes"}, "generation": 99}
            if self.mode == "rename":
                out["metadata"]["name"] = "other"
            converted.append(out)
        response: dict[str, Any] = {
            "uid": request["uid"],
            "convertedObjects": converted,
            "result": {"status": "Success"},
        }
        if self.mode == "refuse":
            response = {
                "uid": request["uid"],
                "result": {"status": "Failure", "message": "cannot convert widgets today"},
            }
        if self.mode == "wrong-uid":
            response["uid"] = "not-the-request"
        return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def webhook(tmp_path: Path) -> Iterator[Webhook]:
    hook = Webhook(tmp_path)
    yield hook
    hook.stop()


def _crd(client_config: dict[str, Any], review_versions: list[str] | None = None) -> dict[str, Any]:
    def version(name: str, field: str, storage: bool) -> dict[str, Any]:
        spec = {"type": "object", "properties": {field: {"type": "integer"}}}
        schema = {"type": "object", "properties": {"spec": spec}}
        return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": schema}}

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [version("v1", "replicas", True), version("v2", "count", False)],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {"clientConfig": client_config, "conversionReviewVersions": review_versions or ["v1"]},
            },
        },
    }


def _widget(version: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


async def test_objects_are_converted_by_the_webhook_both_ways(client: httpx.AsyncClient, webhook: Webhook) -> None:
    crd = await client.post(CRDS, json=_crd({"url": webhook.url, "caBundle": webhook.ca_bundle}))
    assert crd.status_code == 201, crd.text
    created = await client.post(V2, json=_widget("v2", "w1", count=3))
    assert created.status_code == 201, created.text
    # Stored in v1 (converted by the webhook), answered in v2 (converted back).
    assert created.json()["apiVersion"] == f"{GROUP}/v2" and created.json()["spec"] == {"count": 3}
    stored = (await client.get(f"{V1}/w1")).json()
    assert stored["apiVersion"] == f"{GROUP}/v1" and stored["spec"] == {"replicas": 3}
    to_storage = webhook.reviews[0]
    assert to_storage["apiVersion"] == "apiextensions.k8s.io/v1" and to_storage["kind"] == "ConversionReview"
    assert to_storage["request"]["desiredAPIVersion"] == f"{GROUP}/v1" and to_storage["request"]["uid"]
    assert [o["spec"] for o in to_storage["request"]["objects"]] == [{"count": 3}]
    # A webhook may change labels and annotations, nothing else of the metadata.
    assert stored["metadata"]["labels"] == {"converted": "yes"} and stored["metadata"]["generation"] == 1
    # Reads through v2: one call for a list's items.
    await client.post(V1, json=_widget("v1", "w2", replicas=5))
    before = len(webhook.reviews)
    listed = (await client.get(V2)).json()
    assert len(webhook.reviews) == before + 1
    assert sorted(i["spec"]["count"] for i in listed["items"]) == [3, 5]
    assert {i["apiVersion"] for i in listed["items"]} == {f"{GROUP}/v2"}
    # Reads through the storage version call nothing.
    before = len(webhook.reviews)
    assert (await client.get(f"{V1}/w2")).json()["spec"] == {"replicas": 5}
    assert len(webhook.reviews) == before


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("refuse", "cannot convert widgets today"),
        ("wrong-uid", 'expected response.uid="'),
        ("rename", "returned invalid converted object at index 0: must have the same name: w"),
    ],
)
async def test_a_webhook_failure_is_kubes_500(
    client: httpx.AsyncClient, webhook: Webhook, mode: str, message: str
) -> None:
    await client.post(CRDS, json=_crd({"url": webhook.url, "caBundle": webhook.ca_bundle}))
    assert (await client.post(V1, json=_widget("v1", "w1", replicas=1))).status_code == 201
    webhook.mode = mode
    for answer in (await client.get(f"{V2}/w1"), await client.post(V2, json=_widget("v2", "w2", count=2))):
        assert answer.status_code == 500, answer.text
        status = answer.json()
        assert "reason" not in status and status["code"] == 500
        assert status["message"].startswith(f"conversion webhook for {GROUP}/v")
        assert message in status["message"]
    assert [i["metadata"]["name"] for i in (await client.get(V1)).json()["items"]] == ["w1"]  # nothing stored


async def test_an_unreachable_or_untrusted_webhook_fails_the_request(
    client: httpx.AsyncClient, webhook: Webhook
) -> None:
    # No caBundle: the system's CAs do not trust the webhook's self-signed certificate.
    await client.post(CRDS, json=_crd({"url": webhook.url}))
    answer = await client.post(V2, json=_widget("v2", "w1", count=1))
    assert answer.status_code == 500
    assert answer.json()["message"].startswith(
        f'conversion webhook for {GROUP}/v2, Kind=Widget failed: Post "{webhook.url}": '
    )


@pytest.mark.parametrize(
    ("conversion", "field", "message"),
    [
        ({"strategy": "Sometimes"}, "spec.conversion.strategy", 'Unsupported value: "Sometimes"'),
        (
            {"strategy": "Webhook"},
            "spec.conversion.webhook",
            "Required value: required when strategy is set to Webhook",
        ),
        (
            {
                "strategy": "Webhook",
                "webhook": {"clientConfig": {"url": "http://127.0.0.1:1/c"}, "conversionReviewVersions": ["v1"]},
            },
            "spec.conversion.webhook.clientConfig.url",
            "'https' is the only allowed URL scheme",
        ),
        (
            {
                "strategy": "Webhook",
                "webhook": {"clientConfig": {"url": "https://127.0.0.1:1/c"}, "conversionReviewVersions": ["v2"]},
            },
            "spec.conversion.webhook.conversionReviewVersions",
            'Invalid value: []string{"v2"}: must include at least one of v1, v1beta1',
        ),
        (
            {"strategy": "Webhook", "webhook": {"clientConfig": {}, "conversionReviewVersions": ["v1"]}},
            "spec.conversion.webhook.clientConfig",
            "exactly one of url or service is required",
        ),
        (
            {"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}},
            "spec.conversion.webhook",
            "should not be set when strategy is not set to Webhook",
        ),
    ],
)
async def test_conversion_settings_are_validated(
    client: httpx.AsyncClient, conversion: dict[str, Any], field: str, message: str
) -> None:
    crd = _crd({"url": "https://127.0.0.1:1/c"})
    crd["spec"]["conversion"] = conversion
    answer = await client.post(CRDS, json=crd)
    assert answer.status_code == 422, answer.text
    causes = {c["field"]: c["message"] for c in answer.json()["details"]["causes"]}
    assert message in causes[field]
