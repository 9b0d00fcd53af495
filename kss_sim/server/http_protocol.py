"""uvicorn's HTTP protocol with the writes of one event-loop step sent together (``kss serve``'s ``http``).

uvicorn writes a response's status line and headers at ``http.response.start`` and its body at
``http.response.body``: two socket writes for every answered create, each a system call made with the GIL held
(uvloop). Through ``kss serve`` under load they were the event loop's largest single line (~12 % of the API
process's CPU at SchedulingBasic's pace, docs/performance.md). Here a connection's writes are held until the end of
the loop step that made them and then go out in one call: the same bytes in the same order, a step later at most.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.auto import AutoHTTPProtocol


class _StepWrites:
    """A transport whose ``write`` holds the bytes until the end of the event loop's step (or the next call that
    must see them sent: ``close``, ``write_eof``, ``writelines``); every other attribute is the transport's."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes | bytearray | memoryview] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is None:
            self._held = [data]
            self._loop.call_soon(self._flush)
        else:
            held.append(data)

    def _flush(self) -> None:
        held = self._held
        if held is None:
            return
        self._held = None
        if self._transport.is_closing():
            return  # the peer went away: the transport would drop them (and warn)
        if len(held) == 1:
            self._transport.write(held[0])
        else:
            self._transport.write(b"".join(held))

    def writelines(self, lines: Any) -> None:
        self._flush()
        self._transport.writelines(lines)

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def close(self) -> None:
        self._flush()  # what was written before close is sent before it, as by the transport itself
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class StepWritesHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's protocol (httptools, else h11) on a transport that sends a step's writes in one call."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(_StepWrites(cast(asyncio.Transport, transport), self.loop))
