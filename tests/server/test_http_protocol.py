"""kss serve's HTTP protocol sends the writes of one event-loop step on a connection in one socket write: a
response's status line, headers and body together, the same bytes in the same order."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from kss_sim.server.http_protocol import StepWritesHTTPProtocol, _StepWrites


class _Recorded:
    """A transport that records what it is asked to do."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bytes]] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.calls.append(("write", bytes(data)))

    def close(self) -> None:
        self.calls.append(("close", b""))
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default


def test_the_writes_of_a_step_go_out_together_and_in_order() -> None:
    async def run() -> list[tuple[str, bytes]]:
        inner = _Recorded()
        writes = _StepWrites(inner, asyncio.get_running_loop())  # type: ignore[arg-type]
        writes.write(b"HTTP/1.1 201 Created\r\n\r\n")
        writes.write(b"{")
        writes.write(memoryview(b"}"))
        assert inner.calls == []  # held until the step ends
        await asyncio.sleep(0)
        writes.write(b"next")
        await asyncio.sleep(0)
        writes.write(b"last")
        writes.close()  # what was written goes before the close
        await asyncio.sleep(0)
        writes.write(b"after close")
        await asyncio.sleep(0)
        assert writes.get_extra_info("peername") == ("127.0.0.1", 1)  # the rest is the transport's
        return inner.calls

    assert asyncio.run(run()) == [
        ("write", b"HTTP/1.1 201 Created\r\n\r\n{}"),
        ("write", b"next"),
        ("write", b"last"),
        ("close", b""),
    ]


def test_a_response_through_uvicorn_is_one_socket_write() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        await receive()
        await send({"type": "http.response.start", "status": 201, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    async def run() -> tuple[bytes, list[int]]:
        config = uvicorn.Config(app, http=StepWritesHTTPProtocol, lifespan="off", log_level="warning")
        config.load()
        state = ServerState()
        sizes: list[int] = []

        class Counted(StepWritesHTTPProtocol):  # type: ignore[misc,valid-type]
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                write = transport.write  # type: ignore[attr-defined]

                def counted(data: bytes) -> None:
                    sizes.append(len(data))
                    write(data)

                transport.write = counted  # type: ignore[attr-defined]
                super().connection_made(transport)

        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: Counted(config=config, server_state=state, app_state={}), "127.0.0.1", 0
        )
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /x HTTP/1.1\r\nHost: kss\r\nContent-Length: 2\r\n\r\n{}")
        answer = await asyncio.wait_for(reader.readuntil(b"{}"), 10)
        writer.close()
        server.close()
        return answer, sizes

    answer, sizes = asyncio.run(run())
    assert answer.startswith(b"HTTP/1.1 201 Created\r\n")
    assert answer.endswith(b"\r\ncontent-length: 2\r\n\r\n{}")
    assert sizes == [len(answer)]
