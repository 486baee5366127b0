"""asyncio clients to the apiserver in process: aiohttp's connections, without a socket, reach the REST handler.

kopf and ``kubernetes_asyncio`` talk through aiohttp, which resolves the
kubeconfig's host and opens a TCP connection through the running event loop.
Under the world that loop is a :class:`~harness.sim._asyncio.WorldLoop`, whose
network is this module's :class:`ClusterNetwork`: the apiserver's host resolves
to an address no one routes (TEST-NET-1, RFC 5737), and a connection to it is
an in-memory transport that speaks HTTP/1.1 (h11, the state machine httpx
builds on) to the same :class:`APIHandler` every transport uses:

* a request is handled as Trio code of the task that wrote it
  (:meth:`WorldLoop.run_trio`), so its yield points (the request, a write's
  response, a conflict, a lost response) are that task's actor's choices;
* a watch's events are pushed to the connection by the stream's own actor
  (``kopf-op/watch/<Kind>``) as each is delivered in its window, as for every
  client; the task reading the response wakes as its own choice. A broken
  watch breaks the connection; an ended one ends the chunked body.

No library is patched: aiohttp and its resolver call the loop's
``getaddrinfo``, ``sock_connect`` and ``create_connection``, which are the
world's. TLS is the loop's concern, so an ``https`` kubeconfig needs nothing.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import TYPE_CHECKING, Any

from ._environment import HOST
from ._tcp import _reason

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness.sim._asyncio import WorldLoop

    from ._httpx import Transport
    from ._watch import _Watch

#: the apiserver's address under the world: TEST-NET-1 (RFC 5737), reserved for documentation, never routed
ADDRESS = "192.0.2.1"


class ClusterNetwork:
    """The network of one operator's loop: the apiserver's host and nothing else (see the module)."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def resolve(self, host: str, port: int | str | None) -> list[tuple[Any, ...]] | None:
        if host not in (HOST, ADDRESS, os.environ.get("KUBERNETES_SERVICE_HOST", HOST)):
            return None
        number = int(port) if port not in (None, "", "https") else 443
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ADDRESS, number))]

    def connect(self, loop: WorldLoop, protocol_factory: Callable[[], asyncio.BaseProtocol], host: str,
                port: int) -> tuple[asyncio.BaseTransport, asyncio.BaseProtocol] | None:
        if host != ADDRESS:
            return None
        protocol = protocol_factory()
        connection = _Connection(loop, protocol, self.transport)
        protocol.connection_made(connection)
        return connection, protocol


class _Connection(asyncio.Transport):
    """One client connection: the bytes a client writes are HTTP requests to the handler; its replies come back."""

    def __init__(self, loop: WorldLoop, protocol: asyncio.BaseProtocol, transport: Transport) -> None:
        import h11

        super().__init__()
        self._loop = loop
        self._protocol = protocol
        self._transport = transport
        self._h11 = h11.Connection(h11.SERVER)
        self._request: Any = None
        self._writer: object = None
        self._body = b""
        self._closing = False
        self._watch: _Watch | None = None
        self._reading = True

    # ------------------------------------------------------------------ the client writes
    def write(self, data: bytes | bytearray | memoryview) -> None:

        if self._closing:
            return
        self._h11.receive_data(bytes(data))
        self._read_requests()

    def _read_requests(self) -> None:
        """Each request complete in what the client wrote so far is handled (pipelined ones after the current)."""
        import h11

        while True:
            event = self._h11.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                # the request is the task's that wrote its head (the one awaiting the answer), not a helper task
                # the client writes the body from (aiohttp's write_bytes)
                self._request, self._body, self._writer = event, b"", self._loop.owner_of(self._loop.current_host())
            elif isinstance(event, h11.Data):
                self._body += event.data
            elif isinstance(event, h11.EndOfMessage):
                self._serve(self._request, self._body)
            elif isinstance(event, h11.ConnectionClosed):
                return

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _serve(self, request: Any, body: bytes) -> None:
        """Handle one request as the writing task's Trio code; answer when it is done."""
        transport = self._transport
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
        method, target = request.method.decode("ascii"), request.target.decode("latin-1")

        async def handle() -> Any:
            return await transport.handler.handle(method, target, headers, body, transport.client,
                                                  transport.options)

        self._loop.run_trio(handle, self._writer).add_done_callback(self._answer)

    def _answer(self, done: asyncio.Future[Any]) -> None:
        import h11

        if self._closing or done.cancelled():
            return
        if done.exception() is not None:  # the handler failed (a bug of ours): the connection breaks, loudly
            self._lose(done.exception())
            return
        reply = done.result()
        if reply.watch is not None:
            self._watch = reply.watch
            self._transport._streams.append(reply.watch)
            self._send(h11.Response(status_code=200, reason=_reason(200), headers=[
                ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]))
            reply.watch.attach(self._chunk)
            return
        data = reply.body()
        self._send(h11.Response(status_code=reply.code, reason=_reason(reply.code), headers=[
            ("Content-Type", reply.content_type), ("Content-Length", str(len(data)))]))
        self._send(h11.Data(data=data))
        self._send(h11.EndOfMessage())
        self._next_cycle()

    def _chunk(self, item: object) -> None:
        """A watch event sent (by the stream's actor), the stream's end, or its break."""
        import h11

        if self._closing:
            return
        if isinstance(item, bytes) and item:
            self._loop.call_now(self._send, h11.Data(data=item))
        elif item == b"":
            self._watch = None
            self._loop.call_now(self._send, h11.EndOfMessage())
            self._loop.call_now(self._next_cycle)
        else:
            self._watch = None
            self._loop.call_now(self._lose, ConnectionResetError("the watch connection broke"))

    def _send(self, event: Any) -> None:
        data = self._h11.send(event)
        if data and not self._closing:
            self._protocol.data_received(data)  # type: ignore[attr-defined]

    def _next_cycle(self) -> None:
        import h11

        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
            if self._h11.trailing_data[0]:
                self._read_requests()  # a request pipelined behind this one
        elif self._h11.our_state is h11.MUST_CLOSE or self._h11.their_state is h11.MUST_CLOSE:
            self.close()

    def _lose(self, exc: BaseException | None) -> None:
        if self._closing:
            return
        self._closing = True
        self._stop_watch()
        self._protocol.connection_lost(exc if isinstance(exc, Exception) else None)

    def _stop_watch(self) -> None:
        if self._watch is not None:
            self._watch.stop()
            self._watch = None

    # ------------------------------------------------------------------ asyncio.Transport
    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._stop_watch()
        self._loop.call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self._closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": (ADDRESS, 443), "sockname": ("127.0.0.1", 0)}.get(name, default)

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        self.close()

    def get_write_buffer_size(self) -> int:
        return 0

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (0, 0)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def pause_reading(self) -> None:
        self._reading = False  # (the world delivers at its own pace; a client's flow control changes nothing)

    def resume_reading(self) -> None:
        self._reading = True

    def is_reading(self) -> bool:
        return self._reading and not self._closing

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol
