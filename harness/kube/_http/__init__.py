"""The Kubernetes HTTP API over :class:`~harness.kube.APIServer`: what a real client (lightkube, kubectl) talks to.

One handler, :class:`APIHandler`, maps REST paths, verbs, query parameters,
patch types and ``Status`` error bodies onto the simulated apiserver, following
``k8s.io/apiserver/pkg/endpoints``: ``handlers/get.go`` (get, list, watch),
``handlers/create.go``, ``handlers/update.go``, ``handlers/patch.go``,
``handlers/delete.go``, ``handlers/watch.go`` (the JSON watch stream), and
``discovery`` (``/api``, ``/apis``, ``/api/v1``, ``/apis/{group}/{version}``).
It is served two ways: :class:`Transport`, an httpx transport that runs a client
inside a world (``api.transport(client="op")``), and :class:`TCPServer`, the
protocol side of ``python -m harness serve`` (a loopback TCP port on the real clock).

Every request reaches the apiserver through its public verbs, so an HTTP
client's GET is the same single yield point as a model's ``api.get`` and a
write is the same request point (commit) and response point (where an
ambiguous write loses the response) with the same labels ("create ConfigMap
default/x", "response create ConfigMap default/x"). A PATCH is the apiserver's
update-with-a-transform (:meth:`APIServer._rewrite`, ``rest.UpdatedObjectInfo``).

A watch connection (:class:`_Watch`) is the server end of an informer's watch
(``_informer.py``): the events the server commits are in flight at once, in
revision order, each delivered (written to the connection) as a scheduled step
of the stream's own actor ``"<client>/watch/<Kind>"`` inside
``[commit + latency, commit + latency + max_lag]``, and each carries the
informer's own reception fault points (:func:`~harness.kube._delivery.watch_break`):
``watch_end`` closes the stream cleanly before the event is sent (a client
re-watches from the last revision it read), ``watch_drop`` breaks the
connection (the client's read raises ``httpx.ReadError``). A watch from a
compacted revision (the ``compaction`` fault at a watch request with a
``resourceVersion``) is answered, as the watch cache answers it, with HTTP 200
and one ``ERROR`` event carrying a 410 ``Expired`` Status. A LIST or a watch at
``resourceVersion=0`` may be served by a lagging watch cache (``stale_read``).
The client reads what was delivered in its own step, so "the bytes arrived" and
"the client acted on them" are two points, as they are for a real process.

Objects: a body's every top-level field round-trips: ``metadata``, ``spec`` and
``status`` map onto :class:`KubeObject`, every other field (``data``, ``type``,
``rules``...) and the metadata fields it has no slot for (``generateName``) are
kept in ``KubeObject.extra``. Lists are served in etcd's key order (namespace,
then name). Rejected: storing bodies as raw JSON beside the model's objects,
which would give models and HTTP clients two views of one object.

Modules: ``_resources.py`` (what is served, discovery, CRDs, paths),
``_selectors.py`` (label and field selectors), ``_codec.py`` (JSON bodies),
``_protobuf.py`` (the protobuf bodies Go clients and kubectl send for built-in kinds, read into
JSON with the field table ``protobuf_fields.json``),
``_patches.py`` (the three patch formats), ``_status.py`` (errors as
``Status``), ``_handler.py`` (the REST handler every transport calls),
``_watch.py`` (watch streams), ``_httpx.py`` (the httpx transport in a world),
``_tcp.py`` (HTTP/1.1 over a socket). The apiserver knows nothing of them:
importing this package makes it the maker of ``APIServer.transport()``.
"""

from __future__ import annotations

from .._apiserver import serve_transports
from ._codec import APPLY_PATCH as APPLY_PATCH
from ._codec import JSON as JSON
from ._codec import JSON_PATCH as JSON_PATCH
from ._codec import MERGE_PATCH as MERGE_PATCH
from ._codec import STRATEGIC_MERGE_PATCH as STRATEGIC_MERGE_PATCH
from ._codec import Codec as Codec
from ._codec import owner_reference as owner_reference
from ._handler import APIHandler as APIHandler
from ._handler import Reply as Reply
from ._httpx import Transport as Transport
from ._patches import json_merge_patch as json_merge_patch
from ._patches import json_patch as json_patch
from ._patches import strategic_merge_patch as strategic_merge_patch
from ._resources import BUILTIN_RESOURCES as BUILTIN_RESOURCES
from ._resources import CRD_KIND as CRD_KIND
from ._resources import Resource as Resource
from ._resources import crd_resources as crd_resources
from ._selectors import Requirement as Requirement
from ._selectors import parse_field_selector as parse_field_selector
from ._selectors import parse_label_selector as parse_label_selector
from ._selectors import selects as selects
from ._status import BadRequest as BadRequest
from ._status import MethodNotSupported as MethodNotSupported
from ._status import UnsupportedMediaType as UnsupportedMediaType
from ._status import status_body as status_body
from ._tcp import TCPServer as TCPServer
from ._watch import WatchOptions as WatchOptions

# ``APIServer.transport()`` makes this package's transports: installed here, on import (``harness.kube`` imports
# this package), so the apiserver imports nothing of HTTP
serve_transports(Transport)
