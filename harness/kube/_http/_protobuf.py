"""Protobuf request bodies: the few built-in kinds kubectl sends as protobuf, read into the JSON the handler takes.

kubectl 1.32's typed commands (``create namespace|configmap|secret|...``,
``auth can-i``) send ``application/vnd.kubernetes.protobuf``, and client-go
retries in JSON after a 415 only for CBOR (``rest/client.go``), so a served
API that answers those with 415 fails the command. kube-apiserver reads every
kind; this server reads the kinds of :data:`KINDS` (the ones ``kubectl create``
makes that a cluster's setup needs: namespaces, config, secrets, service
accounts and RBAC, plus the self-subject reviews) and answers in JSON
(client-go reads a JSON answer whatever it sent).

The body is apimachinery's envelope (``pkg/runtime/serializer/protobuf/protobuf.go``
``Serializer.Decode``): the magic ``k8s\\x00``, then a ``runtime.Unknown``
(``pkg/runtime/generated.proto``: typeMeta{apiVersion=1, kind=2}=1, raw=2,
contentEncoding=3, contentType=4) whose ``raw`` is the object's message. Each
kind read here has a field table (:data:`KINDS`), taken from the field numbers
of ``k8s.io/api/core/v1/generated.proto``, ``k8s.io/api/rbac/v1/generated.proto``,
``k8s.io/api/authorization/v1/generated.proto`` and apimachinery's
``pkg/apis/meta/v1/generated.proto``, with each field's JSON name and whether
Go's JSON encoder would drop its zero value (``omitempty`` on a value) or keep
it (a pointer, or no ``omitempty``): the result is the document the same Go
object marshals to as JSON (a zero time left out where Go writes ``null``), so
the rest of the handler cannot tell the two encodings apart.

Where this departs from upstream, it does so loudly: upstream's generated
``Unmarshal`` skips a field number it does not know, here a field no table names
is a 415 that names it (it may carry something the object needs; a wrong object
stored quietly is worse than a refused one), as is a kind with no table. A body
that is not well-formed protobuf (truncated, a wire type the field does not
have) is a 400, as ``handlers/create.go`` answers a body its decoder refuses
(``transformDecodeError``). Rejected: the ``protobuf`` package (the generated
classes would need upstream's ``.proto`` files and a code generator at build
time, for a dozen message types); decoding every kind (the Pod spec alone has
hundreds of fields: ``kubectl apply -f`` sends JSON for all of them).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ._status import BadRequest, UnsupportedMediaType

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


# ------------------------------------------------------------------------------------------- wire format
class _Reader:
    """One message's bytes, read field by field (the protobuf wire format: a varint key, then the value)."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.pos, self.where = data, 0, where

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def varint(self) -> int:
        out, shift = 0, 0
        while True:
            if self.pos >= len(self.data):
                raise _malformed(f"{self.where} is truncated: it ends inside a varint")
            byte = self.data[self.pos]
            self.pos += 1
            out |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return out
            shift += 7
            if shift >= 70:
                raise _malformed(f"{self.where} has a varint longer than 10 bytes")

    def take(self, size: int) -> bytes:
        if size > len(self.data) - self.pos:
            raise _malformed(f"{self.where} is truncated: a field declares {size} bytes, "
                             f"{len(self.data) - self.pos} remain")
        out = self.data[self.pos:self.pos + size]
        self.pos += size
        return out

    def field(self) -> tuple[int, int, int | bytes]:
        """The next field: its number, wire type and value (an int for a varint or fixed field, else bytes)."""
        key = self.varint()
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _malformed(f"{self.where} has a field numbered 0")
        if wire == _VARINT:
            return number, wire, self.varint()
        if wire == _BYTES:
            return number, wire, self.take(self.varint())
        if wire == _FIXED64:
            return number, wire, int.from_bytes(self.take(8), "little")
        if wire == _FIXED32:
            return number, wire, int.from_bytes(self.take(4), "little")
        raise _malformed(f"{self.where} has field {number} in wire type {wire} (groups are not a Kubernetes type)")


