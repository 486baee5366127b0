"""``serve``: the simulated apiserver's Kubernetes API on a loopback TCP port, on the real clock, for kubectl or any process.

The world runs under the real clock (``harness.sim.RealClock``, one real second per
virtual second, no jitter, no faults): what the port serves is the same
:class:`~harness.kube.APIServer` and the same ``APIHandler`` as the in-process
transport, but nothing is explored; it is for pointing a real operator (any
language) or kubectl at the simulated semantics and watching it live.

This module is the command (its arguments, the kubeconfig, what it prints);
the HTTP/1.1 protocol (each request handled by an actor of the world, a watch
streamed until either end closes) is ``harness/kube/_http/_tcp.py``. A
keep-alive actor sleeps in virtual time so the world never counts as settled
while the port is open.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ..kube._http import APIHandler
    from ..sim import World



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
    # SIGTERM (a container's stop, `kill`, CI) ends it as Ctrl-C does: through Trio's own SIGINT delivery, which
    # raises KeyboardInterrupt where it is safe, never in the middle of Trio's bookkeeping
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: signal.raise_signal(signal.SIGINT))
    try:
        trio.run(server.main)
    except BaseException as exc:  # Trio reports a Ctrl-C inside a task group as an exception group
        if not _only_interrupts(exc):
            raise
        print("serve: stopped", file=sys.stderr)
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    v = world.outcome().violation
    if v is not None and v.kind not in ("interrupted",):
        print(f"serve: the world ended: {v.describe()}", file=sys.stderr)
        return 1
    return 0


def _only_interrupts(exc: BaseException) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt, or a group of nothing but interrupts and the cancellations they
    caused: the server was asked to stop, and did."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_interrupts(e) for e in exc.exceptions)
    import trio

    return isinstance(exc, KeyboardInterrupt | trio.Cancelled)


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
        from ..kube._http import APIHandler, TCPServer
        from ..kube._http._cluster import start_cluster
        from ..kube._http._tcp import loopback_kubeconfig

        if self.scenario is not None:
            await self.scenario(world, **self.params)
        apis = apiservers_of(world)
        api = apis[0] if apis else APIServer(world)
        self.handler = APIHandler(api, epoch=time.time())
        await start_cluster(self.handler)  # the namespace controller and the garbage collector
        assert world._nursery is not None
        listeners = await trio.open_tcp_listeners(self.port, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        self.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.write_text(loopback_kubeconfig(port))
        print(f"serving the Kubernetes API on http://127.0.0.1:{port} (kubeconfig: {self.kubeconfig})", flush=True)
        world._nursery.start_soon(trio.serve_listeners, TCPServer(world, self.handler).connection, listeners)
        while True:  # keeps the world from counting as settled while the port is open
            await world.sleep(3600.0, "serve: the port is open")
