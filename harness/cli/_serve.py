"""``serve``: the simulated apiserver's Kubernetes API on a loopback TCP port, on the real clock, for kubectl or any process.

The world runs under the real clock (``harness.sim.RealClock``, one real second per
virtual second, no jitter, no faults): what the port serves is the same
:class:`~harness.kube.APIServer` and the same ``APIHandler`` as the in-process
transport, but nothing is explored; it is for pointing a real operator (any
language) or kubectl at the simulated semantics and watching it live.

It serves HTTPS as kube-apiserver does, with a CA made for the run and
written into the kubeconfig (``certificate-authority-data``); plain HTTP only
with ``--insecure-http``. This module is the command (its arguments, the
kubeconfig, what it prints);
the HTTP/1.1 protocol (each request handled by an actor of the world, a watch
streamed until either end closes) is ``harness/kube/_http/_tcp.py``. A
keep-alive actor sleeps in virtual time so the world never counts as settled
while the port is open.
"""

from __future__ import annotations

import argparse
import errno
import math
import signal
import socket
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
    s.add_argument("--insecure-http", action="store_true",
                   help="serve plain HTTP instead of HTTPS (default: TLS with a CA made for this run, written into the "
                   "kubeconfig as certificate-authority-data; @kubernetes/client-node refuses plain http://)")


def run(args: argparse.Namespace) -> int:
    try:
        import h11  # noqa: F401  # an httpx dependency: pip install 'race-harness[http]'
    except ImportError:
        raise UsageError("serve needs h11: pip install 'race-harness[http]'") from None
    if not args.insecure_http:
        try:
            import trustme  # noqa: F401  # the CA and serving certificate (harness/kube/_http/_tls.py)
        except ImportError:
            raise UsageError("serve speaks TLS with a CA of its own, made with trustme: pip install trustme "
                             "(or serve --insecure-http for plain HTTP, which kubectl and most clients accept)") from None
    import trio

    from ..sim import Limits, RealClock, World

    if not 0 <= args.port < 65536:
        raise UsageError("use --port between 0 and 65535 (0: any free port)")
    if args.seconds is not None and not (math.isfinite(args.seconds) and args.seconds > 0):
        raise UsageError(f"--seconds {args.seconds:g}: serve stops after a number of seconds above 0; pass one, or "
                         "leave --seconds out to serve until Ctrl-C")
    kubeconfig = Path(args.kubeconfig)
    _check_kubeconfig(kubeconfig)
    scenario = None
    params: dict[str, Any] = {}
    if args.target is not None:
        from ._targets import _resolve_targets

        t = _resolve_targets([args.target], None, args.param, live=True)[0]
        scenario, params = t.scenario, t.params_by_variant[t.variants[0]]
    world = World(clock=RealClock(1.0, 0.0, 0, math.inf), limits=Limits(max_steps=sys.maxsize, max_time=math.inf))
    sock = _listen(args.port)  # last of the checks: nothing after it can refuse the run and leave it open
    server = _Server(world, scenario, params, sock, kubeconfig, args.seconds, tls=not args.insecure_http)
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
        sock.close()  # (Trio closed it if it served; a second close does nothing)
    v = world.outcome().violation
    if v is not None and v.kind not in ("interrupted",):
        print(f"serve: the world ended: {v.describe()}", file=sys.stderr)
        return 1
    return 0


def _listen(port: int) -> socket.socket:
    """The listening socket on ``127.0.0.1:port``, bound before the world starts and handed to it.

    Bound here, not checked here and bound later: a port free at a check can be taken before the bind (by
    another ``serve`` started at the same moment), and a bind that fails inside the world is an actor's
    ``OSError``, reported as the model's fault. ``SO_REUSEADDR`` as ``trio.open_tcp_listeners`` sets it (a port a
    stopped ``serve`` left in TIME_WAIT is free at once); on Linux it never lets two listeners share a port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        fix = "pass another --port, or --port 0 for a free one"
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on 127.0.0.1 is in use (another process listens there): {fix}") from None
        if exc.errno == errno.EACCES:
            raise UsageError(f"port {port} on 127.0.0.1 needs privileges this process does not have: {fix}") from None
        raise UsageError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}): {fix}") from None
    return sock


def _check_kubeconfig(path: Path) -> None:
    """Refuse a ``--kubeconfig`` path that holds a file the harness did not write (``written_by_harness``): it may
    be the user's own kubeconfig, and ``serve`` would replace it. Absent, empty (``mktemp``'s) or the harness's
    own (an earlier ``serve``'s ``reports/kubeconfig``) is written over without a word."""
    from ..kube._http._tcp import written_by_harness

    if path.is_dir():
        raise UsageError(f"--kubeconfig {path} is a directory: pass the path of a file to write")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"--kubeconfig {path} cannot be read ({exc.strerror or exc}): pass another path") from None
    if text and not written_by_harness(text):
        raise UsageError(f"--kubeconfig {path} exists and was not written by the harness, which will not overwrite "
                         "it: pass another --kubeconfig path, or delete the file")


def _only_interrupts(exc: BaseException) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt, or a group of nothing but interrupts and the cancellations they
    caused: the server was asked to stop, and did."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_interrupts(e) for e in exc.exceptions)
    import trio

    return isinstance(exc, KeyboardInterrupt | trio.Cancelled)


class _Server:
    def __init__(self, world: World, scenario: Any, params: dict[str, Any], sock: socket.socket, kubeconfig: Path,
                 seconds: float | None, *, tls: bool = True) -> None:
        self.world = world
        self.tls = tls
        self.scenario = scenario
        self.params = params
        self.sock = sock
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
        from ..kube._http._tls import serving_cert, tls_listeners

        if self.scenario is not None:
            await self.scenario(world, **self.params)
        apis = apiservers_of(world)
        api = apis[0] if apis else APIServer(world)
        self.handler = APIHandler(api, epoch=time.time())
        await start_cluster(self.handler)  # the namespace controller and the garbage collector
        assert world._nursery is not None
        tcp = [trio.SocketListener(trio.socket.from_stdlib_socket(self.sock))]
        port = self.sock.getsockname()[1]
        listeners: list[Any] = list(tcp)
        ca_data = None
        if self.tls:  # as kube-apiserver: HTTPS, its CA in the kubeconfig (harness/kube/_http/_tls.py)
            ca_data = serving_cert().ca_data
            listeners = tls_listeners(tcp)
        self.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.write_text(loopback_kubeconfig(port, ca_data))
        scheme = "https" if self.tls else "http"
        print(f"serving the Kubernetes API on {scheme}://127.0.0.1:{port} (kubeconfig: {self.kubeconfig})", flush=True)
        world._nursery.start_soon(trio.serve_listeners, TCPServer(world, self.handler).connection, listeners)
        while True:  # keeps the world from counting as settled while the port is open
            await world.sleep(3600.0, "serve: the port is open")
