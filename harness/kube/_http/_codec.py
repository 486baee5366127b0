"""The JSON codec: :class:`KubeObject` to and from a request's body, media types, continue tokens.

Objects: a body's every top-level field round-trips: ``metadata``, ``spec`` and
``status`` map onto :class:`KubeObject`, every other field (``data``, ``type``,
``rules``...) and the metadata fields it has no slot for (``generateName``) are
kept in ``KubeObject.extra``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ...sim import EPOCH
from .._errors import Invalid
from .._objects import KubeObject, OwnerReference, copy_json
from ._resources import Resource
from ._status import BadRequest

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# ----------------------------------------------------------------------------------------- encoding
_OWNED_META = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "labels",
               "annotations", "ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds")
_DROPPED_META = ("selfLink", "managedFields")

#: ``events.k8s.io/v1`` Event fields by their ``core/v1`` names: one Event stored, served in either shape, as
#: upstream converts them (``pkg/apis/events/v1/conversion.go``, ``Convert_v1_Event_To_core_Event`` and back);
#: the other fields (``eventTime``, ``series``, ``reason``, ``action``, ``type``, ``related``,
#: ``reportingInstance``) have one name in both
_EVENTS_V1 = {"involvedObject": "regarding", "message": "note", "source": "deprecatedSource",
              "firstTimestamp": "deprecatedFirstTimestamp", "lastTimestamp": "deprecatedLastTimestamp",
              "count": "deprecatedCount", "reportingComponent": "reportingController"}
_EVENTS_CORE = {v: k for k, v in _EVENTS_V1.items()}


def _events_v1(res: Resource) -> bool:
    return res.group == "events.k8s.io" and res.kind == "Event"


class Codec:
    """JSON <-> :class:`KubeObject`, with timestamps counted from ``epoch`` (Unix seconds; the handler gives it)."""

    def __init__(self, kind_api_version: Callable[[str], str], epoch: float = EPOCH) -> None:
        self._api_version = kind_api_version
        self.epoch = epoch

    def timestamp(self, t: float) -> str:
        """``metav1.Time`` marshals to whole seconds, RFC 3339."""
        when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=int(self.epoch + t))
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")

    def encode(self, obj: KubeObject, res: Resource) -> dict[str, Any]:
        meta: dict[str, Any] = {k: copy_json(v) for k, v in (obj.extra.get("metadata") or {}).items()}
        meta["name"] = obj.name
        if res.namespaced:
            meta["namespace"] = obj.namespace
        if obj.uid:
            meta["uid"] = obj.uid
            meta["resourceVersion"] = str(obj.resource_version)
            if obj.generation:
                meta["generation"] = obj.generation
            meta["creationTimestamp"] = self.timestamp(obj.creation_timestamp)
        if obj.deletion_timestamp is not None:
            meta["deletionTimestamp"] = self.timestamp(obj.deletion_timestamp)
            meta["deletionGracePeriodSeconds"] = obj.deletion_grace_period_seconds or 0
        if obj.labels:
            meta["labels"] = dict(obj.labels)
        if obj.annotations:
            meta["annotations"] = dict(obj.annotations)
        if obj.owner_references:
            meta["ownerReferences"] = [self._owner(r) for r in obj.owner_references]
        if obj.finalizers:
            meta["finalizers"] = list(obj.finalizers)
        out: dict[str, Any] = {"apiVersion": res.api_version, "kind": res.kind, "metadata": meta}
        names: dict[str, str] = _EVENTS_V1 if _events_v1(res) else {}
        for k, v in obj.extra.items():
            if k not in ("metadata", "apiVersion", "kind"):
                out[names.get(k, k)] = copy_json(v)
        if obj.spec:
            out["spec"] = copy_json(obj.spec)
        if obj.status:
            out["status"] = copy_json(obj.status)
        return out

    def _owner(self, ref: OwnerReference) -> dict[str, Any]:
        out: dict[str, Any] = {"apiVersion": self._api_version(ref.kind), "kind": ref.kind, "name": ref.name,
                               "uid": ref.uid}
        if ref.controller:
            out["controller"] = True
        if ref.block_owner_deletion:
            out["blockOwnerDeletion"] = True
        return out

    def decode(self, doc: Any, res: Resource, namespace: str) -> KubeObject:
        """A request body as an object of ``res`` in ``namespace`` (400 for a body that is not one)."""
        if not isinstance(doc, dict):
            raise BadRequest("the body of the request is not a JSON object")
        kind = doc.get("kind")
        if kind not in (None, "", res.kind):
            raise BadRequest(f"the kind of the object ({kind}) does not match the resource ({res.kind})")
        meta = doc.get("metadata") or {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        ns = meta.get("namespace") or ""
        if res.namespaced:
            if ns and namespace and ns != namespace:
                raise BadRequest("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
            ns = namespace or ns
        else:
            ns = ""
        for field_name in ("labels", "annotations"):
            got = meta.get(field_name) or {}
            if not isinstance(got, dict) or not all(isinstance(v, str) for v in got.values()):
                raise BadRequest(f"metadata.{field_name} must be a map of strings")
        rv = meta.get("resourceVersion") or ""
        if not isinstance(rv, str) or (rv and not rv.isdigit()):
            raise Invalid(f'{res.kind} "{meta.get("name", "")}" is invalid: metadata.resourceVersion: '
                          f"Invalid value: {rv!r}: must be a decimal string")
        refs = []
        for r in meta.get("ownerReferences") or []:
            if not isinstance(r, dict) or not r.get("uid") or not r.get("name") or not r.get("kind"):
                raise Invalid(f'{res.kind} "{meta.get("name", "")}" is invalid: metadata.ownerReferences: '
                              "Invalid value: an owner reference needs apiVersion, kind, name and uid")
            refs.append(OwnerReference(str(r["uid"]), str(r["kind"]), str(r["name"]), bool(r.get("controller")),
                                       bool(r.get("blockOwnerDeletion"))))
        names: dict[str, str] = _EVENTS_CORE if _events_v1(res) else {}
        extra: dict[str, Any] = {str(names.get(k, k)): copy_json(v) for k, v in doc.items()
                                 if k not in ("apiVersion", "kind", "metadata", "spec", "status")}
        meta_extra = {k: copy_json(v) for k, v in meta.items() if k not in _OWNED_META and k not in _DROPPED_META}
        if meta_extra:
            extra["metadata"] = meta_extra
        spec, status = doc.get("spec") or {}, doc.get("status") or {}
        if not isinstance(spec, dict) or not isinstance(status, dict):
            raise BadRequest("spec and status must be objects")
        return KubeObject(
            res.kind, ns, str(meta.get("name") or ""), uid=str(meta.get("uid") or ""),
            resource_version=int(rv or 0), labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}), owner_references=refs,
            finalizers=[str(f) for f in meta.get("finalizers") or []], spec=copy_json(spec),
            status=copy_json(status), extra=extra,
        )

def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()

def _parse(body: bytes) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError as exc:
        raise BadRequest(f"the body of the request is not valid JSON: {exc}") from None

def _make_continue(rv: int, start: str) -> str:
    """``storage.EncodeContinue``: the revision of the first page and the last key served, base64 JSON."""
    return base64.urlsafe_b64encode(_dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})).decode()


def _continue_token(token: str) -> tuple[int, str]:
    try:
        got = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(got["rv"]), str(got["start"])
    except (ValueError, KeyError, TypeError):
        raise BadRequest("continue key is not valid: the continue token could not be decoded") from None

def owner_reference(obj: dict[str, Any], *, controller: bool = True) -> dict[str, Any]:
    """A controller reference to a JSON object, as ``metav1.NewControllerRef`` builds it."""
    meta = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": controller, "blockOwnerDeletion": controller}
