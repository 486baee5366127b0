"""Clients an operator builds from its environment reach the world's apiserver: a kubeconfig, and routing at the transport.

An operator written for production builds its client from the environment
(lightkube's ``AsyncClient()``, an ``httpx.AsyncClient`` from ``KUBECONFIG``);
nothing in its code names the harness. Two things make that client the world's,
neither touching the operator:

* **a kubeconfig of the harness's own** (:func:`kubeconfig_path`), written once
  per process into a fresh temporary directory and removed at exit: one cluster
  at :data:`SERVER`, TLS verification off (nothing is ever dialled, and a client
  then builds no certificate store), a token; an :class:`Operator` sets
  ``KUBECONFIG`` to it while its run lasts;
* **routing at the transport**: ``handle_async_request`` of httpx's connection
  transport (``httpx.AsyncHTTPTransport``, and the same class of the ``httpx2``
  fork lightkube 1.x uses) is wrapped once per process (:func:`install`); a
  request made by a task of an operator (the context variable :data:`ROUTE`, set
  in the operator's main task and inherited by every task it starts) goes to
  that operator's :class:`Transport`, as ``api.transport()``'s requests do,
  whatever the client's other settings. A request from anywhere else takes
  httpx's own path, untouched.

Rejected: patching lightkube's config loader (one client library, and the
operator's own code path would no longer be the one it ships), or a loopback
server (a socket's wake-up comes on the real clock, which the world does not
schedule). A request an operator sends to another host is refused with
:class:`OutsideTheCluster`: under the world only the apiserver exists.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Protocol

from ..._errors import OutsideTheCluster
from ...sim import running_world_loop

#: the apiserver's address in the harness's kubeconfig (``.invalid``: a name that resolves nowhere, RFC 2606)
HOST = "kube-apiserver.harness.invalid"
SERVER = f"https://{HOST}"


class _Routes(Protocol):
    async def handle_async_request(self, request: Any) -> Any: ...


#: the transport of the operator whose task makes the request (None: not an operator's task)
ROUTE: ContextVar[_Routes | None] = ContextVar("harness_kube_operator_route", default=None)


_PATH: str | None = None


def kubeconfig_path() -> str:
    """The harness's kubeconfig (written on first use, removed when the process exits)."""
    global _PATH
    if _PATH is None:
        directory = tempfile.mkdtemp(prefix="race-harness-")
        atexit.register(shutil.rmtree, directory, True)
        path = os.path.join(directory, "kubeconfig")
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "harness", "preferences": {},
            "clusters": [{"name": "harness", "cluster": {"server": SERVER, "insecure-skip-tls-verify": True}}],
            "users": [{"name": "harness", "user": {"token": "harness"}}],
            "contexts": [{"name": "harness", "context": {"cluster": "harness", "user": "harness",
                                                         "namespace": "default"}}],
        }
        with open(path, "x", encoding="utf-8") as f:  # (JSON is YAML: every kubeconfig reader takes it)
            json.dump(config, f, indent=1)
        _PATH = path
    return _PATH


_INSTALLED: set[str] = set()


def _clients() -> list[Any]:
    """httpx and its fork httpx2 (lightkube 1.x), those of them that are installed."""
    found: list[Any] = []
    try:
        import httpx
    except ImportError:
        pass
    else:
        found.append(httpx)
    try:
        import httpx2  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        pass
    else:
        found.append(httpx2)
    return found


def install() -> None:
    """Wrap the connection transport of httpx and of its forks that are installed, and urllib3's connection pool
    (the official synchronous client's, ``_urllib3.py``), once per process."""
    from ._urllib3 import install as install_urllib3

    install_urllib3()
    for http in _clients():
        if http.__name__ in _INSTALLED:
            continue
        cls = http.AsyncHTTPTransport
        cls.handle_async_request = _routed(cls.handle_async_request)
        _INSTALLED.add(http.__name__)


def _routed(original: Callable[[Any, Any], Awaitable[Any]]) -> Callable[[Any, Any], Awaitable[Any]]:
    async def handle_async_request(self: Any, request: Any) -> Any:
        route = ROUTE.get()
        if route is None:
            return await original(self, request)
        host = request.url.host
        if host != HOST and host != os.environ.get("KUBERNETES_SERVICE_HOST", HOST):
            raise OutsideTheCluster(
                f"{request.method} {request.url} goes to a host other than the cluster's apiserver ({HOST}); under "
                "the world only the apiserver exists. Serve what the operator calls from the scenario, or let the "
                "operator skip the call when it runs under the harness")
        loop = running_world_loop()
        if loop is not None:  # an operator on asyncio (anyio.run's default backend): the request is Trio code
            return await loop.run_trio(lambda: route.handle_async_request(request))
        return await route.handle_async_request(request)

    handle_async_request.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_async_request


#: client libraries that read ``KUBECONFIG`` once, when imported, into a module constant ``load_kube_config`` reads
_KUBECONFIG_READERS = ("kubernetes.config.kube_config", "kubernetes_asyncio.config.kube_config")


def point_clients_at(path: str) -> Callable[[], None]:
    """Make the kubeconfig default of client libraries imported before the run ``path``; returns the undo.

    The official client (and ``kubernetes_asyncio``) read ``KUBECONFIG`` into
    ``KUBE_CONFIG_DEFAULT_LOCATION`` at import, so an operator whose process
    imported them before the run started would read another kubeconfig than
    the environment names, which a fresh process would not.
    """
    import sys

    saved: list[tuple[Any, Any]] = []
    for name in _KUBECONFIG_READERS:
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "KUBE_CONFIG_DEFAULT_LOCATION"):
            saved.append((module, module.KUBE_CONFIG_DEFAULT_LOCATION))
            module.KUBE_CONFIG_DEFAULT_LOCATION = path  # type: ignore[attr-defined]

    def undo() -> None:
        for module, value in saved:
            module.KUBE_CONFIG_DEFAULT_LOCATION = value

    return undo


def skip_system_certificates() -> Callable[[], None]:
    """While a run lasts, an SSL context skips loading the system's CA certificates; returns the undo.

    Under the world no TLS handshake ever happens (the apiserver is reached in
    process, any other host is refused), and ``ssl.create_default_context``
    reads the system's CA bundle each time (about 20 ms): kopf and
    ``kubernetes_asyncio`` build several contexts per run, which made that
    reading most of a kopf run's cost (``bench/bench_kopf.py``).
    """
    import ssl

    original = ssl.SSLContext.load_default_certs

    def load_default_certs(self: ssl.SSLContext, purpose: Any = ssl.Purpose.SERVER_AUTH) -> None:
        return None

    ssl.SSLContext.load_default_certs = load_default_certs  # type: ignore[method-assign]

    def undo() -> None:
        ssl.SSLContext.load_default_certs = original  # type: ignore[method-assign]

    return undo
