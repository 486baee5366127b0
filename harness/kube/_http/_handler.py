"""The REST handler: one request (method, path, headers, body) to one :class:`Reply`, over an apiserver.

:class:`APIHandler` is what every transport calls, the in-world httpx
transport (``_httpx.py``) and the TCP server (``_tcp.py``) alike. It maps REST
paths, verbs, query parameters, patch types and ``Status`` error bodies onto
the simulated apiserver's public verbs, following ``k8s.io/apiserver/pkg/endpoints``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from ...sim import EPOCH
from .._apiserver import APIServer
from .._errors import ApiError, Conflict, Invalid, NotFound
from .._objects import KubeObject, copy_json
from ._apply import apply, parse_apply, track_update
from ._codec import (
    APPLY_PATCH,
    JSON,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    Codec,
    _continue_token,
    _dumps,
    _make_continue,
    _parse,
)
from ._discovery import AGGREGATED_V2, aggregated, wants_aggregated
from ._dryrun import DRY_RUN_ALL, DryRun
from ._limits import check_body_size, check_data_size, query_int
from ._names import validate_name
from ._openapi import document as openapi_document
from ._patches import json_merge_patch, json_patch, strategic_merge_patch
from ._protobuf import PROTOBUF, decode_protobuf
from ._resources import (
    BUILTIN_RESOURCES,
    CRD_KIND,
    REVIEW_RESOURCES,
    Resource,
    _accept_crd,
    _Path,
    _split,
    crd_resources,
)
from ._scale import scale_discovery, serve_scale
from ._schema import conform, version_schema
from ._selectors import _fields_match, parse_field_selector, parse_label_selector, selects
from ._status import BadRequest, MethodNotSupported, NotAcceptable, UnsupportedMediaType, status_body
from ._table import as_table, wants_table
from ._watch import WatchOptions, _Watch
from ._webhooks import GROUP as ADMISSION_GROUP
from ._webhooks import MUTATING, VALIDATING, Attributes, admit, configured, default_configuration, validate_configuration

if TYPE_CHECKING:
    from harness.sim import World

#: The built-in kinds whose registry sets ``ReturnDeletedObject: true`` (``pkg/registry/core/*/storage/storage.go``):
#: a DELETE that removes one answers with the object; the others answer with a Success Status. Custom resources
#: (``apiextensions-apiserver/pkg/registry/customresource/etcd.go``) set it too.
RETURNS_DELETED_OBJECT = frozenset({"Pod", "Service", "Namespace", "PersistentVolume", "PersistentVolumeClaim",
                                    "ServiceAccount"})
#: ``handlers/patch.go`` ``maxRetryWhenPatchConflicts``: how often a patch is computed and admitted again when the
#: object changed while its webhooks were called, before the answer is a 409
MAX_PATCH_RETRIES = 5


class _Changed(Exception):
    """The object changed between its admission and the commit: admit the write again (``GuaranteedUpdate``)."""

# ------------------------------------------------------------------------------------------- replies
@dataclass
class Reply:
    """An HTTP answer: a status code and a JSON document (or, for a watch, the stream)."""

    code: int
    doc: Any = None
    watch: _Watch | None = None
    #: the response's Content-Type (aggregated discovery names its own type, ``_discovery.py``)
    content_type: str = JSON

    def body(self) -> bytes:
        return _dumps(self.doc) if self.doc is not None else b""

# ------------------------------------------------------------------------------------------- handler
class APIHandler:
    """The REST API of one :class:`APIServer`: call :meth:`handle` with a request, get a :class:`Reply`.

    ``epoch`` is the Unix time virtual time 0 stands for in timestamps (in a
    world :data:`~harness.sim.EPOCH`, the instant an in-process operator's
    clocks count from too, so runs print the same and an object's age is the
    one its operator computes; ``serve`` passes the real start time).
    """

    def __init__(self, api: APIServer, *, epoch: float = EPOCH) -> None:
        self.api = api
        self.world: World = api._world
        self.codec = Codec(self._kind_api_version, epoch)
        self._builtin = {(r.group, r.plural): r for r in (*BUILTIN_RESOURCES, *REVIEW_RESOURCES)}
        self._builtin_kinds: dict[str, Resource] = {}
        for r in BUILTIN_RESOURCES:  # a kind served by two groups (Event) is its first's: core/v1's
            self._builtin_kinds.setdefault(r.kind, r)
        #: requests by client name: an operator that made none in a run never reached the API, and its run is no
        #: result (``harness.operators._operator``)
        self.requests: Counter[str] = Counter()
        #: admission webhook calls so far (each review's uid counts them: ``_webhooks.py``)
        self.admission_calls = 0

    # ----------------------------------------------------------------- resources
    def resources(self) -> list[Resource]:
        """Every resource served now: the built-ins, then each CRD's, in CRD creation order."""
        out = [*BUILTIN_RESOURCES, *REVIEW_RESOURCES]
        for crd in self.api._store.get(CRD_KIND, {}).values():
            if crd.deletion_timestamp is None:
                out.extend(crd_resources(crd))
        return out

    def _resolve(self, group: str, version: str, plural: str) -> Resource | None:
        res = self._builtin.get((group, plural))
        if res is not None:
            return res if res.version == version else None
        for crd in self.api._store.get(CRD_KIND, {}).values():
            if crd.spec.get("group") == group and crd.deletion_timestamp is None:
                for r in crd_resources(crd):
                    if r.plural == plural and r.version == version:
                        return r
        return None

    def resource_of(self, kind: str) -> Resource | None:
        """The resource serving ``kind`` (its first served version), or None."""
        res = self._builtin_kinds.get(kind)
        if res is not None:
            return res
        return next((r for r in self.resources() if r.kind == kind), None)

    def _kind_api_version(self, kind: str) -> str:
        res = self.resource_of(kind)
        return res.api_version if res is not None else "v1"

    # ------------------------------------------------------------------ requests
    async def handle(self, method: str, target: str, headers: dict[str, str], body: bytes, client: str,
                     options: WatchOptions | None = None) -> Reply:
        """One HTTP request (``target`` is the path and query); errors come back as ``Status`` replies.

        ``client`` names the caller's watch streams ("<client>/watch/<Kind>"); ``options`` are their lag window
        and fault flags."""
        self.requests[client] += 1
        url = urlsplit(target)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        if url.path.startswith("/openapi/"):
            return self._openapi(method, url.path, headers.get("accept", ""))
        where = _split(url.path)
        if isinstance(where, str):
            return self._discovery(method, where, headers.get("accept", ""))
        return await self._resource(method, where, query, headers, body, client, options)

    def document(self, target: str, headers: dict[str, str], client: str) -> Reply:
        """The discovery or OpenAPI document a GET of ``target`` asks for (:func:`is_document`), as :meth:`handle`
        answers it: a function of the kinds served (the built-in ones and the established CRDs) alone, computed
        without a step of the world."""
        method = "GET"
        path = urlsplit(target).path
        self.requests[client] += 1
        if path.startswith("/openapi/"):
            return self._openapi(method, path, headers.get("accept", ""))
        where = _split(path)
        assert isinstance(where, str)
        return self._discovery(method, where, headers.get("accept", ""))

    async def _resource(self, method: str, where: _Path, query: dict[str, str], headers: dict[str, str],
                        body: bytes, client: str, options: WatchOptions | None) -> Reply:
        res = self._resolve(where.group, where.version, where.plural)
        if res is None:
            return Reply(404, status_body(NotFound("the server could not find the requested resource")))
        where.query = query
        where.agent = headers.get("user-agent", "")
        try:
            reply = await self._serve(method.upper(), res, where, headers, body, client, options or WatchOptions())
            if method.upper() == "GET" and reply.watch is None and not where.subresource and wants_table(headers):
                return Reply(200, as_table(self, res, reply.doc, query))  # kubectl get's columns (_table.py)
            return reply
        except ApiError as err:
            return Reply(err.code, status_body(err, res, where.name))

    async def _serve(self, method: str, res: Resource, p: _Path, headers: dict[str, str], body: bytes,
                     client: str, options: WatchOptions) -> Reply:
        if res.namespaced is False and p.namespace:
            raise NotFound("the server could not find the requested resource")
        if p.subresource and not (p.subresource == "status" and res.status) and p.subresource != "scale":
            raise NotFound("the server could not find the requested resource")
        q = p.query
        if method in ("POST", "PUT", "PATCH", "DELETE"):
            check_body_size(body)  # limitedReadBody's 413, before the body is read as anything (_limits.py)
        if method in ("POST", "PUT", "DELETE") and body.strip():
            expected = "DeleteOptions" if method == "DELETE" else "Scale" if p.subresource == "scale" else res.kind
            body = _json_body(headers, body, res, expected)
        if res.review:
            return self._review(method, res, p, body)
        if method in ("POST", "PUT", "PATCH"):
            p.dry = _dry_run(q.get("dryRun"), {"POST": "CreateOptions", "PUT": "UpdateOptions",
                                               "PATCH": "PatchOptions"}[method])
        if p.subresource == "scale":  # the scale subresource (_scale.py)
            ctype = headers.get("content-type", "").split(";")[0].strip()
            ns = p.namespace if res.namespaced else ""
            return Reply(*await serve_scale(self, method, res, p, ns, ctype, body))
        if not p.name:
            if method == "GET" and _query_bool(q, "watch"):
                return await self._watch(res, p, client, options)
            if method == "GET":
                return await self._list(res, p)
            if method == "POST":
                return await self._create(res, p, _parse(body))
            raise MethodNotSupported(f"the server does not allow this method on the requested resource ({method})")
        ns = p.namespace if res.namespaced else ""
        if method == "GET":
            return Reply(200, self.codec.encode(await self.api.get(res.kind, ns, p.name), res))
        if method == "PUT":
            return await self._update(res, p, ns, _parse(body))
        if method == "PATCH":
            ctype = headers.get("content-type", "").split(";")[0].strip()
            return await self._patch(res, p, ns, ctype, body)
        if method == "DELETE":
            return await self._delete(res, p, ns, _parse(body) if body.strip() else None)
        raise MethodNotSupported(f"the server does not allow this method on the requested resource ({method})")

    def _review(self, method: str, res: Resource, p: _Path, body: bytes) -> Reply:
        """A self-subject review, answered at once and stored nowhere (``selfsubjectaccessreview/rest.go``'s
        ``Create``): this apiserver authorizes everything, so a review says allowed."""
        if method != "POST" or p.name:
            raise MethodNotSupported(f"the server does not allow this method on the requested resource ({method})")
        review = _parse(body)
        if not isinstance(review, dict):
            raise BadRequest("the body is not a JSON object")
        review.setdefault("apiVersion", res.api_version)
        review.setdefault("kind", res.kind)
        review.setdefault("metadata", {})["creationTimestamp"] = None
        if res.kind == "SelfSubjectAccessReview":
            review["status"] = {"allowed": True, "reason": "race-harness serves without authorization"}
        else:
            review["status"] = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                                "incomplete": False}
        return Reply(201, review)

    def _discovery(self, method: str, where: str, accept: str) -> Reply:
        """``discovery.APIVersionHandler``/``APIGroupHandler``: what kubectl reads before anything else; ``/api`` and
        ``/apis`` as aggregated discovery when the client accepts it (``_discovery.py``)."""
        if method.upper() != "GET":
            return Reply(405, status_body(MethodNotSupported("the server does not allow this method")))
        served = self.resources()
        groups: dict[str, list[str]] = {}
        for r in served:
            if r.group and r.version not in groups.setdefault(r.group, []):
                groups[r.group].append(r.version)
        if where in ("api", "apis") and wants_aggregated(accept):
            gvs = [("", "v1")] if where == "api" else [(g, v) for g, vs in groups.items() for v in vs]
            legacy = [(g, v, [d for r in served if r.group == g and r.version == v
                              for d in (*r.discovery(), *scale_discovery(self, r))]) for g, v in gvs]
            return Reply(200, aggregated(legacy), content_type=AGGREGATED_V2)

        def group(name: str) -> dict[str, Any]:
            versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in groups[name]]
            return {"name": name, "versions": versions, "preferredVersion": versions[0]}

        if where == "api":
            return Reply(200, {"kind": "APIVersions", "versions": ["v1"],
                               "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
        if where == "apis":
            return Reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group(g) for g in groups]})
        if where.startswith("group:") and where[6:] in groups:
            return Reply(200, {"kind": "APIGroup", "apiVersion": "v1", **group(where[6:])})
        if where.startswith("resources:"):
            gv = where.split(":", 1)[1]
            g, v = gv.split("/", 1)
            listed = [d for r in served if r.group == g and r.version == v
                      for d in (*r.discovery(), *scale_discovery(self, r))]
            if listed:
                return Reply(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                   "groupVersion": f"{g}/{v}" if g else v, "resources": listed})
        if where == "version":
            return Reply(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-race-harness",
                               "platform": "linux/amd64"})
        if where == "root":
            return Reply(200, {"paths": ["/api", "/api/v1", "/apis", "/version",
                                         *(f"/apis/{g}/{v}" for g, vs in groups.items() for v in vs)]})
        return Reply(404, status_body(NotFound("the server could not find the requested resource")))

    def _openapi(self, method: str, path: str, accept: str) -> Reply:
        """``/openapi/v2`` and ``/openapi/v3[/<group-version>]`` (``_openapi.py``): upstream's built-in schemas and
        each CRD version's, for kubectl's validation and ``explain``. JSON only: a request that accepts nothing
        else (kubectl asks v2 as protobuf) is 406, as kube-openapi's handler answers a type it cannot serve."""
        if method.upper() != "GET":
            return Reply(405, status_body(MethodNotSupported("the server does not allow this method")))
        if accept and "json" not in accept and "*/*" not in accept:
            return Reply(406, status_body(NotAcceptable("only application/json is served for OpenAPI documents")))
        served = self.resources()
        crd_schemas: dict[Resource, dict[str, Any] | None] = {}
        for crd in self.api._store.get(CRD_KIND, {}).values():
            if crd.deletion_timestamp is None:
                for r in crd_resources(crd):
                    crd_schemas[r] = version_schema(crd.spec, r.version)
        doc = openapi_document(path.rstrip("/"), served, crd_schemas)
        if doc is None:
            return Reply(404, status_body(NotFound("the server could not find the requested resource")))
        return Reply(200, doc)

    # ------------------------------------------------------------------ verbs
    async def _list(self, res: Resource, p: _Path) -> Reply:
        """``handlers/get.go`` ListResource: selectors, resourceVersion semantics, limit/continue (key order)."""
        q = p.query
        labels = parse_label_selector(q.get("labelSelector", ""))
        fields = parse_field_selector(q.get("fieldSelector", ""), res.kind)
        query_int(q, "timeoutSeconds")  # read by ListOptions for a list too: a value Go cannot parse is a 400
        limit = max(query_int(q, "limit") or 0, 0)  # 0 or below: no limit
        rv, match = q.get("resourceVersion", ""), q.get("resourceVersionMatch", "")
        if rv and not rv.isdigit():
            raise BadRequest(f'invalid resource version "{rv}"')
        if "sendInitialEvents" in q:
            raise Invalid('ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is '
                          "forbidden for list")
        at: int | None = None
        start = ""
        if q.get("continue"):
            at, start = _continue_token(q["continue"])
        elif match == "Exact" and rv:
            at = int(rv)
        namespace = p.namespace if res.namespaced and p.namespace else None
        objects = await self.api.list(res.kind, namespace, resource_version=rv if at is None else "", at=at)
        served_rv = at if at is not None else self.api.listed_rv
        items = sorted((o for o in objects if selects(labels, o.labels) and _fields_match(fields, o)),
                       key=lambda o: (o.namespace, o.name))
        if start:
            items = [o for o in items if f"{o.namespace}/{o.name}" > start]
        meta: dict[str, Any] = {"resourceVersion": str(served_rv)}
        if limit and len(items) > limit:
            last = items[limit - 1]
            meta["continue"] = _make_continue(served_rv, f"{last.namespace}/{last.name}")
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return Reply(200, {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta,
                           "items": [self.codec.encode(o, res) for o in items]})

    async def _create(self, res: Resource, p: _Path, doc: Any) -> Reply:
        """``handlers/create.go``: 201 with the object; ``generateName`` names it when ``name`` is empty."""
        obj = self.codec.decode(self._conform(res, doc, p), res, p.namespace)
        self._manage(res, p, None, doc, obj)
        generate = str((obj.extra.get("metadata") or {}).get("generateName") or "")
        if not obj.name and not generate:
            raise Invalid(f'{res.kind} "" is invalid: metadata.name: Required value: name or generateName is '
                          "required")
        if res.namespaced and not obj.namespace:
            raise BadRequest("the namespace of the object is not set and the request names none")
        validate_name(res, obj.name, generate)  # ValidateObjectMeta's name checks (_names.py)
        obj.uid, obj.resource_version = "", 0  # server-owned: a create ignores what the client sent
        if configured(self.api):
            obj = await self._admitted("CREATE", res, p, obj, None, self._options("CreateOptions", p))
        if res.kind == CRD_KIND:
            _accept_crd(obj)
        if p.dry:
            doc = self.codec.encode(DryRun(self.api).create(obj, generate), res)
            del doc["metadata"]["resourceVersion"]  # DryRunnableStorage.Create stores nothing: no revision
            return Reply(201, doc)
        out = await self.api.create(obj, generate_name=generate)
        return Reply(201, self.codec.encode(out, res))

    async def _update(self, res: Resource, p: _Path, ns: str, doc: Any) -> Reply:
        """``handlers/update.go``: the body's resourceVersion is the precondition (409 Conflict when stale)."""
        obj = self.codec.decode(self._conform(res, doc, p), res, ns)
        live = self.api.peek(res.kind, ns, p.name)
        self._manage(res, p, None if live is None else self.codec.encode(live, res), doc, obj)
        if obj.name != p.name:
            raise BadRequest(f"the name of the object ({obj.name}) does not match the name on the URL ({p.name})")
        if configured(self.api) and live is not None:
            obj = await self._admitted("UPDATE", res, p, obj, live, self._options("UpdateOptions", p))
        if p.dry:
            status_only = p.subresource == "status"
            out = DryRun(self.api).rewrite("update_status" if status_only else "update", res.kind, ns, p.name,
                                           lambda _cur: obj, status_only=status_only,
                                           keep_status=status_only or res.status,
                                           no_new_finalizers=not status_only and res.status)
        elif p.subresource == "status":
            out = await self.api.update_status(obj)
        elif res.status:
            out = await self.api.update(obj)
        else:  # no status subresource: the main resource writes status too
            out = await self.api._rewrite("update", res.kind, ns, p.name, lambda _cur: obj, keep_status=False)
        return Reply(200, self.codec.encode(out, res))

    async def _patch(self, res: Resource, p: _Path, ns: str, ctype: str, body: bytes) -> Reply:
        """``handlers/patch.go``: the patch is applied to the object read at the commit (never a lost update)."""
        if ctype == APPLY_PATCH:
            return await self._apply(res, p, ns, body)
        accepted = [JSON_PATCH, MERGE_PATCH] + ([STRATEGIC_MERGE_PATCH] if res.builtin else [])
        if ctype not in accepted:
            raise UnsupportedMediaType.of(accepted)
        patch = _parse(body)
        apply: Callable[[Any, Any], Any] = {JSON_PATCH: json_patch, MERGE_PATCH: json_merge_patch,
                                            STRATEGIC_MERGE_PATCH: strategic_merge_patch}[ctype]
        status_only = p.subresource == "status"

        def build(cur: KubeObject) -> KubeObject:
            doc = self.codec.encode(cur, res)
            patched = apply(doc, patch)
            new = self.codec.decode(self._conform(res, patched, p), res, ns)
            self._manage(res, p, doc, patched, new)
            if new.name != cur.name:
                raise BadRequest(f"the name of the object ({new.name}) does not match the name on the URL ({cur.name})")
            if not new.resource_version:  # a patch that does not name a revision is unconditional
                new.resource_version = cur.resource_version
            return new

        verb = "patch_status" if status_only else "patch"
        if configured(self.api):
            admitted = await self._rewrite_admitted(verb, res, p, ns, build, self._options("PatchOptions", p))
            if admitted is not None:
                return admitted
        if p.dry:
            out = DryRun(self.api).rewrite(verb, res.kind, ns, p.name, build, status_only=status_only,
                                           keep_status=res.status)
            return Reply(200, self.codec.encode(out, res))
        out = await self.api._rewrite(verb, res.kind, ns, p.name, build, status_only=status_only,
                                      keep_status=res.status)
        return Reply(200, self.codec.encode(out, res))

    # ------------------------------------------------------------------ field ownership (_apply.py)
    def _manage(self, res: Resource, p: _Path, old: dict[str, Any] | None, new_doc: Any, obj: KubeObject) -> None:
        """An Update's ``managedFields`` on ``obj``: its ``fieldManager`` (or, as upstream defaults it, the client's
        User-Agent up to the first ``/``) owns what it changed (``fieldmanager.FieldManager.UpdateNoErrors``)."""
        if not isinstance(new_doc, dict):
            return
        manager = p.query.get("fieldManager") or p.agent.split("/")[0] or "unknown"
        managers = track_update(old, new_doc, manager, res.api_version, self.codec.timestamp(self.world.now))
        meta = obj.extra.setdefault("metadata", {})
        if managers:
            meta["managedFields"] = managers

    async def _apply(self, res: Resource, p: _Path, ns: str, body: bytes) -> Reply:
        """Server-side apply (``handlers/patch.go`` ``applyPatcher``): the body, YAML or JSON, is the manager's whole
        intent; ``fieldManager`` is required; the object is created when it does not exist."""
        manager = p.query.get("fieldManager", "")
        if not manager:
            raise Invalid('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for '
                          "apply patch")
        cfg = parse_apply(body)
        force, time = _query_bool(p.query, "force"), self.codec.timestamp(self.world.now)

        def build(cur: KubeObject | None) -> KubeObject:
            merged, managers = apply(None if cur is None else self.codec.encode(cur, res), cfg, manager,
                                     res.api_version, time, force)
            merged.setdefault("metadata", {}).update({"name": p.name} if cur is None else {})
            new = self.codec.decode(self._conform(res, merged, p), res, ns)
            if new.name != p.name:
                raise BadRequest(f"the name of the object ({new.name}) does not match the name on the URL ({p.name})")
            if cur is not None:
                new.resource_version = cur.resource_version
            new.extra.setdefault("metadata", {})["managedFields"] = managers
            return new

        status_only = p.subresource == "status"  # an apply to /status writes status alone, as a status patch
        if self.api.peek(res.kind, ns, p.name) is None and not status_only:  # apply creates (createOnApply)
            obj = build(None)
            obj.uid, obj.resource_version = "", 0
            if configured(self.api):  # an apply that creates is admitted as a create (``createOnApply``)
                obj = await self._admitted("CREATE", res, p, obj, None, self._options("CreateOptions", p))
            if p.dry:
                doc = self.codec.encode(DryRun(self.api).create(obj, ""), res)
                del doc["metadata"]["resourceVersion"]
                return Reply(201, doc)
            return Reply(201, self.codec.encode(await self.api.create(obj), res))
        verb = "patch_status" if status_only else "patch"
        if configured(self.api):
            options = {**self._options("PatchOptions", p), **({"force": True} if force else {})}
            admitted = await self._rewrite_admitted(verb, res, p, ns, build, options)
            if admitted is not None:
                return admitted
        out = await self._rewrite(p, verb, res, ns, build, status_only)
        return Reply(200, self.codec.encode(out, res))

    async def _delete(self, res: Resource, p: _Path, ns: str, doc: Any) -> Reply:
        """``handlers/delete.go``: DeleteOptions (preconditions, propagationPolicy, gracePeriodSeconds).

        The object while it is still there (finalizers, a grace period): 200,
        or 202 when the request set ``orphanDependents: false``, the one case
        ``delete.go`` answers Accepted. Once gone: the object where the kind's
        registry sets ``ReturnDeletedObject`` (:data:`RETURNS_DELETED_OBJECT`),
        else a Success Status naming it (``store.go`` ``finalizeDelete``).

        ``doc`` is None when the request has no body: then the query is the DeleteOptions, and an integer there Go
        cannot parse is a 400 (``delete.go`` decodes the query only then).
        """
        sent = doc is not None
        doc = doc if sent else {}
        if not isinstance(doc, dict):
            raise BadRequest("DeleteOptions must be a JSON object")
        q = p.query
        pre = doc.get("preconditions") or {}
        uid = pre.get("uid") or None
        rv = pre.get("resourceVersion") or None
        if rv is not None and not str(rv).isdigit():
            raise BadRequest(f"invalid precondition resourceVersion {rv!r}")
        policy = doc.get("propagationPolicy") or q.get("propagationPolicy") or None
        orphan = doc.get("orphanDependents", q.get("orphanDependents"))
        if policy is None and orphan is not None:
            policy = "Orphan" if orphan in (True, "true") else "Background"
        grace = doc.get("gracePeriodSeconds")
        if grace is None:
            try:
                grace = query_int(q, "gracePeriodSeconds")
            except BadRequest:
                if not sent:
                    raise
        elif not isinstance(grace, int) or isinstance(grace, bool):  # the JSON decoder's 400
            raise BadRequest(f"json: cannot unmarshal {_json_type(grace)} into Go struct field "
                             "DeleteOptions.gracePeriodSeconds of type int64")
        if policy not in (None, "Background", "Foreground", "Orphan"):
            raise Invalid(f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                          f'"{policy}": supported values: "Foreground", "Background", "Orphan", "nil"')
        dry = doc.get("dryRun")
        if dry is None and "dryRun" in q:
            dry = [q["dryRun"]]
        dry_run = _dry_run(dry, "DeleteOptions")
        options: dict[str, Any] = {"uid": uid, "resource_version": None if rv is None else int(rv),
                                   "propagation": policy, "grace_period_seconds": grace}
        live = self.api._store.get(res.kind, {}).get(f"{ns}/{p.name}" if ns else p.name)
        if configured(self.api) and live is not None:
            review_options: dict[str, Any] = {
                "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                **{k: copy_json(v) for k, v in doc.items() if k not in ("kind", "apiVersion")}}
            if dry_run:
                review_options["dryRun"] = [DRY_RUN_ALL]
            p.dry = dry_run
            await self._admitted("DELETE", res, p, None, live, review_options)
        if dry_run:
            out, still_there = DryRun(self.api).delete(res.kind, ns, p.name, **options)
        else:
            out = await self.api.delete(res.kind, ns, p.name, **options)
            still = self.api._store.get(res.kind, {}).get(out.key)
            still_there = still is not None and still.uid == out.uid
        if still_there:
            accepted = orphan is not None and orphan in (False, "false")
            return Reply(202 if accepted else 200, self.codec.encode(out, res))
        if res.kind in RETURNS_DELETED_OBJECT or not res.builtin:
            return Reply(200, self.codec.encode(out, res))
        details: dict[str, Any] = {"name": p.name, "kind": res.plural, "uid": out.uid}
        if res.group:
            details = {"name": p.name, "group": res.group, "kind": res.plural, "uid": out.uid}
        return Reply(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "details": details})

    # ------------------------------------------------------------------ admission webhooks (_webhooks.py)
    def _options(self, kind: str, p: _Path) -> dict[str, Any]:
        """The request's ``*Options`` as a webhook's review carries them (``request.options``)."""
        out: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if p.dry:
            out["dryRun"] = [DRY_RUN_ALL]
        if p.query.get("fieldManager"):
            out["fieldManager"] = p.query["fieldManager"]
        return out

    def _count_admission(self) -> int:
        self.admission_calls += 1
        return self.admission_calls

    async def _admitted(self, operation: str, res: Resource, p: _Path, obj: KubeObject | None,
                        old: KubeObject | None, options: dict[str, Any]) -> KubeObject:
        """``obj`` as the admission webhooks admit it (patched by the mutating ones), after the NamespaceLifecycle
        admission (its refusal comes first, as kube-apiserver orders its plugins); raises a webhook's refusal."""
        some = obj if obj is not None else old
        assert some is not None
        ns = some.namespace if res.namespaced else ""
        DryRun(self.api)._admit(operation.lower(), res.kind, ns, some.name)
        a = Attributes(operation, res, p.subresource, some.name if res.kind == "Namespace" and not res.group else ns,
                       some.name, None if obj is None else self.codec.encode(obj, res),
                       None if old is None else self.codec.encode(old, res), options, p.dry)
        patched = await admit(self.api, a, self._count_admission)
        if obj is None or not a.patches:
            return some
        new = self.codec.decode(self._conform(res, patched, p), res, ns)
        new.uid, new.resource_version = obj.uid, obj.resource_version
        return new

    async def _rewrite(self, p: _Path, verb: str, res: Resource, ns: str, build: Any, status_only: bool) -> Any:
        """One read-modify-write of a patch or an apply: on a copy for a dry run, else in the store."""
        if p.dry:
            return DryRun(self.api).rewrite(verb, res.kind, ns, p.name, build, status_only=status_only,
                                            keep_status=res.status)
        return await self.api._rewrite(verb, res.kind, ns, p.name, build, status_only=status_only,
                                       keep_status=res.status)

    async def _rewrite_admitted(self, verb: str, res: Resource, p: _Path, ns: str,
                                build: Callable[[KubeObject], KubeObject], options: dict[str, Any]) -> Reply | None:
        """A patch or an apply of a stored object with webhooks configured: computed over the stored object,
        admitted, and committed only while the object is still the one admitted; when it changed meanwhile (an
        actor wrote it while the webhooks were called) it is computed and admitted again, as ``GuaranteedUpdate``
        runs the update function again, up to :data:`MAX_PATCH_RETRIES` times. None: the object is not there
        (the write's own path answers its 404)."""
        status_only = p.subresource == "status"
        for _ in range(MAX_PATCH_RETRIES):
            cur = self.api._store.get(res.kind, {}).get(f"{ns}/{p.name}" if ns else p.name)
            if cur is None:
                return None
            new = await self._admitted("UPDATE", res, p, build(cur.deepcopy()), cur, options)
            seen = cur.resource_version

            def admitted(now: KubeObject, new: KubeObject = new, seen: int = seen) -> KubeObject:
                if now.resource_version != seen:
                    raise _Changed
                return new.deepcopy()

            try:
                out = await self._rewrite(p, verb, res, ns, admitted, status_only)
            except _Changed:
                continue
            return Reply(200, self.codec.encode(out, res))
        raise Conflict.modified(res.kind, p.name)

    def _conform(self, res: Resource, doc: Any, p: _Path) -> Any:
        """A custom resource's body pruned, defaulted and validated by its CRD version's structural schema
        (``_schema.py``; ``fieldValidation=Strict`` makes a pruned field a 400); a built-in's body, or one whose
        CRD version has no schema, as it came (a ConfigMap's or a Secret's data checked for its size first)."""
        if res.builtin or not isinstance(doc, dict):
            check_data_size(res.kind, doc)  # ValidateConfigMap's and ValidateSecret's 1 MiB (_limits.py)
            if res.group == ADMISSION_GROUP and res.kind in (MUTATING, VALIDATING) and isinstance(doc, dict):
                doc = copy_json(doc)  # defaulted and validated as admissionregistration/v1's (_webhooks.py)
                default_configuration(res.kind, doc)
                validate_configuration(res.kind, doc)
            return doc
        crd = self.api._store.get(CRD_KIND, {}).get(f"{res.plural}.{res.group}")
        schema = version_schema(crd.spec, res.version) if crd is not None else None
        strict = p.query.get("fieldValidation") == "Strict"
        return doc if schema is None else conform(doc, schema, res.kind, res.group, strict, res.version)

    async def _watch(self, res: Resource, p: _Path, client: str, options: WatchOptions) -> Reply:
        """``handlers/watch.go`` over the watch cache: see :class:`_Watch`."""
        q = p.query
        labels = parse_label_selector(q.get("labelSelector", ""))
        fields = parse_field_selector(q.get("fieldSelector", ""), res.kind)
        rv = q.get("resourceVersion", "")
        if rv and not rv.isdigit():
            raise BadRequest(f'invalid resource version "{rv}"')
        timeout = query_int(q, "timeoutSeconds")  # ListOptions' integers: a value Go cannot parse is a 400
        query_int(q, "limit")
        initial = _query_bool(q, "sendInitialEvents") if "sendInitialEvents" in q else None
        _validate_watch_list(initial, q.get("resourceVersionMatch", ""))
        namespace = p.namespace if res.namespaced and p.namespace else None
        stream = _Watch(self, res, client, options, namespace, labels, fields,
                        bookmarks=_query_bool(q, "allowWatchBookmarks"),
                        timeout=float(timeout) if timeout is not None and timeout >= 0 else None,
                        initial_events=initial)
        await stream.open(rv)
        return Reply(200, watch=stream)

