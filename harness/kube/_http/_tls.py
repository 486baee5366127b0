"""TLS as kube-apiserver serves it: a throwaway CA, a serving certificate for the loopback, and the CA in the kubeconfig.

kube-apiserver serves HTTPS, and the kubeconfig a cluster hands out carries the
cluster's CA as ``certificate-authority-data``. Clients count on that: the
official JavaScript client (``@kubernetes/client-node`` 1.x) sends nothing to
an ``http://`` server unless the kubeconfig also says
``insecure-skip-tls-verify`` ("HTTP protocol is not allowed when skipTLSVerify
is not set or false"). So the served API (``serve``, an
:class:`~harness.operators.ExternalOperator`'s port) speaks TLS by default, with a
CA of its own and a certificate for ``127.0.0.1`` (an IP SAN: the kubeconfig's
server is the address) and ``localhost`` (a DNS SAN).

Both are made once per process (:func:`serving_cert`) and reused by every
served port of it: a hunt starts thousands of operator processes, and each
port's kubeconfig says the same CA. Measured on 2 shared cores: making the CA,
the certificate (ECDSA P-256 keys, ``trustme``'s default) and the context,
7-40 ms; importing ``trustme`` and ``cryptography``, 0.07-0.37 s, paid once
and only where TLS is served. The certificate's bytes are the process's own
(random serials and keys): nothing of them enters a trace, a note or a digest,
which name no port, path or pid either.

The server's ALPN offers ``http/1.1`` alone: the TCP server speaks HTTP/1.1 (h11),
and a client that offers ``h2`` first (client-go, so kubectl and every Go
controller) falls back to it, as it does with any server without HTTP/2.

Rejected: a certificate per port or per run (the same cost thousands of times
over, for nothing a client could tell apart); writing the CA with
``cryptography``'s builders by hand (``trustme`` is that code, kept by the
people who keep Trio, and made for throwaway CAs in tests); a fixed CA shipped
in the package (its key would be public, and every served API on every machine
would trust every other).
"""

from __future__ import annotations

import base64
import functools
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import trio

#: the names the serving certificate is valid for: the kubeconfig's server is the first
SERVING_NAMES = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class ServingCert:
    """The process's CA (PEM, for kubeconfigs) and the server-side ``ssl.SSLContext`` holding its serving certificate."""

    ca_pem: bytes
    context: ssl.SSLContext

    @property
    def ca_data(self) -> str:
        """The CA as a kubeconfig's ``certificate-authority-data``: the PEM, base64-encoded."""
        return base64.b64encode(self.ca_pem).decode("ascii")


@functools.cache
def serving_cert() -> ServingCert:
    """The process's CA and serving certificate, made on first use (see the module for why once)."""
    try:
        import trustme
    except ImportError:
        raise ImportError(
            "serving the Kubernetes API over TLS needs the trustme package (a race-harness dependency): "
            "pip install trustme; or serve plain HTTP (serve --insecure-http, ExternalOperator(..., tls=False)) "
            "for clients that accept it") from None
    ca = trustme.CA(organization_name="race-harness")
    leaf = ca.issue_cert(*SERVING_NAMES, common_name="kube-apiserver")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    leaf.configure_cert(context)
    context.set_alpn_protocols(["http/1.1"])
    return ServingCert(ca.cert_pem.bytes(), context)


def tls_listeners(listeners: Sequence[trio.abc.Listener[Any]]) -> list[trio.SSLListener[Any]]:
    """Each listener's connections wrapped in TLS with the process's serving certificate.

    ``https_compatible``: an HTTPS client closes its connection without TLS's close_notify (and expects none), as
    kube-apiserver's Go server does; the spec-compliant default would wait for one on close and call its absence
    an error."""
    import trio

    context = serving_cert().context
    return [trio.SSLListener(listener, context, https_compatible=True) for listener in listeners]
