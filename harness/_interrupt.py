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

SIGTERM (``timeout``, ``kill``, a CI job cancelled) is handled the same way:
the findings are kept, the summary and the JSON lines are printed, and the
process exits with 143 (128 + 15) instead of 130.

Operator processes (``ExternalOperator``) run on the real clock: a stop
requested while the scheduler waits for one ends that run at once as
interrupted (the wait looks every half second at most), and the run's end
ends the process with all it started. The second signal's ``os._exit`` skips
every ``finally``, so it first kills every operator process still registered
and removes their folders (``harness._processes.end_all``).

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
#: the signal that asked to stop (SIGINT or SIGTERM), for the exit status
_signal = signal.SIGINT

#: the exit status of a process ended by SIGINT (128 + 2), as shells report it
EXIT_INTERRUPTED = 130
#: the exit status of a process ended by SIGTERM (128 + 15)
EXIT_TERMINATED = 143
#: the exit status of a process whose standard output's reader went away (128 + SIGPIPE's 13), as ``yes | head``
EXIT_CLOSED_PIPE = 141


def exit_status() -> int:
    """130 after Ctrl-C, 143 after SIGTERM, 141 after a closed pipe: what a shell reports for a process that
    signal ended."""
    if _signal == signal.SIGTERM:
        return EXIT_TERMINATED
    return EXIT_CLOSED_PIPE if _signal == signal.SIGPIPE else EXIT_INTERRUPTED


def stop_signal_name() -> str:
    """``"Ctrl-C"``, ``"SIGTERM"`` or ``"a closed pipe"``: what asked this process to stop, in the words of its
    one line."""
    if _signal == signal.SIGTERM:
        return "SIGTERM"
    return "a closed pipe" if _signal == signal.SIGPIPE else "Ctrl-C"


def request_stop_for_closed_pipe() -> None:
    """Standard output's reader went away (``hunt | head -3``): stop as after Ctrl-C, with exit status 141.

    Called from the pipe's watcher thread (:meth:`harness._terminal.QuietPipe.watch_reader`) the moment the
    reader closes, not at the next line printed: a search prints nothing until it ends.
    """
    global _signal
    if not _requested:
        _signal = signal.SIGPIPE
    request_stop()


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
    """Within the block the first SIGINT or SIGTERM calls :func:`request_stop`; the second exits at once
    (130 after SIGINT, 143 after SIGTERM).

    ``second()`` returns the line printed (on stderr) before that exit. Outside
    the main thread signals cannot be handled, and the block changes nothing.
    """
    global _requested, _signal
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        global _signal
        if _requested:
            line = second() if second is not None else "interrupted again: stopped at once"
            try:
                os.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
            finally:
                try:  # os._exit skips every finally: the operator processes and their folders go first
                    from ._processes import end_all

                    end_all()
                finally:
                    os._exit(EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED)
        _signal = signal.Signals(signum)
        request_stop()
        # answered at once, even while a run is busy: the run in hand ends first (a CPU loop that never yields
        # is ended by the watchdog, harness.sim._watchdog)
        import sys

        try:
            print(f"stopping: waiting for the current run to end ({stop_signal_name()} again stops at once)",
                  file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr closed: the stop itself still stands
            pass

    previous = signal.signal(signal.SIGINT, handler)
    previous_term = signal.signal(signal.SIGTERM, handler)
    _requested = False
    _signal = signal.SIGINT
    try:
        yield
    finally:
        if not _keep_installed:
            signal.signal(signal.SIGINT, previous)
            signal.signal(signal.SIGTERM, previous_term)
            _requested = False


def end_of_startup() -> None:
    """Python's own Ctrl-C again (KeyboardInterrupt), for the commands that handle it themselves.

    ``python -m harness`` imports the package, then its ``__main__``, then the
    CLI's modules: a Ctrl-C in those first tens of milliseconds raised
    KeyboardInterrupt inside some import and printed its traceback, so the
    package's first lines install a handler that exits with one line and 130
    (143 for SIGTERM) while ``sys.argv[0]`` is still ``-m``; this removes it.
    """
    if getattr(signal.getsignal(signal.SIGINT), "__name__", "") == "_startup_interrupt":
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM to a command that does not handle it itself (``replay``, ``live``): exit 143 at once, as the default
    action would, but first end the operator processes its runs started (``harness._processes``)."""
    try:
        os.write(2, b"python -m harness: terminated (SIGTERM); nothing was written\n")
    finally:
        try:
            from ._processes import end_all

            end_all()
        finally:
            os._exit(EXIT_TERMINATED)
