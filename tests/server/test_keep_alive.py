"""An idle keep-alive connection outlives a client's retry pause: kubectl drain retries an eviction 5 s after a 429
on the connection it used, and uvicorn's default (5 s) closed it just then ("connection reset by peer")."""

from __future__ import annotations

import socket
import time

from tests.conftest import Server

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n"


def _answer(conn: socket.socket) -> bytes:
    conn.sendall(REQUEST)
    data = b""
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"ok"):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def test_an_idle_connection_is_still_served_after_six_seconds(server: Server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        assert _answer(conn).startswith(b"HTTP/1.1 200")
        time.sleep(6)  # past uvicorn's default keep-alive, well within kube-apiserver's 90 s
        assert _answer(conn).startswith(b"HTTP/1.1 200")
