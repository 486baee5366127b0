"""The httpx transport: a real client (httpx, lightkube) running inside a world, its requests the world's steps.

httpx is never imported here: the response is built from the module the
request came from, so forks of httpx with the same interface work too.
"""

from __future__ import annotations

import sys
from typing import Any

from .._apiserver import APIServer
from .._delivery import DEFAULT_MAX_LAG
from ._codec import JSON
from ._handler import _handler_of
from ._watch import WatchOptions, _Chunks, _Watch


# ------------------------------------------------------------------------------------------- transport
class Transport:
    """An httpx transport that hands each request to :class:`APIHandler` inside the world (``api.transport()``).

    It works with ``httpx.AsyncClient(transport=...)`` and with clients built
    on httpx forks of the same interface (lightkube 1.x uses ``httpx2``): the
    response is built from the module the request came from. httpx is never
    imported by the harness itself. Requests run in the calling actor, so they
    are that actor's yield points; a client's own ``anyio.fail_after`` runs in
    virtual time. ``max_lag``, ``latency`` and the fault flags are the watch
    streams' (as an :class:`Informer`'s).
    """

    def __init__(self, api: APIServer, client: str, *, max_lag: float | None = None, latency: float = 0.0,
                 watch_drops: bool = False, watch_ends: bool = False, compactions: bool = False) -> None:
        self.handler = _handler_of(api)
        self.client = client
        self.options = WatchOptions(DEFAULT_MAX_LAG if max_lag is None else max_lag, latency, watch_drops, watch_ends,
                                    compactions)
        self._streams: list[_Watch] = []

    async def handle_async_request(self, request: Any) -> Any:
        http = sys.modules[type(request).__module__.partition(".")[0]]  # httpx, or a fork of it
        body = await request.aread()
        target = request.url.raw_path.decode("ascii")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers.raw}
        reply = await self.handler.handle(request.method, target, headers, body, self.client, self.options)
        if reply.watch is not None:
            self._streams.append(reply.watch)
            stream = _watch_body_class(http)(reply.watch, request)
            return http.Response(reply.code, headers=[("Content-Type", JSON), ("Transfer-Encoding", "chunked")],
                                 stream=stream, request=request)
        return http.Response(reply.code, headers=[("Content-Type", reply.content_type)], content=reply.body(),
                             request=request)

    def close(self) -> None:
        """Close every watch connection it opened (a crashed process's connections close with it)."""
        for s in self._streams:
            s.stop()
        self._streams.clear()

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_BODY_CLASSES: dict[str, type] = {}


def _watch_body_class(http: Any) -> type:
    """A response stream class of the client's own httpx module (its client checks the type)."""
    cls = _BODY_CLASSES.get(http.__name__)
    if cls is None:
        base = http.AsyncByteStream

        class WatchBody(base):  # type: ignore[misc, valid-type]
            def __init__(self, watch: _Watch, request: Any) -> None:
                self._watch = watch
                self._request = request

            def __aiter__(self) -> _Chunks:
                return _Chunks(self._watch, lambda why: http.ReadError(why, request=self._request))

            async def aclose(self) -> None:
                self._watch.stop()

        cls = _BODY_CLASSES[http.__name__] = WatchBody
    return cls
