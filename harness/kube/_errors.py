"""API errors as an apiserver returns them (``apimachinery/pkg/api/errors/errors.go``).

These are *results of requests* that controller code catches, not harness
failures, so they do not derive from :class:`harness.HarnessError`. An actor that
lets one escape gets the ordinary "actor raised Conflict" verdict::

    ApiError (reason, code, message)
     +-- NotFound        404 NotFound
     +-- AlreadyExists   409 AlreadyExists
     +-- Conflict        409 Conflict (stale resourceVersion, failed precondition)
     +-- Invalid         422 Invalid
     +-- Forbidden       403 Forbidden (an admission's refusal: NamespaceLifecycle)
     +-- ServerTimeout   500 ServerTimeout (an injected transient fault)
     +-- Gone            410 Expired (a compacted resourceVersion)
     +-- Timeout         504 Timeout
          +-- TooLargeResourceVersion  (a LIST at a revision the watch cache has not reached in 3 s)

``ProcessCrashed`` is different: it is how a crashed controller's actor unwinds
(see :class:`harness.kube.ControllerProcess`), and it derives from
``BaseException`` so that a model's ``except Exception`` cannot swallow a crash.
"""

from __future__ import annotations


def resource(kind: str) -> str:
    """The lower-case plural resource name used in apiserver messages (``Pod`` -> ``pods``)."""
    low = kind.lower()
    if low.endswith("s"):
        return low + "es"
    if low.endswith("y"):
        return low[:-1] + "ies"
    return low + "s"


class ApiError(Exception):
    """A failed API request: ``reason`` and ``code`` as in ``metav1.Status``."""

    reason = "Unknown"
    code = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ApiError):
    reason = "NotFound"
    code = 404

    @classmethod
    def of(cls, kind: str, name: str) -> NotFound:
        """The apiserver's 404 for ``kind`` ``name``, worded as kubectl shows it."""
        return cls(f'{resource(kind)} "{name}" not found')


class AlreadyExists(ApiError):
    reason = "AlreadyExists"
    code = 409

    @classmethod
    def of(cls, kind: str, name: str) -> AlreadyExists:
        """The apiserver's 409 AlreadyExists for ``kind`` ``name``, worded as kubectl shows it."""
        return cls(f'{resource(kind)} "{name}" already exists')


class Forbidden(ApiError):
    """403: ``errors.NewForbidden`` (here the NamespaceLifecycle admission's refusals)."""

    reason = "Forbidden"
    code = 403
    details_name = ""

    @classmethod
    def of(cls, kind: str, name: str, why: str) -> Forbidden:
        """``<resource> "<name>" is forbidden: <why>``; a Status names the object in its details."""
        err = cls(f'{resource(kind)} "{name}" is forbidden: {why}')
        err.details_name = name
        return err


class Conflict(ApiError):
    reason = "Conflict"
    code = 409

    @classmethod
    def modified(cls, kind: str, name: str) -> Conflict:
        """The 409 of a write whose resourceVersion is no longer the object's."""
        return cls(
            f'Operation cannot be fulfilled on {resource(kind)} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again"
        )

    @classmethod
    def precondition(cls, kind: str, name: str, what: str, wanted: object, actual: object) -> Conflict:
        """The 409 of a write whose UID or resourceVersion precondition does not hold."""
        return cls(
            f'Operation cannot be fulfilled on {resource(kind)} "{name}": Precondition failed: '
            f"{what} in precondition: {wanted}, {what} in object meta: {actual}"
        )


class Invalid(ApiError):
    reason = "Invalid"
    code = 422


class ServerTimeout(ApiError):
    reason = "ServerTimeout"
    code = 500

    @classmethod
    def of(cls, verb: str, kind: str) -> ServerTimeout:
        """The 504 of a request the apiserver could not complete in time (it may or may not have committed)."""
        return cls(
            f"The {verb} operation against {resource(kind)} could not be completed at this time, please try again."
        )


class Timeout(ApiError):
    """504: the request did not finish in time (``errors.NewTimeoutError``); retry after ``retry_after_seconds``."""

    reason = "Timeout"
    code = 504

    def __init__(self, message: str, retry_after_seconds: int = 0) -> None:
        super().__init__(message)
        #: ``details.retryAfterSeconds`` of the Status the apiserver sends
        self.retry_after_seconds = retry_after_seconds


class TooLargeResourceVersion(Timeout):
    """504 Timeout with the cause ``ResourceVersionTooLarge`` (``storage.NewTooLargeResourceVersionError``).

    A LIST at a resourceVersion the watch cache has not reached waits for it
    up to ``blockTimeout`` (3 s, ``cacher/watch_cache.go``
    ``waitUntilFreshAndBlock``), then fails with this; client-go's
    ``storage.IsTooLargeResourceVersion(err)`` is ``isinstance(err, TooLargeResourceVersion)``.
    """

    #: the ``StatusCause`` type that tells it apart from other timeouts
    cause = "ResourceVersionTooLarge"

    @classmethod
    def of(cls, wanted: int, current: int, retry_after_seconds: int = 1) -> TooLargeResourceVersion:
        """The watch cache's answer: asked for ``wanted``, still at ``current``; retry after a second."""
        return cls(f"Timeout: Too large resource version: {wanted}, current: {current}", retry_after_seconds)


class Gone(ApiError):
    """410: the watch asked for a revision the watch cache has compacted away; the client must relist."""

    reason = "Expired"
    code = 410

    @classmethod
    def of(cls, kind: str, rv: int, compacted: int) -> Gone:
        """The 410 of a LIST or WATCH from a revision the watch cache has already compacted."""
        return cls(f"too old resource version: {rv} ({compacted}) for {resource(kind)}")


class ProcessCrashed(BaseException):
    """Raised at a yield point of an actor whose controller process has crashed."""
