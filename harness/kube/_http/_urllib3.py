"""The official synchronous client (``kubernetes``, urllib3) in lockstep threads: its requests reach the REST handler.

Most kopf operators are plain ``def`` handlers calling the official client
(``kubernetes.client.CoreV1Api()`` after ``kubernetes.config.load_kube_config()``),
which speaks HTTP through urllib3. kopf runs such a handler in its executor,
which under the world is a lockstep thread (``harness.sim._lockstep``): its
code runs while the world stands still, and hands each operation of the world
to its actor. This module makes a urllib3 request such an operation:

* ``HTTPConnectionPool.urlopen`` (the one call every request of a
  ``PoolManager`` ends in, whatever the client's retries and timeouts) is
  wrapped once per process (:func:`install`, from ``_environment.install``);
  a request made in an operator's context (:data:`ROUTE`) to the harness's
  apiserver host is answered in process, anything else takes urllib3's own
  path, and a request of an operator to another host is refused
  (:class:`OutsideTheCluster`), as the httpx transport refuses it;
* the request is the thread's actor's Trio code
  (``call_in_world(lambda: handler.handle(...))``): the same yield points,
  conflicts and faults as any client's request;
* the answer is a ``urllib3.HTTPResponse`` built as urllib3 builds one from a
  connection: a plain body for a plain reply (``preload_content=False``
  leaves it to be read), and for a watch an ``http.client.HTTPResponse`` over
  the watch's wire, chunked. Reading it (``resp.stream()``, which
  ``kubernetes.watch.Watch().stream(...)`` reads) takes one chunk per
  delivery, each read a ``call_in_world(watch.read)``: a delivery is read as
  it comes, the body ends when the server ends the stream, and a broken
  connection raises what urllib3 raises for one (``ProtocolError``,
  "Connection broken"), and a read that waits past the read timeout
  (``_request_timeout``) raises ``ReadTimeoutError`` on the virtual clock.
  Closing the response (``resp.close()``, as the official ``Watch`` does when
  its loop ends) closes the watch; ``release_conn()`` alone hands back no
  connection (there is none) and leaves the stream open, as urllib3 does.

Called from anywhere but a lockstep thread (an asyncio task's step, a Trio
actor) the synchronous client would block the whole world: nothing else runs
while the calling thread waits, so the answer would never come. That is a
model error at the model's line, which says to run the call in a thread.

Rejected: an in-memory socket under urllib3's connection (TLS and urllib3's
connection internals would have to be faked too, for the same bytes), and
patching the official client's ``RESTClientObject`` (one client library, and
not the path it ships). Retries on a status (``Retry-After``) never apply:
the handler sends no ``Retry-After``, so urllib3 would not retry either.
"""

from __future__ import annotations

import asyncio
import http.client
import inspect
import io
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import trio

from harness.sim import call_in_world, in_lockstep_thread, model_line_here

from ..._errors import BlockingClient, OutsideTheCluster
from ._codec import JSON
from ._environment import HOST, ROUTE
from ._tcp import _reason

if TYPE_CHECKING:
    from ._httpx import Transport
    from ._watch import _Watch

_INSTALLED = False


def install() -> None:
    """Wrap urllib3's ``HTTPConnectionPool.urlopen`` (once per process; nothing when urllib3 is not installed)."""
    global _INSTALLED
    if _INSTALLED:
        return
    try:
        from urllib3 import connectionpool
    except ImportError:
        return
    cls = connectionpool.HTTPConnectionPool
    cls.urlopen = _routed(cls.urlopen)  # type: ignore[method-assign]
    _INSTALLED = True


def _routed(original: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(original)

    def urlopen(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        route = ROUTE.get()
        if route is None:
            return original(self, method, url, *args, **kwargs)
        transport: Transport = route  # type: ignore[assignment]
        if self.host not in (HOST, os.environ.get("KUBERNETES_SERVICE_HOST", HOST)):
            raise _refused(transport, OutsideTheCluster, lambda at: (
                f"{method} {self.scheme}://{self.host}{url}{at} goes to a host other than the cluster's apiserver "
                f"({HOST}); under the world only the apiserver exists. Serve what the operator calls from the "
                "scenario, or let the operator skip the call when it runs under the harness"))
        if not in_lockstep_thread():
            raise _refused(transport, BlockingClient, lambda at: (
                f"the synchronous Kubernetes client (urllib3) sends {method} {urlsplit(url).path}{at} from "
                f"{_who_calls()}: it would block the whole world, since nothing else runs while it waits for its "
                "answer. Run the synchronous client in a thread, as kopf runs sync handlers: `await "
                "loop.run_in_executor(None, fn)` or `await asyncio.to_thread(fn)` in an asyncio operator "
                "(Operator(..., asyncio=True)), each call an actor in lockstep with the world"))
        call = signature.bind(self, method, url, *args, **kwargs).arguments
        return _answer(transport, method, url, call.get("body"), call.get("headers") or {},
                       preload_content=call.get("preload_content", True),
                       decode_content=call.get("decode_content", True), read_timeout=_read_timeout(self, call))

    urlopen.__wrapped__ = original  # type: ignore[attr-defined]
    return urlopen


def _who_calls() -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "a Trio task (the world's thread)"
    return "an asyncio task's own step (the world's thread)"


def _read_timeout(pool: Any, call: dict[str, Any]) -> float | None:
    """How long a read of the response may wait for its next bytes (``timeout``'s read or total; no connect time:
    nothing is dialled), as urllib3 sets it on the socket: the official client's ``_request_timeout``."""
    from urllib3.util.timeout import _DEFAULT_TIMEOUT

    timeout = pool._get_timeout(call.get("timeout", _DEFAULT_TIMEOUT))
    # (``Timeout.read_timeout`` would take the real time since a connect started: a float no two runs share)
    limits = [t for t in (timeout._read, timeout.total) if isinstance(t, int | float) and not isinstance(t, bool)]
    return float(min(limits)) if limits else None


def _refused(transport: Transport, error: type[Exception], says: Callable[[str], str]) -> Exception:
    """A model error at the model's line, recorded on the world (an operator that catches it changes nothing)."""
    at = model_line_here()
    exc = error(says(f" at {at}" if at else ""))
    world = transport.handler.world
    actor = world._current
    name = actor.name if actor is not None else transport.client
    world._fail("misuse", f"misuse in {name}", f"{name}: {exc}", actor)
    return exc


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    if hasattr(body, "read"):
        return _body_bytes(body.read())
    return b"".join(_body_bytes(part) for part in body)  # (an iterable of chunks, as urllib3 sends one chunked)


def _answer(transport: Transport, method: str, url: str, body: Any, headers: Any, *, preload_content: bool,
            decode_content: bool, read_timeout: float | None) -> Any:
    """The request as the thread's actor's Trio code, its reply as the ``urllib3.HTTPResponse`` a connection gives."""
    import urllib3  # (an optional dependency: imported once the official client is in use)

    from ..._tested import require_tested

    require_tested("urllib3")  # its pool's timeout sentinel and response are built here (harness/_tested.py)

    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")  # (a proxy's absolute URL too)
    fields = {str(k).lower(): str(v) for k, v in dict(headers).items()}
    data = _body_bytes(body)
    handler, client, options = transport.handler, transport.client, transport.options
    reply = call_in_world(lambda: handler.handle(method, target, fields, data, client, options))
    code, reason = reply.code, _reason(reply.code).decode("ascii")
    if reply.watch is not None:
        transport._streams.append(reply.watch)  # (a crash of the operator closes its connections)
        sock = _WatchSocket(reply.watch, code, reason, read_timeout)
        wire = http.client.HTTPResponse(sock, method=method)  # type: ignore[arg-type]
        wire.begin()
        return urllib3.HTTPResponse(
            body=wire, headers=urllib3.HTTPHeaderDict(wire.msg.items()), status=wire.status, version=wire.version,
            version_string="HTTP/1.1", reason=wire.reason, preload_content=preload_content,
            decode_content=decode_content, original_response=wire, request_method=method, request_url=url)
    payload = reply.body()
    return urllib3.HTTPResponse(
        body=io.BytesIO(payload), headers={"Content-Type": reply.content_type, "Content-Length": str(len(payload))}, status=code,
        version=11, version_string="HTTP/1.1", reason=reason, preload_content=preload_content,
        decode_content=decode_content, request_method=method, request_url=url)


class _WatchSocket:
    """What ``http.client.HTTPResponse`` reads a watch response from: the status line, then the stream's chunks."""

    def __init__(self, watch: _Watch, code: int, reason: str, timeout: float | None) -> None:
        head = (f"HTTP/1.1 {code} {reason}\r\nContent-Type: {JSON}\r\nTransfer-Encoding: chunked\r\n\r\n"
                ).encode("latin-1")
        self._wire = _WatchWire(watch, head, timeout)

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self._wire)


class _WatchWire(io.RawIOBase):
    """The bytes of one watch connection as the client reads them: one ``call_in_world(watch.read)`` per delivery.

    Each delivery comes whole, framed as one HTTP chunk, so the client's chunked
    reader never asks for the next delivery before it has handed on this one;
    the stream's end is the last chunk, a broken connection the read's
    ``ConnectionResetError`` (urllib3 makes it ``ProtocolError``), and a read
    that waits longer than the read timeout the socket's ``TimeoutError``, in
    virtual time (urllib3 makes it ``ReadTimeoutError``).
    """

    def __init__(self, watch: _Watch, head: bytes, timeout: float | None) -> None:
        super().__init__()
        self._watch = watch
        self._pending = head
        self._ended = False
        self._timeout = timeout

    async def _read(self) -> bytes | None:
        if self._timeout is None:
            return await self._watch.read()
        try:
            with trio.fail_after(self._timeout):
                return await self._watch.read()
        except trio.TooSlowError:
            raise TimeoutError("timed out") from None  # (what a socket with a timeout raises)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._pending:
            if self._ended or self.closed:
                return 0
            chunk = call_in_world(self._read)
            if chunk is None:
                self._ended = True
                self._pending = b"0\r\n\r\n"
            else:
                self._pending = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        # The client closed its end: the server's stream stops (no more deliveries, no timers left behind). The
        # world stands still while a lockstep thread runs, so stopping it here is as if its actor did.
        if not self.closed:
            self._watch.stop()
        super().close()
