"""The TCP server's protocol side: HTTP/1.1 requests read off a socket, handed to the REST handler, answered.

Each HTTP request is handled by an actor of the world (``http/<n>``), so its
apiserver calls are yield points as anywhere else; a watch keeps its actor
until either end closes. The sockets and h11 (the HTTP/1.1 state machine httpx
itself builds on) live in ordinary Trio tasks beside the world. The stream
is TLS's by default (``_tls.py``: the listeners are wrapped, HTTP/1.1 runs
inside); what listens where, and the command that runs it, are ``python -m
harness serve``'s (``harness/cli/_serve.py``) and ``ExternalOperator``'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import trio

    from harness.sim import World

    from ._handler import APIHandler
    from ._watch import WatchOptions


#: The first line of every kubeconfig the harness writes for a loopback port: how ``serve`` knows a file at its
#: ``--kubeconfig`` path is its own to overwrite (it refuses any other; see :func:`written_by_harness`).
KUBECONFIG_MARKER = "# written by race-harness for the apiserver it serves; `python -m harness serve` rewrites it"

_LOOPBACK_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: race-harness
  cluster:
    server: {scheme}://127.0.0.1:{port}{ca}
users:
- name: race-harness
  user:
    token: race-harness
contexts:
- name: race-harness
  context:
    cluster: race-harness
    user: race-harness
    namespace: default
current-context: race-harness
"""


#: what ``serve`` wrote before its kubeconfigs carried the marker (plain HTTP, no user): still its own to overwrite
_UNMARKED_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: race-harness
  cluster:
    server: http://127.0.0.1:{port}
users:
- name: race-harness
  user: {{}}
contexts:
- name: race-harness
  context:
    cluster: race-harness
    user: race-harness
    namespace: default
