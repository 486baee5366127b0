"""Where a report came from: when it was written, by which versions, from which commit and command.

A report outlives the run that wrote it (a CI artifact opened a week later),
so its footer says what a reader needs to trust or redo it. The time is the
wall clock when the page was written; it never enters a simulation, whose time
is virtual.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata

_MAX_COMMAND = 600


@dataclass(frozen=True)
class Provenance:
    written: str
    harness: str
    git: str | None
    python: str
    trio: str
    hypothesis: str
    command: str


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


@functools.cache
def git_sha() -> str | None:
    """The checked-out commit of the working directory's repository (``-dirty`` if tracked files changed)."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=3, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=3
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}-dirty" if sha and dirty else sha or None


def command_line(argv: list[str] | None = None) -> str:
    """The command that wrote the report, as typed: ``python -m harness hunt ...``, ``pytest ...``.

    The interpreter and a console script are shown by their base names; the
    arguments are kept as given.
    """
    args = list(argv if argv is not None else getattr(sys, "orig_argv", sys.argv))
    if not args:
        return ""
    args[0] = os.path.basename(args[0]) or args[0]
    if len(args) > 1 and os.path.isabs(args[1]) and os.path.isfile(args[1]):
        args[1] = os.path.basename(args[1])  # python /venv/bin/pytest ... -> python pytest ...
    text = shlex.join(args)
    return text if len(text) <= _MAX_COMMAND else text[: _MAX_COMMAND - 1] + "…"


def provenance(command: str | None = None, *, now: _dt.datetime | None = None) -> Provenance:
    from .._version import __version__

    when = (now or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    return Provenance(
        written=when,
        harness=str(__version__),
        git=git_sha(),
        python=sys.version.split()[0],
        trio=_version("trio"),
        hypothesis=_version("hypothesis"),
        command=command_line() if command is None else command,
    )