def _validate_watch_list(initial: bool | None, match: str) -> None:
    """A watch's ``sendInitialEvents`` and ``resourceVersionMatch`` checked as ``validateWatchOptions``
    (``apimachinery/pkg/apis/meta/internalversion/validation/validation.go``) checks them: 422 naming the field."""
    why = ""
    if initial is not None and match != "NotOlderThan":
        why = "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
    elif match and initial is None:
        why = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents " \
              "is provided"
    elif match and match != "NotOlderThan":
        why = f'resourceVersionMatch: Unsupported value: "{match}": supported values: "NotOlderThan"'
    if why:
        raise Invalid(f'ListOptions.meta.k8s.io "" is invalid: {why}')


def _dry_run(value: str | list[Any] | None, options_kind: str) -> bool:
    """``dryRun``: absent is a write, ``All`` a dry run; any other value is 422, as ``ValidateDryRun``
    (``apimachinery/pkg/apis/meta/v1/validation``) answers through the verb's ``*Options`` Invalid error."""
    if value is None:
        return False
    values = value if isinstance(value, list) else [value]
    if all(v == DRY_RUN_ALL for v in values):
        return bool(values)
    shown = ", ".join(f'"{v}"' for v in values)
    raise Invalid(f'{options_kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{{{shown}}}: '
                  f'supported values: "{DRY_RUN_ALL}"')