current-context: race-harness
"""


def loopback_kubeconfig(port: int, ca_data: str | None = None) -> str:
    """The kubeconfig of an apiserver served on ``127.0.0.1:port`` (``serve``, an external operator's), its first
    line the :data:`KUBECONFIG_MARKER`: over HTTPS trusting ``ca_data`` (``certificate-authority-data``, the base64
    of the CA's PEM: ``_tls.ServingCert.ca_data``), or plain HTTP without it.

    Its user has a token, which the server never reads (it serves without authentication): with a TLS server and
    no credentials, client-go's kubeconfig loader prompts for a username and password (kubectl's "Please enter
    Username", ``getUserIdentificationPartialConfig`` in ``tools/clientcmd/client_config.go``)."""
    if ca_data is None:
        body = _LOOPBACK_KUBECONFIG.format(scheme="http", port=port, ca="")
    else:
        body = _LOOPBACK_KUBECONFIG.format(scheme="https", port=port, ca=f"\n    certificate-authority-data: {ca_data}")
    return f"{KUBECONFIG_MARKER}\n" + body


def written_by_harness(text: str) -> bool:
    """Whether ``text``, a kubeconfig file's content, is one the harness wrote: it starts with the
    :data:`KUBECONFIG_MARKER`, or it is exactly what ``serve`` wrote before it marked its files (the same document
    without that line, for some port). A marker, not a guess from the content (a local cluster's kubeconfig can
    look like this one); a file whose first line is not the marker is the user's, even one that began as the
    harness's and was rewritten since (``kubectl config`` drops comments)."""
    if text.startswith(KUBECONFIG_MARKER):
        return True
    head, _, tail = _UNMARKED_KUBECONFIG.format(port="\0").partition("\0")
    if not (text.startswith(head) and text.endswith(tail)) or len(text) < len(head) + len(tail):
        return False
    port = text[len(head):len(text) - len(tail)]
    return port.isascii() and port.isdigit() and len(port) <= 5


class TCPServer:
    """Serves one :class:`APIHandler` to every connection handed to :meth:`connection` (``trio.serve_listeners``).

    ``client`` names the watch streams of its requests (``"<client>/watch/<Kind>"``).
    """

    def __init__(self, world: World, handler: APIHandler, client: str = "kubectl", *,
                 spawn: Callable[..., str] | None = None, activity: Callable[[int], None] | None = None,
                 options: WatchOptions | None = None) -> None:
        """``spawn(name, fn, *args)`` starts each request's actor (default ``world.spawn``; an
        ``ExternalOperator`` spawns them in its process's incarnation, named by the request); ``activity(delta)``
        is told of every request that starts (+1) and is answered (-1), and of every byte the connection moves
        (0): how the scheduler knows the process outside is busy."""
        self.world = world
        self.handler = handler
        self.client = client
        self._spawn = spawn
        self._activity = activity
        self._options = options
        self._requests = 0
        self._reading: dict[int, bool] = {}  # connections whose request is half read

    def _stir(self, delta: int) -> None:
        if self._activity is not None:
            self._activity(delta)

    async def connection(self, stream: trio.abc.Stream) -> None:
        import h11
        import trio

        conn = h11.Connection(h11.SERVER)
        try:
            if isinstance(stream, trio.SSLStream):
                # the handshake's bytes are traffic too (a process at its handshake is not waiting for the world);
                # a client that does not trust the CA, or speaks plain HTTP to the port, ends here
                await stream.do_handshake()
                self._stir(0)
            while True:
                request, body = await self._read_request(conn, stream)
                if request is None:
                    return
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
                reply_box: dict[str, Any] = {}
                done = trio.Event()
                send, receive = trio.open_memory_channel[bytes | None](math.inf)
                self._requests += 1
                method, target = request.method.decode(), request.target.decode("latin-1")
                if self._spawn is None:
                    self.world.spawn(f"http/{self._requests}", self._handle, method, target, headers, body,
                                     reply_box, done, send)
                else:  # named by the request, not by its arrival: two requests that race keep their names
                    self._spawn(f"{self.client}/{method} {target.split('?')[0]}", self._handle, method, target,
                                headers, body, reply_box, done, send)
                await done.wait()
                reply = reply_box.get("reply")
                if reply is None:  # the process crashed before its request took effect: it never reads a reply
                    return
                if reply.watch is None:
                    data = reply.body()
                    await _send(stream, conn, h11.Response(status_code=reply.code, reason=_reason(reply.code), headers=[
                        ("Content-Type", reply.content_type), ("Content-Length", str(len(data)))]))
                    await _send(stream, conn, h11.Data(data=data))
                    await _send(stream, conn, h11.EndOfMessage())
                    if not reply_box.get("at_once"):  # (a repeated read answered at once is no progress: no stir)
                        self._stir(0)
                else:
                    await self._stream_watch(conn, stream, reply.watch, receive)
                    return
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
            return
        finally:
            with trio.move_on_after(1) as scope:
                scope.shield = True
                await stream.aclose()

    async def _read_request(self, conn: Any, stream: trio.abc.Stream) -> tuple[Any, bytes]:
        reading = False
        try:
            return await self._read(conn, stream, reading)
        finally:
            if self._reading.pop(id(stream), False):
                self._stir(-1)

    async def _read(self, conn: Any, stream: trio.abc.Stream, reading: bool) -> tuple[Any, bytes]:
        """One request and its body. A body is read to its end (the connection stays in step) but kept only up to
        one byte over the handler's limit: enough for its 413 (``_limits.py``), never a client's gigabytes."""
        import h11

        from ._limits import MAX_REQUEST_BODY_BYTES

        request = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if data and not reading:
                    reading = self._reading[id(stream)] = True
                    self._stir(+1)  # a request is coming in: in flight until it is read whole
                conn.receive_data(data)
                if not data and conn.their_state is not h11.SEND_BODY and request is None:
                    return None, b""
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data[:MAX_REQUEST_BODY_BYTES + 1 - len(body)]
            elif isinstance(event, h11.EndOfMessage):
                return request, bytes(body)
            elif isinstance(event, h11.ConnectionClosed):
                return None, b""

    async def _stream_watch(self, conn: Any, stream: trio.abc.Stream, watch: Any, receive: Any) -> None:
        import h11
        import trio

        await _send(stream, conn, h11.Response(status_code=200, reason=_reason(200), headers=[
            ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]))
        self._stir(0)

        # A client that is gone shows as an error of the stream, not as its end, when it was killed (a crash fault's
        # SIGKILL resets its TLS connection): both end the watch here. Raised in the nursery they would reach
        # :meth:`connection` wrapped in an exception group, which its ``except`` does not catch, and end the run.
        gone = (trio.BrokenResourceError, trio.ClosedResourceError)

        async def client_gone(cancel: trio.CancelScope) -> None:
            try:
                while await stream.receive_some(4096):
                    pass
            except gone:
                pass
            cancel.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(client_gone, nursery.cancel_scope)
            try:
                async for chunk in receive:
                    if chunk is None:
                        break
                    await _send(stream, conn, h11.Data(data=chunk))
                    self._stir(0)
                else:
                    return
                await _send(stream, conn, h11.EndOfMessage())
            except gone:
                return
            finally:
                watch._close(b"")  # wakes the actor reading it, which then ends
                nursery.cancel_scope.cancel()

    async def _handle(self, method: str, target: str, headers: dict[str, str], body: bytes, box: dict[str, Any],
                      done: trio.Event, send: Any) -> None:
        try:
            reply = await self.handler.handle(method, target, headers, body, self.client, self._options)
        finally:
            done.set()  # a crash of the request's process ends it too: the connection then closes
        box["reply"] = reply
        self._stir(0)  # (in the step itself: the scheduler waits for the process to read it before it goes on)
        if reply.watch is not None:
            # what the watch's own step already sent (a WatchList's initial-events-end bookmark when there is nothing
            # to list) goes out behind the response's headers in this step: kube-apiserver writes the two back to
            # back, and nothing the client does in between changes what it is sent (``WatchServer.HandleHTTP``)
            if ready := reply.watch.read_ready():
                send.send_nowait(ready)
            try:
                while (chunk := await reply.watch.read()) is not None:
                    send.send_nowait(chunk + reply.watch.read_ready())  # (one write, as kube-apiserver flushes)
                    self._stir(0)
            except ConnectionResetError:
                pass
            send.send_nowait(None)


async def _send(stream: trio.abc.Stream, conn: Any, event: Any) -> None:
    data = conn.send(event)
    if data:
        await stream.send_all(data)


def _reason(code: int) -> bytes:
    """The status line's reason phrase ("Not Found"), as Go's net/http writes it: clients show it (the official
    client's ``ApiException.reason``); without one it was empty."""
    from http import HTTPStatus

    try:
        return HTTPStatus(code).phrase.encode("ascii")
    except ValueError:
        return b""
