"""The libraries whose internals the harness relies on, the versions a test covers, and the check that says so.

Most of what the harness uses of its dependencies is public API, which keeps working across their releases. A few
places reach further, because no public API exposes what a deterministic scheduler needs:

* **trio**: a task the world holds is put back on Trio's own run queue when the world chooses it
  (``trio._core._run.GLOBAL_RUN_CONTEXT.runner.runq``, in ``harness/sim/_dispatch.py`` and ``_tasks.py``);
* **kopf**: each incarnation of an operator gets a fresh ``SmartOperatorRegistry`` (``kopf._core.intents``), and
  its timers, batching and backoffs run on the loop the world drives (``harness/sim/_asyncio.py``);
* **urllib3** (the official ``kubernetes`` client's HTTP stack): its connection pool's default timeout sentinel
  (``urllib3.util.timeout._DEFAULT_TIMEOUT``), where the in-process transport takes its requests.

Those internals change without notice between releases, and an untested release would not fail cleanly: it would
misbehave (a task never resumed, a handler never retried). So each is checked where it is first used, against the
range the test suite covers, and an untested version is an error that names it and the fix, never a wrong result.
``pyproject.toml`` declares the same ranges (trio as a core dependency; kopf, the clients in the ``test`` extra,
since a user brings their own). ``RACE_HARNESS_UNTESTED_VERSIONS=1`` turns the error into a warning, for whoever
wants to try a new release (and then tell us what happened).
"""

from __future__ import annotations

import os
import warnings
from importlib import metadata

from ._errors import UsageError

#: distribution -> (lowest tested, first untested, what the harness relies on)
TESTED: dict[str, tuple[tuple[int, ...], tuple[int, ...], str]] = {
    "trio": ((0, 35), (0, 36), "Trio's run queue, where the world puts back the task it chooses"),
    "kopf": ((1, 45), (1, 46), "kopf's operator registry and its timers on the loop the world drives"),
    "urllib3": ((2, 0), (3, 0), "urllib3's connection pool, where the official client's requests are taken"),
}

#: set to 1 to run an untested version anyway (a warning instead of an error)
OVERRIDE = "RACE_HARNESS_UNTESTED_VERSIONS"

_checked: set[str] = set()


class UntestedVersion(UsageError):
    """A dependency whose internals the harness relies on is at a version no test covers."""


def _parse(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if digits != piece:  # a pre-release or local tag ends the comparable part
            break
    return tuple(parts)


def _range(low: tuple[int, ...], high: tuple[int, ...]) -> str:
    return f">={'.'.join(map(str, low))},<{'.'.join(map(str, high))}"


def require_tested(dist: str) -> None:
    """Raise :class:`UntestedVersion` if ``dist`` is installed at a version outside its tested range.

    Cheap after the first call per distribution; a distribution that is not installed is not this check's business
    (its import fails where it is used, with its own message)."""
    if dist in _checked:
        return
    _checked.add(dist)
    try:
        installed = metadata.version(dist)
    except metadata.PackageNotFoundError:
        return
    low, high, relies = TESTED[dist]
    if low <= _parse(installed)[: len(low)] and _parse(installed)[: len(high)] < high:
        return
    wanted = _range(low, high)
    message = (f"race-harness relies on {relies}, and its tests cover {dist}{wanted}; this environment has {dist} "
               f"{installed}, whose internals may differ. Install a tested version: pip install '{dist}{wanted}' "
               f"(or set {OVERRIDE}=1 to try {installed} anyway, at the risk of wrong results)")
    if os.environ.get(OVERRIDE) == "1":
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        return
    _checked.discard(dist)  # asked again, said again
    raise UntestedVersion(message)
