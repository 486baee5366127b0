"""HTTP errors and ``metav1.Status`` bodies: what a failed request answers (``apimachinery/pkg/api/errors``).

The apiserver's own errors (:mod:`harness.kube._errors`) carry a reason and a
code; the few only the REST layer raises (a malformed request, a method or a
patch type a resource does not take) are here, with the ``Status`` document
every error is answered with.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._errors import ApiError
from .._errors import Forbidden as Forbidden  # the admission's 403 is the apiserver's own (``_lifecycle.py``)

if TYPE_CHECKING:
    from ._resources import Resource

# ---------------------------------------------------------------------------------------------- errors
class BadRequest(ApiError):
    reason = "BadRequest"
    code = 400


class MethodNotSupported(ApiError):
    reason = "MethodNotAllowed"
    code = 405


class NotAcceptable(ApiError):
    """406: ``negotiation.NewNotAcceptableError`` (no representation the request accepts)."""

    reason = "NotAcceptable"
    code = 406


class UnsupportedMediaType(ApiError):
    """415: ``negotiation.NewUnsupportedMediaTypeError`` (a patch type the resource does not take)."""

    reason = "UnsupportedMediaType"
    code = 415

    @classmethod
    def of(cls, accepted: Iterable[str]) -> UnsupportedMediaType:
        return cls("the body of the request was in an unknown format - accepted media types include: "
                   + ", ".join(accepted))


def status_body(err: ApiError, res: Resource | None = None, name: str = "") -> dict[str, Any]:
    """``metav1.Status`` as ``apimachinery/pkg/api/errors`` builds it: reason, code, message and details."""
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": err.message}
    if err.reason:  # (``reason`` is omitempty: a webhook's refusal may give none)
        out["reason"] = err.reason
    given: dict[str, Any] | None = getattr(err, "details", None)  # an error that knows its details (FieldInvalid)
    if getattr(err, "bare", False):  # one upstream answers without details (a 413; a query's 400, _limits.py)
        pass
    elif given is not None:
        out["details"] = given
    elif res is not None:
        name = name or getattr(err, "details_name", "")  # a create's Invalid names the object the body named
        details: dict[str, Any] = {"name": name} if name else {}
        if res.group:
            details["group"] = res.group
        details["kind"] = getattr(err, "details_kind", res.plural)
        if getattr(err, "causes", None):
            details["causes"] = err.causes  # type: ignore[attr-defined]  # SchemaInvalid's field errors
        out["details"] = details
    out["code"] = err.code
    return out
