"""A small recording HTTP proxy in front of the source: it counts every request the syncer makes to it.

It can also hold new watch requests (to open a gap the syncer must recover from with a re-list), and it
answers 502 while the upstream is down, as a load balancer in front of an API server does.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection"}


class RecordingProxy:
    """Forward to ``upstream`` (``http://host:port``) and record (method, path) of each request."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.requests: list[tuple[str, str]] = []
        self.held = 0
        self._release = threading.Event()
        self._release.set()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            # Chunked bodies, as kube-apiserver streams watches (clients read an event as soon as its chunk
            # arrives); one request per connection keeps the proxy simple.
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                self.close_connection = True
                with proxy._lock:
                    proxy.requests.append((self.command, self.path))
                if "watch=true" in self.path and not proxy._release.is_set():
                    with proxy._lock:
                        proxy.held += 1
                    proxy._release.wait()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=600)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    upstream = conn.getresponse()
                except OSError:
                    conn.close()
                    payload = (
                        b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":502,"message":"upstream down"}'
                    )
                    self.send_response(502)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                try:
                    self.send_response(upstream.status)
                    for k, v in upstream.getheaders():
                        if k.lower() not in _HOP:
                            self.send_header(k, v)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    while True:
                        try:
                            chunk = upstream.read1(65536)
                        except (OSError, http.client.HTTPException):
                            return  # upstream died mid-stream: cut the client's connection as well (no last chunk)
                        if not chunk:
                            self.wfile.write(b"0\r\n\r\n")
                            return
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                except OSError:
                    return
                finally:
                    conn.close()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> RecordingProxy:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (held requests are released first)."""
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def hold_watches(self) -> None:
        """Park every new watch request until ``release_watches``."""
        with self._lock:
            self.held = 0
        self._release.clear()

    def release_watches(self) -> None:
        """Let the parked watch requests through."""
        self._release.set()

    def mutating(self) -> list[tuple[str, str]]:
        """Every request that was not a read (GET)."""
        with self._lock:
            return [r for r in self.requests if r[0] != "GET"]
