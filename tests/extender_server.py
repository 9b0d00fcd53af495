"""A real HTTP scheduler extender for tests: a ThreadingHTTPServer on 127.0.0.1 answering each verb with a function."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A verb's handler: the decoded request body -> (HTTP status, JSON answer).
Handler = Callable[[dict[str, Any]], tuple[int, Any]]


class ExtenderServer:
    """Serves ``POST /<prefix>/<verb>`` with ``routes[verb]``; every request is kept in ``calls`` (verb, body)."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self.calls: list[tuple[str, dict[str, Any]]] = []
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                verb = self.path.rstrip("/").rsplit("/", 1)[-1]
                server.calls.append((verb, body))
                route = server.routes.get(verb)
                status, answer = (404, {"error": "no such verb"}) if route is None else route(body)
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/scheduler"

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]


@contextmanager
def extender_server(routes: dict[str, Handler]) -> Iterator[ExtenderServer]:
    server = ExtenderServer(routes)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def node_names(body: dict[str, Any]) -> list[str]:
    """The nodes an ExtenderArgs names (NodeNames, or the NodeList's items; Go's field names, as kube-scheduler
    sends them)."""
    if body.get("NodeNames") is not None:
        return list(body["NodeNames"])
    return [n["metadata"]["name"] for n in (body.get("Nodes") or {}).get("items") or []]


def sleeping(seconds: float, answer: tuple[int, Any]) -> Handler:
    def handle(body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(seconds)
        return answer

    return handle
