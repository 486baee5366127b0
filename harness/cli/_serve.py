"""``serve``: the simulated apiserver's Kubernetes API on a loopback TCP port, on the real clock, for kubectl or any process.

The world runs under the real clock (``harness.sim.RealClock``, one real second per
virtual second, no jitter, no faults): what the port serves is the same
:class:`~harness.kube.APIServer` and the same ``APIHandler`` as the in-process
transport, but nothing is explored; it is for pointing a real operator (any
language) or kubectl at the simulated semantics and watching it live.

Each HTTP request is handled by an actor of the world (``http/<n>``), so its
apiserver calls are yield points as anywhere else; a watch keeps its actor
until either end closes. The sockets and h11 (the HTTP/1.1 state machine httpx
itself builds on) live in ordinary Trio tasks beside the world. A keep-alive
actor sleeps in virtual time so the world never counts as settled while the
port is open.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    import trio

    from ..kube._httpapi import APIHandler
    from ..sim import World

KUBECONFIG = """apiVersion: v1
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


def add_parser(sub: Any, raw: type[argparse.HelpFormatter], target_forms: str) -> None:
    s = sub.add_parser(
        "serve", help="serve the simulated apiserver's Kubernetes API on a loopback port (kubectl, any operator)",
        description="Run TARGET (a scenario that builds an APIServer; default: an empty one) on the real clock and "
        "serve its Kubernetes API on 127.0.0.1:PORT until interrupted; write a kubeconfig for it.",
        epilog=f"TARGET: {target_forms}.\n\nexample: kubectl --kubeconfig reports/kubeconfig get configmaps -w",
        formatter_class=raw,
    )
    s.add_argument("target", metavar="TARGET", nargs="?", default=None)
    s.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: a free one, printed)")
    s.add_argument("--kubeconfig", default="reports/kubeconfig", metavar="PATH",
                   help="where to write the kubeconfig (default reports/kubeconfig)")
    s.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a keyword argument of the scenario, repeatable")
    s.add_argument("--seconds", type=float, default=None, help="stop after this many seconds (default: until Ctrl-C)")


def run(args: argparse.Namespace) -> int:
    try:
        import h11  # noqa: F401  # an httpx dependency: pip install 'race-harness[http]'
    except ImportError:
        raise UsageError("serve needs h11: pip install 'race-harness[http]'") from None
    import trio

    from ..sim import Limits, RealClock, World

    if not 0 <= args.port < 65536:
        raise UsageError("use --port between 0 and 65535 (0: any free port)")
    scenario = None
    params: dict[str, Any] = {}
    if args.target is not None:
        from ._targets import _resolve_targets

        t = _resolve_targets([args.target], None, args.param, live=True)[0]
        scenario, params = t.scenario, t.params_by_variant[t.variants[0]]
    world = World(clock=RealClock(1.0, 0.0, 0, math.inf), limits=Limits(max_steps=sys.maxsize, max_time=math.inf))
    server = _Server(world, scenario, params, args.port, Path(args.kubeconfig), args.seconds)
    try:
        trio.run(server.main)
    except KeyboardInterrupt:
        print("serve: stopped", file=sys.stderr)
        return 0
    v = world.outcome().violation
    if v is not None and v.kind not in ("interrupted",):
        print(f"serve: the world ended: {v.describe()}", file=sys.stderr)
        return 1
    return 0


class _Server:
    def __init__(self, world: World, scenario: Any, params: dict[str, Any], port: int, kubeconfig: Path,
                 seconds: float | None) -> None:
        self.world = world
        self.scenario = scenario
        self.params = params
        self.port = port
        self.kubeconfig = kubeconfig
        self.seconds = seconds
        self.handler: APIHandler | None = None
        self._requests = 0

    async def main(self) -> None:
        import trio

        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.world._main, self._scenario)
            if self.seconds is not None:
                await trio.sleep(self.seconds)
                self.world._real.stop()  # type: ignore[union-attr]
                nursery.cancel_scope.cancel()

    async def _scenario(self, world: World) -> None:
        import trio

        from ..kube import APIServer, apiservers_of
        from ..kube._httpapi import APIHandler

        if self.scenario is not None:
            await self.scenario(world, **self.params)
        apis = apiservers_of(world)
        api = apis[0] if apis else APIServer(world)
        self.handler = APIHandler(api, epoch=time.time())
        assert world._nursery is not None
        listeners = await trio.open_tcp_listeners(self.port, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        self.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.write_text(KUBECONFIG.format(port=port))
        print(f"serving the Kubernetes API on http://127.0.0.1:{port} (kubeconfig: {self.kubeconfig})", flush=True)
        world._nursery.start_soon(trio.serve_listeners, self._connection, listeners)
        while True:  # keeps the world from counting as settled while the port is open
            await world.sleep(3600.0, "serve: the port is open")

    async def _connection(self, stream: trio.SocketStream) -> None:
        import h11
        import trio

        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request, body = await self._read_request(conn, stream)
                if request is None:
                    return
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
                reply_box: dict[str, Any] = {}
                done = trio.Event()
                send, receive = trio.open_memory_channel[bytes | None](math.inf)
                self._requests += 1
                self.world.spawn(f"http/{self._requests}", self._handle, request.method.decode(),
                                 request.target.decode("latin-1"), headers, body, reply_box, done, send)
                await done.wait()
                reply = reply_box["reply"]
                if reply.watch is None:
                    data = reply.body()
                    await _send(stream, conn, h11.Response(status_code=reply.code, headers=[
                        ("Content-Type", "application/json"), ("Content-Length", str(len(data)))]))
                    await _send(stream, conn, h11.Data(data=data))
                    await _send(stream, conn, h11.EndOfMessage())
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

    async def _read_request(self, conn: Any, stream: trio.SocketStream) -> tuple[Any, bytes]:
        import h11

        request = None
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                if not data and conn.their_state is not h11.SEND_BODY and request is None:
                    return None, b""
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return request, body
            elif isinstance(event, h11.ConnectionClosed):
                return None, b""

    async def _stream_watch(self, conn: Any, stream: trio.SocketStream, watch: Any, receive: Any) -> None:
        import h11
        import trio

        await _send(stream, conn, h11.Response(status_code=200, headers=[
            ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]))

        async def client_gone(cancel: trio.CancelScope) -> None:
            while await stream.receive_some(4096):
                pass
            cancel.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(client_gone, nursery.cancel_scope)
            try:
                async for chunk in receive:
                    if chunk is None:
                        break
                    await _send(stream, conn, h11.Data(data=chunk))
                else:
                    return
                await _send(stream, conn, h11.EndOfMessage())
            finally:
                watch._close(b"")  # wakes the actor reading it, which then ends
                nursery.cancel_scope.cancel()

    async def _handle(self, method: str, target: str, headers: dict[str, str], body: bytes, box: dict[str, Any],
                      done: trio.Event, send: Any) -> None:
        assert self.handler is not None
        reply = await self.handler.handle(method, target, headers, body, "kubectl")
        box["reply"] = reply
        done.set()
        if reply.watch is not None:
            try:
                while (chunk := await reply.watch.read()) is not None:
                    send.send_nowait(chunk)
            except ConnectionResetError:
                pass
            send.send_nowait(None)


async def _send(stream: trio.SocketStream, conn: Any, event: Any) -> None:
    data = conn.send(event)
    if data:
        await stream.send_all(data)
