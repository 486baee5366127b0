"""The limits kube-apiserver puts on a request: the body's size, the integers of its query, a ConfigMap's and a
Secret's data.

What a client learns from them is only that it was refused, and how: a 413 for a body over 3 MiB, a 400 for a
query integer Go does not parse, a 422 for data over 1 MiB. The served API refuses the same requests with the
same answers, so an operator that would hit one of them on a cluster hits it here too (a controller that packs a
whole inventory into one ConfigMap, say), for every transport alike: they all call the one handler.

Upstream (Kubernetes 1.32, as the served ``/version`` says):

* ``k8s.io/apiserver`` ``pkg/server/config.go`` ``NewConfig``: ``MaxRequestBodyBytes: int64(3 * 1024 * 1024)``
  (twice etcd's 1.5 MB request limit, since a JSON body is stored as protobuf); every handler that reads a body
  (``handlers/create.go``, ``update.go``, ``patch.go``, ``delete.go``) reads it through ``limitedReadBody``
  (``handlers/rest.go``), which answers ``errors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d",
  limit))``: 413, reason ``RequestEntityTooLarge``, message ``Request entity too large: limit is 3145728``.
* every handler decodes its query with ``metainternalversionscheme.ParameterCodec.DecodeParameters`` and answers
  a failure with ``errors.NewBadRequest(err.Error())``; an integer field (``ListOptions.TimeoutSeconds`` and
  ``Limit``, ``DeleteOptions.GracePeriodSeconds``) goes through ``runtime.Convert_Slice_string_To_int64`` /
  ``Convert_Slice_string_To_Pointer_int64`` (``apimachinery/pkg/runtime/conversion.go``), that is
  ``strconv.ParseInt(s, 10, 64)``, whose error the 400 carries as it is:
  ``strconv.ParseInt: parsing "abc": invalid syntax``.
* ``pkg/apis/core/validation`` ``ValidateConfigMap`` (the bytes of ``data`` and ``binaryData``) and
  ``ValidateSecret`` (the bytes of ``data``, ``stringData`` merged in by the v1 conversion) against
  ``core.MaxSecretSize = 1 * 1024 * 1024``: ``field.TooLong`` (apimachinery 0.32: ``may not be more than %d
  bytes``; before 0.32 ``must have at most %d bytes``) on the path ``[]`` (a ConfigMap: ``field.NewPath("")``)
  or ``data`` (a Secret), through ``errors.NewInvalid``: 422 ``ConfigMap "big" is invalid: []: Too long: may not
  be more than 1048576 bytes``.

The 413 is checked before anything else of a write (the media type's 415 included, which ``create.go`` and
``patch.go`` check first and ``update.go`` after: the order matters only to a body that is both too large and
of a type not served).
"""

from __future__ import annotations

import re
from typing import Any

from .._errors import ApiError
from ._names import FieldInvalid
from ._status import BadRequest

#: ``MaxRequestBodyBytes`` of ``k8s.io/apiserver`` ``pkg/server/config.go``
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
#: ``core.MaxSecretSize`` (``pkg/apis/core/types.go``), the bound of a ConfigMap's data too
MAX_DATA_BYTES = 1 * 1024 * 1024

_INT64 = re.compile(r"[+-]?[0-9]+")  # what strconv.ParseInt(s, 10, 64) reads: no space, no "_", ASCII digits


class RequestEntityTooLarge(ApiError):
    """413: ``errors.NewRequestEntityTooLargeError``."""

    reason = "RequestEntityTooLarge"
    code = 413
    bare = True  # a Status without details, as upstream's


class QueryNotParsed(BadRequest):
    """400: ``errors.NewBadRequest`` of a query ``DecodeParameters`` could not convert (no details, as upstream)."""

    bare = True


def check_body_size(body: bytes) -> None:
    """``limitedReadBody``: a body over :data:`MAX_REQUEST_BODY_BYTES` is a 413 (``lr.N <= 0`` after reading
    ``limit + 1``: exactly the limit is accepted)."""
    if len(body) > MAX_REQUEST_BODY_BYTES:
        raise RequestEntityTooLarge(f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}")


def query_int(query: dict[str, str], key: str) -> int | None:
    """The int64 query parameter ``key`` as ``Convert_Slice_string_To_Pointer_int64`` reads it: None when absent,
    else ``strconv.ParseInt(value, 10, 64)``, whose failure (``abc``, ``1.5``, an empty value, one out of the int64
    range) is a 400 with Go's message."""
    if key not in query:
        return None
    value = query[key]
    if not _INT64.fullmatch(value):
        raise QueryNotParsed(f"strconv.ParseInt: parsing {_go_quote(value)}: invalid syntax")
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise QueryNotParsed(f"strconv.ParseInt: parsing {_go_quote(value)}: value out of range")
    return number


def check_data_size(kind: str, doc: Any) -> None:
    """``ValidateConfigMap``'s and ``ValidateSecret``'s size check of a written object (create, update, patch or
    apply, dry run or not): its data over :data:`MAX_DATA_BYTES` bytes is a 422; other kinds pass."""
    if kind not in ("ConfigMap", "Secret") or not isinstance(doc, dict):
        return
    if kind == "ConfigMap":
        total = sum(_utf8_size(v) for v in _strings(doc.get("data")).values())
        total += sum(_base64_size(v) for v in _strings(doc.get("binaryData")).values())
        where = "[]"  # field.NewPath(""): "pass back "" to indicate that the error refers to the whole object"
    else:
        data = {k: _base64_size(v) for k, v in _strings(doc.get("data")).items()}
        data |= {k: _utf8_size(v) for k, v in _strings(doc.get("stringData")).items()}  # the v1 conversion's merge
        total = sum(data.values())
        where = "data"
    if total <= MAX_DATA_BYTES:
        return
    meta = doc.get("metadata")
    name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
    body = f"Too long: may not be more than {MAX_DATA_BYTES} bytes"
    raise FieldInvalid(f'{kind} "{name}" is invalid: {where}: {body}',
                       {"name": name, "kind": kind,
                        "causes": [{"reason": "FieldValueTooLong", "message": body, "field": where}]})


def _strings(value: Any) -> dict[str, str]:
    """A ``map[string]string`` of the body (what is not one is the decoder's to refuse, not the size check's)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _utf8_size(text: str) -> int:
    """A string's bytes as Go holds it (a lone surrogate JSON can carry becomes U+FFFD: three bytes, as here)."""
    return len(text.encode("utf-8", "surrogatepass"))


def _base64_size(text: str) -> int:
    """The bytes a base64 ``[]byte`` value decodes to (validation counts them, not the text), without decoding."""
    n = len(text.rstrip("="))
    return n * 3 // 4


def _go_quote(value: str) -> str:
    """``strconv.Quote`` of a query value (ASCII escapes; a printable character as it is)."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\x{ord(ch):02x}"))
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'
