"""Ctrl-C as a request to stop, answered between runs, never inside one.

Python's default SIGINT handler raises ``KeyboardInterrupt`` at whatever bytecode
runs next. Inside ``trio.run`` that can be Trio's own bookkeeping or the
harness's scheduler, and the finding in hand was lost to a
``TrioInternalError``. Under :func:`sigint_requests_stop` the first Ctrl-C only
sets a flag (Trio leaves a non-default SIGINT handler alone); the search checks
:func:`stop_requested` between runs and ends as *interrupted* with what it found,
and the CLI saves it. A second Ctrl-C ends the process at once with exit 130:
every file the harness writes goes through a temporary file and a rename, so
nothing already written is ever half-written.

Rejected: restricting KeyboardInterrupt to Trio checkpoints (Trio's
``restrict_keyboard_interrupt_to_checkpoints``) -- the scheduler's hand-offs
are checkpoints too, so a run could still stop half-way and lose its trace.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

_requested = False
_keep_installed = False

#: the exit status of a process ended by SIGINT (128 + 2), as shells report it
EXIT_INTERRUPTED = 130


def stop_requested() -> bool:
    """Whether Ctrl-C was pressed (under :func:`sigint_requests_stop`) since it was entered."""
    return _requested


def keep_until_exit() -> None:
    """Leave the handler of :func:`sigint_requests_stop` installed after its block (``python -m harness``).

    Between the end of a hunt and the end of the process (printing the summary,
    interpreter shutdown) Python's own handler would turn a late Ctrl-C into a
    traceback or a death by SIGINT; the process is about to exit anyway.
    """
    global _keep_installed
    _keep_installed = True


def request_stop() -> None:
    """What the first Ctrl-C does: ask the running search to stop after its current run."""
    global _requested
    _requested = True


@contextmanager
def sigint_requests_stop(second: Callable[[], str] | None = None) -> Iterator[None]:
    """Within the block the first SIGINT calls :func:`request_stop`; the second exits with 130 at once.

    ``second()`` returns the line printed (on stderr) before that exit. Outside
    the main thread signals cannot be handled, and the block changes nothing.
    """
    global _requested
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if _requested:
            line = second() if second is not None else "interrupted again: stopped at once"
            try:
                os.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
            finally:
                os._exit(EXIT_INTERRUPTED)
        request_stop()

    previous = signal.signal(signal.SIGINT, handler)
    _requested = False
    try:
        yield
    finally:
        if not _keep_installed:
            signal.signal(signal.SIGINT, previous)
            _requested = False
