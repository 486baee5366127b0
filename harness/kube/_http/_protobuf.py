"""Protobuf request bodies: the built-in kinds Go clients and kubectl send as protobuf, read into the JSON the handler takes.

client-go's typed clients send a built-in kind as ``application/vnd.kubernetes.protobuf``
when their config names no ContentType (``gentype/type.go`` ``PrefersProtobuf``,
``rest/request.go``), and so do controller-runtime's for the types of client-go's
scheme (``pkg/client/apiutil/apimachinery.go``) and kubectl's typed commands
(``create namespace|configmap|secret|...``, ``auth can-i``); client-go retries in
JSON after a 415 only for CBOR (``rest/client.go``), so a served API that answers
those with 415 fails the controller. kube-apiserver reads every kind; this server
reads the kinds of ``protobuf_fields.json`` (every built-in it serves but
CustomResourceDefinition, which client-go's scheme leaves to JSON; the scale
subresource's Scale; the self-subject reviews; the DeleteOptions a typed Delete
sends) and answers in JSON (client-go reads a JSON answer whatever it sent).

The body is apimachinery's envelope (``pkg/runtime/serializer/protobuf/protobuf.go``
``Serializer.Decode``): the magic ``k8s\\x00``, then a ``runtime.Unknown``
(``pkg/runtime/generated.proto``: typeMeta{apiVersion=1, kind=2}=1, raw=2,
contentEncoding=3, contentType=4) whose ``raw`` is the object's message. The
messages are those of k8s.io/api's ``generated.proto`` files, which
go-to-protobuf generates from the Go types: ``protobuf_fields.json`` is read off
those types (``tools/protobuf-fields``: each field's number from its ``protobuf``
struct tag, its JSON name and ``omitempty`` from its ``json`` tag, a pointer
keeping its zero value), so the result is the document the same Go object
marshals to as JSON (a zero time or a nil list left out where Go writes ``null``),
and the rest of the handler cannot tell the two encodings apart. The types with
a message and a JSON form of their own are read by hand: ``metav1.Time`` and
``MicroTime`` (Timestamp{seconds=1, nanos=2}), ``resource.Quantity``
(``generated.proto``: ``message Quantity { optional string string = 1; }``),
``intstr.IntOrString`` (type=1, intVal=2, strVal=3), ``runtime.RawExtension`` and
``metav1.FieldsV1`` (raw=1, JSON).

Where this departs from upstream, it does so loudly: upstream's generated
``Unmarshal`` skips a field number it does not know, here a field the table does
not name is a 415 that names it (it may carry something the object needs; a wrong
object stored quietly is worse than a refused one), as is a kind with no table. A
body that is not well-formed protobuf (truncated, a wire type the field does not
have) is a 400, as ``handlers/create.go`` answers a body its decoder refuses
(``transformDecodeError``). Rejected: the ``protobuf`` package (the generated
classes would need upstream's ``.proto`` files and a code generator at build
time); field tables written by hand (the Pod spec alone has hundreds of fields).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
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
    """One field of a message, as ``protobuf_fields.json`` lists it: its JSON name, its type, and how it repeats.

    ``type`` is ``string``, ``bytes`` (base64 in JSON, as Go's ``[]byte``), ``bool``, ``int``, ``time``
    (``metav1.Time``), ``microtime`` (``metav1.MicroTime``), ``quantity`` (``resource.Quantity``),
    ``intorstring`` (``intstr.IntOrString``), ``rawjson`` (``metav1.FieldsV1``, ``runtime.RawExtension``: raw
    JSON) or the table's name of a message. ``repeated`` is a list of them, ``map`` a map with string keys and
    values of ``type``; ``inline`` a message whose fields JSON promotes into its parent's (an embedded struct with
    no JSON name, as Probe's ProbeHandler); ``keep`` says Go's JSON encoder keeps the zero value (a pointer, or no
    ``omitempty``)."""

    json: str
    type: str
    repeated: bool = False
    map: bool = False
    inline: bool = False
    keep: bool = False


@dataclass(frozen=True)
class Message:
    """A message type: its name (the Go type's, for errors) and its fields by number."""

    name: str
    fields: dict[int, Field]


_SCALARS = {"string", "bytes", "bool", "int", "time", "microtime"}  # the types a zero value of is dropped by omitempty
_VARINTS = {"bool", "int"}


@dataclass
class _Table:
    kinds: dict[tuple[str, str], str]
    messages: dict[str, Message]


@cache
def _table() -> _Table:
    """``protobuf_fields.json``, read on the first protobuf body."""
    doc = json.loads(resources.files(__package__).joinpath("protobuf_fields.json").read_text("utf-8"))
    messages = {
        key: Message(key.rsplit(".", 1)[1], {
            number: Field(name, type_, **dict.fromkeys(flags.split(), True)) for number, name, type_, flags in fields})
        for key, fields in doc["messages"].items()}
    kinds = {(gvk.split(" ")[0], gvk.split(" ")[1]): key for gvk, key in doc["kinds"].items()}  # "apiVersion Kind"
    return _Table(kinds, messages)


_TIMESTAMP = Message("Timestamp", {1: Field("seconds", "int", keep=True), 2: Field("nanos", "int", keep=True)})
_TYPE_META = Message("TypeMeta", {1: Field("apiVersion", "string"), 2: Field("kind", "string")})
_INT_OR_STRING = Message("IntOrString", {1: Field("type", "int", keep=True), 2: Field("intVal", "int", keep=True),
                                         3: Field("strVal", "string", keep=True)})
_QUANTITY = Message("Quantity", {1: Field("string", "string", keep=True)})


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
    table = _table()
    key = table.kinds.get((api_version, kind)) or table.kinds.get(("*", kind))  # DeleteOptions: any group's
    if key is None:
        raise UnsupportedMediaType(
            f"the body of the request is protobuf of {kind} ({api_version}), which this server does not read (it "
            f"reads protobuf only for {', '.join(sorted({k for _, k in table.kinds}))}): send it as "
            "application/json (with kubectl: `kubectl create ... --dry-run=client -o yaml | kubectl apply -f -`)")
    return {"apiVersion": api_version, "kind": kind, **_read(raw, table.messages[key], kind)}


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
    sent twice merges, as gogo's generated ``Unmarshal`` merges it, scalars replaced, lists and maps extended; an
    inline message writes into its parent's object)."""
    reader = _Reader(data, where)
    out: dict[str, Any] = {} if into is None else into
    while not reader.done():
        number, wire, value = reader.field()
        spec = message.fields.get(number)
        if spec is None:
            raise UnsupportedMediaType(
                f"the protobuf body has field {number} of {message.name} ({where}), which this server does not "
                "read: send the object as application/json")
        path = where if spec.inline else f"{where}.{spec.json}"
        if spec.inline:
            _read(_bytes(spec, number, message, wire, value, path), _message(spec.type), path, out)
        elif spec.map:
            key, item = _map_entry(_bytes(spec, number, message, wire, value, path), path)
            out.setdefault(spec.json, {})[key] = _value(spec, number, message, _BYTES, item, f"{path}[{key}]")
        elif spec.repeated and spec.type in _VARINTS and wire == _BYTES:  # packed, which gogo's Unmarshal reads too
            packed = _Reader(_bytes(spec, number, message, wire, value, path), path)
            while not packed.done():
                out.setdefault(spec.json, []).append(_value(spec, number, message, _VARINT, packed.varint(), path))
        elif spec.repeated:
            items = out.setdefault(spec.json, [])
            items.append(_value(spec, number, message, wire, value, f"{path}[{len(items)}]"))
        else:
            out[spec.json] = _value(spec, number, message, wire, value, path, out.get(spec.json))
    for spec in message.fields.values():  # Go's JSON encoder drops the zero value of an omitempty value field
        if not spec.keep and spec.type in _SCALARS and spec.json in out and out[spec.json] in ("", 0, False, None):
            del out[spec.json]
    return out


def _value(spec: Field, number: int, message: Message, wire: int, value: int | bytes, path: str,
           into: Any = None) -> Any:
    """One value of a field as JSON (``into``: what an earlier occurrence of a message field read)."""
    if spec.type in _VARINTS:
        if not isinstance(value, int) or wire != _VARINT:
            raise _malformed(f"{path} (field {number} of {message.name}) has wire type {wire}, expected {_VARINT}")
        return bool(value) if spec.type == "bool" else _signed64(value)
    data = _bytes(spec, number, message, wire, value, path)
    if spec.type == "string":
        return _text(data, path)
    if spec.type == "bytes":
        return base64.b64encode(data).decode("ascii")
    if spec.type in ("time", "microtime"):
        return _time(data, path, micro=spec.type == "microtime")
    if spec.type == "rawjson":
        return _raw_json(data, path)
    if spec.type == "quantity":  # quantity_proto.go: the canonical string a Go client's Marshal wrote; none is zero
        return _read(data, _QUANTITY, path).get("string", "0")
    if spec.type == "intorstring":  # intstr.go MarshalJSON: the string when type is String (1), else the int
        got = _read(data, _INT_OR_STRING, path)
        return got.get("strVal", "") if got.get("type") == 1 else got.get("intVal", 0)
    return _read(data, _message(spec.type), path, into if isinstance(into, dict) else None)


def _bytes(spec: Field, number: int, message: Message, wire: int, value: int | bytes, path: str) -> bytes:
    if not isinstance(value, bytes) or wire != _BYTES:
        raise _malformed(f"{path} (field {number} of {message.name}) has wire type {wire}, expected {_BYTES}")
    return value


def _message(key: str) -> Message:
    return _table().messages[key]


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
    """``metav1.FieldsV1`` and ``runtime.RawExtension``: one ``Raw`` field (1) holding JSON, embedded as is in the
    JSON object (a RawExtension's ``MarshalJSON`` writes its Raw; a Go client sets Raw, as the ControllerRevisions
    of ``controller_history.go`` do, rather than an Object only JSON could carry)."""
    reader, raw = _Reader(value, path), b""
    while not reader.done():
        number, wire, got = reader.field()
        if number != 1:
            raise UnsupportedMediaType(f"the protobuf body has field {number} of a raw JSON field ({path}), which this "
                                       "server does not read: send the object as application/json")
        if not isinstance(got, bytes):
            raise _malformed(f"{path} (field 1 of its Raw) has wire type {wire}, expected {_BYTES}")
        raw = got
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        raise _malformed(f"{path} is not JSON") from None