def _json_type(value: Any) -> str:
    """How ``encoding/json``'s ``UnmarshalTypeError`` names a JSON value of the wrong type."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _query_bool(query: dict[str, str], key: str) -> bool:
    """A boolean query parameter as ``runtime.Convert_Slice_string_To_bool`` reads it (not ``strconv.ParseBool``).

    Only an absent parameter, ``0`` and ``false`` (any case) are false; any
    other value, the empty one and ``f`` included, is true, so ``?watch=yes``
    starts a watch on kube-apiserver too and no value is a 400.
    """
    if key not in query:
        return False
    value = query[key]
    return not (value == "0" or value.lower() == "false")


def _json_body(headers: dict[str, str], body: bytes, res: Resource, kind: str) -> bytes:
    """The body as JSON: as sent, or read from protobuf; any other media type is 415
    (``negotiation.NewUnsupportedMediaTypeError``), not a 400.

    client-go's typed clients (and kubectl 1.32's ``create`` and ``auth can-i``)
    send protobuf for built-in kinds, and client-go falls back to JSON after a
    415 only for CBOR (``rest/client.go``), so the built-in kinds are read from
    protobuf (``_protobuf.py``); a protobuf body of another kind, or with a field
    not read, is a 415 that names it. A body without a Content-Type is read as JSON (what clients that
    set none send). ``kind`` is what the URL takes, for an envelope that names none.
    """
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == PROTOBUF:
        doc = decode_protobuf(body, res.api_version, kind)
        if doc["kind"] != kind:  # the handler decodes into its own type (``handlers/delete.go`` says it cannot)
            raise BadRequest(f"the kind of the object ({doc['kind']}) does not match the resource ({kind})")
        return _dumps(doc)
    if ctype and ctype != JSON:
        raise UnsupportedMediaType.of([JSON, PROTOBUF])
    return body


def is_document(method: str, target: str) -> bool:
    """Whether a request reads a discovery or OpenAPI document (``GET /api``, ``/apis/apps/v1``, ``/version``,
    ``/openapi/v3``), which :meth:`APIHandler.document` answers."""
    if method.upper() != "GET":
        return False
    path = urlsplit(target).path
    return path.startswith("/openapi/") or isinstance(_split(path), str)


def _handler_of(api: APIServer) -> APIHandler:
    """One handler per apiserver (the transports of several clients share it)."""
    handler: APIHandler | None = getattr(api, "_http_handler", None)
    if handler is None:
        handler = APIHandler(api)
        api._http_handler = handler  # type: ignore[attr-defined]  # one per apiserver, made on first use
    return handler