def _malformed(why: str) -> BadRequest:
    return BadRequest(f"the protobuf body could not be decoded: {why}")


def _signed64(value: int) -> int:
    """A varint as Go's ``int64``/``int32`` (a negative number is sent as its 64-bit two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


# ------------------------------------------------------------------------------------------- field tables
@dataclass(frozen=True)
class Field:
    """One field of a message: its JSON name, how its value reads, and whether JSON keeps its zero value.

    ``kind`` is ``string``, ``bytes`` (base64 in JSON, as Go's ``[]byte``), ``bool``, ``int``, ``time``
    (``metav1.Time``), ``microtime`` (``metav1.MicroTime``), ``message`` (``of``), ``map`` (string keys;
    values ``string`` or ``bytes`` per ``value``), ``strings`` (repeated string), ``messages`` (repeated
    ``of``) or ``rawjson`` (``metav1.FieldsV1``: its ``Raw`` is JSON)."""

    json: str
    kind: str
    of: Message | None = None
    value: str = "string"
    keep_zero: bool = False


@dataclass(frozen=True)
class Message:
    """A message type: its name (for errors) and its fields by number."""

    name: str
    fields: dict[int, Field] = field(default_factory=dict)


_WIRE = {"string": _BYTES, "bytes": _BYTES, "bool": _VARINT, "int": _VARINT, "time": _BYTES, "microtime": _BYTES,
         "message": _BYTES,
         "map": _BYTES, "strings": _BYTES, "messages": _BYTES, "rawjson": _BYTES}


def _f(number: int, json_name: str, kind: str = "string", of: Message | None = None, *, value: str = "string",
       keep_zero: bool = False) -> tuple[int, Field]:
    return number, Field(json_name, kind, of, value, keep_zero)


def _fields(name: str, *entries: tuple[int, Field]) -> Message:
    return Message(name, dict(entries))


# apimachinery pkg/apis/meta/v1/generated.proto (Go tags from types.go: pointers keep their zero value)
OWNER_REFERENCE = _fields(
    "OwnerReference", _f(5, "apiVersion"), _f(1, "kind"), _f(3, "name"), _f(4, "uid"),
    _f(6, "controller", "bool", keep_zero=True), _f(7, "blockOwnerDeletion", "bool", keep_zero=True))
MANAGED_FIELDS_ENTRY = _fields(
    "ManagedFieldsEntry", _f(1, "manager"), _f(2, "operation"), _f(3, "apiVersion"), _f(4, "time", "time"),
    _f(6, "fieldsType"), _f(7, "fieldsV1", "rawjson"), _f(8, "subresource"))
OBJECT_META = _fields(
    "ObjectMeta", _f(1, "name"), _f(2, "generateName"), _f(3, "namespace"), _f(4, "selfLink"), _f(5, "uid"),
    _f(6, "resourceVersion"), _f(7, "generation", "int"), _f(8, "creationTimestamp", "time"),
    _f(9, "deletionTimestamp", "time"), _f(10, "deletionGracePeriodSeconds", "int", keep_zero=True),
    _f(11, "labels", "map"), _f(12, "annotations", "map"), _f(13, "ownerReferences", "messages", OWNER_REFERENCE),
    _f(14, "finalizers", "strings"), _f(17, "managedFields", "messages", MANAGED_FIELDS_ENTRY))
_REQUIREMENT = _fields("SelectorRequirement", _f(1, "key", keep_zero=True), _f(2, "operator", keep_zero=True),
                       _f(3, "values", "strings"))

# k8s.io/api/core/v1/generated.proto
NAMESPACE_CONDITION = _fields(
    "NamespaceCondition", _f(1, "type"), _f(2, "status"), _f(4, "lastTransitionTime", "time"), _f(5, "reason"),
    _f(6, "message"))
NAMESPACE = _fields(
    "Namespace", _f(1, "metadata", "message", OBJECT_META),
    _f(2, "spec", "message", _fields("NamespaceSpec", _f(1, "finalizers", "strings"))),
    _f(3, "status", "message", _fields("NamespaceStatus", _f(1, "phase"),
                                       _f(2, "conditions", "messages", NAMESPACE_CONDITION))))
CONFIG_MAP = _fields(
    "ConfigMap", _f(1, "metadata", "message", OBJECT_META), _f(2, "data", "map"),
    _f(3, "binaryData", "map", value="bytes"), _f(4, "immutable", "bool", keep_zero=True))
SECRET = _fields(
    "Secret", _f(1, "metadata", "message", OBJECT_META), _f(2, "data", "map", value="bytes"), _f(3, "type"),
    _f(4, "stringData", "map"), _f(5, "immutable", "bool", keep_zero=True))

OBJECT_REFERENCE = _fields(
    "ObjectReference", _f(1, "kind"), _f(2, "namespace"), _f(3, "name"), _f(4, "uid"), _f(5, "apiVersion"),
    _f(6, "resourceVersion"), _f(7, "fieldPath"))
SERVICE_ACCOUNT = _fields(
    "ServiceAccount", _f(1, "metadata", "message", OBJECT_META),
    _f(2, "secrets", "messages", OBJECT_REFERENCE),
    _f(3, "imagePullSecrets", "messages", _fields("LocalObjectReference", _f(1, "name"))),
    _f(4, "automountServiceAccountToken", "bool", keep_zero=True))

# k8s.io/api/rbac/v1/generated.proto (Subject's kind and name, RoleRef's fields have no omitempty: types.go)
POLICY_RULE = _fields(
    "PolicyRule", _f(1, "verbs", "strings"), _f(2, "apiGroups", "strings"), _f(3, "resources", "strings"),
    _f(4, "resourceNames", "strings"), _f(5, "nonResourceURLs", "strings"))
LABEL_SELECTOR = _fields("LabelSelector", _f(1, "matchLabels", "map"),
                         _f(2, "matchExpressions", "messages", _REQUIREMENT))
ROLE = _fields("Role", _f(1, "metadata", "message", OBJECT_META), _f(2, "rules", "messages", POLICY_RULE))
CLUSTER_ROLE = _fields(
    "ClusterRole", _f(1, "metadata", "message", OBJECT_META), _f(2, "rules", "messages", POLICY_RULE),
    _f(3, "aggregationRule", "message", _fields("AggregationRule",
                                                _f(1, "clusterRoleSelectors", "messages", LABEL_SELECTOR))))
_BINDING_FIELDS = (
    _f(1, "metadata", "message", OBJECT_META),
    _f(2, "subjects", "messages", _fields("Subject", _f(1, "kind", keep_zero=True), _f(2, "apiGroup"),
                                          _f(3, "name", keep_zero=True), _f(4, "namespace"))),
    _f(3, "roleRef", "message", _fields("RoleRef", _f(1, "apiGroup", keep_zero=True), _f(2, "kind", keep_zero=True),
                                        _f(3, "name", keep_zero=True))))
ROLE_BINDING = _fields("RoleBinding", *_BINDING_FIELDS)
CLUSTER_ROLE_BINDING = _fields("ClusterRoleBinding", *_BINDING_FIELDS)

# k8s.io/api/coordination/v1/generated.proto: what a leader election writes (client-go's typed clients send a
# built-in kind in protobuf when their config names no ContentType: gentype/type.go PrefersProtobuf,
# rest/request.go UseProtobufAsDefault; controller-runtime's client does too, pkg/client/apiutil/apimachinery.go);
# every LeaseSpec field is a pointer in types.go, so a field sent keeps its zero value
LEASE = _fields(
    "Lease", _f(1, "metadata", "message", OBJECT_META),
    _f(2, "spec", "message", _fields(
        "LeaseSpec", _f(1, "holderIdentity", keep_zero=True), _f(2, "leaseDurationSeconds", "int", keep_zero=True),
        _f(3, "acquireTime", "microtime"), _f(4, "renewTime", "microtime"),
        _f(5, "leaseTransitions", "int", keep_zero=True), _f(6, "strategy", keep_zero=True),
        _f(7, "preferredHolder", keep_zero=True))))

# k8s.io/api/events/v1/generated.proto: what an EventRecorder of client-go's tools/events writes (controller-runtime's
# GetEventRecorder), in protobuf as the manager's clients send it
EVENT_V1 = _fields(
    "Event", _f(1, "metadata", "message", OBJECT_META), _f(2, "eventTime", "microtime", keep_zero=True),
    _f(3, "series", "message", _fields("EventSeries", _f(1, "count", "int", keep_zero=True),
                                       _f(2, "lastObservedTime", "microtime", keep_zero=True))),
    _f(4, "reportingController"), _f(5, "reportingInstance"), _f(6, "action"), _f(7, "reason"),
    _f(8, "regarding", "message", OBJECT_REFERENCE), _f(9, "related", "message", OBJECT_REFERENCE), _f(10, "note"),
    _f(11, "type"), _f(12, "deprecatedSource", "message", _fields("EventSource", _f(1, "component"), _f(2, "host"))),
    _f(13, "deprecatedFirstTimestamp", "time"), _f(14, "deprecatedLastTimestamp", "time"),
    _f(15, "deprecatedCount", "int"))

# k8s.io/api/authorization/v1/generated.proto
RESOURCE_ATTRIBUTES = _fields(
    "ResourceAttributes", _f(1, "namespace"), _f(2, "verb"), _f(3, "group"), _f(4, "version"), _f(5, "resource"),
    _f(6, "subresource"), _f(7, "name"),
    _f(8, "fieldSelector", "message", _fields("FieldSelectorAttributes", _f(1, "rawSelector"),
                                              _f(2, "requirements", "messages", _REQUIREMENT))),
    _f(9, "labelSelector", "message", _fields("LabelSelectorAttributes", _f(1, "rawSelector"),
                                              _f(2, "requirements", "messages", _REQUIREMENT))))
SUBJECT_ACCESS_REVIEW_STATUS = _fields(
    "SubjectAccessReviewStatus", _f(1, "allowed", "bool", keep_zero=True), _f(4, "denied", "bool"),
    _f(2, "reason"), _f(3, "evaluationError"))
SELF_SUBJECT_ACCESS_REVIEW = _fields(
    "SelfSubjectAccessReview", _f(1, "metadata", "message", OBJECT_META),
    _f(2, "spec", "message", _fields(
        "SelfSubjectAccessReviewSpec", _f(1, "resourceAttributes", "message", RESOURCE_ATTRIBUTES),
        _f(2, "nonResourceAttributes", "message", _fields("NonResourceAttributes", _f(1, "path"), _f(2, "verb"))))),
    _f(3, "status", "message", SUBJECT_ACCESS_REVIEW_STATUS))
SELF_SUBJECT_RULES_REVIEW = _fields(
    "SelfSubjectRulesReview", _f(1, "metadata", "message", OBJECT_META),
    _f(2, "spec", "message", _fields("SelfSubjectRulesReviewSpec", _f(1, "namespace"))),
    _f(3, "status", "message", _fields(
        "SubjectRulesReviewStatus",
        _f(1, "resourceRules", "messages", _fields(
            "ResourceRule", _f(1, "verbs", "strings"), _f(2, "apiGroups", "strings"), _f(3, "resources", "strings"),
            _f(4, "resourceNames", "strings"))),
        _f(2, "nonResourceRules", "messages", _fields(
            "NonResourceRule", _f(1, "verbs", "strings"), _f(2, "nonResourceURLs", "strings"))),
        _f(3, "incomplete", "bool", keep_zero=True), _f(4, "evaluationError"))))

#: ``meta/v1`` DeleteOptions: the body of a DELETE from a client whose content type is protobuf (controller-runtime's
#: client for built-in kinds). Every field is a pointer or a list in Go (``types.go``), so a zero sent is kept.
DELETE_OPTIONS = _fields(
    "DeleteOptions", _f(1, "gracePeriodSeconds", "int", keep_zero=True),
    _f(2, "preconditions", "message", _fields("Preconditions", _f(1, "uid", keep_zero=True),
                                              _f(2, "resourceVersion", keep_zero=True))),
    _f(3, "orphanDependents", "bool", keep_zero=True), _f(4, "propagationPolicy", keep_zero=True),
    _f(5, "dryRun", "strings"), _f(6, "ignoreStoreReadErrorWithClusterBreakingPotential", "bool", keep_zero=True))

#: the kinds read from protobuf, by (apiVersion, kind) as the envelope names them
KINDS: dict[tuple[str, str], Message] = {
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ConfigMap"): CONFIG_MAP,
    ("v1", "Secret"): SECRET,
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): CLUSTER_ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): CLUSTER_ROLE_BINDING,
    ("coordination.k8s.io/v1", "Lease"): LEASE,
    ("events.k8s.io/v1", "Event"): EVENT_V1,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): SELF_SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): SELF_SUBJECT_RULES_REVIEW,
    ("meta.k8s.io/v1", "DeleteOptions"): DELETE_OPTIONS,
}
_TYPE_META = _fields("TypeMeta", _f(1, "apiVersion"), _f(2, "kind"))


# ------------------------------------------------------------------------------------------- decoding
def decode_protobuf(body: bytes, api_version: str, kind: str) -> dict[str, Any]:
    """A protobuf request body as the JSON object it stands for; ``api_version``/``kind`` fill an envelope that
    names none (``copyKindDefaults``, from what the URL serves).

    Raises ``BadRequest`` (400) for a body that is not the envelope or not well-formed protobuf, and
    ``UnsupportedMediaType`` (415) for a kind or a field this server does not read."""
    if not body.startswith(MAGIC):
        raise _malformed("provided data does not appear to be a protobuf message, expected the prefix k8s\\x00")
    if len(body) == len(MAGIC):
        raise _malformed("empty body")
    type_meta, raw = _envelope(body[len(MAGIC):])
    api_version = type_meta.get("apiVersion") or api_version
    kind = type_meta.get("kind") or kind
    message = KINDS.get((api_version, kind))
    if message is None and kind == "DeleteOptions":  # registered in every group version (``AddToGroupVersion``)
        message = DELETE_OPTIONS
    if message is None:
        raise UnsupportedMediaType(
            f"the body of the request is protobuf of {kind} ({api_version}), which this server does not read (it "
            f"reads protobuf only for {', '.join(k for _, k in KINDS)}): send it as application/json (with kubectl: "
            "`kubectl create ... --dry-run=client -o yaml | kubectl apply -f -`)")
    return {"apiVersion": api_version, "kind": kind, **_read(raw, message, kind)}


def _envelope(data: bytes) -> tuple[dict[str, Any], bytes]:
    """``runtime.Unknown``: its typeMeta and raw; contentEncoding and contentType are read and, as
    ``Serializer.Decode`` does, not used (the raw is the object's message)."""
    reader, type_meta, raw = _Reader(data, "runtime.Unknown"), {}, b""
    while not reader.done():
        number, wire, value = reader.field()
        if number not in (1, 2, 3, 4) or not isinstance(value, bytes):
            raise _malformed(f"runtime.Unknown has field {number} in wire type {wire}")
        if number == 1:
            type_meta = _read(value, _TYPE_META, "runtime.Unknown.typeMeta")
        elif number == 2:
            raw = value
    return type_meta, raw


def _read(data: bytes, message: Message, where: str, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """One message's fields as a JSON object (``into``, when an earlier occurrence of the field started it: a message
    sent twice merges, as gogo's generated ``Unmarshal`` merges it, scalars replaced, lists and maps extended)."""
    reader = _Reader(data, where)
    out: dict[str, Any] = {} if into is None else into
    while not reader.done():
        number, wire, value = reader.field()
        spec = message.fields.get(number)
        if spec is None:
            raise UnsupportedMediaType(
                f"the protobuf body has field {number} of {message.name} ({where}), which this server does not "
                "read: send the object as application/json")
        path = f"{where}.{spec.json}"
        if wire != _WIRE[spec.kind]:
            raise _malformed(f"{path} (field {number} of {message.name}) has wire type {wire}, "
                             f"expected {_WIRE[spec.kind]}")
        _store(out, spec, value, path)
    for spec in message.fields.values():  # Go's JSON encoder drops the zero value of an omitempty value field
        if spec.json in out and not spec.keep_zero and out[spec.json] in ("", 0, False, None):
            del out[spec.json]
    return out


def _store(out: dict[str, Any], spec: Field, value: int | bytes, path: str) -> None:
    if isinstance(value, int):  # the wire type was checked: a bool or an int
        out[spec.json] = bool(value) if spec.kind == "bool" else _signed64(value)
    elif spec.kind == "string":
        out[spec.json] = _text(value, path)
    elif spec.kind == "bytes":
        out[spec.json] = base64.b64encode(value).decode("ascii")
    elif spec.kind == "time":
        out[spec.json] = _time(value, path)
    elif spec.kind == "microtime":
        out[spec.json] = _time(value, path, micro=True)
    elif spec.kind == "rawjson":
        out[spec.json] = _raw_json(value, path)
    elif spec.kind == "message":
        assert spec.of is not None
        out[spec.json] = _read(value, spec.of, path, out.get(spec.json))
    elif spec.kind == "messages":
        assert spec.of is not None
        items = out.setdefault(spec.json, [])
        items.append(_read(value, spec.of, f"{path}[{len(items)}]"))
    elif spec.kind == "strings":
        out.setdefault(spec.json, []).append(_text(value, path))
    else:  # map: each entry is a message {key=1, value=2}; a missing key or value is the zero value
        key, item = _map_entry(value, path)
        out.setdefault(spec.json, {})[key] = (base64.b64encode(item).decode("ascii") if spec.value == "bytes"
                                              else _text(item, f"{path}[{key}]"))


def _map_entry(value: bytes, path: str) -> tuple[str, bytes]:
    entry, key, item = _Reader(value, path), "", b""
    while not entry.done():
        number, wire, got = entry.field()
        if number not in (1, 2) or not isinstance(got, bytes):
            raise _malformed(f"{path} has a map entry with field {number} in wire type {wire}")
        if number == 1:
            key = _text(got, path)
        else:
            item = got
    return key, item


def _text(value: bytes, path: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed(f"{path} is not valid UTF-8") from None


def _time(value: bytes, path: str, *, micro: bool = False) -> str | None:
    """``metav1.Time``'s ``Unmarshal`` (``time_proto.go``): empty is the zero time (JSON ``null``), else whole
    seconds since the epoch (nanos are read and dropped, as upstream drops them). ``metav1.MicroTime``
    (``micro_time_proto.go``) keeps the microseconds and marshals as ``RFC3339Micro``."""
    if not value:
        return None
    got = _read(value, _TIMESTAMP, path)
    seconds = _signed64(int(got.get("seconds", 0)))
    try:
        if micro:
            micros = _signed64(int(got.get("nanos", 0))) // 1000
            return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{micros:06d}Z"
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        raise _malformed(f"{path} is out of range ({seconds} seconds)") from None


def _raw_json(value: bytes, path: str) -> Any:
    """``metav1.FieldsV1``: one ``Raw`` field (1) holding JSON, embedded as is in the JSON object."""
    reader, raw = _Reader(value, path), b""
    while not reader.done():
        number, wire, got = reader.field()
        if number != 1:
            raise UnsupportedMediaType(f"the protobuf body has field {number} of FieldsV1 ({path}), which this "
                                       "server does not read: send the object as application/json")
        if not isinstance(got, bytes):
            raise _malformed(f"{path} (field 1 of FieldsV1) has wire type {wire}, expected {_BYTES}")
        raw = got
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        raise _malformed(f"{path} is not JSON") from None


_TIMESTAMP = _fields("Timestamp", _f(1, "seconds", "int", keep_zero=True), _f(2, "nanos", "int", keep_zero=True))
