"""``Rest`` over a real HTTP server: the body the syncer sends is exactly the object, with the client's auth."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from syncer.importer import run_import
from syncer.kinds import NODE, POD
from syncer.kube import KubeTarget, Rejected, api_client, encode_body
from syncer.metrics import Metrics
from tests.syncer.fakes import FakeSource, FakeTarget, node, page, pod


class _Recorder(BaseHTTPRequestHandler):
    """Answers every request with a canned status and body; keeps what it was sent."""

    received: list[tuple[str, str, dict[str, str], bytes]]
    answer: tuple[int, bytes]

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.received.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        code, payload = self.answer
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_PATCH = do_GET = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[type[_Recorder]]:
    handler = type("Handler", (_Recorder,), {"received": [], "answer": (201, b"{}")})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{httpd.server_address[1]}"  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_create_sends_exactly_the_object_as_json_with_the_bearer_token(server: type[_Recorder]) -> None:
    obj = pod("web-1", node="n1", labels={"app": "web", "ünï": "cödé"})
    obj["metadata"]["annotations"] = {"big": "x" * 10_000}
    obj["spec"]["priority"] = -5
    obj["spec"]["overhead"] = {"cpu": 0.25}
    obj["spec"]["nothing"] = None
    server.answer = (201, json.dumps({**obj, "metadata": {**obj["metadata"], "uid": "sim-1"}}).encode())
    target = KubeTarget(api_client(url=server.url, token="s3cret"))  # type: ignore[attr-defined]
    created = target.create(POD, obj)
    assert created["metadata"]["uid"] == "sim-1"
    [(method, path, headers, body)] = server.received
    assert (method, path) == ("POST", "/api/v1/namespaces/default/pods")
    assert json.loads(body) == obj
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == "Bearer s3cret"


def test_patch_sends_the_merge_patch_with_its_content_type(server: type[_Recorder]) -> None:
    server.answer = (200, b'{"status": {"phase": "Running"}}')
    target = KubeTarget(api_client(url=server.url))  # type: ignore[attr-defined]
    patch = {"metadata": {"labels": {"gone": None}}, "status": {"phase": "Running"}}
    result = target.patch(POD, "default", "web-1", patch, status=True)
    assert result == {"status": {"phase": "Running"}}
    [(method, path, headers, body)] = server.received
    assert (method, path) == ("PATCH", "/api/v1/namespaces/default/pods/web-1/status")
    assert headers["content-type"] == "application/merge-patch+json"
    assert json.loads(body) == patch
    assert "authorization" not in headers


def test_a_rejection_is_raised_with_the_servers_message(server: type[_Recorder]) -> None:
    status = {"kind": "Status", "status": "Failure", "reason": "Invalid", "message": "spec.containers: Required"}
    server.answer = (422, json.dumps(status).encode())
    target = KubeTarget(api_client(url=server.url))  # type: ignore[attr-defined]
    with pytest.raises(Rejected, match=r"spec\.containers: Required"):
        target.create(NODE, node("n1"))
    # The connection went back to the pool: the next request on it works.
    server.answer = (201, b'{"metadata": {"uid": "u"}}')
    assert target.create(NODE, node("n2"))["metadata"]["uid"] == "u"


def test_bodies_orjson_refuses_are_encoded_with_json() -> None:
    huge = {"spec": {"n": 2**70}}
    assert json.loads(encode_body(huge)) == huge
    assert encode_body({"a": [1, "é", None]}) == b'{"a":[1,"\xc3\xa9",null]}'


def test_an_import_counts_a_rejected_object_as_failed_and_goes_on() -> None:
    source = FakeSource(lists={"Pod": [[page(pod("a", node="n1"), pod("b"), pod("c"), rv="6")]]})
    target = FakeTarget()
    target.reject = {"b"}
    metrics = Metrics()
    report = run_import(source, target, kinds=(POD,), workers=3, metrics=metrics)
    assert report.objects == {"Pod": 3}
    assert metrics.total("failed") == 1
    assert sorted(k[2] for k in target.objects if k[0] == "Pod") == ["a", "c"]


def test_the_connection_pool_holds_one_connection_per_writer(tmp_path: Any) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    for api in (
        api_client(url="http://127.0.0.1:1", pool_size=64),
        api_client(kubeconfig=str(kubeconfig), pool_size=64),
    ):
        assert api.rest_client.pool_manager.connection_pool_kw["maxsize"] == 64
    # Never fewer than the client's own default.
    default = api_client(url="http://127.0.0.1:1").rest_client.pool_manager.connection_pool_kw["maxsize"]
    assert (
        api_client(url="http://127.0.0.1:1", pool_size=1).rest_client.pool_manager.connection_pool_kw["maxsize"]
        == default
    )
